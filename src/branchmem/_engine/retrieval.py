"""Search and context over one view (docs/retrieval.md); the ranking and the assembly
themselves live in ``branchmem.search``.

Only records the view returns are candidates, so nothing on another branch moves a score.
``context`` decides the records once (from the tree's index or the whole view, as
``visible()`` does: one current value per key already) and reads the transcript from the
anchor back, only as far as the budget reaches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from .._core.provenance import EVENT, RevisionNode, path_places
from .._core.questions import Questions
from .._core.topology import EventNode
from .._core.validation import check_mode
from .._core.visibility import View
from ..errors import InvalidInput
from ..model import RETRACTION_KIND, Hit
from ..search.context import Context, Memo, assemble_context
from ..search.embedding import Blend, VectorTable, lexical_weight
from ..search.lexical import LexicalHit, query_terms
from ..search.neighbours import by_place
from ..search.ranking import NOWHERE, Candidates, rank
from ..search.tokens import TokenCounter
from ..search.voice import FULL, voice
from ..store.base import PathMessage
from .asof import AsOfReader, transcript
from .blame import citer
from .deliveries import deliver
from .derive import derived
from .events import PathMessages
from .namespace import Namespace
from .viewcache import SearchView
from .views import chosen, decided, view_at

# how many times ``max(k, WINDOW)`` hits a kept view's index ranks first once the view has
# shown a quieter record (``search.voice``): on a chat of alternating speakers the first
# ``max(k, WINDOW)`` rarely decide, and each further round ranks the index again
QUIET_REACH: Final = 3


def candidates(
    ns: Namespace,
    query: str,
    query_vector: list[float] | None,
    nodes: Mapping[str, RevisionNode],
    superseded: Mapping[str, tuple[RevisionNode, str]] | None = None,
    kept: SearchView | None = None,
) -> Candidates:
    """What ``search.ranking.rank`` ranks ``nodes`` by, read here: their texts, or the kept
    view's term index (the same hits, ``search.terms``), the vectors' blend when the query
    has a vector (read once for a kept view), who said each record's sources, and what
    lends its rank (``superseded``: superseded record id -> (its revision shown, its visible
    superseder)). Not the places on the anchor's path: the caller read those as the view
    was decided and hands them to ``rank`` itself, so they go down once."""
    index = None if kept is None else kept.term_index(ns.views.index_after if ns.views else 1)
    documents: Mapping[str, str] = {}
    if index is None:
        documents = {record_id: node.content for record_id, node in nodes.items()}
    fuse = None
    if query_vector is not None:
        vectors, weight = _vectors(ns, nodes, kept), lexical_weight(ns.embedder)

        def fuse(hits: Sequence[LexicalHit]) -> Blend:
            return Blend(nodes, query_vector, vectors, hits, weight)  # the candidates' ids

    return Candidates(
        documents,
        _voices(ns, nodes, kept),
        index=index,
        lent={old: (node.content, new) for old, (node, new) in (superseded or {}).items()},
        fuse=fuse,
        reach=QUIET_REACH if kept is not None and kept.quiet else 1,
    )


def _vectors(
    ns: Namespace, nodes: Mapping[str, RevisionNode], kept: SearchView | None
) -> VectorTable:
    """The candidates' vectors, read once for a kept view (with their matrix, once built)."""
    vectors = None if kept is None else kept.vectors
    if vectors is None:
        keys = [(record_id, node.revision) for record_id, node in nodes.items()]
        stored = ns.store.vectors(ns.name, keys)
        vectors = VectorTable({record_id: vector for (record_id, _), vector in stored.items()})
        if kept is not None:
            kept.vectors = vectors
    return vectors


