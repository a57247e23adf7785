"""The offline trace checker: real traces pass; every planted violation is found, by its rule,
at the event that breaks it."""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from ckptsim._cli import main
from runtime import tracecheck
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
    """A checkpoint triggered after the last one, which never ends."""
    last = max(e["checkpoint_id"] for e in events if e["event"] == "checkpoint_triggered")
    trigger = _index(events, "checkpoint_triggered", checkpoint_id=last)
    finished = _index(events, "job_finished")
    events.insert(finished, {**events[trigger], "checkpoint_id": last + 1, "seq": -1})
    return finished + 1


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


def plant_acks_of_a_completed_checkpoint_removed(events: Events) -> int:
    events[:] = [
        e
        for e in events
        if not (e["event"] == "checkpoint_acknowledged" and e["checkpoint_id"] == 3)
    ]
    return _index(events, "checkpoint_completed", checkpoint_id=3)


def plant_every_ack_removed(events: Events) -> int:
    events[:] = [e for e in events if e["event"] != "checkpoint_acknowledged"]
    return _index(events, "checkpoint_completed")


def plant_snapshot_of_an_untriggered_checkpoint_after_the_end(events: Events) -> int:
    last = max(e["checkpoint_id"] for e in events if e["event"] == "checkpoint_triggered")
    taken = events[_index(events, "checkpoint_taken", checkpoint_id=3, task="reduce-3#0")]
    events.append({**taken, "checkpoint_id": last + 1, "seq": len(events) + 1})
    return len(events) - 1


