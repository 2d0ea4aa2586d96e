"""``current()`` at an attached anchor reads the key index, not the path (SPEC §7).

Its decisions are compared with the oracle by the differential test of every backend
(``differential.compare``); these tests hold what that cannot see: the work a read does
stays the same while the path and the key's superseded history grow, the jump-pointer path
test agrees with the walked path, and the index survives migration and erasure.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest

from branchmem import Memory, NotFoundError
from branchmem._core.keyed import KeyedReader
from branchmem._core.provenance import RevisionNode
from branchmem._core.questions import Facts, IndexTooLarge, Questions
from branchmem._core.topology import AnchorPath, EventNode
from branchmem._engine.events import PathMessages
from branchmem.store.base import PathMessage, Store
from branchmem.store.inmemory import InMemoryStore
from branchmem.store.readahead import ReadAhead
from branchmem.store.schema import KEYED_READS_VERSION, MIGRATIONS
from branchmem.store.sql import SQLStore
from branchmem.store.sqlite import SQLiteStore
from branchmem.testing.differential import Op, apply, index_reads, oracle_current, run_scenario
from branchmem.testing.oracle import Oracle

KEYS = 10
T = TypeVar("T")


def agent(mem: Memory, turns: int) -> str:
    """Each turn: one event on the path, one write to one of ten keys."""
    mem.add_events([{"id": f"e{i}", "parent": f"e{i - 1}" if i else None} for i in range(turns)])
    for i in range(turns):
        mem.add_record(f"w{i}", sources=[f"e{i}"], content=f"v{i}", key=f"k{i % KEYS}")
    return f"e{turns - 1}"


class CountingStore(InMemoryStore):
    """The in-memory store, counting the event lookups and key candidates reads consume."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups = 0
        self.candidates = 0

    def get_event(self, namespace: str, event_id: str) -> EventNode | None:
        self.lookups += 1
        return super().get_event(namespace, event_id)

    def transcript(self, namespace: str, event_id: str, limit: int) -> list[PathMessage]:
        found = super().transcript(namespace, event_id, limit)
        self.lookups += len(found)
        return found

    def key_candidates(
        self, namespace: str, key: str, tree: str, depth: int, cross_tree: bool = False
    ) -> Iterator[RevisionNode]:
        for node in super().key_candidates(namespace, key, tree, depth, cross_tree):
            self.candidates += 1
            yield node


def work_of_current(turns: int, cross_tree: bool) -> tuple[int, int]:
    store = CountingStore()
    mem = Memory(store=store)
    head = agent(mem, turns)
    mem.add_event("other-thread")  # another tree, with a head and a value of its own
    mem.add_record("elsewhere", sources=["other-thread"], key="k0")
    mem.set_head("other-thread")
    store.lookups = store.candidates = 0
    for key in range(KEYS):
        found = mem.current(f"k{key}", head, cross_tree=cross_tree)
        assert found is not None and found.id == f"w{turns - KEYS + key}"
    return store.lookups, store.candidates


@pytest.mark.parametrize("cross_tree", [False, True])
def test_current_does_the_same_work_after_ten_times_the_history(cross_tree: bool) -> None:
    short, long = work_of_current(200, cross_tree), work_of_current(2000, cross_tree)
    assert long[1] == short[1] == KEYS  # the first candidate of each key wins
    assert long[0] <= short[0] + 2 * KEYS  # ancestor tests: a few lookups, not the path


def traced(mem: Memory, read: Callable[[], T]) -> tuple[T, int]:
    """What ``read`` returns and how many statements it ran on the SQLite store."""
    store = mem.store
    assert isinstance(store, SQLiteStore)
    statements: list[str] = []
    store._connection().set_trace_callback(statements.append)
    try:
        return read(), len(statements)
    finally:
        store._connection().set_trace_callback(None)


def test_current_on_sqlite_runs_the_same_statements_after_ten_times_the_history(
    tmp_path: Path,
) -> None:
    counts = []
    for turns in (200, 2000):
        with Memory.open(tmp_path / f"agent-{turns}.db") as mem:
            head = agent(mem, turns)
            found, statements = traced(mem, partial(mem.current, "k3", head))
            assert found is not None and found.id == f"w{turns - KEYS + 3}"
            counts.append(statements)
    assert counts[1] <= counts[0] + 2, counts


