"""The ``ckptsim`` command line. The only place logging (structlog) is configured.

Commands:
  run SCRIPT [-- ARGS]  run a topology script or a PyFlink program on actors (see
                        ckptsim/_scripts.py for the contract; ARGS: the program's own arguments)
  conformance PATH...   run conformance scenarios (files, or folders searched for *.scn)
  check TRACE.jsonl     re-validate a run's trace offline against the protocol's invariants
  demo                  a scripted walk through an aligned and an unaligned checkpoint
  config                list the configuration keys ckptsim understands, with defaults

Exit status: 0 success, 1 the job failed or a check failed, 2 bad input (a script that
cannot run, an unknown key, a missing path, an unknown command or option, a checkpoint that
cannot be restored, an incomplete trace, a --stats or --timeline file that could not be
written), 130 Ctrl-C, 143 SIGTERM. After Ctrl-C or SIGTERM, --stats, --timeline and --trace
are written for what ran.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import math
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from actors.protocol import CANNOT_CROSS
from actors.stdout import discard_stdout, unless_reader_left
from ckptsim._client import _unwritable, add_commands, add_run_options
from ckptsim._logging import configure_logging, logging_restored

if TYPE_CHECKING:
    from actors.launcher import JobObserver
    from runtime.job import JobResult

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _scenario_files(paths: Sequence[str]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(path.rglob("*.scn")))
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(raw)
    return files


def _settings(pairs: list[str]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"-D takes key=value, got {pair!r}")
        settings[key.strip()] = value.strip()
    return settings


def config_file_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What ``$FLINK_CONF_DIR/config.yaml`` (Flink 2.x's configuration file) sets, as Flink's
    CLI reads it before ``-D``: the keys ckptsim takes; the others (a copy of Flink's
    ``conf/`` has JVM, memory and cluster addresses) are named once on stderr as changing
    nothing here. ``ValueError`` if the directory has no config.yaml (as Flink's CLI)."""
    from runtime.config import is_known, key_meant, parse_config_yaml

    conf_dir = (os.environ if environ is None else environ).get("FLINK_CONF_DIR")
    if not conf_dir:
        return {}
    path = Path(conf_dir) / "config.yaml"
    if Path(conf_dir).is_file():
        raise ValueError(
            f"FLINK_CONF_DIR={conf_dir} is a file: set it to the directory that holds config.yaml"
        )
    if not path.is_file():
        legacy = (
            " (Flink 2 no longer reads flink-conf.yaml)"
            if (Path(conf_dir) / "flink-conf.yaml").is_file()
            else ""
        )
        raise ValueError(f"FLINK_CONF_DIR={conf_dir} has no config.yaml file{legacy}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        line = error.object[: error.start].count(b"\n") + 1
        raise ValueError(
            f"{path}, line {line}: byte 0x{error.object[error.start]:02x} is not UTF-8: save "
            "the file as UTF-8, as Flink reads it"
        ) from None
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror or error}") from None
    settings = parse_config_yaml(text, str(path))
    unused = sorted(key for key in settings if not is_known(key))
    # a near miss of a key ckptsim takes is a typo (Flink would ignore it too, silently);
    # the others are Flink's cluster keys (memory, JVM, ports), which change nothing here
    typos = {key: meant for key in unused if (meant := key_meant(key, cutoff=0.9))}
    for key, meant in typos.items():
        print(
            f"ckptsim: {path}: '{key}' is not a key ckptsim knows, and is ignored. Did you "
            f"mean '{meant}'?",
            file=sys.stderr,
        )
    unused = [key for key in unused if key not in typos]
    if unused:
        print(
            f"ckptsim: {path}: {', '.join(unused)} change nothing here (ckptsim runs in this "
            "process; 'ckptsim config' lists the keys it takes)",
            file=sys.stderr,
        )
    return {key: value for key, value in settings.items() if is_known(key)}


