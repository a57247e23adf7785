"""The job as the scheduler sees it: the execution plan (task specs and channels), what each
task restores from a checkpoint, the job status state machine, and the result of a run."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from runtime.checkpoint import TaskId
from runtime.config import CheckpointConfig, Configuration
from runtime.coordinator import CheckpointPlanCalculator, CoordinatorConfig
from runtime.descriptors import KEYED, SinkDescriptor, SinkKind, SourceDescriptor
from runtime.failure import TaskFailure
from runtime.graph import ChannelSpec, JobGraph, JobVertex, StreamNode, flink_operator_names
from runtime.partition import Partitioner
from runtime.snapshot import LoadedCheckpoint
from runtime.state import UPPER_BOUND_MAX_PARALLELISM, key_group_range
from runtime.status import ExecutionState, JobStatus
from runtime.task import NetworkSettings, OutputEdge, TaskRestore, TaskSpec
from runtime.task.sinks import ANY_WRITER


class RestoreError(ValueError):
    """A checkpoint or savepoint does not fit the job it should start."""


def restore_plan(
    plan: ExecutionPlan, checkpoint: LoadedCheckpoint, *, ignore_unclaimed: bool = False
) -> dict[TaskId, TaskRestore]:
    """What each task of ``plan`` restores from ``checkpoint``: operator state by operator uid
    (keyed state by key group, so a keyed operator may change its parallelism; broadcast state
    from every former subtask, each new subtask keeping a copy), channel state and the
    finished / ended flags by task. Raises ``RestoreError`` naming what does not fit."""
    job_ops = {
        op.uid: (op, spec.parallelism) for spec in plan.tasks.values() for op in spec.operators
    }
    by_uid: dict[str, dict[int, Any]] = {}
    for task, state in checkpoint.tasks.items():
        for uid, op_state in state.operator_states.items():
            by_uid.setdefault(uid, {})[task.subtask] = op_state
    unclaimed = sorted(set(by_uid) - set(job_ops))
    if unclaimed and not ignore_unclaimed:
        raise RestoreError(
            f"{checkpoint.path} holds state of operator(s) {', '.join(map(repr, unclaimed))}, "
            "which this job does not have: give the operators the uid(...) they had, or set "
            "execution.state-recovery.ignore-unclaimed-state=true (ckptsim run: -n, "
            "--allow-non-restored-state) to start without that state"
        )
    _check_every_operator(plan, checkpoint, ignore_unclaimed=ignore_unclaimed)
    _check_every_subtask(plan, checkpoint)
    _check_every_position(plan, checkpoint)
    _check_final_positions(plan, checkpoint)
    _check_finished_inputs(plan, checkpoint)
    _check_listed_operators(plan, checkpoint, ignore_unclaimed=ignore_unclaimed)
    for uid, states in by_uid.items():
        if uid not in job_ops:
            continue
        op, parallelism = job_ops[uid]
        source = isinstance(op.operator, SourceDescriptor)
        # a source subtask that had finished holds no position: it counts as one that ran
        ran = len(states) + (_finished_subtasks(checkpoint, uid) if source else 0)
        # a sink's state (its pending transactions, its lineage) is Flink's committables:
        # redistributed on a rescale (``_sink_states``)
        sink = isinstance(op.operator, SinkDescriptor)
        redistributed = op.is_keyed or op.has_broadcast_state or sink
        if not redistributed and (len(states) > 1 or source) and ran != parallelism:
            raise RestoreError(
                f"operator {uid!r} ran {ran} subtasks with state in {checkpoint.path} "
                f"and has {parallelism} now: only keyed state can be redistributed; keep its "
                "parallelism"
            )
        if source:
            _check_positions(checkpoint, op, parallelism)
        if isinstance(op.operator, SinkDescriptor):
            _check_sink_states(checkpoint, op)
        if op.is_keyed:
            _check_keyed_states(checkpoint, op, plan.job.max_parallelism)
    # Flink's execution.state-recovery.without-channel-state.checkpoint-id: restore this
    # checkpoint's operator state only, without its in-flight data (records are lost)
    channel_state = checkpoint.checkpoint_id != plan.checkpoint.recover_without_channel_state
    for task, state in checkpoint.tasks.items():
        if not channel_state:
            break
        if (state.input_channels or state.output_channels) and task not in plan.tasks:
            raise RestoreError(
                f"{checkpoint.path} holds in-flight data of task {task}, which this job does not "
                "have: an unaligned checkpoint restores only into the same topology"
            )
    restores: dict[TaskId, TaskRestore] = {}
    for task, spec in plan.tasks.items():
        operator_states: dict[str, list[Any]] = {}
        other_sink_states: dict[str, list[Any]] = {}
        for op in spec.operators:
            saved = by_uid.get(op.uid)
            if not saved:
                continue
            if isinstance(op.operator, SinkDescriptor):
                mine, others = _sink_states(saved, task.subtask, spec.parallelism)
                others += _finished_sink_output(checkpoint, op.uid, spec.parallelism, task.vertex)
                if mine:
                    operator_states[op.uid] = mine
                if others and task not in checkpoint.finished_tasks:
                    other_sink_states[op.uid] = others
            elif (op.is_keyed or op.has_broadcast_state) and len(saved) != spec.parallelism:
                operator_states[op.uid] = [saved[i] for i in sorted(saved)]
            elif task.subtask in saved:
                operator_states[op.uid] = [saved[task.subtask]]
        old = checkpoint.tasks.get(task)
        restores[task] = TaskRestore(
            checkpoint_id=checkpoint.checkpoint_id,
            operator_states=operator_states,
            other_sink_states=other_sink_states,
            input_channels=old.input_channels if old and channel_state else {},
            output_channels=old.output_channels if old and channel_state else {},
            ended_input=old.ended_input if old else False,
            finished=task in checkpoint.finished_tasks,
        )
    return restores


def adopt_restored_max_parallelism(job: JobGraph, checkpoint: LoadedCheckpoint) -> bool:
    """Flink's rule on restore: a job whose max parallelism the user did not set takes the one
    its restored keyed state was written with (so a resume at another parallelism, whose
    derived default differs, keeps its key groups). Returns whether ``job`` changed; raises
    ``RestoreError`` when that max parallelism is below a vertex's parallelism. A set max
    parallelism that differs is refused by ``restore_plan``, naming the state file."""
    if job.max_parallelism_configured:
        return False
    keyed = {op.uid for v in job.vertices for op in v.operators if op.is_keyed}
    written = [
        saved.get("max_parallelism")
        for state in checkpoint.tasks.values()
        for uid, saved in state.operator_states.items()
        if uid in keyed and isinstance(saved, dict)
    ]
    whole = [v for v in written if isinstance(v, int) and not isinstance(v, bool)]
    if not whole or len(whole) != len(written) or len(set(whole)) != 1:
        return False  # none, or values that disagree or are no number: restore_plan names them
    value = whole[0]
    if value == job.max_parallelism or not 0 < value <= UPPER_BOUND_MAX_PARALLELISM:
        return False
    for vertex in job.vertices:
        if vertex.parallelism > value:
            raise RestoreError(
                f"The state for task {vertex.vertex_id} can not be restored. The maximum "
                f"parallelism ({value}) of the restored state is lower than the configured "
                f"parallelism ({vertex.parallelism}). Please reduce the parallelism of the task "
                "to be lower or equal to the maximum parallelism."
            )
    job.max_parallelism = value
    return True


def _sink_states(
    saved: dict[int, Any], subtask: int, parallelism: int
) -> tuple[list[Any], list[Any]]:
    """A sink subtask's share of its sink's states (``saved`` by former subtask), as Flink
    redistributes committables on a rescale: former subtask ``j``'s goes to ``j mod
    parallelism`` (each to the same index when the parallelism stays or grows; a subtask new
    after a rescale restores none). Returns its own and the others (which a file sink's
    restore keeps committed as well: ``runtime.task.sinks.output_lineage``)."""
    mine = [saved[j] for j in sorted(saved) if j % parallelism == subtask]
    others = [saved[j] for j in sorted(saved) if j % parallelism != subtask]
    return mine, others


def _finished_sink_output(
    checkpoint: LoadedCheckpoint, uid: str, parallelism: int, vertex: str
) -> list[Any]:
    """When former subtasks of sink ``uid`` had finished before the checkpoint (they hold no
    state in it, so their lineage is not known) and a subtask of the sink's task ``vertex``
    now runs in their place (a rescale, or a re-chaining that renamed the task, so it is not
    restored finished): a state that keeps any writer's part files up to the checkpoint
    committed (the rule for a finished subtask's files, ``runtime.task.sinks.
    restored_lineage``), since a running subtask's share holds them now. Nothing when each
    finished subtask is restored finished again (the same task, the same parallelism)."""
    vertices = {t.vertex for t, s in checkpoint.tasks.items() if uid in s.operator_states}
    ran = [t for t in checkpoint.tasks if t.vertex in vertices]
    finished = [t for t in checkpoint.finished_tasks if t.vertex in vertices]
    if not finished:
        return []
    again = all(TaskId(vertex, t.subtask) in checkpoint.finished_tasks for t in finished)
    if again and len(ran) + len(finished) == parallelism:
        return []
    return [{"pending": [], "lineage": [[ANY_WRITER, checkpoint.checkpoint_id]]}]


def _state_file(checkpoint: LoadedCheckpoint, task: TaskId) -> str:
    state = checkpoint.tasks.get(task)
    return state.files[0] if state is not None and state.files else checkpoint.path


def _finished_subtasks(checkpoint: LoadedCheckpoint, uid: str) -> int:
    """The finished subtasks of the vertex whose tasks hold ``uid``'s state."""
    vertices = {t.vertex for t, s in checkpoint.tasks.items() if uid in s.operator_states}
    return sum(1 for t in checkpoint.finished_tasks if t.vertex in vertices)


