"""Runs ``@kind coordinator`` scenarios against a real ``CheckpointCoordinator``.

Every observed value comes from the coordinator's effects (messages sent, requests completed or
failed, state discarded, job failures, timers) or its own views (pending, store, queue).
"""

from __future__ import annotations

from runtime.checkpoint import SnapshotType, StateHandle, TaskId, TaskStateSnapshot
from runtime.clock import ManualClock, TimerQueue
from runtime.conformance.scenario import (
    Mismatch,
    Scenario,
    ScenarioError,
    Step,
    bool_header,
    compare,
    int_header,
    one_value,
    parse_int,
    parse_ints,
)
from runtime.coordinator import (
    CheckpointCanceller,
    CheckpointCoordinator,
    CheckpointPlanCalculator,
    CoordinatorConfig,
)
from runtime.effects import (
    CancelTimer,
    DiscardState,
    Effect,
    FailJob,
    RequestCompleted,
    RequestDeclined,
    RequestFailed,
    ScheduleTimer,
    Send,
)
from runtime.messages import (
    AcknowledgeCheckpoint,
    CoordinatorMessage,
    DeclineCheckpoint,
    ExecutionStateChanged,
    JobStatusChanged,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    ShutdownCoordinator,
    TimerFired,
    TriggerCheckpoint,
    TriggerCheckpointRequest,
)
from runtime.reasons import CheckpointFailureReason
from runtime.status import ExecutionState, JobStatus
from runtime.storage import handle_with_storage


def _names(scenario: Scenario, key: str) -> list[str] | None:
    value = scenario.headers.get(key)
    return value.split() if value is not None else None


