"""Chat-like histories at scale, shared by the benchmarks.

Each conversation is a main line with an edit/regenerate fork every ~8 turns (a short
abandoned continuation), a checkpoint fork every ~50 turns (a longer one), ~0.7 extracted
facts per event on keys drawn from a small vocabulary, and a summary every 20 events over
the last 20 facts. Conversations are added until the namespace holds the requested number
of records, so a view at depth ~200 touches one path among many siblings and trees.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from branchmem import Memory

KEYS = [f"k{i}" for i in range(40)]


@dataclass
class Conversation:
    events: list[dict[str, object]] = field(default_factory=list)
    records: list[dict[str, object]] = field(default_factory=list)
    main_line: list[str] = field(default_factory=list)


def conversation(tree: int, rng: random.Random, depth: int = 240) -> Conversation:
    """One tree: the main line plus its abandoned branches, events before records."""
    conv = Conversation()
    prefix = f"t{tree}"
    recent_facts: list[str] = []
    counter = 0

    def emit(event_id: str, parent: str | None, text: str) -> None:
        nonlocal counter
        conv.events.append({"id": event_id, "parent": parent, "content": text})
        counter += 1
        if rng.random() < 0.7:
            fact = f"{event_id}.f"
            conv.records.append(
                {"id": fact, "sources": [event_id], "key": rng.choice(KEYS), "content": text}
            )
            recent_facts.append(fact)
        if counter % 20 == 0 and recent_facts:
            conv.records.append(
                {
                    "id": f"{event_id}.s",
                    "sources": recent_facts[-20:],
                    "kind": "summary",
                    "content": f"summary up to {event_id}",
                }
            )

    parent: str | None = None
    for turn in range(depth):
        event_id = f"{prefix}.m{turn}"
        emit(event_id, parent, f"turn {turn} of conversation {tree}")
        conv.main_line.append(event_id)
        if parent is not None and turn % 8 == 0:  # edit or regenerate: a sibling turn
            branch_parent = parent
            for step in range(rng.randint(1, 4)):
                branch_id = f"{prefix}.e{turn}.{step}"
                emit(branch_id, branch_parent, f"abandoned edit at {turn}")
                branch_parent = branch_id
        if parent is not None and turn % 50 == 0:  # fork from a checkpoint
            branch_parent = conv.main_line[max(0, turn - 10)]
            for step in range(rng.randint(10, 30)):
                branch_id = f"{prefix}.c{turn}.{step}"
                emit(branch_id, branch_parent, f"abandoned fork at {turn}")
                branch_parent = branch_id
        parent = event_id
    return conv


def conversations(records: int, seed: int = 7) -> Iterator[Conversation]:
    """Conversations until ``records`` records have been produced."""
    rng = random.Random(seed)
    produced = 0
    tree = 0
    while produced < records:
        conv = conversation(tree, rng)
        conv.records = conv.records[: records - produced]
        produced += len(conv.records)
        tree += 1
        yield conv


def add_record(mem: Memory, record: dict[str, object], namespace: str = "default") -> None:
    """Write one generated record through the public API."""
    mem.add_record(
        str(record["id"]),
        sources=record["sources"],  # type: ignore[arg-type]
        content=str(record["content"]),
        kind=str(record.get("kind", "fact")),
        key=record.get("key"),  # type: ignore[arg-type]
        namespace=namespace,
    )
