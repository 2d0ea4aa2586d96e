"""Places of attached events kept across calls (``topology.SettledPlaces``).

A keyed read's ancestor tests read events' places; once attached, a place never changes
and no event is deleted, so a Memory keeps them between calls and a warm read asks no
event of the store. What these tests hold: a place is kept only from committed state (a
rolled-back event is never kept), only the place is kept (never text), and another
connection's writes are read, not guessed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.store.sqlite import SQLiteStore


def chain(mem: Memory, ids: list[str], parent: str | None = None) -> None:
    for event_id in ids:
        mem.add_event(event_id, parent)
        parent = event_id


def test_a_rolled_back_event_is_never_kept(tmp_path: Path) -> None:
    """Read at an event written in a transaction that rolls back, then written again
    elsewhere: the read sees the new place, not the lost one."""
    with Memory.open(tmp_path / "m.db") as mem:
        chain(mem, ["a0", "a1", "a2", "a3"])
        chain(mem, ["b1"], "a0")
        mem.add_record("r", sources=["a2"], content="on a", key="k")
        with pytest.raises(RuntimeError), mem.transaction():
            mem.add_event("x", "a3")  # x under a3: r (at a2) is on x's path
            found = mem.current("k", "x")
            assert found is not None and found.id == "r"
            raise RuntimeError("roll back")
        mem.add_event("x", "b1")  # now x is on the b branch: r is off its path
        assert mem.current("k", "x") is None
        assert [e.id for e in mem.path("x")] == ["a0", "b1", "x"]


def test_a_nested_block_that_rolls_back_keeps_none_of_its_events(tmp_path: Path) -> None:
    """The events a Memory writes are kept once their transaction commits, but not those of
    a nested block that rolled back inside it: that event, written again elsewhere, is read
    where it is."""
    with Memory.open(tmp_path / "m.db") as mem:
        chain(mem, ["a0", "a1", "a2", "a3"])
        chain(mem, ["b1"], "a0")
        mem.add_record("r", sources=["a2"], content="on a", key="k")
        with mem.transaction():
            with pytest.raises(RuntimeError), mem.transaction():
                mem.add_event("x", "a3")  # x under a3: r (at a2) is on x's path
                raise RuntimeError("roll the block back")
            mem.add_event("y", "a3")
        places = mem._places
        assert places is not None
        assert ("default", "y") in places._places  # written and committed: kept
        assert ("default", "x") not in places._places
        mem.add_event("x", "b1")  # now x is on the b branch: r is off its path
        assert mem.current("k", "x") is None
        assert (mem.current("k", "y") or pytest.fail("no value")).id == "r"
        with pytest.raises(RuntimeError), mem.transaction():
            mem.add_event("z", "a3")
            raise RuntimeError("roll the whole write back")
        assert ("default", "z") not in places._places
        mem.add_event("z", "b1")
        assert mem.current("k", "z") is None


def test_a_read_at_the_event_just_written_asks_no_event(tmp_path: Path) -> None:
    """An agent's turn: it writes an event, then reads at it; the event's place is the one
    the write placed, so the read does not read it back."""
    with Memory.open(tmp_path / "m.db") as mem:
        chain(mem, [f"e{i}" for i in range(20)])
        mem.add_record("r", sources=["e7"], content="early", key="k")
        mem.add_record("s", sources=["e3"], content="earlier", key="other")
        assert mem.current("k", "e19") is not None  # e19's path read, its places kept
        mem.add_event("e20", "e19", content="a new turn")
        store = mem.store
        assert isinstance(store, SQLiteStore)
        seen: list[str] = []
        store._connection().set_trace_callback(seen.append)
        try:
            # a key not read above: decided here (no answer kept at e19 stands for it)
            assert (mem.current("other", "e20") or pytest.fail("no value")).id == "s"
        finally:
            store._connection().set_trace_callback(None)
        assert not [s for s in seen if "FROM events" in s], seen


def test_only_places_are_kept_never_text(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db") as mem:
        mem.add_event("e0", content="I live in Chengdu")
        mem.add_event("e1", "e0", content="moving to Hangzhou")
        mem.add_record("r", sources=["e0"], content="lives in Chengdu", key="city")
        assert mem.current("city", "e1") is not None
        places = mem._places  # what the Memory holds between calls
        assert places is not None
        kept = [*places._places.values()]
        for path in places._paths.values():  # the anchors' paths and the ancestors found
            kept += [path.anchor, *path._found.values()]
        assert len(kept) > 2, "the read kept too little: the test would prove nothing"
        assert all(node.content == "" and node.role == "" and node.meta == {}
                   for node in kept)  # fmt: skip
        mem.erase("e0", reason="forget")
        assert mem.get_event("e0").content != "I live in Chengdu"


def test_another_connections_events_are_read(tmp_path: Path) -> None:
    """Places are kept per Memory; events another connection adds are read when asked."""
    path = tmp_path / "m.db"
    with Memory.open(path) as reader, Memory.open(path) as writer:
        chain(writer, ["e0", "e1", "e2"])
        writer.add_record("r", sources=["e1"], content="v1", key="k")
        assert (reader.current("k", "e2") or pytest.fail("no value")).id == "r"
        chain(writer, ["f1", "f2"], "e0")  # a sibling branch, after the reader's read
        writer.add_record("s", sources=["f2"], content="v2", key="k")
        assert (reader.current("k", "f2") or pytest.fail("no value")).id == "s"
        assert (reader.current("k", "e2") or pytest.fail("no value")).id == "r"


def test_a_warm_read_asks_no_event(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db") as mem:
        chain(mem, [f"e{i}" for i in range(300)])
        mem.add_record("r", sources=["e7"], content="early", key="k")
        assert mem.current("k", "e299") is not None  # a long jump-pointer walk, read once
        store = mem.store
        assert isinstance(store, SQLiteStore)
        seen: list[str] = []
        store._connection().set_trace_callback(seen.append)
        try:
            assert mem.current("k", "e299") is not None
        finally:
            store._connection().set_trace_callback(None)
        assert not [s for s in seen if "FROM events" in s], seen


def test_a_full_table_lets_the_least_recently_read_go() -> None:
    """Past its size a table lets one entry go rather than starting again from nothing: the
    place kept longest ago, the anchor's path read longest ago; kept places share strings."""
    from branchmem._core.topology import EventNode, SettledPlaces

    nodes = {
        f"e{i}": EventNode(f"e{i}", f"e{i - 1}" if i else None, "t", None, "user", f"text {i}",
                           {"m": i}, None, i, True, i, f"e{i - 1}" if i else f"e{i}")
        for i in range(6)
    }  # fmt: skip
    reads: list[str] = []

    def read(event_id: str) -> EventNode | None:
        reads.append(event_id)
        return nodes.get(event_id)

    places = SettledPlaces(lambda: False, limit=3, anchors=2)
    place = places.lookup("ns", read)
    for event_id in ("e0", "e1", "e2"):
        place(event_id)
    place("e3")  # full: e0, kept longest ago, goes
    assert [key[1] for key in places._places] == ["e1", "e2", "e3"]
    kept = places._places[("ns", "e3")]
    assert (kept.content, kept.role, kept.meta) == ("", "", {})
    assert kept.parent is places._places[("ns", "e2")].id  # shared, not a copy
    reads.clear()
    place("e1")
    assert reads == []
    place("e0")  # read again, and kept again
    assert reads == ["e0"] and [key[1] for key in places._places] == ["e2", "e3", "e0"]
    for anchor in ("e3", "e4", "e3", "e5"):
        places.path("ns", nodes[anchor], place)
    assert [key[1] for key in places._paths] == ["e3", "e5"]
