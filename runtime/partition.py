"""The output side of a task: partitioners and the record writer (Flink's ``RecordWriter`` with
credit-based flow control).

Records are cut into buffers of ``buffer_records`` records per output channel; a buffer is sent
only with a credit from the receiving channel, events (barriers, cancel markers, end of
partition) travel in order behind the buffers before them. A priority event (an unaligned
barrier) jumps ahead of the unsent buffers of every channel; the buffers it overtakes are the
output channel state of that checkpoint.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runtime.network import Buffer, ChannelEvent
from runtime.state import DEFAULT_MAX_PARALLELISM, hash_code, murmur_hash

KeySelector = Callable[[Any], Any]


class Partitioner(enum.Enum):
    FORWARD = "forward"
    REBALANCE = "rebalance"
    HASH = "hash"
    BROADCAST = "broadcast"

    @property
    def all_to_all(self) -> bool:
        return self is not Partitioner.FORWARD


def estimate_size(records: Sequence[Any]) -> int:
    """Bytes of a buffer: an Arrow batch knows its size; a list is estimated from a sample."""
    nbytes = getattr(records, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes
    n = len(records)
    if n == 0:
        return 0
    sample = records[: min(n, 4)]
    per_record = sum(len(repr(r)) for r in sample) // len(sample) + 8
    return per_record * n


class ChannelSelector:
    """Splits a batch of records over an edge's output channels."""

    def __init__(
        self,
        partitioner: Partitioner,
        num_channels: int,
        *,
        key_selector: KeySelector | None = None,
        start: int = 0,
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
    ) -> None:
        if partitioner is Partitioner.HASH and key_selector is None:
            raise ValueError("hash partitioning needs a key selector")
        if partitioner is Partitioner.FORWARD and num_channels != 1:
            raise ValueError("forward partitioning connects exactly one channel")
        self.partitioner = partitioner
        self.num_channels = num_channels
        self.key_selector = key_selector
        self.max_parallelism = max_parallelism
        self._next = start % num_channels if num_channels else 0
        self._channel_of_key: dict[Any, int] = {}

    def split(self, records: Sequence[Any]) -> list[tuple[int, Sequence[Any], list[Any] | None]]:
        """``(channel, records, keys)`` per channel that gets records (keys on hash edges)."""
        n = self.num_channels
        if self.partitioner is Partitioner.HASH:
            return self._split_by_key(records)
        if self.partitioner is Partitioner.FORWARD or n == 1:
            return [(0, records, None)]
        if self.partitioner is Partitioner.BROADCAST:
            return [(c, records, None) for c in range(n)]
        start = self._next
        self._next = (start + len(records)) % n
        out: list[tuple[int, Sequence[Any], list[Any] | None]] = []
        for c in range(n):
            part = records[(c - start) % n :: n]
            if part:
                out.append((c, part, None))
        return out

    def _split_by_key(
        self, records: Sequence[Any]
    ) -> list[tuple[int, Sequence[Any], list[Any] | None]]:
        assert self.key_selector is not None
        key_of = self.key_selector
        cache = self._channel_of_key
        parts: list[list[Any]] = [[] for _ in range(self.num_channels)]
        keys: list[list[Any]] = [[] for _ in range(self.num_channels)]
        for record in records:
            key = key_of(record)
            try:
                channel = cache[key]
            except KeyError:
                channel = self.channel_for_key(key)
                if len(cache) < 1 << 20:
                    cache[key] = channel
            except TypeError as error:  # an unhashable key
                raise TypeError(
                    f"key_by produced an unhashable key {key!r} ({type(key).__name__}); "
                    "return a str, int, tuple or other hashable value"
                ) from error
            parts[channel].append(record)
            keys[channel].append(key)
        return [(c, p, keys[c]) for c, p in enumerate(parts) if p]

    def channel_for_key(self, key: Any) -> int:
        key_group = murmur_hash(hash_code(key)) % self.max_parallelism
        return key_group * self.num_channels // self.max_parallelism


