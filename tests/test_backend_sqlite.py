"""The conformance suite on a SQLite file, plus what only SQLite has to show."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.errors import SchemaVersionError
from branchmem.store.schema import SCHEMA_VERSION
from branchmem.store.sqlite import SQLiteStore
from conformance import BackendConformance, chengdu


class TestSQLite(BackendConformance):
    differential_trees = 320

    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path
        self.opened = 0

    def make_memory(self, mode: str = "strict") -> Memory:
        self.opened += 1
        return Memory.open(self.directory / f"mem-{self.opened}.db", mode)


def test_visible_reads_the_frontier_index_not_the_records(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "plan.db") as mem:
        chengdu(mem)
        store = mem.store
        assert isinstance(store, SQLiteStore)
        for table, column in (("frontiers", "event_id"), ("statuses", "id")):
            plan = " ".join(
                store.query_plan(
                    f"SELECT * FROM {table} WHERE namespace = ? AND {column} IN (?, ?)",
                    ("default", "u1", "u2"),
                )
            )
            assert "USING" in plan and "INDEX" in plan, plan
            assert f"SCAN {table}" not in plan, plan
        plan = " ".join(
            store.query_plan(
                "SELECT r.record_id FROM frontiers x JOIN revisions r ON r.namespace = "
                "x.namespace AND r.record_id = x.record_id AND r.revision = x.revision "
                "WHERE x.namespace = ? AND x.event_id IN (?, ?)",
                ("default", "u1", "u2"),
            )
        )
        assert "SCAN r" not in plan and "SCAN revisions" not in plan, plan


def test_a_reopened_store_gives_the_same_decisions(tmp_path: Path) -> None:
    in_memory = Memory()
    chengdu(in_memory)
    with Memory.open(tmp_path / "reopen.db") as mem:
        chengdu(mem)
        mem.retract("x", sources=["a2b"], key="city")
    in_memory.retract("x", sources=["a2b"], key="city")
    with Memory.open(f"sqlite:///{tmp_path / 'reopen.db'}") as mem:
        for anchor in ("u1", "a1", "u2", "a2", "u2b", "a2b"):
            got = [(r.id, r.revision) for r in mem.visible(anchor, include_superseded=True)]
            want = [(r.id, r.revision) for r in in_memory.visible(anchor, include_superseded=True)]
            assert got == want


def test_a_store_from_a_newer_branchmem_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    Memory.open(path).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO branchmem_schema (version) VALUES (?)", (SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaVersionError, match="newer"):
        Memory.open(path)


def test_an_empty_database_is_migrated_to_the_current_version(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    with Memory.open(path) as mem:
        store = mem.store
        assert isinstance(store, SQLiteStore)
        assert store.schema_version() == SCHEMA_VERSION


def test_a_store_at_the_previous_version_needs_migrate_and_then_works(tmp_path: Path) -> None:
    from branchmem.cli import main
    from branchmem.store.schema import MIGRATIONS

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        for statement in MIGRATIONS[0]:
            db.execute(statement.format(bigint="INTEGER", double="REAL"))
        db.execute("INSERT INTO branchmem_schema (version) VALUES (1)")
    with pytest.raises(SchemaVersionError, match="branchmem migrate"):
        Memory.open(path)
    assert main(["migrate", str(path)]) == 0
    with Memory.open(path) as mem:
        chengdu(mem)
        assert [r.id for r in mem.visible("a2b")] == ["f-planning", "f-hangzhou"]
        store = mem.store
        assert isinstance(store, SQLiteStore)
        assert store.schema_version() == SCHEMA_VERSION


def test_no_byte_of_erased_text_is_left_in_the_files(tmp_path: Path) -> None:
    marker = "ZX-marker-搬去成都-7f3a"
    path = tmp_path / "erase.db"
    with Memory.open(path) as mem:
        chengdu(mem)
        mem.add_event("secret", "a2", content=f"my passport number is {marker}")
        mem.add_record("fact", sources=["secret"], content=f"passport {marker}", key="passport")
        mem.add_record("summary", sources=["fact"], content=f"summary: {marker}")
        mem.revise("fact", content=f"passport (checked) {marker}", sources=["secret"])
        mem.erase("secret", reason="user asked")
        files = [p for p in tmp_path.iterdir() if p.name.startswith("erase.db")]
        assert files
        for file in files:  # the database and its WAL, while the store is open
            assert marker.encode() not in file.read_bytes(), file.name
            assert "搬去成都".encode() not in file.read_bytes(), file.name
        assert [r.id for r in mem.visible("a2")] == ["f-planning", "f-chengdu"]
