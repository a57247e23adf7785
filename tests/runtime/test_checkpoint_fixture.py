"""Checkpoints written by an older ckptsim still restore: ``fixtures/checkpoint-v1`` was written
by the ckptsim of commit 0d2b83f (format version 1, before the state encoding learnt Decimal,
datetime and friends; see ``fixtures/make_checkpoint_v1.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation
from runtime.checkpoint import TaskId
from runtime.storage import FORMAT_VERSION, load_checkpoint
from tests.runtime.fixtures import make_checkpoint_v2 as v2
from tests.runtime.fixtures.make_checkpoint_v1 import HERE, OPERATOR_STATE, RICH, Keep
from tests.runtime.test_serde import same


def test_the_fixture_is_a_version_1_checkpoint() -> None:
    for name in ("savepoint", "channels"):
        metadata = json.loads((HERE / name / "_metadata").read_text())["metadata"]
        assert metadata["version"] == 1 < FORMAT_VERSION


def test_operator_and_channel_state_of_a_version_1_checkpoint_read_back_exactly() -> None:
    loaded = load_checkpoint(str(HERE / "channels"))
    (state,) = loaded.tasks.values()
    assert same(state.operator_states["keep"], OPERATOR_STATE)
    (inputs,) = state.input_channels[0]
    assert same(list(inputs.records), [value for _, value in RICH])
    assert list(inputs.timestamps or ()) == list(range(len(RICH)))
    (outputs,) = state.output_channels[1]
    assert same(list(outputs.records), list(RICH))
    assert list(loaded.tasks) == [TaskId("keep-2", 0)]


def _probing(
    probes: list[tuple[Any, str]], checkpoints: Path
) -> Callable[[StreamExecutionEnvironment], None]:
    """The job that asks its restored keyed state ``Keep`` for each probe's key."""

    def build(env: StreamExecutionEnvironment) -> None:
        env.set_parallelism(1)
        env.enable_checkpointing(1000)
        env.configure({"execution.checkpointing.dir": str(checkpoints)})
        (
            env.from_collection(probes)
            .uid("probes")
            .key_by(lambda r: r[0])
            .process(Keep())
            .uid("keep")
            .collect("out")
        )

    return build


def test_a_job_restores_its_keyed_state_from_a_version_1_savepoint(tmp_path: Path) -> None:
    probes = [(key, "?") for key, _ in RICH]

    result = Simulation(seed=1).run(
        _probing(probes, tmp_path),
        {
            "execution.state-recovery.path": str(HERE / "savepoint"),
            "execution.state-recovery.ignore-unclaimed-state": True,  # the old source "rich"
        },
    )
    restored: dict[str, Any] = {key: (last, seen) for key, last, seen in result.collected("out")}
    assert sorted(restored) == sorted(key for key, _ in RICH)
    for key, value in RICH:
        assert same(restored[key], (value, [(value,)])), key


# --- format version 2 (JSON state files, encoding version 2), written by the ckptsim of ee25535


def test_the_v2_fixture_is_a_version_2_checkpoint() -> None:
    for name in ("savepoint", "channels"):
        metadata = json.loads((v2.HERE / name / "_metadata").read_text())["metadata"]
        assert metadata["version"] == 2 < FORMAT_VERSION
        assert sorted(p.suffix for p in (v2.HERE / name).glob("*.state.*")) == [".json"] * (
            2 if name == "savepoint" else 1
        )


def test_operator_and_channel_state_of_a_version_2_checkpoint_read_back_exactly() -> None:
    loaded = load_checkpoint(str(v2.HERE / "channels"))
    (state,) = loaded.tasks.values()
    assert same(state.operator_states["keep"], v2.OPERATOR_STATE)
    (inputs,) = state.input_channels[0]
    assert same(list(inputs.records), [value for _, value in v2.RICH])
    (outputs,) = state.output_channels[1]
    assert same(list(outputs.records), list(v2.RICH))


def test_a_job_restores_its_keyed_state_from_a_version_2_savepoint(tmp_path: Path) -> None:
    """Decimal, zoned datetimes, Spark rows, NumPy scalars ... written by the ckptsim before
    format version 3 come back in keyed state; the job's own checkpoints are version 3."""
    probes = [(key, "?") for key, _ in v2.RICH]

    result = Simulation(seed=1).run(
        _probing(probes, tmp_path),
        {
            "execution.state-recovery.path": str(v2.HERE / "savepoint"),
            "execution.state-recovery.ignore-unclaimed-state": True,  # the old source "rich"
        },
    )
    restored: dict[str, Any] = {key: (last, seen) for key, last, seen in result.collected("out")}
    assert sorted(restored) == sorted(key for key, _ in v2.RICH)
    for key, value in v2.RICH:
        assert same(restored[key], (value, [(value,)])), key