def cmd_run(args: argparse.Namespace) -> int:
    from runtime.config import ConfigError, Configuration, local_path

    try:
        timeout = _timeout(args.timeout)
        # $FLINK_CONF_DIR/config.yaml first, -D over it (as Flink's CLI)
        settings = {**config_file_settings(), **_settings(args.define)}
        if args.parallelism is not None:
            settings["parallelism.default"] = str(args.parallelism)
        flag = "--from-savepoint" if args.from_savepoint is not None else "--from-checkpoint"
        start_from = (
            args.from_savepoint if args.from_savepoint is not None else args.from_checkpoint
        )
        if start_from is not None and not start_from.strip():  # -s "$SAVEPOINT", unset
            raise ValueError(
                f"{flag} is empty: give the chk-N or savepoint-... directory a previous run "
                "printed (was the shell variable set?)"
            )
        if start_from:
            start_from = local_path(start_from)  # a file: URI, as ckptsim savepoint prints it
            settings["execution.state-recovery.path"] = start_from
        if args.allow_non_restored_state:
            settings["execution.state-recovery.ignore-unclaimed-state"] = "true"
        conf = Configuration(settings)  # unknown keys and bad values fail before the script runs
        if conf["ckptsim.faults"]:  # (their targets are checked against the job's tasks later)
            from actors.faults import parse_faults

            parse_faults(conf["ckptsim.faults"])
    except (ValueError, ConfigError) as error:
        print(f"ckptsim run: {one_line(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    if start_from:
        from runtime.storage import CorruptCheckpointError, load_checkpoint

        try:
            load_checkpoint(start_from)
        except CorruptCheckpointError as error:
            print(
                one_line(
                    f"ckptsim run: {flag} {start_from}: not a usable checkpoint or savepoint: "
                    f"{error}. Give the chk-N or savepoint-... directory (or its _metadata file) "
                    "that a previous run printed as 'Retained checkpoint: ...' or 'Savepoint: ...'."
                ),
                file=sys.stderr,
            )
            return EXIT_USAGE
    from ckptsim._client import RunOutputs, UsageError

    try:  # --stats, --timeline, --web: checked, and the server started, before the job
        outputs = RunOutputs.prepare(args, settings)
    except UsageError as error:
        print(f"ckptsim run: {one_line(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return _run_with_outputs(args, settings, outputs, timeout)
    finally:
        outputs.close()


def _run_with_outputs(
    args: argparse.Namespace, settings: dict[str, str], outputs: Any, timeout: float | None
) -> int:
    from actors.launcher import JobCancellationTimeout
    from actors.session import Session
    from actors.simulation import SimulationStalled
    from ckptsim import _report as report
    from ckptsim._scripts import ScriptError, ScriptTimeout, is_pyflink_program, run_script
    from runtime.restart import BOUNDED_RESTARTS

    interactive = sys.stderr.isatty() and not args.quiet
    display = report.ProgressDisplay() if interactive else None
    # a PyFlink program's standard output is what Flink would print: ckptsim's own lines go
    # to stderr (as they do when the archive goes to stdout)
    own_lines_to_stderr = args.stats == "-" or is_pyflink_program(args.script)

    options: dict[str, object] = {"timeout": timeout, **outputs.options}
    if getattr(args, "trace_writer", None) is not None:
        options["trace"] = args.trace_writer
    if not args.quiet:  # Flink's CLI names each job it submits; so does ckptsim, first
        stream = sys.stderr if own_lines_to_stderr else sys.stdout
        options["observer"] = _Announcer(options.get("observer"), stream)  # type: ignore[arg-type]
    if args.simulate:
        options["runtime"] = "simulation"
    if args.seed is not None:
        options["seed"] = args.seed
    if display is not None:
        options["progress"] = display.show
    session = Session(settings=settings, options=options, bounded_restarts=True)
    try:
        with _sigterm_interrupts(), display or contextlib.nullcontext():
            result = run_script(args.script, session, timeout=timeout, argv=args.script_args)
    except ScriptError as error:
        print(f"ckptsim run: {one_line(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    except ScriptTimeout as where:
        print(
            f"ckptsim run: {where}: stopped after --timeout {args.timeout} s: the script's own "
            "code (outside its job) was still running",
            file=sys.stderr,
        )
        return EXIT_FAILED
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM: the job was cancelled and cleaned up
        problems = outputs.finish()  # --stats, --timeline of what ran (--trace: main closes it)
        code = _interrupted(stop, quiet=args.quiet, summary_to_stderr=own_lines_to_stderr)
        for problem in problems:
            print(f"ckptsim run: {problem}", file=sys.stderr)
        return code
    except SimulationStalled as error:
        print(f"ckptsim run: the simulation stalled: {error}", file=sys.stderr)
        return EXIT_FAILED
    except JobCancellationTimeout as error:
        print(f"ckptsim run: {error}", file=sys.stderr)
        return EXIT_FAILED
    problems = outputs.finish()  # the archive (--stats), the timeline
    if not args.quiet:  # on stderr when the archive or a PyFlink program's output is on stdout
        print(report.summary_table(result), file=sys.stderr if own_lines_to_stderr else sys.stdout)
    # a job the program itself cancelled (execute_and_collect's limit) is no failure
    failed = not (result.succeeded or result.cancelled_by_program)
    cause = result.root_cause
    if failed and cause is not None:  # the user's own frames, once
        print(f"ckptsim run: {cause.describe()}\n{cause.traceback}".rstrip(), file=sys.stderr)
    if result.restarts and failed and result.name in session.bounded:
        print(
            f"ckptsim run: the job restarted at most {BOUNDED_RESTARTS[_ATTEMPTS]} times, the "
            "command line's default when a checkpointed job configures no restart strategy; "
            "for Flink's (unlimited attempts) give -D restart-strategy.type=exponential-delay",
            file=sys.stderr,
        )
    for problem in problems:  # after the job's own outcome: what it produced stands
        print(f"ckptsim run: {problem}", file=sys.stderr)
    outputs.serve()  # --web: until Ctrl-C
    if problems:
        return EXIT_USAGE
    if not result.succeeded and result.failure is not None and CANNOT_CROSS in result.failure:
        # records that cannot be pickled (runtime="processes"): the script's, as a usage error
        print(f"ckptsim run: {result.failure.splitlines()[0]}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_FAILED if failed else EXIT_OK


class _Announcer:
    """Prints ``Job has been submitted with JobID ...`` as a job starts (as ``flink run``
    does), then passes the news on to the observer the other outputs (``--web``) need."""

    def __init__(self, inner: JobObserver | None, stream: IO[str]) -> None:
        self.inner = inner
        self.stream = stream

    def job_started(self, **kw: Any) -> None:
        with unless_reader_left():  # the reader left (`| true`): the job runs on all the same
            print(f"Job has been submitted with JobID {kw['job_id']}", file=self.stream, flush=True)
        if self.inner is not None:
            self.inner.job_started(**kw)

    def job_ended(self, job_id: str, result: JobResult) -> None:
        if self.inner is not None:
            self.inner.job_ended(job_id, result)


def cmd_conformance(args: argparse.Namespace) -> int:
    from runtime.conformance.runner import run_scenario, summary

    try:
        files = _scenario_files(args.paths)
    except FileNotFoundError as missing:
        print(f"ckptsim conformance: no such file or directory: {missing}", file=sys.stderr)
        return EXIT_USAGE
    if not files:
        print(f"ckptsim conformance: no *.scn files under {' '.join(args.paths)}", file=sys.stderr)
        return EXIT_USAGE
    results = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            print(f"FAIL {file.stem}: cannot read {file}: {error}")
            return EXIT_FAILED
        result = run_scenario(text, str(file), through_task=args.through_task)
        results.append(result)
        if args.verbose or not result.passed or not args.quiet:
            print(result.report())
    print(summary(results))
    return EXIT_OK if all(r.passed for r in results) else EXIT_FAILED


def cmd_check(args: argparse.Namespace) -> int:
    from runtime.tracecheck import TraceFormatError, check_trace, parse_trace

    try:
        with open(args.trace_file, encoding="utf-8") as handle:
            events = parse_trace(handle)
    except (OSError, UnicodeDecodeError) as error:
        print(f"ckptsim check: cannot read {args.trace_file}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except TraceFormatError as error:
        print(f"ckptsim check: {args.trace_file}: {error}", file=sys.stderr)
        return EXIT_USAGE
    if not events:
        print(f"ckptsim check: {args.trace_file} holds no events", file=sys.stderr)
        return EXIT_USAGE
    try:
        report = check_trace(events)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as error:
        # a field of a shape ckptsim never writes, that parse_trace's checks let through
        print(
            f"ckptsim check: {args.trace_file}: not a trace ckptsim wrote ({type(error).__name__}:"
            f" {one_line(str(error))}); give the file ckptsim run --trace wrote, unchanged",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if report.violation is not None and report.violation.incomplete:
        print(f"ckptsim check: {args.trace_file}: {report.violation.render()}", file=sys.stderr)
        return EXIT_USAGE
    if report.violation is not None:
        print(report.violation.render())
        return EXIT_FAILED
    print(report.summary())
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from ckptsim._walkthrough import walkthrough

    walkthrough()
    return EXIT_OK


def cmd_config(args: argparse.Namespace) -> int:
    from runtime.config import OPTIONS, format_duration, format_memory

    for opt in OPTIONS:
        default: object = "(none)" if opt.default is None else opt.default
        if opt.kind == "duration" and isinstance(opt.default, int):
            default = format_duration(opt.default)
        elif opt.kind == "memory" and isinstance(opt.default, int) and opt.default >= 0:
            default = format_memory(opt.default)
        elif isinstance(opt.default, bool):
            default = str(opt.default).lower()  # as Flink writes it
        elif opt.kind == "list":
            default = ";".join(opt.default) if opt.default else "(none)"
        keys = opt.deprecated_keys
        deprecated = (
            f"  [also read from the deprecated key{'s' if len(keys) > 1 else ''} {', '.join(keys)}]"
            if keys
            else ""
        )
        inert = f"  [no effect in ckptsim: {opt.inert}]" if opt.inert else ""
        print(f"{opt.key} = {default}{deprecated}{inert}\n    {opt.description}")
    return EXIT_OK


_ATTEMPTS = "restart-strategy.fixed-delay.attempts"
EXIT_INTERRUPTED, EXIT_TERMINATED = 128 + signal.SIGINT, 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM during ``ckptsim run``: handled as Ctrl-C is (the job is cancelled, its actors
    stopped and its temporary checkpoint directory removed), then exit 143."""


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """While the run lasts, SIGTERM raises ``Terminated`` in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupted(stop: KeyboardInterrupt, *, quiet: bool, summary_to_stderr: bool = False) -> int:
    """One line (after the cancelled job's summary, if a job was running); 130 or 143."""
    from actors.launcher import JobInterrupted
    from ckptsim import _report as report

    result = stop.result if isinstance(stop, JobInterrupted) else None
    cause = stop.cause if isinstance(stop, JobInterrupted) else stop
    if result is not None and not quiet:
        print(report.summary_table(result), file=sys.stderr if summary_to_stderr else sys.stdout)
    terminated = isinstance(cause, Terminated)
    what = "terminated (SIGTERM)" if terminated else "interrupted (Ctrl-C)"
    done = f": job {result.name!r} was cancelled" if result is not None else ""
    print(f"ckptsim run: {what}{done}", file=sys.stderr)
    return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(text: str) -> str:
    """``text`` on one line: control characters (a newline in a -D key or a path, a terminal
    escape) written as Python escapes them (``\\n``, ``\\x1b``)."""
    return _CONTROL.sub(lambda found: repr(found.group())[1:-1], text)


def _timeout(text: str | None) -> float | None:
    """``--timeout``: seconds, a number > 0 that a wait can take (not nan, not inf)."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= threading.TIMEOUT_MAX:
        raise ValueError(
            f"--timeout takes a number of seconds > 0 and at most {threading.TIMEOUT_MAX:.0f}, "
            f"got {text!r}"
        )
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a seed is a whole number >= 0, got {text!r}") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(
            f"a seed is a whole number from 0 to 2**63 - 1, got {text!r}"
        )
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ckptsim", description="Apache Flink's checkpointing protocol, executable in Python."
    )
    parser.add_argument("--version", action="version", version=f"ckptsim {_version()}")
    _logging_options(parser, default=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser(
        "run",
        help="run a topology script or a PyFlink program on actors",
        usage="ckptsim run SCRIPT [options] [-- ARGS...]  (ARGS: a PyFlink program's own)",
    )
    run.add_argument("script", metavar="SCRIPT")
    run.add_argument(
        "-D",
        dest="define",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Flink configuration setting, e.g. -D execution.checkpointing.interval=100ms",
    )
    run.add_argument("--parallelism", "-p", type=int, default=None)
    run.add_argument("--trace", metavar="FILE", help="write every protocol event as a JSON line")
    add_run_options(run)  # --stats, --web, --flink-dashboard, --timeline
    run.add_argument(
        "--timeout",
        default=None,
        metavar="SECONDS",
        help="cancel the job after this long (virtual seconds with --simulate); the script's "
        "own code outside its jobs gets as many real seconds",
    )
    run.add_argument(
        "--simulate",
        action="store_true",
        help="run on the deterministic simulation (one thread, virtual time; see --seed)",
    )
    run.add_argument(
        "--seed",
        type=_seed,
        default=None,
        metavar="N",
        help="seed of every random choice, and of the schedule with --simulate (default: "
        "ckptsim.seed)",
    )
    start = run.add_mutually_exclusive_group()
    start.add_argument(
        "-s",
        "--fromSavepoint",
        "--from-savepoint",
        dest="from_savepoint",
        metavar="PATH",
        help="start from this savepoint, a path or a file: URI as ckptsim savepoint prints it "
        "(Flink's -s; sets execution.state-recovery.path)",
    )
    start.add_argument(
        "--from-checkpoint",
        metavar="PATH",
        help="start from this retained checkpoint, a chk-N directory a run printed as "
        "'Retained checkpoint: ...' (sets execution.state-recovery.path)",
    )
    run.add_argument(
        "-n",
        "--allowNonRestoredState",
        "--allow-non-restored-state",
        dest="allow_non_restored_state",
        action="store_true",
        help="start even when the savepoint holds state of an operator the job no longer has "
        "(Flink's -n; sets execution.state-recovery.ignore-unclaimed-state)",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="no progress line and no summary")
    run.set_defaults(func=cmd_run)
    conformance = sub.add_parser("conformance", help="run conformance scenarios (*.scn)")
    conformance.add_argument("paths", nargs="+", metavar="PATH")
    conformance.add_argument(
        "-q", "--quiet", action="store_true", help="print only failures and the summary"
    )
    conformance.add_argument("-v", "--verbose", action="store_true")
    conformance.add_argument(
        "--through-task",
        action="store_true",
        help="run gate scenarios through a running task's input path (a task core with a "
        "pass-through chain) instead of the bare gate",
    )
    conformance.set_defaults(func=cmd_conformance)
    check = sub.add_parser(
        "check", help="check a run's trace (--trace FILE) against the protocol's invariants"
    )
    check.add_argument("trace_file", metavar="TRACE.jsonl")
    check.set_defaults(func=cmd_check)
    demo = sub.add_parser("demo", help="walk through an aligned and an unaligned checkpoint")
    demo.set_defaults(func=cmd_demo)
    config = sub.add_parser("config", help="list supported configuration keys")
    config.set_defaults(func=cmd_config)
    add_commands(sub)  # serve, timeline, list, cancel, savepoint, stop
    for command in sub.choices.values():  # `ckptsim run --log-level info SCRIPT` too
        _logging_options(command, default=False)
    return parser


def _hint(command: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]) -> str:
    """For words a command does not take: the option meant (``--simulat``: ``--simulate``),
    or, for ``run``, where a program's own arguments go."""
    import difflib

    options = [o for action in command._actions for o in action.option_strings]
    for word in unknown:
        if word.startswith("--"):
            close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1, cutoff=0.75)
            if close:
                return f" (did you mean {close[0]}?)"
    if getattr(args, "command", None) == "run" and {"-d", "--detached"} & set(unknown):
        return (
            " (ckptsim run has no detached mode like 'flink run -d': run the job in the "
            f"background with its REST API, ckptsim run {args.script} --web &, then use "
            "ckptsim list, savepoint, stop and cancel, or Flink's own CLI, against it; "
            "docs/flink-tools.md)"
        )
    if getattr(args, "command", None) == "run":
        return (
            f" (a program's own arguments go after --: ckptsim run {args.script} [options] -- "
            f"{' '.join(unknown)})"
        )
    return ""


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser of each command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _logging_options(parser: argparse.ArgumentParser, *, default: bool) -> None:
    """--log-format and --log-level, before the command (with the defaults) or after it
    (given there, they win)."""
    parser.add_argument(
        "--log-format",
        type=str.lower,
        choices=("auto", "console", "json"),
        default="auto" if default else argparse.SUPPRESS,
    )
    parser.add_argument(
        "--log-level",
        type=str.lower,  # INFO as Python's logging and Flink's log4j write it
        choices=("debug", "info", "warning", "error"),
        default="warning" if default else argparse.SUPPRESS,
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ckptsim")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "(not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in words:  # `ckptsim run SCRIPT [options] -- ARGS...`: the script's own arguments
        at = words.index("--")
        words, script_args = words[:at], words[at + 1 :]
    try:
        args, unknown = parser.parse_known_args(words)
        if unknown:  # the command's own usage, not the top-level one
            command = _subparsers(parser).get(getattr(args, "command", None) or "", parser)
            command.error(
                f"unrecognized arguments: {' '.join(unknown)}{_hint(command, args, unknown)}"
            )
        args.script_args = script_args
    except SystemExit as exit_:
        return EXIT_USAGE if exit_.code not in (0, None) else EXIT_OK
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    trace = None
    if getattr(args, "trace", None):
        from actors.trace import TraceWriter
        from runtime.config import local_path

        try:  # every protocol event; the per-buffer ones too with --log-level debug
            path = local_path(args.trace)  # a file: URI is a path as well
            why = _unwritable(path)  # what to fix, said of the file asked for
            if why is not None:
                print(f"ckptsim: cannot write the trace file {path}: {why}", file=sys.stderr)
                return EXIT_USAGE
            trace = TraceWriter(path, level="debug" if args.log_level == "debug" else "info")
        except (OSError, ValueError) as error:
            print(f"ckptsim: cannot write the trace file: {one_line(str(error))}", file=sys.stderr)
            return EXIT_USAGE
        args.trace_writer = trace
    with logging_restored():  # leave logging as it was (matters when embedded)
        configure_logging(args.log_format, args.log_level)
        result: int | None = None
        try:
            result = args.func(args)
        except KeyboardInterrupt:
            print("ckptsim: interrupted (Ctrl-C)", file=sys.stderr)
            result = EXIT_INTERRUPTED
        except BrokenPipeError:  # e.g. `ckptsim run job.py | head`: the reader left, so do we
            discard_stdout()
            result = EXIT_OK
        finally:
            if trace is not None:
                if result == EXIT_USAGE and trace.seq == 0:
                    trace.discard()  # refused before it began: an earlier trace stays
                else:
                    trace.close()
    assert result is not None
    if trace is not None and trace.failed is not None and result in (EXIT_OK, EXIT_FAILED):
        result = EXIT_USAGE  # (said on standard error when it failed) a file asked for is not
    return result


def console() -> None:
    """The ``ckptsim`` program: ``main``, then exit even if the script left threads running
    (Python would wait for every non-daemon thread at exit, and a script's forgotten thread
    would keep the finished run from ever returning)."""
    _standard_streams_open()
    code = main()
    if sys.stdout is not None:  # None: started with standard output closed (`>&-`)
        with unless_reader_left():  # what is still buffered, before Python's flush at exit
            sys.stdout.flush()
    left = [
        t
        for t in threading.enumerate()
        if t is not threading.main_thread() and not t.daemon and t.is_alive()
    ]
    if not left:
        sys.exit(code)
    names = ", ".join(repr(t.name) for t in left)
    print(f"ckptsim: not waiting for thread(s) the script left running: {names}", file=sys.stderr)
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is not None:
        run_exit_functions()  # what a normal exit runs (after waiting for those threads)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    os._exit(code)


def _standard_streams_open() -> None:
    """A program started with standard input, output or error closed (``>&-``) gets
    ``os.devnull`` there, as a daemon does: else the first file it opens (a checkpoint's state,
    the trace) would take descriptor 1 or 2 and receive what a thread, a child process or the
    JVM of Spark writes to it. Python's ``sys.stdout`` stays None: ``print`` writes nothing."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


if __name__ == "__main__":
    console()
