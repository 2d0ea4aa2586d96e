"""Batched ingest on SQLite against its floor: the same rows ``executemany``'d into plain tables.

Chat-like conversations (``bench/chatlike.py``) are written, one conversation at a time and
alternately, into branchmem's SQLite store (``add_events`` then ``add_records``, one call
each, one transaction each) and into the **floor**: a plain SQLite file of two tables,
``events(id PRIMARY KEY, parent, role, content)`` and ``records(id PRIMARY KEY, content,
sources)`` (``bench/disk.py``'s), filled by one ``executemany`` per table and one COMMIT per
conversation, in the journal mode and synchronous setting the store runs with (WAL,
``synchronous = NORMAL``). It prints items (events and records) per second of both and
their ratio. Goal (issue 46): the store >= 0.3x the floor.

    python bench/ingest_floor.py [--records 50000]
"""

from __future__ import annotations

import argparse
import json
import os
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
    rates = {name: items / seconds for name, seconds in spent.items()}
    ratio = rates["store"] / rates["floor"]
    verdict = "meets" if ratio >= GOAL else "misses"
    print(f"{items:,} items (events and records), one conversation a batch, SQLite WAL")
    print(f"store {rates['store']:,.0f} items/s, floor {rates['floor']:,.0f} items/s")
    print(f"store / floor: {ratio:.3f} ({verdict} the goal of >= {GOAL})")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    result = {"items": items, "rates": rates, "ratio": ratio, "load": os.getloadavg()}
    Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
