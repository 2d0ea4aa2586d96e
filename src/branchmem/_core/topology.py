"""Event trees with out-of-order arrival.

An event is *attached* once its whole ancestry has arrived; only attached events have a
depth. Ancestor tests use one skew-binary jump pointer per event (Myers 1983): following
``jump`` when it does not overshoot and ``parent`` otherwise reaches any ancestor in
O(log depth) steps, with O(1) extra storage per event — cheap enough to live in a SQL row.
"""

from __future__ import annotations

import sys
from bisect import bisect_left, insort
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import ConflictError, CycleError, InvalidInput
from ..model import Event, positional_constructor
from .validation import check_text


@dataclass(frozen=True, slots=True)
class EventNode:
    """An event plus the topology facts the engine maintains for it."""

    id: str
    parent: str | None
    tree: str | None
    explicit_tree: str | None
    role: str
    content: str
    meta: dict[str, Any]
    ts: float | None
    seq: int
    attached: bool = False
    depth: int | None = None
    jump: str | None = None
    # the default counter's count of ``content`` (``search.tokens.count_tokens``), taken once
    # at write so a prompt's messages need not be counted again; None: written before it was
    # kept, or no text
    tokens: int | None = None

    def placed(self, tree: str, depth: int, jump: str) -> EventNode:
        """This event, attached at ``depth`` in ``tree`` (built directly: this is hot)."""
        return new_event_node(
            self.id, self.parent, tree, self.explicit_tree, self.role, self.content, self.meta,
            self.ts, self.seq, True, depth, jump, self.tokens,
        )  # fmt: skip

    def place_only(self) -> EventNode:
        """This event's place in its tree without its text (role, content, meta empty)."""
        return new_event_node(
            self.id, self.parent, self.tree, self.explicit_tree, "", "", {}, self.ts,
            self.seq, self.attached, self.depth, self.jump, None,
        )  # fmt: skip

    def to_event(self, namespace: str) -> Event:
        """The public ``Event`` (its meta a copy), built through its slots: a batch of events
        returns one per item."""
        return _new_event(
            self.id, self.parent, self.tree, self.role, self.content, dict(self.meta),
            self.ts, self.seq, namespace,
        )  # fmt: skip


_new_event = positional_constructor(Event)
# an event node built through its slots, every field in order (each event written or read
# builds one or two; a frozen ``__init__`` sets each field through a guarded ``setattr``)
new_event_node = positional_constructor(EventNode)


Lookup = Callable[[str], EventNode | None]


def _need(lookup: Lookup, event_id: str) -> EventNode:
    node = lookup(event_id)
    if node is None:  # the store is inconsistent: a link names a missing event
        raise KeyError(event_id)
    return node


def placement(
    event_id: str, tree: str | None, parent: EventNode | None, lookup: Lookup
) -> tuple[str, int, str]:
    """(tree, depth, jump) of an event attached under an attached ``parent`` (or as a root)."""
    if parent is None:
        return tree or event_id, 0, event_id
    assert parent.attached and parent.depth is not None and parent.jump is not None
    assert parent.tree is not None
    jump = parent.id
    first = _need(lookup, parent.jump)
    if first.jump is not None and first.depth is not None:
        second = _need(lookup, first.jump)
        assert second.depth is not None
        if parent.depth - first.depth == first.depth - second.depth:
            jump = second.id
    return parent.tree, parent.depth + 1, jump


def attach_below(node: EventNode, parent: EventNode | None, lookup: Lookup) -> EventNode:
    """Return ``node`` attached under an attached ``parent`` (or as a root)."""
    return node.placed(*placement(node.id, node.tree, parent, lookup))


def level_ancestor(node: EventNode, depth: int, lookup: Lookup) -> EventNode:
    """The ancestor-or-self of an attached ``node`` at ``depth`` (0 = its root)."""
    assert node.attached and node.depth is not None and depth <= node.depth
    while node.depth != depth:
        assert node.jump is not None and node.parent is not None
        jump = _need(lookup, node.jump)
        assert jump.depth is not None
        node = jump if jump.depth >= depth else _need(lookup, node.parent)
        assert node.depth is not None
    return node


def is_ancestor_or_self(ancestor: EventNode, node: EventNode, lookup: Lookup) -> bool:
    """True when ``ancestor`` lies on the root path of ``node`` (both attached)."""
    if ancestor.tree != node.tree:
        return False
    assert ancestor.depth is not None and node.depth is not None
    if ancestor.depth > node.depth:
        return False
    return level_ancestor(node, ancestor.depth, lookup).id == ancestor.id


# the ancestors a path kept across calls remembers (past them it walks, as a fresh one does)
KEPT_ANCESTORS = 512
# what a ``SettledPlaces`` keeps: places of events (a few hundred bytes each, text left out)
# and anchors' paths, each least recently used first out
PLACES_KEPT = 1 << 19
# the meta of every kept place (a place is never read for its text): one dict, never written
_NO_META: dict[str, Any] = {}
ANCHORS_KEPT = 1 << 14


