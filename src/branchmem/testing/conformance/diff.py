"""``diff`` between two anchors and ``promote`` across branches."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from branchmem import ConflictError, ErasedError, InvalidInput, Memory, NotFoundError

from .story import chengdu, ids


# -- diff and promote ----------------------------------------------------------------------
def test_diff_lists_each_branchs_records_with_the_off_path_source_and_fork(mem: Memory) -> None:
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


def test_diff_names_superseded_retracted_stale_and_revised(mem: Memory) -> None:
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


def test_diff_of_an_unknown_or_missing_anchor_is_refused_naming_it(mem: Memory) -> None:
    chengdu(mem)
    with pytest.raises(NotFoundError, match="nowhere"):
        mem.diff("a2", "nowhere")
    with pytest.raises(InvalidInput, match="anchor_a"):
        mem.diff("", "a2")


def test_promote_carries_a_fact_across_and_switching_back_restores_the_branch(mem: Memory) -> None:
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


def test_promote_repeated_returns_the_same_copy_and_takes_a_named_revision(mem: Memory) -> None:
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
    mem: Memory, call: Callable[[Memory], object], error: type, names: str
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
