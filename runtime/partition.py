"""Partitioners: which output channel of an edge each record goes to (Flink's
``ChannelSelector`` and ``StreamPartitioner``s), and the size estimate buffers are cut by.

Forward connects subtask i to subtask i; rebalance deals records round-robin; rescale deals
them round-robin over the subset of downstream subtasks Flink's pointwise distribution gives
the upstream subtask; hash routes a record by the key group of its key (Flink's murmur hash
over the max parallelism's key groups), computing each key once and shipping it with the
buffer; custom asks the user's partitioner for the channel of a record's key; broadcast sends
every record to every channel. The task's ``RecordWriter`` (``runtime.task.result_partition``)
writes the parts into its result partition.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, NoReturn

from runtime.state import DEFAULT_MAX_PARALLELISM, hash_code, murmur_hash

KeySelector = Callable[[Any], Any]
#: a key's 32-bit hash code (Java's ``hashCode`` of the key as Flink sees it)
KeyHash = Callable[[Any], int]


class HashingKeySelector:
    """A key selector whose keys hash with their own function instead of ckptsim's
    ``hash_code`` (PyFlink hashes a key as the Java object it becomes: a pickled byte array in
    a ``Row`` unless ``key_type`` is given). The partitioner routes by it and the keyed state
    backend groups by it, so a key's key group is the same on both sides of a ``key_by``.
    ``key_order`` (key -> a sort key) is the order of keys in BATCH mode (Flink sorts by the
    key's serialized bytes)."""

    __slots__ = ("fn", "key_hash", "key_order")

    def __init__(
        self,
        fn: KeySelector,
        key_hash: KeyHash = hash_code,
        key_order: Callable[[Any], Any] | None = None,
    ) -> None:
        self.fn = fn
        self.key_hash = key_hash
        self.key_order = key_order

    def __call__(self, record: Any) -> Any:
        return self.fn(record)


#: at most this many keys' channels are cached (per cache)
_CACHED_KEYS = 1 << 20


def _raise_unhashable(keys: Sequence[Any]) -> NoReturn:
    """The ``TypeError`` for the first unhashable key of ``keys``."""
    for key in keys:
        try:
            hash(key)
        except TypeError as error:
            raise TypeError(
                f"key_by produced an unhashable key {key!r} ({type(key).__name__}); "
                "return a str, int, tuple or other hashable value"
            ) from error
    raise AssertionError("a key that did not hash hashed")


def _same_types(a: Any, b: Any) -> bool:
    """Equal keys with the same types throughout (so they hash alike)."""
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    return True


def key_hash_of(selector: KeySelector | None) -> KeyHash:
    """The hash function keys of ``selector`` are grouped by."""
    return selector.key_hash if isinstance(selector, HashingKeySelector) else hash_code


def key_order_of(selector: KeySelector | None) -> Callable[[Any], Any] | None:
    """How keys of ``selector`` are ordered in BATCH mode (None: Python's order of the keys)."""
    return selector.key_order if isinstance(selector, HashingKeySelector) else None


def plain_selector(selector: KeySelector) -> KeySelector:
    """The user's function itself (one call less per record on the routing path)."""
    return selector.fn if isinstance(selector, HashingKeySelector) else selector


class CustomPartitioning:
    """A custom partitioner and its key selector (Flink's ``CustomPartitionerWrapper``): a
    record goes to channel ``partition(key_selector(record), number of channels)``."""

    __slots__ = ("key_selector", "partition")

    def __init__(self, partition: Callable[[Any, int], int], key_selector: KeySelector) -> None:
        self.partition = partition
        self.key_selector = key_selector

    def __call__(self, record: Any) -> Any:
        return self.key_selector(record)

    def channel(self, record: Any, num_channels: int) -> int:
        channel = self.partition(self.key_selector(record), num_channels)
        if (
            isinstance(channel, bool)
            or not isinstance(channel, int)
            or not (0 <= channel < num_channels)
        ):
            raise ValueError(
                f"the custom partitioner returned {channel!r} for {record!r}: a partition is "
                f"a whole number from 0 to {num_channels - 1} (the number of partitions - 1)"
            )
        return channel


class RescaleSubsets:
    """Which downstream subtasks each upstream subtask of a rescale edge feeds, given the
    upstream parallelism (set on the edge when the job graph is built): Flink's pointwise
    distribution (``VertexInputInfoComputationUtils``)."""

    __slots__ = ("upstream",)

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream

    def __call__(self, record: Any) -> Any:
        raise TypeError("a rescale edge has no key")

    def targets(self, subtask: int, downstream: int) -> list[int]:
        return rescale_targets(self.upstream, downstream, subtask)


def rescale_targets(upstream: int, downstream: int, subtask: int) -> list[int]:
    """The downstream subtasks upstream ``subtask`` sends to on a rescale edge: the same index
    when the parallelisms are equal; a contiguous run of them when the downstream is wider;
    the one whose contiguous run of upstream subtasks holds it when it is narrower."""
    if upstream == downstream:
        return [subtask]
    if upstream > downstream:
        return [
            d
            for d in range(downstream)
            if d * upstream // downstream <= subtask < (d + 1) * upstream // downstream
        ]
    start = (subtask * downstream + upstream - 1) // upstream
    end = ((subtask + 1) * downstream + upstream - 1) // upstream
    return list(range(start, end))


class Partitioner(enum.Enum):
    FORWARD = "forward"
    REBALANCE = "rebalance"
    RESCALE = "rescale"
    HASH = "hash"
    BROADCAST = "broadcast"
    SHUFFLE = "shuffle"
    CUSTOM = "custom"

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
    per_record = sum(map(len, map(repr, sample))) // len(sample) + 8  # no generator: per buffer
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
        if partitioner is Partitioner.CUSTOM and not isinstance(key_selector, CustomPartitioning):
            raise ValueError("custom partitioning needs a CustomPartitioning")
        if partitioner is Partitioner.FORWARD and num_channels != 1:
            raise ValueError("forward partitioning connects exactly one channel")
        self.partitioner = partitioner
        self.num_channels = num_channels
        self.key_selector = plain_selector(key_selector) if key_selector is not None else None
        self._key_hash = key_hash_of(key_selector)
        self.max_parallelism = max_parallelism
        self._next = start % num_channels if num_channels else 0
        #: key -> (the key object the entry was made for, its channel): keys of mixed types
        self._channel_of_key: dict[Any, tuple[Any, int]] = {}
        #: type -> (key -> channel): buffers whose keys have one type (not tuple)
        self._channel_by_type: dict[type, dict[Any, int]] = {}
        #: shuffle: a random channel per record, seeded per subtask (a run is replayable)
        self._random = random.Random(start) if partitioner is Partitioner.SHUFFLE else None
        self._custom = key_selector if isinstance(key_selector, CustomPartitioning) else None
        #: rescale: the channels this subtask deals to, in turn from the first (Flink's
        #: ``RescalePartitioner`` over the subtask's subpartitions)
        self._targets: list[int] | None = None
        if partitioner is Partitioner.RESCALE:
            subsets = key_selector if isinstance(key_selector, RescaleSubsets) else None
            self._targets = (
                subsets.targets(start, num_channels)
                if subsets is not None
                else [start % num_channels if num_channels else 0]
            )
            self._next = 0

    def split(self, records: Sequence[Any]) -> list[tuple[int, Sequence[Any], list[Any] | None]]:
        """``(channel, records, keys)`` per channel that gets records (keys on hash edges)."""
        n = self.num_channels
        if self.partitioner is Partitioner.HASH:
            return self._split_by_key(records)
        if self.partitioner is Partitioner.FORWARD or n == 1:
            return [(0, records, None)]
        if self.partitioner is Partitioner.BROADCAST:
            return [(c, records, None) for c in range(n)]
        if self._random is not None:
            return [(c, part, None) for c, part, _ in self._shuffle(records, None)]
        if self._targets is not None or self._custom is not None:
            return [(c, part, None) for c, part, _ in self._by_channel(records, None)]
        start = self._next
        self._next = (start + len(records)) % n
        out: list[tuple[int, Sequence[Any], list[Any] | None]] = []
        for c in range(n):
            part = records[(c - start) % n :: n]
            if part:
                out.append((c, part, None))
        return out

    def split_timestamped(
        self, records: Sequence[Any], timestamps: Sequence[int | None]
    ) -> list[tuple[int, Sequence[Any], list[Any] | None, Sequence[int | None]]]:
        """``split`` for records with event timestamps: each part with its timestamps."""
        n = self.num_channels
        if self.partitioner is Partitioner.HASH:
            return self._split_by_key_timestamped(records, timestamps)
        if self.partitioner is Partitioner.FORWARD or n == 1:
            return [(0, records, None, timestamps)]
        if self.partitioner is Partitioner.BROADCAST:
            return [(c, records, None, timestamps) for c in range(n)]
        if self._random is not None:
            return [
                (c, part, None, stamps) for c, part, stamps in self._shuffle(records, timestamps)
            ]
        if self._targets is not None or self._custom is not None:
            return [
                (c, part, None, stamps) for c, part, stamps in self._by_channel(records, timestamps)
            ]
        start = self._next
        self._next = (start + len(records)) % n
        out: list[tuple[int, Sequence[Any], list[Any] | None, Sequence[int | None]]] = []
        for c in range(n):
            offset = (c - start) % n
            part = records[offset::n]
            if part:
                out.append((c, part, None, timestamps[offset::n]))
        return out

    def _split_by_key(
        self, records: Sequence[Any]
    ) -> list[tuple[int, Sequence[Any], list[Any] | None]]:
        """Per buffer, not per record where it can: the keys in one pass of the user's
        selector, their channels computed once per distinct key (``_channels_of``); a buffer
        whose records all go to one channel is passed on as it is, not copied."""
        assert self.key_selector is not None
        key_of = self.key_selector
        keys = [key_of(record) for record in records]
        if not keys:
            return []
        channels = self._channels_of(keys)
        if isinstance(channels, int):  # a list as the hash edge always gave, not copied
            return [(channels, records if isinstance(records, list) else list(records), keys)]
        n = self.num_channels
        parts: list[list[Any]] = [[] for _ in range(n)]
        part_keys: list[list[Any]] = [[] for _ in range(n)]
        for record, key, channel in zip(records, keys, channels, strict=True):
            parts[channel].append(record)
            part_keys[channel].append(key)
        return [(c, p, part_keys[c]) for c, p in enumerate(parts) if p]

    def _channels_of(self, keys: list[Any]) -> int | Sequence[int]:
        """The channel of every key (an int: all of them go to that one). Keys of one type
        (not tuples, whose items' types matter) look their channel up in that type's cache,
        all at once (the keys of a buffer are mostly cached already: only a miss looks for
        the keys to add); keys of several types are checked against the type of the key a
        channel was cached for, since equal keys of other types (1, True, 1.0) hash apart, as
        in Java."""
        if self.num_channels == 1:
            try:
                # every key hashes, or the key_by fails here, naming the key (a tuple's hash
                # hashes each key once, without a set's inserts: a third of its cost)
                hash(tuple(keys))
            except TypeError:
                _raise_unhashable(keys)
            return 0
        kinds = set(map(type, keys))
        kind = kinds.pop() if len(kinds) == 1 else tuple
        if kind is tuple:
            return [self._channel_of_mixed(key) for key in keys]
        cache = self._channel_by_type.get(kind)
        if cache is None:
            cache = self._channel_by_type[kind] = {}
        if len(keys) == 1:
            lookup: Callable[[dict[Any, int]], Any] = lambda table: (table[keys[0]],)  # noqa: E731
        else:
            lookup = itemgetter(*keys)
        try:
            channels: tuple[int, ...] = lookup(cache)
        except KeyError:
            try:
                missing = set(keys).difference(cache)
            except TypeError:
                _raise_unhashable(keys)
            if len(cache) + len(missing) > _CACHED_KEYS:
                cache.clear()
                missing = set(keys)
            channel_for_key = self.channel_for_key
            for key in missing:
                cache[key] = channel_for_key(key)
            channels = lookup(cache)
        except TypeError:
            _raise_unhashable(keys)
        first = channels[0]
        return first if channels.count(first) == len(channels) else channels

    def _channel_of_mixed(self, key: Any) -> int:
        cache = self._channel_of_key
        try:
            stored, channel = cache[key]
        except KeyError:
            channel = self.channel_for_key(key)
            if len(cache) < _CACHED_KEYS:
                cache[key] = (key, channel)
            return channel
        except TypeError:
            _raise_unhashable([key])
        if stored is not key:
            kt = type(key)
            if type(stored) is not kt or (kt is tuple and not _same_types(stored, key)):
                return self.channel_for_key(key)
        return channel

    def _shuffle(
        self, records: Sequence[Any], timestamps: Sequence[int | None] | None
    ) -> list[tuple[int, list[Any], list[int | None]]]:
        assert self._random is not None
        n = self.num_channels
        pick = self._random.randrange
        parts: list[list[Any]] = [[] for _ in range(n)]
        stamps: list[list[int | None]] = [[] for _ in range(n)]
        for i, record in enumerate(records):
            channel = pick(n)
            parts[channel].append(record)
            if timestamps is not None:
                stamps[channel].append(timestamps[i])
        return [(c, p, stamps[c]) for c, p in enumerate(parts) if p]

    def _by_channel(
        self, records: Sequence[Any], timestamps: Sequence[int | None] | None
    ) -> list[tuple[int, list[Any], list[int | None]]]:
        """Rescale (round-robin over this subtask's targets) and custom partitioning: each
        record's channel in turn, the parts in channel order."""
        n = self.num_channels
        parts: list[list[Any]] = [[] for _ in range(n)]
        stamps: list[list[int | None]] = [[] for _ in range(n)]
        targets, custom = self._targets, self._custom
        for i, record in enumerate(records):
            if targets is not None:
                channel = targets[self._next]
                self._next = (self._next + 1) % len(targets)
            else:
                assert custom is not None
                channel = custom.channel(record, n)
            parts[channel].append(record)
            if timestamps is not None:
                stamps[channel].append(timestamps[i])
        return [(c, p, stamps[c]) for c, p in enumerate(parts) if p]

    def _split_by_key_timestamped(
        self, records: Sequence[Any], timestamps: Sequence[int | None]
    ) -> list[tuple[int, Sequence[Any], list[Any] | None, Sequence[int | None]]]:
        assert self.key_selector is not None
        key_of = self.key_selector
        keys = [key_of(record) for record in records]
        if not keys:
            return []
        channels = self._channels_of(keys)
        if isinstance(channels, int):
            whole = records if isinstance(records, list) else list(records)
            return [(channels, whole, keys, timestamps)]
        n = self.num_channels
        parts: list[list[Any]] = [[] for _ in range(n)]
        part_keys: list[list[Any]] = [[] for _ in range(n)]
        stamps: list[list[int | None]] = [[] for _ in range(n)]
        for record, key, ts, channel in zip(records, keys, timestamps, channels, strict=True):
            parts[channel].append(record)
            part_keys[channel].append(key)
            stamps[channel].append(ts)
        return [(c, p, part_keys[c], stamps[c]) for c, p in enumerate(parts) if p]

    def channel_for_key(self, key: Any) -> int:
        key_group = murmur_hash(self._key_hash(key)) % self.max_parallelism
        return key_group * self.num_channels // self.max_parallelism
