"""Disk: bytes per record of a SQLite store, per table and index, against a plain-table floor.

One SQLite store is built with the public batched writes (``add_events`` then ``add_records``,
one call each per conversation) on chat-like histories (bench/chatlike.py) until it holds
``--records`` records. In the same run the same events and records text goes into a plain
two-table SQLite file, the **floor**: ``events(id, parent, role, content)`` and
``records(id, content, sources)`` (ids as primary keys, sources as the JSON list the caller
passed). Both files are vacuumed and checkpointed, then measured with SQLite's ``dbstat``
(their sizes as written, before VACUUM, are printed too).

It prints bytes and bytes/record per b-tree (each table and each index) and per table with
its indexes, the totals, the ratio store/floor (goal <= 3 at 1M records), and the process's
resident memory after the build and after ``--queries`` ``visible()`` calls at depth ~200
(decoded rows are cached by the codec: this shows what the cache costs). JSON goes to
bench/results/disk.json.

    python bench/disk.py [--records 1000000] [--queries 2000] [--dir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from branchmem import Memory
from branchmem.store import codec
from chatlike import conversations

NAMESPACE = "bench"
GOAL = 3.0  # store / floor at 1M records
DEPTH = 200  # where the viewed anchors sit on their conversation's main line

FLOOR_SCHEMA = (
    "CREATE TABLE events (id TEXT PRIMARY KEY, parent TEXT, role TEXT, content TEXT)",
    "CREATE TABLE records (id TEXT PRIMARY KEY, content TEXT, sources TEXT)",
)


def rss_mb() -> float:
    """Resident memory now (Linux ``/proc``; the peak elsewhere)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def checkpointed_size(path: Path) -> int:
    """The file as a writer leaves it (WAL copied in), before any VACUUM."""
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


def compact(path: Path) -> None:
    """VACUUM and truncate the WAL, so both files are measured packed."""
    with sqlite3.connect(path) as connection:
        connection.execute("VACUUM")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def btree_sizes(path: Path) -> tuple[dict[str, int], dict[str, str]]:
    """Bytes per b-tree (dbstat) and the table each index belongs to."""
    with sqlite3.connect(path) as connection:
        sizes = {
            str(name): int(size)
            for name, size in connection.execute(
                "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"
            )
        }
        owners = {
            str(name): str(table)
            for name, table in connection.execute("SELECT name, tbl_name FROM sqlite_master")
        }
    return sizes, owners


def write_floor(floor: sqlite3.Connection, conv: Any) -> None:
    """One conversation into the plain floor tables (``FLOOR_SCHEMA``), committed: the same
    rows the store writes, without anything the store adds."""
    floor.executemany(
        "INSERT INTO events (id, parent, role, content) VALUES (?, ?, ?, ?)",
        [(e["id"], e["parent"], "user", e["content"]) for e in conv.events],
    )
    floor.executemany(
        "INSERT INTO records (id, content, sources) VALUES (?, ?, ?)",
        [(r["id"], r["content"], json.dumps(r["sources"])) for r in conv.records],
    )
    floor.commit()


def build(store_path: Path, floor_path: Path, records: int) -> dict[str, Any]:
    floor = sqlite3.connect(floor_path)
    for statement in FLOOR_SCHEMA:
        floor.execute(statement)
    events_added = records_added = 0
    started = time.perf_counter()
    with Memory.open(store_path) as mem:
        for conv in conversations(records, seed=7):
            mem.add_events(conv.events, namespace=NAMESPACE)
            mem.add_records(conv.records, namespace=NAMESPACE)
            write_floor(floor, conv)
            events_added += len(conv.events)
            records_added += len(conv.records)
    floor.close()
    return {
        "events": events_added,
        "records": records_added,
        "build_s": time.perf_counter() - started,
        "rss_after_build_mb": rss_mb(),
    }


def query(store_path: Path, records: int, count: int) -> dict[str, Any]:
    """``count`` views at depth ~DEPTH on anchors spread over the whole store."""
    anchors = [conv.main_line[DEPTH] for conv in conversations(records, seed=7)]
    rng = random.Random(records)
    codec.forget()
    before = rss_mb()
    started = time.perf_counter()
    returned = 0
    with Memory.open(store_path) as mem:
        for _ in range(count):
            returned += len(mem.visible(rng.choice(anchors), namespace=NAMESPACE))
        after = rss_mb()
    return {
        "queries": count,
        "anchors": len(anchors),
        "returned_per_query": returned / max(1, count),
        "query_s": time.perf_counter() - started,
        "rss_before_queries_mb": before,
        "rss_after_queries_mb": after,
        "event_cache": codec.event_node.cache_info().currsize,
        "revision_cache": codec.revision_node.cache_info().currsize,
    }


