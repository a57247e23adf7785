"""Barrier-alignment invariants of one task's input gate, over random channel streams and
random interleavings of their arrival with polls and clock advances.

Every example is a conformance scenario: a failure prints it (``Hypothesis note``) ready to be
saved as ``counterexample.scn`` and replayed with ``ckptsim conformance counterexample.scn``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from runtime.conformance.gate_harness import GateHarness
from runtime.conformance.scenario import parse
from runtime.conformance.task_harness import TaskHarness
from runtime.network import Buffer, CancelCheckpointMarker, CheckpointBarrier, EndOfPartition
from tests.properties.gate_strategies import GateRun, gate_runs

EXACTLY_ONCE = ["aligned", "unaligned", "aligned_with_timeout", "legacy_buffered"]
ALIGNED = ["aligned", "legacy_buffered"]
UNALIGNED = ["unaligned", "aligned_with_timeout"]


def _run(data: st.DataObject, mode: str) -> tuple[GateRun, GateHarness]:
    run = data.draw(gate_runs(mode), label="run")
    note(
        "Replay: save the scenario below as counterexample.scn and run "
        "`ckptsim conformance counterexample.scn`\n" + run.script()
    )
    return run, run.execute()


class Cut:
    """What a finished run tells about channels, checkpoints and deliveries."""

    def __init__(self, harness: GateHarness) -> None:
        self.h = harness
        self.by_channel: dict[int, list[tuple[int, object]]] = {}
        for index, (channel, item) in sorted(harness.items.items()):
            self.by_channel.setdefault(channel, []).append((index, item))

    def data_before(self, channel: int, checkpoint_id: int) -> list[int] | None:
        """Data before the channel's barrier n; all data if it ended without one; None if neither."""
        data: list[int] = []
        for index, item in self.by_channel.get(channel, []):
            if isinstance(item, CheckpointBarrier) and item.checkpoint_id == checkpoint_id:
                return data
            if isinstance(item, EndOfPartition):
                return data
            if isinstance(item, Buffer):
                data.append(index)
        return None

    def position(self, kind: str, checkpoint_id: int) -> int | None:
        for pos, entry in enumerate(self.h.log):
            if entry[0] == kind and entry[1] == checkpoint_id:
                return pos
        return None

    def delivered_data(self, channel: int, before: int) -> list[int]:
        return [
            e[1]
            for e in self.h.log[:before]
            if e[0] == "out" and e[2] == channel and isinstance(self.h.items[e[1]][1], Buffer)
        ]

    def kept_checkpoints(self) -> list[int]:
        """Triggered, all barriers in, never aborted: what the task acknowledges."""
        aborted = {e[1] for e in self.h.log if e[0] == "abort"}
        aligned = {e[1] for e in self.h.log if e[0] == "aligned"}
        return [
            e[1]
            for e in self.h.log
            if e[0] == "trigger" and e[1] in aligned and e[1] not in aborted
        ]

    def inflight(self, checkpoint_id: int, channel: int) -> list[int]:
        return sorted(
            e.seq for e in self.h.gate.inflight(checkpoint_id) if self.h.items[e.seq][0] == channel
        )


def _ids(harness: GateHarness, kind: str) -> list[int]:
    return [int(e[1]) for e in harness.log if e[0] == kind]


@pytest.mark.parametrize("mode", EXACTLY_ONCE)
@given(data=st.data())
def test_triggered_ids_strictly_increase_and_each_id_is_triggered_or_aborted_at_most_once(
    mode: str, data: st.DataObject
) -> None:
    """Checkpoint ids triggered by a task strictly increase; no id is triggered twice or
    aborted twice; with aligned handling an id is never both triggered and aborted."""
    _, h = _run(data, mode)
    triggered, aborted = _ids(h, "trigger"), _ids(h, "abort")
    assert triggered == sorted(set(triggered))
    assert len(aborted) == len(set(aborted))
    if mode in ALIGNED:
        assert not set(triggered) & set(aborted)


@pytest.mark.parametrize("mode", ALIGNED)
@given(data=st.data())
def test_aligned_trigger_sees_exactly_the_data_before_each_channels_barrier(
    mode: str, data: st.DataObject
) -> None:
    """When checkpoint n triggers, the operator has received, on every channel, exactly the
    data before that channel's barrier n (all of it, for a channel that ended) and nothing
    after it."""
    _, h = _run(data, mode)
    cut = Cut(h)
    for checkpoint_id in _ids(h, "trigger"):
        at = cut.position("trigger", checkpoint_id)
        assert at is not None
        for channel in range(h.num_channels):
            expected = cut.data_before(channel, checkpoint_id)
            assert expected is not None, (
                f"checkpoint {checkpoint_id} triggered without channel {channel}"
            )
            assert cut.delivered_data(channel, at) == expected, (
                f"checkpoint {checkpoint_id}, channel {channel}"
            )


