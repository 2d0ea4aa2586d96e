"""A deliberately naive reference implementation of SPEC §2–§5 (the oracle of SPEC §8).

Nothing here is clever: paths are walked to the root on every question, effective sources
are expanded in full, and §5 is applied by brute force over every record. It shares no code
with the engine beyond the reason names, so agreement between the two means something.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from branchmem.errors import ConflictError, CycleError, ErasedError, InvalidInput, NotFoundError

PIN = re.compile(r"^(.+)@([1-9][0-9]*)$")


@dataclass
class OEvent:
    id: str
    parent: str | None
    tree: str | None  # as given
    role: str
    content: str


@dataclass
class ORevision:
    record_id: str
    number: int
    kind: str
    sources: list[str] | None
    resolved: list[tuple[str, str, int]]  # (kind, id, revision) kind: event|record|unknown
    key: str | None
    scope: str | None
    seq: int


@dataclass
class ORetraction:
    scope: str
    targets: tuple[str, ...]
    key: str | None
    key_scope: str | None
    seq: int


@dataclass
class Oracle:
    events: dict[str, OEvent] = field(default_factory=dict)
    records: dict[str, list[ORevision]] = field(default_factory=dict)
    retractions: dict[str, ORetraction] = field(default_factory=dict)
    supersedes: list[tuple[str, str]] = field(default_factory=list)
    status: dict[str, str] = field(default_factory=dict)
    heads: dict[str, str] = field(default_factory=dict)
    redacted: set[str] = field(default_factory=set)  # retractions whose text an erase took
    seq: int = 0
    # when each change without a seq of its own happened (for as_of): the seq its call took
    supersede_seq: dict[tuple[str, str], int] = field(default_factory=dict)
    status_log: list[tuple[int, str, str | None]] = field(default_factory=list)
    head_log: list[tuple[int, str, str]] = field(default_factory=list)
    # set on a copy ``at(seq)`` made: every revision ever written, which sources still expand
    # through (where events and sources lie is read as known now)
    provenance: dict[str, list[ORevision]] | None = None

    # -- topology ----------------------------------------------------------------------
    def chain(self, event_id: str) -> list[str]:
        """Known ancestors-or-self, deepest first (memoised until the next event arrives)."""
        cache = self.__dict__.setdefault("_chains", {})
        if event_id not in cache:
            cache[event_id] = self._walk(event_id)
        return list(cache[event_id])

    def _walk(self, event_id: str) -> list[str]:
        out: list[str] = []
        current: str | None = event_id
        while current is not None and current in self.events:
            out.append(current)
            current = self.events[current].parent
        return out

    def attached(self, event_id: str) -> bool:
        top = self.chain(event_id)[-1]
        return self.events[top].parent is None

    def tree_of(self, event_id: str) -> str | None:
        chain = self.chain(event_id)
        if self.events[chain[-1]].parent is None:
            root = self.events[chain[-1]]
            return root.tree or root.id
        for item in chain:
            if self.events[item].tree is not None:
                return self.events[item].tree
        return None

    def add_event(self, spec: dict[str, Any]) -> None:
        event = OEvent(
            spec["id"], spec.get("parent"), spec.get("tree"), spec.get("role", "user"),
            spec.get("content", ""),
        )  # fmt: skip
        if event.id in self.records:
            raise ConflictError(event.id)
        if event.parent == event.id:
            raise CycleError(event.id)
        old = self.events.get(event.id)
        if old is not None and self.status.get(event.id) == "erased":
            if old.parent != event.parent:
                raise ConflictError(event.id)
            return
        if old is not None:
            same = (old.parent, old.role, old.content) == (event.parent, event.role, event.content)
            if not same or (event.tree is not None and event.tree != self.tree_of(event.id)):
                raise ConflictError(event.id)
            return
        self.events[event.id] = event
        self.__dict__["_chains"] = {}
        try:
            seen: set[str] = set()
            current: str | None = event.id
            while current is not None and current in self.events:
                if current in seen:
                    raise CycleError(event.id)
                seen.add(current)
                current = self.events[current].parent
            # every explicit tree must agree with every explicit tree above it
            for item in self.events:
                explicit = [self.events[c].tree for c in self.chain(item) if self.events[c].tree]
                chain = self.chain(item)
                if self.events[chain[-1]].parent is None and not self.events[chain[-1]].tree:
                    explicit.append(chain[-1])
                if len(set(explicit)) > 1:
                    raise ConflictError(event.id)
        except Exception:
            del self.events[event.id]
            self.__dict__["_chains"] = {}
            raise
        self.seq += 1
        self.resolve_waiting()

    # -- records -----------------------------------------------------------------------
    def resolve(self, text: str) -> tuple[str, str, int]:
        if text in self.events:
            return ("event", text, 0)
        if text in self.records:
            return ("record", text, len(self.records[text]))
        pin = PIN.match(text)
        if pin and len(self.records.get(pin.group(1), [])) >= int(pin.group(2)):
            return ("record", pin.group(1), int(pin.group(2)))
        return ("unknown", text, 0)

    def resolve_waiting(self) -> None:
        for revisions in self.records.values():
            for revision in revisions:
                for index, (kind, text, _) in enumerate(revision.resolved):
                    if kind != "unknown":
                        continue
                    found = self.resolve(text)
                    if found[0] == "record" and found[1] == text:
                        found = ("record", text, 1)  # an unpinned name pins to revision 1
                    revision.resolved[index] = found

    def record_targets(self, record_id: str) -> set[str]:
        out: set[str] = set()
        for revision in self.records.get(record_id, []):
            for kind, target, _ in revision.resolved:
                if kind == "record":
                    out.add(target)
                elif kind == "unknown":
                    pin = PIN.match(target)
                    out.add(pin.group(1) if pin else target)
        return out

    def builds_on(self, record_id: str, target: str) -> bool:
        stack, seen = [target], set()
        while stack:
            current = stack.pop()
            if current == record_id:
                return True
            if current not in seen:
                seen.add(current)
                stack.extend(self.record_targets(current))
        return False

    def write_revision(
        self, record_id: str, kind: str, sources: list[str] | None, key: str | None,
        scope: str | None,
    ) -> ORevision:  # fmt: skip
        resolved = [self.resolve(s) for s in sources] if sources is not None else []
        probe = ORevision(record_id, 0, kind, sources, resolved, key, scope, 0)
        for kind_, target, _ in resolved:
            pinned = PIN.match(target)
            name = target if kind_ != "unknown" or pinned is None else pinned[1]
            if kind_ != "event" and (name == record_id or self.builds_on(record_id, name)):
                raise CycleError(record_id)
        revisions = self.records.setdefault(record_id, [])
        self.seq += 1
        probe.number = len(revisions) + 1
        probe.seq = self.seq
        revisions.append(probe)
        self.seq += 1  # the audit entry
        self.resolve_waiting()
        return probe

    def add_record(
        self, record_id: str, sources: list[str] | None, key: str | None = None,
        scope: str | None = None, kind: str = "fact", supersedes: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        if record_id in self.events:
            raise ConflictError(record_id)
        if record_id in self.records and self.status.get(record_id) == "erased":
            raise ErasedError(record_id)
        if record_id in self.records:
            first = self.records[record_id][0]
            if (first.sources, first.kind, first.key, first.scope) == (sources, kind, key, scope):
                return
            raise ConflictError(record_id)
        self.write_revision(record_id, kind, sources, key, scope)
        for old in supersedes:
            self.supersede(record_id, old)

    def live(self, record_id: str) -> None:
        """The checks every call naming an existing record makes."""
        if record_id not in self.records:
            raise NotFoundError(record_id)
        if self.status.get(record_id) == "erased":
            raise ErasedError(record_id)

    def revise(self, record_id: str, sources: list[str] | None) -> None:
        self.live(record_id)
        first = self.records[record_id][0]
        if first.kind == "retraction":
            raise InvalidInput(record_id)
        self.write_revision(record_id, first.kind, sources, first.key, first.scope)

    def supersede(self, new: str, old: str) -> None:
        self.live(new)
        self.live(old)
        if new == old:
            raise CycleError(new)
        stack, seen = [old], set()
        while stack:
            current = stack.pop()
            if current == new:
                raise CycleError(new)
            if current not in seen:
                seen.add(current)
                stack.extend(o for n, o in self.supersedes if n == current)
        if (new, old) not in self.supersedes:
            self.supersedes.append((new, old))
            self.supersede_seq[(new, old)] = self.seq + 1
        self.seq += 1

    def retract(
        self, record_id: str, sources: list[str] | None, targets: tuple[str, ...],
        key: str | None, key_scope: str | None, scope: str, refuse_unplaced: bool = True,
    ) -> None:  # fmt: skip
        """``refuse_unplaced=False`` replays one written before a branch-scope retraction
        needed sources (stored data stays valid; only new ones are refused)."""
        if refuse_unplaced and scope == "branch" and sources == []:  # acts on no branch
            raise InvalidInput(record_id)
        for target in targets:
            self.live(target)
            if self.records[target][0].kind == "retraction":
                raise InvalidInput(target)
        if record_id in self.records or record_id in self.events:
            raise ConflictError(record_id)
        revision = self.write_revision(record_id, "retraction", sources, None, None)
        self.retractions[record_id] = ORetraction(scope, targets, key, key_scope, revision.seq)
        self.seq += 1

    def withdraw(self, item: str) -> None:
        if item not in self.events and item not in self.records:
            raise NotFoundError(item)
        if self.status.get(item) == "erased":
            raise ErasedError(item)
        self.status[item] = "withdrawn"
        self.seq += 1
        self.status_log.append((self.seq, item, "withdrawn"))

    def restore(self, item: str) -> None:
        if item not in self.events and item not in self.records:
            raise NotFoundError(item)
        if self.status.get(item) == "erased":
            raise ErasedError(item)
        if self.status.pop(item, None) is not None:
            self.seq += 1
            self.status_log.append((self.seq, item, None))

    def names(self, revision: ORevision) -> set[str]:
        """Every id a revision's sources name, resolved or not (what dependents follow)."""
        found: set[str] = set(revision.sources or ())
        for kind, target, _ in revision.resolved:
            found.add(target)
            pin = PIN.match(target)
            if kind == "unknown" and pin:
                found.add(pin.group(1))
        return found

    def dependents(self, item: str) -> set[str]:
        found: set[str] = set()
        stack = [item]
        while stack:
            current = stack.pop()
            for record_id, revisions in self.records.items():
                if record_id not in found and any(current in self.names(r) for r in revisions):
                    found.add(record_id)
                    stack.append(record_id)
        found.discard(item)
        return found

    def erase(self, item: str) -> None:
        if item not in self.events and item not in self.records:
            raise NotFoundError(item)
        if self.status.get(item) == "erased":
            return
        gone = {g for g in {item} | self.dependents(item) if self.status.get(g) != "erased"}
        for erased in gone:
            self.status[erased] = "erased"
        # Text about the erased goes too (SPEC §6: no byte of it is left): a retraction that
        # targets an erased record or retracts one of its keys loses its reason (``redacted``),
        # and a key that only erased records held is forgotten, so it retracts nothing more.
        keys = {rev.key for rid in gone for rev in self.records.get(rid, ()) if rev.key}
        surviving = {
            rev.key
            for rid, revisions in self.records.items()
            if self.status.get(rid) != "erased"
            for rev in revisions
            if rev.key
        }
        for rid, node in self.retractions.items():
            if gone & set(node.targets) or node.key in keys:
                self.redacted.add(rid)
            if node.key is not None and node.key in keys - surviving:
                node.key = node.key_scope = None
        self.seq += 1

    def set_head(self, event_id: str) -> None:
        tree = self.tree_of(event_id)
        if tree is None:
            raise InvalidInput(event_id)
        self.heads[tree] = event_id
        self.seq += 1
        self.head_log.append((self.seq, tree, event_id))

    # -- as of -------------------------------------------------------------------------
    def at(self, seq: int) -> Oracle:
        """The memory as it stood once everything numbered up to ``seq`` had happened
        (docs/semantics.md "As of"): revisions (so records and retractions) written later
        are absent, supersedes, withdrawals, restores and head moves made later undone;
        events and where they lie are as known now, and an erased item is erased at every
        point. A copy: decide on it as on the present."""
        withdrawn: set[str] = set()
        for when, item, value in self.status_log:  # in the order they happened
            if when <= seq and value is None:
                withdrawn.discard(item)
            elif when <= seq:
                withdrawn.add(item)
        status = {item: "withdrawn" for item in withdrawn}
        status.update({item: value for item, value in self.status.items() if value == "erased"})
        heads: dict[str, str] = {}
        for when, tree, event_id in self.head_log:
            if when <= seq:
                heads[tree] = event_id
        records = {
            rid: [r for r in revisions if r.seq <= seq] for rid, revisions in self.records.items()
        }
        return Oracle(
            events=self.events,
            records={rid: revisions for rid, revisions in records.items() if revisions},
            retractions={rid: n for rid, n in self.retractions.items() if n.seq <= seq},
            supersedes=[p for p in self.supersedes if self.supersede_seq[p] <= seq],
            status=status,
            heads=heads,
            redacted=self.redacted,
            seq=seq,
            provenance=self.records,
        )

    # -- effective sources -------------------------------------------------------------
    def effective(self, revision: ORevision) -> tuple[set[str], set[str], bool]:
        """(effective source events, unknown source texts, legacy?)"""
        if revision.sources is None:
            return set(), set(), True
        events: set[str] = set()
        unknown: set[str] = set()
        legacy = False
        for kind, target, number in revision.resolved:
            if kind == "event":
                events.add(target)
            elif kind == "record":
                every = self.records if self.provenance is None else self.provenance
                cited = every[target][number - 1]
                e, u, lg = self.effective(cited)
                events |= e
                unknown |= u
                legacy = legacy or lg
            else:
                unknown.add(target)
        return events, unknown, legacy

    # -- decisions ---------------------------------------------------------------------
    def view(self, anchor: str | None, cross_tree: bool) -> dict[str | None, list[str]]:
        """tree -> path (root/gap first). The anchor's tree maps to the anchor."""
        if anchor is None:
            return {}
        paths = {self.tree_of(anchor): list(reversed(self.chain(anchor)))}
        if cross_tree:
            for tree, head in self.heads.items():
                if tree not in paths:
                    paths[tree] = list(reversed(self.chain(head)))
        return paths

    def source_status(self, source: str, paths: dict[str | None, list[str]], main_tree: Any) -> str:
        partial = [path for path in paths.values() if not self.attached(path[-1])]
        if any(source in path for path in partial):
            return "on"
        if any(set(self.chain(source)) & set(path) for path in partial):
            return "off_path"
        tree = self.tree_of(source)
        if tree is not None and tree in paths:
            path = paths[tree]
            if self.attached(path[-1]) and self.attached(source):
                return "on" if source in path else "off_path"
            return "detached"
        if tree is None or main_tree is None:
            return "detached"
        return "no_view"

    def consistent(self, events: set[str]) -> bool:
        attached = [e for e in events if self.attached(e)]
        by_tree: dict[str | None, list[str]] = {}
        for e in attached:
            by_tree.setdefault(self.tree_of(e), []).append(e)
        for members in by_tree.values():
            deepest = max(members, key=lambda e: len(self.chain(e)))
            if any(m not in self.chain(deepest) for m in members):
                return False
        return True

    def gate_reason(self, revision: ORevision, anchor: str | None, cross: bool, mode: str) -> str:
        if anchor is None:
            return "visible" if mode == "compat" else "no_anchor"
        events, unknown, legacy = self.effective(revision)
        if not self.consistent(events):
            return "inconsistent_sources"
        paths = self.view(anchor, cross)
        main_tree = self.tree_of(anchor)
        statuses = {self.source_status(e, paths, main_tree) for e in events}
        if "off_path" in statuses:
            return "off_path"
        if "no_view" in statuses:
            return "no_view"
        if mode == "strict":
            if legacy:
                return "legacy"
            if unknown:
                return "unknown_source"
            if "detached" in statuses:
                return "detached"
        return "visible"

    def position(self, revision: ORevision, anchor: str | None) -> tuple[int, int, int]:
        if anchor is None:
            return (0, 0, revision.seq)
        path = list(reversed(self.chain(anchor)))
        events, _, _ = self.effective(revision)
        best = max((path.index(e) for e in events if e in path), default=-1)
        return (1, best, revision.seq) if best >= 0 else (0, 0, revision.seq)

    def decide_all(
        self, anchor: str | None, *, mode: str, cross_tree: bool = False
    ) -> dict[str, tuple[str, dict[str, bool]]]:
        """record id -> (reason, flags) for every record."""
        out: dict[str, tuple[str, dict[str, bool]]] = {}
        shown: dict[str, ORevision] = {}
        for record_id, revisions in self.records.items():
            if record_id in self.status:
                out[record_id] = (self.status[record_id], {})
                continue
            passing = [
                r for r in revisions if self.gate_reason(r, anchor, cross_tree, mode) == "visible"
            ]
            if passing:
                shown[record_id] = passing[-1]
            else:
                out[record_id] = (self.gate_reason(revisions[-1], anchor, cross_tree, mode), {})

        def pos(record_id: str) -> tuple[int, int, int]:
            return self.position(shown[record_id], anchor)

        active = [
            (rid, node)
            for rid, node in self.retractions.items()
            if rid not in self.status and (node.scope == "tree" or rid in shown)
        ]
        retracted: set[str] = set()
        for record_id, revision in shown.items():
            if revision.kind == "retraction":
                continue
            for rid, node in active:
                covers = record_id in node.targets or (
                    node.key is not None
                    and revision.key == node.key
                    and revision.scope == node.key_scope
                )
                if not covers:
                    continue
                if node.scope == "tree" and revision.seq < node.seq:
                    retracted.add(record_id)
                if node.scope == "branch" and pos(record_id) <= pos(rid):
                    retracted.add(record_id)
        explicit = {old for new, old in self.supersedes if new in shown and old in shown}
        superseded = set(explicit)
        for record_id, revision in shown.items():
            if revision.key is None or revision.kind == "retraction":
                continue
            if record_id in retracted or record_id in explicit:
                continue
            rivals = [
                other
                for other, rev in shown.items()
                if rev.key == revision.key
                and rev.scope == revision.scope
                and rev.kind != "retraction"
                and other not in retracted
                and other not in explicit
            ]
            if any(pos(other) > pos(record_id) for other in rivals):
                superseded.add(record_id)

        def stale(record_id: str) -> bool:
            revision = shown[record_id]
            for kind, target, number in revision.resolved:
                if kind == "event" and target in self.status:
                    return True
                if kind == "record" and (
                    target not in shown
                    or shown[target].number != number
                    or target in retracted
                    or target in superseded
                    or stale(target)
                ):
                    return True
            return False

        for record_id in shown:
            flags = {
                "retracted": record_id in retracted,
                "superseded": record_id in superseded,
                "stale": stale(record_id),
            }
            reason = (
                "retracted"
                if flags["retracted"]
                else "superseded"
                if flags["superseded"]
                else "stale"
                if flags["stale"]
                else "visible"
            )
            out[record_id] = (reason, flags)
        return out

    @staticmethod
    def returned(
        decision: tuple[str, dict[str, bool]], include_superseded: bool, include_stale: bool
    ) -> bool:
        reason, flags = decision
        if reason not in ("visible", "superseded", "stale") or flags.get("retracted"):
            return False
        return (include_superseded or not flags["superseded"]) and (
            include_stale or not flags["stale"]
        )

    # -- diff: what two anchors disagree on (naive: both views decided in full) ---------
    def shown_number(self, record_id: str, anchor: str | None, cross: bool, mode: str) -> int:
        """The revision a view shows: the highest that passes the rule (0: none does)."""
        passing = [
            r.number
            for r in self.records[record_id]
            if self.gate_reason(r, anchor, cross, mode) == "visible"
        ]
        return passing[-1] if passing else 0

    def off_path_sources(
        self, record_id: str, anchor: str, cross: bool
    ) -> set[tuple[str, str | None]]:
        """(source, fork) for every effective source of the record's latest revision known to
        lie off the view's paths; fork: the source's deepest ancestor on the anchor's path
        (semantics: where the anchor's path and the source's part) or, in a cross-tree view
        whose partial paths the source meets, on one of them (precision 6: where they meet).
        Both are listed when they differ; the engine names one of them."""
        events, _, _ = self.effective(self.records[record_id][-1])
        paths = self.view(anchor, cross)
        on_paths = {event_id for path in paths.values() for event_id in path}
        on_anchor_path = set(paths.get(self.tree_of(anchor), []))
        main_tree = self.tree_of(anchor)
        found: set[tuple[str, str | None]] = set()
        for event_id in events:
            if self.source_status(event_id, paths, main_tree) == "off_path":
                for where in (on_paths, on_anchor_path):
                    fork = next((e for e in self.chain(event_id) if e in where), None)
                    found.add((event_id, fork))
        return found

    def diff(
        self, anchor_a: str, anchor_b: str, *, mode: str, cross_tree: bool = False,
        include_superseded: bool = False, include_stale: bool = False,
    ) -> dict[str, Any]:  # fmt: skip
        """``only_a``/``only_b``: record id -> (revision shown, the other anchor's reason,
        the revision shown there when it returns the record too, else None); ``keys``:
        (scope, key) -> ((id, revision) or None at a, the same at b), where they differ."""
        decided: dict[str, dict[str, tuple[str, dict[str, bool]]]] = {}
        returned: dict[str, dict[str, int]] = {}
        for anchor in (anchor_a, anchor_b):
            decided[anchor] = self.decide_all(anchor, mode=mode, cross_tree=cross_tree)
            returned[anchor] = {
                record_id: self.shown_number(record_id, anchor, cross_tree, mode)
                for record_id, decision in decided[anchor].items()
                if self.returned(decision, include_superseded, include_stale)
            }
        sides: dict[str, dict[str, tuple[int, str, int | None]]] = {}
        for name, here, there in (("only_a", anchor_a, anchor_b), ("only_b", anchor_b, anchor_a)):
            sides[name] = {}
            for record_id, number in returned[here].items():
                other = returned[there].get(record_id)
                if other is None:
                    sides[name][record_id] = (number, decided[there][record_id][0], None)
                elif other != number:
                    sides[name][record_id] = (number, "revised", other)
        currents: dict[str, dict[tuple[str | None, str], tuple[str, int]]] = {}
        for anchor in (anchor_a, anchor_b):
            ranked: dict[tuple[str | None, str], tuple[tuple[int, int, int], str, int]] = {}
            for record_id, decision in decided[anchor].items():
                if not self.returned(decision, False, False):
                    continue
                number = self.shown_number(record_id, anchor, cross_tree, mode)
                shown = self.records[record_id][number - 1]
                if shown.key is None:
                    continue
                entry = (self.position(shown, anchor), record_id, number)
                group = (shown.scope, shown.key)
                if group not in ranked or entry[:2] > ranked[group][:2]:
                    ranked[group] = entry
            currents[anchor] = {g: (rid, n) for g, (_, rid, n) in ranked.items()}
        keys = {
            group: (currents[anchor_a].get(group), currents[anchor_b].get(group))
            for group in currents[anchor_a].keys() | currents[anchor_b].keys()
            if currents[anchor_a].get(group) != currents[anchor_b].get(group)
        }
        return {**sides, "keys": keys}
