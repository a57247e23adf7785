"""``CheckpointRequestDecider``: which queued checkpoint request runs next (Flink 1.11+).

Requests wait in a priority queue (savepoints first, then forced, then user-submitted before
periodic, then older first). A request runs when fewer than ``max_concurrent`` checkpoints are
pending (forced requests bypass the limit), and a periodic, non-forced one only once the min
pause since the last completion has passed; otherwise it is failed with
``MINIMUM_TIME_BETWEEN_CHECKPOINTS`` and the periodic trigger is rescheduled.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from runtime.checkpoint import CheckpointProperties
from runtime.messages import CheckpointRequestId, RequestId, SavepointRequestId
from runtime.reasons import CheckpointFailureReason

DEFAULT_MAX_QUEUED_REQUESTS = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointTriggerRequest:
    request_id: RequestId
    props: CheckpointProperties
    periodic: bool
    timestamp: int
    target_location: str | None = None
    drain: bool = False

    @property
    def forced(self) -> bool:
        return self.props.forced

    def sort_key(self) -> tuple[int, int, int, int, tuple[int, int]]:
        return (
            0 if self.props.is_savepoint else 1,
            0 if self.forced else 1,
            1 if self.periodic else 0,
            self.timestamp,
            _id_order(self.request_id),
        )


def _id_order(request_id: RequestId) -> tuple[int, int]:
    """The last tie-break: int ids in their order, then the scheduler's savepoints, then its
    checkpoints asked for from outside (each in the order they were asked for)."""
    match request_id:
        case int():
            return (0, request_id)
        case SavepointRequestId(index=index):
            return (1, index)
        case CheckpointRequestId(number=number):
            return (2, number)


@dataclass(slots=True)
class Decision:
    """What the coordinator must do: run a request, fail some, reschedule the periodic trigger."""

    execute: CheckpointTriggerRequest | None = None
    failed: list[tuple[CheckpointTriggerRequest, CheckpointFailureReason]] = field(
        default_factory=list
    )
    reschedule_in: int | None = None


class CheckpointRequestDecider:
    def __init__(
        self,
        *,
        max_concurrent: int,
        min_pause: int,
        max_queued: int = DEFAULT_MAX_QUEUED_REQUESTS,
    ) -> None:
        if max_concurrent < 1 or max_queued < 1:
            raise ValueError("max_concurrent and max_queued must be >= 1")
        self.max_concurrent = max_concurrent
        self.min_pause = min_pause
        self.max_queued = max_queued
        self._queue: list[
            tuple[tuple[int, int, int, int, tuple[int, int]], CheckpointTriggerRequest]
        ] = []

    @property
    def queued(self) -> list[CheckpointTriggerRequest]:
        return [r for _, r in self._queue]

    def __len__(self) -> int:
        return len(self._queue)

    def submit(
        self,
        request: CheckpointTriggerRequest,
        *,
        is_triggering: bool,
        pending: int,
        last_completion: int | None,
        now: int,
    ) -> Decision:
        """A new request arrives; decide what runs."""
        decision = Decision()
        if len(self._queue) >= self.max_queued and not self._queue[-1][1].periodic:
            # only user-submitted requests are queued: keep them, drop the new one
            decision.failed.append((request, CheckpointFailureReason.TOO_MANY_CHECKPOINT_REQUESTS))
            return decision
        bisect.insort(self._queue, (request.sort_key(), request))
        if len(self._queue) > self.max_queued:
            _, dropped = self._queue.pop()
            decision.failed.append((dropped, CheckpointFailureReason.TOO_MANY_CHECKPOINT_REQUESTS))
        self._choose(decision, is_triggering, pending, last_completion, now)
        return decision

    def choose_queued(
        self, *, is_triggering: bool, pending: int, last_completion: int | None, now: int
    ) -> Decision:
        """A slot may have freed (completion, abort, trigger done): decide what runs."""
        decision = Decision()
        self._choose(decision, is_triggering, pending, last_completion, now)
        return decision

    def abort_all(self, reason: CheckpointFailureReason) -> Decision:
        decision = Decision(failed=[(r, reason) for _, r in self._queue])
        self._queue.clear()
        return decision

    def _choose(
        self,
        decision: Decision,
        is_triggering: bool,
        pending: int,
        last_completion: int | None,
        now: int,
    ) -> None:
        if is_triggering or not self._queue:
            return
        first = self._queue[0][1]
        if pending >= self.max_concurrent:
            if first.forced:
                decision.execute = self._queue.pop(0)[1]
            return
        if not first.forced and first.periodic and last_completion is not None:
            delay = last_completion - now + self.min_pause
            if delay > 0:
                self._queue.pop(0)
                decision.failed.append(
                    (first, CheckpointFailureReason.MINIMUM_TIME_BETWEEN_CHECKPOINTS)
                )
                decision.reschedule_in = delay
                return
        decision.execute = self._queue.pop(0)[1]
