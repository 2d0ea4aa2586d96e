"""The conformance suite on a SQLite file, plus what only SQLite has to show."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory
from branchmem.errors import SchemaVersionError
from branchmem.store.base import CleanupPending, Store
from branchmem.store.schema import SCHEMA_VERSION
from branchmem.store.sqlite import SQLiteStore
from branchmem.testing import BackendConformance, StoreConformance, chengdu
from timing import bound, scaled


class TestSQLite(BackendConformance):
    differential_trees = 224

    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path
        self.opened = 0

    def make_memory(self, mode: str = "strict") -> Memory:
        self.opened += 1
        return Memory.open(self.directory / f"mem-{self.opened}.db", mode)


class TestSQLiteContract(StoreConformance):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path
        self.opened = 0

    def make_store(self) -> Store:
        self.opened += 1
        return SQLiteStore(self.directory / f"store-{self.opened}.db", migrate=True)


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
            # an index, or the primary key of a table stored in its order (WITHOUT ROWID)
            assert "USING" in plan and ("INDEX" in plan or "PRIMARY KEY" in plan), plan
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


# -- heavy erasure, erase cleanup, opening, key creation ------------------------------------
def integrity(path: Path) -> str:
    with closing(sqlite3.connect(path)) as db:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])


def marker_bytes(path: Path, marker: str) -> dict[str, int]:
    """Occurrences of ``marker`` in the database file, its -wal and its -shm."""
    found = {}
    for suffix in ("", "-wal", "-shm"):
        file = Path(f"{path}{suffix}")
        found[file.name] = file.read_bytes().count(marker.encode()) if file.exists() else 0
    return found


def test_a_store_keeps_accepting_writes_after_1500_erasures(tmp_path: Path) -> None:
    # With the FTS5 index of schema 3, each erase's 'optimize' grew its segment structure
    # until SQLite 3.40 called it corrupt (after ~1,050 rounds of exactly this loop).
    path = tmp_path / "erasures.db"
    with Memory.open(path) as mem:
        mem.add_event("root")
        for i in range(1500):
            mem.add_event(f"e{i}", "root", content=f"event {i} secret-{i}")
            mem.add_record(f"a{i}", sources=[f"e{i}"], content=f"fact A {i} secret-{i}")
            mem.add_record(f"b{i}", sources=[f"e{i}"], content=f"fact B {i} secret-{i}")
            mem.add_record(f"k{i}", sources=["root"], content=f"kept fact {i}")
            assert mem.erase(f"e{i}") == {f"e{i}", f"a{i}", f"b{i}"}
        mem.add_record("after", sources=["root"], content="still writable")
        assert len(mem.visible("root")) == 1501
    assert integrity(path) == "ok"
    with Memory.open(path) as mem:
        mem.add_record("reopened", sources=["root"], content="and after reopening")


def version_3_store(path: Path) -> None:
    """A store as branchmem wrote it at schema version 3, FTS5 index and triggers included."""
    from branchmem.store.schema import MIGRATIONS

    with closing(sqlite3.connect(path)) as db:
        for migration in MIGRATIONS[:3]:
            for statement in migration:
                db.execute(statement.format(bigint="INTEGER", double="REAL", blob="BLOB"))
        for statement in (
            "CREATE VIRTUAL TABLE search_fts USING fts5(search_text, content = 'search_docs', "
            "content_rowid = 'rowid', tokenize = 'trigram case_sensitive 1')",
            "CREATE TRIGGER search_docs_indexed AFTER INSERT ON search_docs BEGIN INSERT INTO "
            "search_fts (rowid, search_text) VALUES (new.rowid, new.search_text); END",
            "CREATE TRIGGER search_docs_unindexed AFTER DELETE ON search_docs BEGIN INSERT INTO "
            "search_fts (search_fts, rowid, search_text) VALUES ('delete', old.rowid, "
            "old.search_text); END",
        ):
            db.execute(statement)
        db.executemany("INSERT INTO branchmem_schema (version) VALUES (?)", [(1,), (2,), (3,)])
        db.execute(
            "INSERT INTO search_docs (namespace, record_id, revision, search_text) "
            "VALUES ('default', 'old', 1, 'old text')"
        )
        db.execute(
            "INSERT INTO retractions (namespace, id, scope, targets, key_name, key_scope, seq) "
            """VALUES ('default', 'old-r', 'branch', '["old"]', NULL, NULL, 1)"""
        )
        db.commit()


@pytest.mark.parametrize("corrupt", [False, True])
def test_migrating_a_version_3_store_drops_its_lexical_index(tmp_path: Path, corrupt: bool) -> None:
    path = tmp_path / "v3.db"
    version_3_store(path)
    if corrupt:  # what ~1,000 erasures left behind: FTS5 cannot even open the table
        with closing(sqlite3.connect(path)) as db:
            db.execute("UPDATE search_fts_data SET block = x'ffffffff' WHERE id = 10")
            db.commit()
    with pytest.raises(SchemaVersionError, match="branchmem migrate"):
        Memory.open(path)
    from branchmem.cli import main

    assert main(["migrate", str(path)]) == 0
    with Memory.open(path) as mem:
        chengdu(mem)
        mem.erase("u2b")
        assert [r.id for r in mem.visible("a2")] == ["f-planning", "f-chengdu"]
    with closing(sqlite3.connect(path)) as db:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert not {n for n in names if n.startswith("search_")}, names
    assert "erase_cleanup" in names
    with closing(sqlite3.connect(path)) as db:  # retractions written before are indexed
        targets = db.execute("SELECT target, id FROM retraction_targets WHERE id = 'old-r'")
        assert targets.fetchall() == [("old", "old-r")]
    assert integrity(path) == "ok"


def test_erase_with_a_reader_reports_pending_cleanup_and_finishing_it_leaves_no_copy(
    tmp_path: Path,
) -> None:
    marker = "QX-reader-marker-51c9"
    path = tmp_path / "reader.db"
    with Memory.open(path) as mem:
        chengdu(mem)
        mem.add_record("secret", sources=["u2"], content=f"passport {marker}")
        for i in range(20):  # copies of the marker's page in many WAL frames
            mem.add_record(f"other{i}", sources=["u2"], content=f"filler {i}")
        reader = sqlite3.connect(path, isolation_level=None)  # another process's reader
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM revisions").fetchone()
        with pytest.warns(CleanupPending, match="read transaction"):
            assert mem.erase("secret") == {"secret"}
        assert mem.store.cleanup_pending()  # type: ignore[attr-defined]
        assert "read transaction" in (mem.finish_cleanup() or "")
        assert sum(marker_bytes(path, marker).values()) > 0  # what the reader pins
        reader.execute("COMMIT")
        reader.close()
        assert mem.finish_cleanup() is None
        assert marker_bytes(path, marker) == {
            "reader.db": 0,
            "reader.db-wal": 0,
            "reader.db-shm": 0,
        }
        assert not mem.store.cleanup_pending()  # type: ignore[attr-defined]


def test_opening_a_current_store_waits_for_no_writer(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    with Memory.open(path) as mem:
        chengdu(mem)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    writer.execute("INSERT INTO heads (namespace, tree, event_id) VALUES ('x', 't', 'e')")
    try:
        started = time.monotonic()
        with Memory.open(path) as mem:
            assert [r.id for r in mem.visible("a2")] == ["f-planning", "f-chengdu"]
        assert time.monotonic() - started < bound(10, 25)  # the busy timeout is 30 s
    finally:
        writer.execute("ROLLBACK")
        writer.close()


OPENERS = 6
START: Any = None  # in a pool worker: the barrier its task waits at


def join_start(barrier: Any) -> None:
    """A pool worker's initializer: keep the barrier every opener waits at."""
    global START
    START = barrier


