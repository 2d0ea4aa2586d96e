"""The facade: each public call checks its namespace once and delegates the work."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

import branchmem.memory
from branchmem import Event, Memory, Record, RepairView
from branchmem._core.validation import check_id
from branchmem.search.context import assemble_context
from test_retrieval_context import NewlinesCost, inputs


def small_memory() -> Memory:
    memory = Memory()
    memory.add_event("u1", content="I'm moving to Chengdu")
    memory.add_event("u2", "u1", content="actually Hangzhou")
    memory.add_record("city", sources=["u1"], content="moving to Chengdu", key="city")
    memory.add_record("summary", sources=["city"], content="a move to Chengdu")
    memory.context("u2", session="s1")
    return memory


def rebuild(record: Record, view: RepairView) -> tuple[str, list[str]]:
    return ("rebuilt", ["u2"])


CALLS: dict[str, Callable[[Memory], Any]] = {
    "add_event": lambda m: m.add_event("u3", "u2"),
    "add_events": lambda m: m.add_events([{"id": "u3", "parent": "u2"}]),
    "visible": lambda m: m.visible("u2"),
    "current": lambda m: m.current("city", "u2"),
    "explain": lambda m: m.explain("city", "u2"),
    "stale": lambda m: m.stale("u2"),
    "search": lambda m: m.search("Chengdu", "u2"),
    "context": lambda m: m.context("u2", query="Chengdu"),
    "context_session": lambda m: m.context("u2", session="s2"),
    "stale_deliveries": lambda m: m.stale_deliveries("s1"),
    "withdraw": lambda m: m.withdraw("city"),
    "repair": lambda m: m.repair(rebuild),
    "report": lambda m: m.report(),
    "conversations": lambda m: m.conversations(),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_the_namespace_is_checked_once_per_call(call: str, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = small_memory()
    if call == "repair":  # something to rebuild: the repair runs several transactions
        memory.withdraw("u1")
    checked: list[str] = []

    def counting(value: object, what: str) -> str:
        if what == "namespace":
            checked.append(str(value))
        return check_id(value, what)

    monkeypatch.setattr(branchmem.memory, "check_id", counting)
    CALLS[call](memory)
    # at most once: a Memory keeps a checked name (and its settings) between calls
    assert checked in ([], ["default"])
    memory._namespaces.clear()
    checked.clear()
    CALLS[call](memory)
    assert checked == ["default"]


@given(inputs())
@settings(max_examples=150, deadline=None)
def test_decided_records_assemble_as_if_the_competition_had_run(
    case: tuple[list[Event], list[Record], str | None, int, float],
) -> None:
    """Memory.context passes records one per (scope, key), as its view chose them, and says
    so (``decided=True``); the result is what the input-order competition would give."""
    events, records, query, budget, share = case
    seen: set[tuple[str | None, str]] = set()
    one_per_key = []
    for record in records:
        if record.key is None or record.kind == "retraction":
            one_per_key.append(record)
        elif (record.scope, record.key) not in seen:
            seen.add((record.scope, record.key))
            one_per_key.append(record)
    options: dict[str, Any] = {"query": query, "budget": budget, "record_share": share}
    for counter in (None, NewlinesCost()):
        if counter is not None:
            options["counter"] = counter
        competed = assemble_context(anchor="a", path_events=events, records=one_per_key, **options)
        decided = assemble_context(
            anchor="a", path_events=events, records=one_per_key, decided=True, **options
        )
        assert decided == competed


# -- the in-process hooks outside MemoryAPI --------------------------------------------------
def test_change_stamp_moves_with_a_write_of_another_memory_on_the_same_file(
    tmp_path: Path,
) -> None:
    """``change_stamp`` reads the store's arrival counter (``Store.arrival_seq``), which any
    writer moves; in memory, where only this process writes, it is None."""
    assert Memory().change_stamp() is None
    with Memory.open(tmp_path / "stamp.db") as reader, Memory.open(tmp_path / "stamp.db") as writer:
        before = reader.change_stamp()
        writer.add_event("e1", content="hello")
        after = reader.change_stamp()
        assert before is not None and after is not None and after > before
        assert reader.change_stamp(namespace="other") == 0


def test_when_free_does_not_wait_for_a_call_that_holds_the_memory() -> None:
    memory = Memory()
    holding, release = threading.Event(), threading.Event()

    def write() -> None:
        with memory.transaction():
            holding.set()
            release.wait(30)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert holding.wait(30)
        with memory.when_free() as free:
            assert free is False
    finally:
        release.set()
        writer.join(30)
    with memory.when_free() as free:
        assert free is True
        memory.add_event("e1", content="a call inside the block takes the Memory again")
