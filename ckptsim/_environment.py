"""``StreamExecutionEnvironment``: the DataStream API's environment, run on Pykka actors."""

from __future__ import annotations

from typing import Any

from actors.launcher import execute_environment
from runtime.datastream import DataStream, StreamEnvironment
from runtime.job import JobResult


class StreamExecutionEnvironment(StreamEnvironment):
    """The environment a job is built in and run from: settings, sources, the stream graph;
    ``execute`` runs the job on Pykka actors (``runtime="threaded"``, the default, or
    ``"simulation"``) and returns its ``JobResult``.

    Under ``ckptsim run`` the command line's ``-D`` settings and ``--parallelism`` apply on
    top of what the script configured.
    """

    executor = staticmethod(execute_environment)

    def execute(self, name: str = "ckptsim job", **options: Any) -> JobResult:
        """Run the job built so far, wait until it ends, and return its ``JobResult`` (a job
        that fails returns one too, with ``status`` FAILED and its ``failures``). Every actor of
        the job is stopped when this returns. Keyword options:

        - ``runtime``: ``"threaded"`` (default: a thread per task, the wall clock) or
          ``"simulation"`` (one thread, virtual time, a seeded schedule);
        - ``seed``: seeds every random choice and, on the simulation, the schedule (default:
          ``ckptsim.seed``, 0); ``schedule``: the simulation's first scheduling choices;
        - ``timeout``: seconds (virtual seconds on the simulation) after which the job is
          cancelled;
        - ``faults``: faults to inject (``FailTask``, ``CrashTask``, ...; see also
          ``inject_faults`` and the ``ckptsim.faults`` setting);
        - ``trace``: a ``TraceWriter`` or ``TraceCollector`` that gets every protocol event
          of the run, however logging is configured (``ckptsim check`` reads a written trace);
        - ``progress``: a function called with a snapshot of the running job every
          ``progress_interval`` seconds of wall time (default 0.5): a dict with ``status``,
          ``records`` (read by the sources), ``counts`` (the checkpoint counts: ``completed``,
          ``failed``, ``in_progress``, ...), ``backpressured`` (task names), ``tasks``,
          ``waiting_for_final_checkpoint``, ``next_trigger_in_ms``, and on the simulation
          ``virtual_ms``.

        Ctrl-C cancels the job, stops its actors and removes its temporary files, then raises
        ``KeyboardInterrupt`` whose ``result`` is the cancelled job's. Under ``ckptsim run``,
        the command line's settings and options apply on top of these."""
        return super().execute(name, **options)

    def from_spark(self, data: Any, **options: Any) -> DataStream:
        """A source reading a Spark DataFrame or RDD, one partition per split, with replayable
        (partition, row) positions (``ckptsim.from_spark``; needs PySpark and Java)."""
        from spark_bridge import from_spark  # noqa: PLC0415 - Spark only when asked for

        stream: DataStream = from_spark(self, data, **options)
        return stream


__all__ = ["StreamExecutionEnvironment"]
