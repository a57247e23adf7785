"""A task's IO metrics, as Flink's REST API shows them per subtask (``read-records``,
``write-records``, ``write-bytes``, ``accumulated-backpressured-time``, ``-idle-time``,
``-busy-time``).

The task shell observes each mail it handles (when it started and ended, on the job clock,
and whether the task's output was back-pressured afterwards); the times are split as
Flink's task does: time spent handling mail is busy, time between mails is back-pressured
while the output has no credit and idle otherwise. Pure bookkeeping: no clock of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

JsonDict = dict[str, Any]


@dataclass(slots=True)
class TaskIOMetrics:
    records_in: int = 0
    records_out: int = 0
    bytes_out: int = 0
    backpressured_ms: int = 0
    idle_ms: int = 0
    busy_ms: int = 0
    #: job-clock ms the task started running and reached a terminal state (-1: not yet)
    started_at: int = -1
    ended_at: int = -1
    _last_end: int = -1
    _backpressured: bool = False

    def start(self, now: int) -> None:
        if self.started_at < 0:
            self.started_at = now
            self._last_end = now

    def observe(
        self, start: int, end: int, *, records_in: int, records_out: int, backpressured: bool
    ) -> None:
        """One mail handled from ``start`` to ``end``; the counters are the task's totals."""
        if self._last_end >= 0 and start > self._last_end:
            gap = start - self._last_end
            if self._backpressured:
                self.backpressured_ms += gap
            else:
                self.idle_ms += gap
        self.busy_ms += max(0, end - start)
        self._last_end = max(end, self._last_end)
        self._backpressured = backpressured
        self.records_in = records_in
        self.records_out = records_out

    def wrote(self, nbytes: int) -> None:
        self.bytes_out += nbytes

    def end(self, now: int) -> None:
        if self.ended_at < 0:
            self.observe(
                now,
                now,
                records_in=self.records_in,
                records_out=self.records_out,
                backpressured=False,
            )
            self.ended_at = now

    def snapshot(self, now: int) -> JsonDict:
        """The counters as of ``now`` (a back-pressured or idle stretch still going counts)."""
        backpressured, idle = self.backpressured_ms, self.idle_ms
        if self.ended_at < 0 and self._last_end >= 0 and now > self._last_end:
            if self._backpressured:
                backpressured += now - self._last_end
            else:
                idle += now - self._last_end
        return {
            "records_in": self.records_in,
            "records_out": self.records_out,
            "bytes_out": self.bytes_out,
            "backpressured_ms": backpressured,
            "idle_ms": idle,
            "busy_ms": self.busy_ms,
            "backpressured": self._backpressured and self.ended_at < 0,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
        }
