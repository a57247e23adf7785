"""The ``ckptsim`` command line. The only place logging (structlog) is configured.

Commands:
  conformance PATH...   run conformance scenarios (files, or folders searched for *.scn)
  demo                  a scripted walk through an aligned and an unaligned checkpoint
  config                list the configuration keys ckptsim understands, with defaults

Exit status: 0 success, 1 a check failed (a scenario failed), 2 bad input (a missing path,
an unknown command or option).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def configure_logging(fmt: str = "auto", level: str = "info") -> None:
    """Console renderer on a TTY, JSON lines otherwise (or as asked)."""
    if fmt == "auto":
        fmt = "console" if sys.stderr.isatty() else "json"
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer() if fmt == "console" else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


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
        result = run_scenario(text, str(file))
        results.append(result)
        if args.verbose or not result.passed or not args.quiet:
            print(result.report())
    print(summary(results))
    return EXIT_OK if all(r.passed for r in results) else EXIT_FAILED


def cmd_demo(args: argparse.Namespace) -> int:
    from actors.walkthrough import walkthrough

    walkthrough()
    return EXIT_OK


def cmd_config(args: argparse.Namespace) -> int:
    from runtime.config import OPTIONS

    for opt in OPTIONS:
        default = "(none)" if opt.default is None else opt.default
        deprecated = (
            f"  [deprecated: {', '.join(opt.deprecated_keys)}]" if opt.deprecated_keys else ""
        )
        print(f"{opt.key} = {default}{deprecated}\n    {opt.description}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ckptsim", description="Apache Flink's checkpointing protocol, executable in Python."
    )
    parser.add_argument("--log-format", choices=("auto", "console", "json"), default="auto")
    parser.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), default="warning"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    conformance = sub.add_parser("conformance", help="run conformance scenarios (*.scn)")
    conformance.add_argument("paths", nargs="+", metavar="PATH")
    conformance.add_argument(
        "-q", "--quiet", action="store_true", help="print only failures and the summary"
    )
    conformance.add_argument("-v", "--verbose", action="store_true")
    conformance.set_defaults(func=cmd_conformance)
    demo = sub.add_parser("demo", help="walk through an aligned and an unaligned checkpoint")
    demo.set_defaults(func=cmd_demo)
    config = sub.add_parser("config", help="list supported configuration keys")
    config.set_defaults(func=cmd_config)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return EXIT_USAGE if exit_.code not in (0, None) else EXIT_OK
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    configure_logging(args.log_format, args.log_level)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