def _check_every_operator(
    plan: ExecutionPlan, checkpoint: LoadedCheckpoint, *, ignore_unclaimed: bool
) -> None:
    """Every operator of the job is in the checkpoint (its state files name the operators
    their tasks ran), but for vertices that had finished: a checkpoint stripped of tasks
    would start them from scratch and repeat what they had done. ``ignore_unclaimed``: the
    job may have operators the checkpoint does not know (they start without state). A
    checkpoint whose state files do not name their operators is not checked."""
    known = checkpoint.all_operator_uids
    if ignore_unclaimed or known is None:
        return
    running = {t.vertex for t in checkpoint.tasks}
    done = {t.vertex for t in checkpoint.finished_tasks} - running
    missing = {
        op.uid: op.name
        for task, spec in plan.tasks.items()
        if task.vertex not in done
        for op in spec.operators
        if op.uid not in known
    }
    if missing:
        shown = ", ".join(f"{name!r} ({uid})" for uid, name in sorted(missing.items())[:5])
        raise RestoreError(
            f"{checkpoint.path}/_metadata: field 'tasks' holds no task that ran operator(s) "
            f"{shown} of this job, so they would start from scratch and repeat their output: "
            "a checkpoint holds every operator of its job. Give a checkpoint of this job; if "
            "the job has new operators, set execution.state-recovery.ignore-unclaimed-state="
            "true (ckptsim run: -n, --allow-non-restored-state) to start them without state"
        )


