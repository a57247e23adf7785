"""Partitioners: which output channel of an edge each record goes to, and the size estimate
buffers are cut by."""

from __future__ import annotations

import pytest

from runtime.datastream import StreamEnvironment
from runtime.partition import (
    ChannelSelector,
    CustomPartitioning,
    HashingKeySelector,
    Partitioner,
    RescaleSubsets,
    estimate_size,
    rescale_targets,
)
from runtime.state import (
    KeyedStateBackend,
    key_group_for,
    murmur_hash,
    operator_index_for_key_group,
)


def test_forward_keeps_everything_on_its_one_channel() -> None:
    assert ChannelSelector(Partitioner.FORWARD, 1).split([1, 2]) == [(0, [1, 2], None)]
    with pytest.raises(ValueError, match="exactly one channel"):
        ChannelSelector(Partitioner.FORWARD, 2)


def test_rebalance_deals_round_robin_from_the_subtask_index_and_goes_on_across_batches() -> None:
    selector = ChannelSelector(Partitioner.REBALANCE, 3, start=1)
    assert selector.split([10, 11, 12, 13]) == [
        (0, [12], None),
        (1, [10, 13], None),
        (2, [11], None),
    ]
    # the next batch starts where the last one stopped (channel 2)
    assert selector.split([14]) == [(2, [14], None)]


def test_broadcast_sends_every_record_to_every_channel() -> None:
    parts = ChannelSelector(Partitioner.BROADCAST, 2).split([1, 2])
    assert parts == [(0, [1, 2], None), (1, [1, 2], None)]


def test_hash_routes_by_key_group_as_flink_and_ships_the_keys() -> None:
    selector = ChannelSelector(
        Partitioner.HASH, 4, key_selector=lambda r: r[0], max_parallelism=128
    )
    records = [(f"k{n}", n) for n in range(50)]
    for channel, part, keys in selector.split(records):
        assert keys == [r[0] for r in part]
        for key in keys:
            expected = operator_index_for_key_group(key_group_for(key, 128), 4, 128)
            assert channel == expected


def test_hash_needs_a_key_selector_and_a_hashable_key() -> None:
    with pytest.raises(ValueError, match="needs a key selector"):
        ChannelSelector(Partitioner.HASH, 2)
    selector = ChannelSelector(Partitioner.HASH, 2, key_selector=lambda r: [r])
    with pytest.raises(TypeError, match="unhashable key"):
        selector.split([1])


def test_only_forward_edges_are_not_all_to_all() -> None:
    assert [p.all_to_all for p in Partitioner] == [
        p is not Partitioner.FORWARD for p in Partitioner
    ]


def test_estimate_size_samples_records_and_trusts_an_arrow_batch() -> None:
    assert estimate_size([]) == 0
    small, large = estimate_size([1] * 100), estimate_size(["x" * 100] * 100)
    assert 0 < small < large
    assert estimate_size(["x" * 100] * 200) == 2 * large

    class Batch(list[int]):
        nbytes = 4096

    assert estimate_size(Batch([1, 2])) == 4096


def test_a_key_hash_of_the_stream_routes_and_groups_keys_alike() -> None:
    """``key_by(..., key_hash=...)``: the partitioner and the keyed state backend both use the
    stream's own hash, so a key's state sits in the key group of the subtask it was routed to."""

    def java_like(key: object) -> int:
        return 7 if key == "a" else 1_000_003

    selector = HashingKeySelector(lambda r: r[0], java_like)
    routed = ChannelSelector(Partitioner.HASH, 4, key_selector=selector, max_parallelism=128)
    default = ChannelSelector(Partitioner.HASH, 4, key_selector=lambda r: r[0], max_parallelism=128)
    for key, code in (("a", 7), ("b", 1_000_003)):
        group = murmur_hash(code) % 128
        assert routed.channel_for_key(key) == operator_index_for_key_group(group, 4, 128)
        assert key_group_for(key, 128, java_like) == group
    # the default hash spreads these keys; the stream's hash puts every key but "a" together
    keys = [f"k{n}" for n in range(20)]
    assert len({routed.channel_for_key(k) for k in keys}) == 1
    assert len({default.channel_for_key(k) for k in keys}) > 1
    backend = KeyedStateBackend(128, java_like)
    backend.current_key = "b"
    backend.value_state("v").update(1)
    groups = backend.snapshot()["states"]["v"]["key_groups"]
    assert list(groups) == [str(murmur_hash(1_000_003) % 128)]


