"""Clean ends of the serving commands (issue #22, item 6): a port out of range or taken, or a
bind address no resolver knows, is one line and exit 2 (no ``OverflowError`` traceback), and
``ckptsim serve DIR`` does not follow symbolic links out of ``DIR``."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from actors.archive import write_archive
from ckptsim._cli import main
from ckptsim._web import load_archives

SCRIPT = """
def build(env):
    env.from_collection(range(10)).collect()
"""


@pytest.fixture
def archive(finished: Any, tmp_path: Path) -> str:
    return str(write_archive(finished[1], tmp_path / "job-archive"))


def one_line(err: str, *parts: str) -> None:
    assert "Traceback" not in err and err.count("\n") == 1, err
    for part in parts:
        assert part in err, (part, err)


@pytest.mark.parametrize("port", ["70000", "-5", "65536"])
def test_serve_on_a_port_out_of_range_is_one_line(
    archive: str, capsys: pytest.CaptureFixture[str], port: str
) -> None:
    assert main(["serve", archive, "--port", port]) == 2
    one_line(capsys.readouterr().err, f"ckptsim serve: cannot serve on port {port}", "0 to 65535")


@pytest.mark.parametrize("port", ["70000", "65536"])
def test_run_web_on_a_port_out_of_range_is_one_line_before_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], port: str
) -> None:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    code = main(["run", str(script), "--simulate", "--web", "-D", f"rest.port={port}"])
    assert code == 2
    out, err = capsys.readouterr()
    one_line(err, f"ckptsim run: cannot serve on port {port}")
    assert "Job has been submitted" not in out  # refused before the job


def test_serve_on_a_taken_port_or_an_unknown_address_is_one_line(
    archive: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert main(["serve", archive, "--address", "127.0.0.1", "--port", str(port)]) == 2
        one_line(capsys.readouterr().err, f"cannot serve on 127.0.0.1:{port}", "another port")
    for address in ("no-such-host.invalid", "a" * 300):
        assert main(["serve", archive, "--address", address, "--port", "0"]) == 2
        one_line(capsys.readouterr().err, "ckptsim serve: cannot serve on ")


def test_serve_dir_does_not_follow_links_out_of_it(finished: Any, tmp_path: Path) -> None:
    view = finished[1]
    served, outside = tmp_path / "served", tmp_path / "outside"
    (served / "sub").mkdir(parents=True)
    (outside / "more").mkdir(parents=True)
    write_archive(view, served / "sub" / "inside")
    write_archive(view, outside / "secret")
    write_archive(view, outside / "more" / "secret-too")
    (served / "link-out").symlink_to(outside / "secret")  # a file outside
    (served / "dir-out").symlink_to(outside / "more")  # a directory outside
    (served / "link-in").symlink_to(served / "sub" / "inside")  # a file inside: served
    (served / "dangling").symlink_to(tmp_path / "nothing")
    (served / "loop").symlink_to(served / "loop")
    jobs = load_archives([str(served)])
    assert sorted(Path(j.source).name for j in jobs) == ["inside", "link-in"]
    assert all("outside" not in j.source for j in jobs)