def table_report(sizes: dict[str, int], owners: dict[str, str]) -> dict[str, int]:
    tables: dict[str, int] = {}
    for name, size in sizes.items():
        table = owners.get(name, name)
        tables[table] = tables.get(table, 0) + size
    return tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=2000, help="visible() calls after")
    parser.add_argument("--dir", type=Path, default=None, help="where the files go")
    parser.add_argument("--keep", action="store_true", help="keep the files")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "disk.json"))
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="branchmem-disk-", dir=args.dir))
    store_path, floor_path = folder / "store.db", folder / "floor.db"
    try:
        built = build(store_path, floor_path, args.records)
        as_built = {"store": checkpointed_size(store_path), "floor": checkpointed_size(floor_path)}
        for path in (store_path, floor_path):
            compact(path)
        store_sizes, store_owners = btree_sizes(store_path)
        floor_sizes, floor_owners = btree_sizes(floor_path)
        views = query(store_path, args.records, args.queries) if args.queries else {}
        files = {"store": store_path.stat().st_size, "floor": floor_path.stat().st_size}
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)

    n = built["records"]
    store_total, floor_total = sum(store_sizes.values()), sum(floor_sizes.values())
    ratio = store_total / floor_total
    print(
        f"SQLite {sqlite3.sqlite_version}: {n:,} records, {built['events']:,} events, "
        f"built in {built['build_s']:.0f} s" + (f" (kept in {folder})" if args.keep else "")
    )
    print(f"\n{'b-tree (table or index)':<32} {'table':<20} {'MB':>9} {'B/record':>9}")
    small = {name: size for name, size in store_sizes.items() if size / n < 0.5}
    for name, size in sorted(store_sizes.items(), key=lambda item: -item[1]):
        if name not in small:
            owner = store_owners.get(name, name)
            print(f"{name:<32} {owner:<20} {size / 1e6:>9.1f} {size / n:>9.1f}")
    print(f"{f'{len(small)} b-trees under 0.5 B/record':<53} {sum(small.values()) / n:>9.1f}")
    tables = table_report(store_sizes, store_owners)
    print(f"\n{'table with its indexes':<32} {'MB':>9} {'B/record':>9}")
    for name, size in sorted(tables.items(), key=lambda item: -item[1]):
        if size / n >= 0.5:
            print(f"{name:<32} {size / 1e6:>9.1f} {size / n:>9.1f}")
    print(f"{'store total':<32} {store_total / 1e6:>9.1f} {store_total / n:>9.1f}")
    floor_tables = table_report(floor_sizes, floor_owners)
    for name, size in sorted(floor_tables.items()):
        print(f"{'floor: ' + name:<32} {size / 1e6:>9.1f} {size / n:>9.1f}")
    print(f"{'floor total':<32} {floor_total / 1e6:>9.1f} {floor_total / n:>9.1f}")
    print(
        f"files as written, before VACUUM: store {as_built['store'] / 1e6:.1f} MB, "
        f"floor {as_built['floor'] / 1e6:.1f} MB ({as_built['store'] / as_built['floor']:.2f}x)"
    )
    verdict = "met" if ratio <= GOAL else "NOT met"
    print(f"\nstore / floor: {ratio:.2f} (goal <= {GOAL} at 1M records: {verdict})")
    print(f"RSS after the build: {built['rss_after_build_mb']:.0f} MB", end="" if views else "\n")
    if views:
        print(
            f"; a fresh store before {views['queries']} visible() calls "
            f"{views['rss_before_queries_mb']:.0f} MB, "
            f"after {views['rss_after_queries_mb']:.0f} MB "
            f"(decoded rows cached: {views['event_cache']:,} events, "
            f"{views['revision_cache']:,} revisions)"
        )
    print(f"peak RSS {peak_rss_mb():.0f} MB")

    results = {
        "records": n,
        "events": built["events"],
        "sqlite": sqlite3.sqlite_version,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "build_s": built["build_s"],
        "btrees": {
            name: {"table": store_owners.get(name, name), "bytes": size, "per_record": size / n}
            for name, size in store_sizes.items()
        },
        "tables": {name: {"bytes": size, "per_record": size / n} for name, size in tables.items()},
        "floor_tables": {
            name: {"bytes": size, "per_record": size / n} for name, size in floor_tables.items()
        },
        "store_bytes": store_total,
        "floor_bytes": floor_total,
        "file_bytes": files,
        "file_bytes_before_vacuum": as_built,
        "ratio": ratio,
        "goal": GOAL,
        "rss_after_build_mb": built["rss_after_build_mb"],
        "views": views,
        "peak_rss_mb": peak_rss_mb(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
