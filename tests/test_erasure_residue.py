"""SPEC §6 "a tombstone keeps ids only": after an erase no byte of the caller's text about
the erased items is left, on every backend. Each check reads the storage on its own terms
(the SQLite files' bytes, PostgreSQL's rows and planner statistics, the objects an in-memory
store holds), never through the store code that wrote it.

The marker goes into every field a caller writes about an item: content, role, kind, key,
scope, meta, and the erase call's own reason.
"""

from __future__ import annotations

import gc
import sqlite3
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory
from branchmem.store import CleanupPending
from branchmem.testing import chengdu
from timing import scaled

MARKER = "QX-erased-7c1d"


def write_marked(mem: Memory) -> None:
    """An event and the records built on it, every caller-written field holding MARKER."""
    chengdu(mem)
    meta = {"note": f"meta {MARKER}"}
    mem.add_event("s", "a2", role=f"role {MARKER}", content=f"I said {MARKER}", meta=meta)
    mem.add_record(
        "f-s", sources=["s"], content=f"fact {MARKER}", kind=f"kind {MARKER}",
        key=f"key {MARKER}", scope=f"scope {MARKER}", meta=meta,
    )  # fmt: skip
    mem.add_record("sum", sources=["f-s", "f-planning"], content=f"summary {MARKER}",
                   kind=f"summary {MARKER}")  # fmt: skip


def erase_marked(mem: Memory) -> None:
    assert mem.erase("s", reason=f"reason {MARKER}") == {"s", "f-s", "sum"}


# -- SQLite: the bytes of the database file, its -wal and its -shm ---------------------------
def file_hits(path: Path, marker: str) -> dict[str, int]:
    found = {}
    for suffix in ("", "-wal", "-shm"):
        file = Path(f"{path}{suffix}")
        found[file.name] = file.read_bytes().count(marker.encode()) if file.exists() else 0
    return found


def test_sqlite_files_hold_no_byte_of_an_erased_role_kind_or_reason(tmp_path: Path) -> None:
    path = tmp_path / "marked.db"
    with Memory.open(path) as mem:
        write_marked(mem)
        assert sum(file_hits(path, MARKER).values()) > 0  # the scan sees what is there
        erase_marked(mem)
        assert file_hits(path, MARKER) == {"marked.db": 0, "marked.db-wal": 0, "marked.db-shm": 0}
        assert mem.get_event("s").role == "erased"
    assert file_hits(path, MARKER) == {"marked.db": 0, "marked.db-wal": 0, "marked.db-shm": 0}


# -- in memory: every string the Memory object reaches --------------------------------------
def reachable_strings(root: object) -> Iterator[str]:
    """Every str reachable from ``root`` through the garbage collector's references."""
    seen: set[int] = set()
    stack: list[Any] = [root]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, str):
            yield item
            continue
        if isinstance(item, type):  # classes lead to modules and their constants
            continue
        stack.extend(gc.get_referents(item))


def test_an_in_memory_store_holds_no_erased_role_kind_or_reason() -> None:
    mem = Memory()
    write_marked(mem)
    assert any(MARKER in text for text in reachable_strings(mem))
    erase_marked(mem)
    assert [text for text in reachable_strings(mem) if MARKER in text] == []


# -- PostgreSQL: every row of every table, and the planner's statistics ---------------------
def pg_hits(url: str, marker: str) -> dict[str, int]:
    """Rows holding ``marker``: per table of the store's schema, and in ``pg_stats`` (the
    planner's statistics: most common values, histogram bounds) per table.column."""
    import psycopg

    found: dict[str, int] = {}
    with psycopg.connect(url, autocommit=True) as db:
        tables = [row[0] for row in db.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        )]  # fmt: skip
        for table in tables:
            rows = db.execute(f'SELECT * FROM "{table}"').fetchall()
            hits = sum(marker in str(row) for row in rows)
            if hits:
                found[table] = hits
        stats = db.execute(
            "SELECT tablename, attname, most_common_vals::text, histogram_bounds::text "
            "FROM pg_stats WHERE schemaname = current_schema()"
        ).fetchall()
        for table, column, common, bounds in stats:
            if marker in f"{common} {bounds}":
                found[f"pg_stats {table}.{column}"] = 1
    return found


@pytest.fixture
def pg_url(pg_dsn: str) -> Iterator[str]:
    from pg import fresh_database

    with fresh_database(pg_dsn, "bm_residue") as url:
        yield url


def test_postgres_rows_and_statistics_hold_no_erased_text(pg_url: str) -> None:
    import psycopg

    with Memory.open(pg_url) as mem:
        write_marked(mem)
        for i in range(20):  # enough distinct text for a histogram
            mem.add_event(f"x{i}", "a2", content=f"another line {i}")
        with psycopg.connect(pg_url, autocommit=True) as db:
            db.execute("ANALYZE")  # what autovacuum does while the text is there
        before = pg_hits(pg_url, MARKER)
        assert "pg_stats events.content" in before and "events" in before, before
        erase_marked(mem)
        assert mem.finish_cleanup() is None
        assert pg_hits(pg_url, MARKER) == {}
        assert mem.get_event("s").role == "erased"
        assert mem.get_event("x3").content == "another line 3"


# -- the service: a cleanup a reader held up is finished without a caller -------------------
def test_the_service_empties_the_wal_once_a_reader_lets_go(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from fastapi.testclient import TestClient

    from branchmem.server import create_app

    path = tmp_path / "served.db"
    mem = Memory.open(path)
    app = create_app(mem, auth=False)
    try:
        with TestClient(app) as http:  # runs the app's startup and shutdown
            write_marked(mem)
            for i in range(20):  # copies of the marker's pages in many WAL frames
                mem.add_record(f"other{i}", sources=["u2"], content=f"filler {i}")
            reader = sqlite3.connect(path, isolation_level=None)  # another process's reader
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM revisions").fetchone()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CleanupPending)  # the erase reports it
                answer = http.post("/v1/ns/default/items/s/erase", json={"reason": MARKER})
            assert answer.status_code == 200, answer.text
            assert file_hits(path, MARKER)["served.db-wal"] > 0  # what the reader pins
            cleanup = app.state.cleanup
            deadline = time.monotonic() + scaled(5)
            while cleanup.pending is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert "read transaction" in (cleanup.pending or ""), cleanup.pending  # retrying
            reader.execute("COMMIT")
            reader.close()
            deadline = time.monotonic() + scaled(10)
            while cleanup.pending is not None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert file_hits(path, MARKER) == {
                "served.db": 0, "served.db-wal": 0, "served.db-shm": 0,
            }  # fmt: skip
    finally:
        mem.close()
