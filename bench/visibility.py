"""visible() at depth ~200 on chat-like histories of 10k, 100k and 1M records.

Prints, measured in this run: median and p95 latency of ``visible()``, the ratio of the
largest to the smallest size (goal <= 1.3), and the speed-up over the naive oracle of
SPEC §8 (goal >= 100x at the largest size). Writes JSON to bench/results/visibility.json.

    python bench/visibility.py [--sizes 10000,100000,1000000] [--queries 200]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from branchmem import Memory
from chatlike import add_record, conversations


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class NaiveOracle:
    """SPEC §8: walk to the root, then test every source of every revision (flattened)."""

    def __init__(self) -> None:
        self.parent: dict[str, str | None] = {}
        self.effective: dict[str, list[str]] = {}

    def add_event(self, event: dict[str, object]) -> None:
        self.parent[str(event["id"])] = event["parent"]  # type: ignore[assignment]

    def add_record(self, record: dict[str, object]) -> None:
        flat: list[str] = []
        for source in record["sources"]:  # type: ignore[attr-defined]
            flat.extend(self.effective.get(source, [source]))
        self.effective[str(record["id"])] = flat

    def visible(self, anchor: str) -> list[str]:
        path: set[str] = set()
        current: str | None = anchor
        while current is not None:
            path.add(current)
            current = self.parent[current]
        return [rid for rid, sources in self.effective.items() if all(s in path for s in sources)]


def build(size: int) -> tuple[Memory, NaiveOracle, list[str], float]:
    mem = Memory()
    naive = NaiveOracle()
    anchors: list[str] = []
    started = time.perf_counter()
    for conv in conversations(size):
        mem.add_events(conv.events)
        for event in conv.events:
            naive.add_event(event)
        for record in conv.records:
            add_record(mem, record)
            naive.add_record(record)
        anchors.append(conv.main_line[200])
        gc.freeze()  # a large, long-lived heap: keep the cyclic collector off what is built
    return mem, naive, anchors, time.perf_counter() - started


def measure(sizes: list[int], queries: int, naive_queries: int) -> list[dict[str, float]]:
    """Build every size first, then time them in interleaved rounds, so that whatever else
    the machine is doing weighs on all sizes alike."""
    built = {size: build(size) for size in sizes}
    rng = random.Random(1)
    timings: dict[int, list[float]] = {size: [] for size in sizes}
    results: dict[int, int] = dict.fromkeys(sizes, 0)
    for _ in range(queries):
        for size in sizes:
            mem, _naive, anchors, _seconds = built[size]
            anchor = rng.choice(anchors)
            started = time.perf_counter()
            results[size] += len(mem.visible(anchor))
            timings[size].append(time.perf_counter() - started)
    rows = []
    for size in sizes:
        mem, naive, anchors, build_seconds = built[size]
        naive_timings = []
        for anchor in anchors[:naive_queries]:
            started = time.perf_counter()
            naive.visible(anchor)
            naive_timings.append(time.perf_counter() - started)
        rows.append(
            {
                "records": size,
                "events": mem.report()["store"]["events"],
                "build_s": build_seconds,
                "median_ms": statistics.median(timings[size]) * 1000,
                "p95_ms": percentile(timings[size], 0.95) * 1000,
                "results_per_query": results[size] / queries,
                "naive_median_ms": statistics.median(naive_timings) * 1000,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--naive-queries", type=int, default=5)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "visibility.json"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = measure(sizes, args.queries, args.naive_queries)
    print(
        f"{'records':>9} {'events':>9} {'build s':>8} {'median ms':>10} {'p95 ms':>8} "
        f"{'results':>8} {'naive ms':>10} {'speed-up':>9}"
    )
    for row in rows:
        row["speedup_vs_naive"] = row["naive_median_ms"] / row["median_ms"]
        print(
            f"{row['records']:>9,} {row['events']:>9,} {row['build_s']:>8.1f} "
            f"{row['median_ms']:>10.3f} {row['p95_ms']:>8.3f} {row['results_per_query']:>8.0f} "
            f"{row['naive_median_ms']:>10.1f} {row['speedup_vs_naive']:>8.0f}x",
            flush=True,
        )
    ratio = rows[-1]["median_ms"] / rows[0]["median_ms"]
    print(
        f"\nmedian visible() at {rows[-1]['records']:,} / at {rows[0]['records']:,} records: "
        f"{ratio:.2f} (goal <= 1.3)"
    )
    print(
        f"speed-up over the naive oracle at {rows[-1]['records']:,} records: "
        f"{rows[-1]['speedup_vs_naive']:.0f}x (goal >= 100x)"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows, "ratio": ratio}, indent=2))


if __name__ == "__main__":
    main()
