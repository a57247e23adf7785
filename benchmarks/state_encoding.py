"""State snapshot encoding: format version 3 (msgpack with extension types, ``serde.pack``)
against version 2 (tagged JSON, ``serde.encode`` + ``json.dumps``), in one process.

    python benchmarks/state_encoding.py [--keys 200000] [--repeat 5]

Keyed state of ``--keys`` keys in 128 key groups, shaped as ``runtime.state`` snapshots it,
three kinds of values: word counts (str -> int), running tuples (str -> (int, float, str))
and Spark-typed rows (int -> TupleRow of Decimal, aware datetime, date). For each, the time to
encode a snapshot to bytes and to decode the bytes back (CPU time of this process, median of
``--repeat``), the sizes, and the ratio version 2 / version 3 (above 1: version 3 is faster).
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import statistics
import sys
import time
import zoneinfo
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime import serde
from runtime.row import row_class

GROUPS = 128


def snapshot(keys: list[Any], values: list[Any]) -> dict[str, Any]:
    groups: dict[str, dict[str, list[Any]]] = {}
    for key, value in zip(keys, values, strict=True):
        group = groups.setdefault(str(hash(key) % GROUPS), {"keys": [], "values": []})
        group["keys"].append(key)
        group["values"].append(value)
    return {
        "max_parallelism": GROUPS,
        "states": {"total": {"kind": "value", "key_groups": groups}},
    }


def workloads(n: int) -> dict[str, dict[str, Any]]:
    sale = row_class(["amount", "at", "day"])
    ny = zoneinfo.ZoneInfo("America/New_York")
    start = dt.datetime(2024, 1, 1, tzinfo=ny)
    return {
        "word counts": snapshot([f"w{i}" for i in range(n)], list(range(n))),
        "tuples": snapshot(
            [f"u{i}" for i in range(n)], [(i, i / 3, f"s{i % 97}") for i in range(n)]
        ),
        "spark rows": snapshot(
            list(range(n)),
            [
                sale.make(
                    (
                        decimal.Decimal(i) / 100,
                        start + dt.timedelta(seconds=i),
                        dt.date(2024, 1, 1) + dt.timedelta(days=i % 365),
                    )
                )
                for i in range(n)
            ],
        ),
    }


def v2_encode(value: Any) -> bytes:
    return json.dumps(serde.encode(value), separators=(",", ":"), sort_keys=True).encode()


def v2_decode(data: bytes) -> Any:
    return serde.decode(json.loads(data))


def timed(run: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        start = time.process_time()
        out = run()
        times.append(time.process_time() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"state snapshot encoding, {args.keys:,} keys, median of {args.repeat} (CPU s)")
    print(f"{'workload':<12} {'':>6} {'v2 (JSON)':>10} {'v3 (msgpack)':>13} {'v2/v3':>6}")
    for name, value in workloads(args.keys).items():
        e2, d2 = timed(lambda value=value: v2_encode(value), args.repeat)
        e3, d3 = timed(lambda value=value: serde.pack(value), args.repeat)
        r2, _ = timed(lambda d2=d2: v2_decode(d2), args.repeat)
        r3, _ = timed(lambda d3=d3: serde.unpack(d3), args.repeat)
        print(f"{name:<12} {'encode':>6} {e2:>10.3f} {e3:>13.3f} {e2 / e3:>6.2f}")
        print(f"{'':<12} {'decode':>6} {r2:>10.3f} {r3:>13.3f} {r2 / r3:>6.2f}")
        print(f"{'':<12} {'MB':>6} {len(d2) / 1e6:>10.1f} {len(d3) / 1e6:>13.1f}")


if __name__ == "__main__":
    main()
