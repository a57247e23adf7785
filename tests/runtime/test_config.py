"""Configuration: Flink's keys, defaults and value syntax; clear errors; CheckpointConfig.

Reference: flink-checkpointing.md §2.1 (keys, defaults, constraints) and §2.2 (PyFlink
``test_check_point_config`` defaults).
"""

from __future__ import annotations

import datetime

import pytest

from runtime.checkpoint import ExternalizedCheckpointRetention
from runtime.config import (
    CheckpointConfig,
    CheckpointingMode,
    ConfigError,
    Configuration,
    canonical_key,
    flink_string,
    parse_duration,
    parse_memory,
)
from runtime.datastream import StreamEnvironment
from runtime.graph import GraphError

CP = "execution.checkpointing."

# --- value syntax ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ("100 ms", 100),
        ("10 s", 10_000),
        ("10 min", 600_000),
        ("1 h", 3_600_000),
        ("2 d", 172_800_000),
        ("10s", 10_000),
        ("10 S", 10_000),
        ("3 m", 180_000),
        ("250", 250),
    ],
)
def test_duration_in_flink_syntax_is_milliseconds(text: str, millis: int) -> None:
    assert parse_duration(text) == millis


def test_duration_given_as_int_is_milliseconds() -> None:
    assert parse_duration(1500) == 1500


@pytest.mark.parametrize(
    ("text", "millis"),
    [("PT10S", 10_000), ("pt10s", 10_000), ("PT1M30S", 90_000), ("P1DT2H", 93_600_000)],
)
def test_duration_in_iso_8601_syntax(text: str, millis: int) -> None:
    assert parse_duration(text) == millis


def test_duration_given_as_timedelta() -> None:
    assert parse_duration(datetime.timedelta(seconds=10)) == 10_000
    assert parse_duration(datetime.timedelta(minutes=2, milliseconds=5)) == 120_005


def test_duration_timedelta_keeps_exact_milliseconds() -> None:
    assert parse_duration(datetime.timedelta(milliseconds=1001)) == 1001


def test_duration_iso_fractional_seconds_keep_exact_milliseconds() -> None:
    assert parse_duration("PT1.001S") == 1001


@pytest.mark.parametrize("bad", ["ten seconds", "10 parsecs", "1.5 s", "-5 ms", "", True])
def test_duration_rejects_what_flink_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("text", "size"),
    [("20 kb", 20 * 1024), ("64 mb", 64 << 20), ("1 gb", 1 << 30), ("512", 512), ("7 b", 7)],
)
def test_memory_size_in_flink_syntax_is_bytes(text: str, size: int) -> None:
    assert parse_memory(text) == size


def test_memory_size_rejects_unknown_unit() -> None:
    with pytest.raises(ValueError):
        parse_memory("20 parsecs")


def test_configuration_parses_duration_values_of_duration_keys() -> None:
    conf = Configuration({CP + "interval": "10 s", CP + "timeout": "PT2M"})
    assert conf[CP + "interval"] == 10_000
    assert conf[CP + "timeout"] == 120_000


def test_configuration_parses_memory_values_of_memory_keys() -> None:
    conf = Configuration({CP + "data-inline-threshold": "1 kb"})
    assert conf[CP + "data-inline-threshold"] == 1024


# --- defaults ----------------------------------------------------------------------------------


def test_configuration_defaults_are_flinks() -> None:
    conf = Configuration()
    assert conf[CP + "interval"] is None
    assert conf[CP + "mode"] == "EXACTLY_ONCE"
    assert conf[CP + "timeout"] == 600_000
    assert conf[CP + "min-pause"] == 0
    assert conf[CP + "max-concurrent-checkpoints"] == 1
    assert conf[CP + "tolerable-failed-checkpoints"] == 0
    assert conf[CP + "num-retained"] == 1
    assert conf[CP + "unaligned.enabled"] is False
    assert conf[CP + "aligned-checkpoint-timeout"] == 0
    assert conf[CP + "externalized-checkpoint-retention"] == "NO_EXTERNALIZED_CHECKPOINTS"
    assert conf[CP + "checkpoints-after-tasks-finish"] is True
    assert conf[CP + "data-inline-threshold"] == 20 * 1024
    assert conf["web.checkpoints.history"] == 10
    assert conf["taskmanager.network.memory.buffers-per-channel"] == 2
    assert conf["taskmanager.network.memory.floating-buffers-per-gate"] == 8


