"""Immutable values the public API hands out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from types import MemberDescriptorType
from typing import Any, Final, TypeVar

Value = TypeVar("Value")

# Why a record is or is not visible in a view. Order matters only for documentation;
# the precedence between reasons lives in ``visibility.REASON_PRECEDENCE``.
VISIBLE: Final = "visible"
OFF_PATH: Final = "off_path"
UNKNOWN_SOURCE: Final = "unknown_source"
DETACHED: Final = "detached"
LEGACY: Final = "legacy"
NO_ANCHOR: Final = "no_anchor"
NO_VIEW: Final = "no_view"
INCONSISTENT_SOURCES: Final = "inconsistent_sources"
SUPERSEDED: Final = "superseded"
RETRACTED: Final = "retracted"
STALE: Final = "stale"
WITHDRAWN: Final = "withdrawn"
ERASED: Final = "erased"

REASONS: Final = (
    VISIBLE,
    OFF_PATH,
    UNKNOWN_SOURCE,
    DETACHED,
    LEGACY,
    NO_ANCHOR,
    NO_VIEW,
    INCONSISTENT_SOURCES,
    SUPERSEDED,
    RETRACTED,
    STALE,
    WITHDRAWN,
    ERASED,
)

# Why a delivered item would not be given now, besides the visibility reasons above; also
# what a revision does to the records built on the revision before it.
REVISED: Final = "revised"

RETRACTION_KIND: Final = "retraction"
MODES: Final = ("strict", "compat")


@dataclass(frozen=True, slots=True)
class Event:
    """A node of a conversation tree. ``tree`` is None while a detached event's tree is unknown."""

    id: str
    parent: str | None
    tree: str | None
    role: str = "user"
    content: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    ts: float | None = None
    seq: int = 0
    namespace: str = "default"


@dataclass(frozen=True, slots=True)
class Record:
    """One revision of a derived memory; ``sources=None`` marks a legacy record."""

    id: str
    revision: int
    kind: str
    content: str
    sources: tuple[str, ...] | None
    key: str | None = None
    scope: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    seq: int = 0
    namespace: str = "default"


def positional_constructor(cls: type[Value]) -> Callable[..., Value]:
    """``cls(*fields)`` for a dataclass with slots, every field given in order, each set
    through its slot: a frozen ``__init__`` sets each through a guarded ``setattr`` (a
    ``Record``: ~1.0 us, ~0.6 us this way, of a ~30 us keyed read, ``Namespace.to_record``).
    The same object, equal and alike in every way. A class it would not build alike is
    refused (``__post_init__``, a field not in ``__init__`` or not in a slot)."""
    every = fields(cls)  # type: ignore[arg-type]
    names = [f.name for f in every]
    slots: list[Any] = [getattr(cls, name, None) for name in names]
    if (
        hasattr(cls, "__post_init__")
        or not all(f.init for f in every)
        or not all(isinstance(slot, MemberDescriptorType) for slot in slots)
        or any(name.startswith("_bm_") for name in names)
    ):
        raise TypeError(f"{cls.__name__} is not a plain dataclass with slots")
    scope: dict[str, Any] = {"_bm_new": object.__new__, "_bm_cls": cls}
    scope.update({f"_bm_set_{name}": slot.__set__ for name, slot in zip(names, slots, strict=True)})
    body = "".join(f"    _bm_set_{name}(_bm_made, {name})\n" for name in names)
    source = f"def build({', '.join(names)}):\n    _bm_made = _bm_new(_bm_cls)\n{body}"
    exec(source + "    return _bm_made\n", scope)
    built: Callable[..., Value] = scope["build"]
    return built


new_record: Final = positional_constructor(Record)


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a record is (not) visible at an anchor.

    ``source`` is the first offending source, ``fork`` the event where the anchor's path and
    that source's path part (for an ``off_path`` decision), ``revision`` the revision decided.
    """

    record_id: str
    anchor: str | None
    visible: bool
    reason: str
    revision: int | None = None
    source: str | None = None
    fork: str | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: a record visible at the anchor, its score and why it matched."""

    record: Record
    score: float
    why: str


@dataclass(frozen=True, slots=True)
class Conversation:
    """One tree of a namespace as a conversation list shows it.

    ``root`` is None while the root has not arrived; ``title`` comes from the root event's
    ``meta["title"]`` (importers put the export's title there); ``updated_seq`` is the
    highest arrival ``seq`` of the tree's events, so the most recently active comes first.
    """

    tree: str
    root: str | None
    head: str | None
    title: str | None
    events: int
    updated_seq: int


# -- trees (explorer reads): what the /ui explorer and ``branchmem tree`` draw
@dataclass(frozen=True, slots=True)
class TreeSummary:
    """One tree of a namespace: its roots (several while ancestry is missing), how many
    attached events it has, and its head."""

    tree: str
    roots: tuple[str, ...]
    events: int
    head: str | None


@dataclass(frozen=True, slots=True)
class TreeEvents:
    """The attached events of one tree in arrival order, and its head."""

    tree: str
    head: str | None
    events: tuple[Event, ...]


@dataclass(frozen=True, slots=True)
class RecordView:
    """One record decided at an anchor, with the text of the revision decided (None once
    erased). ``tree_sources``: when asked for one tree, the events of it the record draws
    on (direct sources and the frontier standing for those reached through cited records)."""

    explanation: Explanation
    kind: str | None
    key: str | None
    content: str | None
    tree_sources: tuple[str, ...] = ()


