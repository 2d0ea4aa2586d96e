"""The argument rules every face applies alike, written once.

``Memory`` checks them, so Python, the CLI (over ``--db``) and the MCP tools refuse the same
values with the same ``InvalidInput``; the service builds its request schema's bounds from
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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ..errors import InvalidInput


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