def _check_every_subtask(plan: ExecutionPlan, checkpoint: LoadedCheckpoint) -> None:
    """Each vertex of the job lists its subtasks 0 to n - 1 in the checkpoint, running or
    finished: a subtask missing from it would start from scratch."""
    vertices = {t.vertex for t in plan.tasks}
    subtasks: dict[str, set[int]] = {}
    for task in [*checkpoint.tasks, *checkpoint.finished_tasks]:
        if task.vertex in vertices:
            subtasks.setdefault(task.vertex, set()).add(task.subtask)
    for vertex, listed in sorted(subtasks.items()):
        missing = sorted(set(range(max(listed) + 1)) - listed)
        if missing:
            shown = ", ".join(f"{vertex}#{m}" for m in missing[:5])
            raise RestoreError(
                f"{checkpoint.path}/_metadata: fields 'tasks'/'finished_tasks' list subtasks "
                f"of {vertex} up to {vertex}#{max(listed)} but not {shown}, which would start "
                "from scratch: a checkpoint holds every subtask of its job"
            )


def _check_every_position(plan: ExecutionPlan, checkpoint: LoadedCheckpoint) -> None:
    """A task that ran a source of the job (its state file says so) holds its position."""
    sources = {
        op.uid: op.name
        for spec in plan.tasks.values()
        for op in spec.operators
        if isinstance(op.operator, SourceDescriptor)
    }
    for task, state in sorted(
        checkpoint.tasks.items(), key=lambda kv: (kv[0].vertex, kv[0].subtask)
    ):
        for uid in sorted((state.operators or frozenset()) & sources.keys()):
            if uid not in state.operator_states and task not in checkpoint.finished_tasks:
                raise RestoreError(
                    f"{_state_file(checkpoint, task)}: field 'operator_states' holds no "
                    f"position of source {sources[uid]!r} ({uid}), which task {task} ran: it "
                    "would read its records again from the start"
                )


#: the metadata's format version from which finished subtasks record their final positions
_FINAL_POSITIONS_SINCE = 3


def _check_final_positions(plan: ExecutionPlan, checkpoint: LoadedCheckpoint) -> None:
    """A subtask the checkpoint lists as finished that runs a source of the job holds the
    source's final position, and it is the end of what the subtask reads: a running subtask
    listed as finished would not read the rest of its input again (it would be lost)."""
    sources: dict[str, list[StreamNode]] = {}
    for task, spec in plan.tasks.items():
        for op in spec.operators:
            if isinstance(op.operator, SourceDescriptor):
                sources.setdefault(task.vertex, [])
                if op not in sources[task.vertex]:
                    sources[task.vertex].append(op)
    checked = checkpoint.format_version >= _FINAL_POSITIONS_SINCE
    where = f"{checkpoint.path}/_metadata: field 'final_positions'"
    for task in sorted(checkpoint.finished_tasks, key=lambda t: (t.vertex, t.subtask)):
        positions = checkpoint.final_positions.get(task, {})
        runs = {op.uid for op in sources.get(task.vertex, [])}
        other = sorted(set(positions) - runs)
        if other:
            raise RestoreError(
                f"{where} gives {task} a final position of {other[0]!r}, which is not a "
                "source that subtask runs"
            )
        ran = sum(
            1 for t in [*checkpoint.tasks, *checkpoint.finished_tasks] if t.vertex == task.vertex
        )
        for op in sources.get(task.vertex, []):
            if op.uid not in positions:
                # (an older format recorded none: its claim cannot be checked, so it is not
                # taken on trust either, or a forger would only need to lower the version)
                older = (
                    ""
                    if checked
                    else f" (format version {checkpoint.format_version} recorded none: restore "
                    "a checkpoint taken before the source finished, or one this ckptsim wrote)"
                )
                raise RestoreError(
                    f"{where} holds no final position of source {op.name!r} ({op.uid}) for "
                    f"{task}, which field 'finished_tasks' lists as finished: a source subtask "
                    "finishes only after reading all of its input, and one listed as finished "
                    f"is not restarted (the rest of its input would be lost){older}"
                )
            position = positions[op.uid]
            odd = _not_whole(position)
            if odd is not None:
                raise RestoreError(
                    f"{where} of {task} holds {odd}: a source's position is made of whole numbers"
                )
            descriptor = op.operator
            assert isinstance(descriptor, SourceDescriptor)
            try:
                if descriptor.check_final is not None:
                    descriptor.check_final(position, task.subtask, ran)
                elif descriptor.check_position is not None:
                    descriptor.check_position(position, task.subtask, ran)
            except (ValueError, TypeError, KeyError) as error:
                text = str(error).removeprefix("field ")
                raise RestoreError(
                    f"{where} of {task} for {op.name!r}: {text}, but field 'finished_tasks' "
                    "lists it as finished (the rest of its input would be lost)"
                ) from None


