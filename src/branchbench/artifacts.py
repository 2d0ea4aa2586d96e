"""What a system did with the pipeline's derived artifacts (summaries and profiles).

Three checks per probe row, all from what the run already holds:

- **stale artifacts at the anchor**: a memory line holding a summary or profile (the
  pipeline's own, or one a repair rebuilt) that restates a value no longer current on the
  anchor's path (corrected or retracted below it) is stale; the row counts the artifacts
  shown and the stale ones, and the artifacts the pipeline wrote on the path that the
  system shows nowhere (``missing``: hidden as stale, cut by a gate, or dropped);
- **stored**: right after a message is ingested, each summary and profile the pipeline
  produced for it must be in the system: shown at that message when asked for by its
  own text, or held by a system that can say so (``holds``). One that is neither was
  dropped, and a dropped summary is a failure, not a 0% stale rate;
- **raw path in memory**: a memory line that is, verbatim, a message of the anchor's path
  from which the extractor derived nothing is raw history, not memory; a system doing it
  is structural (scored as a bound, not as memory).

An artifact is recognised by its text, so a digest of one fact reads like that fact and
is not counted (``MIN_PARTS``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from branchbench.keywords import normalize
from branchbench.pipeline import fact_line, fold_current
from branchbench.scenario import Fact, Message

ARTIFACT_KINDS = ("summary", "profile")
MIN_PARTS = 2  # a one-fact digest is indistinguishable from the fact line it restates
STORED_BUDGET = 1_000_000  # the stored check asks for everything, not what a budget fits
Entry = tuple[str, str | None]


class Artifacts:
    """The summaries and profiles one pipeline (and any repair) produced in one scenario."""

    def __init__(self) -> None:
        self.parts: dict[str, tuple[Fact, ...]] = {}  # artifact text -> facts it restates
        self.written: list[tuple[str, str, str]] = []  # (message, kind, text) in order

    def add(self, text: str, parts: Sequence[Fact], at: str | None = None, kind: str = "") -> None:
        """Register an artifact; ``at`` the message the pipeline wrote it at."""
        if len(parts) >= MIN_PARTS:
            self.parts[text] = tuple(parts)
            if at is not None:
                self.written.append((at, kind, text))

    def observe(
        self, memory: Sequence[str], path: Sequence[str], current: Mapping[Entry, str]
    ) -> dict[str, int]:
        """Shown, stale and missing artifacts in a memory section at an anchor whose path
        is ``path`` and whose current value per (key, scope) is ``current``."""
        texts = sorted(self.parts, key=len, reverse=True)
        shown: set[str] = set()
        stale = 0
        for line in memory:
            found = next((t for t in texts if t in line), None)
            if found is None:
                continue
            shown.add(found)
            if any(current.get((p.key, p.scope)) != p.value for p in self.parts[found]):
                stale += 1
        on_path = set(path)
        newest: dict[str, str] = {}
        for at, kind, text in self.written:
            if at in on_path:
                newest[kind] = text
        # a newest artifact counts as missing unless it, or a rebuild of it, is shown
        rebuilt = shown - {t for _, _, t in self.written}
        missing = max(0, sum(1 for t in newest.values() if t not in shown) - len(rebuilt))
        return {"shown": len(shown), "stale": stale, "missing": missing}


def current_values(path: Iterable[Message], facts_of: Any) -> dict[Entry, str]:
    """The value current at the end of ``path`` per (key, scope), as a store folds them."""
    writes = [(True, f) for m in path for f in facts_of(m)]
    return {(f.key, f.scope): f.value for f in fold_current(writes)}


def digests(facts: Iterable[Fact]) -> list[Fact]:
    """The summaries and profiles among a message's derived facts."""
    return [f for f in facts if f.kind in ARTIFACT_KINDS and f.op == "assert" and f.id]


def stored(system: Any, message: Message, fact: Fact) -> bool:
    """Whether ``system`` kept ``fact`` (a summary or profile it was just given)."""
    holds = getattr(system, "holds", None)
    if callable(holds) and holds(fact.id):
        return True
    text = fact_line(fact)
    ctx = system.context(message.id, text, STORED_BUDGET)
    return text in ctx.memory_text()


def raw_path_lines(memory: Sequence[str], path: Sequence[Message], facts_of: Any) -> int:
    """Memory lines that are, verbatim, a path message with no fact derived from it."""
    raw = {normalize(m.content) for m in path if m.content.strip() and not facts_of(m)}
    return sum(1 for line in memory if normalize(line) in raw)


def parts_of(fact: Fact, components: Mapping[str, tuple[Fact, ...]]) -> tuple[Fact, ...]:
    """The facts an artifact the pipeline wrote restates."""
    return components.get(fact.id or "", ())
