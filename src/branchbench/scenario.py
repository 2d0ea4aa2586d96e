"""Scenario data: branching dialogues whose messages are listed in arrival order.

A scenario file is JSON (UTF-8, not escaped) under ``scenarios/<split>/<id>.json``:
messages with their parent and the facts an extractor should derive from them, the
anchor (where the conversation is when the probes are asked) and the probes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal, cast

from branchbench.errors import ScenarioError
from branchbench.keywords import contains

SPLITS = ("dev", "test", "en", "long", "invalidation", "spread", "cascade")
# Generated at run time from the public corpora (branchbench.corpusgen), never packaged.
CORPUS_SPLITS = ("locomo", "beam")
ARRIVALS = ("", "abandoned_first", "abandoned_last", "interleaved")
OPERATIONS = (
    "edit_user",
    "regenerate",
    "fork_checkpoint",
    "switch_back",
    "correct_in_branch",
    "invalidation",
    "long_history",
    "late_sibling",
    "two_forks",
    "cascade",  # facts corrected after summaries and profiles restated them
    "multi_fork",  # corpus splits: one conversation forked at several annotated turns
)
PROBE_TYPES = ("leak", "retain", "stale", "retracted")
ROLES = ("user", "assistant", "system", "tool")
FactOp = Literal["assert", "retract"]
RetractScope = Literal["branch", "tree"]


@dataclass(frozen=True)
class Fact:
    """What an extractor should derive from one message.

    ``op="assert"`` states ``value`` under ``key`` (and ``scope``: different scopes never
    compete). ``op="retract"`` is the user's "don't bring this up again" for ``key`` at
    branch or tree scope. ``supersedes`` names fact ids this one explicitly replaces.

    A pipeline (``branchbench.pipeline``) also says what it wrote: ``kind`` (fact, summary,
    profile) and ``sources``, the message and memory ids the output is attributed to
    (empty: the message being ingested alone).
    """

    key: str
    value: str = ""
    scope: str | None = None
    op: FactOp = "assert"
    retract_scope: RetractScope = "branch"
    id: str | None = None
    supersedes: tuple[str, ...] = ()
    kind: str = "fact"
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Message:
    """One node of the conversation tree, as it arrives."""

    id: str
    parent: str | None
    role: str
    content: str
    facts: tuple[Fact, ...] = ()


@dataclass(frozen=True)
class Probe:
    """A question asked at an anchor and the keywords that score it.

    ``leak``: forbidden = a sibling branch's fact. ``retain``: answer keywords must still
    be reachable. ``stale``: forbidden = a value superseded earlier on the same path.
    ``retracted``: forbidden = a value the user retracted. ``aliases`` maps a keyword to
    other spellings that count as it; ``unless`` maps a keyword to longer words that
    contain it without meaning it (see ``branchbench.keywords``).

    A scenario forked at several points (corpus splits) says per probe which ``fork``
    (the kept event where the branches part) the probe is about, the unit a bootstrap
    resamples, and in which ``arrival`` order that fork's siblings came; both "" when the
    scenario is the unit.
    """

    id: str
    type: str
    question: str
    answer: tuple[str, ...]
    forbidden: tuple[str, ...] = ()
    notes: str = ""
    anchor: str | None = None
    asked_after: str | None = None
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unless: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fork: str = ""
    arrival: str = ""

    def hit(self, text: str, keyword: str) -> bool:
        """Whether ``keyword`` (or an alias) occurs in ``text`` by the scorer's rules."""
        return contains(text, keyword, self.aliases, self.unless)


@dataclass(frozen=True)
class Scenario:
    """A branching dialogue with its anchor and probes."""

    id: str
    language: str
    operation: str
    split: str
    title: str
    messages: tuple[Message, ...]
    anchor: str
    probes: tuple[Probe, ...]
    source: str = field(default="", compare=False)
    # how the abandoned branch arrives relative to the kept one (corpus splits: one of
    # ARRIVALS), so results can be reported by order; "" when the scenario does not say
    arrival: str = ""

    def probe_arrival(self, probe: Probe) -> str:
        """The arrival order a probe's branches came in (its own, else the scenario's)."""
        return probe.arrival or self.arrival

    def probe_unit(self, probe: Probe) -> str:
        """What a bootstrap resamples this probe with: its fork, else the scenario."""
        return f"{self.id}/{probe.fork}" if probe.fork else self.id

    def probe_anchor(self, probe: Probe) -> str:
        """The anchor a probe is asked at (its own, else the scenario's)."""
        return probe.anchor or self.anchor

    def asked_after(self, probe: Probe) -> str:
        """The message after whose arrival the probe is asked (default: the last one)."""
        return probe.asked_after or self.messages[-1].id


