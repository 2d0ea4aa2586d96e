"""Keeping every revision's gate true as the missing pieces arrive (SPEC §2, §7).

Sources are resolved when a revision is written: to an event, to a record's revision
(pinned), or left unknown. Later arrivals change that: an event whose ancestry completes
re-gates the revisions waiting on it; a record or revision with an awaited name pins the
references to it. A gate change then flows on to every revision that cites the changed one,
so a gate always equals the one its effective sources would give from scratch.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from ..errors import CycleError
from .provenance import (
    EVENT,
    RECORD,
    UNKNOWN,
    Gate,
    RevisionNode,
    SourceRef,
    compute_gate,
    parse_pin,
)
from .topology import EventNode

RevisionKey = tuple[str, int]


class ResolutionStore(Protocol):
    """The part of ``branchmem.store.base.Store`` that resolution reads and writes."""

    def get_event(self, namespace: str, event_id: str) -> EventNode | None: ...
    def get_revisions(self, namespace: str, record_id: str) -> list[RevisionNode]: ...
    def put_revision(self, namespace: str, node: RevisionNode) -> None: ...
    def citing(self, namespace: str, target: str) -> list[RevisionKey]: ...
    def pending_on_any(self, namespace: str, event_ids: Collection[str]) -> list[RevisionKey]: ...
    def citing_any(
        self, namespace: str, targets: Collection[str]
    ) -> list[tuple[str, RevisionKey]]: ...


def names_revision(ref: SourceRef, record_id: str, number: int) -> bool:
    """Does an unresolved reference name this (just written) revision?"""
    if ref.kind != UNKNOWN:
        return False
    if ref.text == record_id:  # an unpinned name pins to the revision that first exists
        return number == 1
    return ref.explicit_pin and ref.target == record_id and ref.revision == number


@dataclass(frozen=True)
class Resolution:
    """Source resolution and gate upkeep for one namespace of one store."""

    store: ResolutionStore
    namespace: str

    def lookup(self, event_id: str) -> EventNode | None:
        return self.store.get_event(self.namespace, event_id)

    def revision(self, key: RevisionKey) -> RevisionNode:
        return self.store.get_revisions(self.namespace, key[0])[key[1] - 1]

    def refs(self, sources: tuple[str, ...] | None) -> tuple[SourceRef, ...] | None:
        """Resolve what a caller wrote as sources (None: a legacy record)."""
        if sources is None:
            return None
        return tuple(self.ref(text) for text in sources)

    def ref(self, text: str) -> SourceRef:
        if self.lookup(text) is not None:
            return SourceRef(text, EVENT, text)
        revisions = self.store.get_revisions(self.namespace, text)
        if revisions:
            return SourceRef(text, RECORD, text, revisions[-1].revision)
        pin = parse_pin(text)
        if pin is not None:
            record_id, number = pin
            if len(self.store.get_revisions(self.namespace, record_id)) >= number:
                return SourceRef(text, RECORD, record_id, number, explicit_pin=True)
            return SourceRef(text, UNKNOWN, record_id, number, explicit_pin=True)
        return SourceRef(text, UNKNOWN, text)

    def gate(self, refs: tuple[SourceRef, ...] | None) -> Gate:
        def revision_gate(record_id: str, number: int) -> Gate | None:
            revisions = self.store.get_revisions(self.namespace, record_id)
            return revisions[number - 1].gate if len(revisions) >= number else None

        return compute_gate(refs, self.lookup, revision_gate)

    def check_cycle(self, record_id: str, refs: tuple[SourceRef, ...] | None) -> None:
        """Records may not be built, even transitively, on themselves."""
        stack = [ref.target for ref in refs or () if ref.kind != EVENT]
        seen: set[str] = set()
        while stack:
            target = stack.pop()
            if target == record_id:
                raise CycleError(f"record {record_id!r} would be built on itself")
            if target in seen:
                continue
            seen.add(target)
            for revision in self.store.get_revisions(self.namespace, target):
                stack.extend(ref.target for ref in revision.refs or () if ref.kind != EVENT)

    def record_arrived(self, record_id: str, number: int) -> bool:
        """Pin references that named this record before it (or this revision) existed;
        whether any revision names it."""
        changed: list[RevisionKey] = []
        citing = self.store.citing(self.namespace, record_id)
        for key in citing:
            node = self.revision(key)
            assert node.refs is not None
            refs = tuple(
                SourceRef(ref.text, RECORD, record_id, number, ref.explicit_pin)
                if names_revision(ref, record_id, number)
                else ref
                for ref in node.refs
            )
            if refs != node.refs:
                self.store.put_revision(self.namespace, replace(node, refs=refs))
                changed.append(key)
        self.regate(changed)
        return bool(citing)

    def events_arrived(self, event_ids: list[str]) -> bool:
        """Late topology: resolve references to new events and re-gate waiting revisions;
        whether any revision waited for them or named them."""
        keys: list[RevisionKey] = list(self.store.pending_on_any(self.namespace, event_ids))
        for event_id, key in self.store.citing_any(self.namespace, event_ids):
            node = self.revision(key)
            assert node.refs is not None
            refs = tuple(
                SourceRef(ref.text, EVENT, ref.text)
                if ref.kind == UNKNOWN and ref.text == event_id
                else ref
                for ref in node.refs
            )
            if refs != node.refs:
                self.store.put_revision(self.namespace, replace(node, refs=refs))
            keys.append(key)
        self.regate(keys)
        return bool(keys)

    def regate(self, keys: Iterable[RevisionKey]) -> None:
        """Recompute gates and push every change on to the revisions that cite it."""
        work = list(dict.fromkeys(keys))
        while work:
            record_id, number = work.pop(0)
            node = self.revision((record_id, number))
            gate = self.gate(node.refs)
            if gate == node.gate:
                continue
            self.store.put_revision(self.namespace, replace(node, gate=gate))
            for key in self.store.citing(self.namespace, record_id):
                if any(
                    ref.kind == RECORD and ref.target == record_id and ref.revision == number
                    for ref in self.revision(key).refs or ()
                ):
                    work.append(key)