def _check_finished_inputs(plan: ExecutionPlan, checkpoint: LoadedCheckpoint) -> None:
    """A subtask listed as finished had every input end: no subtask feeding it is listed as
    running (restored as finished, it would never read what they send again)."""
    finished = checkpoint.finished_tasks
    for channel in plan.channels:
        if channel.downstream in finished and channel.upstream in checkpoint.tasks:
            raise RestoreError(
                f"{checkpoint.path}/_metadata: field 'finished_tasks' lists "
                f"{channel.downstream}, but field 'tasks' lists its input {channel.upstream} "
                "as running: a subtask finishes only after every one of its inputs ended"
            )


def _check_listed_operators(
    plan: ExecutionPlan, checkpoint: LoadedCheckpoint, *, ignore_unclaimed: bool
) -> None:
    """Each running subtask holds the state of every keyed operator (or one with broadcast
    state) of its task that its vertex's other subtasks hold state of, or that its state file
    says it ran: such an operator snapshots its state every time, empty or not, so a subtask
    without it would start it empty. A state file that names its operators names every
    operator its task runs in this job (one missing would start from scratch). A state file
    that names none (written before they did, or the Spark bridge's carried state, which
    keeps keyed state only) is not checked for the names."""
    held: dict[str, set[str]] = {}  # vertex -> uids some subtask of it holds state of
    for task, state in checkpoint.tasks.items():
        held.setdefault(task.vertex, set()).update(state.operator_states)
    for task, state in sorted(
        checkpoint.tasks.items(), key=lambda kv: (kv[0].vertex, kv[0].subtask)
    ):
        spec = plan.tasks.get(task)
        if spec is None:
            continue
        ran = state.operators if state.operators is not None else held.get(task.vertex, set())
        for op in spec.operators:
            if (
                (op.is_keyed or op.has_broadcast_state)
                and (op.uid in ran or op.uid in held.get(task.vertex, set()))
                and op.uid not in state.operator_states
            ):
                raise RestoreError(
                    f"{_state_file(checkpoint, task)}: field 'operator_states' holds no state "
                    f"of {op.name!r} ({op.uid}), which task {task} ran (its other subtasks, or "
                    "its field 'operators', say so): its keyed state would start empty"
                )
        if state.operators is None or ignore_unclaimed:
            continue
        # an operator another vertex ran (the chaining changed: a rescale, a chain broken or
        # made) restores its state there, not from scratch
        elsewhere = {
            uid
            for other, held_state in checkpoint.tasks.items()
            if other.vertex != task.vertex
            for uid in held_state.operators or ()
        }
        missing = [
            op for op in spec.operators if op.uid not in state.operators and op.uid not in elsewhere
        ]
        if missing:
            shown = ", ".join(f"{op.name!r} ({op.uid})" for op in missing[:5])
            raise RestoreError(
                f"{_state_file(checkpoint, task)}: field 'operators' does not name {shown}, "
                f"which task {task} runs: it would start from scratch and repeat its output. "
                "Give a checkpoint of this job; if the job has new operators, set "
                "execution.state-recovery.ignore-unclaimed-state=true (ckptsim run: -n, "
                "--allow-non-restored-state) to start them without state"
            )


def _check_positions(checkpoint: LoadedCheckpoint, op: StreamNode, parallelism: int) -> None:
    """Each restored position of source ``op``: whole numbers only (no NaN, no fraction),
    and one its subtask can reach (``SourceDescriptor.check_position``)."""
    descriptor = op.operator
    assert isinstance(descriptor, SourceDescriptor)
    for task, state in sorted(
        checkpoint.tasks.items(), key=lambda kv: (kv[0].vertex, kv[0].subtask)
    ):
        if op.uid not in state.operator_states:
            continue
        where = f"{_state_file(checkpoint, task)}: field 'operator_states[{op.uid!r}]"
        saved = state.operator_states[op.uid]
        if not isinstance(saved, dict) or "position" not in saved:
            raise RestoreError(
                f"{where}' must be {{'position': ...}} (a source's position), got {_brief(saved)}"
            )
        position = saved["position"]
        odd = _not_whole(position)
        if odd is not None:
            raise RestoreError(
                f"{where}.position' holds {odd}: a source's position is made of whole numbers"
            )
        if descriptor.check_position is None:
            continue
        try:
            descriptor.check_position(position, task.subtask, parallelism)
        except (ValueError, TypeError, KeyError) as error:
            text = str(error).removeprefix("field ")
            raise RestoreError(
                f"{where}.position' of {op.name!r}: {text}: the source cannot be there"
            ) from None


