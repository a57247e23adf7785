"""The output side of a task: Flink's ``RecordWriter`` over a ``ResultPartition``.

A ``ResultPartition`` has one subpartition per output channel and a bounded pool of network
buffers, sized as Flink sizes it: ``subpartitions * buffers-per-channel +
floating-buffers-per-gate`` buffers, at least ``subpartitions + 1``.

- Records are written into the buffer being filled of their subpartition; a buffer is cut
  when it reaches ``taskmanager.memory.segment-size`` bytes (by the records' estimated size)
  or ``ckptsim.buffer.records`` records, and queues in its subpartition. A partly filled
  buffer is cut by a flush: before every event, and as ``execution.buffer-timeout.*`` says
  (the task's output flusher, every interval; after every write at 0; never when disabled).
- A queued buffer leaves its subpartition when the consumer has credit for it; it goes back to
  the pool once sent. Events (barriers, cancel markers, end of data and of partition) need no
  credit and keep their place in the queue.
- A producer keeps writing while its pool has buffers: the pool running dry, or one
  subpartition holding ``max-buffers-per-channel`` buffers, makes the partition unavailable,
  and the task stops its default action (back-pressure) until buffers are sent. One buffer of
  input is processed as a whole, so a task may overdraw its pool by the output of that buffer
  (as Flink's overdraft buffers let a record finish).
- A priority event (an unaligned barrier) overtakes the queued buffers of every subpartition;
  the buffers it overtook are that checkpoint's output channel state (they are still sent
  after it, and restored into the queue on recovery).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from runtime.effects import SendToOutput, TaskEffect
from runtime.failure import UserCodeError
from runtime.network import Buffer, ChannelEvent, is_priority
from runtime.partition import ChannelSelector, estimate_size


class Subpartition:
    __slots__ = (
        "all_data_processed",
        "buffers",
        "builder",
        "builder_keys",
        "builder_timestamps",
        "credits",
        "emitted",
        "index",
        "queue",
    )

    def __init__(self, index: int, credits: int) -> None:
        self.index = index
        self.credits = credits
        #: finished buffers and events not sent yet, in order
        self.queue: deque[Buffer | ChannelEvent] = deque()
        #: records of the buffer being filled (and their keys on a key_by edge)
        self.builder: list[Any] = []
        self.builder_keys: list[Any] | None = None
        #: the event timestamps of the records being filled in, once one has any
        self.builder_timestamps: list[int | None] | None = None
        #: pool buffers this subpartition holds (queued buffers and the one being filled)
        self.buffers = 0
        #: records emitted into this subpartition so far (sent or not)
        self.emitted = 0
        #: the consumer processed this subpartition's end of data
        self.all_data_processed = False


class ResultPartition:
    def __init__(
        self,
        num_subpartitions: int,
        *,
        pool_size: int,
        max_buffers_per_channel: int,
        initial_credits: int,
        segment_size: int,
        max_records: int,
    ) -> None:
        if pool_size < num_subpartitions + 1:
            raise ValueError(
                f"a result partition of {num_subpartitions} subpartitions needs a pool of at "
                f"least {num_subpartitions + 1} buffers, got {pool_size}"
            )
        self.subpartitions = [Subpartition(i, initial_credits) for i in range(num_subpartitions)]
        self.pool_size = pool_size
        self.max_buffers_per_channel = max_buffers_per_channel
        self.segment_size = segment_size
        self.max_records = max_records
        #: buffers taken from the pool (queued, or being filled)
        self.in_use = 0
        #: subpartitions holding max-buffers-per-channel buffers or more
        self._over_limit = 0
        #: subpartitions with something queued (to send once credit allows)
        self._queued: set[int] = set()
        #: subpartitions with a partly filled buffer (what a flush cuts)
        self._partial: set[int] = set()
        #: estimated bytes per record of the last records written (0: none yet)
        self.record_size = 0.0

    @property
    def num_subpartitions(self) -> int:
        return len(self.subpartitions)

    # --- the pool ---------------------------------------------------------------------------------

    @property
    def is_available(self) -> bool:
        """A buffer can be requested: the writer may go on (else: back-pressure)."""
        return self.in_use < self.pool_size and not self._over_limit

    def records_that_fit(self) -> int | None:
        """About how many more records of the size last written fill the free buffers of the
        pool (at least 1; None before any was written): what a source reads at most, so that
        one read does not overdraw the pool by many buffers (Flink's source writes record by
        record, and stops when no buffer is available)."""
        if self.record_size <= 0:
            return None
        per_buffer = max(1, min(self.max_records, int(self.segment_size // self.record_size)))
        return max(1, (self.pool_size - self.in_use) * per_buffer)

    def _take(self, sub: Subpartition, count: int = 1) -> None:
        self.in_use += count
        before = sub.buffers
        sub.buffers += count
        limit = self.max_buffers_per_channel
        if before < limit <= sub.buffers:
            self._over_limit += 1

    def _recycle(self, sub: Subpartition) -> None:
        self.in_use -= 1
        sub.buffers -= 1
        if sub.buffers == self.max_buffers_per_channel - 1:
            self._over_limit -= 1

    # --- writing ----------------------------------------------------------------------------------

    def emit(
        self,
        index: int,
        records: Sequence[Any],
        keys: list[Any] | None = None,
        timestamps: Sequence[int | None] | None = None,
    ) -> None:
        """Write records (and their keys) into subpartition ``index``."""
        n = len(records)
        if n == 0:
            return
        sub = self.subpartitions[index]
        if timestamps is not None or sub.builder_timestamps is not None:
            self._emit_timestamped(sub, records, keys, timestamps)
            return
        sub.emitted += n
        if not isinstance(records, list):  # e.g. an Arrow batch: one buffer as it is
            self._cut(sub)
            self._take(sub)
            self._enqueue(sub, Buffer(records, estimate_size(records), keys))
            return
        size = estimate_size(records)
        per_record = size / n
        self.record_size = per_record
        cap = self.max_records
        if size > 0:
            cap = max(1, min(cap, int(self.segment_size // per_record)))
        start = 0
        builder = sub.builder
        if builder:
            start = min(cap - len(builder), n)
            if start > 0:
                builder.extend(records[:start] if start < n else records)
                if keys is not None:
                    if sub.builder_keys is None:
                        sub.builder_keys = []
                    sub.builder_keys.extend(keys[:start])
            else:
                start = 0
            if len(builder) >= cap:
                self._cut(sub)
        while n - start >= cap:
            chunk = records[start : start + cap] if (start or n != cap) else records
            chunk_keys = None if keys is None else keys[start : start + cap]
            self._take(sub)
            self._enqueue(sub, Buffer(chunk, int(per_record * len(chunk)), chunk_keys))
            start += cap
        if start < n:
            if not sub.builder:
                self._take(sub)
                self._partial.add(index)
            sub.builder.extend(records[start:] if start else records)
            if keys is not None:
                if sub.builder_keys is None:
                    sub.builder_keys = []
                sub.builder_keys.extend(keys[start:] if start else keys)

    def _emit_timestamped(
        self,
        sub: Subpartition,
        records: Sequence[Any],
        keys: list[Any] | None,
        timestamps: Sequence[int | None] | None,
    ) -> None:
        """Records with event timestamps (rare: event-time jobs): cut record by record range,
        the timestamps kept parallel to the records."""
        n = len(records)
        sub.emitted += n
        stamps: Sequence[int | None] = timestamps if timestamps is not None else [None] * n
        if not isinstance(records, list):
            records = list(records)
        size = estimate_size(records)
        self.record_size = size / n
        cap = self.max_records
        if size > 0:
            cap = max(1, min(cap, int(self.segment_size // (size / n))))
        start = 0
        while start < n:
            if not sub.builder:
                self._take(sub)
                self._partial.add(sub.index)
            if sub.builder_timestamps is None:
                sub.builder_timestamps = [None] * len(sub.builder)
            room = cap - len(sub.builder)
            stop = min(n, start + max(room, 1))
            sub.builder.extend(records[start:stop])
            sub.builder_timestamps.extend(stamps[start:stop])
            if keys is not None or sub.builder_keys is not None:
                if sub.builder_keys is None:
                    sub.builder_keys = []
                sub.builder_keys.extend(
                    keys[start:stop] if keys is not None else [None] * (stop - start)
                )
            start = stop
            if len(sub.builder) >= cap:
                self._cut(sub)

    def _cut(self, sub: Subpartition) -> None:
        """The buffer being filled is finished and queued (its pool buffer stays taken)."""
        records = sub.builder
        if not records:
            return
        self._enqueue(
            sub,
            Buffer(records, estimate_size(records), sub.builder_keys, sub.builder_timestamps),
        )
        sub.builder = []
        sub.builder_keys = None
        sub.builder_timestamps = None
        self._partial.discard(sub.index)

    def _enqueue(self, sub: Subpartition, item: Buffer | ChannelEvent) -> None:
        sub.queue.append(item)
        self._queued.add(sub.index)

    @property
    def has_partial(self) -> bool:
        """A buffer is partly filled: a flush would hand something out."""
        return bool(self._partial)

    def flush(self) -> None:
        """Cut every partly filled buffer (before an event; after every write or on the output
        flusher's tick, by ``execution.buffer-timeout.interval``)."""
        if self._partial:
            subpartitions = self.subpartitions
            for index in sorted(self._partial):
                self._cut(subpartitions[index])

    def broadcast_event(
        self, event: ChannelEvent, *, priority: bool = False
    ) -> dict[int, list[Buffer]]:
        """Queue an event on every subpartition, behind what is queued; a priority event goes
        ahead of it: returns then the buffers it overtook per subpartition (the output channel
        state of its checkpoint)."""
        self.flush()
        overtaken: dict[int, list[Buffer]] = {}
        for sub in self.subpartitions:
            queue = sub.queue
            if priority:
                ahead = 0  # behind the priority events still queued, as Flink's PrioritizedDeque
                while ahead < len(queue) and is_priority(queue[ahead]):
                    ahead += 1
                passed = [queue[i] for i in range(ahead, len(queue))]
                buffers = [item for item in passed if isinstance(item, Buffer)]
                if buffers:
                    overtaken[sub.index] = buffers
                queue.insert(ahead, event)
            else:
                queue.append(event)
            self._queued.add(sub.index)
        return overtaken

    def restore(self, index: int, buffers: list[Buffer]) -> None:
        """Recovered output channel state: sent first, before anything new."""
        sub = self.subpartitions[index]
        self._take(sub, len(buffers))
        sub.queue.extendleft(reversed(buffers))
        sub.emitted += sum(len(b.records) for b in buffers)  # sent in this attempt
        self._queued.add(index)

    # --- sending ----------------------------------------------------------------------------------

    def add_credit(self, index: int, credits: int = 1) -> None:
        self.subpartitions[index].credits += credits

    def poll_sendable(self) -> list[tuple[int, Buffer | ChannelEvent]]:
        """What may be sent now, as ``(subpartition, item)`` in order per subpartition: events,
        and buffers the consumer has credit for (each then goes back to the pool)."""
        if not self._queued:
            return []
        sendable: list[tuple[int, Buffer | ChannelEvent]] = []
        for index in sorted(self._queued):
            sub = self.subpartitions[index]
            queue = sub.queue
            while queue:
                head = queue[0]
                if isinstance(head, Buffer):
                    if sub.credits <= 0:
                        break
                    sub.credits -= 1
                    self._recycle(sub)
                queue.popleft()
                sendable.append((index, head))
            if not queue:
                self._queued.discard(index)
        return sendable

    # --- views ------------------------------------------------------------------------------------

    def emitted(self) -> dict[int, int]:
        """Records emitted so far per subpartition (the producer's side of a cut)."""
        return {sub.index: sub.emitted for sub in self.subpartitions}

    def all_data_processed(self, index: int) -> None:
        self.subpartitions[index].all_data_processed = True

    @property
    def is_all_data_processed(self) -> bool:
        return all(sub.all_data_processed for sub in self.subpartitions)


class RecordWriter:
    """Partitions records over a task's outgoing edges into its result partition (one
    subpartition per output channel, edge after edge). Key selectors are user code: one that
    raises fails the task, naming the operator whose ``key_by`` it is.

    An edge carries the main output, or (``side_outputs``: per edge, the tag's name or None)
    a side output of the chain's last operator: ``emit`` writes to the main output's edges,
    ``emit_side`` to the edges of one side output (records of a side output no edge carries
    are not written)."""

    def __init__(
        self,
        edges: Sequence[tuple[ChannelSelector, str]],
        partition: ResultPartition,
        side_outputs: Sequence[str | None] | None = None,
    ):
        self.edges = [selector for selector, _ in edges]
        self.targets = [target for _, target in edges]
        self.partition = partition
        self._offsets: list[int] = []
        total = 0
        for edge in self.edges:
            self._offsets.append(total)
            total += edge.num_channels
        if total != partition.num_subpartitions:
            raise ValueError(
                f"{total} output channels over the edges, {partition.num_subpartitions} "
                "subpartitions"
            )
        tags = list(side_outputs) if side_outputs is not None else [None] * len(self.edges)
        if len(tags) != len(self.edges):
            raise ValueError(f"{len(tags)} side output names for {len(self.edges)} edges")
        #: the routes of the main output and of each side output: (edge index, selector, first
        #: subpartition) per edge
        self._main: list[tuple[int, ChannelSelector, int]] = []
        self._side: dict[str, list[tuple[int, ChannelSelector, int]]] = {}
        for position, (edge, offset, tag) in enumerate(
            zip(self.edges, self._offsets, tags, strict=True)
        ):
            route = (position, edge, offset)
            if tag is None:
                self._main.append(route)
            else:
                self._side.setdefault(tag, []).append(route)
        #: records written, for progress reports
        self.records_out = 0

    @property
    def side_outputs(self) -> frozenset[str]:
        """The side outputs an edge carries."""
        return frozenset(self._side)

    def poll_output(self) -> list[TaskEffect]:
        """What the partition may send now (``ResultPartition.poll_sendable``), as effects: the
        task's data and events leave it this way."""
        return [SendToOutput(channel=c, item=item) for c, item in self.partition.poll_sendable()]

    def emit(self, records: Sequence[Any], timestamps: Sequence[int | None] | None = None) -> None:
        """Records of the main output."""
        if not len(records) or not self._main:
            return
        self.records_out += len(records)
        self._route(self._main, records, timestamps)

    def emit_side(
        self, tag: str, records: Sequence[Any], timestamps: Sequence[int | None] | None = None
    ) -> None:
        """Records of the side output ``tag``."""
        routes = self._side.get(tag)
        if routes is None or not len(records):
            return
        self.records_out += len(records)
        self._route(routes, records, timestamps)

    def _route(
        self,
        routes: list[tuple[int, ChannelSelector, int]],
        records: Sequence[Any],
        timestamps: Sequence[int | None] | None,
    ) -> None:
        emit = self.partition.emit
        for position, edge, offset in routes:
            try:
                if timestamps is None:
                    for channel, part, keys in edge.split(records):
                        emit(offset + channel, part, keys)
                else:
                    for channel, part, keys, stamps in edge.split_timestamped(records, timestamps):
                        emit(offset + channel, part, keys, stamps)
            except UserCodeError:
                raise
            except Exception as error:
                raise UserCodeError(f"key_by selector of {self.targets[position]}") from error
