"""The facade: each public call checks its namespace once and delegates the work."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import branchmem.memory
from branchmem import Memory, Record, RepairView
from branchmem.validation import check_id


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
    assert checked == ["default"]