def test_checkpoint_config_defaults_match_pyflink_test_check_point_config() -> None:
    config = CheckpointConfig.from_dict({})
    assert config.interval is None
    assert not config.is_checkpointing_enabled
    assert config.timeout == 600_000
    assert config.min_pause == 0
    assert config.max_concurrent == 1
    assert config.mode is CheckpointingMode.EXACTLY_ONCE
    assert config.exactly_once
    assert config.unaligned is False
    assert config.aligned_checkpoint_timeout == 0
    assert (
        config.externalized_retention is ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
    )
    assert config.tolerable_failures == 0
    assert config.num_retained == 1
    assert config == CheckpointConfig()


def test_unset_key_is_not_reported_as_set() -> None:
    conf = Configuration({CP + "timeout": "1 min"})
    assert conf.is_set(CP + "timeout")
    assert not conf.is_set(CP + "interval")
    assert conf.explicit() == {CP + "timeout": 60_000}


# --- enums and booleans ------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["at_least_once", "AT_LEAST_ONCE", "At_Least_Once"])
def test_enum_values_are_case_insensitive(raw: str) -> None:
    assert Configuration({CP + "mode": raw})[CP + "mode"] == "AT_LEAST_ONCE"


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        (CP + "mode", "at-least-once"),
        (CP + "mode", "exactly-once"),
        (CP + "externalized-checkpoint-retention", "retain-on-cancellation"),
        ("state.backend.rocksdb.predefined-options", "spinning-disk-optimized"),
        ("ckptsim.checkpointing.alignment", "legacy-buffered"),
    ],
)
def test_an_enum_value_spelled_with_dashes_is_refused_as_flink_refuses_it(
    key: str, raw: str
) -> None:
    """Flink converts a string to an enum by its name, ignoring case only: 'exactly-once' was
    taken here, and Flink fails the job's configuration with 'Could not parse value'."""
    with pytest.raises(ConfigError) as info:
        Configuration({key: raw})
    message = str(info.value)
    assert f"Invalid value {raw!r} for configuration key '{key}': expected one of " in message
    assert raw.upper().replace("-", "_") in message  # the name meant is among those listed
    assert "\n" not in message


def test_enum_value_may_be_given_as_the_enum_member() -> None:
    config = CheckpointConfig.from_dict(
        {
            CP + "mode": CheckpointingMode.AT_LEAST_ONCE,
            CP
            + "externalized-checkpoint-retention": ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION,
        }
    )
    assert config.mode is CheckpointingMode.AT_LEAST_ONCE
    assert config.externalized_retention is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION


@pytest.mark.parametrize(("raw", "value"), [("true", True), ("FALSE", False), (True, True)])
def test_boolean_values_accept_true_and_false_in_any_case(raw: object, value: bool) -> None:
    assert Configuration({CP + "unaligned.enabled": raw})[CP + "unaligned.enabled"] is value


# --- errors ------------------------------------------------------------------------------------


def test_unknown_key_is_an_error_naming_it_and_suggesting_the_close_key() -> None:
    with pytest.raises(ConfigError) as info:
        Configuration({CP + "intervall": "10 s"})
    message = str(info.value)
    assert "'execution.checkpointing.intervall'" in message
    assert "Did you mean 'execution.checkpointing.interval'?" in message


def test_unknown_key_far_from_every_key_gets_no_suggestion() -> None:
    with pytest.raises(ConfigError) as info:
        Configuration({"zzz": 1})
    assert "'zzz'" in str(info.value)
    assert "Did you mean" not in str(info.value)


@pytest.mark.parametrize(
    ("key", "raw", "allowed"),
    [
        (CP + "timeout", "soon", "'10 s'"),
        (CP + "mode", "sometimes", "EXACTLY_ONCE, AT_LEAST_ONCE"),
        (CP + "unaligned.enabled", "yes", "true or false"),
        (CP + "max-concurrent-checkpoints", "many", "an integer"),
        (
            CP + "externalized-checkpoint-retention",
            "KEEP",
            "RETAIN_ON_CANCELLATION",
        ),
    ],
)
def test_wrong_value_is_an_error_naming_key_value_and_what_is_allowed(
    key: str, raw: str, allowed: str
) -> None:
    with pytest.raises(ConfigError) as info:
        Configuration({key: raw})
    message = str(info.value)
    assert f"'{key}'" in message
    assert repr(raw) in message
    assert allowed in message


