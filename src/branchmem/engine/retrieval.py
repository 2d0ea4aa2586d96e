"""Search and context over one view (docs/retrieval.md); the ranking and the assembly
themselves live in ``branchmem.search``.

Only records the view returns are candidates, so nothing on another branch moves a score.
``context`` decides the records once (from the tree's index or the whole view, as
``visible()`` does: one current value per key already) and reads the transcript from the
anchor back, only as far as the budget reaches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..errors import InvalidInput
from ..model import Hit
from ..provenance import RevisionNode
from ..search.context import Context, Memo, assemble_context
from ..search.embedding import hybrid_rank
from ..search.lexical import rank
from ..search.tokens import TokenCounter
from ..store.base import PathMessage
from .asof import AsOfReader, transcript
from .blame import citer
from .deliveries import deliver
from .events import PathMessages
from .namespace import Namespace
from .views import visible_revisions


def ranked(
    ns: Namespace,
    query: str,
    query_vector: list[float] | None,
    nodes: Mapping[str, RevisionNode],
    k: int,
) -> list[tuple[str, float, str]]:
    """(record id, score, why) of the ``k`` best of ``nodes`` for ``query``: BM25, fused
    with cosine ranking by RRF when the query has a vector."""
    documents = {record_id: node.content for record_id, node in nodes.items()}
    if query_vector is None:
        return [(h.doc_id, h.score, h.why) for h in rank(query, documents, k)]
    keys = [(record_id, node.revision) for record_id, node in nodes.items()]
    stored = ns.store.vectors(ns.name, keys)
    vectors = {record_id: vector for (record_id, _), vector in stored.items()}
    fused = hybrid_rank(query, documents, query_vector, vectors, k)
    return [(h.doc_id, h.score, h.why) for h in fused]


def search(
    ns: Namespace,
    query: str,
    query_vector: list[float] | None,
    anchor: str | None,
    k: int,
    kind: str | None,
    key: str | None,
    scope: str | None,
    cross_tree: bool,
    mode: str | None,
    as_of: int | None = None,
) -> list[Hit]:
    """The ``k`` best of the records shown at ``anchor`` (``as_of``: shown then)."""
    nodes, _ = visible_revisions(ns, anchor, cross_tree, mode, kind, key, scope, as_of=as_of)
    by_id = {node.record_id: node for node in nodes}
    return [
        Hit(ns.to_record(by_id[record_id]), score, why)
        for record_id, score, why in ranked(ns, query, query_vector, by_id, k)
    ]


def context(
    ns: Namespace,
    anchor: str | None,
    query: str | None,
    query_vector: list[float] | None,
    budget: int,
    counter: TokenCounter,
    session: str | None,
    cross_tree: bool,
    mode: str | None,
    cite: bool = False,
    as_of: int | None = None,
) -> Context:
    """The prompt text at ``anchor``; with ``session``, the delivery is remembered; with
    ``cite``, each memory line is cited (``engine.blame``). ``as_of``: the prompt as it
    would have been built then (never delivered: a session is refused with it, since a past
    context is not one handed out now). ``budget`` was checked by the caller (``Memory``'s
    bounds); assembly checks it once more on its own account."""
    at = None if anchor is None else ns.event_node(anchor)  # the one lookup of the anchor
    messages: PathMessages | list[PathMessage] | None = None
    if as_of is not None:
        if session is not None:
            raise InvalidInput(f"context as_of {as_of} is not delivered: give no session")
        nodes, _ = visible_revisions(ns, anchor, cross_tree, mode, as_of=as_of, node=at)
        if anchor is not None:
            messages = transcript(ns, AsOfReader(ns.store, ns.name, as_of), anchor)
    else:
        paged = None
        if at is not None and at.attached and at.depth is not None:  # its length is known
            paged = PathMessages(ns, at.id, at.depth + 1, budget)
        nodes, length = visible_revisions(ns, anchor, cross_tree, mode, messages=paged, node=at)
        if paged is None and anchor is not None:
            paged = PathMessages(ns, anchor, length)
        messages = paged
    ranking = None
    if query is not None:
        by_id = {node.record_id: node for node in nodes}
        hits = ranked(ns, query, query_vector, by_id, max(1, len(by_id)))
        ranking = [record_id for record_id, _, _ in hits]
    built = assemble_context(
        anchor=anchor,
        path_events=messages if messages is not None else [],
        records=[Memo(n.record_id, n.revision, n.kind, n.content, n.key, n.scope) for n in nodes],
        query=query,
        budget=budget,
        counter=counter,
        ranking=ranking,
        decided=True,
        cite=citer(ns) if cite else None,
    )
    if session is not None:
        return replace(built, delivery=deliver(ns, session, anchor, built.items))
    return built
