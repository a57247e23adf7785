"""Sink connectors: where a sink's records go (the I/O the pure operators leave to the runtime)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO, Any, Protocol

from runtime import serde
from runtime.checkpoint import TaskId


class Connector(Protocol):
    def write(self, records: Any) -> None: ...

    def notify(self, event: str, checkpoint_id: int) -> None: ...

    def close(self) -> list[Any] | None:
        """Finish; a collect sink returns its records."""


class CollectConnector:
    def __init__(self) -> None:
        self.records: list[Any] = []

    def write(self, records: Any) -> None:
        self.records.extend(records)

    def notify(self, event: str, checkpoint_id: int) -> None:
        pass

    def close(self) -> list[Any] | None:
        return self.records


class PrintConnector:
    """Flink's print sink: ``<subtask index + 1>> <record>`` per record."""

    def __init__(self, task: TaskId, parallelism: int, stream: IO[str] | None = None) -> None:
        self.prefix = f"{task.subtask + 1}> " if parallelism > 1 else ""
        self.stream = stream or sys.stdout

    def write(self, records: Any) -> None:
        self.stream.write("".join(f"{self.prefix}{r}\n" for r in records))

    def notify(self, event: str, checkpoint_id: int) -> None:
        if event == "snapshot":
            self.stream.flush()

    def close(self) -> list[Any] | None:
        self.stream.flush()
        return None


class FileConnector:
    """One part file per subtask: ``<path>/part-<vertex>-<subtask>.<txt|jsonl>``."""

    def __init__(self, path: str, task: TaskId, fmt: str) -> None:
        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        suffix = "jsonl" if fmt == "json" else "txt"
        self.path = directory / f"part-{task.vertex}-{task.subtask}.{suffix}"
        self.fmt = fmt
        self.file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write(self, records: Any) -> None:
        if self.fmt == "json":
            self.file.write(
                "".join(json.dumps(serde.encode(r, where="a record")) + "\n" for r in records)
            )
        else:
            self.file.write("".join(f"{r}\n" for r in records))

    def notify(self, event: str, checkpoint_id: int) -> None:
        if event == "snapshot":
            self.file.flush()

    def close(self) -> list[Any] | None:
        self.file.close()
        return None


def make_connector(sink: str, options: dict[str, Any], task: TaskId, parallelism: int) -> Connector:
    if sink == "collect":
        return CollectConnector()
    if sink == "print":
        return PrintConnector(task, parallelism)
    if sink == "file":
        return FileConnector(options["path"], task, options.get("format", "text"))
    raise ValueError(f"unknown sink {sink!r}")
