"""``forget``: erase a message, a branch, a conversation or a subject, and say what went.

A plan is read first, inside the call's transaction: the messages the target names, every
record built on them (SPEC §6 ``dependents``), what those occupy per table, the deliveries
that showed any of it, and the text itself (held in this process only long enough to
fingerprint it). The erase is ``corrections.erase`` on each, so every rule of SPEC §6 holds.

The plan reads what it erases and what cites it: a promoted copy is found through its
``promote`` audit entry, not by reading every revision. Two reads still cover the namespace:
a subject (named by no index) and the deliveries (a delivery's anchor has no index). The
receipt, its check of
the rows (``store.residue.check_rows``) and its audit entries are made inside the erase's
transaction and commit with it, so a crash leaves either nothing erased or the receipt kept:
a forget run again returns it (redacted: the key never reaches the store).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from .._core.provenance import UNKNOWN, RevisionNode
from ..errors import InvalidInput, NotFoundError
from ..model import ERASED, RETRACTION_KIND
from ..receipt import (
    FORGET_KINDS,
    RECEIPT_VERSION,
    ByteCheck,
    Receipt,
    ResidueScope,
    Shown,
    digest_of,
    receipt_hash,
    strings_in,
    text_fingerprints,
)
from .corrections import erase
from .dependents import dependents
from .namespace import Namespace

RECEIPT_OP = "receipt"  # the audit op whose entry keeps a forget's receipt, redacted
# a subject id names a key or scope when it is the whole of it or one of its parts
_PARTS = re.compile(r"[:/|.#\s]+")


@dataclass
class Plan:
    """What a forget erases; ``texts`` is the caller text that goes (fingerprinted, never
    kept)."""

    events: set[str] = field(default_factory=set)
    records: set[str] = field(default_factory=set)
    erased: dict[str, tuple[str, ...]] = field(default_factory=dict)
    shown: list[Shown] = field(default_factory=list)
    sources_kept: set[str] = field(default_factory=set)  # what erased records cite, kept
    texts: list[str] = field(default_factory=list)
    looked_at: int = 0  # items the target named, erased before or not

    @property
    def empty(self) -> bool:
        return not self.events and not self.records


def plan(ns: Namespace, kind: str, target: str) -> Plan:
    """Everything ``forget(kind, target)`` erases, without changing anything."""
    if kind not in FORGET_KINDS:
        raise InvalidInput(f"forget kind must be one of {FORGET_KINDS}, got {kind!r}")
    store = ns.store
    found = Plan()
    if kind == "message":
        found.events = {ns.event_node(target).id}
    elif kind == "branch":
        found.events = _subtree(ns, ns.event_node(target).id)
    elif kind == "conversation":
        found.events = {node.id for node in store.iter_events(ns.name, target)}
        if not found.events:
            raise NotFoundError(f"conversation {target!r} not found in namespace {ns.name!r}")
    else:
        found.records = set(_naming_subject(ns, target))
    found.looked_at = len(found.events | found.records)
    for item in sorted(found.events | found.records):
        found.records |= dependents(ns, item)
    _follow_copies(ns, found)
    statuses = store.statuses(ns.name, found.events | found.records)
    found.events = {e for e in found.events if statuses.get(e) != ERASED}
    found.records = {r for r in found.records if statuses.get(r) != ERASED}
    _measure(ns, found)
    found.shown = _shown(ns, found.events, found.records)
    return found


def apply(ns: Namespace, planned: Plan) -> set[str]:
    """Erase what ``planned`` names (SPEC §6); the ids erased."""
    erased: set[str] = set()
    for item in sorted(planned.events) + sorted(planned.records):
        if item not in erased:
            erased |= erase(ns, item, "")
    return erased


def fingerprints(planned: Plan, key: str) -> tuple[tuple[str, ...], int]:
    """The keyed fingerprints of the text that goes, and how many non-empty fields were too
    short to have one; the plan's text is dropped here."""
    prints: set[str] = set()
    short = 0
    for text in planned.texts:
        made = text_fingerprints(key, text)
        prints.update(made)
        short += bool(text) and not made
    planned.texts.clear()
    return tuple(sorted(prints)), short


