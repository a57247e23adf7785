"""The PyFlink environment's settings map onto ckptsim's Flink configuration keys."""

from __future__ import annotations

import os
import re

import pytest
import structlog.testing

from ckptsim.pyflink._unsupported import reset_warnings
from ckptsim.pyflink.common import Configuration, Duration, Types
from ckptsim.pyflink.datastream import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
)
from runtime.config import ConfigError


def test_checkpoint_config_reads_and_writes_the_checkpointing_keys() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    config = env.get_checkpoint_config()
    assert not config.is_checkpointing_enabled() and config.get_checkpoint_interval() == -1
    env.enable_checkpointing(250, CheckpointingMode.AT_LEAST_ONCE)
    config.set_checkpoint_timeout(30_000)
    config.set_min_pause_between_checkpoints(Duration.of_millis(40))
    config.set_max_concurrent_checkpoints(2)
    config.set_fail_on_checkpointing_errors(False)
    config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    config.set_force_unaligned_checkpoints()
    conf = env._env.configuration
    assert conf["execution.checkpointing.interval"] == 250
    assert conf["execution.checkpointing.mode"] == "AT_LEAST_ONCE"
    assert conf["execution.checkpointing.timeout"] == 30_000
    assert conf["execution.checkpointing.min-pause"] == 40
    assert conf["execution.checkpointing.max-concurrent-checkpoints"] == 2
    assert conf["execution.checkpointing.tolerable-failed-checkpoints"] == 2**31 - 1
    assert conf["execution.checkpointing.externalized-checkpoint-retention"] == (
        "RETAIN_ON_CANCELLATION"
    )
    assert conf["execution.checkpointing.unaligned.forced"] is True
    assert env.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert config.is_externalized_checkpoints_enabled()
    assert not config.is_fail_on_checkpointing_errors()
    config.enable_unaligned_checkpoints()
    config.set_aligned_checkpoint_timeout(Duration.of_seconds(1))
    assert config.is_unaligned_checkpoints_enabled()
    assert config.get_aligned_checkpoint_timeout() == Duration.of_seconds(1)
    assert conf["execution.checkpointing.aligned-checkpoint-timeout"] == 1000


def test_execution_config_and_runtime_mode() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    assert env.get_parallelism() == (os.cpu_count() or 1)  # Flink's local default
    env.get_config().set_auto_watermark_interval(50).set_parallelism(3)
    assert env._env.configuration["pipeline.auto-watermark-interval"] == 50
    assert env.get_config().get_auto_watermark_interval() == 50
    assert env.get_parallelism() == 3
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    assert env._env.configuration["execution.runtime-mode"] == "BATCH"
    env.set_max_parallelism(64)
    assert env.get_max_parallelism() == 64


def test_getters_answer_as_flinks_before_anything_is_set() -> None:
    """Flink 2.3 answers ``get_checkpointing_mode()`` with ``AT_LEAST_ONCE`` while
    checkpointing is off (even after ``set_checkpointing_mode(EXACTLY_ONCE)``) and
    ``get_max_parallelism()`` with -1 until a max parallelism is set; ckptsim said
    ``EXACTLY_ONCE`` and 128."""
    env = StreamExecutionEnvironment.get_execution_environment()
    config = env.get_checkpoint_config()
    assert config.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    config.set_checkpointing_mode(CheckpointingMode.EXACTLY_ONCE)
    assert env.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    env.enable_checkpointing(1000)
    assert config.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE
    assert env.get_max_parallelism() == env.get_config().get_max_parallelism() == -1
    assert env._env.max_parallelism == 128  # what the job runs with
    env.get_config().set_max_parallelism(128)
    assert env.get_max_parallelism() == 128  # set, if to the default
    configured = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("pipeline.max-parallelism", "32")
    )
    assert configured.get_max_parallelism() == 32


