"""The visibility rule (SPEC §3–§5) written once, as decision functions over plain values.

Every view decides with these: ``visibility.View`` (the whole view of an anchor) and
``keyed.KeyedView`` (one keyed read) differ only in where their candidates come from and in
how they answer the gate's two questions about their paths (a position dict for a
materialised path, a jump-pointer ``AnchorPath`` for an attached one). The stores rank a
key's candidates with ``rank_key`` (SQL mirrors it in ORDER BY). The independent oracle
(``testing/oracle.py``) is deliberately not built on this module.

Nothing here reads a store: a caller passes what it has read, so the same rule decides on
every backend and the cost of deciding is the cost of these functions alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from ..model import (
    DETACHED,
    INCONSISTENT_SOURCES,
    LEGACY,
    NO_VIEW,
    OFF_PATH,
    RETRACTION_KIND,
    UNKNOWN_SOURCE,
    VISIBLE,
)
from .provenance import EVENT, RECORD, Gate, RevisionNode
from .retraction import TREE, RetractionNode

STRICT: Final = "strict"
COMPAT: Final = "compat"

# Decisions for missing information: hidden in strict mode, let through (and counted) in compat.
MISSING_INFORMATION: Final = (LEGACY, UNKNOWN_SOURCE, DETACHED)

# Where a shown revision stands on the anchor's path: (on it, where, arrival); larger is later.
Position = tuple[int, int, int]
# How a view ranks a key's candidates, best first when sorted ascending.
RankKey = tuple[int, int, int]


# -- the gate (§3, §4) ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GateDecision:
    """VISIBLE or why not; ``source`` the event that decided it, ``tree`` the key of the
    view's path it is off (for OFF_PATH), ``missing`` what compat let through."""

    reason: str
    source: str | None = None
    tree: str | None = None
    missing: tuple[str, ...] = ()


VISIBLE_GATE: Final = GateDecision(VISIBLE)


class PathAnswers(Protocol):
    """How a view answers the gate's questions about its paths."""

    @property
    def open_anchor(self) -> bool:
        """The anchor's tree is unknown (detached, its root not arrived)."""
        ...

    def path_attached(self, tree: str | None) -> bool | None:
        """Whether the view's path in ``tree`` reaches a root; None: no path in that tree."""
        ...

    def on_path(self, tree: str | None, event_id: str) -> bool:
        """``event_id`` is on the view's attached path in ``tree``."""
        ...

    def detached_status(self, event_id: str) -> tuple[str, str | None]:
        """For a source whose ancestry is open: VISIBLE (on a partial path), OFF_PATH (its
        chain meets a partial path elsewhere), NO_VIEW or DETACHED (undecided), and the
        key of the path concerned."""
        ...


def gate(revision_gate: Gate, mode: str, paths: PathAnswers) -> GateDecision:
    """Apply the rule to a revision's gate; precedence: positive evidence first (off the
    path, then no view of a tree), then missing information (hidden in strict mode)."""
    frontiers = revision_gate.frontiers
    detached = revision_gate.detached
    if len(frontiers) == 1 and not (detached or revision_gate.unknown or revision_gate.legacy):
        only = frontiers[0]  # the common case: one tree, nothing missing
        if only.conflict is None and paths.path_attached(only.tree):
            if paths.on_path(only.tree, only.event):
                return VISIBLE_GATE
            return GateDecision(OFF_PATH, only.event, only.tree)
    for frontier in frontiers:
        if frontier.conflict is not None:
            return GateDecision(INCONSISTENT_SOURCES, frontier.conflict)
    off: GateDecision | None = None
    no_view: GateDecision | None = None
    undecided: str | None = None
    for frontier in frontiers:
        attached = paths.path_attached(frontier.tree)
        if attached:
            if off is None and not paths.on_path(frontier.tree, frontier.event):
                off = GateDecision(OFF_PATH, frontier.event, frontier.tree)
        elif attached is not None or paths.open_anchor:
            undecided = undecided or frontier.event
        elif no_view is None:
            no_view = GateDecision(NO_VIEW, frontier.event)
    for event_id in sorted(detached):
        status, tree = paths.detached_status(event_id)
        if status == OFF_PATH and off is None:
            off = GateDecision(OFF_PATH, event_id, tree)
        elif status == NO_VIEW and no_view is None:
            no_view = GateDecision(NO_VIEW, event_id)
        elif status == DETACHED:
            undecided = undecided or event_id
    if off is not None:
        return off
    if no_view is not None:
        return no_view
    missing: list[tuple[str, str | None]] = []
    if revision_gate.legacy:
        missing.append((LEGACY, None))
    if revision_gate.unknown:
        missing.append((UNKNOWN_SOURCE, min(revision_gate.unknown)))
    if undecided is not None:
        missing.append((DETACHED, undecided))
    if not missing:
        return VISIBLE_GATE
    if mode == STRICT:
        return GateDecision(missing[0][0], missing[0][1])
    return GateDecision(VISIBLE, missing=tuple(reason for reason, _ in missing))


# -- position and ranking ---------------------------------------------------------------
def position(at: int | None, seq: int) -> Position:
    """Where a shown revision stands: ``at`` is where its source stands on the anchor's path
    (None: nowhere on it), then arrival. Later wins a key (§5)."""
    return (1, at, seq) if at is not None else (0, 0, seq)