def plant_last_completion_and_the_end_removed(events: Events) -> int:
    """The final checkpoint's completion (and any checkpoint after it), and job_finished, all
    gone: the tasks that waited for that final checkpoint finished without one."""
    waiting = max(
        (e for e in events if e["event"] == "waiting_for_final_checkpoint"),
        key=lambda e: e["after_checkpoint"],
    )
    final = waiting["after_checkpoint"] + 1
    events[:] = [
        e
        for e in events
        if e["event"] != "job_finished"
        and not (e["event"] == "checkpoint_completed" and e.get("checkpoint_id") == final)
        and not (e.get("checkpoint_id") or 0) > final
    ]
    waited = {
        e["task"]
        for e in events
        if e["event"] == "waiting_for_final_checkpoint" and e["after_checkpoint"] == final - 1
    }
    return next(
        i for i, e in enumerate(events) if e["event"] == "task_finished" and e["task"] in waited
    )


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
    "acks of a completed checkpoint removed": (
        plant_acks_of_a_completed_checkpoint_removed,
        "complete-acknowledged",
        "checkpoint 3 completed without an acknowledgement from map_batch-2#0, map_batch-2#1",
    ),
    "every ack removed": (
        plant_every_ack_removed,
        "complete-acknowledged",
        "checkpoint 1 completed without an acknowledgement from",
    ),
    "snapshot of an untriggered checkpoint after the end": (
        plant_snapshot_of_an_untriggered_checkpoint_after_the_end,
        "taken-triggered",
        "which was never triggered",
    ),
    "last completion and job_finished removed": (
        plant_last_completion_and_the_end_removed,
        "final-checkpoint",
        "finished while waiting for its final checkpoint",
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


def _edit_first(field: str, value: Any) -> Callable[[Events], None]:
    def edit(events: Events) -> None:
        next(e for e in events if field in e)[field] = value

    return edit


def _topology(value: Any) -> Callable[[Events], None]:
    def edit(events: Events) -> None:
        next(e for e in events if "topology" in e)["topology"]["channels"] = value

    return edit


EDITED_FIELDS: dict[str, tuple[Callable[[Events], None], str]] = {
    "checkpoint_id a word": (
        _edit_first("checkpoint_id", "abc"),
        "field 'checkpoint_id' must be a whole number, got \"abc\"",
    ),
    "checkpoint_id null": (
        _edit_first("checkpoint_id", None),
        "field 'checkpoint_id' must be a whole number, got null",
    ),
    "checkpoint_id a list": (
        _edit_first("checkpoint_id", [1]),
        "field 'checkpoint_id' must be a whole number, got [1]",
    ),
    "task a number": (_edit_first("task", 5), "field 'task' must be a string, got 5"),
    "a channel cut short": (_topology([["a"]]), "field 'topology' must be an object of sources"),
    "input counts of words": (
        _edit_first("input", {"0": "x"}),
        "field 'input' must be counts by channel",
    ),
}


@pytest.mark.parametrize("case", list(EDITED_FIELDS))
def test_a_trace_field_of_another_shape_is_a_usage_error_naming_its_line(
    traces: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """Each was a traceback (ValueError, TypeError from int()), exit 1."""
    edit, message = EDITED_FIELDS[case]
    events = traces("unaligned")
    edit(events)
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ckptsim check: {path}: line ") and message in err, err
    assert err.endswith(
        ": not a trace ckptsim wrote (give the file ckptsim run --trace wrote, unchanged)\n"
    )


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


# --- restarts: what a restart restores --------------------------------------------------------

RESTART_FAULTS = "; ".join(
    [
        "fail-task:task=reduce-2#1,at-record=3000",
        "crash-task:task=source-1#0,at-record=5000",
        "drop-ack:task=source-1#0,checkpoint=2",  # checkpoint 2 expires: an aborted one
    ]
)


@pytest.fixture(scope="module")
def restart_trace(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Events]:
    """failure_recovery on the simulation: checkpoint 2 aborted, 1, 3 and 4 completed, then a
    task fails and the job restarts from checkpoint 4 (later a second restart)."""
    path = tmp_path_factory.mktemp("restarts") / "restarts.jsonl"
    example = str(ROOT / "examples" / "failure_recovery.py")
    args = ["run", example, "-p", "2", "-q", "--simulate", "--seed", "3", "--trace", str(path)]
    args += ["-D", f"ckptsim.faults={RESTART_FAULTS}"]
    args += ["-D", "execution.checkpointing.timeout=30 ms"]
    args += ["-D", "execution.checkpointing.tolerable-failed-checkpoints=5"]
    assert main(args) == 0
    events = tuple(parse_trace(path.read_text().splitlines()))

    def get() -> Events:
        return copy.deepcopy(list(events))

    return get


def _first_restart(events: Events) -> int:
    i = _index(events, "job_restarting")
    assert events[i]["checkpoint_id"] == 4
    assert _index(events, "checkpoint_aborted", checkpoint_id=2) < i
    return i


def _restore_from(events: Events, cid: int) -> int:
    """The first restart (and its tasks) restores checkpoint ``cid`` instead of 4."""
    i = _first_restart(events)
    events[i]["checkpoint_id"] = cid
    for e in events[i:]:
        if e["event"] == "job_failover":
            break
        if e["event"] == "task_restored":
            e["checkpoint_id"] = cid
    return i


def plant_restore_of_a_checkpoint_that_does_not_exist(events: Events) -> int:
    return _restore_from(events, 999)


def plant_restore_of_an_aborted_checkpoint(events: Events) -> int:
    return _restore_from(events, 2)


def plant_restore_of_an_older_checkpoint_for_no_reason(events: Events) -> int:
    return _restore_from(events, 3)


def plant_duplicate_disguised_as_recovered_in_flight_data(events: Events) -> int:
    """After the aligned restore, reduce-2#0 consumes one record twice: the trace passes it
    off as a recovered in-flight record of channel 0 (so every later cut still adds up)."""
    restored = _index(events, "task_restored", task="reduce-2#0")
    events[restored]["input"] = {"0": 1}
    for e in events[restored:]:
        if e["event"] == "job_failover":
            break
        if e["event"] in ("checkpoint_taken", "barrier_received") and e["task"] == "reduce-2#0":
            if e["event"] == "checkpoint_taken":
                e["consumed"]["0"] += 1
            elif e["channel"] == 0:
                e["consumed"] += 1
    return restored


def plant_task_restores_another_checkpoint(events: Events) -> int:
    restored = _index(events, "task_restored", task="source-1#1")
    events[restored]["checkpoint_id"] = 3
    return restored


def plant_a_task_that_starts_from_scratch_after_the_restart(events: Events) -> int:
    """reduce-2#0 of the first restart restores nothing: it replays its input from scratch."""
    start = _first_restart(events)
    del events[_index(events[start:], "task_restored", task="reduce-2#0") + start]
    return next(
        i
        for i in range(start, len(events))
        if events[i].get("task") == "reduce-2#0" and events[i]["event"] in tracecheck._TASK_WORK
    )


def plant_an_ack_of_the_previous_attempt(events: Events) -> int:
    start = _first_restart(events)
    ack = _index(events[start:], "checkpoint_acknowledged", task="source-1#1") + start
    events[ack]["attempt"] = 0
    return ack


def plant_a_restart_without_a_failure(events: Events) -> int:
    del events[_index(events, "job_failover")]
    return _first_restart(events)


def plant_a_finished_job_with_a_task_that_never_finished(events: Events) -> int:
    last = max(
        i
        for i, e in enumerate(events)
        if e["event"] == "task_finished" and e["task"] == "reduce-2#0"
    )
    del events[last]
    return _index(events, "job_finished")


def plant_a_fallback_whose_sinks_keep_what_they_committed_after_it(events: Events) -> int:
    """The first restart falls back to checkpoint 3 (4 is said to be unusable), but the sinks,
    which committed their output for checkpoint 4 before the failure, retract nothing: the
    first commit after the restart is the offence."""
    at = _restore_from(events, 3)
    events.insert(at, {"event": "checkpoint_unusable", "checkpoint_id": 4, "error": "damaged"})
    return next(i for i in range(at + 1, len(events)) if events[i]["event"] == "sink_committed")


RESTART_PLANTS: dict[str, tuple[Callable[[Events], int], str, str]] = {
    "a fallback whose sinks keep what they committed after it": (
        plant_a_fallback_whose_sinks_keep_what_they_committed_after_it,
        "retract-after-restore",
        "(committed output again) without retracting the output its sink sink-file committed "
        "for checkpoint(s) after checkpoint 3 (checkpoints 4)",
    ),
    "a task that starts from scratch after a restart": (
        plant_a_task_that_starts_from_scratch_after_the_restart,
        "restore-every-task",
        "reduce-2#0 ran (",
    ),
    "an acknowledgement of the previous attempt": (
        plant_an_ack_of_the_previous_attempt,
        "stale-attempt",
        "source-1#1 of attempt 0 checkpoint acknowledged after the job was deployed again as "
        "attempt 1",
    ),
    "a restart without a failure": (
        plant_a_restart_without_a_failure,
        "restart-after-failure",
        "the job restarted with no failure (job_failover) since it was deployed",
    ),
    "a finished job with a task that never finished": (
        plant_a_finished_job_with_a_task_that_never_finished,
        "finished-every-task",
        "the job finished while reduce-2#0 never finished",
    ),
    "restore of a checkpoint that does not exist": (
        plant_restore_of_a_checkpoint_that_does_not_exist,
        "restore-completed",
        "restarted from checkpoint 999, which never completed in this run",
    ),
    "restore of an aborted checkpoint": (
        plant_restore_of_an_aborted_checkpoint,
        "restore-completed",
        "restarted from checkpoint 2, which was aborted",
    ),
    "restore of an older checkpoint for no reason": (
        plant_restore_of_an_older_checkpoint_for_no_reason,
        "restore-latest",
        "although checkpoint 4 completed later, and the trace gives no reason to skip "
        "checkpoint(s) [4]",
    ),
    "a duplicate disguised as recovered in-flight data": (
        plant_duplicate_disguised_as_recovered_in_flight_data,
        "restore-in-flight",
        "reduce-2#0 recovered 1 in-flight record(s) on input channel 0 from checkpoint 4, "
        "whose snapshot persisted 0",
    ),
    "a task restores another checkpoint": (
        plant_task_restores_another_checkpoint,
        "restore-completed",
        "source-1#1 restored checkpoint 3 while the job restores checkpoint 4",
    ),
}


@pytest.mark.parametrize("name", list(RESTART_PLANTS))
def test_a_planted_restore_violation_is_reported_at_its_event(
    restart_trace: Callable[[], Events], name: str
) -> None:
    plant, rule, message = RESTART_PLANTS[name]
    events = restart_trace()
    report = check_trace(events)
    assert report.ok, report.violation and report.violation.render()
    assert report.restores_checked == 2 and report.aborted == {"CHECKPOINT_EXPIRED": 1}
    at = plant(events)
    report = check_trace(events)
    assert report.violation is not None, f"{name}: not found"
    assert (report.violation.rule, report.violation.incomplete) == (rule, False)
    assert message in report.violation.message
    assert report.violation.event is events[at]


def test_a_disguised_duplicate_keeps_every_cut_consistent(
    restart_trace: Callable[[], Events], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the planted duplicate hides: without the restore check every cut adds up."""
    events = restart_trace()
    plant_duplicate_disguised_as_recovered_in_flight_data(events)

    def count_only(self: Any, e: dict[str, Any]) -> None:
        self.tasks_restored.add(e["task"])
        tracecheck._add_keyed_counts(self.keyed_restored, e)
        for channel, records in e["input"].items():
            self.restored_input[(e["task"], int(channel))] = records

    monkeypatch.setattr(tracecheck._Checker, "on_task_restored", count_only)
    report = check_trace(events)
    assert report.ok and report.cuts_checked == report.completed


def test_a_fallback_traced_with_the_checkpoint_it_skipped_passes(
    restart_trace: Callable[[], Events],
) -> None:
    """... and with the retraction of what the sinks committed for the checkpoint it skipped,
    as a real fallback logs it (each restored sink subtask, before it commits again)."""
    events = restart_trace()
    at = _restore_from(events, 3)
    events.insert(at, {"event": "checkpoint_unusable", "checkpoint_id": 4, "error": "damaged"})
    for task in ("reduce-2#0", "reduce-2#1"):
        restored = _index(events[at:], "task_restored", task=task) + at
        retracted = {"event": "sink_output_retracted", "task": task, "sink": "sink-file"}
        events.insert(restored + 1, {**retracted, "after_checkpoint": 3, "files": ["..."]})
    report = check_trace(events)
    assert report.ok, report.violation and report.violation.render()


@pytest.fixture(scope="module")
def fallback_trace() -> Events:
    """A real fallback on the simulation: the counting job into part files; its newest
    checkpoint is damaged (a state file deleted) right before user code fails, so the restart
    restores the one before and each sink subtask retracts the part files it committed for
    the damaged one."""
    from tests.actors.test_failover import counting, simulate  # noqa: PLC0415
    from tests.crafted_checkpoints import (  # noqa: PLC0415
        completed_checkpoints,
        delete_a_state_file,
    )

    root = Path(tempfile.mkdtemp(prefix="ckptsim-fallback-"))
    seen = [0]

    def sabotage(r: Any) -> Any:
        seen[0] += 1
        if seen[0] == 1_700:
            delete_a_state_file(completed_checkpoints(root / "chk")[-1])
            raise RuntimeError("user code fails right after the checkpoint was damaged")
        return r

    def build(env: Any) -> None:
        counting(env, out=root / "out", before_keying=sabotage)
        env.configure(
            {
                "execution.checkpointing.dir": str(root / "chk"),
                "execution.checkpointing.num-retained": 2,
            }
        )

    try:
        result, sim = simulate(build=build)  # the real trace passes (else it raises)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert result.restarts == 1 and sim.report is not None and sim.report.ok
    return [dict(e) for e in sim.events]


def test_a_fallback_whose_output_retraction_events_were_removed_is_a_violation(
    fallback_trace: Events,
) -> None:
    """Issue 22, item 9: the checker passed such a trace. The sinks committed part files for
    the checkpoint the fallback skipped; without their retraction, the first sink subtask
    that commits again after the restart is the offence."""
    events = copy.deepcopy(fallback_trace)
    restart = _index(events, "job_restarting")
    (unusable,) = [e["checkpoint_id"] for e in events if e["event"] == "checkpoint_unusable"]
    assert events[restart]["checkpoint_id"] == unusable - 1
    retractions = [e for e in events if e["event"] == "sink_output_retracted"]
    assert {e["task"] for e in retractions} == {"counts#0", "counts#1"}
    assert all(e["after_checkpoint"] == unusable - 1 and e["files"] for e in retractions)
    events = [e for e in events if e["event"] != "sink_output_retracted"]
    report = check_trace(events)
    assert report.violation is not None and not report.violation.incomplete
    assert report.violation.rule == "retract-after-restore"
    restart = _index(events, "job_restarting")
    first = next(
        e
        for e in events[restart:]
        if e["event"] in ("sink_committed", "task_finished")
        and e.get("task", "").startswith("counts")
    )
    assert report.violation.event is first
    assert f"for checkpoint(s) after checkpoint {unusable - 1} (checkpoints {unusable})" in (
        report.violation.message
    )


# --- traces that lack what the checker needs ---------------------------------------------------


def drop_job_submitted(events: Events) -> int:
    del events[_index(events, "job_submitted")]
    return 0  # the first event, which needed the submission


def drop_job_deployed(events: Events) -> int:
    del events[_index(events, "job_deployed")]
    return _index(events, "job_status_changed") + 1  # the first event needing the topology


def drop_job_finished(events: Events) -> int:
    del events[_index(events, "job_finished")]
    return len(events) - 1


def drop_the_topology(events: Events) -> int:
    i = _index(events, "job_deployed")
    del events[i]["topology"]
    return i


INCOMPLETE: dict[str, tuple[Callable[[Events], int], str]] = {
    "no job_submitted": (drop_job_submitted, "before any job_submitted event"),
    "no job_deployed": (drop_job_deployed, "before any job_deployed event"),
    "no job_finished": (drop_job_finished, "ends before the job's job_finished event"),
    "no topology": (drop_the_topology, "job_deployed carries no topology"),
}


@pytest.mark.parametrize("name", list(INCOMPLETE))
def test_a_trace_lacking_what_the_checks_need_is_incomplete_not_a_pass(
    traces: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    drop, message = INCOMPLETE[name]
    events = traces("aligned")
    at = drop(events)
    report = check_trace(events)
    assert report.violation is not None and report.incomplete, name
    assert message in report.violation.message
    assert report.violation.event is events[at]
    path = tmp_path / "incomplete.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "INCOMPLETE TRACE: " in err and message in err and "  at #" in err


def test_the_trace_of_a_script_running_two_jobs_is_checked_job_by_job(traces: Any) -> None:
    first, second = traces("aligned"), traces("unaligned")
    report = check_trace([*first, *second])
    assert report.ok, report.violation and report.violation.render()
    assert report.jobs == 2
    unfinished = [e for e in first if e["event"] != "job_finished"]
    report = check_trace([*unfinished, *second])
    assert report.incomplete
    assert report.violation is not None and "second job_submitted" in report.violation.message


def test_unknown_events_and_extra_fields_are_ignored(traces: Any) -> None:
    events = traces("aligned")
    for e in events:
        e["a_field_from_a_later_version"] = [1, 2]
    events.insert(5, {"event": "end_of_data_received", "task": "reduce-3#0", "channel": 0})
    assert check_trace(events).ok


def test_traces_of_a_stop_with_savepoint_and_its_resume_pass(tmp_path: Path) -> None:
    """The resumed run restores a savepoint of another run (job_restoring): its tasks restore
    that one, which the trace never saw complete."""
    from tests.actors.test_cli_run import _savepointed_script  # noqa: PLC0415

    stopped, resumed = tmp_path / "stopped.jsonl", tmp_path / "resumed.jsonl"
    script = _savepointed_script(tmp_path, stop=True)
    assert main(["run", script, "-p", "2", "-q", "--simulate", "--trace", str(stopped)]) == 0
    (savepoint,) = [
        e["path"]
        for e in parse_trace(stopped.read_text().splitlines())
        if e["event"] == "savepoint_completed"
    ]
    script = _savepointed_script(tmp_path, stop=False)
    argv = ["run", script, "-p", "2", "-q", "--simulate", "--from-savepoint", savepoint]
    assert main([*argv, "--trace", str(resumed)]) == 0
    for path in (stopped, resumed):
        report = check_trace(parse_trace(path.read_text().splitlines()))
        assert report.ok, report.violation and report.violation.render()
    events = parse_trace(resumed.read_text().splitlines())
    restored = _index(events, "task_restored")
    events[restored]["checkpoint_id"] += 1
    report = check_trace(events)
    assert report.violation is not None and report.violation.event is events[restored]
    assert report.violation.rule == "restore-completed"


def test_a_run_resumed_from_an_earlier_jobs_savepoint_retracts_what_that_job_committed_after(
    tmp_path: Path,
) -> None:
    """Two jobs in one trace: the first takes a savepoint and runs on to its end, committing
    part files for later checkpoints; the second resumes from the savepoint into the same
    folder. Its sink subtasks must retract the first job's files after the savepoint before
    they commit (they do, and the folder ends exact); without those events the checker names
    the second job's first commit."""
    from actors.trace import TraceCollector  # noqa: PLC0415
    from ckptsim import StreamExecutionEnvironment  # noqa: PLC0415
    from tests.actors.test_failover import (  # noqa: PLC0415
        counting,
        failure_free,
        observe,
        read_part_files,
    )

    out, trace = tmp_path / "out", TraceCollector()
    first = StreamExecutionEnvironment()
    counting(first, out=out)
    first.configure({"execution.checkpointing.dir": str(tmp_path / "chk1")})
    first.trigger_savepoint(at_ms=15)
    ended = first.execute("first", runtime="simulation", seed=1, trace=trace)
    (savepoint,) = ended.savepoints
    second = StreamExecutionEnvironment()
    counting(second, out=out)
    second.configure(
        {
            "execution.checkpointing.dir": str(tmp_path / "chk2"),
            "execution.state-recovery.path": savepoint,
        }
    )
    resumed = second.execute("second", runtime="simulation", seed=2, trace=trace)
    assert ended.succeeded and resumed.succeeded
    assert observe(read_part_files(out)) == failure_free()
    events = [dict(e) for e in trace.events]
    report = check_trace(events)
    assert report.ok and report.jobs == 2, report.violation and report.violation.render()
    second_job = _index(events, "job_restoring")
    restored = events[second_job]["checkpoint_id"]
    retracted = [e for e in events[second_job:] if e["event"] == "sink_output_retracted"]
    assert {e["task"] for e in retracted} == {"counts#0", "counts#1"}
    assert all(e["after_checkpoint"] == restored for e in retracted)
    assert any(e["files"] for e in retracted), "the first job committed after the savepoint"
    events = [e for i, e in enumerate(events) if i < second_job or e not in retracted]
    report = check_trace(events)
    assert report.violation is not None and report.violation.rule == "retract-after-restore"
    first_commit = next(
        e for e in events[second_job:] if e["event"] in ("sink_committed", "task_finished")
    )
    assert report.violation.event is first_commit
    assert f"after checkpoint {restored}" in report.violation.message


def test_a_trace_the_checks_cannot_read_is_a_usage_error_not_a_traceback(
    traces: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What parse_trace's shape checks let through and a check then cannot read (a count
    where counts by channel were due, in an event whose counts a check reads)."""

    def unreadable(events: Events) -> Any:
        return int("x")  # as _int_keys meets a word

    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in traces("aligned")))
    monkeypatch.setattr(tracecheck, "check_trace", unreadable)
    assert main(["check", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"ckptsim check: {path}: not a trace ckptsim wrote (ValueError: invalid literal for "
        "int() with base 10: 'x'); give the file ckptsim run --trace wrote, unchanged\n"
    )
