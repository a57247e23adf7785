"""The coordinator state machine of ``test_coordinator_machine`` with a storage that answers
late, in any order, or fails: every ``InitializeLocation`` / ``FinalizeCheckpoint`` waits until
a rule delivers its completion (or failure), interleaved with requests, acknowledgements,
declines, task failures, status changes and time, as the actor's background work can be.

The invariants are the base machine's, with the min pause measured from where a periodic
trigger starts (when it asks for its location), plus: one location is made at a time; a
location answered for a checkpoint nobody waits for any more is deleted, and never while the
storage still works in it; no checkpoint completes without its metadata.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from runtime.effects import (
    CheckpointCompleted,
    DiscardLocation,
    FinalizeCheckpoint,
    InitializeLocation,
)
from runtime.messages import (
    CheckpointFinalizationFailed,
    CheckpointFinalized,
    CoordinatorMessage,
    LocationInitializationFailed,
    LocationInitialized,
)
from tests.properties.test_coordinator_machine import CoordinatorMachine


class LateStorageMachine(CoordinatorMachine):
    def _late(self) -> dict[str, Any]:
        if "_late_state" not in self.__dict__:
            self.__dict__["_late_state"] = {
                "work": [],  # storage effects not answered yet
                "starts": {},  # checkpoint id -> (time, step) its trigger asked for a location
                "finalized": set(),  # checkpoint ids whose metadata the storage wrote
                "discarded": [],  # DiscardLocation ids
            }
        return self.__dict__["_late_state"]

    def _send(self, msg: CoordinatorMessage) -> None:
        late = self._late()
        for effect in self.coordinator.handle(msg, self.now):
            self._observe(effect)
            match effect:
                case InitializeLocation(checkpoint_id=cid):
                    late["work"].append(effect)
                    late["starts"][cid] = (self.now, next(self.steps))
                case FinalizeCheckpoint():
                    late["work"].append(effect)
                case DiscardLocation(checkpoint_id=cid):
                    busy = [e for e in late["work"] if _checkpoint_of(e) == cid]
                    assert not busy, (
                        f"checkpoint {cid}'s location deleted while the storage works in it"
                    )
                    late["discarded"].append(cid)
                case CheckpointCompleted(checkpoint=checkpoint):
                    assert checkpoint.checkpoint_id in late["finalized"], (
                        f"checkpoint {checkpoint.checkpoint_id} completed without its metadata"
                    )
                case _:
                    pass

    @precondition(lambda self: bool(self.__dict__.get("_late_state", {}).get("work")))
    @rule(data=st.data(), fail=st.booleans())
    def storage_answers(self, data: st.DataObject, fail: bool) -> None:
        late = self._late()
        effect = data.draw(st.sampled_from(late["work"]))
        late["work"].remove(effect)
        answer: CoordinatorMessage
        if isinstance(effect, InitializeLocation):
            cid = effect.checkpoint_id
            answer = (
                LocationInitializationFailed(checkpoint_id=cid, error="disk full")
                if fail
                else LocationInitialized(checkpoint_id=cid, location=None)
            )
        else:
            cid = effect.checkpoint.checkpoint_id
            if fail:
                answer = CheckpointFinalizationFailed(checkpoint_id=cid, error="disk full")
            else:
                late["finalized"].add(cid)
                answer = CheckpointFinalized(checkpoint_id=cid, external_path=None)
        waited = cid in self.coordinator.pending or (
            self.coordinator.is_triggering and isinstance(effect, InitializeLocation)
        )
        before = len(late["discarded"])
        self._send(answer)
        if not fail and not waited:
            assert late["discarded"][before:] == [cid], (
                f"what the storage made for checkpoint {cid}, which nobody waits for, must go"
            )

    @invariant()
    def periodic_checkpoints_respect_min_pause(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        starts = self._late()["starts"]
        for checkpoint_id, (request_id, _, _) in self.triggered.items():
            if request_id in self.periodic_requests or request_id < 0:
                if checkpoint_id in self.savepoints:
                    continue
                started, step = starts[checkpoint_id]
                before = [t for _, t, s in self.completions if s < step]
                if before:
                    last = max(before)
                    assert started - last >= self.config.min_pause, (
                        f"periodic checkpoint {checkpoint_id} started at {started} ms, "
                        f"last completion {last} ms"
                    )

    @invariant()
    def one_location_at_a_time(self) -> None:
        """Flink's ``isTriggering``: while a location is being made no other trigger starts."""
        if not hasattr(self, "coordinator"):
            return
        asked = [e for e in self._late()["work"] if isinstance(e, InitializeLocation)]
        assert len(asked) == (1 if self.coordinator.is_triggering else 0)


def _checkpoint_of(effect: InitializeLocation | FinalizeCheckpoint) -> int:
    if isinstance(effect, InitializeLocation):
        return effect.checkpoint_id
    return effect.checkpoint.checkpoint_id


TestLateStorageMachine = LateStorageMachine.TestCase
