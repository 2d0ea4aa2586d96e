"""The in-memory store's compact layout: bytes per record, shared objects, hot buckets.

The differential suites pin what the store answers; these pin what it costs and that the
compact forms (one revision in place of a bucket, a list, a dict for a hot event) answer the
same through every transition, a rolled-back batch included.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from branchmem import ConflictError, Memory
from branchmem.store.inmemory import InMemoryStore

BENCH = Path(__file__).parent.parent / "bench" / "footprint.py"


def footprint() -> ModuleType:
    spec = importlib.util.spec_from_file_location("footprint_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_record_costs_at_most_a_kilobyte() -> None:
    bench = footprint()
    events, writes = bench.history(2000, 7)
    measured = bench.build(events, writes)
    assert measured["record_bytes_per_record"] <= 1024, measured


def test_equal_parts_are_stored_once() -> None:
    store = InMemoryStore()
    mem = Memory(store=store)
    mem.add_events([{"id": "a", "content": "hi"}, {"id": "b", "parent": "a"}])
    mem.add_records(
        [
            {"id": "f1", "sources": ["b"], "content": "one", "kind": "fact"},
            {"id": "f2", "sources": ["b"], "content": "two", "kind": "fa" + "ct"},
        ]
    )
    one, two = store.get_revisions("default", "f1")[0], store.get_revisions("default", "f2")[0]
    assert one.refs is not None and two.refs is not None
    assert one.refs[0] is two.refs[0]
    assert one.gate is two.gate
    assert one.kind is two.kind
    assert one.meta is two.meta and one.meta == {}
    assert one.sources is not None and one.sources[0] is store.get_event("default", "b").id
    assert store.get_event("default", "b").parent is store.get_event("default", "a").id


def _citers(store: InMemoryStore, target: str) -> list[tuple[str, int]]:
    return store.citing("default", target)


def test_a_hot_event_answers_the_same_through_every_bucket_form() -> None:
    store = InMemoryStore()
    mem = Memory(store=store)
    mem.add_events([{"id": "hot"}, {"id": "leaf", "parent": "hot"}])
    expected: list[tuple[str, int]] = []
    for count in (1, 2, 16, 17, 40):  # one node, a list, a full list, a dict
        while len(expected) < count:
            record = f"r{len(expected):02d}"
            mem.add_record(record, sources=["hot"], content=record, key=f"k{len(expected) % 3}")
            expected.append((record, 1))
        assert _citers(store, "hot") == expected
        assert [n.record_id for n in store.revisions_at("default", ["hot"])] == [
            r for r, _ in expected
        ]
    # a batch that fails after some of its records were put leaves every bucket as it was
    before = (_citers(store, "hot"), mem.current("k0", "leaf"), len(mem.visible("leaf")))
    chained = [
        {"id": f"x{i}", "sources": ["hot", *([f"x{i - 1}"] if i else [])], "content": "x"}
        for i in range(20)
    ]
    with pytest.raises(ConflictError, match="'leaf'"):
        mem.add_records([*chained, {"id": "leaf", "sources": ["hot"], "content": "clash"}])
    assert (_citers(store, "hot"), mem.current("k0", "leaf"), len(mem.visible("leaf"))) == before
    # erasing puts a blank revision in place of each: every bucket form swaps it
    assert before[1] is not None and before[1].id == "r39"
    for record in ("r00", "r05", "r39"):
        mem.erase(record)
    assert _citers(store, "hot") == expected
    blanked = {n.record_id: n for n in store.revisions_at("default", ["hot"])}
    assert [blanked[r].content for r in ("r00", "r05", "r39")] == ["", "", ""]
    assert blanked["r06"].content == "r06"
    found = mem.current("k0", "leaf")
    assert found is not None and found.id == "r36"
