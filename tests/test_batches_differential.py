"""Batched writes on SQL backends decide exactly as the in-memory store, side by side.

The SQL backends write a batch differently from one call at a time: events are held and
written as one multi-row statement (PostgreSQL: COPY for new rows, an unnest upsert for rows
settled later in the batch), held records are written out together, IN lists become array
parameters, and the ancestors that merging frontiers walks are fetched with the batch. Random
histories exercise all of it: children before their parents inside and across batches,
records citing records further on in their batch, pinned revisions, supersedes, keys, and
sources on sibling branches; every anchor's decisions must match ``Memory()``'s.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory

SEEDS = range(4)


def history(seed: int) -> tuple[list[list[dict[str, Any]]], list[list[dict[str, Any]]]]:
    """(event batches, record batches) of a random forest, events shuffled within reach."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    for tree in range(3):
        ids = [f"t{tree}.0"]
        events.append({"id": ids[0], "content": f"root {tree}"})
        for n in range(1, 60):
            parent = ids[-1] if rng.random() < 0.8 else rng.choice(ids)  # a chain with forks
            ids.append(f"t{tree}.{n}")
            events.append({"id": ids[-1], "parent": parent, "content": f"turn {n}"})
    for start in range(0, len(events) - 8, 8):  # children arrive before their parents
        window = events[start : start + 8]
        rng.shuffle(window)
        events[start : start + 8] = window
    event_ids = [event["id"] for event in events]
    records: list[dict[str, Any]] = []
    for n in range(120):
        spec: dict[str, Any] = {"id": f"r{n}", "content": f"fact {n}"}
        sources = rng.sample(event_ids, rng.choice((1, 1, 2, 3)))
        if n and rng.random() < 0.3:  # a record before it (or, pinned, its first revision)
            cited = f"r{rng.randrange(n)}"
            sources.append(cited + "@1" if rng.random() < 0.3 else cited)
        if n + 5 < 120 and rng.random() < 0.1:  # a record further on in the batch
            sources.append(f"r{n + rng.randint(1, 5)}")
        spec["sources"] = sources
        if rng.random() < 0.4:
            spec["key"] = f"k{rng.randrange(4)}"
        if n > 3 and rng.random() < 0.1:
            spec["supersedes"] = [f"r{rng.randrange(n)}"]
        records.append(spec)
    return (
        [events[i : i + 50] for i in range(0, len(events), 50)],
        [records[i : i + 40] for i in range(0, len(records), 40)],
    )


def decisions(mem: Memory, anchors: list[str], record_ids: list[str]) -> dict[str, Any]:
    """Everything a reader sees at every anchor."""
    seen: dict[str, Any] = {}
    for anchor in anchors:
        seen[f"path {anchor}"] = [event.id for event in mem.path(anchor)]
        seen[f"visible {anchor}"] = [
            (r.id, r.revision)
            for r in mem.visible(anchor, include_superseded=True, include_stale=True)
        ]
        for record_id in record_ids:
            why = mem.explain(record_id, anchor)
            seen[f"explain {record_id} at {anchor}"] = (why.visible, why.reason, why.source)
    return seen


def write(mem: Memory, seed: int) -> tuple[list[str], list[str]]:
    event_batches, record_batches = history(seed)
    for batch in event_batches:
        mem.add_events(batch)
    for batch in record_batches:
        mem.add_records(batch)
    anchors = [event["id"] for batch in event_batches for event in batch]
    record_ids = [spec["id"] for batch in record_batches for spec in batch]
    return anchors[::7], record_ids[::3]


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """``open()`` -> a Memory on a fresh store of the backend."""
    if request.param == "sqlite":
        yield lambda: Memory.open(tmp_path / f"{uuid.uuid4().hex}.db")
        return
    import psycopg

    from pg import with_database

    dsn = request.getfixturevalue("pg_dsn")
    names: list[str] = []
    opened: list[Memory] = []

    def open_postgres() -> Memory:
        names.append(f"bm_batches_{uuid.uuid4().hex[:10]}")
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{names[-1]}"')
        opened.append(Memory.open(with_database(dsn, names[-1])))
        return opened[-1]

    yield open_postgres
    for mem in opened:
        mem.close()
    with psycopg.connect(dsn, autocommit=True) as admin:
        for name in names:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.parametrize("seed", SEEDS)
def test_batches_decide_as_the_in_memory_store(backend: Any, seed: int) -> None:
    oracle = Memory()
    anchors, record_ids = write(oracle, seed)
    expected = decisions(oracle, anchors, record_ids)
    mem = backend()
    write(mem, seed)
    assert decisions(mem, anchors, record_ids) == expected
    assert mem.report()["store"] == oracle.report()["store"]


def test_a_batch_settling_its_own_orphans_is_stored_as_placed(backend: Any) -> None:
    """A child held new, then attached when its parent arrives later in the same batch, is
    written once with its final place; a repeated event in the batch changes nothing."""
    mem = backend()
    batch = [
        {"id": "c2", "parent": "c1"},
        {"id": "c1", "parent": "root"},
        {"id": "root"},
        {"id": "c1", "parent": "root"},
    ]
    mem.add_events(batch)
    mem.add_records([{"id": "f", "sources": ["c2", "root"]}])
    assert [e.id for e in mem.path("c2")] == ["root", "c1", "c2"]
    assert [e.tree for e in mem.path("c2")] == ["root"] * 3
    assert mem.explain("f", "c2").visible


def test_ids_with_quotes_commas_and_braces_survive_array_parameters(backend: Any) -> None:
    """Lists of ids travel as one array parameter on PostgreSQL (an array literal built by
    the store): ids an array literal would misread must come back as they went in."""
    awkward = ['a"b', "c\\d", "{e,f}", "g h", "NULL", "", "ü'x"]
    chain = [f"p{i}:{name}" for i, name in enumerate(awkward)]
    mem, oracle = backend(), Memory()
    for store in (mem, oracle):
        store.add_events(
            [{"id": event_id, "parent": chain[i - 1] if i else None} for i, event_id in
             enumerate(chain)]
        )  # fmt: skip
        store.add_records([{"id": f"r:{event_id}", "sources": [event_id]} for event_id in chain])
    assert [e.id for e in mem.path(chain[-1])] == chain
    for anchor in chain:
        assert [r.id for r in mem.visible(anchor)] == [r.id for r in oracle.visible(anchor)]