def first_open(path: str) -> str:
    try:
        # every process connects at the same moment, however long the machine took to start
        # them; a worker holds its task at the barrier, so each task has a process of its own
        START.wait(timeout=scaled(60))
        with Memory.open(path) as mem:
            mem.add_event(f"root-{os.getpid()}")
        return "ok"
    except Exception as error:  # reported to the parent, which asserts on it
        return f"{type(error).__name__}: {error}"


def test_several_processes_opening_a_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(OPENERS)
    with context.Pool(OPENERS, initializer=join_start, initargs=(barrier,)) as pool:
        for trial in range(4):
            path = str(tmp_path / f"new-{trial}.db")
            # a timeout, not a plain starmap: a task whose worker died would be waited for forever
            results = pool.starmap_async(first_open, [(path,)] * OPENERS).get(scaled(120))
            assert results == ["ok"] * OPENERS, results
            with Memory.open(path) as mem:
                assert mem.report()["store"]["events"] == OPENERS


def test_two_tenants_racing_for_one_binding_never_both_get_it(tmp_path: Path) -> None:
    from keyrace import race_for_one_binding

    for trial in range(8):
        path = tmp_path / f"keys-{trial}.db"
        Memory.open(path).close()
        outcome = race_for_one_binding([Memory.open(path) for _ in range(2)])  # two connections
        assert outcome == ["granted", "refused"], (trial, outcome)