def receipt(
    ns: Namespace,
    kind: str,
    target: str,
    planned: Plan,
    dry_run: bool,
    key: str,
    prints: tuple[str, ...],
    short: int,
    check: ByteCheck,
    pending: str | None,
    cannot_clean: tuple[str, ...],
) -> Receipt:
    """The receipt of a forget, its content hash computed."""
    made = Receipt(
        version=RECEIPT_VERSION,
        namespace=ns.name,
        kind=kind,
        target=target,
        dry_run=dry_run,
        time=check.time,
        actor=ns.actor,
        erased=planned.erased,
        counts={table: len(ids) for table, ids in planned.erased.items()},
        shown=tuple(planned.shown),
        sources_kept=tuple(sorted(planned.sources_kept)),
        check=check,
        cannot_clean=cannot_clean,
        cleanup_pending=pending,
        short_fields=short,
        fingerprint_digest=digest_of(key, prints),
        key=key,
        fingerprints=prints,
        content_hash="",
    )
    return replace(made, content_hash=receipt_hash(made))


def mark(ns: Namespace, target: str, planned: Plan, made: Receipt) -> None:
    """The audit entry that keeps the receipt's hash and names the sessions that had been
    shown what went (``audit(id=session)`` finds it), and the one that keeps the receipt
    itself, redacted, for a forget run again (``kept``)."""
    sessions = sorted({shown.session for shown in planned.shown})
    ns.audit("forget", (target, *sessions), reason=made.content_hash)
    body = json.dumps(made.redacted().to_json(), sort_keys=True, separators=(",", ":"))
    ns.audit(RECEIPT_OP, (target,), reason=body)


def kept(ns: Namespace, kind: str, target: str) -> Receipt | None:
    """The receipt of the last forget of ``kind`` ``target`` in this namespace, redacted."""
    for entry in reversed(ns.store.audit(ns.name, id=target, op=RECEIPT_OP)):
        if not entry.reason:
            continue
        found = Receipt.from_json(json.loads(entry.reason))
        if found.kind == kind and found.target == target and not found.dry_run:
            return found
    return None


def nothing_left(ns: Namespace, kind: str, target: str, planned: Plan) -> NotFoundError:
    """Why a forget that found nothing to erase and no receipt of its own is refused."""
    if planned.looked_at == 0:
        return NotFoundError(
            f"forget {kind} {target!r}: no record in namespace {ns.name!r} names it in its "
            "key, scope or meta"
        )
    return NotFoundError(
        f"forget {kind} {target!r}: nothing left to forget in namespace {ns.name!r}; its "
        f"{planned.looked_at} item(s) were erased already, by erase rather than a forget "
        "(no receipt)"
    )


def scope_of(
    ns: Namespace,
    events: Iterable[str],
    records: Iterable[str],
    kept_sources: Iterable[str],
    sessions: Iterable[str],
) -> ResidueScope:
    """The rows a receipt's check reads: what went, the trees it and what it cited were
    placed in, and the sessions shown it."""
    events, kept_sources = frozenset(events), frozenset(kept_sources)
    trees = set()
    for item in sorted(events | kept_sources):
        node = ns.store.get_event(ns.name, item)
        if node is not None and node.tree is not None:
            trees.add(node.tree)
    return ResidueScope(events, frozenset(records), frozenset(trees), frozenset(sessions))


def plan_scope(ns: Namespace, planned: Plan) -> ResidueScope:
    return scope_of(
        ns, planned.events, planned.records, planned.sources_kept,
        (shown.session for shown in planned.shown),
    )  # fmt: skip


def receipt_scope(ns: Namespace, found: Receipt) -> ResidueScope:
    return scope_of(
        ns, found.erased.get("events", ()), found.erased.get("records", ()), found.sources_kept,
        (shown.session for shown in found.shown),
    )  # fmt: skip


