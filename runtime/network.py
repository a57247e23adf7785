"""What travels through a channel: data buffers and events between them (Flink's network stack).

Records never travel one per message: a ``Buffer`` holds a batch of records (a list, or any
sequence such as an Arrow RecordBatch's rows) and its size in bytes. Barriers, cancel markers,
end of data, end of partition and announcements are *events* between buffers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runtime.checkpoint import CheckpointOptions


@dataclass(frozen=True, slots=True)
class Buffer:
    """A network buffer: a batch of records and the bytes it occupies.

    On a ``key_by`` edge the buffer also carries the records' keys, computed once by the
    partitioner, so the keyed operator downstream need not extract them again.
    """

    records: Sequence[Any]
    size: int
    keys: Sequence[Any] | None = None
    #: the records' event timestamps (ms; None for a record without one), when any has one
    timestamps: Sequence[int | None] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointBarrier:
    """Flink's ``CheckpointBarrier``: checkpoint id, trigger timestamp (ms) and options."""

    checkpoint_id: int
    timestamp: int
    options: CheckpointOptions = dataclasses.field(default_factory=CheckpointOptions)

    @property
    def is_unaligned(self) -> bool:
        return self.options.is_unaligned

    def as_unaligned(self) -> CheckpointBarrier:
        """Flink's ``asUnaligned``: timeoutable aligned barriers become unaligned, others stay."""
        options = self.options.to_unaligned()
        return self if options is self.options else dataclasses.replace(self, options=options)


@dataclass(frozen=True, slots=True)
class CancelCheckpointMarker:
    """Flink's ``CancelCheckpointMarker``: downstream tasks stop waiting for this checkpoint."""

    checkpoint_id: int


@dataclass(frozen=True, slots=True)
class EndOfData:
    """Flink's ``EndOfData``: the upstream task emits no more records (its operators ended).
    Sent before its final checkpoint, so the downstream tasks end their input in that same
    checkpoint; the end of partition follows once that checkpoint completed (FLIP-147)."""


@dataclass(frozen=True, slots=True)
class Watermark:
    """Flink's ``Watermark``: no record with an event timestamp at or below ``timestamp`` is
    to come on this channel. Travels behind the records it follows, like a buffer, but needs no
    credit."""

    timestamp: int


@dataclass(frozen=True, slots=True)
class WatermarkStatus:
    """Flink's ``WatermarkStatus``: the channel is idle (sends no records or watermarks for a
    while, and must not hold back the watermark downstream) or active again."""

    idle: bool


@dataclass(frozen=True, slots=True)
class EndOfPartition:
    """Flink's ``EndOfPartitionEvent``: the upstream subpartition is finished."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EventAnnouncement:
    """Flink's ``EventAnnouncement``: a priority notice that an aligned, timeoutable barrier
    is queued on a remote channel at ``sequence_number``."""

    barrier: CheckpointBarrier
    sequence_number: int


ChannelEvent = (
    CheckpointBarrier
    | CancelCheckpointMarker
    | EndOfData
    | EndOfPartition
    | EventAnnouncement
    | Watermark
    | WatermarkStatus
)
ChannelItem = Buffer | ChannelEvent


def is_priority(item: ChannelItem) -> bool:
    """Priority items overtake the buffers queued on their channel."""
    return isinstance(item, EventAnnouncement) or (
        isinstance(item, CheckpointBarrier) and item.is_unaligned
    )