class CoordinatorHarness:
    def __init__(self, scenario: Scenario) -> None:
        base = _names(scenario, "tasks") or []
        trigger = _names(scenario, "trigger") or base
        ack = _names(scenario, "ack") or base
        commit = _names(scenario, "commit") or base
        if not trigger or not ack:
            raise ScenarioError(1, "name the tasks: @tasks, or @trigger and @ack (and @commit)")
        interval = scenario.headers.get("interval_ms")
        initial = scenario.headers.get("initial_delay_ms")
        config = CoordinatorConfig(
            interval=int_header(scenario, "interval_ms") if interval is not None else None,
            timeout=int_header(scenario, "timeout_ms", 600_000),
            min_pause=int_header(scenario, "min_pause_ms", 0),
            max_concurrent=int_header(scenario, "max_concurrent", 1),
            tolerable_failures=int_header(scenario, "tolerable_failures", 0),
            num_retained=int_header(scenario, "retained", 1),
            unaligned=bool_header(scenario, "unaligned", False),
            initial_delay=int_header(scenario, "initial_delay_ms") if initial is not None else None,
        )
        self.tasks = {name: TaskId(name) for name in dict.fromkeys([*trigger, *ack, *commit])}
        plan = CheckpointPlanCalculator(
            trigger=[self.tasks[n] for n in trigger],
            ack=[self.tasks[n] for n in ack],
            commit=[self.tasks[n] for n in commit],
            initial_state=ExecutionState.RUNNING,
        )
        self.coordinator = CheckpointCoordinator(config, plan, seed=0)
        self.clock = ManualClock()
        self.timers = TimerQueue()
        self.job_status = JobStatus.RUNNING
        self.requests = 0
        self.results: dict[int, str] = {}
        self.sent: list[str] = []
        self.discarded: list[str] = []
        self.fail_job = 0

    # --- actions -------------------------------------------------------------------------------

    def act(self, step: Step) -> None:
        name, args = step.name, step.args
        if name in ("request", "savepoint", "tick"):
            self._request(step)
        elif name == "advance":
            self._advance(parse_int(step, one_value(step), "duration"))
        elif name == "ack":
            if len(args) not in (2, 3):
                raise ScenarioError(step.line, "ack TASK N [STATE]")
            state = (
                TaskStateSnapshot(handles=(StateHandle(key=args[2]),)) if len(args) == 3 else None
            )
            self._send(
                AcknowledgeCheckpoint(
                    task=self._task(step, args[0]),
                    checkpoint_id=parse_int(step, args[1], "checkpoint id"),
                    state=state,
                )
            )
        elif name == "decline":
            if len(args) not in (2, 3):
                raise ScenarioError(step.line, "decline TASK N [REASON]")
            reason = CheckpointFailureReason.CHECKPOINT_DECLINED
            if len(args) == 3:
                reason = self._reason(step, args[2])
            self._send(
                DeclineCheckpoint(
                    task=self._task(step, args[0]),
                    checkpoint_id=parse_int(step, args[1], "checkpoint id"),
                    reason=reason,
                )
            )
        elif name == "expire":
            key = CheckpointCanceller(parse_int(step, one_value(step), "checkpoint id"))
            self.timers.cancel(key)
            self._send(TimerFired(key=key))
        elif name == "task":
            if len(args) != 2:
                raise ScenarioError(step.line, "task TASK STATUS")
            try:
                execution_state = ExecutionState[args[1]]
            except KeyError:
                raise ScenarioError(step.line, f"unknown task status {args[1]!r}") from None
            self._send(ExecutionStateChanged(task=self._task(step, args[0]), state=execution_state))
        elif name == "job":
            try:
                self.job_status = JobStatus[one_value(step)]
            except KeyError:
                raise ScenarioError(step.line, f"unknown job status {args[0]!r}") from None
            self._send(JobStatusChanged(status=self.job_status))
        elif name == "shutdown":
            self._send(ShutdownCoordinator(job_status=self.job_status))

    def _request(self, step: Step) -> None:
        self.requests += 1
        request_id = self.requests
        self.results[request_id] = "waiting"
        args = step.args
        if step.name == "request":
            if args not in ((), ("periodic",)):
                raise ScenarioError(step.line, "request [periodic]")
            msg = TriggerCheckpointRequest(request_id=request_id, periodic=args == ("periodic",))
        elif step.name == "savepoint":
            if args not in ((), ("sync",)):
                raise ScenarioError(step.line, "savepoint [sync]")
            kind = SnapshotType.SYNC_SAVEPOINT if args else SnapshotType.SAVEPOINT
            msg = TriggerCheckpointRequest(request_id=request_id, snapshot_type=kind)
        else:
            if args:
                raise ScenarioError(step.line, "tick takes no argument")
            msg = TriggerCheckpointRequest(request_id=request_id, periodic=True)
        self._send(msg)

    def _advance(self, millis: int) -> None:
        if millis < 0:
            raise ValueError("the clock cannot go back")
        target = self.clock.now() + millis
        while (due := self.timers.pop_due(target)) is not None:
            key, when = due
            self.clock.set(max(when, self.clock.now()))
            self._send(TimerFired(key=key))
        self.clock.set(target)

    def _send(self, msg: CoordinatorMessage) -> None:
        # storage work (in memory) is done at once, as before the scenario's next step
        for effect in handle_with_storage(self.coordinator, msg, self.clock.now()):
            self._observe(effect)

    def _observe(self, effect: Effect) -> None:
        match effect:
            case ScheduleTimer(key=key, due=due):
                self.timers.schedule(key, due)
            case CancelTimer(key=key):
                self.timers.cancel(key)
            case Send(to=TaskId() as task, message=TriggerCheckpoint(checkpoint_id=cid)):
                self.sent.append(f"trigger:{cid}@{task.vertex}")
            case Send(to=TaskId() as task, message=NotifyCheckpointComplete(checkpoint_id=cid)):
                self.sent.append(f"complete:{cid}@{task.vertex}")
            case Send(to=TaskId() as task, message=NotifyCheckpointAborted(checkpoint_id=cid)):
                self.sent.append(f"abort:{cid}@{task.vertex}")
            case DiscardState(handles=handles):
                self.discarded.extend(h.key for h in handles)
            case FailJob():
                self.fail_job += 1
            case RequestCompleted(request_id=int() as rid, checkpoint=checkpoint):
                if rid > 0:
                    self.results[rid] = f"ok {checkpoint.checkpoint_id}"
            case RequestFailed(request_id=int() as rid, reason=reason):
                if rid > 0:
                    self.results[rid] = f"failed {reason.name}"
            case RequestDeclined(request_id=int() as rid, reason=decline):
                if rid > 0:
                    self.results[rid] = f"declined {decline.name}"
            case _:
                pass

    # --- facts ---------------------------------------------------------------------------------

    def check(self, step: Step) -> None:
        name, args = step.name, step.args
        if name == "sent":
            expected = [] if args == ("-",) else sorted(args)
            got, self.sent = sorted(self.sent), []
            compare(expected, got)
        elif name == "pending":
            compare(
                sorted(parse_ints(step, args, "checkpoint id")),
                sorted(self.coordinator.pending_ids),
            )
        elif name == "store":
            got_ids = [c.checkpoint_id for c in self.coordinator.store.checkpoints]
            compare(parse_ints(step, args, "checkpoint id"), got_ids)
        elif name == "result":
            if len(args) < 2 or not args[0].startswith("#"):
                raise ScenarioError(step.line, "result #N ok ID | failed REASON | waiting")
            request_id = parse_int(step, args[0][1:], "request number")
            if request_id not in self.results:
                raise ScenarioError(step.line, f"there is no request #{request_id} yet")
            expected_result = " ".join(args[1:])
            got_result = self.results[request_id]
            if expected_result != got_result:
                raise Mismatch(expected_result, got_result)
        elif name == "discarded":
            expected = [] if args == ("-",) else sorted(args)
            compare(expected, sorted(self.discarded))
        elif name == "failjob":
            compare([parse_int(step, one_value(step), "count")], [self.fail_job])
        elif name == "queued":
            compare([parse_int(step, one_value(step), "count")], [self.coordinator.queued_requests])
        elif name == "timers":
            timeouts = sum(1 for k in self.timers.scheduled() if isinstance(k, CheckpointCanceller))
            compare([parse_int(step, one_value(step), "count")], [timeouts])

    # --- helpers -------------------------------------------------------------------------------

    def _task(self, step: Step, name: str) -> TaskId:
        task = self.tasks.get(name)
        if task is None:
            raise ScenarioError(
                step.line, f"unknown task {name!r}; declared: {', '.join(self.tasks)}"
            )
        return task

    @staticmethod
    def _reason(step: Step, name: str) -> CheckpointFailureReason:
        try:
            return CheckpointFailureReason.parse(name)
        except ValueError as error:
            raise ScenarioError(step.line, str(error)) from None
