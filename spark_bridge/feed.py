"""Partitions as source splits with replayable offsets (no Spark here: see ``spark_feed``).

A ``PartitionFeed`` is partitioned input that can be read from any row of any partition:
``open(partition, offset)`` streams the partition's records from row ``offset`` on, in
chunks. Each partition is a *split*; subtask ``s`` of a source with parallelism ``p`` reads
the splits ``s, s + p, s + 2p, ...`` one after the other (round-robin by partition index),
as ``SplitReader``, a ``runtime.operators.SourceReader``:

- ``read(n)`` returns the next buffer of at most ``n`` records of the current split (a buffer
  never spans two splits), opening the next split when one ends, None when all are read;
- ``position()`` is the JSON-safe read position, the source's state in every checkpoint:
  ``{"partitions": N, "split": partition being read or None, "offset": rows of it emitted,
  "finished": [partitions read to the end]}``;
- ``seek(position)`` after a restore: the read resumes exactly after the last row emitted
  before the checkpoint (row ``offset`` of ``split``), finished splits are not read again.

A feed with ``prefetch = True`` has the next split's first chunk fetched in a background
thread while a split is read (``Prefetch``, one ahead); positions count rows emitted, so a
prefetched chunk changes no checkpoint.

Only a feed whose partitions hold the same rows in the same order every time it is read
replays exactly; ``spark_feed`` makes Spark input stable (persisted) for that.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from actors.logs import get_logger

log = get_logger(__name__)


class PartitionFeed(Protocol):
    """Partitioned input, readable from any row of any partition."""

    @property
    def num_partitions(self) -> int: ...

    def open(self, partition: int, offset: int) -> Iterator[Sequence[Any]]:
        """The records of ``partition`` from row ``offset`` on, in chunks (lists, or Arrow
        record batches). Closing the iterator (``close()``) releases what it holds."""

    @property
    def convert(self) -> Callable[[Any], Sequence[Any]] | None:
        """Turns a slice of a chunk into the buffer the job gets (None: the slice as it is),
        e.g. an Arrow batch into a list of tuples, one buffer at a time."""


class FeedChanged(RuntimeError):
    """A restored position does not fit the input: it is not the input the checkpoint read."""


class Prefetch:
    """The first chunk of a split, fetched in a background thread while the split before it
    is read (one ahead): ``take()`` waits for it and returns the split's chunks from row 0;
    ``discard()`` lets it go (closed when its fetch ends, nobody waits)."""

    def __init__(self, feed: PartitionFeed, partition: int, *, name: str) -> None:
        self.partition = partition
        self._feed = feed
        self._chunks: Iterator[Sequence[Any]] | None = None
        self._first: Sequence[Any] | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._done = False
        self._discarded = False
        self._thread = threading.Thread(
            target=self._fetch, name=f"{name} prefetch partition {partition}", daemon=True
        )
        self._thread.start()

    def _fetch(self) -> None:
        try:
            self._chunks = self._feed.open(self.partition, 0)
            self._first = next(self._chunks, None)
        except BaseException as error:  # raised again by take()
            self._error = error
        with self._lock:
            self._done = True
            discarded = self._discarded
        if discarded:
            self._close()

    def _close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):
                close()

    def take(self) -> Iterator[Sequence[Any]]:
        """The split's chunks from row 0 (raises what the fetch raised)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._rest(self._first, self._chunks)

    @staticmethod
    def _rest(
        first: Sequence[Any] | None, chunks: Iterator[Sequence[Any]] | None
    ) -> Iterator[Sequence[Any]]:
        try:
            if first is None or chunks is None:
                return
            yield first
            yield from chunks
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    def discard(self) -> None:
        with self._lock:
            self._discarded = True
            done = self._done
        if done:
            self._close()


class InMemoryFeed:
    """Partitions held in lists (tests, examples): chunks of ``chunk`` records."""

    convert: Callable[[Any], Sequence[Any]] | None = None

    def __init__(self, partitions: Sequence[Sequence[Any]], *, chunk: int = 4096) -> None:
        self.partitions = partitions
        self.chunk = chunk
        #: (partition, offset) of every ``open``, in order (tests look at replays)
        self.opened: list[tuple[int, int]] = []

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)

    def open(self, partition: int, offset: int) -> Iterator[Sequence[Any]]:
        self.opened.append((partition, offset))
        rows = self.partitions[partition]
        for start in range(offset, len(rows), self.chunk):
            yield list(rows[start : start + self.chunk])


def assigned_splits(num_partitions: int, subtask: int, parallelism: int) -> list[int]:
    """The partitions subtask ``subtask`` of ``parallelism`` reads: round-robin by index."""
    return list(range(subtask, num_partitions, parallelism))


