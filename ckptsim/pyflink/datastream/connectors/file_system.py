"""``pyflink.datastream.connectors.file_system``: ``FileSource`` (text lines) and ``FileSink``
(rows as text lines), on ckptsim's own readers and file sink.

``FileSource.for_record_stream_format(StreamFormat.text_line_format(), *paths)`` reads the
lines of the given files (a folder: every file under it whose name does not start with ``.``
or ``_``, as Flink's enumerator), one file at a time per subtask, with a restorable position
(the file and the byte offset of the next line). ``FileSink.for_row_format(path,
Encoder.simple_string_encoder())`` writes each record's Java ``toString`` as a line with
ckptsim's file sink: exactly once with checkpointing (part files are committed when their
checkpoint completes).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from ckptsim.pyflink._unsupported import FORMATS, ignored, missing, unsupported
from ckptsim.pyflink.common.serialization import Encoder
from ckptsim.pyflink.common.typeinfo import (
    PickledBytesTypeInfo,
    TypeInformation,
    Types,
    converter,
)
from ckptsim.pyflink.datastream.connectors.base import Sink, Source
from runtime.operators import OperatorContext, SourceReader

# --- source ------------------------------------------------------------------------------------


class StreamFormat:
    """How a file's bytes become records: ``text_line_format()`` (one record per line)."""

    def __init__(self, charset_name: str = "UTF-8") -> None:
        self.charset_name = charset_name

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        return StreamFormat(charset_name)


