"""Batched ingest on SQLite against its floor: the same rows ``executemany``'d into plain tables.

Chat-like conversations (``bench/chatlike.py``) are written, one conversation at a time and
alternately, into branchmem's SQLite store (``add_events`` then ``add_records``, one call
each, one transaction each) and into the **floor**: a plain SQLite file of two tables,
``events(id PRIMARY KEY, parent, role, content)`` and ``records(id PRIMARY KEY, content,
sources)`` (``bench/disk.py``'s), filled by one ``executemany`` per table and one COMMIT per
conversation, in the journal mode and synchronous setting the store runs with (WAL,
``synchronous = NORMAL``). It prints items (events and records) per second of both and
their ratio. Goal (issue 46): the store >= 0.3x the floor.

``--profile`` then writes the same conversations into a second store under cProfile and
prints the time spent inside SQLite's statement calls (execute, executemany, fetching rows;
a C call's time is not inflated by the profiler the way Python's is) against the store's
unprofiled time: the rest is Python, and the items/s the store would reach with no Python at
all bounds what a Python change can do. Then the top costs.

    python bench/ingest_floor.py [--records 50000] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from branchmem import Memory
from chatlike import conversations
from disk import FLOOR_SCHEMA, write_floor

GOAL = 0.3


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "ingest_floor.json")
    )
    parser.add_argument(
        "--profile", action="store_true", help="then split the store's time: SQLite and Python"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        floor = sqlite3.connect(Path(folder) / "floor.db")
        assert floor.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
        floor.execute("PRAGMA synchronous = NORMAL")
        for statement in FLOOR_SCHEMA:
            floor.execute(statement)
        floor.commit()
        spent = {"store": 0.0, "floor": 0.0}
        items = 0
        with Memory.open(Path(folder) / "store.db") as mem:
            for conv in conversations(args.records, seed=7):
                started = time.perf_counter()
                mem.add_events(conv.events)
                mem.add_records(conv.records)
                spent["store"] += time.perf_counter() - started
                started = time.perf_counter()
                write_floor(floor, conv)
                spent["floor"] += time.perf_counter() - started
                items += len(conv.events) + len(conv.records)
        floor.close()
        profile = profiled(Path(folder) / "profiled.db", args.records) if args.profile else None
    rates = {name: items / seconds for name, seconds in spent.items()}
    ratio = rates["store"] / rates["floor"]
    verdict = "meets" if ratio >= GOAL else "misses"
    print(f"{items:,} items (events and records), one conversation a batch, SQLite WAL")
    print(f"store {rates['store']:,.0f} items/s, floor {rates['floor']:,.0f} items/s")
    print(f"store / floor: {ratio:.3f} ({verdict} the goal of >= {GOAL})")
    if profile is not None:
        print_split(profile, spent["store"], items, rates["floor"])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    result = {"items": items, "rates": rates, "ratio": ratio, "load": os.getloadavg()}
    Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


def profiled(path: Path, records: int) -> cProfile.Profile:
    """The store's side again, into a fresh store, under cProfile."""
    profile = cProfile.Profile()
    with Memory.open(path) as mem:
        for conv in conversations(records, seed=7):
            profile.enable()
            mem.add_events(conv.events)
            mem.add_records(conv.records)
            profile.disable()
    return profile


def print_split(profile: cProfile.Profile, store: float, items: int, floor_rate: float) -> None:
    """SQLite's statement calls (what no Python change can cut) against the store's
    unprofiled time, then the top costs."""
    stats = pstats.Stats(profile)
    entries = stats.stats  # type: ignore[attr-defined]
    in_sqlite = sum(
        entry[2]  # the function's own time
        for (_, _, name), entry in entries.items()
        if "sqlite3" in name and ("execute" in name or "fetch" in name)
    )
    bound = items / in_sqlite
    print(
        f"SQLite statements {in_sqlite:.2f} s of the store's {store:.2f} s unprofiled "
        f"({in_sqlite / store:.0%}); with no Python at all: {bound:,.0f} items/s, "
        f"{bound / floor_rate:.3f}x the floor"
    )
    stats.sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    sys.exit(main())
