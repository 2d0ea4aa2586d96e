"""The charts read as the audit asked: every axis labelled, branchmem in one colour against
the strongest competitor (picked from the data, per metric direction) in a second, the rest
grey, 95% whiskers, 0% drawn and missing figures marked n/a. Checked on the drawn Figure."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from bench_results import probe_row, write_results
from branchbench.charts import (
    CHART_FILES,
    CHART_METRICS,
    COMPETITOR,
    HIGHLIGHT,
    OTHER,
    axis_label,
    charts,
    curve_figure,
    has_matplotlib,
    leak_figure,
    lower_is_better,
    pipeline_figure,
    strongest,
    value_text,
)
from branchbench.curve import CURVE_METRICS, curve_charts
from branchbench.report import interval
from branchbench.score import summarize

# run.json order: branchmem is not first, so it is highlighted by name, not by position
SYSTEMS = ("gated_rival", "branchmem", "close_rival", "raw")
SCENARIOS = 4
# scenarios (of four) where each system leaks / retains; raw has no memory section
LEAKS = {"branchmem": 0, "close_rival": 1, "gated_rival": 2, "raw": 4}
RETAINS = {"branchmem": 4, "close_rival": 2, "gated_rival": 3, "raw": 4}
PIPELINES = ("one_message", "window", "window+lineage")  # a label score does not know too


def row(system: str, scenario: int, kind: str, op: str, pipeline: str) -> dict[str, Any]:
    """One contexts.jsonl row; the probe asks for 杭州 and forbids 成都."""
    hit = scenario < (LEAKS if kind == "leak" else RETAINS)[system]
    text = ("成都" if kind == "leak" else "杭州") if hit else "别的"
    has_memory = system != "raw"
    return probe_row(
        system, f"sc{scenario}", kind, memory=text if has_memory else "",
        operation=op, pipeline=pipeline, probe=f"{op}-{kind}", has_memory=has_memory,
        asserted="", context=text,
    )  # fmt: skip


def make_summary(tmp_path: Path, systems: tuple[str, ...] = SYSTEMS) -> dict[str, Any]:
    """A results directory as `branchbench run` writes it, scored by ``summarize``."""
    rows = [
        row(system, sc, kind, op, pipeline)
        for pipeline in PIPELINES
        for op in ("edit_user", "regenerate")
        for sc in range(SCENARIOS)
        for system in systems
        for kind in ("leak", "retain")
    ]
    return summarize(write_results(tmp_path, rows, systems=list(systems)))


@pytest.fixture
def summary(tmp_path: Path) -> dict[str, Any]:
    pytest.importorskip("matplotlib")
    return make_summary(tmp_path)


def panels(fig: Any) -> list[Any]:
    return [ax for ax in fig.axes if ax.get_visible()]


def hexes(colour: Any) -> str:
    from matplotlib.colors import to_hex

    return str(to_hex(colour)).lower()


def bar_colours(ax: Any) -> dict[str, str]:
    return {
        p.get_gid().removeprefix("bar:"): hexes(p.get_facecolor())
        for p in ax.patches
        if (p.get_gid() or "").startswith("bar:")
    }


def first_column(ax: Any) -> bool:
    return bool(ax.get_subplotspec().is_first_col())


def texts(ax: Any) -> dict[str, str]:
    return {t.get_gid(): t.get_text() for t in ax.texts if t.get_gid()}


def panel(fig: Any, title: str) -> Any:
    (found,) = [ax for ax in panels(fig) if ax.get_title().startswith(title)]
    return found


def test_every_axis_is_labelled_with_the_systems_and_the_metric(
    summary: dict[str, Any],
) -> None:
    fig = leak_figure(summary)
    axes = panels(fig)
    assert [ax.get_title() for ax in axes] == summary["operations"]
    for ax in axes:
        # horizontal bars: the system names on the category axis, first system on top,
        # named on the first panel of each row (the others line up with it)
        names = [t.get_text() for t in ax.get_yticklabels()]
        assert names == (list(SYSTEMS) if first_column(ax) else [])
        assert list(ax.get_yticks()) == list(range(len(SYSTEMS)))
        assert ax.get_ylim()[0] > ax.get_ylim()[1]
        assert ax.get_xlabel() == "context leak % (lower is better)"
        assert ax.get_ylabel() == ("system" if first_column(ax) else "")
    assert sum(map(first_column, axes)) == 1  # two operations: one row
    fig = pipeline_figure(summary)
    labels = {ax.get_xlabel() for ax in panels(fig)}
    assert labels == {
        "context leak % (lower is better)",
        "memory leak % (lower is better)",
        "memory retain % (higher is better)",
        "stale % (lower is better)",
    }


def test_branchmem_against_the_strongest_competitor_the_rest_grey(
    summary: dict[str, Any],
) -> None:
    fig = leak_figure(summary)
    for ax in panels(fig):
        colours = bar_colours(ax)
        assert colours == {
            "branchmem": HIGHLIGHT.lower(),
            "close_rival": COMPETITOR.lower(),  # 25% context leak: the lowest of the rest
            "gated_rival": OTHER.lower(),
            "raw": OTHER.lower(),
        }
        assert len({HIGHLIGHT, COMPETITOR, OTHER}) == 3
    names = {t.get_text(): t for t in panels(fig)[0].get_yticklabels()}
    assert hexes(names["branchmem"].get_color()) == HIGHLIGHT.lower()
    assert hexes(names["close_rival"].get_color()) == COMPETITOR.lower()
    assert names["branchmem"].get_fontweight() == "bold"
    assert names["gated_rival"].get_fontweight() != "bold"
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[0] == "branchmem (highlighted)"
    assert legend[1].startswith("close_rival: strongest competitor, lowest context leak")
    assert legend[2] == "other systems"
    assert "branchmem vs strongest competitor" in fig.get_suptitle()


def test_the_competitor_is_picked_per_metric_and_its_direction(
    summary: dict[str, Any],
) -> None:
    fig = pipeline_figure(summary)
    leak = panel(fig, "one_message: memory leak")
    retain = panel(fig, "one_message: memory retain")
    # memory leak: lower is better, close_rival (25%) beats gated_rival (50%);
    # memory retain: higher is better, gated_rival (75%) beats close_rival (50%)
    assert leak.get_title().endswith("vs close_rival")
    assert bar_colours(leak)["close_rival"] == COMPETITOR.lower()
    assert retain.get_title().endswith("vs gated_rival")
    assert bar_colours(retain)["gated_rival"] == COMPETITOR.lower()
    assert bar_colours(retain)["close_rival"] == OTHER.lower()
    assert bar_colours(retain)["branchmem"] == HIGHLIGHT.lower()
    # the competitor changes from panel to panel, so the row's names colour only branchmem
    names = {t.get_text(): hexes(t.get_color()) for t in panels(fig)[0].get_yticklabels()}
    assert names["branchmem"] == HIGHLIGHT.lower()
    assert COMPETITOR.lower() not in names.values()
    # the flag of CHART_METRICS marks memory metrics, not a direction
    assert [(m.key, m.is_memory) for m in CHART_METRICS][:3] == [
        ("context_leak_rate", False),
        ("memory_leak_rate", True),
        ("memory_retain_rate", True),
    ]
    assert lower_is_better("memory_leak_rate") and not lower_is_better("memory_retain_rate")


def test_zero_is_drawn_and_a_missing_figure_reads_na(summary: dict[str, Any]) -> None:
    fig = pipeline_figure(summary)
    ax = panel(fig, "window: memory leak")
    y = list(SYSTEMS).index("branchmem")
    # branchmem leaks 0%: a zero-width bar, so a dot on the axis and a printed 0%
    (dots,) = [c for c in ax.collections if c.get_gid() == "value"]
    assert [0.0, y] in dots.get_offsets().tolist()
    assert ax.get_xlim()[0] < 0 < ax.get_xlim()[1]  # the dot sits inside the frame
    assert texts(ax)["value:branchmem"] == "0%"
    assert texts(ax)["value:close_rival"] == "25%"
    # raw has no memory section: no bar, and it says so instead of leaving a gap
    assert "raw" not in bar_colours(ax)
    assert texts(ax)["n/a:raw"] == "n/a (no memory)"
    # no stale probe in this run: every system's stale figure is n/a, none silently absent
    stale = panel(fig, "window: stale")
    assert not bar_colours(stale)
    assert {k for k, v in texts(stale).items() if v.startswith("n/a")} == {
        f"n/a:{n}" for n in SYSTEMS
    }
    assert stale.get_title().endswith("vs no competitor with a figure")
    assert value_text(0.4) == "<1%" and value_text(0.0) == "0%" and value_text(99.6) == ">99%"


def test_whiskers_are_the_printed_95_intervals(summary: dict[str, Any]) -> None:
    from matplotlib.container import ErrorbarContainer

    fig = leak_figure(summary)
    ax = panel(fig, "edit_user")
    (bars,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    segments = {round(s[0][1]): s for s in bars.lines[2][0].get_segments()}
    assert len(segments) == len(SYSTEMS)
    for y, name in enumerate(SYSTEMS):
        entry = summary["systems"][name]["per_operation"]["edit_user"]
        ci = interval(entry, "context_leak_rate")
        assert ci is not None
        (lo, _), (hi, _) = segments[y]
        assert lo == pytest.approx(100 * ci[0]) and hi == pytest.approx(100 * ci[1])
    assert segments[1][1][0] > 0  # branchmem's 0% still has an upper whisker


def test_every_pipeline_gets_a_row(summary: dict[str, Any]) -> None:
    fig = pipeline_figure(summary)
    titles = [ax.get_title().split("\n")[0] for ax in panels(fig)]
    assert titles == [f"{p}: {m.label}" for p in summary["by_pipeline"] for m in CHART_METRICS]
    assert set(summary["by_pipeline"]) == set(PIPELINES)


def test_without_branchmem_the_first_system_is_highlighted(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    summary = make_summary(tmp_path, ("close_rival", "gated_rival", "raw"))
    fig = leak_figure(summary)
    colours = bar_colours(panels(fig)[0])
    assert colours["close_rival"] == HIGHLIGHT.lower()
    assert colours["gated_rival"] == COMPETITOR.lower()  # 50% < raw's 100%
    assert colours["raw"] == OTHER.lower()


def test_strongest_reads_the_direction_skips_na_and_counts_ties() -> None:
    figures = {
        "a": [(0.2, [0.1, 0.4])],
        "b": [(0.0, [0.0, 0.5])],
        "c": [(0.0, [0.0, 0.3])],  # ties b on the value, surer upper end
        "d": [(None, None)],
    }
    assert strongest(figures, lower=True) == ("c", 1)
    assert strongest(figures, lower=False) == ("a", 0)
    assert strongest({"d": [(None, None)]}, lower=True) == (None, 0)
    # over budgets: the mean of the known figures
    curve = {"x": [(0.9, None), (0.1, None)], "y": [(0.4, None), (None, None)]}
    assert strongest(curve, lower=True) == ("y", 0)
    assert axis_label("retain", "context_retain_rate") == "retain % (higher is better)"


def test_charts_writes_the_files_the_cli_lists(summary: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "charts"
    out.mkdir()
    written = charts(summary, out)
    assert [p.name for p in written] == list(CHART_FILES)
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def curves() -> dict[str, Any]:
    """``run_curve``'s structure: three budgets, two extractors, a system without memory."""
    budgets = [500, 1500, 6000]

    def metric(rates: list[float | None]) -> dict[str, Any]:
        return {
            "rates": rates,
            "intervals": [None if r is None else [max(0, r - 0.1), min(1, r + 0.1)] for r in rates],
            "n": 0 if all(r is None for r in rates) else 10,
        }

    leak = {
        "raw": [None, None, None],
        "rival_a": [0.5, 0.25, 0.0],  # mean 0.25
        "branchmem": [0.0, 0.0, 0.0],
        "rival_b": [0.1, 0.1, None],  # mean 0.1 over the budgets it has: the competitor
    }
    retain = {"raw": [0.2, 0.5, 1.0], "rival_a": [0.6, 0.9, 1.0], "branchmem": [1.0, 1.0, 1.0]}
    retain["rival_b"] = [0.5, 0.5, 0.5]
    systems = {
        name: {
            "context_retain_rate": metric(retain[name]),
            "context_leak_rate": metric(leak[name]),
            "memory_leak_rate": metric(leak[name]),
            "context_stale_rate": metric([None, None, None]),
        }
        for name in leak
    }
    return {
        "split": "dev",
        "budgets": budgets,
        "probes": 10,
        "extractors": ["oracle", "rules"],
        "curves": {"oracle": systems, "rules": systems},
    }


