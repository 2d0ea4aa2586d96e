"""Explicit supersede (SPEC §5): ``new`` replaces ``old`` in every view where ``new`` shows.

Only the relation is stored; which record is current is decided per view
(``visibility.View.decisions``), because ``new`` may well be invisible on another branch.
"""

from __future__ import annotations

from ..errors import CycleError
from ..model import SUPERSEDED
from .dependents import home_of, mark_stale
from .namespace import Namespace


def supersede(ns: Namespace, new_id: str, old_id: str) -> None:
    ns.latest(new_id)
    ns.latest(old_id)
    if new_id == old_id:
        raise CycleError(f"record {new_id!r} cannot supersede itself")
    stack, seen = [old_id], set()
    while stack:  # old_id must not (transitively) supersede new_id
        current = stack.pop()
        if current == new_id:
            raise CycleError(f"{new_id!r} superseding {old_id!r} would close a cycle")
        if current not in seen:
            seen.add(current)
            stack.extend(ns.store.superseded_by(ns.name, current))
    ns.store.add_supersede(ns.name, new_id, old_id)
    ns.audit("supersede", (new_id, old_id))
    mark_stale(ns, old_id, SUPERSEDED, cause_anchor=home_of(ns, new_id))
