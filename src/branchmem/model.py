"""Immutable values the public API hands out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

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


# -- PROVISIONAL (branch wip-api): the engine branch defines Conversation; keep its version --
@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation (tree) of a namespace: its root, head, title and size."""

    tree: str
    root: str | None
    head: str | None
    title: str | None
    events: int
    updated_seq: int