def test_set_buffer_timeout_sets_flinks_buffer_timeout_keys() -> None:
    """PyFlink's ``set_buffer_timeout``: -1 flushes only full buffers (the flusher off), 0
    after every record, a positive value every that many ms; the deprecated key
    ``execution.buffer-timeout`` sets the interval too. As in Flink 2.3 (checked: its
    configuration after each call), a value other than -1 sets only the interval, so after a
    -1 the flusher stays off."""
    env = StreamExecutionEnvironment.get_execution_environment()
    settings = env._env.configuration
    assert env.get_buffer_timeout() == 100  # Flink's default
    env.set_buffer_timeout(5)
    assert not settings.is_set("execution.buffer-timeout.enabled")  # only the interval
    assert settings["execution.buffer-timeout.interval"] == 5 == env.get_buffer_timeout()
    env.set_buffer_timeout(-1)
    assert settings["execution.buffer-timeout.enabled"] is False
    assert env.get_buffer_timeout() == -1
    env.set_buffer_timeout(7)  # Flink 2.3 sets the interval only: the flusher stays off
    assert settings["execution.buffer-timeout.enabled"] is False
    assert settings["execution.buffer-timeout.interval"] == 7
    assert env.get_buffer_timeout() == -1
    with pytest.raises(ValueError, match=r"-1 .* 0 or a positive"):
        env.set_buffer_timeout(-2)
    with pytest.raises(ValueError, match="not True"):
        env.set_buffer_timeout(True)
    old_key = Configuration().set_string("execution.buffer-timeout", "0 ms")
    env = StreamExecutionEnvironment.get_execution_environment(old_key)
    assert env.get_buffer_timeout() == 0
    env.set_buffer_timeout(20)  # replaces what the deprecated key set, as in Flink
    assert env.get_buffer_timeout() == 20


def test_a_configuration_sets_known_keys_warns_on_jvm_keys_and_refuses_others() -> None:
    conf = Configuration()
    conf.set_string("execution.checkpointing.interval", "2 s")
    conf.set_integer("parallelism.default", 2)
    conf.set_boolean("execution.checkpointing.unaligned.enabled", True)
    conf.set_string("taskmanager.memory.process.size", "1g")
    conf.set_string("pipeline.name", "named by its configuration")
    reset_warnings()  # one warning per call and run: this test's run starts here
    with structlog.testing.capture_logs() as logs:
        env = StreamExecutionEnvironment.get_execution_environment(conf)
    settings = env._env.configuration
    assert settings["execution.checkpointing.interval"] == 2000
    assert settings["execution.checkpointing.unaligned.enabled"] is True
    assert env.get_parallelism() == 2
    assert env._job_name == "named by its configuration"
    assert [e["call"] for e in logs if e["event"] == "pyflink_call_ignored"] == [
        "configuration key taskmanager.memory.process.size"
    ]
    # the processes runtime's slots per TaskManager: set, not ignored
    with structlog.testing.capture_logs() as logs:
        env.configure(Configuration().set_integer("taskmanager.numberOfTaskSlots", 2))
    assert settings["taskmanager.numberOfTaskSlots"] == 2
    assert not [e for e in logs if e["event"] == "pyflink_call_ignored"]
    with pytest.raises(ConfigError, match=re.escape("execution.checkpointing.intervall")):
        env.configure(Configuration().set_string("execution.checkpointing.intervall", "1 s"))
    assert Configuration.from_dict({"a": True, "b": 1}).to_dict() == {"a": "true", "b": "1"}
    assert conf.get_integer("parallelism.default", 0) == 2
    assert conf.get_boolean("missing", True) is True


def test_operator_attributes_apply_to_the_operator_a_call_made() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    source = env.from_collection([1.5, 2.5])
    floats = source.map(lambda x: x, output_type=Types.FLOAT()).name("to float").uid("f")
    floats.set_parallelism(3)
    user, conversion = floats._nodes
    assert (user.name, user.uid, user.parallelism) == ("to float", "f", 3)
    assert conversion.parallelism == 3  # stays chained to it
    # a partitioning or a union runs no code of its own: naming it changes nothing
    assert source.rebalance().name("x").uid("y").get_name() == "Partition"
    assert floats.union(source).disable_chaining().set_parallelism(2).get_name() == "Partition"
    assert user.name == "to float" and user.chainable