@pytest.mark.parametrize("mode", ["aligned", "legacy_buffered", "aligned_with_timeout"])
@given(data=st.data())
def test_aligned_no_data_is_delivered_from_a_blocked_channel(
    mode: str, data: st.DataObject
) -> None:
    """After a channel delivers an aligned barrier n, none of its later data reaches the
    operator until checkpoint n (or a newer one) is triggered or aborted, unless the barrier
    was obsolete when it came (n already over, or a newer checkpoint already seen)."""
    _, h = _run(data, mode)
    log = h.log
    ended_upto = newest_seen = -1
    for pos, entry in enumerate(log):
        if entry[0] in ("trigger", "abort"):
            ended_upto = max(ended_upto, int(entry[1]))
            continue
        if entry[0] != "polled":
            continue
        channel, item = h.items[entry[1]]
        if isinstance(item, CancelCheckpointMarker):
            newest_seen = max(newest_seen, item.checkpoint_id)
        if not isinstance(item, CheckpointBarrier) or item.is_unaligned:
            continue
        obsolete = ended_upto >= item.checkpoint_id or newest_seen > item.checkpoint_id
        newest_seen = max(newest_seen, item.checkpoint_id)
        if obsolete:
            continue
        for later in log[pos + 1 :]:
            if later[0] in ("trigger", "abort") and int(later[1]) >= item.checkpoint_id:
                break
            if later[0] == "out" and later[2] == channel and later[1] > entry[1]:
                raise AssertionError(
                    f"item {later[1]} of channel {channel} delivered while blocked by barrier "
                    f"{item.checkpoint_id} (item {entry[1]})"
                )


@pytest.mark.parametrize("mode", UNALIGNED)
@given(data=st.data())
def test_unaligned_delivered_before_trigger_plus_inflight_is_exactly_the_data_before_each_barrier(
    mode: str, data: st.DataObject
) -> None:
    """For a kept checkpoint n (triggered, all barriers in, not aborted), per channel: the data
    the operator received before taking n, followed by n's in-flight data, is exactly the data
    before that channel's barrier n."""
    _, h = _run(data, mode)
    cut = Cut(h)
    for checkpoint_id in cut.kept_checkpoints():
        at = cut.position("trigger", checkpoint_id)
        assert at is not None
        for channel in range(h.num_channels):
            expected = cut.data_before(channel, checkpoint_id)
            assert expected is not None, (
                f"checkpoint {checkpoint_id} kept without channel {channel}"
            )
            got = cut.delivered_data(channel, at) + cut.inflight(checkpoint_id, channel)
            assert got == expected, f"checkpoint {checkpoint_id}, channel {channel}"


@pytest.mark.parametrize("mode", EXACTLY_ONCE)
@given(data=st.data())
def test_once_all_channels_end_nothing_stays_blocked_and_every_item_is_taken(
    mode: str, data: st.DataObject
) -> None:
    """When every channel delivered its end of partition, no channel is blocked and every
    item that arrived was taken from its channel (data and end of partition delivered)."""
    run, h = _run(data, mode)
    if not all(s and s[-1] == "E" for s in run.streams):
        return
    assert h.gate.blocked() == []
    assert not h.gate.replay_pending
    polled = {e[1] for e in h.log if e[0] == "polled"}
    assert polled == set(h.items)
    delivered = {e[1] for e in h.log if e[0] == "out"}
    expected = {i for i, (_, item) in h.items.items() if isinstance(item, (Buffer, EndOfPartition))}
    assert delivered == expected


@given(data=st.data())
def test_at_least_once_never_holds_data_back(data: st.DataObject) -> None:
    """With the barrier tracker every channel with queued items can always be polled, and
    every data item reaches the operator."""
    run = data.draw(gate_runs("at_least_once"), label="run")
    note(run.script())

    def no_channel_is_held(h: GateHarness) -> None:
        for channel in h.gate.channels:
            assert not len(channel) or channel.can_poll(), (
                f"channel {channel.index} holds data back"
            )

    h = run.execute(after_step=no_channel_is_held)
    delivered = {e[1] for e in h.log if e[0] == "out"}
    assert {i for i, (_, item) in h.items.items() if isinstance(item, Buffer)} <= delivered


@given(data=st.data())
def test_at_least_once_checkpoint_triggers_only_when_seen_on_all_open_channels(
    data: st.DataObject,
) -> None:
    """Checkpoint n triggers only after every channel delivered barrier n or ended."""
    _, h = _run(data, "at_least_once")
    for pos, entry in enumerate(h.log):
        if entry[0] != "trigger":
            continue
        checkpoint_id = entry[1]
        seen = set()
        for e in h.log[:pos]:
            if e[0] != "polled":
                continue
            channel, item = h.items[e[1]]
            if isinstance(item, EndOfPartition) or (
                isinstance(item, CheckpointBarrier) and item.checkpoint_id == checkpoint_id
            ):
                seen.add(channel)
        assert seen == set(range(h.num_channels)), (
            f"checkpoint {checkpoint_id} seen on {sorted(seen)}"
        )


@pytest.mark.parametrize("mode", [*EXACTLY_ONCE, "at_least_once"])
@given(data=st.data())
def test_a_running_task_and_its_bare_gate_agree_on_every_fact(
    mode: str, data: st.DataObject
) -> None:
    """The same channel events delivered to a task core (``TaskHarness``: its mailbox, its
    input processor, its checkpoint coordinator) and to a bare gate (``GateHarness``) give the
    same checkpoints taken and aborted, the same deliveries in the same order, the same
    blocked channels and the same in-flight data: the gate the scenarios verify is the one
    the task runs."""
    run = data.draw(gate_runs(mode), label="run")
    note(
        "Replay both ways: `ckptsim conformance [--through-task] counterexample.scn`\n"
        + run.script()
    )
    scenario = parse(run.script(), "<property>")
    gate, task = GateHarness(scenario), TaskHarness(scenario)
    for step in scenario.steps:
        gate.act(step)
        task.act(step)
    assert task.triggered == gate.triggered
    assert task.aborted == gate.aborted
    assert task.out == gate.out
    assert sorted(task.blocked()) == sorted(gate.blocked())
    for checkpoint_id in {int(t.rstrip("!")) for t in gate.triggered}:
        assert sorted(task.inflight(checkpoint_id)) == sorted(gate.inflight(checkpoint_id))
