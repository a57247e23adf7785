"""Flink's own HistoryServer reads ckptsim's archives (issue #25, item 2): a plain ``--stats``
archive appears under its application, and archives in Flink 2.3's layout (``--stats DIR/``,
``jobmanager.archive.fs.dir``) each under theirs (once there are any, Flink's HistoryServer
lists only those: the plain archive's application page is still served); every job in the job
list, and every path of every archive (the Cluster Configuration, vertex TaskManagers and
Accumulators tabs' among them) served as ckptsim wrote it.

Skipped where Apache Flink (``apache-flink``, or ``FLINK_HOME``) or java is missing. The
HistoryServer runs in the foreground of a process this test starts and stops; every wait is on
what it serves (bounded by a safety net)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.archive import write_archive, write_archive_dir
from ckptsim._web import JobRegistry
from runtime import rest
from tests.rest.conftest import NO_FLINK, flink_home, run_simulated
from tests.rest.test_http import BOUND_S

#: the safety net of a wait on the HistoryServer: a JVM that starts on a busy machine, then
#: reads the archives at its next refresh
HISTORY_BOUND_S = BOUND_S * 5


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return int(probe.getsockname()[1])


class HistoryServer:
    def __init__(self, home: Path, archives: Path, work: Path) -> None:
        conf = work / "conf"
        shutil.copytree(home / "conf", conf)
        self.port = _free_port()
        with open(conf / "config.yaml", "a", encoding="utf-8") as config:
            config.write(
                "\nhistoryserver.archive.fs.dir: file://{}\n"
                "historyserver.archive.fs.refresh-interval: 1 s\n"
                "historyserver.web.address: localhost\n"
                "historyserver.web.port: {}\n"
                "historyserver.web.tmpdir: {}\n".format(archives, self.port, work / "web")
            )
        env = {**os.environ, "FLINK_CONF_DIR": str(conf), "FLINK_LOG_DIR": str(work / "log")}
        self.process = subprocess.Popen(
            [str(home / "bin" / "historyserver.sh"), "start-foreground"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def get(self, path: str) -> Any:
        try:
            with urllib.request.urlopen(f"http://localhost:{self.port}{path}", timeout=10) as r:
                return json.loads(r.read())
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError):
            return None  # not up yet, or a file it rewrites at a refresh: asked again

    def until(self, condition: Callable[[], Any], what: str) -> Any:
        """``condition``'s first true value, polled while the HistoryServer starts and reads."""
        deadline = time.monotonic() + HISTORY_BOUND_S
        while True:
            value = condition()
            if value:
                return value
            assert self.process.poll() is None, "Flink's HistoryServer ended"
            assert time.monotonic() < deadline, f"gave up waiting for {what}"
            time.sleep(0.2)

    def answer(self, path: str) -> Any:
        """What the HistoryServer serves at ``path`` (asked again while it rewrites the file at
        a refresh)."""

        def answered() -> list[Any]:  # a body may be falsy itself ([] or {})
            body = self.get(path)
            return [] if body is None else [body]

        return self.until(answered, path)[0]

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(60)


@pytest.fixture
def history(tmp_path: Path) -> Iterator[tuple[HistoryServer, Path]]:
    home = flink_home()
    if home is None:
        pytest.skip(NO_FLINK)
    archives = tmp_path / "archives"
    archives.mkdir()
    server = HistoryServer(home, archives, tmp_path)
    try:
        yield server, archives
    finally:
        server.stop()


def _view(seed: int) -> rest.JobView:
    registry = JobRegistry()
    run_simulated(registry, seed=seed)
    (view,) = registry.finished_views()
    return view


def _applications(server: HistoryServer) -> list[str]:
    body = server.get("/applications/overview") or {}
    return sorted(a["id"] for a in body.get("applications", []))


def test_flinks_historyserver_lists_ckptsims_archives_under_applications(
    history: tuple[HistoryServer, Path],
) -> None:
    server, archives = history
    plain = _view(seed=41)
    write_archive(plain, archives / plain.job_id)  # the legacy layout: a file per job
    server.until(lambda: _applications(server) == [plain.job_id], "the plain archive's application")
    app = server.answer(f"/applications/{plain.job_id}")
    assert app["jobs"][0]["jid"] == plain.job_id
    # Flink 2.3's layout: an application per job, each listed
    laid_out = [_view(seed=42), _view(seed=43)]
    for view in laid_out:
        write_archive_dir(view, archives)
    server.until(
        lambda: set(_applications(server)) >= {v.job_id for v in laid_out},
        "the applications of the archives in Flink's layout",
    )
    # Flink's HistoryServer lists the applications of its application overviews (the
    # layout's) once there are any: the plain archive's is no longer listed, but still served
    assert server.answer(f"/applications/{plain.job_id}")["jobs"][0]["jid"] == plain.job_id
    server.until(
        lambda: (
            {j["jid"] for j in (server.get("/jobs/overview") or {}).get("jobs", [])}
            == {plain.job_id, *(v.job_id for v in laid_out)}
        ),
        "every job in the job list",
    )
    for view in (plain, *laid_out):
        for path, body in rest.archive(view, application=view is plain):
            if path not in ("/jobs/overview", "/applications/overview"):
                assert server.answer(path) == json.loads(json.dumps(body)), path