def _voices(
    ns: Namespace, nodes: Mapping[str, RevisionNode], kept: SearchView | None
) -> Callable[[Sequence[str]], dict[str, float]]:
    """Each record's voice (``voice.voice`` of its source events' roles), read for the
    records asked and kept with the view when it is kept."""
    known: dict[str, float] = {} if kept is None else kept.voices

    def voices_of(record_ids: Sequence[str]) -> dict[str, float]:
        asked = [r for r in record_ids if r not in known and r in nodes]
        sources = {
            r: [ref.target for ref in refs]
            for r in asked
            for refs in (nodes[r].refs,)
            if refs and all(ref.kind == EVENT for ref in refs)
        }
        events = frozenset(e for ids in sources.values() for e in ids)
        said = ns.store.answer(ns.name, Questions(roles=events)).roles if events else {}
        for r in asked:
            cited = sources.get(r, ())
            roles = [said[e] for e in cited if e in said]
            known[r] = voice(roles if roles and len(roles) == len(cited) else None)
            if kept is not None and known[r] < FULL:
                kept.quiet = True
        return {r: known.get(r, FULL) for r in record_ids}

    return voices_of


def _depth_in(shown: View, revision: RevisionNode) -> int:
    """Where a visible revision stands on the view's path, as the view orders it
    (``View.position``: its frontier's depth there, the path read root first), -1 when it
    has no place there or the path is not attached (a detached anchor orders by none)."""
    on_path, depth, _ = shown.position(revision)
    return depth if on_path and shown.main is not None and shown.main.attached else -1


def may_lend(ns: Namespace, candidates: Mapping[str, RevisionNode]) -> bool:
    """Whether a record the view shows superseded can have a superseder among
    ``candidates``: a keyed candidate may be one, else only an explicit supersede (one bulk
    read says if any candidate makes one). Asked before the whole view is decided for it."""
    if any(n.key is not None and n.kind != RETRACTION_KIND for n in candidates.values()):
        return True
    asked = Questions(superseded_by=frozenset(candidates))
    return any(ns.store.answer(ns.name, asked).superseded_by.values())


def supersession(
    ns: Namespace,
    shown: View,
    kind: str | None,
    key: str | None,
    scope: str | None,
    as_of: int | None,
    candidates: Mapping[str, RevisionNode],
) -> dict[str, tuple[RevisionNode, str]]:
    """The records superseded in the whole view ``shown`` (after the filters) that have a
    superseder among ``candidates``: id -> (the revision shown, the superseder). An
    explicit supersede names it (the deepest on the view's path when several are visible);
    else the key's current value in the same scope. Nothing off the view's path is read as
    a candidate. The caller asks ``may_lend`` first."""
    old = {
        d.record_id: d.revision
        for d in chosen(shown, kind, key, scope, include_superseded=True, include_stale=False)
        if d.superseded and d.revision is not None and d.record_id not in candidates
    }
    if not old:
        return {}
    reader = ns.store if as_of is None else AsOfReader(ns.store, ns.name, as_of)
    explicit = reader.superseders(ns.name, list(old))
    current = {
        (n.scope, n.key): record_id
        for record_id, n in candidates.items()
        if n.key is not None and n.kind != RETRACTION_KIND
    }
    found: dict[str, tuple[RevisionNode, str]] = {}
    for record_id, revision in old.items():
        news = [new for new in explicit.get(record_id, ()) if new in candidates]
        if news:
            new = max(news, key=lambda n: (_depth_in(shown, candidates[n]), n))
            found[record_id] = (revision, new)
        elif revision.key is not None and (revision.scope, revision.key) in current:
            found[record_id] = (revision, current[revision.scope, revision.key])
    return found


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
    shown = searched(ns, anchor, cross_tree, mode, kind, key, scope, as_of)
    by_id, places = shown.by_id, shown.places or NOWHERE
    superseded: Mapping[str, tuple[RevisionNode, str]] = {}
    if query_terms(query):
        if shown.superseded is None:
            shown.superseded = {}
            if may_lend(ns, by_id):  # the whole view, decided for this once per kept view
                whole = view_at(ns, shown.anchor, cross_tree, mode, as_of)
                shown.superseded = supersession(ns, whole, kind, key, scope, as_of, by_id)
        superseded = shown.superseded
    kept = shown if shown.uses else None
    read = candidates(ns, query, query_vector, by_id, superseded, kept)
    return [
        Hit(ns.to_record(by_id[record_id]), score, why)
        for record_id, score, why in rank(query, k, places, read)
    ]


