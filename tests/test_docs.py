"""Every example in the documentation runs, so the docs cannot go stale.

The pages are README.md and docs/**/*.md. Each page is one test; its examples run in the order
they appear, in a scratch directory of their own that looks like the repository's root
(``examples/``, ``tests/`` and ``docs/`` are links into the repository), so a command may read
what an earlier one wrote (``--trace run.jsonl``, then ``ckptsim check run.jsonl``).

- A ````python`` block is executed. A page's blocks share one namespace, so a later block may
  use what an earlier one defined.
- A ````console`` block holds commands: each line starting with ``$ `` is one, run as a
  subprocess (``ckptsim`` is this Python's ``python -m ckptsim``, ``python`` this Python; the
  line is split as a POSIX shell splits words, without running a shell). It must exit 0. The
  lines after a command, up to the next one, are output it must print (standard output and
  standard error together), in that order, each as a whole line; other lines may come between
  them. ``...`` inside a line matches any text, and a line of only ``...`` stands for lines
  left out.
- A ````python`` block that only includes a file of the repository (``--8<-- "PATH"``, or
  ``"PATH:FIRST:LAST"`` for some of its lines, as pymdownx.snippets writes it) shows an
  example script as it is: the page must run that script with a ``$ ckptsim run PATH`` or
  ``$ python PATH`` command.
- A page that begins with the same examples as a page run before it (Getting started repeats
  the README's tour) does not run those commands again: each command's exit status, output
  and the files it wrote are kept by what ran before it, and a command with the same past
  replays them (the tour runs on the deterministic simulation).
- Every other block (``text``, or no language) is not an example and is not run. A block in a
  shell language (``console``, ``shell``, ``sh``, ``bash``) must hold ``$`` commands or carry
  a marker, so that no command can be shown without being run.

A marker is an HTML comment (invisible on the page) on the line right before a block's fence:

- ``<!-- docs-test: skip -->``: the block is not run: an illustrative fragment that cannot run
  alone, or a command that cannot run here (it serves until Ctrl-C, needs a running job, or
  is ``make``). Keep these rare.
- ``<!-- docs-test: script -->``: a ``python`` block that is a whole topology script or
  PyFlink program: it is written to a file and run with ``ckptsim run FILE --simulate -q``.
- ``<!-- docs-test: script=NAME -->``: a block (``python``, a scenario, ...) that is the file
  NAME, which a later command of the page runs: it is written to NAME in the scratch
  directory.
- ``<!-- docs-test: exit=N -->``: the commands of this ``console`` block exit with status N.

Two pages must be complete: the API reference (docs/api/) names every public name of
``ckptsim`` (its ``__all__``) and of ``ckptsim.testing`` with a ``::: ckptsim.NAME``
directive, which mkdocstrings renders from the docstring
(``test_the_api_reference_names_every_public_name``), and docs/configuration.md describes
every key ``ckptsim config`` lists (``test_the_configuration_page_names_every_key``).
"""

from __future__ import annotations

import inspect
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
SHELL_LANGUAGES = {"console", "shell", "sh", "bash"}
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)\s*(?P<info>[^\n]*)$")
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<what>[^>]*?)\s*-->\s*$")
SNIPPET = re.compile(r'^--8<-- "(?P<path>[^":]+)(?::(?P<first>\d+):(?P<last>\d+))?"$')


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    markers: list[str] = field(default_factory=list)

    def included(self) -> str | None:
        """The repository file this block includes (``--8<-- "PATH"``), if that is all it
        holds; the file, and the lines it names, must exist."""
        lines = self.text.strip().splitlines()
        match = SNIPPET.match(lines[0]) if len(lines) == 1 else None
        if match is None:
            assert "--8<--" not in self.text, f"{self.where()}: include a file alone in a block"
            return None
        path = ROOT / match["path"]
        assert path.is_file(), f"{self.where()}: includes {match['path']}, which does not exist"
        if match["last"]:
            assert int(match["last"]) <= len(path.read_text().splitlines()), self.where()
        return match["path"]

    def where(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a page, with the markers on the line before each."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        language = (opening["info"].split() or [""])[0].lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not re.match(
            rf"^ {{0,{indent + 3}}}{re.escape(fence)}\s*$", lines[j]
        ):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        marker = MARKER.match(lines[i - 1]) if i > 0 else None
        markers = [m.strip() for m in marker["what"].split(",")] if marker else []
        found.append(Block(page, i + 1, language, "\n".join(body) + "\n", markers))
        i = j + 1
    return found