class SplitReader:
    """A source subtask's splits of a ``PartitionFeed``, read in buffers (a SourceReader)."""

    def __init__(self, feed: PartitionFeed, subtask: int, parallelism: int, *, name: str) -> None:
        self.feed = feed
        self.name = name
        self.subtask = subtask
        self.num_partitions = feed.num_partitions
        self.splits = assigned_splits(self.num_partitions, subtask, parallelism)
        self.index = 0  # into self.splits: the split being read
        self.offset = 0  # rows of the current split emitted
        self._chunks: Iterator[Sequence[Any]] | None = None
        self._chunk: Sequence[Any] = ()
        self._at = 0  # rows of self._chunk emitted
        self._convert = getattr(feed, "convert", None)
        #: a feed with ``prefetch = True`` (Spark: each split's first chunk is a Spark job)
        #: has the next split's first chunk fetched while the current one is read
        self._prefetching = bool(getattr(feed, "prefetch", False))
        self._prefetch: Prefetch | None = None

    # --- SourceReader ---------------------------------------------------------------------------

    def read(self, max_records: int, now: int) -> Sequence[Any] | None:
        while True:
            chunk = self._chunk
            if self._at < len(chunk):
                if self._at == 0 and len(chunk) <= max_records:
                    buffer = chunk  # the whole chunk: no copy
                else:
                    buffer = chunk[self._at : self._at + max_records]
                self._at += len(buffer)
                self.offset += len(buffer)
                return buffer if self._convert is None else self._convert(buffer)
            if self.index >= len(self.splits):
                return None
            if self._chunks is None:
                partition = self.splits[self.index]
                log.info(
                    "split_opened",
                    source=self.name,
                    subtask=self.subtask,
                    partition=partition,
                    offset=self.offset,
                )
                self._chunks = self._open(partition)
            following = next(self._chunks, None)
            if following is None:  # the split is read to its end
                self._close_split()
                log.info(
                    "split_finished",
                    source=self.name,
                    subtask=self.subtask,
                    partition=self.splits[self.index],
                    rows=self.offset,
                )
                self.index += 1
                self.offset = 0
                continue
            self._chunk, self._at = following, 0

    def _open(self, partition: int) -> Iterator[Sequence[Any]]:
        """The current split's chunks from ``self.offset`` on (the prefetched ones if they
        are this split's from row 0), and the next split's first chunk asked for."""
        prefetched, self._prefetch = self._prefetch, None
        if prefetched is not None and prefetched.partition == partition and self.offset == 0:
            chunks = prefetched.take()
        else:
            if prefetched is not None:
                prefetched.discard()
            chunks = self.feed.open(partition, self.offset)
        if self._prefetching and self.index + 1 < len(self.splits):
            self._prefetch = Prefetch(self.feed, self.splits[self.index + 1], name=self.name)
        return chunks

    def next_ready(self, now: int) -> int | None:
        return None  # reads block until their records are there: never "nothing yet"

    def position(self) -> Any:
        return {
            "partitions": self.num_partitions,
            "split": self.splits[self.index] if self.index < len(self.splits) else None,
            "offset": self.offset,
            "finished": self.splits[: self.index],
        }

    def seek(self, position: Any) -> None:
        partitions = int(position["partitions"])
        if partitions != self.num_partitions:
            raise FeedChanged(
                f"source {self.name!r}: the checkpoint read {partitions} partition(s), the "
                f"input has {self.num_partitions} now; a restore needs the same input "
                "(persist the DataFrame, or keep its plan deterministic)"
            )
        split = position.get("split")
        finished = [int(p) for p in position.get("finished", [])]
        if finished != self.splits[: len(finished)]:
            raise FeedChanged(
                f"source {self.name!r}: the checkpoint's finished splits {finished} are not "
                f"this subtask's first splits {self.splits}: restore with the parallelism the "
                "checkpoint was taken with"
            )
        self._close_split()
        self._drop_prefetch()
        if split is None:
            self.index, self.offset = len(self.splits), 0
        else:
            if int(split) not in self.splits:
                raise FeedChanged(
                    f"source {self.name!r}: the checkpoint was reading partition {split}, "
                    f"which is not among this subtask's splits {self.splits}: restore with "
                    "the parallelism the checkpoint was taken with"
                )
            self.index = self.splits.index(int(split))
            self.offset = int(position["offset"])

    # --- resources ------------------------------------------------------------------------------

    def _close_split(self) -> None:
        chunks, self._chunks = self._chunks, None
        self._chunk, self._at = (), 0
        close = getattr(chunks, "close", None)
        if close is not None:
            close()

    def _drop_prefetch(self) -> None:
        prefetched, self._prefetch = self._prefetch, None
        if prefetched is not None:
            prefetched.discard()

    def close(self) -> None:
        """Release the split being read (its Spark stream) and the next split's prefetched
        chunk; reading again reopens them."""
        self._close_split()
        self._drop_prefetch()

    def __del__(self) -> None:
        # A cancelled task drops its reader mid-split: let the split's stream go with it.
        with contextlib.suppress(Exception):  # at interpreter exit there is no one to tell
            self._close_split()
            self._drop_prefetch()
