"""Every behavioural test of the engine, written once; each backend subclasses it.

A backend's test module is a few lines: subclass ``BackendConformance`` and implement
``make_memory``. The tests read like SPEC.md's sentences; the differential test at the end
compares the backend against the naive oracle on random forests with shuffled arrival.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from branchmem import ConflictError, CycleError, ErasedError, InvalidInput, Memory, NotFoundError
from branchmem.errors import BranchmemError
from branchmem.receipt import Receipt

from .asof_conformance import AsOfConformance
from .differential import ReadView, run_scenario

SCALE = int(os.environ.get("BRANCHMEM_BENCH_SCALE", "1"))


def ids(records: list) -> list[str]:  # type: ignore[type-arg]
    return [record.id for record in records]


def chengdu(mem: Memory, *, root_meta: dict[str, object] | None = None) -> None:
    """The story: 'moving to Chengdu' edited into 'moving to Hangzhou' (``root_meta``: the
    first message's meta, e.g. the title an importer puts there)."""
    mem.add_event("u1", role="user", content="Hi, I need help planning a move.", meta=root_meta)
    mem.add_event("a1", "u1", role="assistant", content="Sure! Where are you moving?")
    mem.add_event("u2", "a1", content="I'm moving to Chengdu next month.")
    mem.add_event("a2", "u2", role="assistant", content="Chengdu, great choice.")
    mem.add_record("f-chengdu", sources=["u2"], content="moving to Chengdu", key="city")
    mem.add_event("u2b", "a1", content="I'm moving to Hangzhou next month.")  # the edit
    mem.add_event("a2b", "u2b", role="assistant", content="Hangzhou, lovely.")
    mem.add_record("f-hangzhou", sources=["u2b"], content="moving to Hangzhou", key="city")
    mem.add_record("f-planning", sources=["u1"], content="user is planning a move")


def _ours(garbage: list[Any]) -> set[str]:
    """The functions and objects of this library among ``garbage`` (other threads of a test
    process may leave their own)."""
    named = set()
    for item in garbage:
        module = getattr(item, "__module__", None) if callable(item) else type(item).__module__
        if isinstance(module, str) and module.startswith("branchmem"):
            named.add(getattr(item, "__qualname__", type(item).__qualname__))
    return named


class BackendConformance(AsOfConformance):
    """The engine's contract. Subclasses say how to build a ``Memory`` on their backend."""

    # ~1.15M decisions with as_of and diff compared too; make bench runs ten times as many
    differential_trees = 1760 * SCALE
    differential_chunks = 8

    def make_memory(self, mode: str = "strict") -> Memory:
        raise NotImplementedError

    @pytest.fixture
    def mem(self) -> Iterator[Memory]:
        memory = self.make_memory()
        yield memory
        memory.close()

    @pytest.fixture
    def compat(self) -> Iterator[Memory]:
        memory = self.make_memory("compat")
        yield memory
        memory.close()

    # -- the rule ----------------------------------------------------------------------
    def test_sibling_fact_is_hidden_and_shared_prefix_stays(self, mem: Memory) -> None:
        chengdu(mem)
        assert ids(mem.visible("a2b")) == ["f-planning", "f-hangzhou"]
        assert ids(mem.visible("a2")) == ["f-planning", "f-chengdu"]

    def test_one_source_on_a_sibling_hides_the_whole_record(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_record("f-both", sources=["u1", "u2"], content="planning a move to Chengdu")
        assert "f-both" not in ids(mem.visible("a2b"))
        assert "f-both" in ids(mem.visible("a2"))

    def test_switch_back_restores_the_old_branch_with_nothing_rewritten(self, mem: Memory) -> None:
        chengdu(mem)
        before = mem.get_record("f-chengdu")
        assert mem.current("city", "a2b").content == "moving to Hangzhou"  # type: ignore[union-attr]
        assert mem.current("city", "a2").content == "moving to Chengdu"  # type: ignore[union-attr]
        assert mem.get_record("f-chengdu") == before
        assert ids(mem.visible("a2b")) == ["f-planning", "f-hangzhou"]

    def test_explain_names_the_offending_source_and_the_fork(self, mem: Memory) -> None:
        chengdu(mem)
        why = mem.explain("f-chengdu", "a2b")
        assert (why.visible, why.reason, why.source, why.fork) == (False, "off_path", "u2", "a1")
        assert mem.explain("f-hangzhou", "a2b").reason == "visible"

    def test_an_anchor_sees_records_sourced_at_itself(self, mem: Memory) -> None:
        chengdu(mem)
        assert "f-chengdu" in ids(mem.visible("u2"))
        assert "f-chengdu" not in ids(mem.visible("a1"))

    def test_a_record_shows_its_highest_visible_revision(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_record("budget", sources=["u1"], content="budget 3000", key="budget")
        mem.revise("budget", content="budget 4000", sources=["u2b"])
        assert mem.current("budget", "a2b").content == "budget 4000"  # type: ignore[union-attr]
        shown = mem.current("budget", "a2")
        assert shown is not None and (shown.content, shown.revision) == ("budget 3000", 1)

    def test_records_on_records_inherit_their_sources(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_record("summary", sources=["f-chengdu", "f-planning"], kind="summary")
        assert "summary" not in ids(mem.visible("a2b"))
        assert mem.explain("summary", "a2b").source == "u2"
        assert "summary" in ids(mem.visible("a2"))

    def test_sources_that_cannot_share_a_path_are_never_visible(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_record("mixed", sources=["u2", "u2b"])
        for anchor in ("u1", "a2", "a2b"):
            assert mem.explain("mixed", anchor).reason == "inconsistent_sources"
        assert mem.report()["store"]["inconsistent_revisions"] == 1

    def test_a_record_without_sources_is_visible_at_every_anchor(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_record("global", sources=[], content="user's name is Lin")
        assert all("global" in ids(mem.visible(a)) for a in ("u1", "a2", "a2b"))

    def test_path_runs_from_the_root_to_the_anchor(self, mem: Memory) -> None:
        chengdu(mem)
        assert [e.id for e in mem.path("a2b")] == ["u1", "a1", "u2b", "a2b"]
        assert mem.get_event("a2b").tree == "u1"

    def test_context_reads_the_branch_back_without_withdrawn_or_erased_text(
        self, mem: Memory
    ) -> None:
        parent = None
        for i in range(100):  # longer than the first page a context reads
            role = "user" if i % 2 == 0 else "assistant"
            mem.add_event(f"m{i}", parent, role=role, content=f"message {i}")
            parent = f"m{i}"
        mem.add_event("side", "m50", content="a sibling line")
        mem.withdraw("m97")
        mem.erase("m40")
        shown = tuple(f"m{i}" for i in range(100) if i not in (40, 97))
        whole = mem.context("m99", budget=100_000)
        assert whole.events == shown
        assert whole.text.endswith("User: message 98\nAssistant: message 99")
        assert "message 97" not in whole.text and "sibling" not in whole.text
        cut = mem.context("m99", budget=60)
        assert 0 < len(cut.events) < len(shown) and cut.events == shown[-len(cut.events) :]

    # -- arrival in any order ----------------------------------------------------------
    def test_child_before_parent_is_detached_until_the_parent_arrives(self, mem: Memory) -> None:
        mem.add_event("c", "b", content="child first")
        mem.add_record("fact", sources=["c"])
        mem.add_event("a", content="root")
        assert mem.explain("fact", "a").reason == "detached"
        mem.add_event("b", "a", content="the missing middle")
        assert ids(mem.visible("c")) == ["fact"]
        assert [e.id for e in mem.path("c")] == ["a", "b", "c"]
        assert mem.get_event("c").tree == "a"

    def test_records_before_their_sources(self, mem: Memory) -> None:
        mem.add_event("root")
        mem.add_record("summary", sources=["fact"], kind="summary")
        assert mem.explain("summary", "root").reason == "unknown_source"
        mem.add_record("fact", sources=["e1"])
        assert mem.explain("summary", "root").reason == "unknown_source"
        mem.add_event("e1", "root")
        assert sorted(ids(mem.visible("e1"))) == ["fact", "summary"]
        assert mem.explain("summary", "root").reason == "off_path"

    def test_a_detached_anchor_has_a_partial_path(self, mem: Memory) -> None:
        mem.add_event("x2", "x1")  # x1 has not arrived
        mem.add_event("x3", "x2")
        mem.add_event("y3", "x2")
        mem.add_record("on-chain", sources=["x2"])
        mem.add_record("sibling", sources=["y3"])
        assert ids(mem.visible("x3")) == ["on-chain"]
        assert mem.explain("sibling", "x3").reason == "off_path"
        assert mem.explain("sibling", "x3").fork == "x2"

    def test_undecided_sources_are_hidden_in_strict_and_counted_in_compat(
        self, compat: Memory
    ) -> None:
        compat.add_event("root")
        compat.add_event("x3", "x2")
        compat.add_record("above-the-gap", sources=["root"])
        assert ids(compat.visible("x3")) == ["above-the-gap"]
        assert ids(compat.visible("x3", mode="strict")) == []
        assert compat.report()["decisions"]["detached"] >= 1

    # -- identity, conflicts, cycles ---------------------------------------------------
    def test_identical_re_add_is_a_no_op(self, mem: Memory) -> None:
        first = mem.add_event("a", content="hello")
        again = mem.add_event("a", content="hello")
        assert first == again
        assert mem.report()["store"]["events"] == 1

    @pytest.mark.parametrize(
        "change", [{"parent": "other"}, {"content": "changed"}, {"tree": "elsewhere"}]
    )
    def test_same_id_with_different_fields_is_a_conflict(self, mem: Memory, change: dict) -> None:  # type: ignore[type-arg]
        mem.add_event("other")
        mem.add_event("a", content="hello")
        with pytest.raises(ConflictError, match="'a'"):
            mem.add_event("a", **{"content": "hello", **change})

    def test_self_parent_is_a_cycle(self, mem: Memory) -> None:
        with pytest.raises(CycleError, match="'a'"):
            mem.add_event("a", "a")
        assert mem.report()["store"]["events"] == 0

    def test_a_late_parent_that_closes_a_cycle_is_refused(self, mem: Memory) -> None:
        mem.add_event("b", "a")
        mem.add_event("c", "b")
        with pytest.raises(CycleError):
            mem.add_event("a", "c")
        assert mem.report()["store"]["events"] == 2

    def test_a_batch_is_all_or_nothing(self, mem: Memory) -> None:
        mem.add_event("root")
        batch = [
            {"id": "a", "parent": "root"},
            {"id": "b", "parent": "a"},
            {"id": "b", "parent": "root"},
        ]
        with pytest.raises(ConflictError):
            mem.add_events(batch)
        with pytest.raises(NotFoundError):
            mem.get_event("a")
        assert [e.id for e in mem.add_events(reversed(batch[:2]))] == ["b", "a"]
        assert [e.id for e in mem.path("b")] == ["root", "a", "b"]

    def test_a_record_batch_equals_the_same_records_one_by_one(self, mem: Memory) -> None:
        batch: list[dict[str, Any]] = [
            {"id": "f-city", "sources": ["u2"], "content": "moving to Chengdu", "key": "city"},
            {"id": "f-move", "sources": ["u1"], "content": "planning a move"},
            {"id": "summary", "sources": ["f-city", "f-move"], "kind": "summary"},
            {"id": "f-city2", "sources": ["u2b"], "key": "city", "supersedes": ["f-city"]},
            {"id": "legacy", "sources": None, "content": "imported", "meta": {"n": 1}},
            {"id": "early", "sources": ["later"]},  # cites a record further on in the batch
            {"id": "later", "sources": ["u1"], "scope": "user"},
        ]
        for namespace in ("one", "batch"):
            for event in ("u1", "a1", "u2", "u2b"):
                parent = {"u1": None, "a1": "u1", "u2": "a1", "u2b": "a1"}[event]
                mem.add_event(event, parent, namespace=namespace)
        one = [mem.add_record(**spec, namespace="one") for spec in batch]
        written = mem.add_records(batch, namespace="batch")
        fields = [(r.id, r.kind, r.content, r.sources, r.key, r.scope, r.meta) for r in one]
        assert [(r.id, r.kind, r.content, r.sources, r.key, r.scope, r.meta) for r in written] == (
            fields
        )
        for anchor in ("u1", "u2", "u2b"):
            assert ids(mem.visible(anchor, namespace="batch")) == ids(
                mem.visible(anchor, namespace="one")
            )
        assert mem.explain("early", "u2", namespace="batch").visible
        assert mem.current("city", "u2b", namespace="batch").id == "f-city2"  # type: ignore[union-attr]
        assert [e.op for e in mem.audit(namespace="batch", op="add_records")] == ["add_records"]

    def test_a_record_batch_pins_what_waited_for_its_records(self, mem: Memory) -> None:
        batch: list[dict[str, Any]] = [
            {"id": "pinned", "sources": ["base@1"]},  # names a revision that comes later
            {"id": "base", "sources": ["e1"], "key": "k"},
            {"id": "same", "sources": ["e1"], "content": "twice"},
            {"id": "same", "sources": ["e1"], "content": "twice"},  # a repeat is a no-op
            {"id": "newer", "sources": ["e2"], "key": "k", "supersedes": ["base"]},
        ]
        for namespace in ("one", "batch"):
            mem.add_event("e1", namespace=namespace)
            mem.add_event("e2", "e1", namespace=namespace)
            mem.add_record("waiting", sources=["base", "e2"], namespace=namespace)
        for spec in batch:
            mem.add_record(**spec, namespace="one")
        mem.add_records(batch, namespace="batch")
        for record_id in ("waiting", "pinned"):  # their sources resolved when base arrived
            assert mem.explain(record_id, "e2", namespace="batch").reason != "unknown_source"
        assert mem.explain("pinned", "e1", namespace="batch").visible
        for anchor in ("e1", "e2"):
            assert [(r.id, r.revision) for r in mem.visible(anchor, namespace="batch")] == [
                (r.id, r.revision) for r in mem.visible(anchor, namespace="one")
            ]
            for record_id in ("waiting", "pinned", "base", "newer"):
                left = mem.explain(record_id, anchor, namespace="batch")
                right = mem.explain(record_id, anchor, namespace="one")
                assert (left.visible, left.reason) == (right.visible, right.reason)

    def test_a_record_batch_retried_after_it_committed_changes_nothing(self, mem: Memory) -> None:
        mem.add_event("e")
        batch = [
            {"id": "old", "sources": ["e"], "key": "k"},
            {"id": "new", "sources": ["e"], "key": "k", "supersedes": ["old"]},
        ]
        first = mem.add_records(batch)
        before = mem.report()["store"]
        assert [r.seq for r in mem.add_records(batch)] == [r.seq for r in first]
        assert mem.report()["store"] == before

    @pytest.mark.parametrize(
        ("bad", "error"),
        [
            ({"id": "r", "sources": "e"}, InvalidInput),
            ({"id": "r", "sources": ["e"], "colour": "red"}, InvalidInput),
            ({"sources": ["e"]}, InvalidInput),
            ({"id": "r"}, InvalidInput),
            ({"id": "r", "sources": ["e"], "kind": "retraction"}, InvalidInput),
            ({"id": "r", "sources": ["e"], "content": 7}, InvalidInput),
            ({"id": "r", "sources": ["e"], "content": "a\ud800"}, InvalidInput),
            ({"id": "r", "sources": ["e"], "meta": {"x": float("nan")}}, InvalidInput),
            ({"id": "r", "sources": ["e"], "supersedes": "ok"}, InvalidInput),
            ({"id": "r", "sources": ["e"], "supersedes": ["nowhere"]}, NotFoundError),
            ({"id": "ok", "sources": ["e"], "content": "other"}, ConflictError),
            ({"id": "e", "sources": []}, ConflictError),
            ({"id": "r", "sources": ["r"]}, CycleError),
        ],
    )
    def test_a_bad_record_in_a_batch_is_named_and_writes_nothing(
        self, mem: Memory, bad: dict[str, Any], error: type[Exception]
    ) -> None:
        mem.add_event("e")
        before = mem.report()["store"]
        batch = [{"id": "ok", "sources": ["e"]}, {"id": "on-ok", "sources": ["ok"]}, bad]
        # the service names records.2; a Client refuses text JSON cannot carry before sending
        named = r"records(\[2\]|\.2)|request is not JSON-serialisable"
        with pytest.raises(error, match=named):
            mem.add_records(batch)
        assert mem.report()["store"] == before
        with pytest.raises(NotFoundError):
            mem.get_record("ok")
        assert mem.audit(op="add_records") == []

    def test_a_tree_conflict_found_when_topology_arrives_writes_nothing(self, mem: Memory) -> None:
        mem.add_event("child", "parent", tree="t-child")
        with pytest.raises(ConflictError, match="child"):
            mem.add_event("parent", tree="t-parent")
        with pytest.raises(NotFoundError):
            mem.get_event("parent")

    def test_records_may_not_be_built_on_themselves(self, mem: Memory) -> None:
        mem.add_event("e")
        mem.add_record("a", sources=["e", "b"])
        with pytest.raises(CycleError):
            mem.add_record("b", sources=["a"])
        with pytest.raises(NotFoundError):
            mem.get_record("b")

    def test_events_and_records_share_one_id_space(self, mem: Memory) -> None:
        mem.add_event("x")
        with pytest.raises(ConflictError):
            mem.add_record("x", sources=[])

    @pytest.mark.parametrize(
        "call",
        [
            lambda m: m.add_event(""),
            lambda m: m.add_event(7),
            lambda m: m.add_event("a", meta={"x": object()}),
            lambda m: m.add_record("r", sources="e1"),
            lambda m: m.add_record("r", sources=[""]),
            lambda m: m.add_record("r", sources=[], kind="retraction"),
            lambda m: m.retract("x", sources=[]),
            lambda m: m.visible("e", mode="lenient"),
            lambda m: m.add_events([{"id": "a", "colour": "red"}]),
        ],
    )
    def test_bad_input_is_a_clear_error_and_writes_nothing(self, mem: Memory, call) -> None:  # type: ignore[no-untyped-def]
        mem.add_event("e")
        before = mem.report()["store"]
        with pytest.raises(InvalidInput):
            call(mem)
        assert mem.report()["store"] == before

    @pytest.mark.parametrize(
        ("call", "field"),
        [
            (lambda m: m.add_event("e\ud800"), "event id"),
            (lambda m: m.add_event("x", "e", content="a\ud800b"), "content"),
            (lambda m: m.add_event("x", "e", role="\udc00"), "role"),
            (lambda m: m.add_event("x", "e", meta={"note": "\ud800"}), "meta"),
            (lambda m: m.add_record("r", sources=["e"], content="a\ud800"), "content"),
            (lambda m: m.add_record("r", sources=["e"], key="k\ud800"), "key"),
            (lambda m: m.add_record("r", sources=["e\ud800"]), "source"),
            (lambda m: m.retract("x", sources=["e"], key="k", reason="\ud800"), "record 'x'"),
            (lambda m: m.visible("e", namespace="n\ud800"), "namespace"),
        ],
    )
    def test_a_lone_surrogate_is_refused_naming_the_field_on_every_backend(
        self,
        mem: Memory,
        call: Callable[[Memory], object],
        field: str,
    ) -> None:
        mem.add_event("e")
        before = mem.report()["store"]
        # the library names the field; a remote client refuses to encode the request at all
        pattern = f"{field}.*lone surrogate" if isinstance(mem, Memory) else "surrogate"
        with pytest.raises(InvalidInput, match=pattern):
            call(mem)
        assert mem.report()["store"] == before

    def test_ids_and_keys_are_at_most_512_characters(self, mem: Memory) -> None:
        mem.add_event("e")
        with pytest.raises(InvalidInput, match="key is 600 characters"):
            mem.add_record("r", sources=["e"], key="k" * 600)
        with pytest.raises(InvalidInput, match=r"513 characters|at most 512"):
            mem.add_event("x" * 513)
        mem.add_record("r", sources=["e"], key="k" * 512)  # the limit itself is allowed
        assert mem.get_record("r").key == "k" * 512

    def test_meta_with_nan_or_infinity_is_refused_naming_the_value(self, mem: Memory) -> None:
        mem.add_event("e")
        before = mem.report()["store"]
        # JSON has no NaN: stored, it would come back as null or as text no parser accepts
        pattern = r"meta\['x'\]\[1\] is not a finite" if isinstance(mem, Memory) else "finite|JSON"
        with pytest.raises(InvalidInput, match=pattern):
            mem.add_record("r", sources=["e"], meta={"x": [1.0, float("nan")]})
        with pytest.raises(InvalidInput):
            mem.add_event("f", "e", meta={"t": float("inf")})
        assert mem.report()["store"] == before

    def test_unknown_ids_raise_not_found_naming_them(self, mem: Memory) -> None:
        with pytest.raises(NotFoundError, match="'nope'"):
            mem.visible("nope")
        with pytest.raises(NotFoundError, match="'nope'"):
            mem.get_record("nope")
        with pytest.raises(NotFoundError, match="'nope'"):
            mem.withdraw("nope")

    # -- keys, scopes, supersede -------------------------------------------------------
    def test_path_order_not_arrival_order_picks_the_current_value(self, mem: Memory) -> None:
        mem.add_event("u1")
        mem.add_event("u2", "u1")
        mem.add_event("u3", "u2")
        mem.add_record("late-but-deep", sources=["u3"], content="4000", key="budget")
        mem.add_record("early-arrival", sources=["u1"], content="3000", key="budget")
        assert mem.current("budget", "u3").id == "late-but-deep"  # type: ignore[union-attr]
        assert ids(mem.visible("u3", include_superseded=True)) == ["early-arrival", "late-but-deep"]
        assert mem.explain("early-arrival", "u3").reason == "superseded"

    def test_scopes_never_compete(self, mem: Memory) -> None:
        mem.add_event("u1")
        mem.add_event("u2", "u1")
        mem.add_record("reviews", sources=["u1"], content="async", key="meetings", scope="reviews")
        mem.add_record(
            "incidents", sources=["u2"], content="voice", key="meetings", scope="incidents"
        )
        assert ids(mem.visible("u2")) == ["reviews", "incidents"]
        assert mem.current("meetings", "u2", scope="reviews").content == "async"  # type: ignore[union-attr]

    def test_explicit_supersede_acts_where_the_new_record_is_visible(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_record("f-hz-note", sources=["u2b"], content="Hangzhou, not Chengdu")
        mem.supersede("f-hz-note", "f-planning")
        assert "f-planning" not in ids(mem.visible("a2b"))
        assert "f-planning" in ids(mem.visible("a2"))

    def test_supersede_cycles_are_refused(self, mem: Memory) -> None:
        chengdu(mem)
        mem.supersede("f-hangzhou", "f-planning")
        with pytest.raises(CycleError):
            mem.supersede("f-planning", "f-hangzhou")

    # -- retraction --------------------------------------------------------------------
    def test_branch_retraction_acts_only_where_it_is_visible(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_event("u3b", "a2b", content="don't bring up the move again")
        mem.retract("x1", sources=["u3b"], targets=["f-planning"])
        assert "f-planning" not in ids(mem.visible("u3b"))
        assert "f-planning" in ids(mem.visible("a2"))
        assert "x1" in ids(mem.visible("u3b", kind="retraction"))

    def test_retract_by_key_hides_only_what_was_stated_at_or_above(self, mem: Memory) -> None:
        mem.add_event("u1")
        mem.add_event("u2", "u1")
        mem.add_event("u3", "u2")
        mem.add_record("old", sources=["u1"], content="allergic to peanuts", key="allergy")
        mem.retract("forget", sources=["u2"], key="allergy")
        mem.add_record("new", sources=["u3"], content="allergic to shrimp", key="allergy")
        assert mem.current("allergy", "u2") is None
        assert mem.current("allergy", "u3").id == "new"  # type: ignore[union-attr]
        assert mem.explain("old", "u3").reason == "retracted"

    def test_tree_retraction_hides_everywhere_until_withdrawn(self, mem: Memory) -> None:
        chengdu(mem)
        mem.retract("forget-all", sources=["u2b"], key="city", scope="tree")
        for anchor in ("a2", "a2b", "u1"):
            assert mem.current("city", anchor) is None
        mem.withdraw("forget-all")
        assert mem.current("city", "a2").id == "f-chengdu"  # type: ignore[union-attr]

    def test_a_restatement_after_a_tree_retraction_is_visible(self, mem: Memory) -> None:
        chengdu(mem)
        mem.retract("forget", sources=["u2b"], key="city", scope="tree")
        mem.add_event("u4", "a2b", content="I'm moving to Hangzhou after all")
        mem.add_record("f-again", sources=["u4"], content="moving to Hangzhou", key="city")
        assert mem.current("city", "u4").id == "f-again"  # type: ignore[union-attr]

    # -- stale dependents --------------------------------------------------------------
    def test_dependents_go_stale_exactly_where_their_source_is_invalid(self, mem: Memory) -> None:
        mem.add_event("u1")
        mem.add_event("u2", "u1")
        mem.add_event("u2b", "u1")
        mem.add_record("budget", sources=["u1"], content="3000", key="budget")
        mem.add_record("summary", sources=["budget"], kind="summary", content="budget 3000")
        mem.add_record("budget2", sources=["u2"], content="4000", key="budget")
        assert mem.explain("summary", "u2").reason == "stale"
        assert ids(mem.stale("u2")) == ["summary"]
        assert "summary" in ids(mem.visible("u2b"))
        assert "summary" in ids(mem.visible("u2", include_stale=True))

    def test_a_dependent_of_an_older_revision_is_stale_where_a_newer_one_shows(
        self, mem: Memory
    ) -> None:
        chengdu(mem)
        mem.add_record("summary", sources=["f-planning"], kind="summary")
        mem.revise("f-planning", content="planning a move to Hangzhou", sources=["u2b"])
        assert mem.explain("summary", "a2b").reason == "stale"
        assert mem.explain("summary", "a2").reason == "visible"
        mem.add_record("pinned", sources=["f-planning@2"], kind="summary")
        assert mem.explain("pinned", "a2b").reason == "visible"

    def test_withdraw_and_restore(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_record("summary", sources=["f-hangzhou"], kind="summary")
        mem.withdraw("f-hangzhou", reason="wrong extraction")
        assert mem.explain("f-hangzhou", "a2b").reason == "withdrawn"
        assert mem.explain("summary", "a2b").reason == "stale"
        mem.restore("f-hangzhou")
        assert ids(mem.visible("a2b")) == ["f-planning", "f-hangzhou", "summary"]

    def test_withdrawing_an_event_makes_what_was_built_on_it_stale(self, mem: Memory) -> None:
        chengdu(mem)
        mem.withdraw("u2b")
        assert mem.explain("f-hangzhou", "a2b").reason == "stale"
        assert mem.dependents("u2b") == {"f-hangzhou"}

    def test_erase_removes_the_text_of_the_target_and_its_dependents(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_record("summary", sources=["f-hangzhou", "f-planning"], kind="summary")
        erased = mem.erase("u2b", reason="user asked")
        assert erased == {"u2b", "f-hangzhou", "summary"}
        assert mem.get_event("u2b").content == ""
        assert mem.explain("f-hangzhou", "a2b").reason == "erased"
        assert ids(mem.visible("a2b")) == ["f-planning"]
        assert [e.op for e in mem.audit(id="summary")][-1] == "erase"
        with pytest.raises(ErasedError):
            mem.get_record("summary")
        with pytest.raises(ErasedError):
            mem.restore("f-hangzhou")
        assert mem.erase("u2b") == set()  # again: nothing left to erase
        mem.add_event("u2b", "a1", content="I'm moving to Hangzhou next month.")  # re-import
        assert mem.get_event("u2b").content == ""

    def test_erase_leaves_no_text_about_the_erased_in_retractions_or_the_audit(
        self, mem: Memory
    ) -> None:
        chengdu(mem)
        mem.add_record("f-health", sources=["u2"], content="diagnosed with asthma", key="asthma")
        mem.retract("r-target", sources=["a2"], targets=["f-health"], reason="asthma is private")
        mem.retract("r-key", sources=["a2"], key="asthma", reason="never mention asthma")
        mem.withdraw("f-planning", reason="plans changed")  # unrelated: its reason stays
        mem.erase("f-health", reason="user asked to forget the asthma")
        for retraction in ("r-target", "r-key"):
            record = mem.get_record(retraction)  # still a retraction, still there
            assert record.kind == "retraction" and "asthma" not in repr(record), record
        assert "asthma" not in repr(mem.audit())  # the erase's own reason is not kept either
        assert "plans changed" in {e.reason for e in mem.audit()}
        assert [e.reason for e in mem.audit(op="erase")] == [""]
        mem.add_record("f-again", sources=["u2"], content="a new fact", key="asthma")
        assert "f-again" in ids(mem.visible("a2"))  # the forgotten key retracts nothing now

    def test_an_erased_event_keeps_no_role_and_the_erase_no_reason(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_event("s", "a2", role="QX-role", content="QX-content")
        mem.add_record("f-s", sources=["s"], content="QX-fact", kind="QX-kind")
        assert mem.erase("s", reason="QX-reason") == {"s", "f-s"}
        event = mem.get_event("s")
        assert (event.role, event.content, event.meta) == ("erased", "", {})
        assert [e.role for e in mem.path("s")][-1] == "erased"
        assert "QX" not in repr(mem.audit()) + repr(mem.history("f-s"))

    def test_a_retraction_keeps_a_key_that_other_records_still_hold(self, mem: Memory) -> None:
        chengdu(mem)
        mem.retract("r-city", sources=["a2"], key="city", reason="stop")
        mem.erase("f-chengdu")
        assert "f-chengdu" not in ids(mem.visible("a2"))
        mem.add_record("f-city", sources=["u2"], content="a new city", key="city")
        assert "f-city" not in ids(mem.visible("a2"))  # f-hangzhou holds "city": it stays

    def test_dependents_are_transitive(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_record("summary", sources=["f-hangzhou"], kind="summary")
        mem.add_record("profile", sources=["summary"], kind="profile")
        assert mem.dependents("u2b") == {"f-hangzhou", "summary", "profile"}

    # -- what a call leaves behind -----------------------------------------------------
    def test_calls_leave_no_reference_cycles_behind(self, mem: Memory) -> None:
        """A cycle made by a call holds that call's maps until the collector finds it, and
        freeing them then is a pause inside some later, unrelated call."""
        chengdu(mem)
        mem.add_record("summary", sources=["f-hangzhou", "f-planning"], kind="summary")
        fresh = itertools.count()
        calls: dict[str, Callable[[], object]] = {
            "visible": lambda: mem.visible("a2b"),
            "stale": lambda: mem.stale("a2"),
            "context": lambda: mem.context("a2b"),
            "search": lambda: mem.search("moving", "a2b"),
            "current": lambda: mem.current("city", "a2b"),
            "explain": lambda: mem.explain("summary", "a2"),
            "diff": lambda: mem.diff("a2", "a2b"),
            "add_event": lambda: mem.add_event(f"e{next(fresh)}", "a2b", content="more"),
            "add_record": lambda: mem.add_record(f"r{next(fresh)}", sources=["u2b"], key="city"),
        }
        for call in calls.values():
            call()  # what a first call caches is not garbage
        left: dict[str, list[str]] = {}
        enabled = gc.isenabled()
        gc.disable()
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector would free, kept to be named
        try:
            for name, call in calls.items():
                call()
                gc.collect()
                left[name] = sorted(_ours(gc.garbage))
                gc.garbage.clear()
        finally:
            gc.set_debug(0)
            if enabled:
                gc.enable()
        assert left == {name: [] for name in calls}, left

    # -- forget and receipts -----------------------------------------------------------
    def test_forget_a_message_erases_what_was_built_on_it_and_hands_a_receipt(
        self, mem: Memory
    ) -> None:
        chengdu(mem)
        mem.add_record("summary", sources=["f-chengdu", "f-planning"], kind="summary",
                       content="planning a move to Chengdu")  # fmt: skip
        receipt = mem.forget("message", "u2")
        assert receipt.erased["events"] == ("u2",)
        assert receipt.erased["records"] == ("f-chengdu", "summary")
        assert receipt.erased["revisions"] == ("f-chengdu@1", "summary@1")
        assert receipt.counts["records"] == 2 and not receipt.dry_run
        assert receipt.sources_kept == ("f-planning",)  # the summary's other source stays
        assert mem.get_event("u2").content == ""
        with pytest.raises(ErasedError):
            mem.get_record("summary")
        assert receipt.check.clean, receipt.check
        assert receipt.cannot_clean  # said plainly, whatever the backend
        assert "Chengdu" not in repr(receipt.to_json())  # fingerprints, never the text
        assert [e.reason for e in mem.audit(op="forget")] == [receipt.content_hash]
        kept = [Receipt.from_json(json.loads(e.reason)) for e in mem.audit(op="receipt")]
        assert kept == [receipt.redacted()]  # committed with the erase: a re-run returns it
        checked = mem.verify_receipt(receipt)
        assert checked.ok and checked.in_audit and checked.hash_matches, checked

    def test_forget_a_branch_takes_the_event_and_everything_below_it(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_event("u3b", "a2b", content="Any neighbourhood tips for Hangzhou?")
        receipt = mem.forget("branch", "u2b")
        assert receipt.erased["events"] == ("a2b", "u2b", "u3b")
        assert receipt.erased["records"] == ("f-hangzhou",)
        assert mem.get_event("u2").content == "I'm moving to Chengdu next month."
        assert ids(mem.visible("a2")) == ["f-planning", "f-chengdu"]

    def test_forget_a_conversation_leaves_the_other_conversations(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_event("t1", content="Another chat about a recipe with peanuts")
        mem.add_record("f-peanut", sources=["t1"], content="likes peanut recipes")
        receipt = mem.forget("conversation", "t1")
        assert receipt.erased["events"] == ("t1",)
        assert receipt.erased["records"] == ("f-peanut",)
        assert mem.get_event("u2b").content == "I'm moving to Hangzhou next month."
        with pytest.raises(NotFoundError, match="conversation 'nowhere'"):
            mem.forget("conversation", "nowhere")

    def test_forget_a_subject_takes_the_records_naming_it(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_record("f-diet", sources=["u2"], content="is vegetarian", key="alice:diet")
        mem.add_record("f-team", sources=["u1"], content="leads design", scope="alice")
        mem.add_record("f-tag", sources=["u1"], content="likes tea", meta={"about": ["alice"]})
        mem.add_record("f-bob", sources=["u1"], content="likes coffee", key="bob:drink")
        mem.add_record("f-al", sources=["u1"], content="other", key="alicent")
        receipt = mem.forget("subject", "alice")
        assert receipt.erased["records"] == ("f-diet", "f-tag", "f-team")
        assert receipt.erased["events"] == ()
        assert receipt.sources_kept == ("u1", "u2")  # the messages stay: forget them by id
        assert mem.get_record("f-bob").content == "likes coffee"
        assert mem.get_record("f-al").content == "other"

    def test_a_dry_run_lists_what_would_go_and_changes_nothing(self, mem: Memory) -> None:
        chengdu(mem)
        before = mem.audit()
        dry = mem.forget("branch", "u2b", dry_run=True)
        assert dry.dry_run and dry.erased["events"] == ("a2b", "u2b")
        assert not dry.check.clean  # the text is still there, and the check sees it
        assert mem.get_event("u2b").content == "I'm moving to Hangzhou next month."
        assert mem.audit() == before
        assert mem.forget("branch", "u2b").erased == dry.erased

    def test_forget_names_the_sessions_that_were_shown_the_text(self, mem: Memory) -> None:
        chengdu(mem)
        mem.context("a2", session="chat-1")  # delivered f-chengdu; its recent messages: u2
        mem.context("a2b", session="chat-2")  # the other branch: saw neither
        receipt = mem.forget("message", "u2")
        assert [(s.session, s.records, s.messages) for s in receipt.shown] == [
            ("chat-1", ("f-chengdu",), True)
        ]
        assert [e.reason for e in mem.audit(id="chat-1", op="forget")] == [receipt.content_hash]
        assert [d.reason for d in mem.stale_deliveries("chat-1")] == ["erased"]

    def test_a_receipt_that_was_altered_or_redacted_checks_as_such(self, mem: Memory) -> None:
        chengdu(mem)
        receipt = mem.forget("message", "u2b")
        altered = dict(receipt.to_json(), counts={"events": 0})
        assert not mem.verify_receipt(altered).hash_matches
        assert not mem.verify_receipt(altered).ok
        redacted = mem.verify_receipt(receipt.redacted())
        assert redacted.ok and redacted.check is None
        again = mem.forget("message", "u2b")  # run again: the receipt it made, redacted
        assert again == receipt.redacted() and mem.verify_receipt(again).ok

    def test_forget_refuses_what_it_cannot_name(self, mem: Memory) -> None:
        chengdu(mem)
        with pytest.raises(InvalidInput, match="forget kind"):
            mem.forget("everything", "u2")
        with pytest.raises(NotFoundError, match="'nope'"):
            mem.forget("message", "nope")
        receipt = mem.forget("message", "u2")
        with pytest.raises(InvalidInput, match="namespace 'default', not 'other'"):
            mem.verify_receipt(receipt, namespace="other")
        with pytest.raises(InvalidInput, match="receipt"):
            mem.verify_receipt({"version": 1})

    # -- modes and missing information -------------------------------------------------
    def test_no_anchor_strict_returns_nothing(self, mem: Memory) -> None:
        chengdu(mem)
        assert mem.visible(None) == []
        assert mem.explain("f-chengdu", None).reason == "no_anchor"

    def test_no_anchor_compat_returns_everything_and_counts(self, compat: Memory) -> None:
        chengdu(compat)
        assert set(ids(compat.visible(None, include_superseded=True))) == {
            "f-chengdu", "f-hangzhou", "f-planning",
        }  # fmt: skip
        assert compat.report()["decisions"]["no_anchor"] == 1

    def test_legacy_records_strict_hides_compat_shows_both_count(self, compat: Memory) -> None:
        chengdu(compat)
        compat.add_record("old", sources=None, content="from before provenance")
        assert "old" in ids(compat.visible("a2b"))
        assert "old" not in ids(compat.visible("a2b", mode="strict"))
        assert compat.report()["decisions"]["legacy"] == 2

    def test_unknown_sources_strict_hides_compat_ignores(self, compat: Memory) -> None:
        chengdu(compat)
        compat.add_record("half", sources=["u2b", "lost-event"])
        assert compat.explain("half", "a2b").reason == "visible"
        assert compat.explain("half", "a2b", mode="strict").reason == "unknown_source"
        assert compat.explain("half", "a2").reason == "off_path"  # a sibling hides in both

    def test_cross_tree_views_use_each_other_trees_head(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_event("v1", content="another conversation")
        mem.add_event("v2", "v1")
        mem.add_event("v2b", "v1")
        mem.add_record("pet", sources=["v2"], content="has a cat")
        assert mem.explain("pet", "a2b").reason == "no_view"
        assert mem.explain("pet", "a2b", cross_tree=True).reason == "no_view"
        mem.set_head("v2")
        assert mem.head("v1") == "v2"
        assert "pet" in ids(mem.visible("a2b", cross_tree=True))
        mem.set_head("v2b")
        assert mem.explain("pet", "a2b", cross_tree=True).reason == "off_path"

    # -- audit and report --------------------------------------------------------------
    def test_audit_holds_ids_never_content(self, mem: Memory) -> None:
        chengdu(mem)
        mem.withdraw("f-chengdu", reason="user asked")
        entries = mem.audit()
        assert {e.op for e in entries} >= {"add_event", "add_record", "withdraw"}
        assert "Chengdu" not in repr(entries)
        assert [e.op for e in mem.audit(id="f-chengdu")] == ["add_record", "withdraw"]
        assert [h["op"] for h in mem.history("f-chengdu")] == ["add_record", "withdraw"]

    def test_namespaces_never_cross(self, mem: Memory) -> None:
        chengdu(mem)
        mem.add_event("u1", namespace="other", content="a different user")
        assert mem.visible("u1", namespace="other") == []
        with pytest.raises(NotFoundError):
            mem.get_record("f-chengdu", namespace="other")
        with pytest.raises(NotFoundError):
            mem.get_event("a2b", namespace="other")
        assert mem.audit(namespace="other")[0].ids == ("u1",)

    def test_namespaces_names_where_something_was_written(self, mem: Memory) -> None:
        assert mem.namespaces() == []
        mem.add_event("u1", namespace="alice")
        assert mem.heads(namespace="bob") == {}  # a read writes nothing
        with pytest.raises(NotFoundError):
            mem.set_head("nowhere", namespace="carol")  # a refused write leaves nothing
        chengdu(mem)
        assert mem.namespaces() == ["alice", "default"]

    def test_no_public_method_reads_across_namespaces(self, mem: Memory) -> None:
        chengdu(mem)
        mem.set_head("a2b")
        mem.add_event("x", namespace="other")
        other: dict[str, Any] = {"namespace": "other"}
        assert mem.visible("x", **other) == []
        assert mem.visible("x", cross_tree=True, mode="compat", **other) == []
        assert mem.visible(None, mode="compat", **other) == []
        assert mem.stale("x", **other) == []
        assert mem.current("city", "x", **other) is None
        assert mem.heads(**other) == {}
        assert mem.head("u1", **other) is None
        assert [e.ids for e in mem.audit(**other)] == [("x",)]
        assert mem.report(**other)["store"]["records"] == 0
        for call in (
            lambda: mem.get_event("u1", **other),
            lambda: mem.path("a2b", **other),
            lambda: mem.get_record("f-chengdu", **other),
            lambda: mem.explain("f-chengdu", "x", **other),
            lambda: mem.history("f-chengdu", **other),
            lambda: mem.dependents("u2", **other),
            lambda: mem.withdraw("f-chengdu", **other),
            lambda: mem.supersede("f-hangzhou", "f-chengdu", **other),
            lambda: mem.retract("r", sources=["x"], targets=["f-chengdu"], **other),
            lambda: mem.revise("f-chengdu", content="x", sources=["x"], **other),
        ):
            with pytest.raises(NotFoundError):
                call()
        mem.add_record("borrowed", sources=["u2b"], **other)  # u2b lives in another namespace
        assert mem.explain("borrowed", "x", **other).reason == "unknown_source"

    def test_errors_are_one_tree(self) -> None:
        for error in (ConflictError, CycleError, InvalidInput, NotFoundError):
            assert issubclass(error, BranchmemError)

    # -- citations and blame -----------------------------------------------------------
    def test_a_cited_context_names_each_lines_record_messages_and_conversation(
        self, mem: Memory
    ) -> None:
        chengdu(mem)
        mem.add_record("f-food", sources=["f-chengdu", "a2"], content="likes Chengdu food")
        cited = mem.context("a2", cite=True, budget=10_000)
        assert [c.marker for c in cited.citations] == list(range(1, len(cited.items) + 1))
        assert [(c.record_id, c.revision) for c in cited.citations] == list(cited.items)
        food = next(c for c in cited.citations if c.record_id == "f-food")
        assert food.sources == ("f-chengdu", "a2")
        assert set(food.messages) == {"u2", "a2"} and food.trees == ("u1",)
        lines = cited.text.split("\n")
        assert f"- likes Chengdu food [{food.marker}]" in lines
        assert lines[lines.index("Sources:") + food.marker] == (
            f"[{food.marker}] f-food <- " + ", ".join(food.messages) + " (u1)"
        )
        assert mem.context("a2", budget=10_000).citations == ()

    def test_a_cited_context_keeps_within_its_budget(self, mem: Memory) -> None:
        chengdu(mem)
        for budget in (5, 12, 20, 40):
            cited = mem.context("a2", cite=True, budget=budget)
            assert cited.tokens <= budget
            assert len(cited.citations) == len(cited.items)
            assert all(f"[{c.marker}] {c.record_id}" in cited.text for c in cited.citations)

    def test_blame_traces_a_delivery_to_its_messages_and_branch(self, mem: Memory) -> None:
        chengdu(mem)
        given = mem.context("a2", cite=True, session="s1", budget=10_000)
        assert given.delivery == mem.deliveries("s1")[-1].seq
        blame = mem.blame("s1", given.delivery)
        assert (blame.session, blame.anchor, blame.tree) == ("s1", "a2", "u1")
        assert blame.path == ("u1", "a1", "u2", "a2")
        assert [(b.record_id, b.revision) for b in blame.lines] == list(given.items)
        assert [b.line for b in blame.lines] == [c.marker for c in given.citations]
        chosen = next(b for b in blame.lines if b.record_id == "f-chengdu")
        (message,) = chosen.messages
        assert (message.id, message.role, message.on_path) == ("u2", "user", True)
        assert message.text == "I'm moving to Chengdu next month."
        assert mem.blame("s1", given.delivery, chosen.line).lines == (chosen,)

    def test_blame_shows_an_erased_source_by_id_only(self, mem: Memory) -> None:
        chengdu(mem)
        given = mem.context("a2", session="s1", budget=10_000)
        mem.erase("u2")
        blamed = {b.record_id: b for b in mem.blame("s1", given.delivery or 0).lines}
        chosen = blamed["f-chengdu"]
        assert (chosen.status, chosen.text) == ("erased", None)
        assert [(m.id, m.status, m.text) for m in chosen.messages] == [("u2", "erased", None)]
        assert "Chengdu" not in repr(chosen)

    def test_blame_names_what_it_cannot_find(self, mem: Memory) -> None:
        chengdu(mem)
        given = mem.context("a2", session="s1", budget=10_000)
        assert given.delivery is not None
        with pytest.raises(NotFoundError, match="'nobody'"):
            mem.blame("nobody", 1)
        with pytest.raises(NotFoundError, match="no delivery 999999"):
            mem.blame("s1", 999_999)
        with pytest.raises(NotFoundError, match="memory line 99"):
            mem.blame("s1", given.delivery, 99)

    # -- diff and promote --------------------------------------------------------------
    def test_diff_lists_each_branchs_records_with_the_off_path_source_and_fork(
        self, mem: Memory
    ) -> None:
        chengdu(mem)
        found = mem.diff("a2", "a2b")
        assert (found.anchor_a, found.anchor_b) == ("a2", "a2b")
        assert [(e.record.id, e.reason, e.source, e.fork) for e in found.only_a] == [
            ("f-chengdu", "off_path", "u2", "a1")
        ]
        assert [(e.record.id, e.reason, e.source, e.fork) for e in found.only_b] == [
            ("f-hangzhou", "off_path", "u2b", "a1")
        ]
        assert [(k.scope, k.key, k.a and k.a.id, k.b and k.b.id) for k in found.keys] == [
            (None, "city", "f-chengdu", "f-hangzhou")
        ]
        assert mem.diff("a2b", "a2b") == type(found)("a2b", "a2b", [], [], [])

    def test_diff_names_superseded_retracted_stale_and_revised(self, mem: Memory) -> None:
        for event_id, parent in (("u1", None), ("u2", "u1"), ("u3", "u2")):
            mem.add_event(event_id, parent)
        mem.add_record("budget-1", sources=["u1"], key="budget", content="3000")
        mem.add_record("summary", sources=["budget-1"], content="budget 3000")
        mem.add_record("note", sources=["u1"], content="likes tea")
        mem.add_record("plan", sources=["u1"], content="draft")
        mem.revise("plan", content="final", sources=["u3"])
        mem.add_record("budget-2", sources=["u3"], key="budget", content="4000")
        mem.retract("x1", sources=["u3"], targets=["note"])
        found = mem.diff("u2", "u3")
        assert {(e.record.id, e.reason, e.other_revision) for e in found.only_a} == {
            ("budget-1", "superseded", None),
            ("summary", "stale", None),
            ("note", "retracted", None),
            ("plan", "revised", 2),
        }
        assert [(e.record.id, e.reason, e.other_revision) for e in found.only_b] == [
            ("plan", "revised", 1),
            ("budget-2", "off_path", None),
            ("x1", "off_path", None),
        ]
        assert [(k.key, k.a and k.a.id, k.b and k.b.id) for k in found.keys] == [
            ("budget", "budget-1", "budget-2")
        ]
        wider = mem.diff("u2", "u3", include_superseded=True, include_stale=True)
        assert {e.record.id for e in wider.only_a} == {"note", "plan"}
        assert wider.keys == found.keys  # current values ignore the include options

    def test_diff_of_an_unknown_or_missing_anchor_is_refused_naming_it(self, mem: Memory) -> None:
        chengdu(mem)
        with pytest.raises(NotFoundError, match="nowhere"):
            mem.diff("a2", "nowhere")
        with pytest.raises(InvalidInput, match="anchor_a"):
            mem.diff("", "a2")

    def test_promote_carries_a_fact_across_and_switching_back_restores_the_branch(
        self, mem: Memory
    ) -> None:
        chengdu(mem)
        original = mem.get_record("f-chengdu")
        before = ids(mem.visible("a2"))
        copy = mem.promote("f-chengdu", onto="a2b")
        assert copy.id == "f-chengdu~a2b" and copy.sources == ("a2b",)
        assert (copy.content, copy.key, copy.kind) == ("moving to Chengdu", "city", "fact")
        assert copy.meta["copied_from"] == {"id": "f-chengdu", "revision": 1}
        assert mem.current("city", "a2b").id == "f-chengdu~a2b"  # type: ignore[union-attr]
        assert mem.current("city", "a2").id == "f-chengdu"  # type: ignore[union-attr]
        assert ids(mem.visible("a2")) == before
        assert mem.get_record("f-chengdu") == original
        assert mem.explain("f-chengdu~a2b", "a2").reason == "off_path"
        assert mem.audit(op="promote")[-1].ids == ("f-chengdu~a2b", "f-chengdu", "a2b")

    def test_promote_repeated_returns_the_same_copy_and_takes_a_named_revision(
        self, mem: Memory
    ) -> None:
        chengdu(mem)
        mem.revise("f-chengdu", content="moving to Chengdu in May")
        first = mem.promote("f-chengdu", onto="a2b", id="carried", revision=1, meta={"by": "me"})
        assert first.content == "moving to Chengdu"
        assert first.meta == {"by": "me", "copied_from": {"id": "f-chengdu", "revision": 1}}
        written = len(mem.audit())
        again = mem.promote("f-chengdu", onto="a2b", id="carried", revision=1, meta={"by": "me"})
        assert again == first and len(mem.audit()) == written
        with pytest.raises(ConflictError, match="carried"):
            mem.promote("f-chengdu", onto="a2b", id="carried")  # revision 2: other content

    @pytest.mark.parametrize(
        ("call", "error", "names"),
        [
            (lambda m: m.promote("f-chengdu", onto=None), InvalidInput, "onto is required"),
            (lambda m: m.promote("f-chengdu", onto=""), InvalidInput, "onto"),
            (lambda m: m.promote("f-chengdu", onto="f-planning"), InvalidInput, "'f-planning'"),
            (lambda m: m.promote("f-chengdu", onto="gone"), NotFoundError, "'gone'"),
            (lambda m: m.promote("ghost", onto="a2b"), NotFoundError, "'ghost'"),
            (lambda m: m.promote("f-planning", onto="a2b"), InvalidInput, "already visible"),
            (lambda m: m.promote("f-chengdu", onto="a2", revision=3), NotFoundError, "3"),
            (lambda m: m.promote("x1", onto="a2b"), InvalidInput, "'x1' is a retraction"),
            (lambda m: m.promote("f-withdrawn", onto="a2b"), InvalidInput, "withdrawn"),
            (lambda m: m.promote("f-erased", onto="a2b"), ErasedError, "'f-erased'"),
        ],
    )
    def test_promote_refuses_what_it_cannot_carry_and_writes_nothing(
        self, mem: Memory, call: Callable[[Memory], object], error: type, names: str
    ) -> None:
        chengdu(mem)
        mem.retract("x1", sources=["u2"], targets=["f-planning"])
        mem.add_record("f-withdrawn", sources=["u2"], content="w")
        mem.withdraw("f-withdrawn")
        mem.add_record("f-erased", sources=["u2"], content="e")
        mem.erase("f-erased")
        written = len(mem.audit())
        with pytest.raises(error, match=names):
            call(mem)
        assert len(mem.audit()) == written

    # -- the oracle --------------------------------------------------------------------
    # how the differential test reads a view's decisions through this face; None: the
    # engine's own views (a ``Memory``); a face over HTTP or async overrides it
    read_views: Callable[[Memory], ReadView] | None = None

    @pytest.fixture(params=range(differential_chunks))
    def chunk(self, request: pytest.FixtureRequest) -> int:
        return int(request.param)

    def test_differential_against_the_oracle(
        self, chunk: int, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        per_chunk = self.differential_trees // self.differential_chunks
        compared = 0
        for index in range(per_chunk):
            seed = chunk * 1_000_003 + index
            compared += run_scenario(self.make_memory, random.Random(seed), self.read_views)
        session = Path(tmp_path_factory.getbasetemp())
        if hasattr(request.config, "workerinput"):  # an xdist worker: its basetemp is below
            session = session.parent
        tally = session / "differential-tally"
        tally.mkdir(exist_ok=True)
        (tally / f"{type(self).__name__}-{chunk}").write_text(f"{per_chunk} {compared}")
        assert compared > 0
