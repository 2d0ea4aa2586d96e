"""Schema 7 (``COMPACT_STORAGE``): a store written at schema 5 migrates (through 6, the tree
index) and decides the same; short references and gates read back what was written; a replaced
revision leaves no index row behind now that its rows are deleted by whole key."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory
from branchmem._core.provenance import EVENT, RECORD, UNKNOWN, Gate, SourceRef, TreeFrontier
from branchmem._core.topology import EventNode
from branchmem._engine import corrections
from branchmem.errors import BranchmemError, SchemaVersionError
from branchmem.store import codec
from branchmem.store.schema import SCHEMA_VERSION
from branchmem.testing.differential import apply, compare
from branchmem.testing.oracle import Oracle

FIXTURE = Path(__file__).parent / "fixtures" / "schema5"
CLUSTERED = (
    "heads", "frontiers", "ungated", "citing", "pending", "supersedes", "statuses", "audit_ids",
    "retraction_targets", "erase_cleanup", "key_frontiers", "tree_keys", "unkeyed_frontiers",
)  # fmt: skip
INDEX_TABLES = {  # what each index-like table holds, by what a test can compare across stores
    "frontiers": "event_id, record_id, revision",
    "ungated": "record_id, revision",
    "citing": "target, record_id, revision",
    "pending": "event_id, record_id, revision",
    "key_frontiers": "key_name, tree, depth, record_id, revision",
    "unkeyed_frontiers": "tree, depth, record_id, revision",
}  # (tree_keys only grows while revisions move: a group stays listed until erased)


@pytest.fixture
def schema5(tmp_path: Path) -> Path:
    """A copy of a store written by branchmem at schema version 5 (tests/fixtures/schema5)."""
    path = tmp_path / "store.db"
    shutil.copy(FIXTURE / "store.sqlite", path)
    return path


def recorded() -> dict[str, Any]:
    return dict(json.loads((FIXTURE / "ops.json").read_text()))


def replay(mem: Memory, oracle: Oracle, op: Any, namespace: str) -> None:
    """One recorded op on both. The ops were recorded before a branch-scope retraction
    needed sources; such a one is still valid stored data, so it is replayed below the
    API's refusal (the engine's own write, the oracle told not to refuse)."""
    kind, args = op[0], op[1]
    if kind == "retract" and args["scope"] == "branch" and args["sources"] == []:
        refused = []
        try:
            with mem._write(namespace) as ns:
                corrections.retract(ns, args["id"], [], tuple(args["targets"]), args["key"],
                                    args["key_scope"], "branch", "")  # fmt: skip
        except BranchmemError:
            refused.append("engine")
        try:
            oracle.retract(args["id"], [], tuple(args["targets"]), args["key"],
                           args["key_scope"], "branch", refuse_unplaced=False)  # fmt: skip
        except BranchmemError:
            refused.append("oracle")
        assert refused in ([], ["engine", "oracle"]), (refused, args)
        return
    apply(mem, oracle, (kind, args), namespace)


def oracle_after(ops: list[Any]) -> tuple[Oracle, Memory]:
    """The oracle fed ``ops``, and the in-memory engine fed them beside it."""
    oracle = Oracle()
    scratch = Memory()
    for op in ops:
        replay(scratch, oracle, op, "scratch")
    return oracle, scratch


def test_a_schema_5_store_needs_migrate_then_decides_as_the_oracle_and_keeps_working(
    schema5: Path,
) -> None:
    with closing(sqlite3.connect(schema5)) as db:
        assert db.execute("SELECT MAX(version) FROM branchmem_schema").fetchone() == (5,)
    with pytest.raises(SchemaVersionError, match="branchmem migrate"):
        Memory.open(schema5)
    compared = 0
    with Memory.open(schema5, migrate=True) as mem:
        assert mem.store.schema_version() == SCHEMA_VERSION  # type: ignore[attr-defined]
        for scenario in recorded()["scenarios"]:
            ops, cut, namespace = scenario["ops"], scenario["cut"], scenario["namespace"]
            oracle, _ = oracle_after(ops[:cut])
            beside, scratch = oracle_after(ops[:cut])
            compared += compare(mem, oracle, namespace)
            for op in ops[cut:]:  # written after the migration, over rows written before it
                replay(mem, oracle, op, namespace)
                replay(scratch, beside, op, "scratch")
            compared += compare(mem, oracle, namespace)
            # citing (rows written before, and frontiers that are their own citation) answers
            # as the in-memory index does
            names = [*oracle.events, *oracle.records, "ghost", "r0@1", "r1@2"]
            assert mem.store.citing_any(namespace, names) == sorted(
                scratch.store.citing_any("scratch", names)
            )
            for name in names:
                assert mem.store.citing(namespace, name) == scratch.store.citing("scratch", name)
    assert compared > 10_000


def test_batched_chat_history_reads_the_same_after_migrating(schema5: Path) -> None:
    chat = recorded()["chat"]
    fresh = Memory()
    fresh.add_events(chat["events"])
    fresh.add_records(chat["records"])
    fresh.revise("c0.m2.f", content="revised", sources=["c0.m2", "c0.m1"])
    with Memory.open(schema5, migrate=True) as mem:
        for event in chat["events"]:
            anchor = event["id"]
            got = mem.visible(anchor, include_superseded=True, namespace="chat")
            want = fresh.visible(anchor, include_superseded=True)
            assert [(r.id, r.revision, r.content, r.sources) for r in got] == [
                (r.id, r.revision, r.content, r.sources) for r in want
            ], anchor
            for key in ("k0", "k1", "k2"):
                held, wanted = (
                    mem.current(key, anchor, namespace="chat"),
                    fresh.current(key, anchor),
                )
                assert (held and held.id) == (wanted and wanted.id), (anchor, key)
        summary = mem.get_record("c1.s", namespace="chat")
        assert summary.sources == fresh.get_record("c1.s").sources
        assert mem.explain("c1.s", "c1.m11", namespace="chat") == fresh.explain("c1.s", "c1.m11")


def test_migrating_clusters_the_index_tables_and_shortens_old_rows(schema5: Path) -> None:
    def long_rows(db: sqlite3.Connection) -> int:
        row = db.execute(
            "SELECT COUNT(*) FROM revisions WHERE refs LIKE '[%' OR (gate LIKE '{%' "
            "AND legacy = 0 AND unknown_sources = 0 AND detached_sources = 0)"
        ).fetchone()
        return int(row[0])

    with closing(sqlite3.connect(schema5)) as db:
        assert long_rows(db) > 100  # what schema 5 wrote
    Memory.open(schema5, migrate=True).close()
    with closing(sqlite3.connect(schema5)) as db:
        assert long_rows(db) == 0
        tables = dict(db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
        for table in CLUSTERED:
            assert tables[table].rstrip().endswith("WITHOUT ROWID"), table
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        assert not {name for name in names if name.endswith("_by_revision")}, names
        dropped = {"revisions_by_key", "events_by_seq", "revisions_by_seq", "key_frontiers_ranked"}
        assert not dropped & names, names
        assert not {name for name in names if name.endswith("_clustered")}, names
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def index_rows(path: Path, namespace: str = "default") -> dict[str, list[tuple[Any, ...]]]:
    with closing(sqlite3.connect(path)) as db:
        return {
            table: sorted(
                db.execute(f"SELECT {columns} FROM {table} WHERE namespace = ?", (namespace,))
            )
            for table, columns in INDEX_TABLES.items()
        }


def test_a_revision_regated_by_late_events_keeps_exactly_the_index_rows_of_one_written_late(
    tmp_path: Path,
) -> None:
    """Late topology replaces revisions (resolved references, new gates); their old rows are
    deleted by whole key. The index must end as if everything had arrived in order."""

    def early(mem: Memory) -> None:  # records before their sources
        mem.add_event("u1")
        mem.add_record("summary", sources=["fact", "u1", "fact@1"], key="k")  # frontier u1
        mem.add_event("u3", "u2")
        mem.add_record("fact", sources=["u3", "ghost"], key="k")
        mem.add_event("u2", "u1")  # u3 attaches: both frontiers move to it
        mem.add_event("ghost", "u1")

    def late(mem: Memory) -> None:  # the same, in order
        for event_id, parent in (("u1", None), ("u2", "u1"), ("u3", "u2"), ("ghost", "u1")):
            mem.add_event(event_id, parent)
        mem.add_record("fact", sources=["u3", "ghost"], key="k")
        mem.add_record("summary", sources=["fact", "u1", "fact@1"], key="k")

    for name, write in (("early.db", early), ("late.db", late)):
        with Memory.open(tmp_path / name) as mem:
            write(mem)
    assert index_rows(tmp_path / "early.db") == index_rows(tmp_path / "late.db")
    assert index_rows(tmp_path / "late.db")["pending"] == []


@pytest.mark.parametrize(
    ("sources", "refs", "short"),
    [
        (("e1", "e2"), (SourceRef("e1", EVENT, "e1"), SourceRef("e2", EVENT, "e2")), ""),
        ((), (), ""),
        (
            ("f", "e1", "f@2", "g@3", "ghost"),
            (
                SourceRef("f", RECORD, "f", 4),
                SourceRef("e1", EVENT, "e1"),
                SourceRef("f@2", RECORD, "f", 2, True),
                SourceRef("g@3", UNKNOWN, "g", 3, True),
                SourceRef("ghost", UNKNOWN, "ghost"),
            ),
            "r4epqu",
        ),
        (("x@2",), (SourceRef("x@2", RECORD, "x@2", 1),), "r1"),  # a record named "x@2"
        (("e1",), (SourceRef("e1", EVENT, "elsewhere"),), None),  # not the resolver's: long
        (("a@1",), (SourceRef("a@1", RECORD, "b", 1, True),), None),
        (None, None, None),
    ],
)
def test_references_are_written_as_codes_and_read_back_whole(
    sources: tuple[str, ...] | None, refs: tuple[SourceRef, ...] | None, short: str | None
) -> None:
    text = codec.refs_text(sources, refs)
    if short is not None:
        assert text == short
    elif refs is not None:
        assert text is not None and text.startswith("[")
    assert codec.refs_value(sources, text) == refs


@pytest.mark.parametrize(
    "gate",
    [
        Gate(frontiers=(TreeFrontier("t", "e5", 5),)),
        Gate(frontiers=(TreeFrontier("t", "e5", 5, "e4b"), TreeFrontier("u", "u1", 0))),
        Gate(),
        Gate(legacy=True),
        Gate(frontiers=(TreeFrontier("t", "e5", 5),), detached=frozenset({"d"})),
        Gate(unknown=frozenset({"ghost", "x@2"})),
    ],
)
def test_gates_read_back_whole(gate: Gate) -> None:
    text = codec.gate_json(gate)
    assert codec.gate_value(text) == gate
    if not (gate.detached or gate.unknown or gate.legacy):
        assert text.startswith("[")
    sources = ("x", "e5", "u1")  # a frontier that is a source is written as its place
    short = codec.gate_json(gate, sources)
    assert codec.gate_value(short, sources) == gate
    if any(f.event in sources for f in gate.frontiers):
        assert len(short) < len(text)


def test_events_read_back_whole() -> None:
    root = EventNode("r", None, "r", None, "user", "hi", {}, None, 1, True, 0, "r")
    child = EventNode("c", "r", "r", None, "user", "x", {"k": 1}, 2.5, 2, True, 1, "r")
    deep = EventNode("d", "c", "r", "t", "assistant", "y", {}, None, 3, True, 2, "r")
    detached = EventNode("late", "gone", None, None, "user", "z", {}, None, 4)
    for node in (root, child, deep, detached):
        row = codec.event_row(node)
        assert codec.event_node(row) == node
    assert codec.event_row(child)[11] is None and codec.event_row(child)[6] == '{"k":1}'
    assert codec.event_row(root)[6] == ""


def test_the_decode_cache_is_bounded_by_bytes_as_well_as_entries() -> None:
    decoded = codec.DecodedRows(lambda row: row[0], maxsize=1000, max_bytes=100_000)
    for index in range(500):
        assert decoded((f"id{index}", "x" * 1000)) == f"id{index}"
    info = decoded.cache_info()
    assert info.bytes <= 100_000 and 0 < info.currsize < 100
    assert decoded(("id499", "x" * 1000)) == "id499" and decoded.cache_info().hits == 1
    decoded(("id0", "x" * 1000))  # long evicted: decoded again
    assert decoded.cache_info().misses == 501
