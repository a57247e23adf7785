"""A scripted walk through the protocol core: one checkpoint aligned, one unaligned.

Two source subtasks feed one downstream subtask over two channels. The coordinator triggers
the sources, the sources put their barrier in the channel behind the data they already sent,
the downstream gate aligns (or not) and the acknowledgements complete the checkpoint. Every line
printed is an effect or a view of the real core objects.
"""

from __future__ import annotations

from collections.abc import Callable

from runtime.barrier import make_gate
from runtime.checkpoint import CheckpointMetrics, StateHandle, TaskId, TaskStateSnapshot
from runtime.clock import TimerQueue
from runtime.coordinator import CheckpointCoordinator, CheckpointPlanCalculator, CoordinatorConfig
from runtime.effects import (
    AbortCheckpointOnBarrier,
    AllBarriersReceived,
    CheckpointCompleted,
    CoordinatorEffect,
    ResumeConsumption,
    ScheduleTimer,
    Send,
    TriggerCheckpointOnBarrier,
)
from runtime.messages import (
    AcknowledgeCheckpoint,
    JobStatusChanged,
    NotifyCheckpointComplete,
    TimerFired,
    TriggerCheckpoint,
)
from runtime.network import Buffer, CheckpointBarrier
from runtime.status import ExecutionState, JobStatus
from runtime.storage import handle_with_storage

SOURCES = (TaskId("source", 0), TaskId("source", 1))
SINK = TaskId("sum", 0)


def walkthrough(write: Callable[[str], None] = print) -> None:
    for unaligned in (False, True):
        _one_checkpoint(unaligned, write)
        write("")


