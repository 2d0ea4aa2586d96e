"""``visible()`` at random anchors over 20 active conversations against over 10,000.

A process serving many users reads at the head of whichever conversation speaks next: over a
few conversations, every anchor was read recently; over thousands, most reads are at an
anchor the process has not read for a while. This builds one SQLite store of ``--large``
conversations (each ``--depth`` turns on one path, a keyed write every ``--every`` turns on
10 keys, so ``visible(head)`` reads the tree's key index), opens it twice, and times, in
interleaved rounds, ``visible(head)`` at a random head among the first ``--small``
conversations on one ``Memory`` and among all of them on the other, once each has read
every head of its conversations (a process that serves them: the first read of each is
printed apart). Each Memory keeps what it keeps between calls (settled places, decoded
rows); the store and its file are the same.

Goal (issue 46): t(10,000 active) / t(20 active) <= 1.3. Writes JSON to
bench/results/active_conversations.json.

    python bench/active_conversations.py [--large 10000] [--small 20] [--queries 3000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from branchmem import Memory

GOAL = 1.3
KEYS = 10


def conversation(index: int, depth: int, every: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """One conversation's events (one path) and its keyed writes."""
    prefix = f"c{index}"
    events = [
        {"id": f"{prefix}.{turn}", "parent": f"{prefix}.{turn - 1}" if turn else None,
         "role": "user", "content": f"turn {turn} of {index}"}
        for turn in range(depth)
    ]  # fmt: skip
    records = [
        {"id": f"{prefix}.w{turn}", "sources": [f"{prefix}.{turn}"], "kind": "slot",
         "key": f"k{(turn // every) % KEYS}", "content": f"value {turn} of {index}"}
        for turn in range(0, depth, every)
    ]  # fmt: skip
    return events, records


def build(path: Path, count: int, depth: int, every: int) -> tuple[list[str], float]:
    """The store of ``count`` conversations; their heads and the seconds it took."""
    started = time.perf_counter()
    heads = []
    with Memory.open(path) as mem:
        batch_events: list[dict[str, Any]] = []
        batch_records: list[Any] = []
        for index in range(count):
            events, records = conversation(index, depth, every)
            batch_events += events
            batch_records += records
            heads.append(str(events[-1]["id"]))
            if len(batch_events) >= 5000 or index == count - 1:
                mem.add_events(batch_events)
                mem.add_records(batch_records)
                batch_events, batch_records = [], []
    return heads, time.perf_counter() - started


def timed(mem: Memory, anchor: str) -> float:
    started = time.perf_counter()
    mem.visible(anchor)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--large", type=int, default=10_000, help="conversations in the store")
    parser.add_argument("--small", type=int, default=20, help="the few active conversations")
    parser.add_argument("--depth", type=int, default=96, help="turns per conversation")
    parser.add_argument("--every", type=int, default=4, help="turns per keyed write")
    parser.add_argument("--queries", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3, help="medians taken over rounds")
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "active_conversations.json")
    )
    args = parser.parse_args()
    rng = random.Random(46)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "active.db"
        heads, seconds = build(path, args.large, args.depth, args.every)
        print(f"built {args.large:,} conversations of {args.depth} turns in {seconds:.1f} s")
        few, many = Memory.open(path), Memory.open(path)
        try:
            expected = len(few.visible(heads[0]))
            assert expected == KEYS and len(many.visible(heads[-1])) == KEYS
            # the steady state of a process serving them: each conversation read once before
            # (the first read of one after a restart is the cold read, timed apart below)
            cold_many = [timed(many, anchor) for anchor in heads]
            cold_few = [timed(few, anchor) for anchor in heads[: args.small]]
            print(
                f"first reads, every conversation once: median {args.small} "
                f"{statistics.median(cold_few) * 1e6:.1f} us, {args.large:,} "
                f"{statistics.median(cold_many) * 1e6:.1f} us; "
                f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
            )
            ratios, medians = [], []
            for round_ in range(args.rounds):
                timings: dict[str, list[float]] = {"few": [], "many": []}
                for _ in range(args.queries):
                    for name, mem, anchors in (
                        ("few", few, heads[: args.small]),
                        ("many", many, heads),
                    ):
                        anchor = rng.choice(anchors)
                        started = time.perf_counter()
                        found = mem.visible(anchor)
                        timings[name].append(time.perf_counter() - started)
                        assert len(found) == expected
                median = {name: statistics.median(values) for name, values in timings.items()}
                ratio = median["many"] / median["few"]
                ratios.append(ratio)
                medians.append(median)
                print(
                    f"round {round_ + 1}: visible() median over {args.small} active "
                    f"{median['few'] * 1e6:.1f} us, over {args.large:,} active "
                    f"{median['many'] * 1e6:.1f} us: {ratio:.2f}",
                    flush=True,
                )
        finally:
            few.close()
            many.close()
    worst = max(ratios)
    verdict = "meets" if worst <= GOAL else "misses"
    print(
        f"\nt({args.large:,} active) / t({args.small} active), worst round: {worst:.2f} "
        f"({verdict} the goal of <= {GOAL})"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    result = {"large": args.large, "small": args.small, "depth": args.depth, "ratios": ratios,
              "medians_s": medians, "build_s": seconds, "load": os.getloadavg()}  # fmt: skip
    Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
