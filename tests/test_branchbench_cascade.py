"""The correction cascade: digests go stale and are repaired; drops and raw memory fail."""

from __future__ import annotations

from collections.abc import Sequence

from branchbench.context import Context, fit
from branchbench.extract import OracleExtractor
from branchbench.pipeline import Cadence, Integration
from branchbench.runner import context_rows
from branchbench.scenario import Fact, Message, load_split
from branchbench.score import context_rates
from branchbench.systems.base import Conversation, Setup
from branchbench.systems.gated import Branchmem


def _rows(factory: object, repair: bool = False, mode: str = "summary") -> list[dict]:
    scenario = load_split("cascade")[0]
    extracted = {m.id: OracleExtractor().extract(m) for m in scenario.messages}
    return context_rows(
        scenario, "x", factory, extracted, 1500, pipeline=mode,  # type: ignore[arg-type]
        cadence=Cadence(summary_every=8, profile_every=8), repair=repair,
    )  # fmt: skip


def test_branchmem_summaries_go_stale_and_repair_rebuilds_them() -> None:
    off = _rows(Branchmem)
    on = _rows(Branchmem, repair=True)
    assert sum(r["artifacts"]["missing"] for r in off) > 0  # hidden as stale
    assert all(r["repair"] is None for r in off)
    assert sum(r["artifacts"]["missing"] for r in on) == 0
    assert sum(r["repair"]["rebuilt"] for r in on) > 0
    assert sum(r["artifacts"]["stale"] for r in on) == 0
    assert sum(r["artifacts"]["shown"] for r in on) > sum(r["artifacts"]["shown"] for r in off)
    assert not any(r["dropped"] for r in off + on)


class _Dropper:
    """Keeps facts, silently drops every summary and profile it is given."""

    name = "dropper"
    integration = Integration("message", "every memory held")

    def __init__(self, setup: Setup) -> None:
        self.language = setup.language
        self.conversation = Conversation()
        self.lines: list[str] = []

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.conversation.add(message)
        self.lines += [f.value for f in facts if f.kind == "fact" and f.op == "assert"]

    def context(self, anchor: str, question: str, budget: int) -> Context:
        return fit(self.lines, self.conversation.path_turns(anchor), budget, self.language)

    def close(self) -> None:
        pass


class _RawMemory(_Dropper):
    """Puts the raw path messages in its memory section."""

    def context(self, anchor: str, question: str, budget: int) -> Context:
        raw = [m.content for m in self.conversation.path(anchor)]
        return fit(raw, self.conversation.path_turns(anchor), budget, self.language)


def test_a_dropped_summary_fails_the_stored_check_instead_of_scoring_zero_stale() -> None:
    rows = _rows(_Dropper)
    assert rows[-1]["dropped"]
    rates = context_rates(rows)
    assert rates["dropped_artifacts"] > 0
    assert rates["context_stale_rate"] is None


def test_raw_path_in_a_memory_section_is_structural() -> None:
    rows = _rows(_RawMemory)
    assert any(r["memory_raw_path"] for r in rows)
    rates = context_rates(rows)
    assert rates["has_memory"] is False and rates["memory_leak_rate"] is None
    assert context_rates(_rows(Branchmem))["raw_path_in_memory"] == 0