def examples(page: Path) -> list[Block]:
    """The blocks of a page that run (python and console blocks without ``skip``)."""
    runnable = []
    for block in blocks(page):
        if "skip" in block.markers:
            continue
        if any(marker.startswith("script=") for marker in block.markers):
            runnable.append(block)
            continue
        if block.language in SHELL_LANGUAGES:
            assert block.language == "console" and "\n$ " in "\n" + block.text, (
                f"{block.where()}: a {block.language or 'shell'} block without `$ ` commands: "
                "write them as a console block (`$ command`), or mark it "
                "<!-- docs-test: skip -->"
            )
            runnable.append(block)
        elif block.language == "python":
            runnable.append(block)
    return runnable


# --- running a page's examples ------------------------------------------------------------------


def _scratch(tmp_path: Path) -> Path:
    for name in ("examples", "tests", "docs"):
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    return tmp_path


def _command(line: str) -> list[str]:
    words = shlex.split(line)
    if words[0] == "ckptsim":
        return [sys.executable, "-m", "ckptsim", *words[1:]]
    if words[0] in ("python", "python3"):
        return [sys.executable, *words[1:]]
    raise AssertionError(f"a documented command runs ckptsim or python, not {words[0]!r}")


def _line_pattern(shown: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in shown.split("...")))


def _check_output(block: Block, command: str, shown: list[str], printed: str) -> None:
    lines = [line.rstrip() for line in printed.splitlines()]
    position = 0
    for expected in (s.rstrip() for s in shown):
        if expected.strip() in ("", "..."):
            continue
        pattern = _line_pattern(expected)
        while position < len(lines) and not pattern.fullmatch(lines[position]):
            position += 1
        if position == len(lines):
            raise AssertionError(
                f"{block.where()}: `$ {command}` did not print, in the order shown:\n"
                f"    {expected}\nIt printed:\n{printed}"
            )
        position += 1


@dataclass(frozen=True)
class _Run:
    """What a command did: its exit status, what it printed, the files it wrote or changed."""

    returncode: int
    output: str
    files: dict[str, bytes]


#: runs by the examples run before them (python code, files written, commands) and the
#: command: a page that repeats the start of an earlier page (Getting started repeats the
#: README's tour) replays those runs instead of running them again, files included
_RUNS: dict[tuple[str, ...], _Run] = {}


def _files(cwd: Path) -> dict[str, float]:
    found = {}
    for folder, dirs, names in os.walk(cwd):
        dirs[:] = [d for d in dirs if not (Path(folder) / d).is_symlink()]
        for name in names:
            path = Path(folder) / name
            found[str(path.relative_to(cwd))] = path.stat().st_mtime
    return found


