"""``forget``: erase a message, a branch, a conversation or a subject, and say what went.

A plan is read first, inside the call's transaction: the messages the target names, every
record built on them (SPEC §6 ``dependents``), what those occupy per table, the deliveries
that showed any of it, and the text itself (held in this process only long enough to
fingerprint it). The erase is ``corrections.erase`` on each, so every rule of SPEC §6 holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from ..errors import InvalidInput, NotFoundError
from ..model import ERASED, RETRACTION_KIND
from ..provenance import UNKNOWN, RevisionNode
from ..receipt import (
    FORGET_KINDS,
    RECEIPT_VERSION,
    ByteCheck,
    Receipt,
    Shown,
    digest_of,
    receipt_hash,
    strings_in,
    text_fingerprints,
)
from .corrections import erase
from .dependents import dependents
from .namespace import Namespace

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


def mark(ns: Namespace, target: str, planned: Plan, content_hash: str) -> None:
    """The audit entry that keeps the receipt's hash and names the sessions that had been
    shown what went (``audit(id=session)`` finds it)."""
    sessions = sorted({shown.session for shown in planned.shown})
    ns.audit("forget", (target, *sessions), reason=content_hash)


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
    """Add every promoted copy (``meta["copied_from"]``) of a record that goes, with what is
    built on it, until nothing new is found: a copy restates the original's text without
    citing it, so ``dependents`` cannot see it, yet forgetting the text must take it too.
    Reads every record's revisions once, only when something is promoted in the namespace."""
    if not found.records:
        return
    copies: dict[str, set[str]] = {}
    for record_id in ns.store.record_ids(ns.name):
        for rev in ns.store.get_revisions(ns.name, record_id):
            origin = rev.meta.get("copied_from") if isinstance(rev.meta, dict) else None
            if isinstance(origin, dict) and isinstance(origin.get("id"), str):
                copies.setdefault(origin["id"], set()).add(record_id)
    if not copies:
        return
    todo = sorted(found.records)
    while todo:
        for copy in sorted(copies.get(todo.pop(), set()) - found.records):
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
    found.texts = [text for text in found.texts if not (text and text in ids)]
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
