"""Hypothesis strategies for one task's input gate: per-channel streams of data, barriers with
increasing ids, cancel markers and end of partition, and an interleaving of their arrivals
with polls (and clock advances).

A generated run *is* a conformance scenario: ``GateRun.script()`` renders it in the ``.scn``
format, so a failing property prints a file that ``ckptsim conformance`` replays exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from runtime.conformance.gate_harness import GateHarness
from runtime.conformance.scenario import Step, parse


@dataclass
class GateRun:
    mode: str
    channels: int
    lines: list[str]
    eop_counts_as_aligned: bool = True
    streams: list[list[str]] = field(default_factory=list)

    def script(self, facts: tuple[str, ...] = ()) -> str:
        header = [
            "@name property-counterexample",
            "@origin Flink-style property test (generated)",
            "@kind gate",
            f"@mode {self.mode}",
            f"@channels {self.channels}",
            f"@eop_counts_as_aligned {'true' if self.eop_counts_as_aligned else 'false'}",
            "",
        ]
        return "\n".join([*header, *self.lines, *facts]) + "\n"

    def execute(self, after_step: object = None) -> GateHarness:
        """Run the script through the real gate; ``after_step(harness)`` after every line."""
        scenario = parse(self.script(), "<property>")
        harness = GateHarness(scenario)
        for step in scenario.steps:
            harness.act(step)
            if callable(after_step):
                after_step(harness)
        return harness


def _barrier(mode: str, checkpoint_id: int, timeout: int) -> str:
    if mode == "unaligned":
        return f"B{checkpoint_id}!"
    if mode == "aligned_with_timeout":
        return f"B{checkpoint_id}~{timeout}@{10 * (checkpoint_id - 1)}"
    return f"B{checkpoint_id}"


@st.composite
def gate_runs(
    draw: st.DrawFn, mode: str, max_channels: int = 4, max_checkpoints: int = 4
) -> GateRun:
    channels = draw(st.integers(1, max_channels), label="channels")
    checkpoints = draw(st.integers(1, max_checkpoints), label="checkpoints")
    timeout = draw(st.integers(1, 40), label="aligned checkpoint timeout")
    fate = st.sampled_from(["barrier"] * 6 + ["cancel", "skip"])
    streams: list[list[str]] = []
    for _ in range(channels):
        tokens: list[str] = []
        for checkpoint_id in range(1, checkpoints + 1):
            tokens += ["d"] * draw(st.integers(0, 3))
            what = draw(fate)
            if what == "barrier":
                tokens.append(_barrier(mode, checkpoint_id, timeout))
            elif what == "cancel":
                tokens.append(f"C{checkpoint_id}")
        tokens += ["d"] * draw(st.integers(0, 3))
        if draw(st.booleans()):
            tokens.append("E")
        streams.append(tokens)
    eop_flag = draw(st.booleans(), label="eop counts as aligned")
    run = GateRun(mode, channels, [], eop_flag, streams)
    # the interleaving is drawn against a live gate, so a poll is only drawn when possible
    harness = GateHarness(parse(run.script(), "<property>"))
    cursors = [0] * channels

    def add(line: str) -> None:
        run.lines.append(line)
        harness.act(Step(len(run.lines), False, tuple(line.split())))

    add("hold")
    while True:
        open_channels = [c for c in range(channels) if cursors[c] < len(streams[c])]
        actions = ["push"] * 3 if open_channels else []
        if harness.gate.replay_pending or harness.gate.pollable():
            actions += ["poll"] * 2
        if mode == "aligned_with_timeout":
            actions.append("advance")
        if not actions or (not open_channels and not draw(st.booleans(), label="go on")):
            break
        action = draw(st.sampled_from(actions))
        if action == "push":
            c = draw(st.sampled_from(open_channels))
            add(f"ch{c} {streams[c][cursors[c]]}")
            cursors[c] += 1
        elif action == "poll":
            add("poll")
        else:
            add(f"advance {draw(st.integers(1, 25))}")
    for c in range(channels):  # whatever was not pushed arrives now
        for token in streams[c][cursors[c] :]:
            add(f"ch{c} {token}")
    add("drain")
    if mode == "aligned_with_timeout":
        add("advance 1000")
    return run
