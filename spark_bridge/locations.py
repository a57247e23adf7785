"""Where the Spark bridge writes: a folder given as a path or as a URI Spark can read.

``resolve(where, what)`` turns ``output=`` (or another folder) into a ``Location``: the URI
Spark reads (as given: ``s3a://bucket/out``, ``hdfs://nn:8020/out``, ``file:///shared/out``,
or a plain path) and the ``pyarrow.fs`` filesystem and path the driver writes through. A
filesystem that is not available here (no libhdfs, a PyArrow without S3, an unknown scheme)
is one ``SparkBridgeError`` naming the folder, before any job runs.

The URI rules (``check_cluster_can_read``): with a local master (``local[...]``,
``local-cluster[...]``: every executor on the driver's host) any folder does. With any other
master (``spark://``, ``yarn``, ``k8s://``), executors on other hosts read the output, so a
plain path, which names a folder on the driver's own disk, is refused: give a URI every
node can read (``hdfs://``, ``s3a://``, ``gs://``, ``abfs://``), or ``file:///...`` for a
folder every node mounts (NFS: saying ``file://`` is saying so).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark_bridge.session import SparkBridgeError, require_pyarrow

#: Hadoop's S3 schemes, which Spark reads and PyArrow knows as ``s3``
_S3_SCHEMES = ("s3a", "s3n")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


@dataclass(frozen=True)
class Location:
    """A folder: ``uri`` as Spark reads it, ``path`` in ``filesystem`` as the driver writes
    it; ``local``: a plain path on the driver's disk; ``scheme``: the URI's (``""`` for a
    plain path)."""

    uri: str
    filesystem: Any
    path: str
    scheme: str

    @property
    def local(self) -> bool:
        return self.scheme == ""

    def join(self, *names: str) -> str:
        """A path inside the folder, in the filesystem's terms."""
        return "/".join([self.path.rstrip("/"), *names])


def scheme_of(where: str) -> str:
    """The URI scheme of ``where`` (lower case), ``""`` for a plain path (a Windows drive
    letter is a path too)."""
    match = _SCHEME.match(where)
    if match is None or (len(match.group(1)) == 1 and os.name == "nt"):
        return ""
    return match.group(1).lower()


def arrow_uri(uri: str) -> str:
    """The URI PyArrow opens for one Spark reads: ``s3a://`` and ``s3n://`` are ``s3://``;
    ``file:/path`` (Hadoop's form) is ``file:///path``."""
    scheme = scheme_of(uri)
    if scheme in _S3_SCHEMES:
        return "s3" + uri[len(scheme) :]
    if scheme == "file" and not uri.startswith("file://"):
        return "file://" + uri[len("file:") :]
    return uri


def resolve(where: str | os.PathLike[str], what: str) -> Location:
    """The ``Location`` of ``where`` (``what`` names it in errors: ``"output="``)."""
    pa = require_pyarrow()
    import pyarrow.fs  # noqa: PLC0415

    text = os.fspath(where)
    scheme = scheme_of(text)
    if scheme == "":
        path = str(Path(text).expanduser().resolve())
        return Location(uri=path, filesystem=pyarrow.fs.LocalFileSystem(), path=path, scheme="")
    try:
        filesystem, path = pyarrow.fs.FileSystem.from_uri(arrow_uri(text))
    except (OSError, ImportError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        cause = " ".join(str(error).split())[:300]
        raise SparkBridgeError(
            f"{what}{text!r}: the driver cannot write to {scheme}:// here ({cause}). PyArrow "
            "writes the bridge's files (pyarrow.fs): for hdfs:// it needs libhdfs and a JVM "
            "(HADOOP_HOME, CLASSPATH=$(hadoop classpath --glob), JAVA_HOME), for s3a:// a "
            "PyArrow built with S3 and credentials; or give a folder of a filesystem this "
            "driver has"
        ) from None
    return Location(uri=text, filesystem=filesystem, path=path, scheme=scheme)


def is_local_master(master: str) -> bool:
    """Whether every executor of ``master`` runs on the driver's host."""
    return master.startswith("local")


def check_cluster_can_read(location: Location, master: str, what: str) -> None:
    """Refuse a plain driver path when executors on other hosts must read it."""
    if location.local and not is_local_master(master):
        raise SparkBridgeError(
            f"{what}{location.uri!r} is a folder on the driver's own disk, and with master "
            f"{master!r} Spark's executors on other hosts read the output there (they would "
            "fail with FILE_NOT_EXIST): give a URI every node can read (hdfs://..., "
            "s3a://..., gs://..., abfs://...), or file:///... for a folder every node mounts "
            "(NFS)"
        )
