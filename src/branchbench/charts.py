"""The charts of a results directory (``[bench]`` extra: matplotlib), apart from the tables
of ``report``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from branchbench.report import interval

CHART_FILES = ("leak_by_operation.png", "measured_by_pipeline.png")


# A qualitative palette (matplotlib's tab10, then Dark2): one distinct hue per system, never
# shades of one colour, which read as an order that the systems do not have.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02",
    "#a6761d", "#666666",
)  # fmt: skip
CHART_METRICS = (
    ("context_leak_rate", "context leak", False),
    ("memory_leak_rate", "memory leak", True),
    ("memory_retain_rate", "memory retain", True),
    ("context_stale_rate", "stale", True),
)


def _colours(names: list[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _panel(
    ax: Any, entries: list[tuple[str, dict[str, Any] | None]], key: str, colours: dict[str, str]
) -> None:
    """Bars of one rate, one per system, with their 95% intervals as error bars."""
    xs, heights, lows, highs, colour = [], [], [], [], []
    for x, (name, entry) in enumerate(entries):
        value = None if entry is None else entry.get(key)
        if value is None:
            continue
        ci = interval(entry, key) if entry is not None else None
        xs.append(x)
        heights.append(100 * value)
        lows.append(100 * (value - ci[0]) if ci else 0.0)
        highs.append(100 * (ci[1] - value) if ci else 0.0)
        colour.append(colours[name])
    ax.bar(xs, heights, color=colour, yerr=[lows, highs], capsize=2, ecolor="#333333")
    ax.set_xticks(range(len(entries)), [""] * len(entries))
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)


def _draw(
    panels: list[list[tuple[str, list[tuple[str, dict[str, Any] | None]], str]]],
    names: list[str],
    title: str,
    path: Path,
) -> Path:
    """A grid of small multiples sharing one legend (one colour per system)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    colours = _colours(names)
    rows, cols = len(panels), max(len(r) for r in panels)
    fig, axes = plt.subplots(
        rows, cols, figsize=(2.6 * cols + 2.4, 2.3 * rows + 0.9), squeeze=False, sharey=True
    )
    for r, row in enumerate(panels):
        for c in range(cols):
            ax = axes[r][c]
            if c >= len(row):
                ax.set_visible(False)
                continue
            label, entries, key = row[c]
            _panel(ax, entries, key, colours)
            ax.set_title(label, fontsize=8)
            if c == 0:
                ax.set_ylabel("%", fontsize=8)
    handles = [Patch(color=colours[n], label=n) for n in names]
    fig.legend(handles=handles, fontsize=7, loc="center right", frameon=False)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1 - 2.2 / (2.6 * cols + 2.4), 0.95))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _title(summary: dict[str, Any], what: str) -> str:
    note = " (TRUNCATED run)" if summary.get("truncated") else ""
    return f"branchbench {summary['split']}{note}: {what}; bars 95% intervals"


def chart(summary: dict[str, Any], path: Path) -> Path:
    """Context leak by operation: one panel per operation, one bar per system (needs
    matplotlib)."""
    systems = summary["systems"]
    names = list(systems)
    row = [
        (op, [(n, systems[n]["per_operation"].get(op)) for n in names], "context_leak_rate")
        for op in summary["operations"]
    ]
    per_row = 4
    panels = [row[i : i + per_row] for i in range(0, len(row), per_row)] or [[]]
    return _draw(panels, names, _title(summary, "context leak by operation"), path)


def pipeline_chart(summary: dict[str, Any], path: Path) -> Path:
    """The measured rates: one row of panels per pipeline, one panel per metric, one bar
    per system, first extractor (needs matplotlib)."""
    extractor = summary["extractor"]
    by_pipeline = summary.get("by_pipeline") or {
        summary.get("pipeline", "one_message"): {extractor: {"systems": summary["systems"]}}
    }
    names = list(summary["systems"])
    panels = []
    for pipeline, tables in by_pipeline.items():
        systems = tables.get(extractor, {}).get("systems", {})
        panels.append(
            [
                (f"{pipeline}: {label}", [(n, systems.get(n)) for n in names], key)
                for key, label, _ in CHART_METRICS
            ]
        )
    return _draw(panels, names, _title(summary, f"measured rates, extractor {extractor}"), path)


def charts(summary: dict[str, Any], results_dir: Path) -> list[Path]:
    """Draw every chart into ``results_dir`` (the files of ``CHART_FILES``)."""
    for name in CHART_FILES:
        (results_dir / name).unlink(missing_ok=True)
    return [
        chart(summary, results_dir / CHART_FILES[0]),
        pipeline_chart(summary, results_dir / CHART_FILES[1]),
    ]


def has_matplotlib() -> bool:
    """Charts need the ``[bench]`` extra; everything else works without it."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