@dataclass(slots=True)
class _OutputChannel:
    credits: int
    accumulating: list[Any] = field(default_factory=list)
    keys: list[Any] | None = None
    outgoing: deque[Buffer | ChannelEvent] = field(default_factory=deque)
    sent_buffers: int = 0
    sent_bytes: int = 0
    #: records emitted into this channel so far (sent or not)
    emitted: int = 0
    #: the consumer processed this channel's end of partition
    all_data_processed: bool = False


class RecordWriter:
    """All output channels of one task, over one or more outgoing edges.

    ``emit`` partitions records; ``drain`` returns what may be sent now, as
    ``(output channel index, item)`` pairs, in order per channel.
    """

    def __init__(
        self,
        edges: Sequence[ChannelSelector],
        *,
        initial_credits: int,
        buffer_records: int = 1000,
    ) -> None:
        self.edges = list(edges)
        self.buffer_records = buffer_records
        self._offsets: list[int] = []
        total = 0
        for edge in self.edges:
            self._offsets.append(total)
            total += edge.num_channels
        self.channels = [_OutputChannel(credits=initial_credits) for _ in range(total)]

    @property
    def num_channels(self) -> int:
        return len(self.channels)

    def emit(self, records: Sequence[Any]) -> None:
        if not records:
            return
        limit = self.buffer_records
        for edge, offset in zip(self.edges, self._offsets, strict=True):
            for channel, part, keys in edge.split(records):
                out = self.channels[offset + channel]
                out.emitted += len(part)
                acc = out.accumulating
                if not acc and len(part) >= limit:
                    out.outgoing.append(Buffer(list(part), estimate_size(part), keys))
                    continue
                acc.extend(part)
                if keys is not None:
                    if out.keys is None:
                        out.keys = []
                    out.keys.extend(keys)
                if len(acc) >= limit:
                    self._cut(out)

    def emitted(self) -> dict[int, int]:
        """Records emitted so far per output channel (the producer's side of a cut)."""
        return {i: out.emitted for i, out in enumerate(self.channels)}

    def flush(self) -> None:
        """Cut every partly filled buffer (before an event, or when the task goes idle)."""
        for out in self.channels:
            if out.accumulating:
                self._cut(out)

    @staticmethod
    def _cut(out: _OutputChannel) -> None:
        records = out.accumulating
        out.outgoing.append(Buffer(records, estimate_size(records), out.keys))
        out.accumulating = []
        out.keys = None

    def broadcast_event(
        self, event: ChannelEvent, *, priority: bool = False
    ) -> dict[int, list[Buffer]]:
        """Queue an event on every channel; returns, for a priority event, the buffers it
        overtook per channel (sent after it, persisted as output channel state)."""
        self.flush()
        overtaken: dict[int, list[Buffer]] = {}
        for index, out in enumerate(self.channels):
            if priority:
                passed = [item for item in out.outgoing if isinstance(item, Buffer)]
                if passed:
                    overtaken[index] = passed
                out.outgoing.appendleft(event)
            else:
                out.outgoing.append(event)
        return overtaken

    def add_credit(self, channel: int, credits: int = 1) -> None:
        self.channels[channel].credits += credits

    def drain(self) -> list[tuple[int, Buffer | ChannelEvent]]:
        sendable: list[tuple[int, Buffer | ChannelEvent]] = []
        for index, out in enumerate(self.channels):
            queue = out.outgoing
            while queue:
                head = queue[0]
                if isinstance(head, Buffer):
                    if out.credits <= 0:
                        break
                    out.credits -= 1
                    out.sent_buffers += 1
                    out.sent_bytes += head.size
                queue.popleft()
                sendable.append((index, head))
        return sendable

    def all_data_processed(self, channel: int) -> None:
        self.channels[channel].all_data_processed = True

    @property
    def is_all_data_processed(self) -> bool:
        return all(out.all_data_processed for out in self.channels)

    @property
    def is_available(self) -> bool:
        """False while some channel holds a buffer it has no credit to send (back-pressure)."""
        return all(not out.outgoing for out in self.channels)

    @property
    def backpressured_channels(self) -> list[int]:
        return [i for i, out in enumerate(self.channels) if out.outgoing]

    def unsent_buffers(self) -> dict[int, list[Buffer]]:
        return {
            i: [b for b in out.outgoing if isinstance(b, Buffer)]
            for i, out in enumerate(self.channels)
            if out.outgoing
        }