def _check_sink_states(checkpoint: LoadedCheckpoint, op: StreamNode) -> None:
    """Each restored state of sink ``op`` (``runtime.task.sinks``): its pending transactions
    are checkpoint ids up to the restored one, its lineage ``[writer, up_to]`` pairs with such
    ids (a crafted one committed another checkpoint's files, or took files out of the output
    that the checkpoint stands for)."""
    assert isinstance(op.operator, SinkDescriptor)
    collect = op.operator.sink is SinkKind.COLLECT
    cid = checkpoint.checkpoint_id
    for task, state in sorted(
        checkpoint.tasks.items(), key=lambda kv: (kv[0].vertex, kv[0].subtask)
    ):
        if op.uid not in state.operator_states:
            continue
        saved = state.operator_states[op.uid]
        where = f"{_state_file(checkpoint, task)}: field 'operator_states[{op.uid!r}]"
        if saved is None:
            continue
        if not isinstance(saved, dict):
            raise RestoreError(f"{where}' must be an object (a sink's state), got {_brief(saved)}")
        pending = saved.get("pending", [])
        if not isinstance(pending, list):
            raise RestoreError(f"{where}.pending' must be a list, got {_brief(pending)}")
        for i, entry in enumerate(pending):
            txn = entry
            if collect and saved.get("writer") is None and isinstance(entry, list) and entry:
                txn = entry[0]  # an older checkpoint: [id, records]
            if not _is_id(txn, cid):
                raise RestoreError(
                    f"{where}.pending[{i}]' is {_brief(txn)}: a pending transaction is the id "
                    f"of a checkpoint up to this one ({cid})"
                )
        if collect:
            writer = saved.get("writer")
            if writer is not None and not isinstance(writer, str):
                raise RestoreError(f"{where}.writer' must be a string, got {_brief(writer)}")
            continue
        folder = saved.get("folder")
        if folder is not None and (not isinstance(folder, str) or not folder.strip()):
            raise RestoreError(
                f"{where}.folder' must be the folder the sink wrote (a path), got {_brief(folder)}"
            )
        lineage = saved.get("lineage")
        if lineage is None:
            continue
        if not isinstance(lineage, list):
            raise RestoreError(f"{where}.lineage' must be a list, got {_brief(lineage)}")
        for i, entry in enumerate(lineage):
            if (
                not isinstance(entry, list)
                or len(entry) != 2
                or not isinstance(entry[0], str)
                or not _WRITER.fullmatch(entry[0])
                or not _is_id(entry[1], cid)
            ):
                raise RestoreError(
                    f"{where}.lineage[{i}]' is {_brief(entry)}: a lineage entry is [writer "
                    f"id, the id of a checkpoint up to this one ({cid})]"
                )
        newest = max((p for p in pending if type(p) is int), default=None)
        if newest is not None and (not lineage or lineage[-1][1] < newest):
            last = _brief(lineage[-1]) if lineage else "nothing"
            raise RestoreError(
                f"{where}.lineage' ends with {last}, but its field 'pending' holds {newest}: "
                "the last entry is the writer that took the snapshot, up to its newest "
                "pending transaction"
            )


#: the kinds of keyed state (``runtime.state``)
_STATE_KINDS = frozenset({"value", "list", "map", "reducing", "aggregating"})