class AnchorPath:
    """Membership in one attached anchor's root path, without materialising the path.

    A long-lived agent's path grows with every turn; a keyed read asks about a handful of
    events near the anchor. Each question is a level-ancestor query started from the
    shallowest ancestor already found at or below the wanted depth, so a scan that walks
    deepest-first pays O(log gap) lookups per question, never O(depth).
    """

    def __init__(self, anchor: EventNode, lookup: Lookup, *, places_only: bool = False) -> None:
        """``places_only``: keep the anchor and the ancestors found without their text (a
        path kept across calls, ``SettledPlaces``)."""
        assert anchor.attached and anchor.depth is not None
        self.places_only = places_only
        self.anchor = anchor.place_only() if places_only else anchor
        self._lookup = lookup
        self._depths: list[int] = [anchor.depth]  # ascending; ancestors found so far
        self._found: dict[int, EventNode] = {anchor.depth: self.anchor}

    def over(self, lookup: Lookup) -> AnchorPath:
        """This path read through ``lookup``, sharing the ancestors found so far."""
        path = AnchorPath.__new__(AnchorPath)
        path.anchor, path._lookup, path.places_only = self.anchor, lookup, self.places_only
        path._depths, path._found = self._depths, self._found
        return path

    def at(self, depth: int) -> EventNode:
        """The anchor's ancestor-or-self at ``depth`` (0 <= depth <= anchor depth)."""
        known = self._found.get(depth)
        if known is not None:
            return known
        start = self._found[self._depths[bisect_left(self._depths, depth)]]
        node = level_ancestor(start, depth, self._lookup)
        if self.places_only:  # kept across calls: without text, and only so many
            if len(self._found) >= KEPT_ANCESTORS:
                return node
            if node.content or node.role or node.meta:  # not already a kept place
                node = node.place_only()
        insort(self._depths, depth)
        self._found[depth] = node
        return node

    def contains(self, event_id: str) -> bool:
        """True when ``event_id`` is attached and an ancestor-or-self of the anchor."""
        node = self._lookup(event_id)
        if node is None or not node.attached or node.tree != self.anchor.tree:
            return False
        assert node.depth is not None and self.anchor.depth is not None
        return node.depth <= self.anchor.depth and self.at(node.depth).id == node.id


class SettledPlaces:
    """Where attached events sit in their trees, kept across calls.

    An attached event's parent, tree, depth and jump pointer never change, and no event is
    ever deleted (an erase empties its text, not its place), so a place read once stays
    true in every later snapshot, whoever writes the store. A keyed read's ancestor tests
    then cost no statement once their events were read. Only places are kept, never text
    (role, content and meta are left empty), and only what a committed snapshot showed:
    nothing is kept while the owner has a write transaction open (``writing``), whose
    events may still roll back.
    """

    def __init__(
        self, writing: Callable[[], bool], limit: int = PLACES_KEPT, anchors: int = ANCHORS_KEPT
    ) -> None:
        self.writing = writing
        self.limit = limit
        self.anchors = anchors
        # attached events the owner's open write transaction placed: kept once it commits
        # (an agent then reads at the event it just wrote without reading its place back)
        self._written: list[tuple[str, EventNode]] = []
        # a full table lets one go, so a read's cost does not depend on how many
        # conversations the process serves while they fit: the anchor read least recently,
        # the place kept longest ago (a place still in use is read again once)
        self._places: OrderedDict[tuple[str, str], EventNode] = OrderedDict()
        self._paths: OrderedDict[tuple[str, str], AnchorPath] = OrderedDict()
        self._lookups: dict[str, Lookup] = {}

    def path(self, namespace: str, anchor: EventNode, lookup: Lookup) -> AnchorPath:
        """The attached ``anchor``'s path over ``lookup``, with the ancestors earlier calls
        found on it (an anchor's ancestors are settled too); a fresh one inside a write
        transaction."""
        places = self._lookups.get(namespace)
        if self.writing() or places is None:
            return AnchorPath(anchor, lookup)
        paths, key = self._paths, (namespace, anchor.id)
        known = paths.get(key)
        if known is None:
            if len(paths) >= self.anchors:
                paths.popitem(last=False)
            known = AnchorPath(anchor, places, places_only=True)  # holds no caller's lookup
            paths[key] = known
        else:
            paths.move_to_end(key)
        return known.over(lookup)

    def placed(self, namespace: str, node: EventNode) -> None:
        """The owner's open write transaction placed ``node`` (kept if it is attached, once
        that transaction commits: ``keep_placed``)."""
        if node.attached:
            self._written.append((namespace, node))

    def placed_mark(self) -> int:
        """Where a (nested) write transaction begins among the places written."""
        return len(self._written)

    def drop_placed(self, mark: int) -> None:
        """The write transaction begun at ``mark`` rolled back: the events it placed are gone."""
        del self._written[mark:]

    def keep_placed(self) -> None:
        """The outermost write transaction committed: its attached events' places hold for
        good, whoever writes next."""
        written, self._written = self._written, []
        places = self._places
        for namespace, node in written[-self.limit :]:  # a batch's earlier ones would go anyway
            if len(places) >= self.limit:
                places.popitem(last=False)
            places[(namespace, node.id)] = self._compact(namespace, node)

    def lookup(self, namespace: str, read: Lookup) -> Lookup:
        """``read`` (the owner's lookup in ``namespace``: the same for every call, so made
        once), served from the places known; a place read outside a write transaction is
        kept."""
        made = self._lookups.get(namespace)
        if made is None:
            made = self._lookups[namespace] = self._make_lookup(namespace, read)
        return made

    def _compact(self, namespace: str, node: EventNode) -> EventNode:
        """``node``'s place, sharing its strings with the places kept (its parent's and jump
        target's ids, its tree's name): most of what a kept place weighs is its strings."""
        places = self._places

        def shared(event_id: str | None) -> str | None:
            known = None if event_id is None else places.get((namespace, event_id))
            return event_id if known is None else known.id

        return new_event_node(
            node.id, shared(node.parent), None if node.tree is None else sys.intern(node.tree),
            node.explicit_tree, "", "", _NO_META, node.ts, node.seq, node.attached, node.depth,
            shared(node.jump), None,
        )  # fmt: skip

    def _make_lookup(self, namespace: str, read: Lookup) -> Lookup:
        places = self._places

        def place(event_id: str) -> EventNode | None:
            known = places.get((namespace, event_id))
            if known is not None:  # not moved to the end: a hit costs one look-up (it is hot)
                return known
            node = read(event_id)
            if node is None or not node.attached or self.writing():
                return node
            if len(places) >= self.limit:
                places.popitem(last=False)  # the place kept longest ago
            kept = places[(namespace, node.id)] = self._compact(namespace, node)
            return kept

        return place


