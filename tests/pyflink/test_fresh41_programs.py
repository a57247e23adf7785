"""PyFlink programs a new user wrote without reading ckptsim's tests (issue fresh41), run on
Flink 2.3 first (``apache-flink==2.3.0``, MiniCluster, Java 17, each at parallelism 1; its
stdout is ``expected/fresh41_*.out``), then unchanged under ``ckptsim run --simulate``: per
print prefix, the same lines in the same order.

- ``fresh41_sensor_alerts``: a ``KeyedProcessFunction`` with two typed side outputs, event-time
  timers deleted and re-registered, and processing-time timers an hour ahead that a bounded
  job never fires;
- ``fresh41_state_kinds``: aggregating, reducing, map (iteration, remove, contains,
  is_empty) and list state, a value state with a TTL config;
- ``fresh41_co_process``: two keyed streams connected, a ``KeyedCoProcessFunction`` with
  event-time timers, global job parameters read in ``open``, a count window over a union;
- ``fresh41_window_lateness``: event-time windows with allowed lateness and a late side
  output, ``reduce`` with a ``ProcessWindowFunction``, a sliding window ``aggregate``."""

from __future__ import annotations

import pytest

from ckptsim._cli import main
from tests.pyflink.compare import PROGRAMS, assert_same_output, expected_output

NAMES = [
    "fresh41_sensor_alerts",
    "fresh41_state_kinds",
    "fresh41_co_process",
    "fresh41_window_lateness",
]


@pytest.mark.parametrize("name", NAMES)
def test_a_new_users_program_prints_what_flink_printed(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", str(PROGRAMS / f"{name}.py"), "--simulate", "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert_same_output(captured.out, expected_output(name))
