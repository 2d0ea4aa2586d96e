"""``Memory.search`` and ``Memory.context``: the query checked and embedded before the
transaction (an embedder may call a model), then one read, or one write when a session
records what the context delivered. ``Memory`` keeps the signatures and hands them here.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from .._core.validation import check_bound, check_id
from .._engine import asof, retrieval
from .._engine.namespace import Namespace
from ..errors import InvalidInput
from ..model import Hit
from ..search.context import Context

if TYPE_CHECKING:
    from . import Memory

DEFAULT_BUDGET = 2000  # tokens of context when the caller names no budget


def search(
    memory: Memory,
    query: str,
    anchor: str | None,
    k: int,
    kind: str | None,
    key: str | None,
    scope: str | None,
    cross_tree: bool,
    mode: str | None,
    as_of: int | str | None,
    namespace: str,
) -> list[Hit]:
    if not isinstance(query, str):
        raise InvalidInput(f"query must be a string, got {type(query).__name__}")
    k = check_bound("k", k)
    embedder = memory.embedder
    query_vector = embedder.embed([query])[0] if embedder is not None else None
    with memory._read(namespace) as ns:
        return retrieval.search(
            ns, query, query_vector, anchor, k, kind, key, scope, cross_tree, mode,
            as_of=asof.point(ns, as_of),
        )  # fmt: skip


def context(
    memory: Memory,
    anchor: str | None,
    query: str | None,
    budget: int | None,
    cite: bool,
    session: str | None,
    cross_tree: bool,
    mode: str | None,
    as_of: int | str | None,
    namespace: str,
) -> Context:
    budget = check_bound("budget", DEFAULT_BUDGET if budget is None else budget)
    if query is not None and not isinstance(query, str):
        raise InvalidInput(f"query must be a string or None, got {type(query).__name__}")
    if session is not None:
        check_id(session, "session")
    if not isinstance(cite, bool):
        raise InvalidInput(f"cite must be true or false, got {cite!r}")
    query_vector = None
    if query is not None and memory.embedder is not None:
        query_vector = memory.embedder.embed([query])[0]
    scope: AbstractContextManager[Namespace]  # a write when the delivery is remembered
    scope = memory._write(namespace) if session is not None else memory._read(namespace)
    with scope as ns:
        point = asof.point(ns, as_of)
        at = ns.anchor_node(anchor)  # the one look-up of the anchor; its node goes down
        return retrieval.context(
            ns, at, query, query_vector, budget, memory.counter, session, cross_tree, mode,
            cite=cite, as_of=point,
        )  # fmt: skip