#: the public names of these PyFlink 2.3.0 classes (``dir()`` of apache-flink 2.3.0)
PYFLINK_NAMES: dict[str, set[str]] = {
    "CheckpointConfig": {
        "disable_unaligned_checkpoints", "enable_unaligned_checkpoints",
        "get_aligned_checkpoint_timeout", "get_alignment_timeout", "get_checkpoint_interval",
        "get_checkpoint_timeout", "get_checkpointing_mode",
        "get_externalized_checkpoint_retention", "get_max_concurrent_checkpoints",
        "get_min_pause_between_checkpoints", "get_tolerable_checkpoint_failure_number",
        "is_checkpointing_enabled", "is_externalized_checkpoints_enabled",
        "is_fail_on_checkpointing_errors", "is_force_unaligned_checkpoints",
        "is_unaligned_checkpoints_enabled", "set_aligned_checkpoint_timeout",
        "set_alignment_timeout", "set_checkpoint_interval", "set_checkpoint_timeout",
        "set_checkpointing_mode", "set_externalized_checkpoint_retention",
        "set_fail_on_checkpointing_errors", "set_force_unaligned_checkpoints",
        "set_max_concurrent_checkpoints", "set_min_pause_between_checkpoints",
        "set_tolerable_checkpoint_failure_number",
    },
    "JobExecutionResult": {
        "get_accumulator_result", "get_all_accumulator_results", "get_job_id", "get_net_runtime",
    },
    "JobID": set(),
    "JobStatus": {
        "CANCELED", "CANCELLING", "CREATED", "FAILED", "FAILING", "FINISHED", "RECONCILING",
        "RESTARTING", "RUNNING", "SUSPENDED",
    },
    "StreamExecutionEnvironment": {
        "add_classpaths", "add_jars", "add_python_archive", "add_python_file", "add_source",
        "close", "configure", "create_input", "disable_operator_chaining",
        "enable_changelog_state_backend", "enable_checkpointing", "execute", "execute_async",
        "from_collection", "from_source", "get_buffer_timeout", "get_checkpoint_config",
        "get_checkpoint_interval", "get_checkpointing_consistency_mode",
        "get_checkpointing_mode", "get_config", "get_default_local_parallelism",
        "get_default_savepoint_directory", "get_execution_environment", "get_execution_plan",
        "get_max_parallelism", "get_parallelism", "is_chaining_enabled",
        "is_chaining_of_operators_with_different_max_parallelism_enabled",
        "is_changelog_state_backend_enabled", "is_force_unaligned_checkpoints",
        "is_unaligned_checkpoints_enabled", "register_cached_file",
        "register_slot_sharing_group", "set_buffer_timeout", "set_default_local_parallelism",
        "set_default_savepoint_directory", "set_max_parallelism", "set_parallelism",
        "set_python_executable", "set_python_requirements", "set_runtime_mode",
    },
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PYFLINK_NAMES))
def test_these_classes_have_no_public_name_pyflink_2_3_lacks(name: str) -> None:
    """A program that calls what PyFlink 2.3 does not have (``to_hex_string``,
    ``set_checkpointing_consistency_mode`` on a ``CheckpointConfig``, the 1.x
    ``set_stream_time_characteristic`` and Kryo registrations, ``JobStatus.INITIALIZING``)
    fails on Flink with ``AttributeError``: it does here too, not run as if it were fine."""
    from ckptsim.pyflink.common import JobExecutionResult, JobID, JobStatus  # noqa: PLC0415
    from ckptsim.pyflink.datastream import (  # noqa: PLC0415
        CheckpointConfig,
        StreamExecutionEnvironment,
    )

    classes = {
        "CheckpointConfig": CheckpointConfig,
        "JobExecutionResult": JobExecutionResult,
        "JobID": JobID,
        "JobStatus": JobStatus,
        "StreamExecutionEnvironment": StreamExecutionEnvironment,
    }
    ours = {n for n in dir(classes[name]) if not n.startswith("_")}
    assert ours - PYFLINK_NAMES[name] == set()
