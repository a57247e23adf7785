"""A resume at another parallelism of the keyed operators only (sources and the file sink keep
theirs), as a new user tries it (issue fresh30): the chain the file sink is in changes with
the parallelism, and with it the name its part files carry."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation

N = 2_000


def _key(record: tuple[int, int]) -> int:
    return record[0]


def _add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return (a[0], a[1] + b[1])


def _job(out: Path, tmp: Path, *, stop: bool) -> Callable[[StreamExecutionEnvironment], None]:
    def build(env: StreamExecutionEnvironment) -> None:
        env.enable_checkpointing(10)
        env.configure({"execution.checkpointing.dir": str(tmp / ("chk-stop" if stop else "chk"))})
        (
            env.from_generator(lambda i: (i % 10, 1), N, rate=50_000)
            .uid("numbers")
            .set_parallelism(2)
            .key_by(_key)
            .reduce(_add)
            .uid("totals")
            .sink_to_file(str(out), fmt="json")
            .uid("sink")
            .set_parallelism(2)
        )
        if stop:
            env.stop_with_savepoint(after_records=800, directory=str(tmp / "sp"))

    return build


def _run(build: Callable[[StreamExecutionEnvironment], None], **settings: Any) -> Any:
    return Simulation(seed=1).run(build, settings)


def test_keyed_operators_resume_at_another_parallelism_before_a_file_sink_that_keeps_its_own(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    settings: dict[str, Any] = {"parallelism.default": 2}
    first = _run(_job(out, tmp_path, stop=True), **settings)
    (savepoint,) = first.savepoints
    again = _run(
        _job(out, tmp_path, stop=False),
        **{"parallelism.default": 3, "execution.state-recovery.path": savepoint},
    )
    assert again.succeeded
    lines = [
        json.loads(line)
        for part in sorted(out.glob("part-*"))
        for line in part.read_text().splitlines()
    ]
    # each key's running count once per record, the two runs together
    counts = sorted(count for _, count in lines)
    assert counts == sorted(c for c in range(1, N // 10 + 1) for _ in range(10))
