"""What the service costs over embedded calls: one client, one SQLite store, depth ~200.

    python bench/service.py [--records 30000] [--rounds 400]

Builds one SQLite file of chat-like conversations (``chatlike.py``), starts ``branchmem
serve`` on it (a subprocess on loopback, with an API key, as deployed) and opens the same
file embedded in this process. Anchors are main-line events at depth 200. After one untimed
pass over every anchor on both sides, interleaved rounds (the order within a round
alternates) time ``Memory.visible(anchor)`` against ``Client.visible(anchor)`` and
``Memory.search`` against ``Client.search``, check that both answered the same, and print
p50/p99 of each and the ratio service / embedded (goal for ``visible``: <= 1.5). Writes
JSON to bench/results/service.json.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from branchmem import Memory
from branchmem.client import Client
from branchmem.server.keys import KeyRing
from chatlike import conversations
from load import Worker

NAMESPACE = "bench"
QUERIES = ["turn", "abandoned edit", "summary", "conversation fork", "turn 150"]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def build(path: str, records: int) -> list[str]:
    """The store at ``path``; returns the depth-200 anchors, one per conversation."""
    anchors: list[str] = []
    with Memory.open(path) as mem:
        for conv in conversations(records):
            mem.add_events(conv.events, namespace=NAMESPACE)
            mem.add_records(conv.records, namespace=NAMESPACE)
            anchors.append(conv.main_line[200])
    return anchors


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def measure(
    mem: Memory, client: Client, anchors: list[str], rounds: int
) -> dict[str, dict[str, list[float]]]:
    """Interleaved rounds, after one untimed pass over every anchor on both sides (each
    process has its own caches: both start warm)."""
    rng = random.Random(1)
    timings: dict[str, dict[str, list[float]]] = {
        op: {"embedded": [], "service": []} for op in ("visible", "search")
    }
    warmup = list(anchors)
    for index in range(len(warmup) + rounds):
        anchor = warmup[index] if index < len(warmup) else rng.choice(anchors)
        query = rng.choice(QUERIES)
        calls: dict[str, dict[str, Callable[[], Any]]] = {
            "visible": {
                "embedded": functools.partial(mem.visible, anchor, namespace=NAMESPACE),
                "service": functools.partial(client.visible, anchor, namespace=NAMESPACE),
            },
            "search": {
                "embedded": functools.partial(mem.search, query, anchor, namespace=NAMESPACE),
                "service": functools.partial(client.search, query, anchor, namespace=NAMESPACE),
            },
        }
        sides = ["embedded", "service"] if index % 2 == 0 else ["service", "embedded"]
        for op, by_side in calls.items():
            answers = {}
            for side in sides:
                seconds, answers[side] = timed(by_side[side])
                if index >= len(warmup):
                    timings[op][side].append(seconds)
            if answers["embedded"] != answers["service"]:
                raise SystemExit(f"{op} at {anchor!r}: the service answered differently")
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "service.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="branchmem-service-") as folder:
        path = os.path.join(folder, "service.db")
        started = time.perf_counter()
        anchors = build(path, args.records)
        built = time.perf_counter() - started
        with Memory.open(path) as mem:
            api_key, _ = KeyRing(mem).create("bench", [NAMESPACE])
            worker = Worker(path)
            worker.start()
            try:
                worker.wait_ready()
                with Client(worker.url, api_key) as client:
                    gc.freeze()
                    visible_size = len(mem.visible(anchors[0], namespace=NAMESPACE))
                    timings = measure(mem, client, anchors, args.rounds)
            finally:
                worker.stop()
    rows = []
    for op, sides in timings.items():
        row: dict[str, Any] = {"operation": op}
        for side, values in sides.items():
            row[f"{side}_p50_ms"] = 1000 * percentile(values, 0.5)
            row[f"{side}_p99_ms"] = 1000 * percentile(values, 0.99)
        row["ratio_p50"] = row["service_p50_ms"] / row["embedded_p50_ms"]
        row["ratio_p99"] = row["service_p99_ms"] / row["embedded_p99_ms"]
        rows.append(row)
    load = os.getloadavg()
    print(
        f"{args.records:,} records in {len(anchors)} conversations (built in {built:.1f} s), "
        f"SQLite, anchors at depth 200 (visible returns ~{visible_size} records), "
        f"{args.rounds} interleaved rounds, load average {load[0]:.2f}"
    )
    print(
        f"{'operation':<10} {'embedded p50':>13} {'p99':>8} {'service p50':>12} {'p99':>8} "
        f"{'ratio p50':>10} {'p99':>6}"
    )
    for row in rows:
        print(
            f"{row['operation']:<10} {row['embedded_p50_ms']:>10.2f} ms "
            f"{row['embedded_p99_ms']:>8.2f} {row['service_p50_ms']:>9.2f} ms "
            f"{row['service_p99_ms']:>8.2f} {row['ratio_p50']:>9.2f}x {row['ratio_p99']:>5.2f}x"
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {
                "records": args.records,
                "conversations": len(anchors),
                "rounds": args.rounds,
                "visible_size": visible_size,
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
                f"Python {platform.python_version()}",
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "load": load,
                "rows": rows,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
