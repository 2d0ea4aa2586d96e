"""One API definition: ``Memory``, ``Client``, the HTTP routes and the CLI cannot drift.

``MemoryAPI`` (``branchmem/api/protocol.py``) declares every public method once, with its
route; mypy checks that ``Memory`` and ``Client`` satisfy it. These tests check what mypy
cannot: that every public ``Memory`` method is declared (or excluded here, with the reason),
that the declaration's parameters and defaults are ``Memory``'s own, that the client
carries each routed method, and that every face's docstring is the declaration's (written
once, in the protocol; ``tests/test_async_faces.py`` checks the async faces' signatures).
"""

from __future__ import annotations

import inspect

import pytest

pytest.importorskip("httpx", reason="the client needs the 'client' extra")

from branchmem import InvalidInput, Memory
from branchmem.api import MemoryAPI
from branchmem.api.operations import operations
from branchmem.api.protocol import takes_declared_docs
from branchmem.async_client import AsyncClient
from branchmem.async_memory import AsyncMemory
from branchmem.client import Client

FACES = (Memory, Client, AsyncClient, AsyncMemory)

# public Memory members that are not in MemoryAPI, and why
EMBEDDED_ONLY = {
    "change_stamp": "a number every write moves, for in-process caches over a shared store",
    "snapshot": "several reads in one snapshot of this process's connection",
    "transaction": "several writes as one transaction of this process's connection",
    "open": "opens a store file or database; a client connects with Client(url, key)",
    "store": "the storage backend itself lives in the server",
    "repair": "takes a Python function (the deriver); run it next to the store",
    "acting_as": "the server names the actor: the API key of each request",
    "mode": "an attribute: the decision mode of this Memory (Client(mode=...) likewise)",
    "finish_cleanup": "the store's own files: the server's next erase or restart finishes it",
    "scan_store": "the operator's scan of every tenant's bytes: no tenant may ask for it",
    "write_generation": "an attribute: this process's write count, for in-process caches",
    "process_local": "an attribute: whether only this process writes the store",
    "schema_version": "the store's schema, what branchmem migrate reports",
    "api_keys": "the service's keys, kept in its store: branchmem keys and the server use it",
    "currents": "a cost hint (None: ask visible) for an in-process cache over the store",
    "forget_with": "takes a Python function (the cleaner of the caller's own store)",
    "when_free": "this process's lock, for the service's event loop",
}
# declared in MemoryAPI without a route of their own, and why
NOT_ROUTED = {
    "close": "releases the local connection or HTTP pool",
    "import_": "applies a parsed plan through add_events and set_head (Client.import_file "
    "uploads the file instead)",
    "is_visible": "explain(...).visible",
    "namespaces": "lists namespaces rather than acting in one: GET /v1/namespaces, outside "
    "/v1/ns/{namespace}, answers the names the key may read",
}


def public(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def test_every_public_memory_method_is_declared_once() -> None:
    declared = public(MemoryAPI)
    assert public(Memory) - set(EMBEDDED_ONLY) == declared, (
        "declare the new method in branchmem/api/protocol.py with its @http route"
    )
    assert declared - set(NOT_ROUTED) == set(operations())


def test_every_declared_method_is_on_the_client() -> None:
    assert public(MemoryAPI) <= public(Client)


@pytest.mark.parametrize("name", sorted(public(MemoryAPI)))
def test_the_declaration_is_memorys_signature(name: str) -> None:
    def shape(cls: type) -> list[tuple[object, ...]]:
        signature = inspect.signature(getattr(cls, name))
        params = [(p.name, p.kind, p.default, p.annotation) for p in signature.parameters.values()]
        return [*params, ("return", signature.return_annotation)]

    assert shape(MemoryAPI) == shape(Memory)
    assert shape(Client) == shape(Memory)


@pytest.mark.parametrize("name", sorted(public(MemoryAPI)))
def test_every_face_has_the_declarations_docstring(name: str) -> None:
    declared = getattr(MemoryAPI, name).__doc__
    assert declared, f"MemoryAPI.{name}: declare its docstring in branchmem/api/protocol.py"
    for face in FACES:
        assert getattr(face, name).__doc__ == declared, (
            f"{face.__name__}.{name}: its docstring differs from MemoryAPI.{name}'s; write it "
            "only in branchmem/api/protocol.py (merge what it adds there)"
        )


def test_a_face_without_docstrings_takes_the_declarations() -> None:
    @takes_declared_docs
    class Face:
        def visible(self) -> None:
            pass

        def heads(self) -> None:
            """Its own."""

    assert Face.visible.__doc__ == MemoryAPI.visible.__doc__
    assert Face.heads.__doc__ == "Its own."  # left for the test above to refuse


def test_routes_are_unique_and_name_their_parameters() -> None:
    seen = set()
    for op in operations().values():
        assert (op.verb, op.path) not in seen, op.name
        seen.add((op.verb, op.path))
        assert op.doc, f"{op.name}: the docstring is the route's and the command's help"


def test_a_query_value_of_the_wrong_type_is_refused_before_sending() -> None:
    with Client("http://127.0.0.1:9") as client:  # nothing listens: a request would fail
        with pytest.raises(InvalidInput, match="query must be str"):
            client.search(5, "u1")  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match="cross_tree must be bool"):
            client.visible("u1", cross_tree="yes")  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match="k must be int"):
            client.search("q", "u1", k=True)