def test_shuffle_sends_each_record_to_a_random_channel_the_same_way_every_run() -> None:
    records = list(range(1000))
    runs = [ChannelSelector(Partitioner.SHUFFLE, 4, start=1).split(records) for _ in range(2)]
    assert runs[0] == runs[1]  # seeded per subtask: replayable
    assert sorted(r for _, part, _ in runs[0] for r in part) == records
    assert all(200 < len(part) < 300 for _, part, _ in runs[0])
    other = ChannelSelector(Partitioner.SHUFFLE, 4, start=2).split(records)
    assert other != runs[0]


def test_equal_keys_of_other_types_are_routed_by_their_own_hash_whatever_came_first() -> None:
    """1, True and 1.0 are equal in Python but hash apart (as Long, Boolean and Double in
    Java): the routing cache must not send one where the other went."""
    for first, then in [(True, 1), (1, True), (1, 1.0), ((1, "a"), (True, "a"))]:
        fresh = ChannelSelector(Partitioner.HASH, 64, key_selector=lambda r: r)
        warmed = ChannelSelector(Partitioner.HASH, 64, key_selector=lambda r: r)
        warmed.split([first])
        assert warmed.split([then]) == fresh.split([then]), (first, then)


def test_equal_keys_of_other_types_in_one_buffer_are_routed_each_by_its_own_hash() -> None:
    """A buffer mixing 1, True, 1.0 and tuples of them: every record goes where it would
    alone, whichever type's channel was cached first."""
    keys = [1, True, 1.0, (1, "a"), (True, "a"), 2, "x", 1]
    alone = ChannelSelector(Partitioner.HASH, 64, key_selector=lambda r: r)
    where = {repr(k): alone.channel_for_key(k) for k in keys}
    assert len(set(where.values())) > 2
    selector = ChannelSelector(Partitioner.HASH, 64, key_selector=lambda r: r)
    for buffer in ([1, 2, 1], keys, [True, True], [1.0], keys[::-1]):
        for channel, part, part_keys in selector.split(buffer):
            assert part_keys == part
            assert all(where[repr(k)] == channel for k in part), (buffer, channel, part)
        stamped = selector.split_timestamped(buffer, list(range(len(buffer))))
        assert [(c, p, k) for c, p, k, _ in stamped] == selector.split(buffer)
        for _, part, _, stamps in stamped:  # the timestamps were the records' positions
            assert None not in stamps
            assert [buffer[t] for t in stamps if t is not None] == part


def test_a_buffer_whose_records_go_to_one_channel_is_not_copied() -> None:
    records = [("k", n) for n in range(100)]
    for channels in (1, 4):
        selector = ChannelSelector(Partitioner.HASH, channels, key_selector=lambda r: r[0])
        [(channel, part, keys)] = selector.split(records)
        assert part is records and keys == ["k"] * 100
        assert channel == selector.channel_for_key("k")
    spread = ChannelSelector(Partitioner.HASH, 4, key_selector=lambda r: r[1])
    parts = spread.split(records)
    assert len(parts) > 1 and sorted(r for _, p, _ in parts for r in p) == records


