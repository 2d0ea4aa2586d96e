"""Request and response bodies: the JSON shapes of ``Event``, ``Record``, ``Explanation`` ...

Field names are the Python API's. Inputs are strict (no ``"7"`` for 7, no unknown fields) so
a malformed request is refused with the field named, never silently coerced.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

MAX_ID = 512
MAX_BATCH = 10_000
MAX_SOURCES = 1_000

Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID)]
# a (record id, revision) pair as delivered: ["f-city", 2]
Item = Annotated[list[str | int], Field(min_length=2, max_length=2)]
Meta = dict[str, Any]
Mode = Literal["strict", "compat"]

T = TypeVar("T")


class Input(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class EventIn(Input):
    id: Id
    parent: Id | None = None
    tree: Id | None = None
    role: Annotated[str, StringConstraints(min_length=1, max_length=64)] = "user"
    content: str = ""
    meta: Meta | None = None
    ts: float | None = None


class EventsIn(Input):
    events: Annotated[list[EventIn], Field(max_length=MAX_BATCH)]


class HeadIn(Input):
    event: Id


class RecordIn(Input):
    id: Id
    sources: Annotated[list[Id], Field(max_length=MAX_SOURCES)] | None
    content: str = ""
    kind: Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID)] = "fact"
    key: str | None = None
    scope: str | None = None
    meta: Meta | None = None
    supersedes: Annotated[list[Id], Field(max_length=MAX_SOURCES)] = []


class ReviseIn(Input):
    content: str
    sources: Annotated[list[Id], Field(max_length=MAX_SOURCES)] | None
    meta: Meta | None = None


class SupersedeIn(Input):
    new_id: Id
    old_id: Id


class RetractIn(Input):
    id: Id
    sources: Annotated[list[Id], Field(max_length=MAX_SOURCES)] | None
    targets: Annotated[list[Id], Field(max_length=MAX_SOURCES)] = []
    key: str | None = None
    key_scope: str | None = None
    scope: Literal["branch", "tree"] = "branch"
    reason: str = ""


class ReasonIn(Input):
    reason: str = ""


class ContextIn(Input):
    anchor: Id | None
    query: str | None = None
    budget: Annotated[int, Field(ge=1, le=1_000_000)] | None = None  # None: the server's default
    session: Id | None = None
    cross_tree: bool = False
    mode: Mode | None = None


# -- responses ----------------------------------------------------------------------------
class EventOut(BaseModel):
    id: str
    parent: str | None
    tree: str | None
    role: str
    content: str
    meta: Meta
    ts: float | None
    seq: int
    namespace: str


class RecordOut(BaseModel):
    id: str
    revision: int
    kind: str
    content: str
    sources: list[str] | None
    key: str | None
    scope: str | None
    meta: Meta
    seq: int
    namespace: str


class ExplanationOut(BaseModel):
    record_id: str
    anchor: str | None
    visible: bool
    reason: str
    revision: int | None
    source: str | None
    fork: str | None
    detail: str


class AuditEntryOut(BaseModel):
    seq: int
    time: float
    namespace: str
    op: str
    ids: list[str]
    actor: str | None
    reason: str
    revision: int | None


class HitOut(BaseModel):
    record: RecordOut
    score: float
    why: str


class ContextOut(BaseModel):
    text: str
    items: list[Item]
    anchor: str | None
    tokens: int
    events: list[str]


class DeliveryOut(BaseModel):
    session: str
    seq: int
    anchor: str | None
    time: float
    items: list[Item]


class StaleDeliveryOut(BaseModel):
    session: str
    record_id: str
    revision: int
    delivered_at: str | None
    anchor: str | None
    reason: str
    current_revision: int | None


class RepairItemOut(BaseModel):
    record_id: str
    revision: int
    reason: str
    cause: str | None
    anchor: str | None
    seq: int
    attempts: int
    last_error: str | None


class HistoryEntryOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    seq: int
    time: float
    op: str
    revision: int | None
    ids: list[str]
    reason: str


class Page(BaseModel, Generic[T]):
    """One page of a list; pass ``next_cursor`` back as ``cursor`` for the next one."""

    items: list[T]
    next_cursor: str | None


class HeadsOut(BaseModel):
    heads: dict[str, str]


class HeadOut(BaseModel):
    tree: str
    head: str | None


class ErasedOut(BaseModel):
    erased: list[str]


class IdsOut(BaseModel):
    ids: list[str]


class WhoAmI(BaseModel):
    key_id: str | None
    tenant: str | None
    namespaces: list[str]


class TreeSummary(BaseModel):
    tree: str
    roots: list[str]
    events: int
    head: str | None


class TreeOut(BaseModel):
    tree: str
    head: str | None
    events: list[EventOut]


class RecordView(BaseModel):
    """A record at an anchor for the explorer: its decision and what it says."""

    explanation: ExplanationOut
    kind: str | None
    key: str | None
    content: str | None
    tree_sources: list[str] = []  # with ?tree=: the conversation's events it draws on


class ConversationOut(BaseModel):  # PROVISIONAL (explorer branch), see app.conversations
    tree: str
    root: str | None
    head: str | None
    title: str | None
    events: int
    updated_seq: int


class ImportOut(BaseModel):
    format: str
    format_reason: str
    source: str
    namespace: str
    conversations: int
    imported: int
    failed: int
    events_added: int
    events_existing: int
    branches: int
    heads_moved: int
    heads_unchanged: int
    errors: list[str]
    kept_stored: list[str]


class Problem(BaseModel):
    """``application/problem+json``: ``code`` is the branchmem error code."""

    type: str
    title: str
    status: int
    detail: str
    code: str
