"""Citations and blame: from a memory line back to the messages it rests on (SPEC-level prose
in docs/semantics.md, "Citations and blame").

A record's messages are its event sources plus, through each record it cites (at the
revision it pinned), that record's messages: the same effective sources visibility gates
on, listed rather than reduced to a gate. ``blame`` starts from a delivery, which keeps
(record id, revision) pairs only, and reads the rest from the store as it is now: erased
text is never shown again, only the ids of its tombstone.
"""

from __future__ import annotations

from .._core.provenance import EVENT, RECORD, RevisionNode
from .._core.validation import check_id
from ..errors import InvalidInput, NotFoundError
from ..model import ERASED, Blame, BlamedLine, BlamedMessage, Citation, Delivery
from ..search.context import Cite
from .namespace import Namespace

SHORT = 80  # characters of a message or memory blame shows


def shorten(text: str, limit: int = SHORT) -> str:
    """One line of at most ``limit`` characters, ``…`` marking a cut."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _revision(ns: Namespace, record_id: str, revision: int) -> RevisionNode | None:
    revisions = ns.store.get_revisions(ns.name, record_id)
    return revisions[revision - 1] if 1 <= revision <= len(revisions) else None


def source_messages(ns: Namespace, node: RevisionNode) -> tuple[str, ...]:
    """The event ids ``node`` rests on, through the revisions it cites, first seen first.
    A source not (yet) known as an event or record names no message."""
    found: dict[str, None] = {}
    seen: set[tuple[str, int]] = {(node.record_id, node.revision)}
    pending = [node]
    while pending:
        current = pending.pop(0)
        for ref in current.refs or ():
            if ref.kind == EVENT:
                found.setdefault(ref.target, None)
            elif ref.kind == RECORD and ref.revision is not None:
                pinned = (ref.target, ref.revision)
                cited = None if pinned in seen else _revision(ns, *pinned)
                seen.add(pinned)
                if cited is not None:
                    pending.append(cited)
    return tuple(found)


def _trees(ns: Namespace, messages: tuple[str, ...]) -> tuple[str, ...]:
    trees: dict[str, None] = {}
    for event_id in messages:
        node = ns.store.get_event(ns.name, event_id)
        if node is not None and node.tree is not None:
            trees.setdefault(node.tree, None)
    return tuple(trees)


def citer(ns: Namespace) -> Cite:
    """What ``assemble_context`` asks for each memory line it prices in a cited context."""

    def cite(record_id: str, revision: int) -> Citation:
        node = _revision(ns, record_id, revision)
        if node is None:  # the view just returned it: cannot happen inside one transaction
            raise NotFoundError(f"record {record_id!r} has no revision {revision}")
        messages = source_messages(ns, node)
        return Citation(0, record_id, revision, node.sources, messages, _trees(ns, messages))

    return cite


def find_delivery(ns: Namespace, session: str, delivery: int) -> Delivery:
    """The delivery ``delivery`` (its ``seq``) of ``session``; errors name both."""
    check_id(session, "session")
    if isinstance(delivery, bool) or not isinstance(delivery, int):
        raise InvalidInput(f"delivery must be a delivery's seq (an int), got {delivery!r}")
    given = ns.store.deliveries(ns.name, session)
    if not given:
        raise NotFoundError(f"session {session!r} has no deliveries in namespace {ns.name!r}")
    for found in given:
        if found.seq == delivery:
            return found
    raise NotFoundError(f"session {session!r} has no delivery {delivery}")


def blame(ns: Namespace, session: str, delivery: int, line: int | None) -> Blame:
    """A delivered context traced back to its records, their messages and its branch."""
    given = find_delivery(ns, session, delivery)
    numbered = list(enumerate(given.items, 1))
    if line is not None:
        if isinstance(line, bool) or not isinstance(line, int):
            raise InvalidInput(f"line must be a memory line number (an int), got {line!r}")
        if not 1 <= line <= len(numbered):
            raise NotFoundError(
                f"delivery {delivery} of session {session!r} has no memory line {line!r} "
                f"(it has {len(numbered)})"
            )
        numbered = [numbered[line - 1]]
    path: tuple[str, ...] = ()
    tree = None
    if given.anchor is not None:
        anchor = ns.store.get_event(ns.name, given.anchor)
        tree = anchor.tree if anchor is not None else None
        if anchor is not None:
            path = tuple(node.id for node in ns.store.path_events(ns.name, given.anchor))
    on_path = set(path)
    ids = {record_id for _, (record_id, _) in numbered}
    lines = []
    for number, (record_id, revision) in numbered:
        node = _revision(ns, record_id, revision)
        messages = source_messages(ns, node) if node is not None else ()
        ids.update(messages)
        lines.append((number, record_id, revision, node, messages))
    statuses = ns.store.statuses(ns.name, ids)
    blamed = []
    for number, record_id, revision, node, messages in lines:
        status = statuses.get(record_id)
        shown = None if node is None or status == ERASED else shorten(node.content)
        blamed.append(
            BlamedLine(
                line=number,
                record_id=record_id,
                revision=revision,
                kind=node.kind if node is not None else "",
                text=shown,
                status=status,
                sources=node.sources if node is not None else None,
                messages=tuple(_message(ns, m, statuses.get(m), m in on_path) for m in messages),
            )
        )
    return Blame(session, given.seq, given.anchor, given.time, tree, path, tuple(blamed))


def _message(ns: Namespace, event_id: str, status: str | None, on_path: bool) -> BlamedMessage:
    node = ns.store.get_event(ns.name, event_id)
    if node is None:
        return BlamedMessage(event_id, None, "", None, status, on_path)
    text = None if status == ERASED else shorten(node.content)
    return BlamedMessage(event_id, node.tree, node.role, text, status, on_path)
