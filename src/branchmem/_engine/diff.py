"""Diff and promote: what two anchors disagree on, and carrying one fact across.

``diff`` reads the two views the anchors define and, for each record returned at one and
not the other, asks the other view why (its ``Decision``, the same one ``explain`` gives).
``promote`` writes a *new* record citing an event on the target path: the original keeps
its sources, so switching back still shows the other branch as it was, and the copy names
the original in ``meta["copied_from"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._core.provenance import RevisionNode
from .._core.validation import check_id, check_meta
from .._core.visibility import Decision, View
from ..errors import InvalidInput, NotFoundError
from ..model import (
    COPIED_FROM,
    RETRACTION_KIND,
    REVISED,
    WITHDRAWN,
    Diff,
    DiffEntry,
    KeyChange,
)
from .namespace import Namespace
from .records import add_record
from .views import chosen, tally, view

Group = tuple[str | None, str]  # (scope, key)


def diff(
    ns: Namespace,
    anchor_a: str,
    anchor_b: str,
    cross_tree: bool,
    mode: str | None,
    include_superseded: bool,
    include_stale: bool,
) -> Diff:
    """Records ``visible()`` returns at one anchor and not at the other (with the same
    options), each with the other anchor's reason, and the (scope, key) groups whose
    current value differs."""
    check_id(anchor_a, "anchor_a")
    check_id(anchor_b, "anchor_b")
    view_a = view(ns, anchor_a, cross_tree, mode)
    view_b = view(ns, anchor_b, cross_tree, mode)
    shown_a = chosen(view_a, None, None, None, include_superseded, include_stale)
    shown_b = chosen(view_b, None, None, None, include_superseded, include_stale)
    only_a, asked_b = _one_side(ns, shown_a, shown_b, view_b)
    only_b, asked_a = _one_side(ns, shown_b, shown_a, view_a)
    tally(ns, view_a, [*shown_a, *asked_a])
    tally(ns, view_b, [*shown_b, *asked_b])
    values_a, values_b = _currents(view_a), _currents(view_b)
    keys = []
    for scope, key in sorted(values_a.keys() | values_b.keys(), key=lambda g: (g[1], g[0] or "")):
        a, b = values_a.get((scope, key)), values_b.get((scope, key))
        if _held(a) != _held(b):
            keys.append(
                KeyChange(
                    key=key,
                    scope=scope,
                    a=None if a is None else ns.to_record(a),
                    b=None if b is None else ns.to_record(b),
                )
            )
    return Diff(anchor_a=anchor_a, anchor_b=anchor_b, only_a=only_a, only_b=only_b, keys=keys)


def _one_side(
    ns: Namespace, here: list[Decision], there: list[Decision], other: View
) -> tuple[list[DiffEntry], list[Decision]]:
    """The entries of records returned ``here`` that ``there`` lacks or shows at another
    revision, in ``here``'s order, and the other view's decisions that were asked for."""
    returned_there = {d.record_id: d for d in there}
    entries: list[DiffEntry] = []
    asked: list[Decision] = []
    for decision in here:
        assert decision.revision is not None
        record = ns.to_record(decision.revision)
        match = returned_there.get(decision.record_id)
        if match is not None:
            assert match.revision is not None
            if match.revision.revision != record.revision:
                entries.append(DiffEntry(record, REVISED, other_revision=match.revision.revision))
            continue
        why = other.decide(decision.record_id)
        asked.append(why)
        entries.append(DiffEntry(record, why.reason, source=why.source, fork=why.fork))
    return entries, asked


def _currents(shown: View) -> dict[Group, RevisionNode]:
    """(scope, key) -> the value ``current()`` gives there: the last returned in path order."""
    values: dict[Group, RevisionNode] = {}
    for decision in chosen(shown, None, None, None, False, False):
        revision = decision.revision
        if revision is not None and revision.key is not None:
            values[(revision.scope, revision.key)] = revision
    return values


def _held(revision: RevisionNode | None) -> tuple[str, int] | None:
    return None if revision is None else (revision.record_id, revision.revision)


def promote(
    ns: Namespace,
    record_id: str,
    onto: str | None,
    new_id: str | None,
    revision: int | None,
    meta: Mapping[str, Any] | None,
) -> RevisionNode:
    """Write a copy of ``record_id`` (its latest or a named revision) citing only ``onto``.

    Refused, naming the id: no ``onto``, an ``onto`` that is not an event, a retraction, a
    withdrawn or erased record, and a record already returned at ``onto`` (nothing to carry).
    A repeat with the same arguments returns the copy already written."""
    check_id(record_id, "record id")
    if onto is None:
        raise InvalidInput(
            f"promote {record_id!r}: onto is required: the event on the target branch the "
            "copy cites (a copy without a source there would be visible everywhere)"
        )
    check_id(onto, "onto")
    latest = ns.latest(record_id)
    copy_id = f"{record_id}~{onto}" if new_id is None else new_id
    check_id(copy_id, "id")
    extra = check_meta(meta, f"promote {record_id!r}")
    if ns.store.get_event(ns.name, onto) is None:
        if ns.store.get_revisions(ns.name, onto):
            raise InvalidInput(f"promote {record_id!r}: onto {onto!r} is a record, not an event")
        raise NotFoundError(f"event {onto!r} not found in namespace {ns.name!r}")
    if latest.kind == RETRACTION_KIND:
        raise InvalidInput(f"record {record_id!r} is a retraction; only facts are promoted")
    if ns.store.statuses(ns.name, [record_id]).get(record_id) == WITHDRAWN:
        raise InvalidInput(f"record {record_id!r} is withdrawn; restore it to promote it")
    revisions = ns.store.get_revisions(ns.name, record_id)
    if revision is None:
        chosen_revision = latest
    elif isinstance(revision, bool) or not isinstance(revision, int):
        raise InvalidInput(f"revision must be an int or None, got {revision!r}")
    elif not 1 <= revision <= len(revisions):
        raise NotFoundError(f"record {record_id!r} has no revision {revision}")
    else:
        chosen_revision = revisions[revision - 1]
    existed = bool(ns.store.get_revisions(ns.name, copy_id))
    if not existed:
        there = view(ns, onto, False, None).decide(record_id)
        shown = there.revision
        if there.returned(False, False) and shown and shown.revision == chosen_revision.revision:
            raise InvalidInput(
                f"record {record_id!r} is already visible at {onto!r}: nothing to promote"
            )
    copied_meta = {
        **chosen_revision.meta,
        **(extra or {}),
        COPIED_FROM: {"id": record_id, "revision": chosen_revision.revision},
    }
    node = add_record(
        ns,
        copy_id,
        [onto],
        chosen_revision.content,
        chosen_revision.kind,
        chosen_revision.key,
        chosen_revision.scope,
        copied_meta,
        (),
    )
    if not existed:
        ns.audit("promote", (copy_id, record_id, onto))
    return node
