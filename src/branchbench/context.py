"""The context a system hands to the model, cut to one token budget.

A context has two parts so the scorer can tell them apart: ``memory`` (derived lines:
facts, summaries) and ``transcript`` (raw messages). A superseded value in the raw
transcript sits before its correction and the model can read the order; the same value
in the memory section is asserted as current, which is what the stale rate measures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from branchbench.keywords import normalize
from branchbench.tokens import count_tokens

DEFAULT_BUDGET = 1500  # tokens; every system is cut to the same budget

HEADINGS = {
    "zh": (
        "记忆：",
        "对话：",
        {"user": "用户", "assistant": "助手", "system": "系统", "tool": "工具"},
    ),
    "en": (
        "Memory:",
        "Conversation:",
        {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"},
    ),
}


@dataclass(frozen=True)
class Turn:
    """One raw message placed in the context."""

    event_id: str
    role: str
    content: str


@dataclass(frozen=True)
class Context:
    """Memory lines and transcript turns, already within the budget.

    ``asserted`` is the part of each memory line stated as current (None: all of it); a
    line may also report history ("earlier: ..."), which the model can read as such and
    which therefore does not count as stale.
    """

    memory: tuple[str, ...] = ()
    transcript: tuple[Turn, ...] = ()
    language: str = "zh"
    asserted: tuple[str, ...] | None = None

    def memory_text(self) -> str:
        """The memory section alone, one line per record."""
        return "\n".join(f"- {line}" for line in self.memory)

    def asserted_text(self) -> str:
        """What the memory section states as current."""
        lines = self.memory if self.asserted is None else self.asserted
        return "\n".join(f"- {line}" for line in lines)

    def transcript_text(self) -> str:
        """The raw transcript alone, with its role labels."""
        _, _, roles = HEADINGS.get(self.language, HEADINGS["en"])
        return "\n".join(f"{roles.get(t.role, t.role)}: {t.content}" for t in self.transcript)

    def render(self) -> str:
        """The text put in front of the question."""
        mem_head, conv_head, roles = HEADINGS.get(self.language, HEADINGS["en"])
        parts: list[str] = []
        if self.memory:
            parts.append(f"{mem_head}\n{self.memory_text()}")
        if self.transcript:
            lines = "\n".join(f"{roles.get(t.role, t.role)}: {t.content}" for t in self.transcript)
            parts.append(f"{conv_head}\n{lines}")
        return "\n\n".join(parts)

    def tokens(self) -> int:
        """Token count of the rendered context."""
        return count_tokens(self.render())


def _bigrams(text: str) -> set[str]:
    t = normalize(text)
    return {t[i : i + 2] for i in range(len(t) - 1)} or ({t} if t else set())


def rank_by_question(lines: Sequence[str], question: str) -> list[str]:
    """Memory lines most similar to the question first (bigram overlap, stable).

    The retrieval step of an extract-then-retrieve pipeline; deterministic so every run
    of the model-free benchmark gives the same context.
    """
    q = _bigrams(question)
    scored = [(-len(_bigrams(line) & q), i, line) for i, line in enumerate(lines)]
    return [line for _, _, line in sorted(scored)]


def fit(
    memory: Sequence[str],
    transcript: Sequence[Turn],
    budget: int,
    language: str,
    memory_share: float = 0.5,
) -> Context:
    """Keep memory lines in order up to ``memory_share`` of the budget, then the most
    recent transcript turns that fit in what is left; the rendered result never exceeds
    the budget (rendering joins pieces with whitespace, so token counts add up).
    """
    mem_head, conv_head, roles = HEADINGS.get(language, HEADINGS["en"])
    used = count_tokens(mem_head) + count_tokens(conv_head)
    kept: list[str] = []
    cap = int(budget * memory_share)
    for line in memory:
        cost = count_tokens(f"- {line}")
        if used + cost > cap:
            break
        kept.append(line)
        used += cost
    turns: list[Turn] = []
    for turn in reversed(transcript):
        cost = count_tokens(f"{roles.get(turn.role, turn.role)}: {turn.content}")
        if used + cost > budget:
            break
        turns.append(turn)
        used += cost
    return Context(memory=tuple(kept), transcript=tuple(reversed(turns)), language=language)
