"""The gate finds its next input from a heap of channel heads (so a poll does not visit every
channel): it picks exactly what a scan over all channels picks, the head with the smallest
sequence number (the lowest channel on a tie), and it has input exactly when some channel can
be polled, whatever arrives, pauses after aligned barriers, resumes and priority items."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from runtime.barrier.gate import CheckpointedInputGate, make_gate
from runtime.barrier.mode import GateMode
from runtime.checkpoint import AlignmentType, CheckpointOptions
from runtime.network import Buffer, CheckpointBarrier, EndOfPartition

CHANNELS = 3
#: (kind, channel, checkpoint id): push a buffer, a barrier or an end of partition, or poll
OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["buffer", "buffer", "buffer", "barrier", "poll", "poll", "poll", "end"]),
        st.integers(0, CHANNELS - 1),
        st.integers(1, 2),
    ),
    max_size=60,
)


def scan(gate: CheckpointedInputGate) -> int | None:
    """What the gate picked before it kept a heap: every channel's head, the smallest first."""
    best, best_seq = None, 0
    for queue in gate.channels:
        head = queue.head()
        if head is not None and (best is None or head.seq < best_seq):
            best, best_seq = queue.index, head.seq
    return best


#: a channel paused behind its barrier holds buffers when the alignment ends: they come next
RESUMED = [
    ("barrier", 0, 1),
    ("buffer", 0, 1),
    ("buffer", 0, 1),
    ("buffer", 1, 1),
    ("poll", 0, 1),
    ("barrier", 1, 1),
    ("barrier", 2, 1),
    *[("poll", 0, 1)] * 6,
]


@settings(max_examples=300, deadline=None)
@example(mode=GateMode.ALIGNED, operations=RESUMED)
@given(
    mode=st.sampled_from([GateMode.ALIGNED, GateMode.ALIGNED_WITH_TIMEOUT, GateMode.UNALIGNED]),
    operations=OPERATIONS,
)
def test_the_next_head_is_the_one_a_scan_of_every_channel_finds(
    mode: GateMode, operations: list[tuple[str, int, int]]
) -> None:
    gate = make_gate(mode, CHANNELS, local_channels=frozenset({0}))
    ended: set[int] = set()
    alignment = AlignmentType.UNALIGNED if mode is GateMode.UNALIGNED else AlignmentType.ALIGNED
    options = CheckpointOptions(
        alignment=alignment,
        aligned_checkpoint_timeout=5 if mode is GateMode.ALIGNED_WITH_TIMEOUT else -1,
    )
    now = 0
    for kind, channel, checkpoint_id in operations:
        now += 1
        if kind == "poll":
            assert gate.has_input() == any(c.can_poll() for c in gate.channels)
            if gate.has_priority_event:
                gate.poll_next(now)
                continue
            expected = scan(gate)
            polled = gate.poll_next(now)
            assert (None if polled is None else polled.channel) == expected
        elif channel not in ended:
            if kind == "buffer":
                gate.push(channel, Buffer([now], 8))
            elif kind == "barrier":
                gate.push(
                    channel,
                    CheckpointBarrier(checkpoint_id=checkpoint_id, timestamp=now, options=options),
                )
            else:
                gate.push(channel, EndOfPartition())
                ended.add(channel)
        assert gate.has_input() == any(c.can_poll() for c in gate.channels)
