"""PostgreSQL's nested transactions: the SAVEPOINT waits to go with the block's first
statement (store/postgres.py), and a nested block is still all or nothing inside a
transaction that goes on (docs/langgraph.md, "What a put costs")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from branchmem import Memory
from branchmem.errors import ConflictError
from pg import counting_store, fresh_database

INSERT = "INSERT INTO scratch (id) VALUES (?)"


@pytest.fixture
def counted_store(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """A store on a fresh database with a scratch table, counting its round trips (each
    ``BEGIN`` pipeline, each pipeline of statements, each statement sent alone)."""
    Counting, counts = counting_store(monkeypatch)
    with fresh_database(pg_dsn, "savepoints") as url:
        store = Counting(url)
        try:
            with store.transaction("ns"):
                store._run("CREATE TABLE scratch (id TEXT PRIMARY KEY)")
            yield store, counts
        finally:
            store.close()


def rows(store: Any) -> list[str]:
    with store.reading("ns"):
        return sorted(row[0] for row in store._all("SELECT id FROM scratch"))


@pytest.mark.parametrize("outer_first", [False, True], ids=["nested-first", "outer-wrote"])
def test_a_nested_block_whose_write_fails_rolls_back_alone(
    counted_store: tuple[Any, Any], outer_first: bool
) -> None:
    """The block's write fails on the server: its savepoint was sent, so the transaction
    rolls back to it and goes on; the outer writes commit, the block's do not."""
    store, _ = counted_store
    with store.transaction("ns"):
        store._many(INSERT, [("dup",)])
    with store.transaction("ns"):
        if outer_first:
            store._many(INSERT, [("a",)])  # queued ahead of the savepoint
        with pytest.raises(ConflictError), store.transaction("ns"):
            store._many(INSERT, [("b",), ("dup",)])
        store._many(INSERT, [("c",)])
    assert rows(store) == (["a", "c", "dup"] if outer_first else ["c", "dup"])


def test_a_nested_block_that_fails_before_reaching_the_server_costs_no_round_trip(
    counted_store: tuple[Any, Any],
) -> None:
    """Nothing of the block was sent (its SAVEPOINT waited for its first statement): its
    held write is dropped and the transaction goes on without a rollback."""
    store, counts = counted_store
    with store.transaction("ns"):
        counts["trips"] = 0
        with pytest.raises(RuntimeError), store.transaction("ns"):
            store._many(INSERT, [("b",)])
            raise RuntimeError("the caller's own failure")
        assert counts["trips"] == 0
        store._many(INSERT, [("c",)])
    assert rows(store) == ["c"]


def test_a_nested_block_reads_with_its_savepoint_in_one_round_trip(
    counted_store: tuple[Any, Any],
) -> None:
    """The SAVEPOINT goes with the block's first read; its RELEASE with its writes."""
    store, counts = counted_store
    with store.transaction("ns"):
        counts["trips"] = 0
        with store.transaction("ns"):
            assert store._all("SELECT id FROM scratch") == []
            store._many(INSERT, [("b",)])
        assert counts["trips"] == 2
    assert rows(store) == ["b"]


def test_records_written_inside_a_transaction_cost_one_round_trip_more_than_alone(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nested in ``Memory.transaction``, ``add_records`` adds only the RELEASE that settles
    its writes before the transaction goes on (its SAVEPOINT rides with its first read)."""
    Counting, counts = counting_store(monkeypatch)
    with fresh_database(pg_dsn, "savepoints") as url, Memory(store=Counting(url)) as memory:
        memory.add_event("e1")
        counts["trips"] = 0
        memory.add_records([{"id": "r1", "sources": ["e1"], "content": "one"}])
        by_itself = counts["trips"]
        counts["trips"] = 0
        with memory.transaction():
            memory.add_records([{"id": "r2", "sources": ["e1"], "content": "two"}])
        assert counts["trips"] == by_itself + 1, (by_itself, counts["trips"])
        assert memory.get_record("r2").content == "two"