def walk_up(node: EventNode, lookup: Lookup) -> Iterator[EventNode]:
    """``node`` and its known ancestors, deepest first, stopping at a root or a gap."""
    current: EventNode | None = node
    while current is not None:
        yield current
        current = lookup(current.parent) if current.parent is not None else None


def fork_point(source: EventNode, path_ids: set[str], lookup: Lookup) -> str | None:
    """The deepest ancestor of ``source`` that is on ``path_ids``: where two paths part."""
    for node in walk_up(source, lookup):
        if node.id in path_ids:
            return node.id
    return None


def check_event_input(
    event_id: object, parent: object, tree: object, role: object, content: object
) -> None:
    """Reject malformed fields before anything is written."""
    if (  # the usual event: ASCII strings, every check below passes (each event asks)
        type(event_id) is str
        and event_id.isascii()
        and (parent is None or (type(parent) is str and parent and parent.isascii()))
        and (tree is None or (type(tree) is str and tree and tree.isascii()))
        and type(role) is str
        and role.isascii()
        and type(content) is str
        and content.isascii()
        and event_id
        and parent != event_id
    ):
        return
    if not isinstance(event_id, str) or not event_id:
        raise InvalidInput(f"event id must be a non-empty string, got {event_id!r}")
    if parent is not None and (not isinstance(parent, str) or not parent):
        raise InvalidInput(f"event {event_id!r}: parent must be a non-empty string or None")
    if tree is not None and (not isinstance(tree, str) or not tree):
        raise InvalidInput(f"event {event_id!r}: tree must be a non-empty string or None")
    if not isinstance(role, str):
        raise InvalidInput(f"event {event_id!r}: role must be a string")
    if not isinstance(content, str):
        raise InvalidInput(f"event {event_id!r}: content must be a string")
    check_text(event_id, "event id")
    for name, value in (("parent", parent), ("tree", tree), ("role", role), ("content", content)):
        if value is not None:
            check_text(value, f"event {event_id!r}: {name}")
    if parent == event_id:
        raise CycleError(f"event {event_id!r} names itself as parent")


def same_event(
    old: EventNode, event_id: str, parent: str | None, tree: str | None, role: str, content: str
) -> None:
    """Raise ConflictError unless the fields re-state ``old`` (meta and ts are not compared)."""
    for field_name, value in (("parent", parent), ("role", role), ("content", content)):
        if getattr(old, field_name) != value:
            raise ConflictError(
                f"event {event_id!r} already exists with a different {field_name}: "
                f"{getattr(old, field_name)!r} != {value!r}"
            )
    if tree is not None and tree != old.tree:
        raise ConflictError(f"event {event_id!r} already exists in tree {old.tree!r}, not {tree!r}")