def test_config_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        Configuration({CP + "timeout": "soon"})


# --- minimums ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "too_small", "smallest", "text"),
    [
        (CP + "interval", "9 ms", "10 ms", "at least 10 ms"),
        (CP + "timeout", "9 ms", "10 ms", "at least 10 ms"),
        (CP + "max-concurrent-checkpoints", 0, 1, "at least 1"),
        (CP + "tolerable-failed-checkpoints", -1, 0, "at least 0"),
        (CP + "min-pause", datetime.timedelta(milliseconds=-1), 0, "cannot be negative"),
        (CP + "min-pause", "-5s", "0 s", "a duration cannot be negative"),
        (CP + "timeout", "- 5 min", "10 ms", "a duration cannot be negative"),
    ],
)
def test_value_below_the_minimum_is_an_error_and_the_minimum_is_accepted(
    key: str, too_small: object, smallest: object, text: str
) -> None:
    with pytest.raises(ConfigError) as info:
        Configuration({key: too_small})
    assert f"'{key}'" in str(info.value)
    assert text in str(info.value)
    Configuration({key: smallest})  # the minimum itself is fine


def test_interval_below_10_ms_given_as_timedelta_is_an_error() -> None:
    with pytest.raises(ConfigError):
        Configuration({CP + "interval": datetime.timedelta(milliseconds=5)})


# --- deprecated keys ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deprecated", "current", "raw", "value"),
    [
        ("state.checkpoints.num-retained", CP + "num-retained", "3", 3),
        (CP + "unaligned", CP + "unaligned.enabled", "true", True),
        (CP + "alignment-timeout", CP + "aligned-checkpoint-timeout", "30 s", 30_000),
        # a path may be a file: URI, as Flink writes it (issue #25): kept as a local path
        ("state.checkpoints.dir", CP + "dir", "file:///tmp/cp", "/tmp/cp"),
        ("state.savepoints.dir", CP + "savepoint-dir", "/tmp/sp", "/tmp/sp"),
        ("jobmanager.web.checkpoints.history", "web.checkpoints.history", 4, 4),
    ],
)
def test_deprecated_key_is_accepted_and_maps_to_the_current_key(
    deprecated: str, current: str, raw: object, value: object
) -> None:
    conf = Configuration({deprecated: raw})
    assert conf[current] == value
    assert conf.is_set(current)


def test_deprecated_keys_reach_the_checkpoint_config() -> None:
    config = CheckpointConfig.from_dict(
        {
            "state.checkpoints.num-retained": 5,
            CP + "unaligned": True,
            CP + "alignment-timeout": "1 s",
            "state.checkpoints.dir": "/tmp/cp",
        }
    )
    assert config.num_retained == 5
    assert config.unaligned is True
    assert config.aligned_checkpoint_timeout == 1000
    assert config.checkpoint_dir == "/tmp/cp"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("state.checkpoints.num-retained", CP + "num-retained"),
        (CP + "num-retained", "state.checkpoints.num-retained"),
    ],
)
def test_deprecated_key_and_its_replacement_together_are_an_error(first: str, second: str) -> None:
    with pytest.raises(ConfigError) as info:
        Configuration({first: 2, second: 3})
    assert f"'{first}'" in str(info.value)
    assert f"'{second}'" in str(info.value)


def test_a_negative_buffer_timeout_says_how_to_flush_every_record_or_only_full_buffers() -> None:
    """Flink's old ``-1 ms`` (only full buffers) is a separate switch now."""
    with pytest.raises(ConfigError) as info:
        Configuration({"execution.buffer-timeout": "-1 ms"})
    message = str(info.value)
    assert "cannot be negative" in message
    assert "execution.buffer-timeout.enabled: false" in message


def test_a_later_setting_under_the_other_spelling_replaces_the_earlier_one() -> None:
    """Given together, the two spellings are an error; set one after the other (a script's
    configuration, then a setter such as PyFlink's ``set_buffer_timeout``), the later wins."""
    conf = Configuration({"state.checkpoints.num-retained": 2})
    conf.set(CP + "num-retained", 3)
    assert conf[CP + "num-retained"] == 3
    conf.update({"state.checkpoints.num-retained": 4})
    assert conf[CP + "num-retained"] == 4


