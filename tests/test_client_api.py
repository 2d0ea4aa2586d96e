"""``Client`` mirrors ``Memory``: the same public methods, parameters, defaults and returns."""

from __future__ import annotations

import inspect

import pytest

pytest.importorskip("httpx", reason="the client is in the 'server' extra")

from branchmem import Memory
from branchmem.client import Client

# what a remote memory cannot offer, and why
EMBEDDED_ONLY = {
    "open": "opens a store file or database; a client connects with Client(url, key)",
    "store": "the storage backend itself lives in the server",
    "repair": "takes a Python function (the deriver); run it next to the store",
    "acting_as": "the server names the actor: the API key of each request",
}


def public(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def test_every_public_memory_method_is_on_the_client() -> None:
    missing = public(Memory) - public(Client) - set(EMBEDDED_ONLY)
    assert missing == set()


@pytest.mark.parametrize("name", sorted(public(Memory) - set(EMBEDDED_ONLY) - {"mode"}))
def test_signatures_match(name: str) -> None:
    ours, theirs = (
        inspect.signature(getattr(Client, name)),
        inspect.signature(getattr(Memory, name)),
    )
    assert [(p.name, p.kind, p.default, p.annotation) for p in ours.parameters.values()] == [
        (p.name, p.kind, p.default, p.annotation) for p in theirs.parameters.values()
    ]
    assert ours.return_annotation == theirs.return_annotation
