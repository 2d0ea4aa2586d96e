"""Argument checks shared by the public API: clear errors that name the field.

The rules every face applies alike are written here once. ``Memory`` checks them, so
Python, the CLI (over ``--db``) and the MCP tools refuse the same values with the same
``InvalidInput``; the service builds its request schema's bounds from
``BOUNDS`` (``server/routes.py``, ``server/schemas.py``), so an HTTP caller is refused at the
same edges and OpenAPI documents them. ``tests/test_faces_validation.py`` holds every rule on
every face.

Two rules keep a caller from widening the visibility gate by leaving something out:

- ``revise`` without ``sources`` keeps the sources of the revision it replaces (``KEEP``):
  a typo fix must not turn a branch's fact into one visible on every branch;
- a branch-scope retraction needs sources (``check_placement``): it hides its targets only
  at and below where it was said, so with none it would hide nothing that has a source.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..errors import InvalidInput
from ..model import MODES

MAX_ID: Final = 512  # characters of an id, key, scope or kind (docs/service.md)
MAX_NAMESPACE: Final = 3 * MAX_ID  # a namespace often joins a tenant and a user


def check_text(value: str, what: str) -> str:
    """Text every backend can store: a lone UTF-16 surrogate (``"a\\ud800"``, what a broken
    decoder or a JSON ``\\ud800`` escape gives) has no UTF-8 form, so SQLite and PostgreSQL
    cannot hold it; it is refused on every backend alike, naming the field."""
    if value.isascii():  # most ids and keys: no surrogate, and no encoding to find out
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidInput(
            f"{what} holds a lone surrogate {value[error.start]!r} at position {error.start}: "
            "not valid Unicode text"
        ) from None
    return value


def check_id(value: object, what: str) -> str:
    if type(value) is str and value.isascii() and 0 < len(value) <= MAX_ID:
        return value  # most ids: every check below passes (a hot path: each read checks)
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{what} must be a non-empty string, got {value!r}")
    limit = MAX_NAMESPACE if what == "namespace" else MAX_ID
    if len(value) > limit:
        raise InvalidInput(f"{what} is {len(value)} characters long; at most {limit} are allowed")
    return check_text(value, what)


def check_optional_str(value: object, what: str) -> str | None:
    """An optional key or scope: a string of at most ``MAX_ID`` characters, or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string or None, got {type(value).__name__}")
    if len(value) > MAX_ID:
        raise InvalidInput(f"{what} is {len(value)} characters long; at most {MAX_ID} are allowed")
    return check_text(value, what)


def check_meta(meta: object, what: str) -> dict[str, Any]:
    """A JSON object, copied (so a caller's later change cannot reach the store)."""
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise InvalidInput(f"{what}: meta must be a JSON object, got {type(meta).__name__}")
    try:
        text = json.dumps(dict(meta), ensure_ascii=False, allow_nan=False)
    except ValueError as error:  # NaN or Infinity: JSON has no such number
        where = _non_finite(meta, "meta") or "meta"
        raise InvalidInput(f"{what}: {where} is not a finite number ({error})") from error
    except TypeError as error:
        raise InvalidInput(f"{what}: meta is not JSON-serialisable ({error})") from error
    return dict(json.loads(check_text(text, f"{what}: meta")))


def _non_finite(value: object, where: str) -> str | None:
    """The path of the first NaN/Infinity in a JSON-like value (for the error message)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else where
    items: Iterable[tuple[object, object]] = ()
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    for key, inner in items:
        found = _non_finite(inner, f"{where}[{key!r}]")
        if found is not None:
            return found
    return None


def check_batch_item(
    item: object, what: str, fields: frozenset[str], required: tuple[str, ...]
) -> Mapping[str, Any]:
    """One item of a batch (``what`` is e.g. ``events[3]``): a mapping of known fields with
    the required ones present, so a bad item is refused before anything is written."""
    if not isinstance(item, Mapping):
        raise InvalidInput(f"{what}: expected a mapping, got {item!r}")
    if not fields.issuperset(item):  # (a set of the item's fields only for the message)
        extra = set(item) - fields
        raise InvalidInput(f"{what}: unknown field(s) {sorted(extra)}")
    for field in required:
        if field not in item:
            raise InvalidInput(f"{what}: missing field {field!r}")
    return item


def check_sources(sources: object, what: str) -> tuple[str, ...] | None:
    if sources is None:
        return None
    if isinstance(sources, str | bytes) or not isinstance(sources, Iterable):
        raise InvalidInput(f"{what}: sources must be a list of ids or None, got {sources!r}")
    checked = tuple(sources)
    for source in checked:
        if not isinstance(source, str) or not source:
            raise InvalidInput(f"{what}: every source must be a non-empty string, got {source!r}")
        check_text(source, f"{what}: source")
    return checked


def check_mode(mode: object) -> str:
    if mode not in MODES:
        raise InvalidInput(f"mode must be one of {MODES}, got {mode!r}")
    assert isinstance(mode, str)
    return mode


@dataclass(frozen=True, slots=True)
class Bound:
    """The whole numbers a parameter may take, both ends included."""

    low: int
    high: int
    unit: str


BOUNDS: Final[Mapping[str, Bound]] = {
    "k": Bound(1, 1000, "hits"),
    "budget": Bound(1, 1_000_000, "tokens"),
}


def check_bound(name: str, value: object) -> int:
    """``value`` if it is a whole number within ``BOUNDS[name]``, else ``InvalidInput``."""
    bound = BOUNDS[name]
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not bound.low <= value <= bound.high
    ):
        raise InvalidInput(
            f"{name} must be a whole number of {bound.unit} from {bound.low} to {bound.high}, "
            f"got {value!r}"
        )
    return value


class Keep(enum.Enum):
    """The type of ``KEEP``; an enum so mypy can tell it from a list of ids and from None."""

    SOURCES = "keep"


KEEP: Final = Keep.SOURCES
"""``revise(sources=KEEP)``, the default: the new revision keeps the sources of the one it
replaces, pinned as they were. ``None`` still means legacy and ``[]`` deliberately global."""

KEEP_MEANING: Final = "left out: the revision keeps the record's current sources"


def check_placement(retraction_id: str, sources: tuple[str, ...] | None, scope: str) -> None:
    """A branch-scope retraction with ``sources=[]`` stands before every record that has a
    source on the path, so it would hide none of them: refused, naming what to pass instead.
    (Its only effect, on source-less records, is what ``scope="tree"`` says plainly.)"""
    if scope == "branch" and sources == ():
        raise InvalidInput(
            f"retraction {retraction_id!r} has no sources, so it acts on no branch: pass "
            "sources (the event it is said at) to hide its targets from there down, or "
            "scope='tree' to hide them on every branch"
        )