def test_setting_the_same_key_twice_keeps_the_last_value() -> None:
    conf = Configuration({CP + "timeout": "1 min"})
    conf.set(CP + "timeout", "2 min")
    assert conf[CP + "timeout"] == 120_000


# --- CheckpointConfig: constraints, handler mode, from_dict ------------------------------------


def test_unaligned_requires_exactly_once() -> None:
    with pytest.raises(ConfigError, match="EXACTLY_ONCE"):
        CheckpointConfig.from_dict({CP + "unaligned.enabled": True, CP + "mode": "AT_LEAST_ONCE"})


def test_check_rejects_unaligned_at_least_once_built_directly() -> None:
    config = CheckpointConfig(unaligned=True, mode=CheckpointingMode.AT_LEAST_ONCE)
    with pytest.raises(ConfigError):
        config.check()


def test_unaligned_requires_max_concurrent_one() -> None:
    with pytest.raises(ConfigError, match="max-concurrent-checkpoints"):
        CheckpointConfig.from_dict(
            {CP + "unaligned.enabled": True, CP + "max-concurrent-checkpoints": 2}
        )


def test_aligned_checkpoints_allow_several_concurrent() -> None:
    assert CheckpointConfig.from_dict({CP + "max-concurrent-checkpoints": 3}).max_concurrent == 3


def test_legacy_buffered_alignment_excludes_unaligned() -> None:
    with pytest.raises(ConfigError, match="LEGACY_BUFFERED"):
        CheckpointConfig.from_dict(
            {CP + "unaligned.enabled": True, "ckptsim.checkpointing.alignment": "LEGACY_BUFFERED"}
        )


@pytest.mark.parametrize(
    ("settings", "mode"),
    [
        ({}, "aligned"),
        ({CP + "unaligned.enabled": True}, "aligned_with_timeout"),
        ({"ckptsim.checkpointing.alignment": "LEGACY_BUFFERED"}, "legacy_buffered"),
        ({CP + "mode": "AT_LEAST_ONCE"}, "at_least_once"),
        (
            {CP + "mode": "AT_LEAST_ONCE", "ckptsim.checkpointing.alignment": "LEGACY_BUFFERED"},
            "at_least_once",
        ),
    ],
)
def test_gate_mode_follows_mode_alignment_and_unaligned(
    settings: dict[str, object], mode: str
) -> None:
    """The tasks' gates use the conformance scenarios' mode names (one vocabulary)."""
    assert CheckpointConfig.from_dict(settings).gate_mode.value == mode


def test_from_dict_end_to_end() -> None:
    config = CheckpointConfig.from_dict(
        {
            CP + "interval": "30 s",
            CP + "mode": "exactly_once",
            CP + "timeout": "5 min",
            CP + "min-pause": "500 ms",
            CP + "tolerable-failed-checkpoints": "3",
            CP + "num-retained": 2,
            CP + "unaligned.enabled": "true",
            CP + "aligned-checkpoint-timeout": "PT2S",
            CP + "externalized-checkpoint-retention": "retain_on_cancellation",
            CP + "checkpoints-after-tasks-finish": "false",
            CP + "dir": "/tmp/checkpoints",
            "task.checkpoint.alignment.max-size": "1 mb",
            "web.checkpoints.history": 7,
            "ckptsim.checkpointing.trigger-semantics": "flink_1_7",
        }
    )
    assert config == CheckpointConfig(
        interval=30_000,
        mode=CheckpointingMode.EXACTLY_ONCE,
        timeout=300_000,
        min_pause=500,
        max_concurrent=1,
        tolerable_failures=3,
        num_retained=2,
        unaligned=True,
        aligned_checkpoint_timeout=2000,
        externalized_retention=ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION,
        checkpoints_after_tasks_finish=False,
        checkpoint_dir="/tmp/checkpoints",
        savepoint_dir=None,
        alignment_max_size=1 << 20,
        history_size=7,
        trigger_semantics="flink-1.7",
        legacy_alignment=False,
    )
    assert config.is_checkpointing_enabled