def rank_key(at: int | None, seq: int) -> RankKey:
    """The order a view ranks a key's candidates in, best first when sorted ascending:
    deepest frontier on the anchor's path first, then latest seq; those with no frontier
    there after, latest first. ``position`` reversed; SQL's ``ORDER BY k.depth DESC, k.seq
    DESC`` (then ``k.seq DESC``) mirrors it."""
    return (0, -at, -seq) if at is not None else (1, 0, -seq)


# -- invalidation (§5) ------------------------------------------------------------------
def retracts(
    node: RetractionNode,
    revision: RevisionNode,
    here: Position,
    acting: Position | None,
    gone: bool,
) -> bool:
    """Whether retraction ``node`` hides ``revision`` in this view. Branch scope: its record
    is shown here (``acting``: its position, None when not shown) at or below the revision.
    Tree scope: written after the revision, and not erased or withdrawn (``gone``)."""
    if revision.kind == RETRACTION_KIND:
        return False
    if not node.covers(revision.record_id, revision.key, revision.scope):
        return False
    if node.scope == TREE:
        return not gone and revision.seq < node.seq
    return acting is not None and here <= acting


def key_group(revision: RevisionNode) -> tuple[str | None, str] | None:
    """The ``(scope, key)`` a revision competes for; None: it competes for none."""
    if revision.key is None or revision.kind == RETRACTION_KIND:
        return None
    return (revision.scope, revision.key)


def explicitly_superseded(superseders: Iterable[str], shown: Callable[[str], bool]) -> bool:
    """A record is superseded outright when a record naming it as superseded is shown."""
    for new in superseders:  # noqa: SIM110 - any() makes a generator; every keyed read asks
        if shown(new):
            return True
    return False


def competes(revision: RevisionNode, retracted: bool, superseded_outright: bool) -> bool:
    """In the running for its key: keyed, not a retraction, not retracted, not explicitly
    superseded; among those the one with the latest ``position`` holds the key."""
    return key_group(revision) is not None and not (retracted or superseded_outright)


def superseded_by_key(
    shown: Mapping[str, RevisionNode], positions: Mapping[str, Position], out: set[str]
) -> set[str]:
    """Records that lose their key to a later competitor, in one pass over a whole view;
    ``out``: those not competing (retracted, explicitly superseded)."""
    holder: dict[tuple[str | None, str], tuple[Position, str]] = {}
    losers: set[str] = set()
    for record_id, revision in shown.items():
        if revision.key is None or revision.kind == RETRACTION_KIND or record_id in out:
            continue
        group = (revision.scope, revision.key)
        here = positions[record_id]
        held = holder.get(group)
        if held is None:
            holder[group] = (here, record_id)
        elif here > held[0]:
            losers.add(held[1])
            holder[group] = (here, record_id)
        else:
            losers.add(record_id)
    return losers


def stale(
    revision: RevisionNode,
    events_gone: Callable[[list[str]], bool],
    shown_revision: Callable[[str], int | None],
    invalid_or_stale: Callable[[str], bool],
) -> bool:
    """Built on something this view does not show as it was when it was built: an event
    source withdrawn or erased, or a record source not shown at the revision it cited, or
    shown but retracted, superseded or stale itself."""
    refs = revision.refs
    if not refs:
        return False
    events = [ref.target for ref in refs if ref.kind == EVENT]
    if events and events_gone(events):
        return True
    for ref in refs:
        if ref.kind == RECORD:
            at = shown_revision(ref.target)
            if at is None or at != ref.revision or invalid_or_stale(ref.target):
                return True
    return False


def stale_in_one_pass(
    shown: Mapping[str, RevisionNode], invalid: set[str], events_gone: set[str]
) -> set[str]:
    """``stale`` for every record of a whole view. A record source shown at the revision
    cited arrived before its citer, so in arrival order every such source is decided first:
    one pass, no recursion (a source out of order, which arrival forbids, is decided then)."""
    return _OnePass(shown, invalid, events_gone).run()


class _OnePass:
    """The state of one ``stale_in_one_pass``, in methods rather than closures: a closure
    that calls itself is a reference cycle, which would hold the view's maps until the
    collector found it, and freeing them then is a pause inside some later call."""

    __slots__ = ("decided", "events_gone", "invalid", "shown")

    def __init__(
        self, shown: Mapping[str, RevisionNode], invalid: set[str], events_gone: set[str]
    ) -> None:
        self.shown, self.invalid, self.events_gone = shown, invalid, events_gone
        self.decided: dict[str, bool] = {}

    def run(self) -> set[str]:
        decided = self.decided
        gone, shown_revision, invalid_or_stale = (
            self.gone,
            self.shown_revision,
            self.invalid_or_stale,
        )
        for revision in sorted(self.shown.values(), key=_arrival):
            if revision.record_id not in decided:
                decided[revision.record_id] = stale(
                    revision, gone, shown_revision, invalid_or_stale
                )
        return {record_id for record_id, found in decided.items() if found}

    def gone(self, events: list[str]) -> bool:
        return not self.events_gone.isdisjoint(events)

    def shown_revision(self, record_id: str) -> int | None:
        source = self.shown.get(record_id)
        return None if source is None else source.revision

    def invalid_or_stale(self, record_id: str) -> bool:
        if record_id in self.invalid:
            return True
        known = self.decided.get(record_id)
        if known is None:
            self.decided[record_id] = False  # provisional; sources never cycle back (CycleError)
            known = self.decided[record_id] = stale(
                self.shown[record_id], self.gone, self.shown_revision, self.invalid_or_stale
            )
        return known


def _arrival(revision: RevisionNode) -> int:
    return revision.seq
