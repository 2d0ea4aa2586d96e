"""What a write accepts: identity, conflicts and cycles, batches that are all or nothing,
and bad input refused by name before anything is written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from branchmem import ConflictError, CycleError, InvalidInput, Memory, NotFoundError

from .story import ids


# -- identity, conflicts, cycles -----------------------------------------------------------
def test_identical_re_add_is_a_no_op(mem: Memory) -> None:
    first = mem.add_event("a", content="hello")
    again = mem.add_event("a", content="hello")
    assert first == again
    assert mem.report()["store"]["events"] == 1


@pytest.mark.parametrize(
    "change", [{"parent": "other"}, {"content": "changed"}, {"tree": "elsewhere"}]
)
def test_same_id_with_different_fields_is_a_conflict(mem: Memory, change: dict) -> None:  # type: ignore[type-arg]
    mem.add_event("other")
    mem.add_event("a", content="hello")
    with pytest.raises(ConflictError, match="'a'"):
        mem.add_event("a", **{"content": "hello", **change})


def test_self_parent_is_a_cycle(mem: Memory) -> None:
    with pytest.raises(CycleError, match="'a'"):
        mem.add_event("a", "a")
    assert mem.report()["store"]["events"] == 0


def test_a_late_parent_that_closes_a_cycle_is_refused(mem: Memory) -> None:
    mem.add_event("b", "a")
    mem.add_event("c", "b")
    with pytest.raises(CycleError):
        mem.add_event("a", "c")
    assert mem.report()["store"]["events"] == 2


def test_a_batch_is_all_or_nothing(mem: Memory) -> None:
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


def test_a_record_batch_equals_the_same_records_one_by_one(mem: Memory) -> None:
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


def test_a_record_batch_pins_what_waited_for_its_records(mem: Memory) -> None:
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


def test_a_record_batch_retried_after_it_committed_changes_nothing(mem: Memory) -> None:
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
    mem: Memory, bad: dict[str, Any], error: type[Exception]
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


def test_a_tree_conflict_found_when_topology_arrives_writes_nothing(mem: Memory) -> None:
    mem.add_event("child", "parent", tree="t-child")
    with pytest.raises(ConflictError, match="child"):
        mem.add_event("parent", tree="t-parent")
    with pytest.raises(NotFoundError):
        mem.get_event("parent")


def test_records_may_not_be_built_on_themselves(mem: Memory) -> None:
    mem.add_event("e")
    mem.add_record("a", sources=["e", "b"])
    with pytest.raises(CycleError):
        mem.add_record("b", sources=["a"])
    with pytest.raises(NotFoundError):
        mem.get_record("b")


def test_events_and_records_share_one_id_space(mem: Memory) -> None:
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
def test_bad_input_is_a_clear_error_and_writes_nothing(mem: Memory, call) -> None:  # type: ignore[no-untyped-def]
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


def test_ids_and_keys_are_at_most_512_characters(mem: Memory) -> None:
    mem.add_event("e")
    with pytest.raises(InvalidInput, match="key is 600 characters"):
        mem.add_record("r", sources=["e"], key="k" * 600)
    with pytest.raises(InvalidInput, match=r"513 characters|at most 512"):
        mem.add_event("x" * 513)
    mem.add_record("r", sources=["e"], key="k" * 512)  # the limit itself is allowed
    assert mem.get_record("r").key == "k" * 512


def test_meta_with_nan_or_infinity_is_refused_naming_the_value(mem: Memory) -> None:
    mem.add_event("e")
    before = mem.report()["store"]
    # JSON has no NaN: stored, it would come back as null or as text no parser accepts
    pattern = r"meta\['x'\]\[1\] is not a finite" if isinstance(mem, Memory) else "finite|JSON"
    with pytest.raises(InvalidInput, match=pattern):
        mem.add_record("r", sources=["e"], meta={"x": [1.0, float("nan")]})
    with pytest.raises(InvalidInput):
        mem.add_event("f", "e", meta={"t": float("inf")})
    assert mem.report()["store"] == before


def test_unknown_ids_raise_not_found_naming_them(mem: Memory) -> None:
    with pytest.raises(NotFoundError, match="'nope'"):
        mem.visible("nope")
    with pytest.raises(NotFoundError, match="'nope'"):
        mem.get_record("nope")
    with pytest.raises(NotFoundError, match="'nope'"):
        mem.withdraw("nope")