def test_erase_leaves_no_byte_of_a_retraction_about_it(tmp_path: Path) -> None:
    path = tmp_path / "retraction.db"
    with Memory.open(path) as mem:
        chengdu(mem)
        mem.add_record("f-health", sources=["u2"], content="ok", key="QX-key-asthma")
        mem.retract("r", sources=["a2"], targets=["f-health"], reason="QX-reason-private")
        mem.retract("r2", sources=["a2"], key="QX-key-asthma", reason="QX-reason-never")
        mem.erase("f-health")
        for marker in ("QX-key-asthma", "QX-reason-private", "QX-reason-never"):
            assert sum(marker_bytes(path, marker).values()) == 0, marker


def test_add_records_asks_for_steps_up_only_from_sources_it_merges(tmp_path: Path) -> None:
    """A record citing one source merges no frontiers, so a batch of them reads no ancestor's
    event and no event's children; a batch of records citing two events of one tree reads
    the steps up from them in one statement per chunk, not one per ancestor test."""
    with Memory.open(tmp_path / "m.db") as mem:
        mem.add_events([{"id": f"e{i}", "parent": f"e{i - 1}" if i else None} for i in range(300)])
        store = mem.store
        assert isinstance(store, SQLiteStore)
        seen: list[str] = []
        store._connection().set_trace_callback(seen.append)
        mem.add_records([{"id": f"one{i}", "sources": [f"e{i}"]} for i in range(0, 300, 3)])
        single = list(seen)
        seen.clear()
        mem.add_records(
            [{"id": f"two{i}", "sources": [f"e{i}", f"e{i - 7}"]} for i in range(150, 300, 5)]
        )
        store._connection().set_trace_callback(None)
    assert not [s for s in single if "UNION ALL" in s or "parent IN" in s], single
    steps = [s for s in seen if "UNION ALL" in s]
    lookups = [
        s for s in seen if s.startswith("SELECT") and "WHERE namespace = 'default' AND id = " in s
    ]
    assert len(steps) == 1, steps
    assert len(lookups) <= 3, lookups  # ancestor tests past the prefetched steps (1 here)


@pytest.mark.parametrize("pin", ["", "@1"])
def test_add_records_reads_steps_up_from_the_events_under_a_summary_of_the_batch(
    tmp_path: Path, pin: str
) -> None:
    """A summary citing facts of its own batch (plainly, or pinned to their revision)
    merges the facts' frontiers, their events: the steps up from those events come with the
    batch's prefetch (one statement per chunk), not one statement per ancestor test (one
    per summary, or more, before)."""
    with Memory.open(tmp_path / "m.db") as mem:
        mem.add_events([{"id": f"e{i}", "parent": f"e{i - 1}" if i else None} for i in range(300)])
        facts = [{"id": f"f{i}", "sources": [f"e{i}"]} for i in range(0, 300, 2)]
        summaries = [
            {"id": f"s{i}", "sources": [f"f{j}{pin}" for j in range(i, i + 20, 2)]}
            for i in range(0, 280, 20)
        ]
        store = mem.store
        assert isinstance(store, SQLiteStore)
        seen: list[str] = []
        store._connection().set_trace_callback(seen.append)
        mem.add_records([*facts, *summaries])
        store._connection().set_trace_callback(None)
        lookups = [
            s
            for s in seen
            if s.startswith("SELECT") and "WHERE namespace = 'default' AND id = " in s
        ]
        assert len([s for s in seen if "UNION ALL" in s]) == 1
        assert len(lookups) <= 3, lookups  # 14 summaries: one or more lookups each before