def _check_keyed_states(checkpoint: LoadedCheckpoint, op: StreamNode, max_parallelism: int) -> None:
    """Each restored keyed state of ``op``: written with the job's max parallelism (as Flink
    requires), each state of a known kind, its key groups whole numbers of the range of the
    subtask that wrote them, its keys and values side by side. A crafted key group outside
    that range dropped its keys' state (wrong results); the others crashed the task."""
    for task, state in sorted(
        checkpoint.tasks.items(), key=lambda kv: (kv[0].vertex, kv[0].subtask)
    ):
        saved = state.operator_states.get(op.uid)
        if not saved:
            continue
        where = f"{_state_file(checkpoint, task)}: field 'operator_states[{op.uid!r}]"
        if not isinstance(saved, dict):
            raise RestoreError(f"{where}' must be an object (keyed state), got {_brief(saved)}")
        written = saved.get("max_parallelism", max_parallelism)
        if written != max_parallelism or isinstance(written, bool):
            raise RestoreError(
                f"{where}.max_parallelism' is {_brief(written)}, but the job's max parallelism "
                f"is {max_parallelism}: keyed state is restored only with the max parallelism "
                "it was written with (set it with env.set_max_parallelism or -D pipeline.max-parallelism)"
            )
        ran = sum(
            1 for t in [*checkpoint.tasks, *checkpoint.finished_tasks] if t.vertex == task.vertex
        )
        groups = (
            key_group_range(task.subtask, ran, max_parallelism) if task.subtask < ran else range(0)
        )
        states = saved.get("states", {})
        if not isinstance(states, dict):
            raise RestoreError(f"{where}.states' must be an object, got {_brief(states)}")
        for name, table in states.items():
            at = f"{where}.states[{name!r}]"
            if not isinstance(table, dict) or table.get("kind", "value") not in _STATE_KINDS:
                kind = table.get("kind") if isinstance(table, dict) else table
                raise RestoreError(
                    f"{at}.kind' is {_brief(kind)}: a keyed state is one of "
                    f"{', '.join(sorted(_STATE_KINDS))}"
                )
            key_groups = table.get("key_groups")
            if not isinstance(key_groups, dict):
                raise RestoreError(f"{at}.key_groups' must be an object, got {_brief(key_groups)}")
            for group, columns in key_groups.items():
                number = int(group) if isinstance(group, str) and group.isdigit() else None
                if number is None or number not in groups:
                    raise RestoreError(
                        f"{at}.key_groups[{group!r}]': subtask {task.subtask} of {ran} holds key "
                        f"groups {groups.start} to {groups.stop - 1} of {max_parallelism}, so "
                        "its keys' state would be lost"
                    )
                if (
                    not isinstance(columns, dict)
                    or not isinstance(columns.get("keys"), list)
                    or not isinstance(columns.get("values"), list)
                    or len(columns["keys"]) != len(columns["values"])
                ):
                    raise RestoreError(
                        f"{at}.key_groups[{group!r}]' must hold lists 'keys' and 'values' of "
                        "one length"
                    )