def work_of_visible(turns: int) -> tuple[int, int]:
    store = CountingStore()
    mem = Memory(store=store)
    head = agent(mem, turns)
    mem.add_event("side", "e3")  # an unkeyed record on the path, one off it
    mem.add_record("note", sources=["e5"], content="unkeyed")
    mem.add_record("aside", sources=["side"], content="unkeyed, off the path")
    store.lookups = store.candidates = 0
    found = mem.visible(head)
    assert sorted(r.id for r in found) == sorted(
        ["note", *(f"w{turns - KEYS + key}" for key in range(KEYS))]
    )
    assert found[0].id == "note"  # path order: the oldest frontier first
    return store.lookups, store.candidates


def test_visible_does_the_same_work_after_ten_times_the_history() -> None:
    short, long = work_of_visible(200), work_of_visible(2000)
    assert long[1] == short[1] == KEYS  # the tree index: each key's first candidate wins
    assert long[0] <= short[0] + 4 * KEYS  # ancestor tests: a few lookups, not the path


def test_visible_on_sqlite_runs_the_same_statements_after_ten_times_the_history(
    tmp_path: Path,
) -> None:
    counts, reads = [], []
    for turns in (200, 2000):
        with Memory.open(tmp_path / f"agent-{turns}.db") as mem:
            head = agent(mem, turns)
            found, statements = traced(mem, partial(mem.visible, head))
            reads.append([r.id for r in found])
            counts.append(statements)
            with index_reads(mem, None):
                assert [r.id for r in mem.visible(head)] == reads[-1]
    assert reads[1] == [f"w{2000 - KEYS + key}" for key in range(KEYS)]
    assert counts[1] <= counts[0] + KEYS, counts  # at most one more ancestor lookup a key


def talking_agent(mem: Memory, turns: int) -> str:
    """``agent`` whose turns say something, with a withdrawn turn and an unkeyed note."""
    mem.add_events(
        [
            {"id": f"e{i}", "parent": f"e{i - 1}" if i else None, "content": f"turn {i}"}
            for i in range(turns)
        ]
    )
    for i in range(turns):
        mem.add_record(f"w{i}", sources=[f"e{i}"], content=f"v{i}", key=f"k{i % KEYS}")
    mem.add_record("note", sources=[f"e{turns - 3}"], content="an unkeyed note")
    mem.withdraw(f"e{turns - 2}")
    return f"e{turns - 1}"


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_context_at_the_head_is_the_same_read_from_the_index(backend: str, tmp_path: Path) -> None:
    mem = Memory() if backend == "memory" else Memory.open(tmp_path / "talk.db")
    head = talking_agent(mem, 300)
    for query in (None, "note"):
        with index_reads(mem, 0):
            from_index = mem.context(head, query=query, budget=120)
        with index_reads(mem, None):
            along_path = mem.context(head, query=query, budget=120)
        assert from_index == along_path
        assert "an unkeyed note" in from_index.text and "turn 298" not in from_index.text


def test_an_index_read_counts_what_it_returns() -> None:
    mem = Memory()
    head = talking_agent(mem, 300)
    # no filter: 9 keys' winners (k8's stands on a withdrawn turn) and the unkeyed note
    for filters, returned in (({"key": "k3"}, 1), ({"kind": "nothing"}, 0), ({}, KEYS)):
        before = mem.report()["decisions"].get("visible", 0)
        with index_reads(mem, 0):
            found = mem.visible(head, **filters)
        assert len(found) == returned, filters
        assert mem.report()["decisions"].get("visible", 0) - before == returned, filters


def test_context_reads_the_path_only_as_far_as_its_budget_reaches() -> None:
    work = []
    for turns in (300, 3000):
        store = CountingStore()
        mem = Memory(store=store)
        head = talking_agent(mem, turns)
        store.lookups = 0
        shown = mem.context(head, budget=120)
        assert f"turn {turns - 1}" in shown.text and "turn 0" not in shown.text
        work.append(store.lookups)
    assert work[1] <= work[0] + 4 * KEYS, work  # not the 2,700 more events of the path


