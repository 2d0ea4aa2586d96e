"""Wire types the service adds around the API's own values.

Responses are the API's dataclasses themselves (``Event``, ``Record``, ``Explanation`` ...,
encoded by ``branchmem.api.codec``); request bodies are built per operation from the method's
signature (``routes.py``), with the constraints below chosen by parameter name, so every
operation that takes an ``id`` or ``sources`` checks them alike. Inputs are strict (no
``"7"`` for 7, no unknown fields) so a malformed request is refused with the field named.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
import typing
from typing import Annotated, Any, Final, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model

from .._core.validation import BOUNDS

MAX_ID: Final = 512
MAX_BATCH: Final = 10_000
MAX_SOURCES: Final = 1_000
MAX_QUERY: Final = 10_000

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
    "budget": Annotated[int, Field(ge=BOUNDS["budget"].low, le=BOUNDS["budget"].high)] | None,
    "mode": Mode | None,
    "meta": dict[str, Any] | None,
}

T = TypeVar("T")


# -- responses: the API's dataclasses as JSON Schema can say them -----------------------------
_MODELS: dict[type, type[BaseModel]] = {}


def response_type(hint: Any) -> Any:
    """The documented shape of an API value: each dataclass becomes a model of the same name
    and fields; a pair such as ``(record id, revision)`` an array of two (OpenAPI has no
    tuples); sets and tuples arrays."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if hint not in _MODELS:
            fields: dict[str, Any] = {}
            hints = typing.get_type_hints(hint)
            for field in dataclasses.fields(hint):
                wire = response_type(hints[field.name])
                if field.default is not dataclasses.MISSING:
                    fields[field.name] = (wire, field.default)
                elif field.default_factory is not dataclasses.MISSING:
                    fields[field.name] = (wire, Field(default_factory=field.default_factory))
                else:
                    fields[field.name] = (wire, ...)
            doc = (hint.__doc__ or "").strip()
            _MODELS[hint] = create_model(hint.__name__, __doc__=doc, **fields)
        return _MODELS[hint]
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, [response_type(a) for a in args])
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return list[response_type(args[0])]  # type: ignore[misc]
        items = functools.reduce(operator.or_, [response_type(a) for a in dict.fromkeys(args)])
        return Annotated[list[items], Field(min_length=len(args), max_length=len(args))]  # type: ignore[valid-type]
    if origin in (list, set, frozenset):
        return list[response_type(args[0])]  # type: ignore[misc]
    if origin is dict:
        return dict[args[0], response_type(args[1])]  # type: ignore[misc, valid-type]
    return hint


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


class Problem(BaseModel):
    """``application/problem+json``: ``code`` is the branchmem error code."""

    type: str
    title: str
    status: int
    detail: str
    code: str