# What corrections leave behind for consumers: the repair queue and delivered contexts.
# A correction (withdraw, retract, supersede, erase) hides what it targets at once; what was
# *built* on the target goes stale, and what a running conversation was already *given* is
# out of date. These values describe both by id only: no text of an event or record is kept
# in them, so erasure never has to find a copy in a queue or a delivery log.


@dataclass(frozen=True, slots=True)
class RepairItem:
    """A record made stale by a correction, waiting for a deriver to rebuild it.

    ``anchor`` is the view where it went stale (the home of the retraction or the superseding
    record; for a withdrawal, the record's own deepest source event); ``reason`` is what the
    ``cause`` underwent: withdrawn, retracted or superseded.
    """

    record_id: str
    revision: int
    reason: str
    cause: str
    anchor: str | None
    seq: int
    attempts: int = 0
    last_error: str = ""


@dataclass(frozen=True, slots=True)
class RepairView:
    """What a deriver is shown: where the record went stale and what holds there now."""

    anchor: str | None
    reason: str
    cause: str
    records: list[Record] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RepairResult:
    """The outcome of one ``Memory.repair`` pass."""

    repaired: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    cleared: list[str] = field(default_factory=list)
    pending: int = 0


# deriver(stale_record, view) -> (content, sources) or None (no replacement: stay hidden)
Deriver = Callable[[Record, RepairView], "tuple[str, list[str]] | None"]


@dataclass(frozen=True, slots=True)
class Delivery:
    """One context handed to a session: the (record id, revision) pairs it contained."""

    session: str
    seq: int
    anchor: str | None
    time: float
    items: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class StaleDelivery:
    """A delivered item the session would not be given now, and why."""

    session: str
    record_id: str
    revision: int
    delivered_at: str | None
    anchor: str | None
    reason: str
    current_revision: int | None = None


# -- citations and blame -------------------------------------------------------------------
# A cited context names, for each memory line, the record behind it and the messages that
# record rests on; blame walks back from a delivered context to the same facts. Both carry
# ids; blame adds a shortened text of what is not erased, read from the store when asked.


@dataclass(frozen=True, slots=True)
class Citation:
    """Where one memory line of a cited context came from.

    ``marker`` is the n of the line's ``[n]``; ``sources`` the record's sources as written
    (None: legacy); ``messages`` the events it rests on, through the records it cites, first
    seen first; ``trees`` the conversations of those messages (a detached one has none yet).
    """

    marker: int
    record_id: str
    revision: int
    sources: tuple[str, ...] | None
    messages: tuple[str, ...]
    trees: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BlamedMessage:
    """A message a delivered memory rests on. ``text`` is shortened, None once erased;
    ``status`` is withdrawn, erased or None; ``on_path``: on the delivery's anchor path."""

    id: str
    tree: str | None
    role: str
    text: str | None
    status: str | None
    on_path: bool


@dataclass(frozen=True, slots=True)
class BlamedLine:
    """One memory line of a delivered context: the revision given and what it rests on.
    ``line`` is its citation marker (the n of ``[n]``, 1 for the first memory line)."""

    line: int
    record_id: str
    revision: int
    kind: str
    text: str | None
    status: str | None
    sources: tuple[str, ...] | None
    messages: tuple[BlamedMessage, ...]


@dataclass(frozen=True, slots=True)
class Blame:
    """A delivered context traced back: its memory lines, their source messages and the
    branch it was given on (``tree`` and ``path``, the anchor's event ids root first)."""

    session: str
    delivery: int
    anchor: str | None
    time: float
    tree: str | None
    path: tuple[str, ...]
    lines: tuple[BlamedLine, ...]


# -- diff and promote ------------------------------------------------------------------
# What two anchors disagree on, by id and reason, so a user can see why switching branch
# changes the answer and carry one fact across (``promote``) without rewriting either branch.

# The key under which a promoted copy's meta names the record it was copied from.
COPIED_FROM: Final = "copied_from"


@dataclass(frozen=True, slots=True)
class DiffEntry:
    """A record returned at one anchor of a diff and not at the other, and why not there.

    ``record`` is the revision shown where it is returned. ``reason`` is the other anchor's
    decision about it (``off_path`` with the offending ``source`` and the ``fork`` where the
    paths part, ``superseded``, ``retracted``, ``stale``, a missing-information reason) or
    ``revised``: the other anchor returns the record too, at ``other_revision``.
    """

    record: Record
    reason: str
    source: str | None = None
    fork: str | None = None
    other_revision: int | None = None


@dataclass(frozen=True, slots=True)
class KeyChange:
    """A ``(scope, key)`` whose current value differs between the anchors; None: no value."""

    key: str
    scope: str | None
    a: Record | None
    b: Record | None


@dataclass(frozen=True, slots=True)
class Diff:
    """``diff(anchor_a, anchor_b)``: records returned at one anchor only, each side in its
    own path order, and the keys whose current value differs, by (scope, key)."""

    anchor_a: str
    anchor_b: str
    only_a: list[DiffEntry] = field(default_factory=list)
    only_b: list[DiffEntry] = field(default_factory=list)
    keys: list[KeyChange] = field(default_factory=list)
