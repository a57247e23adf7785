"""``pyflink.datastream.StreamExecutionEnvironment``: PyFlink's environment on ckptsim.

It wraps ckptsim's own environment (``ckptsim.StreamExecutionEnvironment``): ``execute()``
runs the job on ckptsim's actors, with ``ckptsim run``'s ``-D`` settings, ``--simulate``,
``--web`` and faults. As Flink's:

- the default parallelism is the number of CPU cores (Flink's local environment), unless the
  program sets one (``set_parallelism``, or ``parallelism.default`` in its configuration),
  which wins over ``ckptsim run -p`` / ``-D parallelism.default`` (as it wins over
  ``flink run -p``); the command line's other settings are where the program starts from,
  and what the program sets wins over them (``execution.program-config.enabled: false``
  forbids it that);
- ``execute()`` runs what the program built since the previous ``execute()`` (the operators
  added since, with the upstream operators they read from), and raises when the job fails;
- ``from_collection`` is a source of parallelism 1.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from typing import Any

from actors import session as sessions
from actors.launcher import runtime_name
from ckptsim._environment import StreamExecutionEnvironment as CkptsimEnvironment
from ckptsim._errors import JobFailed
from ckptsim.pyflink._unsupported import CONNECTORS, STATE_BACKEND, ignored, missing, unsupported
from ckptsim.pyflink.common.configuration import Configuration
from ckptsim.pyflink.common.execution_config import ExecutionConfig
from ckptsim.pyflink.common.job_client import JobClient
from ckptsim.pyflink.common.job_execution_result import JobExecutionResult
from ckptsim.pyflink.common.time import millis
from ckptsim.pyflink.common.typeinfo import TypeInformation, converter
from ckptsim.pyflink.datastream._plan import PyFlinkGraph, batch_parallelism, jackson
from ckptsim.pyflink.datastream.checkpoint_config import CheckpointConfig
from ckptsim.pyflink.datastream.data_stream import (
    Converter,
    DataStream,
    ForwardFed,
    PartitionTagger,
)
from ckptsim.pyflink.datastream.execution_mode import RuntimeExecutionMode
from runtime import datastream as ck
from runtime.config import CheckpointingMode, ConfigError, canonical_key, flink_string
from runtime.config import Configuration as CkptsimConfiguration
from runtime.descriptors import SourceDescriptor
from runtime.graph import GraphError, StreamGraph, StreamNode
from runtime.operators import CollectionReader, OperatorContext, SourceReader
from runtime.partition import Partitioner
from runtime.watermarks import WatermarkStrategy

_REPORTER = (
    "give the Prometheus reporter's keys with -D on the ckptsim run command line (docs/metrics.md)"
)
_WORKERS = "ckptsim runs the job's Python code in its own process (no JVM, no Python workers)"
#: Flink settings that tune only its JVM, its Python workers or its Java serializers (not
#: ``taskmanager.numberOfTaskSlots``: the processes runtime's subtasks per TaskManager)
_IGNORED_KEYS = (
    "python.",
    "pipeline.jars",
    "pipeline.classpaths",
    "pipeline.object-reuse",
    "pipeline.generic-types",
    "pipeline.force-kryo",
    "pipeline.force-avro",
    "pipeline.closure-cleaner-level",
    "pipeline.auto-generate-uids",
    "pipeline.global-job-parameters",
    "pipeline.operator-chaining.chain-operators-with-different-max-parallelism",
    "taskmanager.memory.process.size",
    "taskmanager.memory.managed",
    "jobmanager.memory.",
    "env.java.",
    "classloader.",
    "metrics.",
    "table.",
)
#: directories, which PyFlink programs write as file:// URIs
_DIRECTORY_KEYS = (
    "execution.checkpointing.dir",
    "execution.checkpointing.savepoint-dir",
    "state.checkpoints.dir",
    "state.savepoints.dir",
)
#: state backend settings beyond the common ones ``runtime.config`` lists (all inert)
_STATE_BACKEND_KEYS = ("state.backend.", "state.changelog.", "dstl.")


_UNSET = object()


class _Environment(CkptsimEnvironment):
    """ckptsim's environment with Flink's precedence for the default parallelism: the
    program's, else the configuration's (``-p``, ``-D``), else the CPU cores. The command
    line's settings are where it starts from, not on top of the program's."""

    command_line_on_top = False

    def __init__(self) -> None:
        super().__init__()
        self.program_parallelism: int | None = None
        self.local_parallelism = os.cpu_count() or 1

    @property
    def parallelism(self) -> int:
        if self.program_parallelism is not None:
            return self.program_parallelism
        if self.configuration.is_set("parallelism.default"):
            value: int = self.configuration["parallelism.default"]
            return value
        return self.local_parallelism


def _check_parallelism(parallelism: Any, what: str = "parallelism") -> int:
    if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
        raise GraphError(f"{what} must be a whole number of at least 1, got {parallelism!r}")
    return parallelism


class StreamExecutionEnvironment:
    """The context a PyFlink program builds and runs its jobs in."""

    def __init__(self, j_stream_execution_environment: Any = None, serializer: Any = None) -> None:
        self._env = _Environment()
        #: what the program starts from under ``ckptsim run`` (its -D, -p and config.yaml),
        #: as Flink's context environment starts from the cluster's configuration: the
        #: program's own settings win over it (None outside ``ckptsim run``)
        self._cluster: CkptsimConfiguration | None = None
        self._max_parallelism_set = False  # get_max_parallelism: -1 until set
        active = sessions.current()
        if active is not None:  # ckptsim run's -D and -p, as flink run's are in the program's
            self._env.configuration.override(active.settings)
            self._cluster = CkptsimConfiguration(active.settings)
        self._config: ExecutionConfig | None = None
        self._python_chaining = True
        self._job_name: str | None = None
        #: nodes that are PyFlink's non-keyed Python operators (it fuses them with the
        #: Python operator before them), and the type conversions after operators
        self._python_nodes: set[int] = set()
        self._converters: dict[int, Converter] = {}
        #: partition_custom's tagging operators, and the operators that take records back out
        #: of a keyed or custom-partitioned stream (PyFlink aligns them with the next operator)
        self._partition_taggers: dict[int, PartitionTagger] = {}
        self._values_nodes: set[int] = set()
        #: cached streams (``DataStream.cache()``) by the node that produces them
        self._caches: dict[int, _Cache] = {}
        #: what PyFlink's stream graph has that ckptsim's does not say (``_plan``): the
        #: watermark operators of ``from_source`` (part of the source in Flink), the
        #: ``assign_timestamps_and_watermarks`` operators (True: a Python timestamp assigner),
        #: the operators whose parallelism the program set, the sinks' names as given; the
        #: ``Remove-Timestamp`` operators after a Python timestamp assigner; by a file sink's
        #: node id, the operator that makes its records' lines (part of the sink in Flink)
        self._source_watermarks: set[int] = set()
        self._timestamp_nodes: dict[int, bool] = {}
        self._timestamp_removers: set[int] = set()
        self._sink_lines: dict[int, StreamNode] = {}
        self._pinned: set[int] = set()
        self._sink_bases: dict[str, str] = {}
        #: where each key_by's operator is in the order the program made operators (PyFlink
        #: makes it at the key_by() call), by the id of the key selector its edges carry
        self._key_by_ranks: dict[int, float] = {}
        #: the Python operators PyFlink feeds from a union by FORWARD edges
        self._forward_fed: list[ForwardFed] = []
        #: operators up to this node id ran in an earlier execute()
        self._executed = 0

    @staticmethod
    def get_execution_environment(
        configuration: Configuration | None = None,
    ) -> StreamExecutionEnvironment:
        env = StreamExecutionEnvironment()
        if configuration is not None:
            env.configure(configuration)
        return env

    # --- settings ------------------------------------------------------------------------------

    def _setting(self, key: str, default: Any = None) -> Any:
        return self._env.configuration[key] if self._env.configuration.is_set(key) else default

    def _configure(self, key: str, value: Any) -> None:
        """Set one Flink key (PyFlink's Configuration holds strings)."""
        if key == "parallelism.default":
            self.set_parallelism(int(value))
            return
        if key == "execution.runtime-mode":
            self.set_runtime_mode(RuntimeExecutionMode[str(value).strip().upper()])
            return
        if key == "python.operator-chaining.enabled":
            self._python_chaining = str(value).strip().lower() == "true"
            return
        if key == "pipeline.name":
            self._job_name = str(value)
            return
        if key == "pipeline.max-parallelism" and str(value).strip() != "-1":
            self.set_max_parallelism(int(value))
            return
        if key.startswith("metrics.reporter."):  # the reporter starts before the program runs
            ignored(f"configuration key {key}", _REPORTER)
            return
        if key in _DIRECTORY_KEYS:
            value = _local(str(value))
        if key not in self._env.configuration:  # neither a key nor a deprecated key of ours
            if key.startswith(_IGNORED_KEYS):
                ignored(f"configuration key {key}", _WORKERS)
                return
            if key.startswith(_STATE_BACKEND_KEYS):
                ignored(f"configuration key {key}", STATE_BACKEND)
                return
        self._env.configuration.set(key, value)

    def configure(self, configuration: Configuration) -> None:
        for key, value in configuration.to_dict().items():
            self._configure(key, value)

    def get_config(self) -> ExecutionConfig:
        if self._config is None:
            self._config = ExecutionConfig(self)
        return self._config

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        self._env.program_parallelism = _check_parallelism(parallelism)
        return self

    def get_parallelism(self) -> int:
        return self._env.parallelism

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        self._env.set_max_parallelism(_check_parallelism(max_parallelism, "max parallelism"))
        self._max_parallelism_set = True
        return self

    def get_max_parallelism(self) -> int:
        """The max parallelism the program set; -1 (Flink's "not set") when it set none, where
        ckptsim's jobs take 128 key groups (what Flink derives for parallelism up to 85)."""
        if self._max_parallelism_set:
            return self._env.max_parallelism
        value: int = self._env.configuration["pipeline.max-parallelism"]  # -D's, or -1
        return value

    def get_default_local_parallelism(self) -> int:
        return self._env.local_parallelism

    def set_default_local_parallelism(self, parallelism: int) -> None:
        self._env.local_parallelism = _check_parallelism(parallelism)

    def set_runtime_mode(self, execution_mode: RuntimeExecutionMode) -> StreamExecutionEnvironment:
        self._env.configuration.set(
            "execution.runtime-mode", RuntimeExecutionMode(execution_mode).name
        )
        return self

    def disable_operator_chaining(self) -> StreamExecutionEnvironment:
        self._env.disable_operator_chaining()
        return self

    def is_chaining_enabled(self) -> bool:
        return self._env.chaining

    def is_chaining_of_operators_with_different_max_parallelism_enabled(self) -> bool:
        return True

    def get_checkpoint_config(self) -> CheckpointConfig:
        return CheckpointConfig(self._env.configuration)

    def enable_checkpointing(
        self, interval: int, mode: CheckpointingMode | None = None
    ) -> StreamExecutionEnvironment:
        self._env.configuration.set("execution.checkpointing.interval", millis(interval))
        if mode is not None:
            self._env.configuration.set(
                "execution.checkpointing.mode", CheckpointingMode(mode).value
            )
        return self

    def get_checkpoint_interval(self) -> int:
        return self.get_checkpoint_config().get_checkpoint_interval()

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return self.get_checkpoint_config().get_checkpointing_mode()

    get_checkpointing_consistency_mode = get_checkpointing_mode

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return self.get_checkpoint_config().is_unaligned_checkpoints_enabled()

    def is_force_unaligned_checkpoints(self) -> bool:
        return self.get_checkpoint_config().is_force_unaligned_checkpoints()

    def set_default_savepoint_directory(self, directory: str) -> StreamExecutionEnvironment:
        self._env.configuration.set("execution.checkpointing.savepoint-dir", _local(directory))
        return self

    def get_default_savepoint_directory(self) -> str | None:
        value: str | None = self._setting("execution.checkpointing.savepoint-dir")
        return value

    def enable_changelog_state_backend(self, enabled: bool) -> StreamExecutionEnvironment:
        ignored("enable_changelog_state_backend()", "snapshots are always full")
        return self

    def is_changelog_state_backend_enabled(self) -> bool | None:
        return None

    def set_buffer_timeout(self, timeout_millis: int) -> StreamExecutionEnvironment:
        """As PyFlink's: how often partly filled output buffers are flushed, in ms (0: after
        every record; -1: only full buffers), ``execution.buffer-timeout.*``."""
        if (
            isinstance(timeout_millis, bool)
            or not isinstance(timeout_millis, int)
            or (timeout_millis < -1)
        ):
            raise ValueError(
                f"set_buffer_timeout() takes -1 (flush only full buffers), 0 or a positive "
                f"number of milliseconds, not {timeout_millis!r}"
            )
        conf = self._env.configuration
        # as Flink 2.3: -1 turns the flusher off; another value sets only the interval (so
        # after a -1 the flusher stays off, and get_buffer_timeout() says -1)
        if timeout_millis == -1:
            conf.set("execution.buffer-timeout.enabled", False)
        else:
            conf.set("execution.buffer-timeout.interval", timeout_millis)
        return self

    def get_buffer_timeout(self) -> int:
        conf = self._env.configuration
        if not conf["execution.buffer-timeout.enabled"]:
            return -1
        interval: int = conf["execution.buffer-timeout.interval"]
        return interval

    def register_slot_sharing_group(self, slot_sharing_group: Any) -> StreamExecutionEnvironment:
        ignored("register_slot_sharing_group()", "ckptsim runs every task on its own actor")
        return self

    def register_cached_file(self, file_path: str, name: str, executable: bool = False) -> None:
        ignored(
            "register_cached_file()", "the job runs where the program runs: read the file there"
        )

    def add_python_file(self, file_path: str) -> None:
        ignored("add_python_file()", _WORKERS)

    def set_python_requirements(
        self, requirements_file_path: str, requirements_cache_dir: str | None = None
    ) -> None:
        ignored("set_python_requirements()", _WORKERS)

    def add_python_archive(self, archive_path: str, target_dir: str | None = None) -> None:
        ignored("add_python_archive()", _WORKERS)

    def set_python_executable(self, python_exec: str) -> None:
        ignored("set_python_executable()", _WORKERS)

    def add_jars(self, *jars_path: str) -> None:
        ignored("add_jars()", _WORKERS)

    def add_classpaths(self, *classpaths: str) -> None:
        ignored("add_classpaths()", _WORKERS)

    def close(self) -> None:
        pass

    # --- sources -------------------------------------------------------------------------------

    def from_collection(
        self, collection: Iterable[Any], type_info: TypeInformation | None = None
    ) -> DataStream:
        """A source of parallelism 1 (as Flink's), its records as ``type_info`` makes them."""
        convert = converter(type_info)
        data = [convert(e) for e in collection] if convert is not None else list(collection)
        stream = self._env.from_collection(data, name="Collection Source", parallelism=1)
        return DataStream(self, stream, type_info)

    def from_source(
        self,
        source: Any,
        watermark_strategy: WatermarkStrategy,
        source_name: str,
        type_info: TypeInformation | None = None,
    ) -> DataStream:
        from ckptsim.pyflink.datastream.connectors.base import Source  # noqa: PLC0415

        if not isinstance(source, Source):
            unsupported(f"from_source({type(source).__name__})", CONNECTORS)
        produced = type_info if type_info is not None else source._type_info()
        stream = self._env.from_source(source._reader(produced), name=source_name)
        source_node = stream.nodes[0]
        # Flink's watermark strategy is part of the source operator: here an operator chained
        # to it, which the source's name, uid and parallelism are set on with it (its name and
        # uid only on the source, whose state the uid carries)
        stream = stream.assign_timestamps_and_watermarks(
            watermark_strategy, name="Timestamps/Watermarks"
        )
        stream.nodes[0].flink_name = ""  # not in Flink's task names either
        self._source_watermarks.add(stream.nodes[0].node_id)
        return DataStream(self, stream, produced, [source_node, stream.nodes[0]])

    def add_source(
        self, source_func: Any, source_name: str = "Custom Source", type_info: Any = None
    ) -> DataStream:
        unsupported(f"add_source({type(source_func).__name__}) (a Java SourceFunction)", CONNECTORS)

    def create_input(self, input_format: Any, type_info: Any = None) -> DataStream:
        unsupported("create_input() (a Java InputFormat)", CONNECTORS)

    # --- running -------------------------------------------------------------------------------

    def _cache(self, node: StreamNode) -> None:
        """Keep what ``node`` emits, per subtask, when a BATCH job first computes it."""
        if node.node_id in self._caches:
            return
        cache = _Cache()
        sink = ck.DataStream(self._env, [node]).sink_to(
            cache.connector, name=self._sink_name("cache")
        )
        cache.sink = sink.node
        self._caches[node.node_id] = cache

    def _invalidate(self, node: StreamNode) -> None:
        cache = self._caches.get(node.node_id)
        if cache is not None:
            cache.records = None

    def _sink_name(self, base: str) -> str:
        """A sink name not yet used in this environment (ckptsim names sinks uniquely)."""
        name = self._env.unique_sink_name(base)
        self._sink_bases[name] = base
        return name

    def _reads_cache(self, node_id: int) -> bool:
        """Whether a job reads ``node_id``'s stream from its cache."""
        cache = self._caches.get(node_id)
        return cache is not None and cache.records is not None

    def _cache_sinks(self) -> set[int]:
        """The sinks that keep cached streams (no part of PyFlink's stream graph)."""
        return {c.sink.node_id for c in self._caches.values() if c.sink is not None}

    def _graph_to_run(self, only: int | None = None) -> StreamGraph:
        """The operators added since the last ``execute()`` and those they read from; with
        ``only`` (a sink's node), that sink and what it reads from."""
        graph = self._env.graph
        fresh = [i for i in graph.nodes if i > self._executed]
        if only is not None:
            fresh = [only]
        if not fresh:
            raise RuntimeError("No operators defined in streaming topology. Cannot execute.")
        needed = set(fresh)
        todo = list(fresh)
        cached: dict[int, StreamNode] = {}
        while todo:
            node_id = todo.pop()
            cache = self._caches.get(node_id)
            if cache is not None and cache.records is not None:
                cached[node_id] = cache.source(graph.nodes[node_id])
                continue  # read from the cache: what computed it is not needed
            for edge in graph.inputs(node_id):
                if edge.source not in needed:
                    needed.add(edge.source)
                    todo.append(edge.source)
        part = StreamGraph()
        part.nodes = {i: cached.get(i, n) for i, n in graph.nodes.items() if i in needed}
        part.edges = [
            dataclasses.replace(e)
            for e in graph.edges
            if e.source in needed and e.target in needed and e.target not in cached
        ]
        part._next_id = graph._next_id
        return part

    def _align(self, graph: StreamGraph) -> None:
        """What PyFlink settles as it builds the stream graph: an operator taking records out
        of a keyed or custom-partitioned stream runs at the parallelism of the operator it
        feeds; a custom partitioner partitions into the parallelism it sends to; a cache is
        kept at the parallelism of the stream it keeps."""
        for node_id in self._values_nodes & set(graph.nodes):
            outputs = graph.outputs(node_id)
            if outputs:
                graph.nodes[node_id].parallelism = graph.nodes[outputs[0].target].parallelism
        p = self._env.parallelism
        for node_id, tagger in self._partition_taggers.items():
            if node_id in graph.nodes:
                (edge,) = graph.outputs(node_id)
                tagger.num_partitions = graph.nodes[edge.target].parallelism or p
        for node_id, cache in self._caches.items():
            if cache.sink is not None and cache.sink.node_id in graph.nodes:
                cache.sink.parallelism = graph.nodes[node_id].parallelism
                cache.capturing = self._setting("execution.runtime-mode") == "BATCH"

    def _check_forward_fed(self, graph: StreamGraph) -> None:
        """Flink's refusal of a FORWARD edge between different parallelisms, where PyFlink
        makes one: from each input of a union to the ``key_by`` or ``partition_custom``
        operator after it, which runs at the parallelism of the union's first input."""
        p = self._env.parallelism
        for fed in self._forward_fed:
            if not all(i in graph.nodes for i in fed.inputs):
                continue
            if fed.node_id is not None:
                present = fed.node_id in graph.nodes
            else:
                present = any(
                    edge.key_selector is fed.selector
                    for i in fed.inputs
                    for edge in graph.outputs(i)
                    if edge.target in graph.nodes
                )
            if not present:
                continue
            down = graph.nodes[fed.inputs[0]].parallelism or p
            for i in fed.inputs[1:]:
                up = graph.nodes[i].parallelism or p
                if up != down:
                    raise GraphError(
                        "Forward partitioning does not allow change of parallelism. Upstream "
                        f"operation: '{self._user_operator(graph, i).name}' parallelism: {up}, "
                        f"downstream operation: '{fed.name}' parallelism: {down} (PyFlink's "
                        "operator after union(), at the parallelism of its first input) You "
                        "must use another partitioning strategy, such as broadcast, rebalance, "
                        "shuffle or global."
                    )

    def _user_operator(self, graph: StreamGraph, node_id: int) -> StreamNode:
        """The operator the program made whose records ``node_id`` emits: the operator itself,
        or the one before a conversion to an output type."""
        if node_id in self._converters:
            inputs = graph.inputs(node_id)
            if len(inputs) == 1:
                return graph.nodes[inputs[0].source]
        return graph.nodes[node_id]

    def _fused(self, graph: StreamGraph, node_id: int) -> bool:
        """Whether PyFlink fuses the Python operator after ``node_id`` (a conversion, after
        the operator it converts) into the same Python function: then no serializer runs."""
        if not (self._env.chaining and self._python_chaining):
            return False
        outputs = graph.outputs(node_id)
        if len(outputs) != 1 or outputs[0].partitioner is not Partitioner.FORWARD:
            return False
        target = outputs[0].target
        if target not in self._python_nodes or len(graph.inputs(target)) != 1:
            return False
        inputs = graph.inputs(node_id)
        if len(inputs) != 1:  # read from a cache: its records were converted when kept
            return False
        (feed,) = inputs
        user, converter_node, consumer = (
            graph.nodes[feed.source],
            graph.nodes[node_id],
            graph.nodes[target],
        )
        p = self._env.parallelism
        same = (converter_node.parallelism or p) == (consumer.parallelism or p)
        return same and user.chainable and consumer.chainable and not _new_chain(consumer)

    def _runs_in_this_process(self) -> bool:
        """The job's sinks run in this process (not with ``ckptsim.runtime: processes``,
        whose subtasks run in TaskManager processes)."""
        active = sessions.current()
        runtime = active.options.get("runtime") if active is not None else None
        return runtime_name(runtime, self._env.configuration) != "processes"

    def execute(self, job_name: str | None = None) -> JobExecutionResult:
        """Run the job on ckptsim's actors; raises when it fails (as Flink's)."""
        return self._execute(job_name)

    def _execute(
        self, job_name: str | None, only: int | None = None, **options: Any
    ) -> JobExecutionResult:
        """``execute()``; with ``only`` (``execute_and_collect``'s sink), a job of that sink
        and the operators it reads from, as Flink 2.3 runs it: whatever else the program built
        since the last ``execute()`` is dropped, not run."""
        name = job_name or self._job_name or "Flink Streaming Job"
        changes = self._not_allowed_changes()
        if changes:
            raise ConfigError(
                "Not allowed configuration change(s) were detected "
                "(execution.program-config.enabled is false): "
                + " ".join(changes)
                + " Remove them from the program, or list their keys in "
                "execution.program-config.wildcards."
            )
        graph = self._graph_to_run(only)
        self._align(graph)
        self._check_forward_fed(graph)
        # PyFlink's operators are Python operators: their timers fire in rounds
        graph.nodes = {
            i: dataclasses.replace(node, timers_in_rounds=True) for i, node in graph.nodes.items()
        }
        if self._setting("execution.runtime-mode") == "BATCH":
            self._batch_parallelism(graph)
        for node_id, convert in self._converters.items():
            if node_id in graph.nodes:
                convert.active = not self._fused(graph, node_id)
        whole = self._env.graph
        self._env.graph = graph
        try:
            result = self._env.execute(name, **options)
        finally:
            self._env.graph = whole
            self._executed = max(whole.nodes, default=0)
        if not result.succeeded and not result.cancelled_by_program:
            raise JobFailed(result)
        return JobExecutionResult(result)

    def _not_allowed_changes(self) -> list[str]:
        """Flink's check of a program's configuration changes: with
        ``execution.program-config.enabled: false`` (read where the program started from), each
        setting the program added or changed, in Flink's words, unless its key is one of
        ``execution.program-config.wildcards``."""
        cluster = self._cluster
        if cluster is None or cluster["execution.program-config.enabled"]:
            return []
        #: a wildcard allows its key and the keys below it (Flink removes them with
        #: ``Configuration.removeKey``, which takes a key's ``key.*`` with it)
        allowed = [canonical_key(key) for key in cluster["execution.program-config.wildcards"]]
        before = cluster.explicit()
        after = self._env.configuration.explicit()
        program_parallelism = self._env.program_parallelism
        if program_parallelism is not None:
            after["parallelism.default"] = program_parallelism
        changes = []
        for key in sorted(after):
            if before.get(key, _UNSET) == after[key] or any(
                key == wildcard or key.startswith(wildcard + ".") for wildcard in allowed
            ):
                continue
            value = flink_string(key, after[key])
            if key in before:
                was = flink_string(key, before[key])
                changes.append(f"Configuration {key} was changed from {was} to {value}.")
            else:
                changes.append(f"Configuration {key}:{value} not allowed.")
        return changes

    def _batch_parallelism(self, graph: StreamGraph) -> None:
        """Each operator of a BATCH job at the parallelism Flink's adaptive batch scheduler
        gives it (``_plan.batch_parallelism``); the job's graph gets copies of the operators
        it changes."""
        decided = batch_parallelism(PyFlinkGraph(graph, self, self._env.parallelism))
        for node_id, p in decided.items():
            node = graph.nodes[node_id]
            if node.parallelism != p:
                graph.nodes[node_id] = dataclasses.replace(node, parallelism=p)
        for node_id, cache in self._caches.items():
            sink = cache.sink
            if sink is not None and sink.node_id in graph.nodes and node_id in graph.nodes:
                kept = graph.nodes[node_id].parallelism
                graph.nodes[sink.node_id] = dataclasses.replace(sink, parallelism=kept)

    def execute_async(self, job_name: str = "Flink Streaming Job") -> JobClient:
        """Runs the job to its end (ckptsim runs one job at a time), then returns its client."""
        return JobClient(self.execute(job_name))

    def get_execution_plan(self) -> str:
        """The stream graph as Flink's JSON execution plan: PyFlink's operators and names,
        its fusion of Python operators, Jackson's formatting (``_plan``)."""
        graph = self._graph_to_run()
        self._align(graph)
        self._check_forward_fed(graph)
        return jackson(PyFlinkGraph(graph, self, self._env.parallelism).plan())


class _Cache:
    """The records a cached stream's subtasks emitted (None until a BATCH job computed it,
    and after ``invalidate()``), kept by a sink beside the stream's other consumers."""

    def __init__(self) -> None:
        self.records: dict[int, list[Any]] | None = None
        self.parallelism = 1
        self.sink: StreamNode | None = None
        #: whether the job being run keeps the records (BATCH mode: Flink caches only there)
        self.capturing = False
        self._filling: dict[int, list[Any]] = {}

    def connector(self, *, task: Any, parallelism: int, **_: Any) -> _CacheWriter:
        return _CacheWriter(self, task.subtask, parallelism)

    def finished(self, subtask: int, parallelism: int, records: list[Any]) -> None:
        if not self.capturing:
            return
        self._filling[subtask] = records
        if len(self._filling) == parallelism:
            self.records, self._filling = self._filling, {}
            self.parallelism = parallelism

    def source(self, node: StreamNode) -> StreamNode:
        """``node`` as a source of its cached records, each subtask reading its own."""
        records = self.records or {}

        def reader(ctx: OperatorContext) -> SourceReader:
            return CollectionReader(records.get(ctx.subtask, []), 0, 1)

        return StreamNode(
            node.node_id,
            node.name,
            node.uid,
            self.parallelism,
            SourceDescriptor(reader=reader),
            chainable=node.chainable,
        )


class _CacheWriter:
    """One subtask's share of a cache: its records once the subtask finished."""

    def __init__(self, cache: _Cache, subtask: int, parallelism: int) -> None:
        self.cache = cache
        self.subtask = subtask
        self.parallelism = parallelism
        self.records: list[Any] = []

    def write(self, records: Any) -> None:
        self.records.extend(records)

    def pre_commit(self, checkpoint_id: int) -> None:
        pass

    def commit(self, checkpoint_id: int) -> None:
        pass

    def restore(self, states: list[Any]) -> None:
        pass

    def close(self, *, finished: bool) -> None:
        if finished:
            self.cache.finished(self.subtask, self.parallelism, self.records)


def _new_chain(node: Any) -> bool:
    return bool(getattr(node, "new_chain", False) or getattr(node, "chain_head", False))


def _local(path: str) -> str:
    """A local path from Flink's ``file://`` URI."""
    return path[len("file://") :] if path.startswith("file://") else path


__getattr__ = missing("pyflink.datastream.stream_execution_environment")

__all__ = ["StreamExecutionEnvironment"]