class BulkFormat:
    """Flink's bulk formats (Parquet, ORC, ...) need its JVM."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        unsupported("BulkFormat", FORMATS)


class FileEnumeratorProvider:
    @staticmethod
    def default_splittable_file_enumerator() -> FileEnumeratorProvider:
        return FileEnumeratorProvider()

    @staticmethod
    def default_non_splittable_file_enumerator() -> FileEnumeratorProvider:
        return FileEnumeratorProvider()


class FileSplitAssignerProvider:
    @staticmethod
    def locality_aware_split_assigner() -> FileSplitAssignerProvider:
        return FileSplitAssignerProvider()


class FileSourceBuilder:
    def __init__(self, stream_format: StreamFormat, paths: Sequence[str]) -> None:
        self._format = stream_format
        self._paths = list(paths)

    def monitor_continuously(self, discovery_interval: Any) -> FileSourceBuilder:
        unsupported(
            "FileSource.monitor_continuously() (an unbounded file source)",
            "use process_static_file_set(): ckptsim reads the files there are when the job starts",
        )

    def process_static_file_set(self) -> FileSourceBuilder:
        return self

    def set_file_enumerator(self, file_enumerator: FileEnumeratorProvider) -> FileSourceBuilder:
        return self

    def set_split_assigner(self, split_assigner: FileSplitAssignerProvider) -> FileSourceBuilder:
        return self

    def build(self) -> FileSource:
        return FileSource(self._format, self._paths)


class FileSource(Source):
    """A bounded source of the lines of files."""

    def __init__(self, stream_format: StreamFormat, paths: Sequence[str]) -> None:
        self._format = stream_format
        self._paths = [_local(p) for p in paths]

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> FileSourceBuilder:
        if not isinstance(stream_format, StreamFormat):
            unsupported(f"FileSource with {type(stream_format).__name__}", FORMATS)
        return FileSourceBuilder(stream_format, paths)

    @staticmethod
    def for_bulk_file_format(bulk_format: Any, *paths: str) -> FileSourceBuilder:
        unsupported("FileSource.for_bulk_file_format()", FORMATS)

    def _type_info(self) -> TypeInformation | None:
        return Types.STRING()

    def _reader(
        self, type_info: TypeInformation | None
    ) -> Callable[[OperatorContext], SourceReader]:
        files = _files(self._paths)
        encoding = self._format.charset_name
        convert = None if type_info == Types.STRING() else converter(type_info)

        def reader(ctx: OperatorContext) -> SourceReader:
            return _LinesReader(files[ctx.subtask :: ctx.parallelism], encoding, convert)

        return reader


def _local(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _files(paths: Sequence[str]) -> list[str]:
    """The files to read, folders expanded (hidden names skipped), in a stable order."""
    found: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for folder, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not _hidden(d))
                found.extend(os.path.join(folder, n) for n in sorted(names) if not _hidden(n))
        elif path.exists():
            found.append(str(path))
        else:
            raise FileNotFoundError(f"FileSource: no such file or folder: {raw}")
    return found


class _LinesReader:
    """The lines of some files, in order; the position is (file, byte offset)."""

    def __init__(
        self, files: Sequence[str], encoding: str, convert: Callable[[Any], Any] | None
    ) -> None:
        self.files = list(files)
        self.encoding = encoding
        self.convert = convert
        self.file_index = 0
        self.offset = 0
        self._handle: IO[bytes] | None = None

    def _open(self) -> IO[bytes] | None:
        while self._handle is None:
            if self.file_index >= len(self.files):
                return None
            handle = open(self.files[self.file_index], "rb")  # noqa: SIM115 - closed at its end
            handle.seek(self.offset)
            self._handle = handle
        return self._handle

    def read(self, max_records: int, now: int) -> Sequence[Any] | None:
        lines: list[Any] = []
        while len(lines) < max_records:
            handle = self._open()
            if handle is None:
                break
            raw = handle.readline()
            if not raw:
                handle.close()
                self._handle = None
                self.file_index += 1
                self.offset = 0
                continue
            self.offset = handle.tell()
            lines.append(raw.rstrip(b"\n").rstrip(b"\r").decode(self.encoding))
        if not lines:
            return None
        convert = self.convert
        return [convert(v) for v in lines] if convert is not None else lines

    def next_ready(self, now: int) -> int | None:
        return None

    def position(self) -> Any:
        return {"file": self.file_index, "offset": self.offset}

    def seek(self, position: Any) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        self.file_index = int(position["file"])
        self.offset = int(position["offset"])


# --- sink --------------------------------------------------------------------------------------


class OutputFileConfig:
    """Part file names: ``<prefix>-...<suffix>`` (default prefix ``part``, no suffix)."""

    def __init__(self, part_prefix: str = "part", part_suffix: str = "") -> None:
        self._part_prefix = part_prefix
        self._part_suffix = part_suffix

    @staticmethod
    def builder() -> OutputFileConfig.OutputFileConfigBuilder:
        return OutputFileConfig.OutputFileConfigBuilder()

    def get_part_prefix(self) -> str:
        return self._part_prefix

    def get_part_suffix(self) -> str:
        return self._part_suffix

    class OutputFileConfigBuilder:
        def __init__(self) -> None:
            self._prefix = "part"
            self._suffix = ""

        def with_part_prefix(self, prefix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self._prefix = prefix
            return self

        def with_part_suffix(self, suffix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self._suffix = suffix
            return self

        def build(self) -> OutputFileConfig:
            return OutputFileConfig(self._prefix, self._suffix)


class RollingPolicy:
    """When Flink rolls a part file. ckptsim rolls on every checkpoint (and at the end), what
    ``on_checkpoint_rolling_policy()`` says; the default policy's size and time limits are
    accepted and not applied."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    @staticmethod
    def default_rolling_policy(
        part_size: int = 1024 * 1024 * 128,
        rollover_interval: int = 60 * 1000,
        inactivity_interval: int = 60 * 1000,
    ) -> DefaultRollingPolicy:
        return DefaultRollingPolicy()

    @staticmethod
    def on_checkpoint_rolling_policy() -> OnCheckpointRollingPolicy:
        return OnCheckpointRollingPolicy()


class DefaultRollingPolicy(RollingPolicy):
    def __init__(self) -> None:
        super().__init__("default")


class OnCheckpointRollingPolicy(RollingPolicy):
    def __init__(self) -> None:
        super().__init__("on-checkpoint")


