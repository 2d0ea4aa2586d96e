"""How later records change what earlier ones show: keys and supersede, retraction, and
the dependents that go stale, are withdrawn or erased with their source."""

from __future__ import annotations

import pytest

from branchmem import CycleError, ErasedError, Memory

from .story import chengdu, ids


# -- keys, scopes, supersede ---------------------------------------------------------------
def test_path_order_not_arrival_order_picks_the_current_value(mem: Memory) -> None:
    mem.add_event("u1")
    mem.add_event("u2", "u1")
    mem.add_event("u3", "u2")
    mem.add_record("late-but-deep", sources=["u3"], content="4000", key="budget")
    mem.add_record("early-arrival", sources=["u1"], content="3000", key="budget")
    assert mem.current("budget", "u3").id == "late-but-deep"  # type: ignore[union-attr]
    assert ids(mem.visible("u3", include_superseded=True)) == ["early-arrival", "late-but-deep"]
    assert mem.explain("early-arrival", "u3").reason == "superseded"


def test_scopes_never_compete(mem: Memory) -> None:
    mem.add_event("u1")
    mem.add_event("u2", "u1")
    mem.add_record("reviews", sources=["u1"], content="async", key="meetings", scope="reviews")
    mem.add_record("incidents", sources=["u2"], content="voice", key="meetings", scope="incidents")
    assert ids(mem.visible("u2")) == ["reviews", "incidents"]
    assert mem.current("meetings", "u2", scope="reviews").content == "async"  # type: ignore[union-attr]


def test_explicit_supersede_acts_where_the_new_record_is_visible(mem: Memory) -> None:
    chengdu(mem)
    mem.add_record("f-hz-note", sources=["u2b"], content="Hangzhou, not Chengdu")
    mem.supersede("f-hz-note", "f-planning")
    assert "f-planning" not in ids(mem.visible("a2b"))
    assert "f-planning" in ids(mem.visible("a2"))


def test_supersede_cycles_are_refused(mem: Memory) -> None:
    chengdu(mem)
    mem.supersede("f-hangzhou", "f-planning")
    with pytest.raises(CycleError):
        mem.supersede("f-planning", "f-hangzhou")


# -- retraction ----------------------------------------------------------------------------
def test_branch_retraction_acts_only_where_it_is_visible(mem: Memory) -> None:
    chengdu(mem)
    mem.add_event("u3b", "a2b", content="don't bring up the move again")
    mem.retract("x1", sources=["u3b"], targets=["f-planning"])
    assert "f-planning" not in ids(mem.visible("u3b"))
    assert "f-planning" in ids(mem.visible("a2"))
    assert "x1" in ids(mem.visible("u3b", kind="retraction"))


def test_retract_by_key_hides_only_what_was_stated_at_or_above(mem: Memory) -> None:
    mem.add_event("u1")
    mem.add_event("u2", "u1")
    mem.add_event("u3", "u2")
    mem.add_record("old", sources=["u1"], content="allergic to peanuts", key="allergy")
    mem.retract("forget", sources=["u2"], key="allergy")
    mem.add_record("new", sources=["u3"], content="allergic to shrimp", key="allergy")
    assert mem.current("allergy", "u2") is None
    assert mem.current("allergy", "u3").id == "new"  # type: ignore[union-attr]
    assert mem.explain("old", "u3").reason == "retracted"


def test_tree_retraction_hides_everywhere_until_withdrawn(mem: Memory) -> None:
    chengdu(mem)
    mem.retract("forget-all", sources=["u2b"], key="city", scope="tree")
    for anchor in ("a2", "a2b", "u1"):
        assert mem.current("city", anchor) is None
    mem.withdraw("forget-all")
    assert mem.current("city", "a2").id == "f-chengdu"  # type: ignore[union-attr]


def test_a_restatement_after_a_tree_retraction_is_visible(mem: Memory) -> None:
    chengdu(mem)
    mem.retract("forget", sources=["u2b"], key="city", scope="tree")
    mem.add_event("u4", "a2b", content="I'm moving to Hangzhou after all")
    mem.add_record("f-again", sources=["u4"], content="moving to Hangzhou", key="city")
    assert mem.current("city", "u4").id == "f-again"  # type: ignore[union-attr]


# -- stale dependents ----------------------------------------------------------------------
def test_dependents_go_stale_exactly_where_their_source_is_invalid(mem: Memory) -> None:
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


def test_a_dependent_of_an_older_revision_is_stale_where_a_newer_one_shows(mem: Memory) -> None:
    chengdu(mem)
    mem.add_record("summary", sources=["f-planning"], kind="summary")
    mem.revise("f-planning", content="planning a move to Hangzhou", sources=["u2b"])
    assert mem.explain("summary", "a2b").reason == "stale"
    assert mem.explain("summary", "a2").reason == "visible"
    mem.add_record("pinned", sources=["f-planning@2"], kind="summary")
    assert mem.explain("pinned", "a2b").reason == "visible"


def test_withdraw_and_restore(mem: Memory) -> None:
    chengdu(mem)
    mem.add_record("summary", sources=["f-hangzhou"], kind="summary")
    mem.withdraw("f-hangzhou", reason="wrong extraction")
    assert mem.explain("f-hangzhou", "a2b").reason == "withdrawn"
    assert mem.explain("summary", "a2b").reason == "stale"
    mem.restore("f-hangzhou")
    assert ids(mem.visible("a2b")) == ["f-planning", "f-hangzhou", "summary"]


def test_withdrawing_an_event_makes_what_was_built_on_it_stale(mem: Memory) -> None:
    chengdu(mem)
    mem.withdraw("u2b")
    assert mem.explain("f-hangzhou", "a2b").reason == "stale"
    assert mem.dependents("u2b") == {"f-hangzhou"}


def test_erase_removes_the_text_of_the_target_and_its_dependents(mem: Memory) -> None:
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


def test_erase_leaves_no_text_about_the_erased_in_retractions_or_the_audit(mem: Memory) -> None:
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


def test_an_erased_event_keeps_no_role_and_the_erase_no_reason(mem: Memory) -> None:
    chengdu(mem)
    mem.add_event("s", "a2", role="QX-role", content="QX-content")
    mem.add_record("f-s", sources=["s"], content="QX-fact", kind="QX-kind")
    assert mem.erase("s", reason="QX-reason") == {"s", "f-s"}
    event = mem.get_event("s")
    assert (event.role, event.content, event.meta) == ("erased", "", {})
    assert [e.role for e in mem.path("s")][-1] == "erased"
    assert "QX" not in repr(mem.audit()) + repr(mem.history("f-s"))


def test_a_retraction_keeps_a_key_that_other_records_still_hold(mem: Memory) -> None:
    chengdu(mem)
    mem.retract("r-city", sources=["a2"], key="city", reason="stop")
    mem.erase("f-chengdu")
    assert "f-chengdu" not in ids(mem.visible("a2"))
    mem.add_record("f-city", sources=["u2"], content="a new city", key="city")
    assert "f-city" not in ids(mem.visible("a2"))  # f-hangzhou holds "city": it stays


def test_dependents_are_transitive(mem: Memory) -> None:
    chengdu(mem)
    mem.add_record("summary", sources=["f-hangzhou"], kind="summary")
    mem.add_record("profile", sources=["summary"], kind="profile")
    assert mem.dependents("u2b") == {"f-hangzhou", "summary", "profile"}
