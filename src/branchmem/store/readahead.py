"""Reading ahead for a backend with round trips: one keyed view's reads asked in bulk.

``keyed.KeyedView`` reads item by item and tells its reader, unconditionally, what it will
decide (``read_ahead``: the keys of a view, a page's further candidates). A backend where
every statement is a round trip (PostgreSQL) gives each keyed view a ``ReadAhead``
(``Store.keyed_reads``): it asks the store's one bulk reader, ``Store.answer``, first for
the first page of candidates of every key, then what the rules ask about those records
(revisions, statuses, superseders, retractions naming them or their keys, the events of
their ancestor tests) in one question per wave of records discovered, a wave being what
those answers name (a superseder, a retraction, a record source); then serves the view's
per-item reads from the answers, and from the store for whatever they do not cover (older
revisions, a later candidate, a deeper wave). The answers are kept for one keyed view only:
a write later in the same call never meets them.

An in-process backend keeps the store itself as the reader (``read_ahead`` does nothing):
building and copying answers there costs more Python than the look-ups they replace
(``current()`` ~1.7x, ``visible()`` ~1.5x on the in-memory store, measured side by side).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from typing import TYPE_CHECKING

from .._core.provenance import RevisionNode
from .._core.questions import Questions
from .._core.retraction import RetractionNode
from .._core.topology import EventNode

if TYPE_CHECKING:
    from .base import Store

# Waves of bulk answers a view asks before it reads one at a time: the candidates, then what
# they name, then what that names (a record built on a record that a retraction names).
FACT_WAVES = 3

# Where a backend keeps the events an answer brought, for the rest of the call (its event
# cache, which the view's place lookups read): (namespace, asked events, events found).
LearnEvents = Callable[[str, Collection[str], Mapping[str, EventNode]], None]


class ReadAhead:
    """One keyed view's reader over ``store``: the per-item reads ``KeyedView`` makes, served
    from bulk answers where it asked ahead."""

    __slots__ = (
        "_anchor", "_events", "_learn_events", "_pages", "_retracting", "_retracting_key",
        "_revisions", "_statuses", "_superseders", "namespace", "store",
    )  # fmt: skip

    def __init__(
        self, store: Store, namespace: str, learn_events: LearnEvents | None = None
    ) -> None:
        """``learn_events``: where the events the answers bring are kept for the call (None:
        nowhere, a lookup reads them again)."""
        self.store, self.namespace = store, namespace
        self._learn_events = learn_events
        self._anchor: EventNode | None = None
        self._events: set[str] = set()  # asked already
        # bulk answers: complete for the ids and keys they hold
        self._pages: dict[str, list[RevisionNode]] = {}
        self._revisions: dict[str, tuple[RevisionNode, ...]] = {}
        self._statuses: dict[str, str | None] = {}
        self._superseders: dict[str, list[str]] = {}
        self._retracting: dict[str, list[RetractionNode]] = {}
        self._retracting_key: dict[str, list[RetractionNode]] = {}

    def keyed_reads(self, namespace: str) -> ReadAhead:
        return self

    # -- asking ahead ---------------------------------------------------------------------
    def read_ahead(
        self,
        namespace: str,
        anchor: EventNode,
        keys: Collection[str],
        revisions: Collection[RevisionNode] = (),
    ) -> None:
        """Read the first page of candidates of every key at ``anchor``, and what the rules
        ask about each key's first (usually its winner) and about ``revisions``."""
        self._anchor = anchor
        asked = frozenset(keys) - self._pages.keys()
        if asked:
            tree, depth = anchor.tree or "", anchor.depth or 0
            facts = self.store.answer(
                namespace, Questions(pages=asked, page_tree=tree, page_depth=depth)
            )
            for key in asked:
                self._pages[key] = list(facts.pages.get(key, ()))
        firsts = [self._pages[key][0] for key in asked if self._pages[key]]
        self._learn([*firsts, *revisions])

    def _learn(self, revisions: Collection[RevisionNode]) -> None:
        """Read in bulk what deciding these revisions' records asks, then what those answers
        name, in at most ``FACT_WAVES`` questions."""
        anchor = self._anchor
        assert anchor is not None
        record_ids = {node.record_id for node in revisions}
        known = [*revisions]
        steps = {s for s in (anchor.jump, anchor.parent) if s is not None}
        for _ in range(FACT_WAVES):
            record_ids = {i for i in record_ids if i not in self._revisions}
            keys = {node.key for node in known if node.key is not None}
            keys -= self._retracting_key.keys()
            events = {e for node in known for e in _events_of(node)} | steps
            events = {e for e in events if e not in self._statuses or e not in self._events}
            if not (record_ids or keys or events):
                return
            facts = self.store.answer(
                self.namespace,
                Questions(
                    events=frozenset(events), records=frozenset(record_ids), keys=frozenset(keys)
                ),
            )
            steps = set()
            if self._learn_events is not None:
                self._learn_events(self.namespace, events, facts.events)
            self._events.update(events)
            for item in (*record_ids, *events):
                self._statuses[item] = facts.statuses.get(item)
            for item in record_ids:
                self._revisions[item] = facts.revisions.get(item, ())
                self._superseders[item] = facts.superseders.get(item, [])
                self._retracting[item] = facts.retracting.get(item, [])
            for key in keys:
                self._retracting_key[key] = facts.retracting_key.get(key, [])
            known = [node for i in record_ids for node in self._revisions[i]]
            record_ids = {
                *(new for i in record_ids for new in self._superseders[i]),
                *(r.id for i in record_ids for r in self._retracting[i]),
                *(r.id for k in keys for r in self._retracting_key[k]),
                *(ref.target for node in known for ref in node.record_refs),
            }

    # -- the per-item reads, from the answers first -------------------------------------
    def get_event(self, namespace: str, event_id: str) -> EventNode | None:
        return self.store.get_event(namespace, event_id)

    def statuses(self, namespace: str, ids: Collection[str]) -> dict[str, str]:
        if self._statuses and all(item in self._statuses for item in ids):
            return {i: s for i in ids if (s := self._statuses[i]) is not None}
        return self.store.statuses(namespace, ids)

    def revisions_newest_first(self, namespace: str, record_id: str) -> Iterator[RevisionNode]:
        """The record's revisions, newest first: those read in bulk (its newest few), then
        the older ones from the store, only if the rule gets that far."""
        known = self._revisions.get(record_id)
        if known is None:
            yield from self.store.revisions_newest_first(namespace, record_id)
            return
        yield from reversed(known)
        if known and known[0].revision > 1:
            for node in self.store.revisions_newest_first(namespace, record_id):
                if node.revision < known[0].revision:
                    yield node

    def retractions_naming(
        self, namespace: str, record_id: str, key: str | None
    ) -> list[RetractionNode]:
        by_target = self._retracting.get(record_id)
        by_key = [] if key is None else self._retracting_key.get(key)
        if by_target is None or by_key is None:
            return self.store.retractions_naming(namespace, record_id, key)
        found = {node.id: node for node in (*by_target, *by_key)}
        return sorted(found.values(), key=lambda node: node.seq)

    def superseders(self, namespace: str, old_ids: Collection[str]) -> dict[str, list[str]]:
        if all(item in self._superseders for item in old_ids):
            return {item: found for item in old_ids if (found := self._superseders[item])}
        return self.store.superseders(namespace, old_ids)

    def key_candidates(
        self, namespace: str, key: str, tree: str, depth: int, cross_tree: bool = False
    ) -> Iterator[RevisionNode]:
        """The store's candidates in rank order: the page read in bulk, if any, then the
        rest."""
        everything = self.store.key_candidates(namespace, key, tree, depth, cross_tree)
        page = self._pages.get(key)
        anchor = self._anchor
        if page is None or anchor is None or (anchor.tree, anchor.depth or 0) != (tree, depth):
            return everything
        return self._after_page(page, everything)

    def _after_page(
        self, page: list[RevisionNode], everything: Iterator[RevisionNode]
    ) -> Iterator[RevisionNode]:
        for index, node in enumerate(page):
            if index == 1:  # the first did not win: the rest of the page, in one request
                self._learn(page[1:])
            yield node
        seen = {(node.record_id, node.revision) for node in page}
        for node in everything:  # a generator: nothing is read unless the page was not enough
            if (node.record_id, node.revision) not in seen:
                yield node


def _events_of(revision: RevisionNode) -> set[str]:
    """The events deciding a revision asks about: its frontiers (ancestor tests), detached
    sources (their tree) and event sources (their status, for ``stale``)."""
    gate = revision.gate
    return {
        *(frontier.event for frontier in gate.frontiers),
        *gate.detached,
        *(ref.target for ref in revision.event_refs),
    }