def _subtree(ns: Namespace, root: str) -> set[str]:
    found = {root}
    stack = [root]
    while stack:
        for child in ns.store.children(ns.name, stack.pop()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _names(text: str | None, subject: str) -> bool:
    return bool(text) and (text == subject or subject in _PARTS.split(text or ""))


def _values(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _values(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _values(item)


def _naming_subject(ns: Namespace, subject: str) -> Iterator[str]:
    """Records one of whose revisions names ``subject`` in its key, scope or a meta value.
    Reads every record of the namespace: a forget by subject is rare and must be complete."""
    if not subject:
        raise InvalidInput("forget subject: the subject id is empty")
    for record_id in ns.store.record_ids(ns.name):
        revisions = ns.store.get_revisions(ns.name, record_id)
        if any(rev.kind == RETRACTION_KIND for rev in revisions):
            continue  # its text about the subject goes with the records it names (SPEC §6)
        if any(
            _names(rev.key, subject) or _names(rev.scope, subject) or subject in _values(rev.meta)
            for rev in revisions
        ):
            yield record_id


def _follow_copies(ns: Namespace, found: Plan) -> None:
    """Add every promoted copy of a record that goes, with what is built on it, until
    nothing new is found: a copy restates the original's text without citing it, so
    ``dependents`` cannot see it, yet forgetting the text must take it too. Each copy is
    found by the ``promote`` audit entry that names it and its original (ids: copy,
    original, anchor), so the cost is what goes, not the namespace."""
    todo = sorted(found.records)
    while todo:
        original = todo.pop()
        for entry in ns.store.audit(ns.name, id=original, op="promote"):
            if len(entry.ids) < 2 or entry.ids[1] != original or entry.ids[0] in found.records:
                continue
            copy = entry.ids[0]
            found.records |= {copy} | dependents(ns, copy)
            todo.append(copy)


def _revision_texts(rev: RevisionNode) -> Iterator[str]:
    yield from (rev.content, rev.kind, rev.key or "", rev.scope or "")
    yield from strings_in(rev.meta)


def _measure(ns: Namespace, found: Plan) -> None:
    """Per table, the rows that go (ids), and the text they hold."""
    store = ns.store
    revisions: list[str] = []
    keys: list[tuple[str, int]] = []
    for event_id in sorted(found.events):
        node = ns.event_node(event_id)
        found.texts.extend((node.content, node.role, *strings_in(node.meta)))
    for record_id in sorted(found.records):
        for rev in store.get_revisions(ns.name, record_id):
            revisions.append(f"{record_id}@{rev.revision}")
            keys.append((record_id, rev.revision))
            found.texts.extend(_revision_texts(rev))
            found.sources_kept.update(ref.target for ref in rev.refs or () if ref.kind != UNKNOWN)
    found.sources_kept -= found.events | found.records
    # ids stay (the tombstone, SPEC §6): a field that is part of one (a meta value naming a
    # record's own id, as the Mem0 mirror's does) is not erased text and is not checked
    ids = "\x00".join(sorted(found.events | found.records | found.sources_kept))
    # a key another record still has is that record's text too: the erase keeps it (SPEC §6)
    names = {rev.key for rid in found.records for rev in store.get_revisions(ns.name, rid)}
    shared = {
        name for name in names
        if name and not set(store.records_with_key(ns.name, name)) <= found.records
    }  # fmt: skip
    found.texts = [
        text for text in found.texts if not (text and text in ids) and text not in shared
    ]
    vectors = store.vectors(ns.name, keys) if keys else {}
    gone = found.events | found.records
    repairs = [
        f"{item.record_id}<-{item.cause}"
        for item in store.repairs(ns.name)
        if item.record_id in gone or item.cause in gone
    ]
    found.erased = {
        "events": tuple(sorted(found.events)),
        "records": tuple(sorted(found.records)),
        "revisions": tuple(revisions),
        "vectors": tuple(f"{r}@{n}" for r, n in sorted(vectors)),
        "repairs": tuple(sorted(repairs)),
    }


def _shown(ns: Namespace, events: set[str], records: set[str]) -> list[Shown]:
    """Deliveries that contained a forgotten record, or whose anchor lies at or below a
    forgotten message (its recent messages may have quoted it)."""
    store = ns.store
    if not events and not records:
        return []
    sessions = dict.fromkeys(e.reason for e in store.audit(ns.name, op="deliver") if e.reason)
    shown: list[Shown] = []
    for session in sessions:
        for delivery in store.deliveries(ns.name, session):
            used = tuple(sorted({r for r, _ in delivery.items if r in records}))
            below = False
            if events and delivery.anchor is not None:
                try:
                    below = not events.isdisjoint(store.path_ids(ns.name, delivery.anchor))
                except NotFoundError:
                    below = delivery.anchor in events
            if used or below:
                shown.append(Shown(session, delivery.seq, delivery.anchor, used, below))
    return shown