def test_curves_label_the_budget_axis_and_highlight_branchmem() -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.container import ErrorbarContainer

    fig = curve_figure(curves(), "context_leak_rate", "leak")
    (ax,) = fig.axes
    assert ax.get_xlabel() == "token budget"
    assert ax.get_ylabel() == "leak % (lower is better)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["500", "1500", "6000"]
    lines = {line.get_gid(): hexes(line.get_color()) for line in ax.lines if line.get_gid()}
    assert lines["branchmem (oracle)"] == lines["branchmem (rules)"] == HIGHLIGHT.lower()
    assert lines["rival_b (oracle)"] == COMPETITOR.lower()
    assert lines["rival_a (oracle)"] == OTHER.lower()
    assert "raw (oracle)" not in lines  # no figure at any budget
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "branchmem (highlighted)" in legend
    assert "rival_b (strongest competitor) (n/a at 6000)" in legend
    assert "raw: n/a, no figure" in legend
    assert "vs strongest competitor rival_b" in ax.get_title()
    # whiskers on every drawn line, and branchmem's 0% printed, not lost on the axis
    assert sum(isinstance(c, ErrorbarContainer) for c in ax.containers) == 6
    printed = [t.get_text() for t in ax.texts if hexes(t.get_color()) == HIGHLIGHT.lower()]
    assert printed == ["0%", "0%", "0%"]
    assert ax.get_ylim()[0] < 0

    retain = curve_figure(curves(), "context_retain_rate", "retain")
    lines = {
        line.get_gid(): hexes(line.get_color()) for line in retain.axes[0].lines if line.get_gid()
    }
    assert lines["rival_a (oracle)"] == COMPETITOR.lower()  # highest mean retain
    assert retain.axes[0].get_ylabel() == "retain % (higher is better)"


def test_curve_charts_write_one_png_per_metric(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    written = curve_charts(curves(), tmp_path)
    assert [p.name for p in written] == [
        f"{key.removesuffix('_rate')}_by_budget.png" for key, _ in CURVE_METRICS
    ]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in written)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    assert not has_matplotlib()
    assert curve_charts(curves(), tmp_path) == []


def test_a_variant_of_the_highlighted_system_is_not_its_competitor() -> None:
    from branchbench.charts import competes

    assert not competes("branchmem_unattributed", "branchmem")
    assert not competes("mem0_branchmem", "branchmem")
    assert competes("label_lineage", "branchmem") and competes("mem0", "branchmem")
