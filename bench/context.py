"""context() next to visible() at depth ~200, on chat-like histories (default 1M records).

``context(anchor)`` is what a prompt gets: the branch's recent messages and the visible
records within a token budget. It reuses the view's path and decisions, so it should cost
little more than ``visible(anchor)`` itself (goal: <= 1.3x at 1M records). Both are timed on
the same anchors in interleaved rounds, in memory and on SQLite, with and without a query;
the ratios are printed and written to bench/results/context.json.

    python bench/context.py [--records 1000000] [--queries 100] [--backends memory,sqlite]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from branchmem import Memory
from chatlike import conversations

GOAL = 1.3


def build(mem: Memory, records: int) -> list[str]:
    """The chat-like history, written in batches; returns one depth-200 anchor per tree."""
    anchors = []
    for conv in conversations(records):
        mem.add_events(conv.events)
        mem.add_records(
            [
                {
                    "id": r["id"],
                    "sources": r["sources"],
                    "content": r["content"],
                    "kind": r.get("kind", "fact"),
                    "key": r.get("key"),
                }
                for r in conv.records
            ]
        )
        anchors.append(conv.main_line[200])
    gc.collect()
    gc.freeze()
    return anchors


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--backends", default="memory,sqlite")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "context.json"))
    args = parser.parse_args()
    rng = random.Random(3)
    reads: dict[str, Callable[[str], object]] = {}
    anchors: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for backend in args.backends.split(","):
            mem = Memory() if backend == "memory" else Memory.open(Path(folder) / "context.db")
            started = time.perf_counter()
            anchors[backend] = build(mem, args.records)
            seconds = time.perf_counter() - started
            print(f"{backend}: built {args.records:,} records in {seconds:.0f} s", flush=True)
            reads[f"{backend} visible()"] = lambda a, mem=mem: mem.visible(a)
            reads[f"{backend} context()"] = lambda a, mem=mem: mem.context(a)
            reads[f"{backend} context(query=...)"] = lambda a, mem=mem: mem.context(
                a, query="where is the user moving"
            )
        timings: dict[str, list[float]] = {name: [] for name in reads}
        for _ in range(args.queries):
            for name, read in reads.items():
                anchor = rng.choice(anchors[name.split()[0]])
                started = time.perf_counter()
                read(anchor)
                timings[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(values) * 1000 for name, values in timings.items()}
    p99 = {name: sorted(v)[int(0.99 * (len(v) - 1))] * 1000 for name, v in timings.items()}
    print(f"\n{'read':<34} {'median ms':>10} {'p99 ms':>8} {'/ visible':>10}")
    rows = []
    for name, median in medians.items():
        base = medians[f"{name.split()[0]} visible()"]
        rows.append(
            {"read": name, "median_ms": median, "p99_ms": p99[name], "ratio": median / base}
        )
        print(f"{name:<34} {median:>10.3f} {p99[name]:>8.3f} {median / base:>10.2f}")
    print(f"\ngoal: context() <= {GOAL}x visible() at depth 200 on {args.records:,} records")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {"records": args.records, "rows": rows, "load": os.getloadavg(), "goal": GOAL},
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
