"""Event placement (SPEC §2): where an arriving event sits in its tree, and what it settles.

Events may arrive in any order. An event whose ancestry is complete is *attached*: it gets
its tree, depth and jump pointer (``topology.placement``) at once. A child that arrives before
its parent waits detached; when the parent arrives, ``settle_descendants`` attaches the
waiting subtree (or, while the parent is itself detached, passes the tree down to it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, overload

from .._core.topology import (
    EventNode,
    attach_below,
    check_event_input,
    placement,
    same_event,
    walk_up,
)
from .._core.validation import check_batch_item, check_meta
from ..errors import ConflictError, CycleError, InvalidInput
from ..model import ERASED, Event
from ..search.tokens import count_tokens_uncached
from ..store.base import PathMessage
from .namespace import Namespace

EVENT_FIELDS = frozenset({"id", "parent", "tree", "role", "content", "meta", "ts"})


def event_spec(item: Mapping[str, Any] | Event, index: int) -> dict[str, Any]:
    """The keyword arguments of ``add_event`` for one item of ``add_events``."""
    if isinstance(item, Event):
        return {
            "event_id": item.id,
            "parent": item.parent,
            "tree": item.tree,
            "role": item.role,
            "content": item.content,
            "meta": item.meta,
            "ts": item.ts,
        }
    item = check_batch_item(item, f"events[{index}]", EVENT_FIELDS, ("id",))
    return {
        "event_id": item["id"],
        "parent": item.get("parent"),
        "tree": item.get("tree"),
        "role": item.get("role", "user"),
        "content": item.get("content", ""),
        "meta": item.get("meta"),
        "ts": item.get("ts"),
    }


def add_event(
    ns: Namespace,
    event_id: str,
    parent: str | None,
    tree: str | None,
    role: str,
    content: str,
    meta: Mapping[str, Any] | None,
    ts: float | None,
) -> None:
    """Place one event, audit it if new and re-gate the revisions its arrival settles."""
    arrived = place(ns, event_id, parent, tree, role, content, meta, ts, alone=True)
    if arrived:
        ns.audit("add_event", (event_id,))
        if ns.resolution().events_arrived(arrived) and ns.views is not None:
            ns.views.not_only_adding()


def place(
    ns: Namespace,
    event_id: str,
    parent: str | None,
    tree: str | None,
    role: str,
    content: str,
    meta: Mapping[str, Any] | None,
    ts: float | None,
    *,
    alone: bool = False,
) -> list[str]:
    """Write one event; return it and the waiting events it attached ([] for a re-add).
    ``alone``: not one of a batch, which has asked in bulk already (``add_events``)."""
    check_event_input(event_id, parent, tree, role, content)
    if ts is not None and (isinstance(ts, bool) or not isinstance(ts, int | float)):
        raise InvalidInput(f"event {event_id!r}: ts must be a number or None")
    store, namespace = ns.store, ns.name
    if alone:
        store.before_placing(namespace, event_id, parent)
    lookup = ns.lookup()
    checked_meta = check_meta(meta, f"event {event_id!r}")
    existing = store.get_event(namespace, event_id)
    if existing is not None:
        if store.statuses(namespace, [event_id]).get(event_id) == ERASED:
            if existing.parent != parent:  # its text is gone; its place in the tree is not
                raise ConflictError(f"erased event {event_id!r} had another parent")
            return []
        same_event(existing, event_id, parent, tree, role, content)
        return []
    if store.get_revisions(namespace, event_id):
        raise ConflictError(f"id {event_id!r} is already a record in namespace {namespace!r}")
    parent_node = store.get_event(namespace, parent) if parent is not None else None
    if parent_node is not None and tree is not None and parent_node.tree not in (None, tree):
        raise ConflictError(
            f"event {event_id!r}: tree {tree!r} differs from its parent "
            f"{parent!r}'s tree {parent_node.tree!r}"
        )
    attached = parent is None or (parent_node is not None and parent_node.attached)
    if attached:
        placed_tree, depth, jump = placement(event_id, tree, parent_node, lookup)
        where: tuple[str | None, int | None, str | None] = (placed_tree, depth, jump)
    else:
        if parent_node is not None:
            for ancestor in walk_up(parent_node, lookup):
                if ancestor.parent == event_id:
                    raise CycleError(
                        f"event {event_id!r} with parent {parent!r} closes a cycle "
                        f"through {ancestor.id!r}"
                    )
        where = (tree or (parent_node.tree if parent_node else None), None, None)
    node = EventNode(
        event_id, parent, where[0], tree, role, content, checked_meta,
        None if ts is None else float(ts), store.next_seq(namespace), attached, where[1],
        where[2], count_tokens_uncached(content),
    )  # fmt: skip
    store.put_event(namespace, node)
    if ns.places is not None:
        ns.places.placed(namespace, node)
    settled = settle_descendants(ns, node)
    if ns.views is not None:
        if settled or not attached:  # it moved events already there, or waits for a parent
            ns.views.not_only_adding()
        else:
            ns.views.added_event(namespace, node)
    return [event_id, *settled]


def settle_descendants(ns: Namespace, node: EventNode) -> list[str]:
    """Attach (or pass the tree down to) detached events waiting below ``node``."""
    store, namespace = ns.store, ns.name
    lookup = ns.lookup()
    attached: list[str] = []
    stack = [node]
    while stack:
        parent = stack.pop()
        for child_id in store.children(namespace, parent.id):
            child = store.get_event(namespace, child_id)
            assert child is not None
            if child.explicit_tree is not None and parent.tree not in (None, child.explicit_tree):
                raise ConflictError(
                    f"event {parent.id!r} (tree {parent.tree!r}) cannot be the parent of "
                    f"{child_id!r}, which names tree {child.explicit_tree!r}"
                )
            if parent.attached:
                child = attach_below(child, parent, lookup)
                attached.append(child_id)
            elif child.tree is None and parent.tree is not None:
                child = replace(child, tree=parent.tree)
            else:
                continue
            store.put_event(namespace, child)
            if ns.places is not None:
                ns.places.placed(namespace, child)
            stack.append(child)
    return attached


def add_events(ns: Namespace, specs: list[dict[str, Any]]) -> None:
    """Write checked specs in order; audit what was new and re-gate what it settled."""
    ns.store.prefetch(
        ns.name,
        [s["event_id"] for s in specs if isinstance(s["event_id"], str)]
        + [s["parent"] for s in specs if isinstance(s["parent"], str)],
    )
    added: list[str] = []
    arrived: list[str] = []
    for spec in specs:
        settled = place(ns, **spec)
        if settled:
            added.append(spec["event_id"])
            arrived.extend(settled)
    if added:
        ns.audit("add_events", added)
        if ns.resolution().events_arrived(arrived) and ns.views is not None:
            ns.views.not_only_adding()


def path(ns: Namespace, anchor: str) -> list[Event]:
    """Events from the root (or, while ancestry is missing, the gap) down to ``anchor``."""
    ns.event_node(anchor)
    return [node.to_event(ns.name) for node in ns.store.path_events(ns.name, anchor)]


class PathMessages(Sequence[PathMessage]):
    """The events of the path ending at ``anchor``, root first, as a prompt may show them
    (withdrawn and erased ones empty). They are read from the anchor back, a page at a time:
    a context's budget is usually spent long before the root, so the path above what it
    takes is never read — not even its ids (an attached anchor's depth gives the length; a
    detached one's ids are read at once, the gap being all its view can know, and handed to
    that view by ``whole_path``). ``reversed()`` walks the pages as they come, without
    indexing."""

    FIRST_PAGE = 32
    # a path up to this long is read whole, in one query, when a view needs its ids anyway
    # (and never longer than the budget has tokens: no more messages than it could show)
    WHOLE_PATH = 512

    def __init__(self, ns: Namespace, anchor: EventNode, budget: int | None = None) -> None:
        self.ns = ns
        self.ids: tuple[str, ...] | None = None  # read only for a detached anchor
        if anchor.attached and anchor.depth is not None:
            self.length = anchor.depth + 1
        else:
            self.ids = tuple(ns.store.path_ids(ns.name, anchor.id))
            self.length = len(self.ids)
        self.whole = self.WHOLE_PATH if budget is None else min(self.WHOLE_PATH, budget)
        self.pages: list[list[PathMessage]] = []  # deepest page first, each deepest first
        self.start = self.length  # events from here to the anchor are loaded
        self.next_id: str | None = anchor.id  # the deepest event not loaded yet
        self.page = self.FIRST_PAGE

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> PathMessage: ...
    @overload
    def __getitem__(self, index: slice) -> list[PathMessage]: ...
    def __getitem__(self, index: int | slice) -> PathMessage | list[PathMessage]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.length))]
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError(index)
        while index < self.start:
            self._load_page()
        back = self.length - 1 - index  # how far above the anchor
        for page in self.pages:
            if back < len(page):
                return page[back]
            back -= len(page)
        raise AssertionError(index)

    def __reversed__(self) -> Iterator[PathMessage]:
        page = 0
        while page < len(self.pages) or self.start > 0:
            if page == len(self.pages):
                self._load_page()
            yield from self.pages[page]
            page += 1

    def whole_path(self) -> tuple[str, ...] | None:
        """The path's ids, root first, its messages read with them in one query; None (and
        nothing read) when it is longer than ``self.whole``: the messages stay lazy. A
        detached anchor's ids, read already, are given whatever their length."""
        if self.ids is not None:
            return self.ids
        if self.length > self.whole:
            return None
        if self.start > 0:
            self.page = self.start
            self._load_page()
        return tuple(m.id for page in reversed(self.pages) for m in reversed(page))

    def _load_page(self) -> None:
        assert self.next_id is not None, "the path is shorter than its length"
        messages = self.ns.store.transcript(self.ns.name, self.next_id, min(self.page, self.start))
        assert messages, self.next_id
        self.pages.append(messages)
        self.start -= len(messages)
        self.next_id = messages[-1].parent
        self.page *= 2


def set_head(ns: Namespace, event_id: str) -> None:
    node = ns.event_node(event_id)
    if node.tree is None:
        raise InvalidInput(
            f"event {event_id!r} is detached and its tree is unknown; cannot be a head"
        )
    ns.store.set_head(ns.name, node.tree, event_id)
    ns.audit("set_head", (event_id,))
