"""The correction cascade: digests go stale and are repaired; drops and raw memory fail."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from branchbench.cascade import cascade_charts, point_key, run_cascade
from branchbench.context import Context, fit
from branchbench.extract import OracleExtractor
from branchbench.pipeline import READ_POLICIES, Cadence, Integration, Pipeline
from branchbench.report import interval
from branchbench.runner import RunConfig, context_rows
from branchbench.scenario import Fact, Message, Tree, load_split
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


def test_a_window_of_one_reads_what_one_message_reads() -> None:
    """The sweep's first point is the one-message pipeline: same memories, same contexts."""
    scenario = load_split("test")[0]
    extracted = {m.id: OracleExtractor().extract(m) for m in scenario.messages}
    for policy in ("path", "arrival"):
        window = context_rows(
            scenario, "x", Branchmem, extracted, 1500, pipeline="window",  # type: ignore[arg-type]
            read_policy=policy, cadence=Cadence(window=1),
        )  # fmt: skip
        alone = context_rows(scenario, "x", Branchmem, extracted, 1500)  # type: ignore[arg-type]
        assert [r["memory"] for r in window] == [r["memory"] for r in alone]


def test_the_cascade_split_window_changes_nothing_and_why() -> None:
    """The cascade split's one abandoned message (a regenerated first reply) has no facts
    and arrives before the first fact: a window that reads it makes that fact's record cite
    it (hidden at the anchor), and the next window step, which no longer reads it, restates
    the fact. So no rate moves with the window there; the test split's sweep is where it
    does (below)."""
    scenario = load_split("cascade")[0]
    extracted = {m.id: OracleExtractor().extract(m) for m in scenario.messages}
    abandoned = {m.id for m in scenario.messages} - set(
        Tree(scenario.messages).path(scenario.anchor)
    )
    assert abandoned and all(not extracted[a] for a in abandoned)
    feed = Pipeline("window", READ_POLICIES["arrival"], "transitive", lambda m: extracted[m.id],
                    scenario.language, cadence=Cadence(window=8))  # fmt: skip
    cites = [f for m in scenario.messages for f in feed.derive(m) if abandoned & set(f.sources)]
    assert cites  # the window read the abandoned reply: those records are hidden

    def rows(size: int) -> list[dict]:
        return context_rows(
            scenario, "x", Branchmem, extracted, 1500, pipeline="window",  # type: ignore[arg-type]
            read_policy="arrival", cadence=Cadence(window=size),
        )  # fmt: skip

    small, large = context_rates(rows(1)), context_rates(rows(8))
    for key in ("memory_retain_rate", "context_stale_rate"):
        assert small[key] == large[key] == (1.0 if "retain" in key else 0.0)


def test_the_window_sweep_moves_under_arrival_and_not_under_path(tmp_path: Path) -> None:
    """On test scenarios with a sibling arriving late: under ``arrival`` a wider window
    makes lineage labels leak and branchmem hide (retain falls); under ``path`` neither
    leaks at any size. The charts are drawn with labelled axes, branchmem highlighted."""
    config = RunConfig(
        split="test", systems=["branchmem", "label_lineage"], extractors=["oracle"], limit=8
    )
    result = run_cascade(config, tmp_path, {"window": (1, 6)})
    point = result["points"]
    lineage = [point[point_key("window", w, "arrival", False)]["systems"]["label_lineage"]
               for w in (1, 6)]  # fmt: skip
    mine = [point[point_key("window", w, "arrival", False)]["systems"]["branchmem"]
            for w in (1, 6)]  # fmt: skip
    assert lineage[0]["memory_leak_rate"] == 0 < lineage[1]["memory_leak_rate"]
    assert mine[0]["memory_retain_rate"] > mine[1]["memory_retain_rate"]
    assert mine[1]["memory_leak_rate"] == 0
    for w in (1, 6):
        for system in ("branchmem", "label_lineage"):
            entry = point[point_key("window", w, "path", False)]["systems"][system]
            assert entry["memory_leak_rate"] == 0
    assert point_key("window", 6, "arrival", True) not in point  # no digest to repair
    assert "## `window` (mode `window`, read policy `arrival`)" in (
        tmp_path / "cascade.md"
    ).read_text(encoding="utf-8")
    pytest.importorskip("matplotlib")
    (drawn,) = cascade_charts(result, tmp_path)
    assert drawn.name == "cascade_window.png" and drawn.read_bytes()[:4] == b"\x89PNG"


def test_digest_charts_label_axes_and_highlight_branchmem(tmp_path: Path) -> None:
    """Stale % with whiskers, missing digests and the repair's work, over the cadence."""
    pytest.importorskip("matplotlib")
    from branchbench.cascade import CASCADE_CHARTS
    from branchbench.charts import HIGHLIGHT, CurvePanel, curve_grid

    config = RunConfig(
        split="cascade", systems=["branchmem", "label_lineage"], extractors=["oracle"], limit=2
    )
    result = run_cascade(config, tmp_path, {"summary_every": (2, 8)})
    assert [p.name for p in cascade_charts(result, tmp_path)] == [CASCADE_CHARTS[0]]
    off = result["points"][point_key("summary_every", 8, "path", False)]["systems"]
    on = result["points"][point_key("summary_every", 8, "path", True)]["systems"]
    assert off["label_lineage"]["stale_rate"] > 0 == off["branchmem"]["stale_rate"]
    assert off["branchmem"]["missing"] > 0 == on["branchmem"]["missing"]
    assert on["branchmem"]["rebuilt"] > 0 and not on["label_lineage"]["repair"]
    lo, hi = interval(off["label_lineage"], "stale_rate") or [None, None]
    assert lo is not None and lo < off["label_lineage"]["stale_rate"] < hi
    series = {"repair off": {n: {"rates": [0.0, s["stale_rate"]], "intervals": [None, None]}
                             for n, s in off.items()}}  # fmt: skip
    panel = CurvePanel("stale", [2, 8], series, "stale_rate", "stale", "summary_every", True)
    fig = curve_grid([[panel]], "t")
    (ax,) = fig.axes
    assert ax.get_xlabel() == "summary_every" and "lower is better" in ax.get_ylabel()
    assert "vs label_lineage" in ax.get_title()
    colours = {line.get_gid(): line.get_color() for line in ax.lines if line.get_gid()}
    assert colours["branchmem (repair off)"].lower() == HIGHLIGHT.lower()
    assert [t.get_text() for t in ax.texts][:2] == ["0%", "0%"]  # 0% printed, not lost