def _run(command: str, cwd: Path, history: list[str]) -> _Run:
    key = (*history, f"$ {command}")
    history.append(f"$ {command}")
    if key in _RUNS:
        done = _RUNS[key]
        for name, data in done.files.items():
            (cwd / name).parent.mkdir(parents=True, exist_ok=True)
            (cwd / name).write_bytes(data)
        return done
    before = _files(cwd)
    completed = subprocess.run(
        _command(command),
        cwd=cwd,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "120"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    written = {
        name: (cwd / name).read_bytes()
        for name, mtime in _files(cwd).items()
        if before.get(name) != mtime
    }
    _RUNS[key] = _Run(completed.returncode, completed.stdout, written)
    return _RUNS[key]


def run_console(block: Block, cwd: Path, history: list[str]) -> list[str]:
    exit_status = 0
    for marker in block.markers:
        if marker.startswith("exit="):
            exit_status = int(marker.removeprefix("exit="))
    commands: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
    for command, shown in commands:
        done = _run(command, cwd, history)
        assert done.returncode == exit_status, (
            f"{block.where()}: `$ {command}` exited {done.returncode}, "
            f"not {exit_status}:\n{done.output}"
        )
        _check_output(block, command, shown, done.output)
    return [command for command, _ in commands]


def run_python(block: Block, namespace: dict[str, object], cwd: Path, history: list[str]) -> None:
    history.append(f"{block.markers} {block.text}")
    for marker in block.markers:
        if marker.startswith("script="):
            (cwd / marker.removeprefix("script=")).write_text(block.text, encoding="utf-8")
            return
    if "script" in block.markers:
        script = cwd / f"script_{block.line}.py"
        script.write_text(block.text, encoding="utf-8")
        command = f"$ ckptsim run {script.name} --simulate -q\n"
        run_console(Block(block.page, block.line, "console", command), cwd, history)
        return
    code = compile(block.text, block.where(), "exec")
    exec(code, namespace)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_the_examples_of_a_page_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = _scratch(tmp_path)
    monkeypatch.chdir(cwd)
    monkeypatch.syspath_prepend(str(cwd))
    namespace: dict[str, object] = {"__name__": "__docs__"}
    included: list[Block] = []
    commands: list[str] = []
    history: list[str] = []  # what ran before, for _RUNS
    for block in examples(page):
        if block.language == "python" and block.included():
            included.append(block)
        elif block.language == "python" or block.language not in SHELL_LANGUAGES:
            run_python(block, namespace, cwd, history)  # (or write a file: script=NAME)
        else:
            commands += run_console(block, cwd, history)
    ran = {word for command in commands for word in shlex.split(command)[1:3]}
    for block in included:
        assert block.included() in ran, (
            f"{block.where()}: shows {block.included()}, which no command of the page runs"
        )


# --- the harness itself, and the API reference ---------------------------------------------------


def test_every_shell_block_runs_or_says_why_not() -> None:
    """``examples`` refuses a shell block without ``$`` commands or a marker; the pages do
    have console blocks that run (the check has something to check)."""
    shell = [
        block for page in PAGES for block in examples(page) if block.language in SHELL_LANGUAGES
    ]
    assert shell, "no page has a console block that runs"
    assert all("\n$ " in "\n" + block.text for block in shell)


def test_output_is_matched_in_order_and_by_whole_lines() -> None:
    block = Block(ROOT / "README.md", 1, "console", "")
    _check_output(block, "x", ["a ... c", "...", "d"], "a b c\nx\nd\n")
    with pytest.raises(AssertionError, match="did not print"):
        _check_output(block, "x", ["d", "a b c"], "a b c\nd\n")
    with pytest.raises(AssertionError, match="did not print"):
        _check_output(block, "x", ["b"], "a b c\n")


def test_a_block_after_a_skip_marker_does_not_run(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-test: skip -->\n```python\nraise SystemExit\n```\n\n"
        "```text\nnot an example\n```\n\n```python\nx = 1\n```\n"
    )
    assert [b.text for b in examples(page)] == ["x = 1\n"]
    page.write_text("```sh\nmake demo\n```\n")
    with pytest.raises(AssertionError, match="without `\\$ ` commands"):
        examples(page)


def _documented_names() -> set[str]:
    names: set[str] = set()
    for page in (ROOT / "docs" / "api").glob("*.md"):
        text = page.read_text(encoding="utf-8")
        names |= set(re.findall(r"^::: ckptsim\.(\w+)\s*$", text, re.MULTILINE))
        for members in re.findall(r"^::: ckptsim\.testing\n((?:\s{4}.*\n)+)", text, re.MULTILINE):
            names |= {f"testing.{m}" for m in re.findall(r"^\s+- (\w+)\s*$", members, re.M)}
    return names


def test_the_api_reference_names_every_public_name() -> None:
    import ckptsim  # noqa: PLC0415
    import ckptsim.testing  # noqa: PLC0415

    testing = {
        f"testing.{name}"
        for name, value in vars(ckptsim.testing).items()
        if not name.startswith("_")
        and (
            (
                (inspect.isclass(value) or inspect.isfunction(value))
                and value.__module__ == "ckptsim.testing"
            )
            or name.isupper()  # its constants: SHRINK_SECONDS, the kinds of faults, ...
        )
    }
    missing = (set(ckptsim.__all__) | testing) - _documented_names()
    assert not missing, f"not in the API reference (docs/api/): {sorted(missing)}"


def test_the_configuration_page_names_every_key() -> None:
    from runtime.config import OPTIONS  # noqa: PLC0415 - what `ckptsim config` lists

    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = [option.key for option in OPTIONS if f"| `{option.key}` |" not in page]
    assert not missing, f"docs/configuration.md does not describe: {missing}"
