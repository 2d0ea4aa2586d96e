"""The count of Mem0's own tests that reach the wrapper (``mem0_peer_calls``) counts real
calls, on the sync and async wrapper, and tells bypasses apart."""

from __future__ import annotations

import asyncio
import importlib.util
from collections import Counter
from pathlib import Path

import pytest

from mem0_peer_calls import API, BUILT, MEM0_BUILT, bypassed, counting, note, record, summary

if importlib.util.find_spec("mem0") is None:
    pytest.skip("mem0ai is not installed (extra: branchmem[mem0])", allow_module_level=True)

from branchmem import Memory
from branchmem.integrations.mem0 import AsyncBranchMem0, BranchMem0
from branchmem.integrations.mem0.offline import AnnotatedFact, offline_memory


def test_calls_that_reach_the_wrapper_are_counted_and_the_class_restored() -> None:
    original = BranchMem0.__dict__["add"]
    inner = offline_memory()
    inner.llm.annotate("I like tea.", [AnnotatedFact("drink", "User likes tea")])
    store = Memory()
    store.add_event("m1", None, tree="chat", role="user", content="I like tea.")
    store.set_head("m1")
    wrapped = BranchMem0(inner, store, tree="chat")
    with counting() as calls:
        added = wrapped.add("I like tea.", user_id="alice")["results"][0]["id"]
        wrapped.search("tea", filters={"user_id": "alice"})
        wrapped.history(added)
        asyncio.run(AsyncBranchMem0(inner, store, tree="chat").get_all(user_id="alice"))
        with pytest.raises(ValueError):
            wrapped.delete("no-such-memory")  # a call that raises still ran the wrapper
        note("private:_update_memory")
    assert calls == Counter(
        {
            "add": 1,
            "search": 1,
            "history": 1,
            "get_all": 1,
            "delete": 1,
            "private:_update_memory": 1,
            BUILT: 1,  # the AsyncBranchMem0's inner BranchMem0
        }
    )
    assert BranchMem0.__dict__["add"] is original
    wrapped.get(added)  # outside the block: not counted, and nothing left to count it
    assert calls["get"] == 0
    note("private:_outside")  # no test running: dropped
    assert "private:_outside" not in calls


def test_building_mem0s_memory_without_the_wrapper_is_a_bypass() -> None:
    with counting() as calls:
        offline_memory()  # Mem0's own Memory, no BranchMem0 around it
    assert calls[MEM0_BUILT] == 1 and calls[BUILT] == 0 and bypassed(calls)
    with counting() as calls:
        BranchMem0(offline_memory())
    assert calls[MEM0_BUILT] == calls[BUILT] == 1 and not bypassed(calls)


def test_the_summary_counts_tests_by_what_they_reached(tmp_path: Path) -> None:
    assert summary(tmp_path / "none") is None
    built = {BUILT: 1, MEM0_BUILT: 1}
    record(tmp_path, "t::reaches", Counter({"add": 2, "search": 1, "private:_x": 1, **built}))
    record(tmp_path, "t::also", Counter({"add": 1, **built}))
    record(tmp_path, "t::mocks", Counter({"mocked:add": 1}))
    record(tmp_path, "t::private", Counter({"private:_update_memory": 3, **built}))
    record(tmp_path, "t::built", Counter(built))
    record(tmp_path, "t::bypass", Counter({MEM0_BUILT: 1}))
    record(tmp_path, "t::nothing", Counter())
    line = summary(tmp_path)
    assert line is not None
    assert "6 of 7 tests touch Mem0's Memory; 4 built a BranchMem0 and ran in it: 2" in line
    assert "called a wrapper method (tests per method: add 2, search 1), 1 reached" in line
    assert "1 only built it; 1 replaced its constructor" in line
    assert line.endswith("1 bypassed it; 1 do not touch Memory (module functions)")
    assert set(API) >= {"add", "search", "get_all", "get", "update", "delete", "history"}