def searched(
    ns: Namespace,
    anchor: str | None,
    cross_tree: bool,
    mode: str | None,
    kind: str | None,
    key: str | None,
    scope: str | None,
    as_of: int | None,
) -> SearchView:
    """The records a search at ``anchor`` ranks: a view kept since an earlier call when no
    commit came in between (``_engine.viewcache``), else decided now (and kept, ``uses`` 1;
    a view neither kept nor taken from the kept ones has ``uses`` 0), with its records'
    places on the anchor's path, read once as it is decided."""
    views = ns.views
    stamp = None
    if views is not None and as_of is None and views.usable():
        stamp = ns.store.commit_stamp()
    chosen_mode = ns.mode if mode is None else check_mode(mode)
    view_key = (ns.name, anchor, bool(cross_tree), chosen_mode, kind, key, scope)
    if stamp is not None:
        assert views is not None
        kept = views.get(view_key, stamp)
        if kept is not None:
            ns.counts.update(kept.counts)
            return kept
    at = ns.anchor_node(anchor)  # the one look-up of the anchor, when no kept view answers
    if stamp is not None and at is not None and not cross_tree:
        assert views is not None
        base = views.base(view_key, stamp, at)  # kept before writes that only added
        grown = None if base is None else derived(ns, *base, at, chosen_mode, kind, key, scope)
        if grown is not None:
            ns.counts.update(grown.counts)
            views.keep(view_key, stamp, grown)
            return grown
    before = Counter(ns.counts)
    found = decided(ns, at, cross_tree, mode, kind, key, scope, as_of=as_of)
    nodes = found.revisions
    place = path_places(at.tree if at is not None and at.attached else None, nodes)
    by_id = {node.record_id: node for node in nodes}
    fresh = SearchView(
        at, nodes, by_id, ns.counts - before, places=(place, by_place(place)), route=found.route
    )
    if stamp is not None:
        assert views is not None
        views.keep(view_key, stamp, fresh)
    return fresh


def context(
    ns: Namespace,
    at: EventNode | None,
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
    """The prompt text at the anchor's event ``at`` (read once, by the caller; None: no
    anchor); with ``session``, the delivery is remembered; with ``cite``, each memory line
    is cited (``_engine.blame``). ``as_of``: the prompt as it would have been built then
    (never delivered: a session is refused with it, since a past context is not one handed
    out now). ``budget`` was checked by the caller (``Memory``'s bounds); assembly checks it
    once more on its own account. The anchor's path is set up before its records are
    decided (a short one read whole, its ids handed to the view); a query's ranking is
    handed what the decision read of the anchor (the whole view it lends from, the
    records' places on the path), so the anchor goes down once."""
    if as_of is not None and session is not None:
        raise InvalidInput(f"context as_of {as_of} is not delivered: give no session")
    paged = None  # the present's path, read from the anchor back a page at a time
    messages: Sequence[PathMessage] = ()
    if at is not None and as_of is not None:
        messages = transcript(ns, AsOfReader(ns.store, ns.name, as_of), at.id)
    elif at is not None:
        messages = paged = PathMessages(ns, at, budget)
    lending = query is not None and bool(query_terms(query))
    shown = decided(ns, at, cross_tree, mode, messages=paged, as_of=as_of, lending=lending)
    nodes = shown.revisions
    ranking = None
    if query is not None:  # ranked by what was read of the anchor above, never the anchor
        by_id = {node.record_id: node for node in nodes}
        superseded: Mapping[str, tuple[RevisionNode, str]] = {}
        if shown.whole is not None and may_lend(ns, by_id):
            superseded = supersession(ns, shown.whole, None, None, None, as_of, by_id)
        read = candidates(ns, query, query_vector, by_id, superseded)
        place = path_places(at.tree if at is not None and at.attached else None, nodes)
        hits = rank(query, max(1, len(by_id)), (place, by_place(place)), read)
        ranking = [record_id for record_id, _, _ in hits]
    built = assemble_context(
        anchor=None if at is None else at.id,
        path_events=messages,
        records=[Memo(n.record_id, n.revision, n.kind, n.content, n.key, n.scope) for n in nodes],
        query=query,
        budget=budget,
        counter=counter,
        ranking=ranking,
        decided=True,
        cite=citer(ns) if cite else None,
    )
    if session is not None:
        return replace(built, delivery=deliver(ns, session, built))
    return built
