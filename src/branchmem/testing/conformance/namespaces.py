"""What stays inside its namespace, what the audit keeps (ids, never content), and the
one error tree."""

from __future__ import annotations

from typing import Any

import pytest

from branchmem import ConflictError, CycleError, InvalidInput, Memory, NotFoundError
from branchmem.errors import BranchmemError

from .story import chengdu


# -- audit and report ----------------------------------------------------------------------
def test_audit_holds_ids_never_content(mem: Memory) -> None:
    chengdu(mem)
    mem.withdraw("f-chengdu", reason="user asked")
    entries = mem.audit()
    assert {e.op for e in entries} >= {"add_event", "add_record", "withdraw"}
    assert "Chengdu" not in repr(entries)
    assert [e.op for e in mem.audit(id="f-chengdu")] == ["add_record", "withdraw"]
    assert [h["op"] for h in mem.history("f-chengdu")] == ["add_record", "withdraw"]


def test_namespaces_never_cross(mem: Memory) -> None:
    chengdu(mem)
    mem.add_event("u1", namespace="other", content="a different user")
    assert mem.visible("u1", namespace="other") == []
    with pytest.raises(NotFoundError):
        mem.get_record("f-chengdu", namespace="other")
    with pytest.raises(NotFoundError):
        mem.get_event("a2b", namespace="other")
    assert mem.audit(namespace="other")[0].ids == ("u1",)


def test_namespaces_names_where_something_was_written(mem: Memory) -> None:
    assert mem.namespaces() == []
    mem.add_event("u1", namespace="alice")
    assert mem.heads(namespace="bob") == {}  # a read writes nothing
    with pytest.raises(NotFoundError):
        mem.set_head("nowhere", namespace="carol")  # a refused write leaves nothing
    chengdu(mem)
    assert mem.namespaces() == ["alice", "default"]


def test_no_public_method_reads_across_namespaces(mem: Memory) -> None:
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


def test_errors_are_one_tree() -> None:
    for error in (ConflictError, CycleError, InvalidInput, NotFoundError):
        assert issubclass(error, BranchmemError)
