"""``current`` answers kept between calls while the store's commit stamp holds
(``_engine.viewcache``): any commit, this Memory's or another connection's, is seen at the
next call, and the report counts a kept answer as a decided one."""

from __future__ import annotations

from pathlib import Path

from branchmem import Memory


def chain(mem: Memory, ids: list[str], parent: str | None = None) -> None:
    for event_id in ids:
        mem.add_event(event_id, parent)
        parent = event_id


def value(mem: Memory, key: str, anchor: str) -> str | None:
    found = mem.current(key, anchor)
    return None if found is None else found.id


def test_another_connections_commit_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory.open(path) as reader, Memory.open(path) as writer:
        chain(writer, ["e0", "e1", "e2"])
        writer.add_record("r1", sources=["e1"], content="v1", key="k")
        assert value(reader, "k", "e2") == "r1"
        assert value(reader, "k", "e2") == "r1"  # kept
        writer.add_record("r2", sources=["e2"], content="v2", key="k")
        assert value(reader, "k", "e2") == "r2"
        writer.erase("r2", reason="wrong")
        assert value(reader, "k", "e2") == "r1"


def test_own_writes_are_seen_and_counts_add_up(tmp_path: Path) -> None:
    for mem in (Memory(), Memory.open(tmp_path / "m.db")):
        with mem:
            chain(mem, ["e0", "e1"])
            assert value(mem, "k", "e1") is None
            mem.add_record("r1", sources=["e0"], content="v1", key="k")
            assert value(mem, "k", "e1") == "r1"
            before = mem.report()
            assert value(mem, "k", "e1") == "r1"  # kept: counted as if decided again
            after = mem.report()
            assert after != before
            mem._views.clear()
            assert value(mem, "k", "e1") == "r1"  # decided
            assert mem.report() == _step(before, after)  # each count moved as much again
            mem.add_record("r2", sources=["e1"], content="v2", key="k")
            assert value(mem, "k", "e1") == "r2"
            assert value(mem, "k", "e0") == "r1"


def _step(before: object, after: object) -> object:
    """``after`` with every count the call between ``before`` and it moved, moved again."""
    if isinstance(after, dict) and isinstance(before, dict):
        return {k: _step(before.get(k), v) for k, v in after.items()}
    if isinstance(after, int) and isinstance(before, int) and not isinstance(after, bool):
        return after + (after - before)
    return after
