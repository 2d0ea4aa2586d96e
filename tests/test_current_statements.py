"""``current()`` on SQLite asks about its winner with the candidates, not after them (issue 25).

In a read snapshot the key's candidate statement brings each candidate's status, latest
revision number and whether a supersede or a retraction names it or its key; the keyed read
then asks nothing more about a plain winner. These tests hold that, and that the facts give
the same answers as the questions they replace: on a history where each fact is set, every
``current()`` equals the in-memory store's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.store.sqlite import SQLiteStore

KEYS = 4


def agent(mem: Memory, turns: int) -> str:
    """Each turn: one event on the path, one write to one of ``KEYS`` keys."""
    mem.add_events([{"id": f"e{i}", "parent": f"e{i - 1}" if i else None} for i in range(turns)])
    for i in range(turns):
        mem.add_record(f"w{i}", sources=[f"e{i}"], content=f"v{i}", key=f"k{i % KEYS}")
    return f"e{turns - 1}"


def statements_of(mem: Memory, read: Callable[[], object]) -> list[str]:
    store = mem.store
    assert isinstance(store, SQLiteStore)
    seen: list[str] = []
    store._connection().set_trace_callback(seen.append)
    try:
        read()
    finally:
        store._connection().set_trace_callback(None)
    return seen


def test_a_plain_winner_is_not_asked_about_again(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db") as mem:
        head = agent(mem, 40)
        seen = statements_of(mem, lambda: mem.current("k1", head))
        about = [s for s in seen if "'w37'" in s]  # the winner, named in a statement
        assert about == [], about
        assert len(seen) <= 13, seen


def test_a_cross_tree_read_takes_the_head_events_with_the_heads(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db") as mem:
        head = agent(mem, 20)
        for thread in range(3):
            mem.add_event(f"thread{thread}")
            mem.set_head(f"thread{thread}")
        seen = statements_of(mem, lambda: mem.current("k1", head, cross_tree=True))
        assert not [s for s in seen if "'thread1'" in s], seen


def history(mem: Memory) -> str:
    """Each fact the candidate statement brings, set on some key's best candidate."""
    head = agent(mem, 24)
    mem.withdraw("w23")  # k3: the best candidate withdrawn
    mem.supersede("w20", "w22")  # k2: the best superseded (by an older record of k0)
    mem.retract("x1", sources=[head], targets=["w21"])  # k1: retracted by target
    mem.add_event("side", "e10")
    mem.revise("w16", content="moved", sources=["side"])  # k0: newest revision off the path
    mem.add_event("e24", head)
    mem.retract("x2", sources=["e24"], key="k0")  # k0: a key retraction, at e24
    return head


@pytest.mark.parametrize("anchor", ["e23", "e24", "e15", "side"])
def test_the_facts_answer_as_the_questions_did(tmp_path: Path, anchor: str) -> None:
    sqlite, memory = Memory.open(tmp_path / "m.db"), Memory()
    with sqlite:
        for mem in (sqlite, memory):
            history(mem)
        for key in (f"k{i}" for i in range(KEYS)):
            for cross_tree in (False, True):
                want = memory.current(key, anchor, cross_tree=cross_tree)
                got = sqlite.current(key, anchor, cross_tree=cross_tree)
                assert (got and (got.id, got.revision)) == (want and (want.id, want.revision))
        with sqlite.snapshot():  # the facts kept across reads of one snapshot
            for key in (f"k{i}" for i in range(KEYS)):
                got = sqlite.current(key, anchor)
                want = memory.current(key, anchor)
                assert (got and got.id) == (want and want.id)


def test_a_warm_keyed_read_sends_one_statement(tmp_path: Path) -> None:
    """Once its anchor's ancestors were read, a plain winner is one statement in a snapshot:
    the candidates with their facts, the sources' statuses among them (after the commit
    stamp, under which the answer is kept); asked again with nothing committed, the stamp
    alone."""
    with Memory.open(tmp_path / "m.db") as mem:
        head = agent(mem, 40)
        mem.current("k1", head)
        seen = statements_of(mem, lambda: mem.current("k2", head))
        assert [s.split()[0] for s in seen] == ["BEGIN", "PRAGMA", "SELECT", "ROLLBACK"], seen
        seen = statements_of(mem, lambda: mem.current("k2", head))
        assert [s.split()[0] for s in seen] == ["BEGIN", "PRAGMA", "ROLLBACK"], seen


def test_a_source_with_a_status_is_still_asked_about(tmp_path: Path) -> None:
    """The candidate's facts say "no source has a status" only when none has: a withdrawn
    source makes the winner stale, read as before."""
    sqlite, memory = Memory.open(tmp_path / "m.db"), Memory()
    with sqlite:
        for mem in (sqlite, memory):
            head = agent(mem, 12)
            mem.withdraw("e9")  # w9's source: k1's best candidate goes stale
        for key in (f"k{i}" for i in range(KEYS)):
            want, got = memory.current(key, head), sqlite.current(key, head)
            assert (got and got.id) == (want and want.id)
        assert sqlite.current("k1", head) is None


CORRECTIONS: dict[str, Callable[[Memory, str], object]] = {
    "withdraw the winner's source": lambda mem, head: mem.withdraw("e37"),
    "withdraw the winner": lambda mem, head: mem.withdraw("w37"),
    "retract the winner": lambda mem, head: mem.retract("x", sources=[head], targets=["w37"]),
    "retract the key": lambda mem, head: mem.retract("x", sources=[head], key="k1"),
    "supersede the winner": lambda mem, head: mem.add_record(
        "n", sources=[head], content="new", supersedes=["w37"]
    ),
}


@pytest.mark.parametrize("correction", CORRECTIONS)
def test_a_reads_facts_end_with_its_snapshot(tmp_path: Path, correction: str) -> None:
    """The facts one ``current()`` brought along (no status, no supersede, no retraction)
    are forgotten when its snapshot ends: a correction written in between by another
    connection decides the next read, as it does on a store that never read the first."""
    path = tmp_path / "m.db"
    with Memory.open(path) as reader, Memory.open(path) as writer:
        head = agent(reader, 40)
        before = reader.current("k1", head)
        assert before is not None and before.id == "w37"
        CORRECTIONS[correction](writer, head)
        with Memory.open(path) as fresh:
            want = fresh.current("k1", head)
        got = reader.current("k1", head)
        assert (got and got.id) == (want and want.id)
        assert (got and got.id) != "w37"
