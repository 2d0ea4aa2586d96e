"""The story most conformance tests tell, and the one helper they read it back with."""

from __future__ import annotations

from branchmem import Memory


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