def test_from_dict_propagates_errors_of_unknown_keys() -> None:
    with pytest.raises(ConfigError, match="Did you mean"):
        CheckpointConfig.from_dict({CP + "timout": "1 s"})


def test_alignment_max_size_is_unlimited_by_default_and_otherwise_positive() -> None:
    assert CheckpointConfig.from_dict({}).alignment_max_size == -1
    with pytest.raises(ConfigError):
        CheckpointConfig.from_dict({"task.checkpoint.alignment.max-size": 0})


def test_settings_flink_has_but_ckptsim_ignores_are_reported_under_the_key_given() -> None:
    conf = Configuration(
        {
            "state.backend.incremental": "true",  # deprecated spelling of an inert option
            CP + "interval": "1 s",
            "taskmanager.network.memory.buffer-debloat.enabled": "true",
        }
    )
    inert = dict(conf.inert_settings())
    assert set(inert) == {
        "state.backend.incremental",
        "taskmanager.network.memory.buffer-debloat.enabled",
    }
    assert inert["state.backend.incremental"] == "snapshots are always full"
    assert Configuration({CP + "interval": "1 s"}).inert_settings() == []


def test_flinks_config_yaml_is_read_as_flat_keys_and_other_yaml_is_refused() -> None:
    from runtime.config import ConfigError, parse_config_yaml  # noqa: PLC0415

    text = (
        "execution:\n"
        "  checkpointing:\n"
        "    interval: 100 ms   # often\n"
        "    'mode': \"EXACTLY_ONCE\"\n"
        "parallelism.default: 2\n"
        "classloader.parent-first-patterns.additional: [org.a, 'org.b']\n"
    )
    assert parse_config_yaml(text) == {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.mode": "EXACTLY_ONCE",
        "parallelism.default": "2",
        "classloader.parent-first-patterns.additional": "org.a;org.b",
    }
    with pytest.raises(ConfigError, match="line 2"):
        parse_config_yaml("patterns:\n  - org.a\n")
    with pytest.raises(ConfigError, match="line 1"):
        parse_config_yaml("just words\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (  # a tab before a key read it as a top-level key that changed nothing
            "execution:\n  checkpointing:\n    interval: 10 ms\n\tmode: AT_LEAST_ONCE\n",
            "line 4: 'mode: AT_LEAST_ONCE' is indented with a tab: YAML indents with spaces only",
        ),
        (
            "execution.checkpointing.interval: 10 ms\nexecution.checkpointing.interval: 20 ms\n",
            "line 2: execution.checkpointing.interval is set again (first on line 1); keep one",
        ),
        (
            "execution:\n  checkpointing:\n    interval: 10 ms\nexecution.checkpointing.interval: 1 s\n",
            "line 4: execution.checkpointing.interval is set again (first on line 3)",
        ),
        (
            "execution.program-config.wildcards: [a, b\n",
            "line 1: 'execution.program-config.wildcards: [a, b': a list is written on one line",
        ),
        (  # was taken as an unknown key '"unterminated', the file's other lines applied
            '"unterminated: 1\n',
            "line 1: '\"unterminated: 1': the quote \" is not closed on its line",
        ),
        (
            "parallelism.default: '2\n",
            "line 1: \"parallelism.default: '2\": the quote ' is not closed on its line",
        ),
    ],
    ids=["tab", "twice", "twice nested and flat", "unclosed list", "key quote", "value quote"],
)
def test_a_config_yaml_mistake_names_its_line(text: str, message: str) -> None:
    from runtime.config import ConfigError, parse_config_yaml  # noqa: PLC0415

    with pytest.raises(ConfigError) as caught:
        parse_config_yaml(text, "conf/config.yaml")
    assert str(caught.value).startswith(f"conf/config.yaml, {message}"), caught.value


def test_a_quote_inside_a_plain_value_is_not_an_unclosed_quote() -> None:
    from runtime.config import parse_config_yaml  # noqa: PLC0415

    text = 'pipeline.name: Bob\'s job\nexecution.checkpointing.dir: "/tmp/ck" # quoted\n'
    assert parse_config_yaml(text) == {
        "pipeline.name": "Bob's job",
        "execution.checkpointing.dir": "/tmp/ck",
    }


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-Infinity", float("nan")])
def test_a_number_setting_is_finite(value: object) -> None:
    key = "restart-strategy.exponential-delay.backoff-multiplier"  # nan passed 'at least 1'
    with pytest.raises(ConfigError, match="expected a finite number"):
        Configuration({key: value})
    assert Configuration({key: "2.5"})[key] == 2.5


