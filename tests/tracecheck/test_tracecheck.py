"""The offline trace checker: real traces pass; every planted violation is found, by its rule,
at the event that breaks it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from actors.cli import main
from runtime.tracecheck import TraceFormatError, check_trace, parse_trace

ROOT = Path(__file__).resolve().parents[2]
SLOW = str(ROOT / "examples" / "slow_running_sum.py")

Events = list[dict[str, Any]]


@cache
def _trace(mode: str, simulate: bool, tmp: str) -> tuple[dict[str, Any], ...]:
    settings = {
        "aligned": [],
        "unaligned": ["-D", "execution.checkpointing.unaligned.enabled=true"],
        "at_least_once": ["-D", "execution.checkpointing.mode=AT_LEAST_ONCE"],
    }[mode]
    path = Path(tmp) / f"{mode}-{simulate}.jsonl"
    runtime = ["--simulate", "--seed", "5"] if simulate else []
    assert main(["run", SLOW, "-p", "2", "-q", "--trace", str(path), *runtime, *settings]) == 0
    return tuple(parse_trace(path.read_text().splitlines()))


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Events]:
    tmp = str(tmp_path_factory.mktemp("traces"))

    def get(mode: str, simulate: bool = True) -> Events:
        return copy.deepcopy(list(_trace(mode, simulate, tmp)))

    return get


@pytest.mark.parametrize("mode", ["aligned", "unaligned", "at_least_once"])
@pytest.mark.parametrize("simulate", [True, False], ids=["simulation", "threads"])
def test_traces_of_real_runs_pass(traces: Any, mode: str, simulate: bool) -> None:
    report = check_trace(traces(mode, simulate))
    assert report.ok, report.violation and report.violation.render()
    assert report.completed >= 5 and report.channels == 8 and report.tasks == 6
    assert report.cuts_checked == (report.completed if mode != "at_least_once" else 0)


def _index(events: Events, event: str, **match: Any) -> int:
    for i, e in enumerate(events):
        if e["event"] == event and all(e.get(k) == v for k, v in match.items()):
            return i
    raise AssertionError(f"no {event} {match} in the trace")


def _aligned_consumer_taken(events: Events, cid: int) -> int:
    return _index(events, "checkpoint_taken", checkpoint_id=cid, task="map_batch-2#0")


def plant_id_goes_back(events: Events) -> int:
    a = _index(events, "checkpoint_triggered", checkpoint_id=3)
    events[a]["checkpoint_id"] = 1
    return a


def plant_never_ends(events: Events) -> int:
    last = max(e["checkpoint_id"] for e in events if e["event"] == "checkpoint_triggered")
    events[:] = [
        e
        for e in events
        if e["event"] not in ("checkpoint_completed", "checkpoint_aborted")
        or e["checkpoint_id"] != last
    ]
    return _index(events, "job_finished")


def plant_ends_twice(events: Events) -> int:
    i = _index(events, "checkpoint_completed", checkpoint_id=2)
    events.insert(i + 1, dict(events[i]))
    return i + 1


def plant_bad_reason(events: Events) -> int:
    i = _index(events, "checkpoint_completed", checkpoint_id=2)
    events[i] = {**events[i], "event": "checkpoint_aborted", "reason": "BECAUSE"}
    return i


def plant_blocked_channel_read(events: Events) -> int:
    i = _aligned_consumer_taken(events, 3)
    events[i]["consumed"]["0"] += 100  # read on after its barrier on channel 0
    return i


def plant_missing_barrier(events: Events) -> int:
    taken = _aligned_consumer_taken(events, 3)
    barrier = _index(events, "barrier_received", checkpoint_id=3, task="map_batch-2#0", channel=1)
    del events[barrier]
    return taken - 1


def plant_lost_in_flight(events: Events) -> int:
    producer = _index(events, "checkpoint_taken", checkpoint_id=3, task="source-1#0")
    events[producer]["emitted"]["0"] += 100  # 100 records the consumer never accounted for
    return _index(events, "checkpoint_completed", checkpoint_id=3)


def plant_too_many_pending(events: Events) -> int:
    i = _index(events, "checkpoint_triggered", checkpoint_id=2)
    extra = {**events[i], "checkpoint_id": 1000, "seq": -1}
    done = _index(events, "checkpoint_completed", checkpoint_id=2)
    events.insert(done, extra)
    return done


def plant_ack_without_snapshot(events: Events) -> int:
    i = _index(events, "checkpoint_acknowledged", checkpoint_id=2, task="source-1#1")
    events[i] = {**events[i], "checkpoint_id": 999}
    return i


def plant_task_goes_back(events: Events) -> int:
    i = _index(events, "checkpoint_taken", checkpoint_id=4, task="source-1#1")
    events[i]["checkpoint_id"] = 2
    return i


def plant_snapshot_missing(events: Events) -> int:
    """A task's snapshot (and acknowledgement) of checkpoint 3 is gone, yet it completes."""
    events[:] = [
        e
        for e in events
        if not (
            e["event"] in ("checkpoint_taken", "checkpoint_acknowledged", "channel_state_captured")
            and e.get("checkpoint_id") == 3
            and e.get("task") == "map_batch-2#1"
        )
    ]
    return _index(events, "checkpoint_completed", checkpoint_id=3)


