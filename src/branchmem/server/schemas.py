"""Wire types the service adds around the API's own values.

Responses are the API's dataclasses themselves (``Event``, ``Record``, ``Explanation`` ...,
encoded by ``branchmem.api.codec``); request bodies are built per operation from the method's
signature (``routes.py``), with the constraints below chosen by parameter name, so every
operation that takes an ``id`` or ``sources`` checks them alike. Inputs are strict (no
``"7"`` for 7, no unknown fields) so a malformed request is refused with the field named.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ..model import Event, Explanation

MAX_ID: Final = 512
MAX_BATCH: Final = 10_000
MAX_SOURCES: Final = 1_000
MAX_QUERY: Final = 10_000
MAX_BUDGET: Final = 1_000_000

Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID)]
Ids = Annotated[list[Id], Field(max_length=MAX_SOURCES)]
Mode = Literal["strict", "compat"]

# body fields whose meaning fixes their constraint, whatever operation they appear in
ID_FIELDS: Final = frozenset(
    {"id", "new_id", "old_id", "event_id", "parent", "tree", "session", "anchor"}
)
BODY_TYPES: Final[dict[str, Any]] = {
    "role": Annotated[str, StringConstraints(min_length=1, max_length=64)],
    "kind": Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID)],
    "budget": Annotated[int, Field(ge=1, le=MAX_BUDGET)] | None,
    "mode": Mode | None,
    "meta": dict[str, Any] | None,
}

T = TypeVar("T")


class Input(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Page(BaseModel, Generic[T]):
    """One page of a list; pass ``next_cursor`` back as ``cursor`` for the next one."""

    items: list[T]
    next_cursor: str | None


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
    events: list[Event]


class RecordView(BaseModel):
    """A record at an anchor for the explorer: its decision and what it says."""

    explanation: Explanation
    kind: str | None
    key: str | None
    content: str | None


class Problem(BaseModel):
    """``application/problem+json``: ``code`` is the branchmem error code."""

    type: str
    title: str
    status: int
    detail: str
    code: str