class WalkingStore(InMemoryStore):
    """The in-memory store with the ``Store`` default transcript (``get_event`` by parent)."""

    transcript = Store.transcript


@pytest.mark.parametrize("backend", ["memory", "sqlite", "base"])
def test_a_transcript_page_runs_from_the_event_up_with_hidden_text_empty(
    backend: str, tmp_path: Path
) -> None:
    mem = {
        "memory": Memory,
        "sqlite": lambda: Memory.open(tmp_path / "talk.db"),
        "base": lambda: Memory(store=WalkingStore()),
    }[backend]()
    parent = None
    for i in range(100):
        mem.add_event(f"m{i}", parent, content=f"message {i}")
        parent = f"m{i}"
    mem.withdraw("m97")
    mem.erase("m40")
    page = mem.store.transcript("default", "m99", 61)
    assert [m.id for m in page] == [f"m{i}" for i in range(99, 38, -1)]
    assert [m.parent for m in page] == [f"m{i}" for i in range(98, 37, -1)]
    assert {m.id for m in page if m.content != f"message {m.id[1:]}"} == {"m97", "m40"}
    assert {m.content for m in page if m.id in ("m97", "m40")} == {""}
    assert [m.id for m in mem.store.transcript("default", "m2", 10)] == ["m2", "m1", "m0"]
    assert mem.store.transcript("default", "nope", 10) == []


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_context_that_reads_its_path_whole_equals_one_that_reads_it_lazily(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = Memory() if backend == "memory" else Memory.open(tmp_path / "talk.db")
    rng = random.Random(7)
    events = ["t0"]
    mem.add_event("t0", content="hello")
    mem.add_record("r0", sources=["t0"], content="said hello")
    for i in range(1, 160):  # a main line with edits hanging off it
        parent = events[-1] if rng.random() < 0.8 else rng.choice(events)
        mem.add_event(f"t{i}", parent, role=rng.choice(["user", "assistant"]), content=f"turn {i}")
        events.append(f"t{i}")
        if rng.random() < 0.5:
            key = rng.choice([None, "city", "job"])
            mem.add_record(f"r{i}", sources=[f"t{i}"], content=f"fact {i}", key=key)
    mem.withdraw("t40")
    mem.erase("t90")
    whole_reads = 0
    whole_path = PathMessages.whole_path

    def counted(self: PathMessages) -> tuple[str, ...] | None:
        nonlocal whole_reads
        found = whole_path(self)
        whole_reads += found is not None
        return found

    monkeypatch.setattr(PathMessages, "whole_path", counted)
    with index_reads(mem, None):  # every view reads its path
        for anchor in rng.sample(events, 40):
            for budget in (30, 300, 5000):
                monkeypatch.setattr(PathMessages, "WHOLE_PATH", 0)
                lazily = mem.context(anchor, budget=budget)
                monkeypatch.setattr(PathMessages, "WHOLE_PATH", 512)
                assert mem.context(anchor, budget=budget) == lazily, (anchor, budget)
    assert whole_reads > 40


def test_a_short_path_is_walked_and_a_large_tree_index_is_not_read() -> None:
    mem = Memory()
    head = agent(mem, 40)  # 10 keys next to a path of 40: the path is the shorter read
    with index_reads(mem, 0):
        from_index = mem.visible(head)
    assert mem.visible(head) == from_index  # the same records, read along the path
    tree = mem.store.get_event("default", head).tree  # type: ignore[union-attr]
    assert tree is not None
    index = mem.store.answer("default", Questions(index_tree=tree, index_limit=4)).tree_index
    assert index == IndexTooLarge(tree, 4)


def test_the_jump_pointer_path_agrees_with_the_walked_path() -> None:
    rng = random.Random(5)
    mem = Memory()
    events = ["r"]
    mem.add_event("r")
    for index in range(300):
        event_id = f"n{index}"
        mem.add_event(event_id, rng.choice(events[-20:] if rng.random() < 0.8 else events))
        events.append(event_id)
    store = mem.store
    for anchor_id in rng.sample(events, 25):
        anchor = store.get_event("default", anchor_id)
        assert anchor is not None
        path = AnchorPath(anchor, lambda event_id: store.get_event("default", event_id))
        on_path = set(store.path_ids("default", anchor_id))
        for event_id in rng.sample(events, 100):
            assert path.contains(event_id) == (event_id in on_path), (anchor_id, event_id)
        assert not path.contains("never-arrived")


def test_a_store_migrated_from_before_the_key_index_reads_keys_the_same(tmp_path: Path) -> None:
    path = tmp_path / "before.db"
    with Memory.open(path) as mem:
        head = agent(mem, 50)
        mem.add_event("side", "e20")
        mem.add_record("on-side", sources=["side"], key="k0")
        mem.retract("forget", sources=["e49"], targets=["w40"])
        before = {f"k{k}": mem.current(f"k{k}", head) for k in range(KEYS)}
        shown = {anchor: mem.visible(anchor) for anchor in (head, "side", "e20")}
    with sqlite3.connect(path) as db:  # the store as the schema before keyed reads left it
        for table in ("key_frontiers", "tree_keys", "unkeyed_frontiers"):  # 5 and 6
            db.execute(f"DROP TABLE {table}")  # retraction_targets came before, with 4
        db.execute("ALTER TABLE events DROP COLUMN tokens")  # and 8
        db.execute("DROP INDEX events_tree_starts")  # and 9
        db.execute("DELETE FROM branchmem_schema WHERE version >= ?", (KEYED_READS_VERSION,))
    assert MIGRATIONS[KEYED_READS_VERSION - 1][0].lstrip().startswith("CREATE TABLE key_frontiers")
    with Memory.open(path, migrate=True) as mem:
        after = {f"k{k}": mem.current(f"k{k}", head) for k in range(KEYS)}
        assert after == before
        assert after["k0"].id == "w30"  # type: ignore[union-attr]  # w40 is retracted here
        assert mem.current("k0", "side").id == "on-side"  # type: ignore[union-attr]
        with index_reads(mem, 0):  # the tree index the migration filled answers visible() alike
            assert {anchor: mem.visible(anchor) for anchor in shown} == shown


def test_an_erased_key_leaves_the_index(tmp_path: Path) -> None:
    marker = "KEY-marker-9c1e"
    path = tmp_path / "erase.db"
    with Memory.open(path) as mem:
        mem.add_event("u1")
        mem.add_record("f1", sources=["u1"], content="x", key=marker)
        assert mem.current(marker, "u1") is not None
        mem.erase("f1")
        assert mem.current(marker, "u1") is None
    with sqlite3.connect(path) as db:
        for table in ("key_frontiers", "tree_keys"):
            rows = db.execute(f"SELECT COUNT(*) FROM {table} WHERE key_name = ?", (marker,))
            assert rows.fetchone() == (0,), table


def test_a_detached_anchor_and_cross_tree_views_give_what_visible_gives() -> None:
    mem = Memory("compat")
    mem.add_event("late", "missing-parent")
    mem.add_event("t1")
    mem.add_event("t2")
    mem.set_head("t2")
    mem.add_record("a", sources=["late"], key="k")
    mem.add_record("b", sources=["t2"], key="k")
    for anchor, cross in (("late", False), ("t1", True)):
        found = mem.visible(anchor, key="k", cross_tree=cross)
        want = found[-1].id if found else None
        got = mem.current("k", anchor, cross_tree=cross)
        assert (got.id if got else None) == want


def test_a_write_that_fails_leaves_no_trace_in_the_key_index(tmp_path: Path) -> None:
    for mem in (Memory(), Memory.open(tmp_path / "atomic.db")):
        mem.add_event("u1")
        mem.add_record("old", sources=["u1"], key="city")
        with pytest.raises(NotFoundError):  # stored, then refused: rolled back whole
            mem.add_record("new", sources=["u1"], key="city", supersedes=["missing"])
        assert mem.current("city", "u1").id == "old"  # type: ignore[union-attr]
        mem.close()


def long_history(rng: random.Random) -> list[Op]:
    """An agent-like tree deep enough for the jump pointers to skip: a long main line with
    forks (edits, regenerations), keyed writes along every branch, revisions, retractions of
    both scopes, supersedes and withdrawals."""
    ops: list[Op] = []
    line = ["e0"]
    ops.append(("event", {"id": "e0", "parent": None, "tree": None, "content": "e0"}))
    for index in range(1, 160):
        parent = line[-1] if rng.random() < 0.85 else rng.choice(line[-30:])
        event_id = f"e{index}"
        ops.append(("event", {"id": event_id, "parent": parent, "content": event_id}))
        line.append(event_id)
    ops.append(("event", {"id": "other", "parent": None, "tree": None, "content": "other"}))
    ops.append(("head", {"id": "other"}))
    records = []
    for index in range(70):
        record_id = f"r{index}"
        anchor = rng.choice(line)
        sources: list[str] | None = [anchor]
        if records and rng.random() < 0.15:
            sources = [anchor, rng.choice(records)]
        elif rng.random() < 0.05:
            sources = ["other"] if rng.random() < 0.5 else None
        key = rng.choice(["city", "city", "budget", None])
        scope = rng.choice([None, None, "work"])
        ops.append(("record", {"id": record_id, "sources": sources, "key": key, "scope": scope}))
        records.append(record_id)
        if rng.random() < 0.1:
            ops.append(("revise", {"id": record_id, "sources": [rng.choice(line)]}))
    for index in range(4):
        by_key = rng.random() < 0.6
        ops.append(
            (
                "retract",
                {
                    "id": f"x{index}", "sources": [rng.choice(line)],
                    "targets": () if by_key else (rng.choice(records),),
                    "key": rng.choice(["city", "budget"]) if by_key else None,
                    "key_scope": rng.choice([None, "work"]),
                    "scope": rng.choice(["branch", "tree"]),
                },
            )
        )  # fmt: skip
    for _ in range(3):
        new, old = rng.sample(records, 2)
        ops.append(("supersede", {"new": new, "old": old}))
    for _ in range(3):
        ops.append(("withdraw", {"id": rng.choice(records + line)}))
    return ops


class ReadingAheadStore(InMemoryStore):
    """The in-memory store asked as PostgreSQL is: keyed reads ask ahead through ``answer``
    (a cost choice only: the answers must decide the same)."""

    def keyed_reads(self, namespace: str) -> KeyedReader:
        return ReadAhead(self, namespace)


@pytest.mark.parametrize("reads_ahead", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_current_on_deep_trees_matches_the_oracle(seed: int, reads_ahead: bool) -> None:
    rng = random.Random(seed)
    mem, oracle = Memory(store=ReadingAheadStore() if reads_ahead else InMemoryStore()), Oracle()
    for op in long_history(rng):
        apply(mem, oracle, op, "default")
    anchors = rng.sample(sorted(oracle.events), 25)
    for anchor in anchors:
        for mode in ("strict", "compat"):
            for cross_tree in (False, True):
                expected = oracle.decide_all(anchor, mode=mode, cross_tree=cross_tree)
                for key in ("city", "budget"):
                    for scope in (None, "work"):
                        found = mem.current(
                            key, anchor, scope=scope, mode=mode, cross_tree=cross_tree
                        )
                        want = oracle_current(
                            oracle, expected, key, scope, anchor, mode, cross_tree
                        )
                        assert (found.id if found else None) == want, (
                            anchor, mode, cross_tree, key, scope,
                        )  # fmt: skip


# -- keyed reads asked in bulk (a backend with a round trip per statement) ---------------
class RoundTrips:
    """Counts what a PostgreSQL store sends: each statement outside a pipeline, and each
    pipeline, is one round trip."""

    def __init__(self) -> None:
        self.count = 0
        self.piping = False

    def wrap(self, connection: Any) -> Any:
        trips = self

        class Counted:
            def execute(self, *args: Any, **kwargs: Any) -> Any:
                trips.count += not trips.piping
                return connection.execute(*args, **kwargs)

            @contextmanager
            def pipeline(self) -> Iterator[Any]:
                trips.count += 1
                trips.piping = True
                try:
                    with connection.pipeline() as pipeline:
                        yield pipeline
                finally:
                    trips.piping = False

            def __getattr__(self, name: str) -> Any:
                return getattr(connection, name)

        return Counted()


@pytest.fixture
def pg_url(pg_dsn: str) -> Iterator[str]:
    """A fresh PostgreSQL database, dropped afterwards."""
    from pg import fresh_database

    with fresh_database(pg_dsn, "bm_keyed") as url:
        yield url


def round_trips_of_visible(url: str, namespace: str, keys: int) -> tuple[list[str], int]:
    """``visible()`` at the head of 400 turns cycling over ``keys`` keys, read from the
    tree index: what it returns and the round trips it took."""
    turns = 400
    with Memory.open(url) as mem:
        mem.add_events(
            [{"id": f"e{i}", "parent": f"e{i - 1}" if i else None} for i in range(turns)],
            namespace=namespace,
        )
        mem.add_records(
            [
                {"id": f"w{i}", "sources": [f"e{i}"], "content": f"v{i}", "key": f"k{i % keys}"}
                for i in range(turns)
            ],
            namespace=namespace,
        )
        head = f"e{turns - 1}"
        with index_reads(mem, None):
            along_path = [r.id for r in mem.visible(head, namespace=namespace)]
        store = mem.store
        trips = RoundTrips()
        connection = store._connection  # type: ignore[attr-defined]
        store._connection = lambda: trips.wrap(connection())  # type: ignore[attr-defined]
        try:
            with index_reads(mem, 0):
                found = [r.id for r in mem.visible(head, namespace=namespace)]
        finally:
            del store._connection  # type: ignore[attr-defined]
    assert found == along_path
    assert found == [f"w{turns - keys + key}" for key in range(keys)]
    return found, trips.count


def test_an_index_visible_on_postgres_takes_the_same_round_trips_for_ten_times_the_keys(
    pg_url: str,
) -> None:
    _, few = round_trips_of_visible(pg_url, "few", 4)
    _, many = round_trips_of_visible(pg_url, "many", 40)
    assert many == few, (few, many)  # asked one record at a time: ~8 more a key


@pytest.fixture
def bulk_sqlite(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """SQLite answering keyed reads in bulk, as PostgreSQL does (the same SQL but for two
    statements), taking one newest revision at a time so older ones page in; yields the
    number of bulk answers given."""
    answered = [0]

    def counted(self: SQLiteStore, namespace: str, questions: Questions) -> Facts:
        answered[0] += bool(questions.records)
        return SQLStore.answer(self, namespace, questions)

    monkeypatch.setattr(SQLiteStore, "NEWEST_REVISIONS", 1)
    monkeypatch.setattr(SQLiteStore, "answer", counted)
    monkeypatch.setattr(SQLiteStore, "keyed_reads", lambda self, ns: ReadAhead(self, ns))
    yield answered


@pytest.mark.parametrize("seed", range(2))
def test_keyed_reads_asked_in_bulk_match_the_oracle(
    bulk_sqlite: list[int], tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    opened: list[Memory] = []

    def make() -> Memory:
        opened.append(Memory.open(tmp_path / f"mem-{len(opened)}.db"))
        return opened[-1]

    try:
        compared = sum(run_scenario(make, rng) for _ in range(15))
    finally:
        for mem in opened:
            mem.close()
    assert compared > 0 and bulk_sqlite[0] > 0


def test_current_asked_in_bulk_on_deep_trees_matches_the_oracle(
    bulk_sqlite: list[int], tmp_path: Path
) -> None:
    rng = random.Random(5)
    oracle = Oracle()
    with Memory.open(tmp_path / "deep.db") as mem:
        for op in long_history(rng):
            apply(mem, oracle, op, "default")
        for anchor in rng.sample(sorted(oracle.events), 15):
            for mode in ("strict", "compat"):
                expected = oracle.decide_all(anchor, mode=mode)
                for key in ("city", "budget"):
                    for scope in (None, "work"):
                        with mem._read("default"):  # one call's snapshot: bulk answers
                            found = mem.current(key, anchor, scope=scope, mode=mode)
                        want = oracle_current(oracle, expected, key, scope, anchor, mode, False)
                        assert (found.id if found else None) == want, (anchor, mode, key, scope)
    assert bulk_sqlite[0] > 0