class BucketAssigner:
    """Which folder under the base path a record goes to. ckptsim writes every part file into
    the base path (``base_path_bucket_assigner()``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    @staticmethod
    def base_path_bucket_assigner() -> BucketAssigner:
        return BucketAssigner("base-path")

    @staticmethod
    def date_time_bucket_assigner(
        format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None
    ) -> BucketAssigner:
        return BucketAssigner("date-time")


class FileSink(Sink):
    """Rows as lines of text (each record's Java ``toString``), ckptsim's file sink:
    exactly once with checkpointing."""

    def __init__(
        self,
        base_path: str,
        encoder: Encoder,
        output_file_config: OutputFileConfig,
        rolling_policy: RollingPolicy | None,
    ) -> None:
        self.base_path = _local(base_path)
        self.encoder = encoder
        self.output_file_config = output_file_config
        self.rolling_policy = rolling_policy

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> FileSink.RowFormatBuilder:
        if not isinstance(encoder, Encoder):
            unsupported(f"FileSink with {type(encoder).__name__}", FORMATS)
        return FileSink.RowFormatBuilder(base_path, encoder)

    @staticmethod
    def for_bulk_format(base_path: str, writer_factory: Any) -> Any:
        unsupported("FileSink.for_bulk_format() (bulk formats)", FORMATS)

    class RowFormatBuilder:
        def __init__(self, base_path: str, encoder: Encoder) -> None:
            self._base_path = base_path
            self._encoder = encoder
            self._config = OutputFileConfig()
            self._rolling: RollingPolicy | None = None

        def with_bucket_check_interval(self, interval: int) -> FileSink.RowFormatBuilder:
            return self

        def with_bucket_assigner(
            self, bucket_assigner: BucketAssigner
        ) -> FileSink.RowFormatBuilder:
            if bucket_assigner.kind != "base-path":
                ignored(
                    "FileSink bucket assigner",
                    "ckptsim writes every part file into the base path "
                    "(BucketAssigner.base_path_bucket_assigner())",
                )
            return self

        def with_output_file_config(
            self, output_file_config: OutputFileConfig
        ) -> FileSink.RowFormatBuilder:
            self._config = output_file_config
            return self

        def with_rolling_policy(self, rolling_policy: RollingPolicy) -> FileSink.RowFormatBuilder:
            self._rolling = rolling_policy
            return self

        def enable_compact(self, strategy: Any, compactor: Any) -> FileSink.RowFormatBuilder:
            ignored("FileSink.enable_compact()", "ckptsim writes one part file per checkpoint")
            return self

        def disable_compact(self) -> FileSink.RowFormatBuilder:
            return self

        def build(self) -> FileSink:
            return FileSink(self._base_path, self._encoder, self._config, self._rolling)

    def _attach(self, stream: Any) -> Any:
        """Write ``stream``'s records: the line of each is its Java ``toString`` (a record of a
        stream without type: its Python ``str``)."""
        type_info = stream._type
        if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
            from ckptsim.pyflink.common.typeinfo import printed  # noqa: PLC0415

            line = printed(None)
        else:
            line = type_info.java_str
        lines = stream._plain().map(line, name="toString")
        # Flink's sink writer encodes the records itself: the operator is part of the sink in
        # Flink's graph (its plan and chain names leave it out), at the sink's parallelism
        lines.nodes[0].flink_name = ""
        name = stream._env._sink_name("File Sink")
        config = self.output_file_config
        sink = lines.sink_to_file(
            self.base_path,
            name=name,
            fmt="text",
            part_prefix=config.get_part_prefix(),
            part_suffix=config.get_part_suffix() or None,
        )
        stream._env._sink_lines[sink.node.node_id] = lines.nodes[0]
        return sink


_COMPACTION = "ckptsim writes one part file per checkpoint"

__getattr__ = missing(
    "pyflink.datastream.connectors.file_system",
    {
        "FileCompactStrategy": ("FileCompactStrategy (FileSink compaction)", _COMPACTION),
        "FileCompactor": ("FileCompactor (FileSink compaction)", _COMPACTION),
    },
)

__all__ = [
    "BucketAssigner",
    "BulkFormat",
    "DefaultRollingPolicy",
    "FileEnumeratorProvider",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "FileSplitAssignerProvider",
    "OnCheckpointRollingPolicy",
    "OutputFileConfig",
    "RollingPolicy",
    "StreamFormat",
]
