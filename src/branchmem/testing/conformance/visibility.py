"""The rule itself: what an anchor sees, whatever order things arrived in, and what the
modes do where information is missing (SPEC.md "The rule", "Arrival", "Modes")."""

from __future__ import annotations

from branchmem import Memory

from .story import chengdu, ids


# -- the rule ------------------------------------------------------------------------------
def test_sibling_fact_is_hidden_and_shared_prefix_stays(mem: Memory) -> None:
    chengdu(mem)
    assert ids(mem.visible("a2b")) == ["f-planning", "f-hangzhou"]
    assert ids(mem.visible("a2")) == ["f-planning", "f-chengdu"]


def test_one_source_on_a_sibling_hides_the_whole_record(mem: Memory) -> None:
    chengdu(mem)
    mem.add_record("f-both", sources=["u1", "u2"], content="planning a move to Chengdu")
    assert "f-both" not in ids(mem.visible("a2b"))
    assert "f-both" in ids(mem.visible("a2"))


def test_switch_back_restores_the_old_branch_with_nothing_rewritten(mem: Memory) -> None:
    chengdu(mem)
    before = mem.get_record("f-chengdu")
    assert mem.current("city", "a2b").content == "moving to Hangzhou"  # type: ignore[union-attr]
    assert mem.current("city", "a2").content == "moving to Chengdu"  # type: ignore[union-attr]
    assert mem.get_record("f-chengdu") == before
    assert ids(mem.visible("a2b")) == ["f-planning", "f-hangzhou"]


def test_explain_names_the_offending_source_and_the_fork(mem: Memory) -> None:
    chengdu(mem)
    why = mem.explain("f-chengdu", "a2b")
    assert (why.visible, why.reason, why.source, why.fork) == (False, "off_path", "u2", "a1")
    assert mem.explain("f-hangzhou", "a2b").reason == "visible"


def test_an_anchor_sees_records_sourced_at_itself(mem: Memory) -> None:
    chengdu(mem)
    assert "f-chengdu" in ids(mem.visible("u2"))
    assert "f-chengdu" not in ids(mem.visible("a1"))


def test_a_record_shows_its_highest_visible_revision(mem: Memory) -> None:
    chengdu(mem)
    mem.add_record("budget", sources=["u1"], content="budget 3000", key="budget")
    mem.revise("budget", content="budget 4000", sources=["u2b"])
    assert mem.current("budget", "a2b").content == "budget 4000"  # type: ignore[union-attr]
    shown = mem.current("budget", "a2")
    assert shown is not None and (shown.content, shown.revision) == ("budget 3000", 1)


def test_records_on_records_inherit_their_sources(mem: Memory) -> None:
    chengdu(mem)
    mem.add_record("summary", sources=["f-chengdu", "f-planning"], kind="summary")
    assert "summary" not in ids(mem.visible("a2b"))
    assert mem.explain("summary", "a2b").source == "u2"
    assert "summary" in ids(mem.visible("a2"))


def test_sources_that_cannot_share_a_path_are_never_visible(mem: Memory) -> None:
    chengdu(mem)
    mem.add_record("mixed", sources=["u2", "u2b"])
    for anchor in ("u1", "a2", "a2b"):
        assert mem.explain("mixed", anchor).reason == "inconsistent_sources"
    assert mem.report()["store"]["inconsistent_revisions"] == 1


def test_a_record_without_sources_is_visible_at_every_anchor(mem: Memory) -> None:
    chengdu(mem)
    mem.add_record("global", sources=[], content="user's name is Lin")
    assert all("global" in ids(mem.visible(a)) for a in ("u1", "a2", "a2b"))


def test_path_runs_from_the_root_to_the_anchor(mem: Memory) -> None:
    chengdu(mem)
    assert [e.id for e in mem.path("a2b")] == ["u1", "a1", "u2b", "a2b"]
    assert mem.get_event("a2b").tree == "u1"


def test_context_reads_the_branch_back_without_withdrawn_or_erased_text(mem: Memory) -> None:
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


# -- arrival in any order ------------------------------------------------------------------
def test_child_before_parent_is_detached_until_the_parent_arrives(mem: Memory) -> None:
    mem.add_event("c", "b", content="child first")
    mem.add_record("fact", sources=["c"])
    mem.add_event("a", content="root")
    assert mem.explain("fact", "a").reason == "detached"
    mem.add_event("b", "a", content="the missing middle")
    assert ids(mem.visible("c")) == ["fact"]
    assert [e.id for e in mem.path("c")] == ["a", "b", "c"]
    assert mem.get_event("c").tree == "a"


def test_records_before_their_sources(mem: Memory) -> None:
    mem.add_event("root")
    mem.add_record("summary", sources=["fact"], kind="summary")
    assert mem.explain("summary", "root").reason == "unknown_source"
    mem.add_record("fact", sources=["e1"])
    assert mem.explain("summary", "root").reason == "unknown_source"
    mem.add_event("e1", "root")
    assert sorted(ids(mem.visible("e1"))) == ["fact", "summary"]
    assert mem.explain("summary", "root").reason == "off_path"


def test_a_detached_anchor_has_a_partial_path(mem: Memory) -> None:
    mem.add_event("x2", "x1")  # x1 has not arrived
    mem.add_event("x3", "x2")
    mem.add_event("y3", "x2")
    mem.add_record("on-chain", sources=["x2"])
    mem.add_record("sibling", sources=["y3"])
    assert ids(mem.visible("x3")) == ["on-chain"]
    assert mem.explain("sibling", "x3").reason == "off_path"
    assert mem.explain("sibling", "x3").fork == "x2"


def test_undecided_sources_are_hidden_in_strict_and_counted_in_compat(compat: Memory) -> None:
    compat.add_event("root")
    compat.add_event("x3", "x2")
    compat.add_record("above-the-gap", sources=["root"])
    assert ids(compat.visible("x3")) == ["above-the-gap"]
    assert ids(compat.visible("x3", mode="strict")) == []
    assert compat.report()["decisions"]["detached"] >= 1


# -- modes and missing information ---------------------------------------------------------
def test_no_anchor_strict_returns_nothing(mem: Memory) -> None:
    chengdu(mem)
    assert mem.visible(None) == []
    assert mem.explain("f-chengdu", None).reason == "no_anchor"


def test_no_anchor_compat_returns_everything_and_counts(compat: Memory) -> None:
    chengdu(compat)
    assert set(ids(compat.visible(None, include_superseded=True))) == {
        "f-chengdu", "f-hangzhou", "f-planning",
    }  # fmt: skip
    assert compat.report()["decisions"]["no_anchor"] == 1


def test_legacy_records_strict_hides_compat_shows_both_count(compat: Memory) -> None:
    chengdu(compat)
    compat.add_record("old", sources=None, content="from before provenance")
    assert "old" in ids(compat.visible("a2b"))
    assert "old" not in ids(compat.visible("a2b", mode="strict"))
    assert compat.report()["decisions"]["legacy"] == 2


def test_unknown_sources_strict_hides_compat_ignores(compat: Memory) -> None:
    chengdu(compat)
    compat.add_record("half", sources=["u2b", "lost-event"])
    assert compat.explain("half", "a2b").reason == "visible"
    assert compat.explain("half", "a2b", mode="strict").reason == "unknown_source"
    assert compat.explain("half", "a2").reason == "off_path"  # a sibling hides in both


def test_cross_tree_views_use_each_other_trees_head(mem: Memory) -> None:
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
