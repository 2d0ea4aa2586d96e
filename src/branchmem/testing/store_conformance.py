"""The storage contract, pinned at the ``Store`` level for a backend outside this project.

``BackendConformance`` proves a backend through ``Memory``'s answers; this proves what the
engine relies on underneath: ``Store.answer`` is complete for every id and key asked and
agrees with the per-item reads (ids that do not exist, withdrawn and erased ones,
retractions of both scopes, keys across scopes), namespaces do not leak into each other,
and a ``transaction`` that fails leaves nothing behind. One factory::

    from branchmem.testing import StoreConformance

    class TestMyStoreContract(StoreConformance):
        def make_store(self) -> Store:
            return MyStore()  # empty, migrated

The histories are written through ``Memory`` (so they are ones the engine can produce) and
read back through the store alone.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from .._core.provenance import RevisionNode
from .._core.questions import PAGE_SIZE, Facts, IndexTooLarge, Questions, TreeIndex
from .._core.retraction import RetractionNode
from ..memory import Memory
from ..search.tokens import count_tokens
from ..store.base import Store
from ..store.inmemory import InMemoryStore
from .differential import apply, random_history
from .oracle import Oracle

__all__ = ["StoreConformance"]

MISSING = ("no-such-id", "e999", "r999")


def _write(mem: Memory, namespace: str, rng: random.Random) -> None:
    """A random history (events in trees, keyed records in scopes, supersedes, retractions
    of both scopes, withdrawals, erasures) written as the engine writes it."""
    oracle = Oracle()
    for op in random_history(rng):
        apply(mem, oracle, op, namespace)


def _retractions(store: Store, namespace: str) -> list[RetractionNode]:
    every = store.retractions(namespace, store.record_ids(namespace))
    return sorted(every.values(), key=lambda node: node.seq)


def _comparable(facts: Facts) -> dict[str, object]:
    """The answers to the rest of the history, with the orders the contract leaves open
    (revisions found by frontier or by none, citing and pending keys) made canonical."""

    def nodes(found: list[RevisionNode]) -> list[tuple[object, ...]]:
        return sorted((n.record_id, n.revision, n.seq, n.content, n.key) for n in found)

    def history(found: list[RevisionNode]) -> list[tuple[object, ...]]:
        return [(n.record_id, n.revision, n.seq, n.content, n.key, n.sources) for n in found]

    return {
        "children": facts.children,
        "paths": facts.paths,
        "heads": facts.heads,
        "histories": {r: history(found) for r, found in facts.histories.items()},
        "sourced_at": nodes(facts.sourced_at),
        "ungated": nodes(facts.ungated),
        "record_ids": facts.record_ids,
        "citing": {t: sorted(keys) for t, keys in facts.citing.items()},
        "pending": {e: sorted(keys) for e, keys in facts.pending.items()},
        "keyed_records": facts.keyed_records,
        "superseders": facts.superseders,
        "superseded_by": facts.superseded_by,
        "retractions": {
            i: (n.scope, n.targets, n.key, n.seq) for i, n in facts.retractions.items()
        },
        "tree_retractions": [(n.id, n.seq) for n in facts.tree_retractions],
        "statuses": facts.statuses,
        "roles": facts.roles,
    }


class StoreConformance:
    """The ``Store`` contract. Subclasses say how to build an empty store (``make_store``)."""

    # random histories, one a namespace with the same ids in each, and bulk questions asked
    # in each: a backend with round trips asks for fewer to stay within seconds
    histories = 8
    questions = 10

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(f"contract-{i}" for i in range(self.histories))

    def make_store(self) -> Store:
        raise NotImplementedError

    @pytest.fixture
    def written(self) -> Iterator[tuple[Store, random.Random]]:
        """A store holding a random history in each of ``namespaces`` (the same ids in all)."""
        rng = random.Random(26)
        store = self.make_store()
        mem = Memory(store=store)
        try:
            for namespace in self.namespaces:
                _write(mem, namespace, rng)
            yield store, rng
        finally:
            mem.close()

    # -- answer agrees with the per-item reads -----------------------------------------
    def _asked(self, store: Store, namespace: str, rng: random.Random) -> Questions:
        events = [node.id for node in store.iter_events(namespace)]
        records = store.record_ids(namespace)
        keys = {n.key for r in records for n in store.get_revisions(namespace, r) if n.key}

        def pick(items: list[str]) -> frozenset[str]:
            return frozenset(rng.sample(sorted(items), min(len(items), rng.randint(1, 12))))

        return Questions(
            events=pick([*events, *MISSING]),
            records=pick([*records, *MISSING]),
            keys=pick([*keys, "no-such-key"]),
        )

    def test_answer_is_complete_and_agrees_with_the_per_item_reads(
        self, written: tuple[Store, random.Random]
    ) -> None:
        store, rng = written
        for namespace in self.namespaces:
            retractions = _retractions(store, namespace)
            for _ in range(self.questions):
                asked = self._asked(store, namespace, rng)
                with store.reading(namespace):
                    facts = store.answer(namespace, asked)
                self._check_events(store, namespace, asked, facts)
                self._check_records(store, namespace, asked, facts)
                for key in asked.keys:
                    expected = [n.id for n in retractions if n.key == key]
                    assert [n.id for n in facts.retracting_key.get(key, [])] == expected, key
                assert facts.pages == {} and facts.tree_index is None  # not asked

    @staticmethod
    def _check_events(store: Store, namespace: str, asked: Questions, facts: Facts) -> None:
        for event_id in asked.events:
            assert facts.events.get(event_id) == store.get_event(namespace, event_id), event_id
        for event_id, node in facts.events.items():  # more than asked: as get_event reads it
            assert node == store.get_event(namespace, event_id), event_id
        for item in asked.events | asked.records:
            expected = store.statuses(namespace, [item]).get(item)
            assert facts.statuses.get(item) == expected, item
        assert set(facts.statuses) <= asked.events | asked.records

    @staticmethod
    def _check_records(store: Store, namespace: str, asked: Questions, facts: Facts) -> None:
        for record_id in asked.records:
            every = store.get_revisions(namespace, record_id)
            newest = facts.revisions.get(record_id, ())
            assert bool(newest) == bool(every), record_id
            assert list(newest) == every[len(every) - len(newest) :], record_id
            expected = store.superseders(namespace, [record_id]).get(record_id, [])
            assert facts.superseders.get(record_id, []) == expected, record_id
            naming = [
                n.id
                for n in store.retractions_naming(namespace, record_id, None)
                if record_id in n.targets
            ]
            assert [n.id for n in facts.retracting.get(record_id, [])] == naming, record_id
        assert set(facts.revisions) <= asked.records

    def test_every_read_is_answered_as_the_reference_store_answers(
        self, written: tuple[Store, random.Random]
    ) -> None:
        """Each of ``answer``'s questions about the rest of the history (children, paths,
        heads, histories, ... statuses, roles), asked of this store and of an in-memory store given
        the same writes: the same answer. The reference is independent of this backend, so
        this holds even for a backend whose per-item reads are ``answer``'s wrappers."""
        store, rng = written
        reference = InMemoryStore()
        replay = Memory(store=reference)
        replaying = random.Random(26)  # the fixture's seed: the same histories, written again
        for namespace in self.namespaces:
            _write(replay, namespace, replaying)
        for namespace in self.namespaces:
            for _ in range(self.questions):
                asked = self._asked_about_the_rest(reference, namespace, rng)
                with store.reading(namespace):
                    got = _comparable(store.answer(namespace, asked))
                want = _comparable(reference.answer(namespace, asked))
                for name, value in want.items():
                    assert got[name] == value, (namespace, name)

    @staticmethod
    def _asked_about_the_rest(store: Store, namespace: str, rng: random.Random) -> Questions:
        events = [node.id for node in store.iter_events(namespace)]
        records = store.record_ids(namespace)
        every = [n for r in records for n in store.get_revisions(namespace, r)]
        keys = sorted({n.key for n in every if n.key})
        retractions = [n.record_id for n in every if n.kind == "retraction"]

        def pick(items: list[str]) -> frozenset[str]:
            return frozenset(rng.sample(sorted(items), min(len(items), rng.randint(1, 12))))

        return Questions(
            children=pick([*events, *MISSING]),
            paths=pick([*events, *MISSING]),
            heads=rng.random() < 0.5,
            histories=pick([*records, *MISSING]),
            sourced_at=pick([*events, *MISSING]),
            ungated=rng.random() < 0.5,
            record_ids=rng.random() < 0.5,
            citing=pick([*events, *records, *MISSING]),
            pending=pick([*events, *MISSING]),
            keyed_records=pick([*keys, "no-such-key"]),
            superseders=pick([*records, *MISSING]),
            superseded_by=pick([*records, *MISSING]),
            retractions=pick([*retractions, *records, *MISSING]),
            tree_retractions=rng.random() < 0.5,
            statuses=pick([*events, *records, *MISSING]),
            roles=pick([*events, *records, *MISSING]),
        )

    def test_key_pages_are_a_prefix_of_the_ranked_candidates(
        self, written: tuple[Store, random.Random]
    ) -> None:
        store, rng = written
        for namespace in self.namespaces:
            events = [n for n in store.iter_events(namespace) if n.tree is not None]
            records = store.record_ids(namespace)
            keys = sorted(
                {n.key for r in records for n in store.get_revisions(namespace, r) if n.key}
            )
            for anchor in rng.sample(events, min(len(events), self.questions)):
                assert anchor.tree is not None
                depth = anchor.depth or 0
                asked = frozenset([*keys, "no-such-key"])
                with store.reading(namespace):
                    facts = store.answer(
                        namespace, Questions(pages=asked, page_tree=anchor.tree, page_depth=depth)
                    )
                for key in asked:
                    placed = []
                    for node in store.key_candidates(namespace, key, anchor.tree, depth):
                        if node.gate.frontier_in(anchor.tree) is None:
                            break
                        placed.append(node)
                    page = list(facts.pages.get(key, ()))
                    assert page == placed[: len(page)], key
                    assert len(page) <= PAGE_SIZE and bool(page) == bool(placed), key

    def test_the_tree_index_holds_every_group_and_unkeyed_revision(
        self, written: tuple[Store, random.Random]
    ) -> None:
        store, _ = written
        for namespace in self.namespaces:
            revisions = [
                node
                for record_id in store.record_ids(namespace)
                for node in store.get_revisions(namespace, record_id)
            ]
            for tree in sorted({n.tree for n in store.iter_events(namespace) if n.tree}):
                index = store.answer(namespace, Questions(index_tree=tree)).tree_index
                assert isinstance(index, TreeIndex), tree
                here = [n for n in revisions if n.gate.frontier_in(tree) or not n.gate.frontiers]
                groups = {(n.key, n.scope) for n in here if n.key is not None}
                assert groups <= set(index.groups), tree
                assert len(set(index.groups)) == len(index.groups), tree
                unkeyed = {
                    (n.record_id, n.revision)
                    for n in here
                    if n.key is None or n.kind == "retraction"
                }
                answered = {(n.record_id, n.revision) for n in index.unkeyed}
                assert unkeyed <= answered, tree
                if index.groups or index.unkeyed:
                    small = store.answer(namespace, Questions(index_tree=tree, index_limit=0))
                    assert small.tree_index == IndexTooLarge(tree, 0), tree

    # -- isolation and atomicity ---------------------------------------------------------
    def test_transcripts_carry_the_token_count_written_with_each_event(self) -> None:
        """A context prices a shown message by the count its event was written with
        (``PathMessage.tokens``): it must be the default counter's count of the content the
        row shows, and no count is kept for a withdrawn or erased event (its row shows no
        text, and an erased one keeps nothing of its text, not even its length)."""
        texts = {
            "e1": "I'm moving to Chengdu next month",
            "e2": "搬到杭州 next month",
            "e3": "",
            "e4": "withdrawn for now, restored later",
            "e5": "erased: the flat on Jinli Street",
            "e6": "withdrawn and never restored",
            "e7": "a supercalifragilistic word",
        }
        store = self.make_store()
        mem = Memory(store=store)
        try:
            parent = None
            for event_id, content in texts.items():
                mem.add_event(event_id, parent, content=content, namespace="contract-a")
                parent = event_id
            mem.withdraw("e4", namespace="contract-a")
            mem.restore("e4", namespace="contract-a")
            mem.withdraw("e6", namespace="contract-a")
            mem.erase("e5", namespace="contract-a")
            gone = {"e5", "e6"}
            with store.reading("contract-a"):
                rows = store.transcript("contract-a", "e7", 10)
            assert [m.id for m in rows] == list(reversed(texts))
            for message in rows:
                shown = message.id not in gone
                assert message.content == (texts[message.id] if shown else ""), message.id
                kept = count_tokens(texts[message.id]) if shown else None
                assert message.tokens == kept, message.id
            for node in store.iter_events("contract-a"):
                erased = node.id == "e5"
                assert node.tokens == (None if erased else count_tokens(texts[node.id])), node.id
        finally:
            mem.close()

    def test_a_trees_events_are_every_event_placed_in_it(self) -> None:
        """``iter_events(namespace, tree)``: every event whose tree is ``tree`` and no other,
        in arrival order: its root's descendants, a second root named into the same tree,
        events waiting for a parent not written yet (and their children), an event whose
        parent arrives later; a SQL store finds them by walking down from where the tree
        starts, so each kind of start is here."""
        store = self.make_store()
        mem = Memory(store=store)
        try:
            mem.add_event("r1", tree="t", content="the first root")
            mem.add_event("c1", "r1", content="a child")
            mem.add_event("c2", "c1", content="a grandchild")
            mem.add_event("r2", tree="t", content="a second root in the same tree")
            mem.add_event("w1", "late", tree="t", content="waits for 'late'")
            mem.add_event("w2", "w1", content="below the waiting one")
            mem.add_event("o1", content="another tree")
            mem.add_event("o2", "o1", content="below it")
            mem.add_event("x1", "unknown", content="waiting, its tree unknown")
            mem.add_event("v1", "never", tree="t", content="waits for good, in tree t")
            mem.add_event("v2", "v1", content="below it, waiting too")
            mem.add_event("late", "c2", content="arrives after its child")
            for namespace in ("default", "other"):  # the same ids elsewhere change nothing
                if namespace == "other":
                    mem.add_event("r1", tree="t", content="x", namespace="other")
                    mem.add_event("z", "r1", content="x", namespace="other")
                found = [node.id for node in store.iter_events("default", "t")]
                everything = list(store.iter_events("default"))
                assert found == [n.id for n in everything if n.tree == "t"], found
            assert set(found) == {"r1", "c1", "c2", "r2", "w1", "w2", "late", "v1", "v2"}
            assert [n.id for n in store.iter_events("default", "o1")] == ["o1", "o2"]
            assert list(store.iter_events("default", "nope")) == []
        finally:
            mem.close()

    def test_namespaces_do_not_answer_for_each_other(self) -> None:
        store = self.make_store()
        mem = Memory(store=store)
        try:
            mem.add_event("e1", namespace="contract-a")
            mem.add_record("r1", sources=["e1"], key="k", namespace="contract-a")
            mem.retract("x1", sources=["e1"], key="k", namespace="contract-a")
            mem.add_event("e2", namespace="contract-b")
            tree = store.get_event("contract-a", "e1").tree  # type: ignore[union-attr]
            assert tree is not None
            asked = Questions(
                events=frozenset({"e1", "e2"}),
                records=frozenset({"r1"}),
                keys=frozenset({"k"}),
                pages=frozenset({"k"}),
                page_tree=tree,
                page_depth=0,
            )
            other = store.answer("contract-b", asked)
            assert set(other.events) == {"e2"}
            assert not (other.revisions or other.retracting or other.retracting_key)
            assert not other.pages
            mine = store.answer("contract-a", asked)
            assert set(mine.events) == {"e1"} and set(mine.revisions) == {"r1"}
            assert set(mine.retracting_key) == {"k"} and set(mine.pages) == {"k"}
        finally:
            mem.close()

    def test_a_failed_transaction_leaves_nothing_to_answer(self) -> None:
        store = self.make_store()
        mem = Memory(store=store)
        try:
            mem.add_event("kept", namespace="contract-a")
            tree = store.get_event("contract-a", "kept").tree  # type: ignore[union-attr]
            assert tree is not None
            with pytest.raises(RuntimeError), store.transaction("contract-a"):
                mem.add_event("gone", parent="kept", namespace="contract-a")
                mem.add_record("r-gone", sources=["gone"], key="k", namespace="contract-a")
                mem.withdraw("kept", namespace="contract-a")
                raise RuntimeError("fail after the writes")
            facts = store.answer(
                "contract-a",
                Questions(
                    events=frozenset({"kept", "gone"}),
                    records=frozenset({"r-gone"}),
                    pages=frozenset({"k"}),
                    page_tree=tree,
                ),
            )
            assert set(facts.events) == {"kept"}
            assert facts.revisions == {} and facts.statuses == {} and facts.pages == {}
            assert store.get_revisions("contract-a", "r-gone") == []
        finally:
            mem.close()

    def test_write_stamps_name_the_stamps_around_the_last_write_or_nothing(self) -> None:
        """``write_stamps`` vouches for one write only: (the stamp a reader saw before it, the
        stamp a reader sees after it), and nothing after a rollback; a backend without
        stamps says nothing."""
        store = self.make_store()
        mem = Memory(store=store)
        try:
            mem.add_event("first", namespace="contract-a")
            with store.reading("contract-a"):
                before = store.commit_stamp()
            mem.add_event("second", parent="first", namespace="contract-a")
            with store.reading("contract-a"):
                after = store.commit_stamp()
            stamps = store.write_stamps()
            if before is None:
                assert stamps is None  # no stamps to vouch for
                return
            assert stamps == (before, after) and before != after
            with pytest.raises(RuntimeError), store.transaction("contract-a"):
                mem.add_event("gone", parent="second", namespace="contract-a")
                raise RuntimeError("rolled back")
            assert store.write_stamps() is None
        finally:
            mem.close()