def _require(raw: Mapping[str, Any], name: str, kind: type, where: str, sid: str) -> Any:
    if name not in raw:
        raise ScenarioError(sid, f"{where}: missing field {name!r}")
    value = raw[name]
    if not isinstance(value, kind):
        raise ScenarioError(sid, f"{where}: field {name!r} must be {kind.__name__}")
    return value


def _strings(raw: Mapping[str, Any], name: str, where: str, sid: str) -> tuple[str, ...]:
    value = raw.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ScenarioError(sid, f"{where}: field {name!r} must be a list of strings")
    return tuple(value)


def _keyword_map(
    raw: Mapping[str, Any], name: str, where: str, sid: str
) -> dict[str, tuple[str, ...]]:
    value = raw.get(name, {})
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v)
        for k, v in value.items()
    ):
        raise ScenarioError(sid, f"{where}: field {name!r} must map keywords to lists of strings")
    return {k: tuple(v) for k, v in value.items()}


def _fact(raw: Any, where: str, sid: str) -> Fact:
    if not isinstance(raw, dict):
        raise ScenarioError(sid, f"{where}: a fact must be an object")
    op = raw.get("op", "assert")
    if op not in ("assert", "retract"):
        raise ScenarioError(sid, f"{where}: fact op {op!r} is not assert or retract")
    scope = raw.get("retract_scope", "branch")
    if scope not in ("branch", "tree"):
        raise ScenarioError(sid, f"{where}: retract_scope {scope!r} is not branch or tree")
    value = raw.get("value", "")
    if op == "assert" and not value:
        raise ScenarioError(sid, f"{where}: an asserted fact needs a value")
    return Fact(
        key=_require(raw, "key", str, where, sid),
        value=value,
        scope=raw.get("scope"),
        op=cast(FactOp, op),
        retract_scope=cast(RetractScope, scope),
        id=raw.get("id"),
        supersedes=_strings(raw, "supersedes", where, sid),
    )


def scenario_from_dict(raw: Any, source: str = "") -> Scenario:
    """Build a scenario from parsed JSON, raising ScenarioError on any schema fault."""
    sid = str(raw.get("id", source or "?")) if isinstance(raw, dict) else (source or "?")
    if not isinstance(raw, dict):
        raise ScenarioError(sid, "a scenario must be a JSON object")
    operation = _require(raw, "operation", str, "scenario", sid)
    if operation not in OPERATIONS:
        raise ScenarioError(sid, f"unknown operation {operation!r}")
    split = _require(raw, "split", str, "scenario", sid)
    if split not in SPLITS + CORPUS_SPLITS:
        raise ScenarioError(sid, f"unknown split {split!r}")
    arrival = raw.get("arrival", "")
    if arrival not in ARRIVALS:
        raise ScenarioError(
            sid, f"unknown arrival {arrival!r}; choose from {', '.join(a for a in ARRIVALS if a)}"
        )
    messages = []
    for i, m in enumerate(_require(raw, "events", list, "scenario", sid)):
        where = f"events[{i}]"
        if not isinstance(m, dict):
            raise ScenarioError(sid, f"{where}: an event must be an object")
        parent = m.get("parent")
        if parent is not None and not isinstance(parent, str):
            raise ScenarioError(sid, f"{where}: parent must be a string or null")
        role = _require(m, "role", str, where, sid)
        if role not in ROLES:
            raise ScenarioError(sid, f"{where}: unknown role {role!r}")
        facts = tuple(_fact(f, f"{where}.facts", sid) for f in m.get("facts", []))
        messages.append(
            Message(
                id=_require(m, "id", str, where, sid),
                parent=parent,
                role=role,
                content=_require(m, "content", str, where, sid),
                facts=facts,
            )
        )
    probes = []
    for i, p in enumerate(_require(raw, "probes", list, "scenario", sid)):
        where = f"probes[{i}]"
        if not isinstance(p, dict):
            raise ScenarioError(sid, f"{where}: a probe must be an object")
        kind = _require(p, "type", str, where, sid)
        if kind not in PROBE_TYPES:
            raise ScenarioError(sid, f"{where}: unknown probe type {kind!r}")
        probe_arrival = p.get("arrival", "")
        if probe_arrival not in ARRIVALS:
            raise ScenarioError(sid, f"{where}: unknown arrival {probe_arrival!r}")
        probes.append(
            Probe(
                id=_require(p, "id", str, where, sid),
                type=kind,
                question=_require(p, "question", str, where, sid),
                answer=_strings(p, "answer", where, sid),
                forbidden=_strings(p, "forbidden", where, sid),
                notes=str(p.get("notes", "")),
                anchor=p.get("anchor"),
                asked_after=p.get("asked_after"),
                aliases=_keyword_map(p, "aliases", where, sid),
                unless=_keyword_map(p, "unless", where, sid),
                fork=str(p.get("fork", "")),
                arrival=probe_arrival,
            )
        )
    return Scenario(
        id=sid,
        language=_require(raw, "language", str, "scenario", sid),
        operation=operation,
        split=split,
        title=str(raw.get("title", "")),
        messages=tuple(messages),
        anchor=_require(raw, "anchor", str, "scenario", sid),
        probes=tuple(probes),
        source=source,
        arrival=arrival,
    )


