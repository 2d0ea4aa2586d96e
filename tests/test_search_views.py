"""Search views kept between calls (``_engine.viewcache``) never outlive what they were decided
on: a rolled-back write, another Memory's or connection's commit, a forget. Another process's
commits are the cross-process suite's (tests/test_readers_across_processes.py); that every
kept answer equals the reference is the differential suite's (tests/test_search.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.store.inmemory import InMemoryStore
from branchmem.store.sqlsession import CHUNK


class Boom(Exception):
    pass


def ids(mem: Memory, query: str = "apple", anchor: str = "e2", **options: object) -> list[str]:
    return [hit.record.id for hit in mem.search(query, anchor, k=10, **options)]  # type: ignore[arg-type]


def matching(mem: Memory, query: str = "apple", anchor: str = "e2") -> list[str]:
    """The hits that match the query themselves (not only stand beside one on the path)."""
    return [hit.record.id for hit in mem.search(query, anchor, k=10) if "×" in hit.why]


def seeded(mem: Memory) -> Memory:
    mem.add_events([{"id": "e1", "content": "hi"}, {"id": "e2", "parent": "e1", "content": "x"}])
    mem.add_records(
        [
            {"id": "r1", "sources": ["e1"], "content": "apple pie for dessert"},
            {"id": "r2", "sources": ["e2"], "content": "pear and apple crumble"},
        ]
    )
    return mem


@pytest.fixture(params=["memory", "sqlite"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    memory = Memory() if request.param == "memory" else Memory.open(tmp_path / "m.db")
    with memory:
        yield seeded(memory)


def test_a_write_rolled_back_is_not_kept(mem: Memory) -> None:
    before = ids(mem)
    assert ids(mem) == before  # kept, and indexed
    with pytest.raises(Boom), mem.transaction():
        mem.add_record("r3", sources=["e2"], content="apple tart")
        assert "r3" in ids(mem)  # the transaction sees its own write
        assert "r3" in ids(mem)
        raise Boom
    assert ids(mem) == before
    assert ids(mem) == before


def test_a_commit_of_another_memory_on_the_same_store_is_seen() -> None:
    store = InMemoryStore()
    reader, writer = Memory(store=store), Memory(store=store)
    seeded(writer)
    first = ids(reader)
    assert ids(reader) == first and len(first) == 2
    writer.add_record("r3", sources=["e2"], content="apple apple apple")
    assert ids(reader)[0] == "r3"
    writer.withdraw("r3", reason="test")
    assert "r3" not in ids(reader)


def test_a_commit_of_another_connection_to_the_file_is_seen(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "f.db") as reader, Memory.open(tmp_path / "f.db") as writer:
        seeded(writer)
        first = ids(reader)
        assert ids(reader) == first and len(first) == 2
        writer.add_record("r3", sources=["e2"], content="apple apple apple")
        assert ids(reader)[0] == "r3"
        writer.revise("r3", content="no fruit here")
        assert "r3" not in matching(reader)


def test_a_kept_view_counts_in_the_report_as_a_decided_one(mem: Memory) -> None:
    def decisions() -> dict[str, int]:
        return dict(mem.report()["decisions"])

    start = decisions()
    ids(mem)
    once = {k: v - start.get(k, 0) for k, v in decisions().items()}
    ids(mem)
    twice = {k: v - start.get(k, 0) for k, v in decisions().items()}
    assert once and twice == {k: 2 * v for k, v in once.items()}


def test_a_forget_leaves_no_kept_view_behind(mem: Memory) -> None:
    ids(mem)
    ids(mem)
    assert len(mem._views) == 1
    mem.forget("message", "e2")
    assert len(mem._views) == 0
    assert ids(mem, anchor="e1") == ["r1"]


def test_a_search_as_of_an_earlier_point_is_not_kept(mem: Memory) -> None:
    mem.search("apple", "e2", as_of=3)
    mem.search("apple", "e2", as_of=3)
    assert len(mem._views) == 0


def test_the_first_search_after_a_write_reads_in_bulk_not_per_record(tmp_path: Path) -> None:
    """Deciding a view anew (after a write) reads the records' facts a chunk at a time: ten
    times the visible records adds a statement per chunk of ids, never one per record (the
    check whether a record may lend its rank once asked each record what it supersedes)."""
    from test_current_fast import traced

    counts = []
    for size in (200, 2000):
        with Memory.open(tmp_path / f"s{size}.db") as mem:
            mem.add_events(
                {"id": f"e{i}", "parent": f"e{i - 1}" if i else None, "content": "turn"}
                for i in range(size)
            )
            mem.add_records(
                {"id": f"r{i}", "sources": [f"e{i}"], "content": f"apple note {i}"}
                for i in range(size)
            )
            mem.add_record("new", sources=[f"e{size - 1}"], content="apple pie")
            hits, statements = traced(mem, lambda m=mem, s=size: m.search("apple", f"e{s - 1}"))
            assert hits
            counts.append(statements)
    chunks = 2000 // CHUNK + 1  # each IN (...) list of ids holds up to CHUNK of them
    assert counts[1] <= counts[0] + 4 * chunks, counts


@pytest.mark.parametrize("when", ["before its write", "after its write"])
def test_a_view_derived_after_a_write_sees_another_connections_commit(
    tmp_path: Path, when: str
) -> None:
    """A view kept across a Memory's own write that only added is derived from only while
    no other connection committed: another commit, before that write or after it, makes
    the next search decide its view."""
    with Memory.open(tmp_path / "f.db") as agent, Memory.open(tmp_path / "f.db") as other:
        seeded(agent)
        assert ids(agent) == ids(agent)  # kept, and indexed
        if when == "before its write":
            other.add_record("r3", sources=["e2"], content="apple apple apple")
        agent.add_event("e3", "e2", content="turn")
        agent.add_record("r4", sources=["e3"], content="an apple a day")
        if when == "after its write":
            other.add_record("r3", sources=["e2"], content="apple apple apple")
        assert set(ids(agent, anchor="e3")) == {"r1", "r2", "r3", "r4"}


def test_a_view_is_derived_after_a_write_that_only_added(mem: Memory) -> None:
    """An agent's turn (an event, a fact on it) keeps the view it searched before: the
    search at the new turn is derived (no view decided), and has the new fact."""
    import branchmem._engine.retrieval as retrieval

    assert ids(mem) == ids(mem)
    mem.add_event("e3", "e2", content="turn")
    mem.add_record("r3", sources=["e3"], content="apple apple apple")
    decided = retrieval.decided
    retrieval.decided = None  # type: ignore[assignment]  # a decision would fail loudly
    try:
        assert set(ids(mem, anchor="e3")) == {"r1", "r2", "r3"}
    finally:
        retrieval.decided = decided
    mem.withdraw("r1")  # more than an addition: the next view is decided
    assert set(ids(mem, anchor="e3")) == {"r2", "r3"}


@pytest.mark.parametrize("anchor", ["e2", "e3"])
def test_a_current_answer_kept_across_a_write_sees_another_connections_commit(
    tmp_path: Path, anchor: str
) -> None:
    """A ``current`` answer kept across a Memory's own write that only added holds only
    while no other connection committed, at its own anchor and at an added one below."""
    with Memory.open(tmp_path / "f.db") as agent, Memory.open(tmp_path / "f.db") as other:
        seeded(agent)
        agent.add_record("c1", sources=["e2"], key="city", content="Chengdu")
        assert agent.current("city", "e2").id == "c1"  # type: ignore[union-attr]
        other.add_record("c2", sources=["e2"], key="city", content="Hangzhou")
        agent.add_event("e3", "e2", content="turn")
        assert agent.current("city", anchor).id == "c2"  # type: ignore[union-attr]


def test_what_one_tenant_added_never_reaches_anothers_kept_view(mem: Memory) -> None:
    """Two namespaces with the same ids: a write that only added to one carries the other's
    kept views and answers as they are, and the other's own derived view and carried
    answer hold nothing of the first's."""
    seeded_b = [{"id": "e1", "content": "hi"}, {"id": "e2", "parent": "e1", "content": "x"}]
    mem.add_events(seeded_b, namespace="b")
    mem.add_record("b1", sources=["e2"], content="apple of tenant b", namespace="b")
    mem.add_record("k1", sources=["e2"], key="city", content="Lyon", namespace="b")
    assert ids(mem, namespace="b") == ids(mem, namespace="b") == ["b1"]
    assert mem.current("city", "e2", namespace="b").id == "k1"  # type: ignore[union-attr]
    mem.add_event("e3", "e2", content="turn")  # the other tenant's turn and fact
    mem.add_record("r3", sources=["e3"], content="apple apple apple")
    mem.add_event("e3", "e2", content="turn", namespace="b")  # this tenant's turn
    assert ids(mem, namespace="b") == ["b1"]
    assert ids(mem, anchor="e3", namespace="b") == ["b1"]
    assert mem.current("city", "e3", namespace="b").id == "k1"  # type: ignore[union-attr]
    assert "r3" in ids(mem, anchor="e3")
