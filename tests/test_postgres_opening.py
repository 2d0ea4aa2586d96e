"""PostgreSQL: a transaction's ``BEGIN`` (a writer's lock and sequence with it) goes with the
call's first statement, and what a write asks in bulk goes together (store/postgres.py,
docs/scaling.md "Writing records in bulk"): the round trips of an agent's turn, a call that
sends nothing, a connection lost before the first answer, and a read kept alongside another
that a write in between makes stale."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from branchmem import Memory
from branchmem.store.base import Store
from branchmem.store.postgres import PostgresStore
from branchmem.store.sqlite import SQLiteStore
from pg import counting_store, fresh_database, kill_other_connections


@pytest.fixture
def counted(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Memory, Any]]:
    """A Memory on a fresh database whose store counts its round trips."""
    Counting, counts = counting_store(monkeypatch)
    with fresh_database(pg_dsn, "opening") as url, Memory(store=Counting(url)) as memory:
        memory.add_event("e0", None, tree="t", content="start")
        yield memory, counts


def trips(counts: dict[str, Any], call: Any) -> int:
    counts["trips"] = 0
    call()
    return int(counts["trips"])


def test_an_agent_turn_takes_the_round_trips_its_reads_need(
    counted: tuple[Memory, Any],
) -> None:
    """``add_event``: the BEGIN with the lock, the sequence and everything placing the event
    asks (it, its parent, their children and records), then the steps above the parent,
    then the rows with what its arrival settles (pending and citing revisions), then the
    COMMIT. ``add_records``: the BEGIN with the new ids, their sources and what already
    cites them, then the rows with the COMMIT. A read: its BEGIN with its first statement,
    then its ROLLBACK."""
    memory, counts = counted
    for turn in range(1, 6):
        memory.add_event(f"e{turn}", f"e{turn - 1}", content=f"turn {turn}")
    assert trips(counts, lambda: memory.add_event("e6", "e5", content="turn 6")) == 4
    record = [{"id": "f6", "sources": ["e6"], "content": "a fact", "key": "k"}]
    assert trips(counts, lambda: memory.add_records(record)) == 2
    assert trips(counts, lambda: memory.get_event("e6")) == 2
    assert trips(counts, memory.change_stamp) == 2  # the sequence read with the BEGIN
    found: list[Any] = []
    # the place of e6 is the one this Memory wrote: the key's page goes with the BEGIN,
    # then the facts its rule asks, then the ROLLBACK
    assert trips(counts, lambda: found.append(memory.current("k", "e6"))) == 3
    assert found[0].id == "f6"


def test_a_call_that_sends_nothing_begins_nothing(counted: tuple[Memory, Any]) -> None:
    """No statement, no BEGIN and no COMMIT or ROLLBACK: the lock comes with the first
    statement, so an empty transaction holds no other writer."""
    memory, counts = counted

    def empty_blocks() -> None:
        with memory.transaction(), memory.snapshot():
            pass

    assert trips(counts, empty_blocks) == 0
    other = PostgresStore(memory.store.url)  # type: ignore[attr-defined]
    try:
        with memory.transaction(), other.transaction("default"):  # would wait for a lock held
            other.set_head("default", "t", "e0")
    finally:
        other.close()


def test_a_write_whose_connection_was_lost_before_its_first_answer_is_sent_again(
    pg_dsn: str,
) -> None:
    """Nothing of the call had run when the pipeline carrying its BEGIN failed: the whole
    opening, its reads and the writes queued behind it go again on a fresh connection, and
    the arrival numbers go on from the stored sequence."""
    with fresh_database(pg_dsn, "opening") as url, Memory.open(url) as memory:
        memory.add_event("e0", None, tree="t", content="start")
        before = memory.get_event("e0").seq
        assert kill_other_connections(url), "the store held no connection to kill"
        memory.add_records([{"id": "f1", "sources": ["e0"], "content": "after the loss"}])
        memory.add_event("e1", "e0", content="next")
        assert memory.get_record("f1").content == "after the loss"
        assert memory.get_event("e1").seq > before
        assert [entry.op for entry in memory.audit()][-2:] == ["add_records", "add_event"]


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Store]:
    if request.param == "sqlite":
        made: Store = SQLiteStore(str(tmp_path / "alongside.db"))
        yield made
        made.close()
        return
    dsn = request.getfixturevalue("pg_dsn")
    with fresh_database(dsn, "alongside") as url:
        made = PostgresStore(url)
        yield made
        made.close()


def test_what_cites_an_id_read_alongside_is_read_again_after_a_write(store: Store) -> None:
    """``prefetch(citing=...)`` answers the next ``citing_any`` of those ids; a write in
    between (here a revision citing one of them) makes that answer stale, so it is asked
    again and the new citation is in it."""
    memory = Memory(store=store)  # not closed here: that would close the store
    memory.add_event("e0", None, tree="t", content="start")
    memory.add_records([{"id": "old", "sources": ["e0", "new"], "content": "waits"}])
    waiting = ("new", ("old", 1))
    with store.transaction("default"):
        store.prefetch("default", ["new", "other"], citing=["new", "other"])
        assert store.citing_any("default", ["new"]) == [waiting]
        store.prefetch("default", ["new"], citing=["new"])
        node = store.get_revisions("default", "old")[0]
        store.put_revision("default", node.__class__(**{**_fields(node), "record_id": "also"}))
        assert store.citing_any("default", ["new"]) == [("new", ("also", 1)), waiting]
        store.prefetch("default", ["new"], citing=["new"])
        assert store.citing_any("default", ["other"]) == []  # asked of other ids: read
        assert store.citing_any("default", ["new"]) == [("new", ("also", 1)), waiting]


def _fields(node: Any) -> dict[str, Any]:
    return {name: getattr(node, name) for name in node.__slots__}


def test_a_commit_never_goes_with_the_opening(pg_dsn: str) -> None:
    """A pipeline is retried whole while its opening is unanswered; one lost after the
    server committed it would write the call twice. So a transaction that only writes
    sends its opening and writes first (a lost connection there is retried), then the
    COMMIT alone."""
    with_opening: list[list[str]] = []

    class Watched(PostgresStore):
        def _pipelined(self, statements: Any) -> Any:
            if self._opening:
                with_opening.append([text for text, _ in statements])
            return super()._pipelined(statements)

    with fresh_database(pg_dsn, "opening") as url:
        store = Watched(url)
        try:
            assert kill_other_connections(url) >= 0
            with store.transaction("default"):
                # a write queued to go with the next statement, and no read
                store._many("INSERT INTO heads (namespace, tree, event_id) VALUES (?, ?, ?)",
                            [("default", "t", "e1")])  # fmt: skip
            assert store.heads("default") == {"t": "e1"}
            assert with_opening and not [sent for sent in with_opening if "COMMIT" in sent]
        finally:
            store.close()