PLANTS: dict[str, tuple[Callable[[Events], int], str, str]] = {
    "id goes back": (plant_id_goes_back, "ids-increase", "triggered after checkpoint"),
    "never ends": (plant_never_ends, "ends-once", "never ended"),
    "ends twice": (plant_ends_twice, "ends-once", "completed after it had ended"),
    "bad reason": (plant_bad_reason, "valid-reason", "'BECAUSE' is not a CheckpointFailureReason"),
    "blocked channel read": (plant_blocked_channel_read, "blocked-channel", "after its barrier 3"),
    "missing barrier": (plant_missing_barrier, "trigger-after-barriers", "input channel(s) [1]"),
    "lost in flight": (plant_lost_in_flight, "consistent-cut", "not a consistent cut"),
    "too many pending": (plant_too_many_pending, "max-concurrent", "2 checkpoints pending"),
    "ack without snapshot": (plant_ack_without_snapshot, "ack-after-snapshot", "never took"),
    "task goes back": (plant_task_goes_back, "task-order", "took checkpoint 2 after"),
    "snapshot missing": (
        plant_snapshot_missing,
        "complete-snapshot",
        "without a snapshot of map_batch-2#1",
    ),
}


@pytest.mark.parametrize("name", list(PLANTS))
def test_a_planted_violation_is_reported_at_its_event(traces: Any, name: str) -> None:
    plant, rule, message = PLANTS[name]
    events = traces("aligned")
    assert check_trace(events).ok
    at = plant(events)
    report = check_trace(events)
    assert report.violation is not None, f"{name}: not found"
    assert report.violation.rule == rule
    assert message in report.violation.message
    assert report.violation.event is events[at]


def test_the_command_prints_the_violation_with_its_context_and_exits_1(
    traces: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = traces("unaligned")
    producer = _index(events, "checkpoint_taken", checkpoint_id=2, task="source-1#1")
    events[producer]["emitted"]["1"] -= 7
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("VIOLATION consistent-cut: checkpoint 2 is not a consistent cut on ")
    assert "  at #" in out and '"event": "checkpoint_completed"' in out
    assert "  see #" in out and '"task": "source-1#1"' in out


def test_the_command_summarises_a_good_trace(
    traces: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "good.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in traces("unaligned")))
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("trace OK: ") and "consistent cuts verified: " in out


def test_unreadable_traces_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"event": "job_submitted"}\nnot json\n')
    assert main(["check", str(bad)]) == 2
    assert "line 2: not JSON" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["check", str(empty)]) == 2
    assert "holds no events" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "missing.jsonl")]) == 2
    assert not (tmp_path / "missing.jsonl").exists()  # never created by the checker
    with pytest.raises(TraceFormatError, match="line 1: not a trace event"):
        parse_trace(["[1, 2]"])


@pytest.mark.parametrize("unaligned", [False, True], ids=["aligned", "unaligned"])
def test_traces_of_runs_with_restarts_pass(tmp_path: Path, unaligned: bool) -> None:
    """A job that fails twice and restores (recovered in-flight data included) still keeps
    every invariant; the checker starts each task afresh at every deployment."""
    trace = tmp_path / "restarts.jsonl"
    example = str(ROOT / "examples" / "failure_recovery.py")
    args = ["run", example, "-p", "2", "-q", "--simulate", "--seed", "3", "--trace", str(trace)]
    if unaligned:
        args += ["-D", "execution.checkpointing.unaligned.enabled=true"]
    assert main(args) == 0
    events = parse_trace(trace.read_text().splitlines())
    assert sum(e["event"] == "job_deployed" for e in events) == 3  # first run + 2 restarts
    report = check_trace(events)
    assert report.ok, report.violation and report.violation.render()
    assert report.cuts_checked == report.completed >= 5