def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    """The JSON form of a scenario (defaults left out so files stay readable)."""

    def fact(f: Fact) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if f.id:
            out["id"] = f.id
        if f.op != "assert":
            out["op"] = f.op
            out["retract_scope"] = f.retract_scope
        out["key"] = f.key
        if f.value:
            out["value"] = f.value
        if f.scope is not None:
            out["scope"] = f.scope
        if f.supersedes:
            out["supersedes"] = list(f.supersedes)
        return out

    def probe(p: Probe) -> dict[str, Any]:
        out: dict[str, Any] = {"id": p.id, "type": p.type, "question": p.question}
        out["answer"] = list(p.answer)
        out["forbidden"] = list(p.forbidden)
        if p.anchor:
            out["anchor"] = p.anchor
        if p.asked_after:
            out["asked_after"] = p.asked_after
        if p.aliases:
            out["aliases"] = {k: list(v) for k, v in p.aliases.items()}
        if p.unless:
            out["unless"] = {k: list(v) for k, v in p.unless.items()}
        if p.fork:
            out["fork"] = p.fork
        if p.arrival:
            out["arrival"] = p.arrival
        out["notes"] = p.notes
        return out

    return {
        "id": scenario.id,
        "language": scenario.language,
        "operation": scenario.operation,
        "split": scenario.split,
        "title": scenario.title,
        **({"arrival": scenario.arrival} if scenario.arrival else {}),
        "events": [
            {
                "id": m.id,
                "parent": m.parent,
                "role": m.role,
                "content": m.content,
                **({"facts": [fact(f) for f in m.facts]} if m.facts else {}),
            }
            for m in scenario.messages
        ],
        "anchor": scenario.anchor,
        "probes": [probe(p) for p in scenario.probes],
    }


def dump_scenario(scenario: Scenario, path: Path) -> None:
    """Write a scenario as readable UTF-8 JSON."""
    text = json.dumps(scenario_to_dict(scenario), ensure_ascii=False, indent=2)
    path.write_text(text + "\n", encoding="utf-8")


def load_file(path: Path) -> Scenario:
    """Load one scenario file; a JSON syntax error becomes a ScenarioError naming it."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ScenarioError(path.name, f"cannot read scenario file: {e}") from e
    return scenario_from_dict(raw, source=str(path))


def scenarios_root() -> Path:
    """The packaged scenarios directory."""
    return Path(str(resources.files("branchbench") / "scenarios"))


def split_files(split: str, root: Path | None = None) -> list[Path]:
    """The scenario files of a split, sorted by name (none for a corpus split)."""
    if split in CORPUS_SPLITS:
        return []
    if split not in SPLITS:
        choices = ", ".join(SPLITS + CORPUS_SPLITS)
        raise ScenarioError(split, f"unknown split {split!r}; choose from {choices}")
    return sorted((root or scenarios_root()).joinpath(split).glob("*.json"))


def load_split(split: str, root: Path | None = None) -> list[Scenario]:
    """Load every scenario of a split. A corpus split is generated from the corpora
    (``root`` does not apply) and refused unless it matches its pinned digest; absent
    corpora raise ``CorpusUnavailable``."""
    if split in CORPUS_SPLITS:
        from branchbench.corpusgen import load_corpus_split  # generator imports this module

        return load_corpus_split(split)
    return [load_file(p) for p in split_files(split, root)]


class Tree:
    """Parent links of a scenario's messages, for paths and arrival positions."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.parent: dict[str, str | None] = {m.id: m.parent for m in messages}
        self.arrival: dict[str, int] = {m.id: i for i, m in enumerate(messages)}

    def path(self, anchor: str) -> list[str]:
        """Message ids from the root down to the anchor (ancestor-or-self)."""
        out: list[str] = []
        node: str | None = anchor
        seen: set[str] = set()
        while node is not None and node in self.parent and node not in seen:
            seen.add(node)
            out.append(node)
            node = self.parent[node]
        return out[::-1]