#: a writer id in a sink's lineage: a UUID, or ``*`` (any writer)
_WRITER = re.compile(r"\*|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _is_id(value: Any, up_to: int) -> bool:
    """``value`` is a checkpoint id from 1 to ``up_to``."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= up_to


def _not_whole(value: Any) -> str | None:
    """The first number in ``value`` that is not a whole one (a float, NaN, infinity, a
    boolean), shown; None if there is none."""
    if isinstance(value, bool | float):
        return repr(value)
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        return None
    for item in items:
        odd = _not_whole(item)
        if odd is not None:
            return odd
    return None


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class IllegalJobTransition(RuntimeError):
    pass


#: Flink's legal job status transitions (those ckptsim uses)
TRANSITIONS: dict[JobStatus, set[JobStatus]] = {
    JobStatus.CREATED: {
        JobStatus.RUNNING,
        JobStatus.FAILING,
        JobStatus.CANCELLING,
        JobStatus.SUSPENDED,
        JobStatus.FAILED,
    },
    JobStatus.RUNNING: {
        JobStatus.FAILING,
        JobStatus.CANCELLING,
        JobStatus.FINISHED,
        JobStatus.RESTARTING,
        JobStatus.SUSPENDED,
    },
    JobStatus.FAILING: {JobStatus.FAILED, JobStatus.RESTARTING, JobStatus.CANCELLING},
    JobStatus.RESTARTING: {
        JobStatus.RUNNING,
        JobStatus.FAILED,
        JobStatus.CANCELLING,
        JobStatus.SUSPENDED,
    },
    JobStatus.CANCELLING: {JobStatus.CANCELED},
    JobStatus.FAILED: set(),
    JobStatus.CANCELED: set(),
    JobStatus.FINISHED: set(),
    JobStatus.SUSPENDED: set(),
}


class JobStatusMachine:
    """The job status with Flink's transitions, and its history."""

    def __init__(self) -> None:
        self.status = JobStatus.CREATED
        self.history: list[tuple[JobStatus, int]] = [(JobStatus.CREATED, 0)]

    def transition(self, new: JobStatus, now: int) -> None:
        if new not in TRANSITIONS[self.status]:
            raise IllegalJobTransition(f"job cannot go from {self.status.value} to {new.value}")
        self.status = new
        self.history.append((new, now))


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionPlan:
    """What to deploy: one task per subtask, one channel per connected pair of subtasks."""

    job: JobGraph
    checkpoint: CheckpointConfig
    tasks: dict[TaskId, TaskSpec]
    channels: list[ChannelSpec]
    buffer_records: int
    channel_credits: int

    def coordinator_config(self, *, seed: int) -> CoordinatorConfig:
        c = self.checkpoint
        return CoordinatorConfig(
            interval=c.interval,
            timeout=c.timeout,
            min_pause=c.min_pause,
            max_concurrent=c.max_concurrent,
            tolerable_failures=c.tolerable_failures,
            num_retained=c.num_retained,
            exactly_once=c.exactly_once,
            unaligned=c.unaligned,
            aligned_checkpoint_timeout=c.aligned_checkpoint_timeout,
            retention=c.externalized_retention,
            history_size=c.history_size,
            trigger_semantics=c.trigger_semantics,
        )

    def plan_calculator(self) -> CheckpointPlanCalculator:
        tasks = list(self.tasks)
        return CheckpointPlanCalculator(
            trigger=self.job.source_tasks(),
            ack=tasks,
            commit=tasks,
            predecessors=self.job.predecessors(),
            allow_checkpoints_after_tasks_finish=self.checkpoint.checkpoints_after_tasks_finish,
        )


def plan_execution(
    job: JobGraph,
    conf: Configuration,
    *,
    attempt: int = 0,
    restore: dict[TaskId, TaskRestore] | None = None,
) -> ExecutionPlan:
    checkpoint = CheckpointConfig.from_configuration(conf)
    buffer_records: int = conf["ckptsim.buffer.records"]
    exclusive: int = conf["taskmanager.network.memory.buffers-per-channel"]
    floating: int = conf["taskmanager.network.memory.floating-buffers-per-gate"]
    max_per_channel: int = conf["taskmanager.network.memory.max-buffers-per-channel"]
    segment_size: int = conf["taskmanager.memory.segment-size"]
    flush_interval: int | None = (
        conf["execution.buffer-timeout.interval"]
        if conf["execution.buffer-timeout.enabled"]
        else None
    )
    auto_watermark_interval: int = conf["pipeline.auto-watermark-interval"]
    alignment_buffer_size: int = conf["pipeline.watermark-alignment.buffer-size"]
    batch = conf["execution.runtime-mode"] == "BATCH"
    job_parameters = tuple(sorted((conf["pipeline.global-job-parameters"] or {}).items()))
    channels = job.channels()
    num_inputs: dict[TaskId, int] = {}
    input_of_channel: dict[TaskId, dict[int, int]] = {}
    for channel in channels:
        num_inputs[channel.downstream] = num_inputs.get(channel.downstream, 0) + 1
        input_of_channel.setdefault(channel.downstream, {})[channel.input_index] = job.edges[
            channel.edge
        ].input_index
    tasks: dict[TaskId, TaskSpec] = {}
    for vertex in job.vertices:
        inputs = job.inputs(vertex)
        head = vertex.operators[0].operator
        head_key = head.key_selector if isinstance(head, KEYED) else None
        keyed_input = bool(inputs) and all(
            e.partitioner is Partitioner.HASH and e.key_selector is head_key for e in inputs
        )
        outputs = tuple(
            OutputEdge(
                partitioner=edge.partitioner,
                num_channels=1 if not edge.partitioner.all_to_all else edge.target.parallelism,
                key_selector=edge.key_selector,
                target=edge.target.operators[0].uid,
                side_output=edge.side_output,
            )
            for edge in job.outputs(vertex)
        )
        # credits of a channel: its exclusive buffers and its share of the gate's floating ones
        downstream = [
            e.target.parallelism if e.partitioner.all_to_all else 1 for e in job.outputs(vertex)
        ]
        credits = exclusive + (
            floating // max(downstream_gate_size(job, vertex), 1) if downstream else 0
        )
        # the result partition's pool, as Flink sizes it
        subpartitions = sum(downstream)
        network = NetworkSettings(
            segment_size=segment_size,
            max_records=buffer_records,
            flush_interval=flush_interval,
            pool_size=max(subpartitions * exclusive + floating, subpartitions + 1),
            max_buffers_per_channel=max_per_channel,
            initial_credits=credits,
        )
        for subtask in range(vertex.parallelism):
            task = TaskId(vertex.vertex_id, subtask)
            tasks[task] = TaskSpec(
                task=task,
                name=" -> ".join(flink_operator_names(vertex)),
                operators=vertex.operators,
                parallelism=vertex.parallelism,
                max_parallelism=job.max_parallelism,
                num_inputs=num_inputs.get(task, 0),
                outputs=outputs,
                gate_mode=checkpoint.gate_mode,
                checkpoints_after_tasks_finish=checkpoint.checkpoints_after_tasks_finish,
                max_buffered_bytes=checkpoint.alignment_max_size,
                checkpointing=checkpoint.is_checkpointing_enabled,
                final_checkpoint=checkpoint.is_checkpointing_enabled
                and checkpoint.checkpoints_after_tasks_finish,
                network=network,
                keyed_input=keyed_input,
                attempt=attempt,
                restore=(restore or {}).get(task),
                auto_watermark_interval=auto_watermark_interval,
                alignment_buffer_size=alignment_buffer_size,
                input_pool_size=num_inputs.get(task, 0) * exclusive + floating
                if num_inputs.get(task, 0)
                else 0,
                batch=batch,
                job_parameters=job_parameters,
                channel_inputs=tuple(
                    index for _, index in sorted(input_of_channel.get(task, {}).items())
                ),
            )
    return ExecutionPlan(
        job=job,
        checkpoint=checkpoint,
        tasks=tasks,
        channels=channels,
        buffer_records=buffer_records,
        channel_credits=exclusive,
    )


def downstream_gate_size(job: JobGraph, vertex: JobVertex) -> int:
    """Channels in the input gate of the tasks ``vertex`` feeds (the largest, if several)."""
    sizes = [
        sum(
            e.source.parallelism if e.partitioner.all_to_all else 1 for e in job.inputs(edge.target)
        )
        for edge in job.outputs(vertex)
    ]
    return max(sizes, default=1)


@dataclass(slots=True)
class TaskStates:
    """The execution state of every task (the JobMaster's view)."""

    states: dict[TaskId, ExecutionState] = field(default_factory=dict)

    def set(self, task: TaskId, state: ExecutionState) -> None:
        self.states[task] = state

    def all_in(self, *states: ExecutionState) -> bool:
        return all(s in states for s in self.states.values())

    def count(self, state: ExecutionState) -> int:
        return sum(1 for s in self.states.values() if s is state)


@dataclass(slots=True, kw_only=True)
class JobResult:
    """What ``execute`` returns: final status, sink output, checkpoint statistics.

    - ``status``: the final ``JobStatus`` (``succeeded``: FINISHED); ``failure``, ``failures``,
      ``failure_causes``, ``root_cause`` and ``restarts``: what went wrong, and how often the
      job restarted;
    - ``output``: the records each collect sink committed, by sink name (``collected(name)``);
    - ``checkpoints``: the checkpoint statistics, the body of Flink's REST call
      ``GET /jobs/:jobid/checkpoints``: ``counts`` (``completed``, ``failed``,
      ``in_progress``, ``restored``, ``total``), ``summary`` (``end_to_end_duration``,
      ``state_size``, ``checkpointed_size``, ``persisted_data``, ``processed_data``,
      ``alignment_buffered``, each with ``min``/``max``/``avg`` and percentiles), ``latest``
      (the latest ``completed``, ``savepoint``, ``failed`` and ``restored``) and ``history``
      (the last ``web.checkpoints.history`` checkpoints, newest first); timestamps are on the
      job clock (add ``epoch_ms``), durations in ms (virtual ms when ``virtual_time``);
    - ``checkpoint_details``: each checkpoint's details with its ``subtasks``, by id;
      ``completed_checkpoint_ids``; ``checkpoint_types``;
    - ``savepoints`` and ``retained_checkpoints``: paths that outlive the job (what
      ``--from-savepoint`` / ``--from-checkpoint`` take);
    - ``task_metrics``: each task's records and bytes in and out, back-pressured, idle and
      busy time, by task name; ``duration_ms``, ``status_history``, ``job_id``, ``name``.
    """

    job_id: str
    name: str
    status: JobStatus
    output: dict[str, list[Any]] = field(default_factory=dict)
    checkpoints: dict[str, Any] = field(default_factory=dict)
    checkpoint_details: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: checkpoint id -> its type as triggered (``UNALIGNED_CHECKPOINT`` for an unaligned one
    #: that failed before any acknowledgement, which Flink's REST statistics type
    #: ``CHECKPOINT``)
    checkpoint_types: dict[int, str] = field(default_factory=dict)
    completed_checkpoint_ids: list[int] = field(default_factory=list)
    #: checkpoint directories that outlive the job (externalized retention)
    retained_checkpoints: list[str] = field(default_factory=list)
    failure: str | None = None
    duration_ms: int = 0
    checkpoint_dir: str | None = None
    status_history: list[tuple[str, int]] = field(default_factory=list)
    #: restarts after failures (Flink's numRestarts); what went wrong, in order: the cause of
    #: each restart (and of the final failure) and each failed savepoint
    restarts: int = 0
    failures: list[str] = field(default_factory=list)
    #: the failure in user code behind each entry of ``failures`` (same order; None where the
    #: cause was not user code: an injected fault, a checkpoint verdict, a failed savepoint):
    #: the failing operator, its task and the user's traceback
    failure_causes: list[TaskFailure | None] = field(default_factory=list)
    #: the paths of the savepoints taken (a failed one is not listed; its reason is in
    #: ``failures``)
    savepoints: list[str] = field(default_factory=list)
    #: each task's IO metrics when it ended (``runtime.metrics.TaskIOMetrics.snapshot``)
    task_metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: epoch milliseconds at the job clock's 0 (timestamps above are on the job clock)
    epoch_ms: int = 0
    #: the job clock was the simulation's virtual one (durations are virtual milliseconds)
    virtual_time: bool = False
    #: the program itself cancelled the job once it had what it needed (PyFlink's
    #: ``execute_and_collect(limit=n)``, as Flink's client does): a CANCELED job that is no
    #: failure of the run
    cancelled_by_program: bool = False

    @property
    def root_cause(self) -> TaskFailure | None:
        """The user-code failure behind the latest failure, if that was one (Flink's root
        exception): what failed the job, or caused its latest restart."""
        if self.failure_causes and self.failures:
            return self.failure_causes[-1]
        return None

    @property
    def succeeded(self) -> bool:
        """The job FINISHED."""
        return self.status is JobStatus.FINISHED

    def collected(self, sink: str = "collect") -> list[Any]:
        """The records the collect sink named ``sink`` committed (``output[sink]``); a
        ``KeyError`` names the sinks there are."""
        try:
            return self.output[sink]
        except KeyError:
            known = ", ".join(sorted(self.output)) or "none"
            raise KeyError(f"no collect sink named {sink!r}; sinks: {known}") from None
