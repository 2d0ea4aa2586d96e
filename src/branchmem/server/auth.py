"""Who is calling: the bearer key of a request and the namespaces it may touch.

A key is checked before the namespace is looked at, so a refusal (403) says nothing about
what exists. ``create_app(auth=False)`` serves without keys (a local, single-user server).
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import unquote

from fastapi import Depends, Request
from fastapi import Path as PathParam
from pydantic import AfterValidator
from starlette.concurrency import run_in_threadpool

from .explorer import LocalSession
from .keys import ApiKey, KeyRing
from .problems import Refusal
from .schemas import MAX_ID

__all__ = [
    "ApiKey", "Caller", "IdParam", "NamespaceParam", "access", "bearer", "caller",
    "grant_without_store",
]  # fmt: skip


def path_segment(value: str) -> str:
    """One path segment as sent (the router sees raw segments), percent-decoded once."""
    decoded = unquote(value, errors="strict")
    if not decoded:
        raise ValueError("must not be empty")
    return decoded


NamespaceParam = Annotated[
    str,
    PathParam(min_length=1, max_length=3 * MAX_ID, description="the namespace (isolation unit)"),
    AfterValidator(path_segment),
]
IdParam = Annotated[
    str, PathParam(min_length=1, max_length=3 * MAX_ID), AfterValidator(path_segment)
]


def bearer(header: str) -> str:
    """The key of an ``Authorization`` header; refused when it carries none."""
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer" or not presented.strip():
        raise Refusal("unauthorized", "an API key is required: Authorization: Bearer")
    return presented.strip()


def grant_without_store(
    ring: KeyRing, local: LocalSession | None, method: str, presented: str
) -> tuple[bool, ApiKey | None]:
    """``(True, grant or None)`` when the key is decided without reading the store (the
    explorer's token, a malformed key, a row cached by the ring), else ``(False, None)``."""
    if local is not None and local.admits(method, presented):
        return True, local.grant
    return ring.verify_cached(presented)


async def caller(request: Request) -> ApiKey | None:
    """The key of ``Authorization: Bearer <key>``; None when the app serves without keys.

    Async so that a request whose key is cached (all but one every ``CACHE_SECONDS``) is
    admitted on the event loop; only a store read is handed to a thread."""
    ring: KeyRing | None = request.app.state.keys
    if ring is None:
        return None
    presented = bearer(request.headers.get("authorization", ""))
    known, grant = grant_without_store(ring, request.app.state.local, request.method, presented)
    if not known:
        grant = await run_in_threadpool(ring.verify, presented)
    if grant is None:
        raise Refusal("unauthorized", "the API key is not valid")
    return grant


Caller = Annotated[ApiKey | None, Depends(caller)]


async def access(namespace: NamespaceParam, grant: Caller) -> ApiKey | None:
    """The caller's key, if it is bound to the namespace of the path."""
    if grant is not None and not grant.allows(namespace):
        raise Refusal("forbidden", f"this key is not bound to namespace {namespace!r}")
    return grant