def _one_checkpoint(unaligned: bool, write: Callable[[str], None]) -> None:
    mode = "unaligned" if unaligned else "aligned"
    write(f"== {mode} checkpoint: source#0, source#1 -> sum#0 (2 input channels) ==")
    plan = CheckpointPlanCalculator(
        trigger=SOURCES,
        ack=[*SOURCES, SINK],
        commit=[*SOURCES, SINK],
        initial_state=ExecutionState.RUNNING,
    )
    config = CoordinatorConfig(interval=100, unaligned=unaligned, initial_delay=100)
    coordinator = CheckpointCoordinator(config, plan, seed=7)
    gate = make_gate("aligned_with_timeout" if unaligned else "aligned", 2)
    now = 0

    def log(who: str, text: str) -> None:
        write(f"  t={now:>4} ms  {who:<12} {text}")

    def coordinator_effects(
        effects: list[CoordinatorEffect],
    ) -> list[tuple[TaskId, TriggerCheckpoint]]:
        triggers = []
        for e in effects:
            if isinstance(e, Send) and isinstance(e.to, TaskId):
                if isinstance(e.message, TriggerCheckpoint):
                    triggers.append((e.to, e.message))
                    log("coordinator", f"trigger checkpoint {e.message.checkpoint_id} -> {e.to}")
                elif isinstance(e.message, NotifyCheckpointComplete):
                    cid = e.message.checkpoint_id
                    log("coordinator", f"notify checkpoint {cid} complete -> {e.to}")
            elif isinstance(e, CheckpointCompleted):
                cp = e.checkpoint
                log(
                    "coordinator",
                    f"checkpoint {cp.checkpoint_id} COMPLETED, state {cp.state_size} bytes",
                )
        return triggers

    log("job", "RUNNING: the checkpoint scheduler starts (first trigger after 100 ms)")
    timers = TimerQueue()
    for effect in handle_with_storage(coordinator, JobStatusChanged(status=JobStatus.RUNNING), now):
        if isinstance(effect, ScheduleTimer):
            timers.schedule(effect.key, effect.due)
    # records already in flight on both channels when the checkpoint starts
    for channel, records in ((0, ["a", "b"]), (1, ["c", "d", "e"])):
        for record in records:
            gate.push(channel, Buffer([record], 100))
    log("network", "channel 0 holds [a b], channel 1 holds [c d e] (100 bytes each)")
    due = timers.pop_due(100)
    assert due is not None, "the periodic trigger is due at 100 ms"
    periodic_key, now = due
    triggers = coordinator_effects(
        handle_with_storage(coordinator, TimerFired(key=periodic_key), now)
    )
    barrier = None
    for task, trigger in triggers:
        channel = task.subtask
        barrier = CheckpointBarrier(
            checkpoint_id=trigger.checkpoint_id,
            timestamp=trigger.timestamp,
            options=trigger.options,
        )
        gate.push(channel, barrier)
        where = "ahead of" if barrier.is_unaligned else "behind"
        log(
            str(task),
            f"snapshot taken, barrier {barrier.checkpoint_id} sent on channel {channel} ({where} the queued data)",
        )
        state = TaskStateSnapshot(handles=(StateHandle(key=f"{task}-offsets", size=16),))
        coordinator_effects(
            handle_with_storage(
                coordinator,
                AcknowledgeCheckpoint(task=task, checkpoint_id=trigger.checkpoint_id, state=state),
                now,
            )
        )
        log(str(task), "acknowledged")
    assert barrier is not None
    delivered: list[object] = []
    sink_ack: AllBarriersReceived | TriggerCheckpointOnBarrier | None = None
    # the downstream task polls its channels, channel 1 first (channel 0 is slower)
    order = [1, 1, 1, 1, 0, 0, 0]
    for channel in order:
        if not gate.can_poll(channel):
            why = "blocked" if channel in gate.blocked() else "empty"
            log(str(SINK), f"channel {channel} is {why}: nothing read")
            continue
        now += 5
        result = gate.poll(channel, now)
        polled = result.polled.item
        if isinstance(polled, Buffer):
            delivered.extend(polled.records)
            log(str(SINK), f"processed {list(polled.records)} from channel {channel}")
        elif isinstance(polled, CheckpointBarrier):
            log(str(SINK), f"barrier {polled.checkpoint_id} from channel {channel}")
        for gate_effect in result.effects:
            if isinstance(gate_effect, TriggerCheckpointOnBarrier):
                kind = "UNALIGNED" if gate_effect.barrier.is_unaligned else "aligned"
                when = "first barrier" if gate_effect.barrier.is_unaligned else "last barrier"
                log(
                    str(SINK),
                    f"{when}: snapshot of checkpoint {gate_effect.barrier.checkpoint_id} ({kind}), start delay {gate_effect.start_delay_ms} ms",
                )
                sink_ack = gate_effect
            elif isinstance(gate_effect, AllBarriersReceived):
                log(
                    str(SINK),
                    f"alignment of {gate_effect.checkpoint_id} done in {gate_effect.alignment_duration_ms} ms",
                )
                sink_ack = gate_effect
            elif isinstance(gate_effect, AbortCheckpointOnBarrier):
                log(str(SINK), f"abort {gate_effect.checkpoint_id}: {gate_effect.reason.name}")
        if isinstance(polled, CheckpointBarrier) and gate.blocked():
            log(str(SINK), f"blocked until the other barriers arrive: channels {gate.blocked()}")
        if any(isinstance(e, ResumeConsumption) for e in result.effects):
            log(str(SINK), "blocked channels resumed")
    inflight = gate.inflight(barrier.checkpoint_id)
    persisted = sum(e.item.size for e in inflight if isinstance(e.item, Buffer))
    if unaligned:
        names = [r for e in inflight if isinstance(e.item, Buffer) for r in e.item.records]
        log(str(SINK), f"in-flight data persisted as channel state: {names} ({persisted} bytes)")
    metrics = CheckpointMetrics(
        bytes_persisted_during_alignment=persisted,
        unaligned_checkpoint=unaligned,
        alignment_duration_ms=gate.handler.last_alignment_duration_ms,
    )
    state = TaskStateSnapshot(handles=(StateHandle(key=f"{SINK}-sum", size=8),))
    coordinator_effects(
        handle_with_storage(
            coordinator,
            AcknowledgeCheckpoint(
                task=SINK, checkpoint_id=barrier.checkpoint_id, state=state, metrics=metrics
            ),
            now,
        )
    )
    stats = coordinator.stats.to_json()["latest"]["completed"]
    log(
        "stats",
        f"checkpoint_type={stats['checkpoint_type']} end_to_end_duration={stats['end_to_end_duration']} ms persisted_data={stats['persisted_data']}",
    )
    assert sink_ack is not None
