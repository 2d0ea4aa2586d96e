"""A search view derived from one kept before the Memory's own writes (``_engine.derive``),
and a ``current`` answer kept from an anchor above, answer as ones decided afresh: random
agent-like histories — turns on branches, facts on them, and now and then every other kind
of write (keyed facts, supersedes, facts citing facts or events not yet there, late parents,
retractions, withdrawals, heads, rolled-back and grouped writes) — go to two Memories alike;
one keeps and derives its views, the other decides every read anew. Every search's hits
(ids, scores, ``why``), every ``current`` value and every report count must agree, in both
modes, on every route a view can take, in memory (with and without an embedder) and on
SQLite."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import branchmem._engine.retrieval as retrieval
from branchmem import Memory
from branchmem.errors import BranchmemError
from branchmem.search.embedding import HashingEmbedder

WORDS = ["apple", "pear", "杭州", "chengdu", "moving", "tea", "plan", "cat", "budget", "note"]


class Boom(Exception):
    pass


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))


class Agent:
    """One random history, written alike to both Memories; ``events`` grows as turns land."""

    def __init__(self, rng: random.Random, memories: tuple[Memory, Memory]) -> None:
        self.rng, self.memories = rng, memories
        self.events: list[str] = []
        self.records: list[str] = []
        self.tip: str | None = None
        self.count = 0

    def both(self, write: Callable[[Memory], object]) -> None:
        """The same write on both sides: the same outcome, or the same refusal."""
        outcomes = []
        for memory in self.memories:
            try:
                write(memory)
                outcomes.append(None)
            except (BranchmemError, Boom) as error:
                outcomes.append(type(error))
        assert outcomes[0] == outcomes[1]

    def new_id(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def turn(self) -> None:
        rng = self.rng
        parent = self.tip if self.events and rng.random() < 0.8 else None
        if self.events and parent is None and rng.random() < 0.7:
            parent = rng.choice(self.events)  # an edit: a sibling branch
        event_id = self.new_id("e")
        role = rng.choice(["user", "assistant"])
        content = text(rng)
        self.both(lambda m: m.add_event(event_id, parent, role=role, content=content))
        self.events.append(event_id)
        self.tip = event_id

    def fact(self) -> None:
        rng = self.rng
        record_id = self.new_id("r")
        roll = rng.random()
        sources: list[str] = [self.tip] if self.tip else []
        spec: dict[str, Any] = {"id": record_id, "content": text(rng)}
        if roll < 0.08 and self.records:
            sources = [rng.choice(self.records)]  # a fact built on a fact
        elif roll < 0.14:
            sources = [f"e{self.count + rng.randint(1, 3)}"]  # an event yet to come
        elif roll < 0.22 and len(self.events) > 1:
            sources = rng.sample(self.events, 2)  # maybe from two branches
        elif roll < 0.3:
            spec["key"] = rng.choice(["city", "plan"])
        elif roll < 0.34 and self.records:
            spec["supersedes"] = [rng.choice(self.records)]
        elif roll < 0.45 and len(self.events) > 2:
            sources = [rng.choice(self.events)]  # an older turn (maybe withdrawn, detached)
        spec["sources"] = sources
        if rng.random() < 0.2:
            spec["kind"] = "summary"
        if rng.random() < 0.15:
            spec["scope"] = "work"
        if rng.random() < 0.3:
            self.both(lambda m: m.add_records([spec]))
        else:
            self.both(lambda m: m.add_record(**spec))
        self.records.append(record_id)

    def other(self) -> None:
        rng = self.rng
        roll = rng.random()
        content, more = text(rng), text(rng)  # drawn once: both sides write the same
        if roll < 0.15 and self.records:
            target = rng.choice(self.records)
            self.both(lambda m: m.revise(target, content=content))
        elif roll < 0.3 and self.records and self.tip:
            target, tip, retraction = rng.choice(self.records), self.tip, self.new_id("x")
            self.both(lambda m: m.retract(retraction, sources=[tip], targets=[target]))
        elif roll < 0.38 and self.tip:  # a retraction of a fact not written yet
            tip, retraction = self.tip, self.new_id("x")
            target = f"r{self.count + 1}"
            self.both(lambda m: m.retract(retraction, sources=[tip], targets=[target]))
        elif roll < 0.45 and self.records + self.events:
            target = rng.choice(self.records + self.events)  # facts on a withdrawn turn: stale
            self.both(lambda m: m.withdraw(target))
        elif roll < 0.55 and self.events:
            head = rng.choice(self.events)
            self.both(lambda m: m.set_head(head))
        elif roll < 0.7:  # a late parent: events waiting below it attach
            child, parent = self.new_id("e"), f"e{self.count + 1}"
            self.both(lambda m: m.add_event(child, parent, content=content))
            self.events.append(child)
        elif roll < 0.85 and self.tip:  # a grouped write: adds only
            tip, first, second = self.tip, self.new_id("e"), self.new_id("r")

            def grouped(memory: Memory) -> None:
                with memory.transaction():
                    memory.add_event(first, tip, content=content)
                    memory.add_record(second, sources=[first], content=more)

            self.both(grouped)
            self.events.append(first)
            self.records.append(second)
            self.tip = first
        elif self.tip:  # a write rolled back
            tip, record_id = self.tip, self.new_id("r")

            def rolled_back(memory: Memory) -> None:
                with memory.transaction():
                    memory.add_record(record_id, sources=[tip], content="apple apple")
                    raise Boom

            self.both(rolled_back)

    def search(self) -> None:
        rng = self.rng
        if not self.events:
            return
        anchor = self.tip if rng.random() < 0.7 else rng.choice(self.events)
        options: dict[str, Any] = {}
        if rng.random() < 0.15:
            options["kind"] = "summary"
        if rng.random() < 0.1:
            options["scope"] = "work"
        if rng.random() < 0.1:
            options["key"] = "city"
        if rng.random() < 0.2:
            options["mode"] = "compat"
        query = text(rng)
        kept, fresh = self.memories
        fresh._views.clear()  # decided anew on this side
        try:
            got = [(h.record.id, h.score, h.why) for h in kept.search(query, anchor, **options)]
        except BranchmemError as error:
            got = [type(error)]  # type: ignore[list-item]
        try:
            want = [(h.record.id, h.score, h.why) for h in fresh.search(query, anchor, **options)]
        except BranchmemError as error:
            want = [type(error)]  # type: ignore[list-item]
        assert got == want, (query, anchor, options)
        assert kept.report() == fresh.report(), (query, anchor, options)
        key, scope = rng.choice(["city", "plan"]), rng.choice([None, "work"])
        fresh._views.clear()
        values = []
        for memory in self.memories:
            try:
                found = memory.current(key, anchor, scope=scope, mode=options.get("mode"))
                values.append(found and (found.id, found.revision))
            except BranchmemError as error:
                values.append(type(error))  # type: ignore[arg-type]
        assert values[0] == values[1], (key, scope, anchor)
        assert kept.report() == fresh.report(), (key, scope, anchor)


@contextmanager
def counting_derivations() -> Iterator[list[int]]:
    """How many searches took a derived view (so the suite cannot pass by never deriving)."""
    made = [0]
    derive = retrieval.derived

    def counted(*args: Any, **kwargs: Any) -> Any:
        view = derive(*args, **kwargs)
        made[0] += view is not None
        return view

    retrieval.derived = counted  # type: ignore[assignment]
    try:
        yield made
    finally:
        retrieval.derived = derive  # type: ignore[assignment]


def run_histories(
    backend: str, embedded: bool, steps: int | None, histories: int, tmp_path: Path
) -> int:
    """Play ``histories`` random histories into a deriving and a deciding Memory; how many
    searches took a derived view."""
    embedder = HashingEmbedder() if embedded else None
    with counting_derivations() as made:
        for seed in range(histories):
            rng = random.Random(seed * 31 + (steps or 7) + embedded)
            mode = rng.choice(["strict", "compat"])

            def open_one(name: str, seed: int = seed, mode: str = mode) -> Memory:
                if backend == "memory":
                    return Memory(mode, path_events_per_entry=steps, embedder=embedder)
                store = Memory.open(tmp_path / f"{name}-{seed}.db", mode=mode)
                store.path_events_per_entry = steps
                return store

            kept, fresh = open_one("kept"), open_one("fresh")
            agent = Agent(rng, (kept, fresh))
            try:
                for _ in range(rng.randint(20, 60)):
                    roll = rng.random()
                    if roll < 0.3:
                        agent.turn()
                    elif roll < 0.55:
                        agent.fact()
                    elif roll < 0.62:
                        agent.other()
                    else:
                        agent.search()
            finally:
                kept.close()
                fresh.close()
    return made[0]


@pytest.mark.parametrize(
    ("backend", "embedded"), [("memory", False), ("sqlite", False), ("memory", True)]
)
@pytest.mark.parametrize("steps", [8, 0, 2, None])
def test_derived_views_answer_as_views_decided_anew(
    backend: str, embedded: bool, steps: int | None, tmp_path: Path
) -> None:
    histories = 16 if backend == "sqlite" or embedded else 30
    made = run_histories(backend, embedded, steps, histories, tmp_path)
    assert made >= histories // 2, made  # the histories derived views, many of them


def test_a_full_journal_drops_what_was_kept_and_answers_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``JOURNAL_KEPT`` added items every kept view and answer goes at once (the
    journal starts again), and the next reads decide anew."""
    import branchmem._engine.viewcache as viewcache

    monkeypatch.setattr(viewcache, "JOURNAL_KEPT", 5)
    assert run_histories("memory", False, 8, 20, tmp_path) > 0
