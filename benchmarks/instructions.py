"""The parallelism-1 job of ``benchmarks/throughput.py`` against its plain loop, counted in CPU
instructions per record (``valgrind --tool=callgrind``), which a busy machine does not move.

    python benchmarks/instructions.py [--records 300000]

Each side runs in a process of its own under callgrind twice, on ``--records`` records and on
1,000; the difference divided by the difference in records is its instructions per record
(start-up, imports and a job's fixed costs cancel out). The plain loop runs with the job's
young-generation GC threshold, as ``throughput.py``'s "same GC setting" loop. The ratio (loop
instructions / job instructions) is the speed ratio the record path would have if every
instruction cost the same; the target of ``throughput.py``'s parallelism-1 figure is >= 0.85.
Without valgrind it says so and exits 0. Takes a minute or two (callgrind runs Python about
50x slower).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: one side of the comparison, run by ``_run_one`` in a child process
_CHILD = """
import gc, logging, sys
sys.path.insert(0, {root!r})
import structlog
structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
from benchmarks.throughput import JOB_GC, plain_loop, timed_run
side, n = {side!r}, {n}
if side == "loop":
    default = gc.get_threshold()
    gc.set_threshold(JOB_GC, *default[1:])
    plain_loop(n, 1000)
else:
    timed_run(n, 1000, 1, None)
"""


def instructions(side: str, n: int) -> int:
    """Instructions callgrind counted for a process that runs ``side`` on ``n`` records."""
    code = _CHILD.format(root=str(ROOT), side=side, n=n)
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            code,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind of the {side} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("instructions per record: valgrind is not installed (apt-get install valgrind)")
        return 0
    n, small = args.records, 1_000
    per_record = {}
    for side in ("loop", "job"):
        per_record[side] = (instructions(side, n) - instructions(side, small)) / (n - small)
    print(
        f"instructions per record (callgrind, {n:,} minus {small:,} records): plain loop "
        f"{per_record['loop']:,.0f}, job at parallelism 1 {per_record['job']:,.0f}"
    )
    print(
        f"plain loop / job = {per_record['loop'] / per_record['job']:.3f}   (the parallelism-1 "
        "target of throughput.py is >= 0.85)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