def test_a_full_routing_cache_starts_over_and_still_routes_every_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cache of keys' channels is bounded: a buffer that would overflow it clears it and
    caches its own keys, those it had cached before included."""
    monkeypatch.setattr("runtime.partition._CACHED_KEYS", 4)
    fresh = ChannelSelector(Partitioner.HASH, 4, key_selector=lambda r: r)
    selector = ChannelSelector(Partitioner.HASH, 4, key_selector=lambda r: r)
    for buffer in ([1, 2, 3], [1, 2, 3, 4, 5], [5, 6], [1]):
        assert selector.split(buffer) == fresh.split(buffer), buffer


def test_an_unhashable_key_fails_on_every_path() -> None:
    for channels in (1, 4):
        for keys in ([[1]], [1, [1]], [(1,), ([1],)]):
            selector = ChannelSelector(Partitioner.HASH, channels, key_selector=lambda r: r)
            with pytest.raises(
                TypeError, match=r"unhashable key \[1\] \(list\)|unhashable key \(\[1\],\)"
            ):
                selector.split(keys)
            with pytest.raises(TypeError, match="unhashable key"):
                selector.split_timestamped(keys, [None] * len(keys))


@pytest.mark.parametrize(
    ("upstream", "downstream", "subsets"),
    [
        (2, 2, [[0], [1]]),
        (2, 4, [[0, 1], [2, 3]]),
        (4, 2, [[0], [0], [1], [1]]),
        (2, 3, [[0, 1], [2]]),
        (3, 2, [[0], [1], [1]]),
        (3, 5, [[0, 1], [2, 3], [4]]),
        (1, 3, [[0, 1, 2]]),
    ],
)
def test_rescale_subsets_are_flinks_pointwise_distribution(
    upstream: int, downstream: int, subsets: list[list[int]]
) -> None:
    """Each downstream subtask is fed by a contiguous run of upstream subtasks, or each
    upstream subtask feeds a contiguous run of downstream ones (Flink's
    ``VertexInputInfoComputationUtils.computeVertexInputInfoForPointwise``)."""
    assert [rescale_targets(upstream, downstream, u) for u in range(upstream)] == subsets
    # every downstream subtask is fed
    assert {d for subset in subsets for d in subset} == set(range(downstream))


def test_rescale_deals_round_robin_over_the_subtasks_subset_from_its_first() -> None:
    selector = ChannelSelector(Partitioner.RESCALE, 4, key_selector=RescaleSubsets(2), start=1)
    assert selector.split([10, 11, 12]) == [(2, [10, 12], None), (3, [11], None)]
    assert selector.split([13]) == [(3, [13], None)]  # goes on where the batch stopped
    stamped = ChannelSelector(Partitioner.RESCALE, 2, key_selector=RescaleSubsets(4), start=3)
    assert stamped.split_timestamped([1, 2], [5, 6]) == [(1, [1, 2], None, [5, 6])]


def test_custom_partitioning_asks_the_partitioner_for_each_records_channel() -> None:
    custom = CustomPartitioning(lambda key, n: len(key) % n, lambda record: record[0])
    selector = ChannelSelector(Partitioner.CUSTOM, 3, key_selector=custom)
    records = [("a", 1), ("bb", 2), ("ccc", 3), ("dddd", 4)]
    assert selector.split(records) == [
        (0, [("ccc", 3)], None),
        (1, [("a", 1), ("dddd", 4)], None),
        (2, [("bb", 2)], None),
    ]
    assert selector.split_timestamped(records[:1], [7]) == [(1, [("a", 1)], None, [7])]
    with pytest.raises(ValueError, match="needs a CustomPartitioning"):
        ChannelSelector(Partitioner.CUSTOM, 3, key_selector=lambda r: r)
    wrong = ChannelSelector(
        Partitioner.CUSTOM, 3, key_selector=CustomPartitioning(lambda k, n: n, lambda r: r)
    )
    with pytest.raises(ValueError, match=r"returned 3 for 'x'.*from 0 to 2"):
        wrong.split(["x"])


def test_a_rescale_edge_gets_its_upstream_parallelism_when_the_job_graph_is_built() -> None:
    env = StreamEnvironment(2)
    env.from_collection([1, 2, 3, 4], parallelism=2).rescale().map(lambda x: x).set_parallelism(
        4
    ).collect("out")
    job = env.build_job_graph()
    (edge,) = [e for e in job.edges if e.partitioner is Partitioner.RESCALE]
    assert isinstance(edge.key_selector, RescaleSubsets)
    assert edge.key_selector.targets(1, 4) == [2, 3]
