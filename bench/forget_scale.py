"""Forget of one conversation, in a store of 1,000 conversations and in one of 10,000.

A forget used to scan the whole store: every 16-byte window of the SQLite file hashed, and
every revision of the namespace read for promoted copies, so forgetting one conversation
took 1.8-2.0 s among 1,000 and 23-24 s among 10,000. It now reads what it erases and what
cites it, and its check reads those rows only. Both stores are built in this run, in one
namespace, and each forget (dry run, then real) is timed on each in turn, so the ratio is
measured side by side:

    python bench/forget_scale.py [--small 1000] [--large 10000] [--turns 12] [--rounds 5]

It prints the median time per forget in each store and the ratio large/small (the target:
at most 2, dry run included).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from branchmem import Memory


def build(path: Path, conversations: int, turns: int) -> None:
    """``conversations`` trees of ``turns`` messages, a fact on every third message and a
    summary per conversation citing its facts; one batch per 200 conversations."""
    with Memory.open(path) as mem:
        for start in range(0, conversations, 200):
            events: list[dict[str, object]] = []
            records: list[dict[str, object]] = []
            for c in range(start, min(start + 200, conversations)):
                for t in range(turns):
                    events.append({
                        "id": f"c{c}t{t}", "parent": None if t == 0 else f"c{c}t{t - 1}",
                        "content": f"conversation {c} turn {t}: a trip to city {c % 97}",
                    })  # fmt: skip
                facts = [f"f{c}t{t}" for t in range(0, turns, 3)]
                records += [
                    {"id": f"f{c}t{t}", "sources": [f"c{c}t{t}"], "key": f"trip:{c}",
                     "content": f"fact of turn {t} of conversation {c}"}
                    for t in range(0, turns, 3)
                ]  # fmt: skip
                records.append({"id": f"s{c}", "sources": facts, "content": f"summary {c}"})
            mem.add_events(events)
            mem.add_records(records)


def timed_forget(path: Path, conversation: str, dry_run: bool) -> float:
    with Memory.open(path) as mem:
        started = time.perf_counter()
        receipt = mem.forget("conversation", conversation, dry_run=dry_run)
        took = time.perf_counter() - started
    assert receipt.counts["events"] > 0, receipt.counts
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=10000)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stores = {}
        for name, size in (("small", args.small), ("large", args.large)):
            stores[name] = Path(tmp) / f"{name}.db"
            started = time.perf_counter()
            build(stores[name], size, args.turns)
            print(f"built {size:,} conversations in {time.perf_counter() - started:.1f} s")
        for dry_run in (True, False):
            times: dict[str, list[float]] = {"small": [], "large": []}
            for round_ in range(args.rounds):
                for name in ("small", "large") if round_ % 2 == 0 else ("large", "small"):
                    times[name].append(timed_forget(stores[name], f"c{round_}t0", dry_run))
            small, large = (statistics.median(times[n]) for n in ("small", "large"))
            label = "dry run" if dry_run else "forget"
            print(
                f"{label:8} median {small * 1000:8.1f} ms among {args.small:,}, "
                f"{large * 1000:8.1f} ms among {args.large:,}: ratio {large / small:.2f}"
            )


if __name__ == "__main__":
    main()