def test_a_list_option_takes_flinks_semicolon_syntax_or_a_list_of_strings() -> None:
    conf = Configuration({"execution.program-config.wildcards": " a.b ; c.d;;"})
    assert conf["execution.program-config.wildcards"] == ("a.b", "c.d")
    conf.set("execution.program-config.wildcards", ["x"])
    assert conf["execution.program-config.wildcards"] == ("x",)
    assert Configuration()["execution.program-config.wildcards"] == ()
    with pytest.raises(ConfigError, match="separated by semicolons"):
        conf.set("execution.program-config.wildcards", 3)


def test_values_are_written_as_flink_writes_them_in_its_messages() -> None:
    assert flink_string("execution.checkpointing.min-pause", 10) == "10 ms"
    assert flink_string("execution.checkpointing.timeout", 600_000) == "10 min"
    assert flink_string("execution.checkpointing.unaligned.enabled", True) == "true"
    assert flink_string("pipeline.global-job-parameters", {"tag": "blue"}) == "{tag: blue}"
    assert flink_string("execution.program-config.wildcards", ("a", "b")) == "a;b"
    assert flink_string("parallelism.default", 4) == "4"
    assert canonical_key("execution.allow-client-job-configurations") == (
        "execution.program-config.enabled"
    )
    assert canonical_key("no.such.key") == "no.such.key"
    # and as Flink's /jobmanager/config lists them
    from runtime.rest import configuration_items  # noqa: PLC0415

    listed = Configuration({"execution.program-config.wildcards": "a;b"})
    assert configuration_items(listed) == (("execution.program-config.wildcards", "a;b"),)


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("EXECUTION.CHECKPOINTING.INTERVAL", "execution.checkpointing.interval"),
        ("Parallelism.Default", "parallelism.default"),
        (
            "metrics.reporter.prom.filterlabelvaluecharacters",
            "metrics.reporter.prom.filterLabelValueCharacters",
        ),
    ],
)
def test_a_key_in_the_wrong_case_is_refused_naming_the_key_meant(key: str, meant: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Configuration({key: "1"})
    assert f"Unknown configuration key '{key}'. Did you mean '{meant}'?" in str(caught.value)


@pytest.mark.parametrize(
    ("given", "path"),
    [
        ("file:///tmp/cp", "/tmp/cp"),
        ("file:/tmp/cp", "/tmp/cp"),
        ("file://localhost/tmp/cp", "/tmp/cp"),
        ("FILE:///tmp/cp", "/tmp/cp"),  # a scheme in any case (RFC 3986)
        ("File:/tmp/cp/", "/tmp/cp/"),
    ],
)
def test_a_file_uri_is_a_local_path(given: str, path: str) -> None:
    assert Configuration({CP + "dir": given})[CP + "dir"] == path


def test_pipeline_max_parallelism_is_the_job_s_number_of_key_groups() -> None:
    """Flink's ``pipeline.max-parallelism`` (-1: not set, 128 key groups) is what
    ``set_max_parallelism`` sets, and the job graph takes it."""
    env = StreamEnvironment(parallelism=2)
    env.from_collection(range(4)).key_by(lambda n: n % 2).reduce(lambda a, b: a + b).collect("s")
    assert env.configuration["pipeline.max-parallelism"] == -1
    assert env.build_job_graph().max_parallelism == 128
    env.configure({"pipeline.max-parallelism": "256"})
    assert env.build_job_graph().max_parallelism == 256
    env.set_max_parallelism(64)
    assert env.configuration["pipeline.max-parallelism"] == 64
    assert env.build_job_graph().max_parallelism == 64
    # Flink's bounds: 1 to 32768 key groups
    env.set_max_parallelism(32768)
    with pytest.raises(
        GraphError, match=r"out of bounds 0 < maxParallelism <= 32768\. Found: 32769"
    ):
        env.set_max_parallelism(32769)
    env.configure({"pipeline.max-parallelism": 100_000})
    with pytest.raises(GraphError, match=r"Found: 100000"):
        env.build_job_graph()
