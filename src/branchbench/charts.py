"""The charts of a results directory and of a budget curve (``[bench]`` extra: matplotlib),
apart from the tables of ``report``.

A chart answers one question: how does one system (branchmem when it ran) compare with the
best of the rest? So that system gets one strong colour, the strongest competitor on the
chart's metric a second one, every other system grey, and the legend says which is which.
Each figure carries its 95% interval and its printed value, so 0% is drawn (a dot on the
axis) and told apart from a missing figure, which reads "n/a".

The ``*_figure`` functions return the Figure (tests inspect it); ``charts`` and
``curve.curve_charts`` write the PNGs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from branchbench.report import interval

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

CHART_FILES = ("leak_by_operation.png", "measured_by_pipeline.png")

HIGHLIGHTED = "branchmem"  # the system every chart is about, when it ran
# Okabe-Ito blue and orange: distinct from each other and from grey for colour-blind readers.
HIGHLIGHT, COMPETITOR, OTHER = "#0072B2", "#E69F00", "#BDBDBD"
INK = "#333333"  # error bars, outlines, printed values
# One hue per system; the charts no longer colour systems one by one (fourteen hues hid the
# one bar that matters), kept because tests/test_branchbench_score.py imports it.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02",
    "#a6761d", "#666666",
)  # fmt: skip


class Metric(NamedTuple):
    """A charted rate. ``is_memory``: read from the memory section, so n/a for a system
    without one (as report's columns); it says nothing about which way is better."""

    key: str
    label: str
    is_memory: bool


CHART_METRICS = (
    Metric("context_leak_rate", "context leak", False),
    Metric("memory_leak_rate", "memory leak", True),
    Metric("memory_retain_rate", "memory retain", True),
    Metric("context_stale_rate", "stale", True),
)
# Rates where more is better; every other rate (leak, stale, retracted) is better lower.
HIGHER_IS_BETTER = frozenset(
    {
        "context_retain_rate",
        "memory_retain_rate",
        "transcript_retain_rate",
        "retain_beyond_window_rate",
        "retain_rate",
        "correct_rate",
    }
)

Figures = Sequence[tuple[float | None, Sequence[float] | None]]  # (rate, 95% interval) each


def lower_is_better(key: str) -> bool:
    """Which way a rate is better: it picks the competitor and is printed on the axis."""
    return key not in HIGHER_IS_BETTER


def axis_label(label: str, key: str) -> str:
    """The metric's axis: percent and its direction, e.g. 'memory leak % (lower is better)'."""
    return f"{label} % ({'lower' if lower_is_better(key) else 'higher'} is better)"


def competes(name: str, chosen: str) -> bool:
    """Whether ``name`` can be the strongest competitor: not the highlighted system, nor a
    variant of it (``branchmem_unattributed``, ``mem0_branchmem``: the same store)."""
    return chosen not in name


def highlighted(names: Iterable[str]) -> str:
    """The system a chart is about: branchmem when it ran, else the first system."""
    names = list(names)
    return HIGHLIGHTED if HIGHLIGHTED in names else names[0]


def strongest(candidates: Mapping[str, Figures], lower: bool) -> tuple[str | None, int]:
    """The best of ``candidates`` on one rate and how many others tie with it on the value.

    A candidate's score is the mean of its figures (one per bar; one per budget on a
    curve), n/a ones left out; a candidate with no figure cannot win. Ties go to the
    surer figure (the interval end on the bad side, mean of it), then to the first listed,
    so the same data always picks the same system.
    """
    sign = 1 if lower else -1
    scored = []
    for order, (name, figures) in enumerate(candidates.items()):
        known = [(v, ci) for v, ci in figures if v is not None]
        if not known:
            continue
        mean = round(sum(v for v, _ in known) / len(known), 6)
        ends = [ci[1] if lower else ci[0] for _, ci in known if ci]
        end = round(sum(ends) / len(ends), 6) if ends else mean
        scored.append((sign * mean, sign * end, order, name))
    if not scored:
        return None, 0
    scored.sort()
    best = scored[0]
    return best[3], sum(1 for s in scored[1:] if s[0] == best[0])


def colours(names: Iterable[str], chosen: str, competitor: str | None) -> dict[str, str]:
    """One strong colour, one second colour, grey for the rest."""
    return {
        n: HIGHLIGHT if n == chosen else COMPETITOR if n == competitor else OTHER for n in names
    }


def value_text(pct: float) -> str:
    """A printed percentage that never rounds a small figure to a false 0% (or 100%)."""
    if 0 < pct < 1:
        return "<1%"
    if 99 < pct < 100:
        return ">99%"
    return f"{pct:.0f}%"


def _competitor_text(name: str | None, ties: int) -> str:
    if name is None:
        return "no competitor with a figure"
    return name + (f" (+{ties} tied)" if ties else "")


Entries = list[tuple[str, dict[str, Any] | None]]  # (system, its rates or None), in order


class Panel(NamedTuple):
    """One small multiple: a title, one bar per system of one metric."""

    title: str
    entries: Entries
    metric: Metric


def _na_text(entry: dict[str, Any] | None, metric: Metric) -> str:
    if metric.is_memory and entry is not None and not entry.get("has_memory", True):
        return "n/a (no memory)"
    return "n/a"


def _bars(ax: Axes, panel: Panel, colour: dict[str, str], name_competitor: bool) -> None:
    """Horizontal bars (long system names stay readable), first system on top: each rate
    with its 95% interval as a whisker, a dot at its end so 0% shows, its value printed;
    "n/a" where a system has no figure. The highlighted name is bold in its colour, the
    competitor's too when ``name_competitor`` (one competitor for the whole chart)."""
    key = panel.metric.key
    ys, pcts, lows, highs, fills = [], [], [], [], []
    for y, (name, entry) in enumerate(panel.entries):
        value = None if entry is None else entry.get(key)
        if entry is None or value is None:
            ax.text(
                2,
                y,
                _na_text(entry, panel.metric),
                va="center",
                ha="left",
                fontsize=6,
                style="italic",
                color=INK,
                gid=f"n/a:{name}",
            )
            continue
        pct = 100 * value
        ci = interval(entry, key)
        lo, hi = (100 * ci[0], 100 * ci[1]) if ci else (pct, pct)
        ys.append(y)
        pcts.append(pct)
        lows.append(max(0.0, pct - lo))
        highs.append(max(0.0, hi - pct))
        fills.append(colour[name])
        ax.text(
            max(pct, hi) + 2,
            y,
            value_text(pct),
            va="center",
            ha="left",
            fontsize=6,
            color=INK,
            gid=f"value:{name}",
        )
    if ys:
        bars = ax.barh(ys, pcts, height=0.7, color=fills, edgecolor=fills, linewidth=0.5)
        for patch, y in zip(bars.patches, ys, strict=True):
            patch.set_gid(f"bar:{panel.entries[y][0]}")
        ax.errorbar(
            pcts,
            ys,
            xerr=[lows, highs],
            fmt="none",
            ecolor=INK,
            elinewidth=0.8,
            capsize=2,
            gid="interval",
        )
        # the dot: a 0% bar has no width, its dot on the axis still shows the figure
        ax.scatter(
            pcts,
            ys,
            s=18,
            c=fills,
            edgecolors=INK,
            linewidths=0.5,
            zorder=3,
            clip_on=False,
            gid="value",
        )
    names = [n for n, _ in panel.entries]
    for y, name in enumerate(names):  # a band behind the highlighted row: found at a glance
        if colour.get(name) == HIGHLIGHT:
            ax.axhspan(y - 0.5, y + 0.5, color=HIGHLIGHT, alpha=0.08, linewidth=0, zorder=0)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    strong = (HIGHLIGHT, COMPETITOR) if name_competitor else (HIGHLIGHT,)
    for tick in ax.get_yticklabels():
        if colour.get(tick.get_text()) in strong:
            tick.set_color(colour[tick.get_text()])
            tick.set_fontweight("bold")
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlim(-5, 125)  # a dot at 0% clear of the frame; a printed 100% past its whisker
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.tick_params(axis="x", labelsize=7)
    ax.axvline(0, color=INK, linewidth=0.8)
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlabel(axis_label(panel.metric.label, key), fontsize=7)
    ax.set_title(panel.title, fontsize=8)


def _figure(
    rows: list[list[Panel]],
    colour_of: list[dict[str, str]],
    names: list[str],
    legend: list[tuple[str, str]],
    title: str,
) -> Figure:
    """A grid of small multiples, system names on the first column, one legend below.
    ``colour_of`` holds one colour map per panel, row by row."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    cols = max((len(r) for r in rows), default=1) or 1
    name_width = 0.07 * max((len(n) for n in names), default=6) + 0.5
    height = len(rows) * (0.2 * len(names) + 1.5) + 1.3
    fig = Figure(figsize=(name_width + 2.6 * cols, height), layout="constrained")
    axes = fig.subplots(max(len(rows), 1), cols, squeeze=False)
    maps, one_competitor = iter(colour_of), all(m == colour_of[0] for m in colour_of)
    for r, row in enumerate(rows):
        for c in range(cols):
            ax = axes[r][c]
            if c >= len(row):
                ax.set_visible(False)
                continue
            _bars(ax, row[c], next(maps), one_competitor)
            if c == 0:
                ax.set_ylabel("system", fontsize=7)
            else:
                ax.tick_params(axis="y", labelleft=False)
    handles = [Patch(facecolor=c, edgecolor=INK, linewidth=0.5, label=t) for c, t in legend]
    fig.legend(
        handles=handles, loc="outside lower center", ncols=len(handles), fontsize=7, frameon=False
    )
    fig.suptitle(title, fontsize=9)
    return fig


def _title(summary: dict[str, Any], what: str) -> str:
    note = " (TRUNCATED run)" if summary.get("truncated") else ""
    return (
        f"branchbench {summary['split']}{note}: {what}\n"
        "bar and value: the rate; whisker: its 95% interval; n/a: no figure"
    )


def leak_figure(summary: dict[str, Any]) -> Figure:
    """Context leak by operation: one panel per operation, one bar per system. The
    competitor is the best of the rest on context leak over all operations (the figure the
    tables lead with), so it is one system for the whole chart."""
    systems = summary["systems"]
    names = list(systems)
    chosen = highlighted(names)
    metric = CHART_METRICS[0]
    lower = lower_is_better(metric.key)
    candidates = {
        n: [(s.get(metric.key), interval(s, metric.key))]
        for n, s in systems.items()
        if competes(n, chosen)
    }
    rival, ties = strongest(candidates, lower)
    colour = colours(names, chosen, rival)
    row = [
        Panel(op, [(n, systems[n].get("per_operation", {}).get(op)) for n in names], metric)
        for op in summary["operations"]
    ]
    count = max(1, -(-len(row) // 4))  # at most four panels a row, rows evenly filled
    per_row = max(1, -(-len(row) // count))
    rows = [row[i : i + per_row] for i in range(0, len(row), per_row)]
    legend = [(HIGHLIGHT, f"{chosen} (highlighted)"), (OTHER, "other systems")]
    if rival is not None:
        best = systems[rival].get(metric.key)
        legend.insert(
            1,
            (
                COMPETITOR,
                f"{_competitor_text(rival, ties)}: strongest competitor, "
                f"{'lowest' if lower else 'highest'} {metric.label} overall "
                f"({value_text(100 * best)})",
            ),
        )
    title = _title(summary, f"{metric.label} by operation, {chosen} vs strongest competitor")
    return _figure(rows, [colour] * len(row), names, legend, title)


def pipeline_figure(summary: dict[str, Any]) -> Figure:
    """The measured rates: one row of panels per pipeline, one panel per metric, one bar
    per system, first extractor. Metrics differ in direction and in who is best, so each
    panel picks its own competitor and names it in its title."""
    extractor = summary["extractor"]
    by_pipeline = summary.get("by_pipeline") or {
        summary.get("pipeline", "one_message"): {extractor: {"systems": summary["systems"]}}
    }
    tables = {p: t.get(extractor, {}).get("systems", {}) for p, t in by_pipeline.items()}
    names = list(dict.fromkeys([*summary["systems"], *(n for t in tables.values() for n in t)]))
    chosen = highlighted(names)
    rows, colour_of = [], []
    for pipeline, systems in tables.items():
        row = []
        for metric in CHART_METRICS:
            entries: Entries = [(n, systems.get(n)) for n in names]
            candidates = {
                n: [(e.get(metric.key), interval(e, metric.key))]
                for n, e in entries
                if competes(n, chosen) and e is not None
            }
            rival, ties = strongest(candidates, lower_is_better(metric.key))
            colour_of.append(colours(names, chosen, rival))
            title = f"{pipeline}: {metric.label}\nvs {_competitor_text(rival, ties)}"
            row.append(Panel(title, entries, metric))
        rows.append(row)
    legend = [
        (HIGHLIGHT, f"{chosen} (highlighted)"),
        (COMPETITOR, "strongest competitor on the panel's metric (named in its title)"),
        (OTHER, "other systems"),
    ]
    title = _title(summary, f"measured rates by pipeline, extractor {extractor}")
    return _figure(rows, colour_of, names, legend, title)


def chart(summary: dict[str, Any], path: Path) -> Path:
    """Write ``leak_figure`` to ``path`` (needs matplotlib)."""
    leak_figure(summary).savefig(path, dpi=120)
    return path


def pipeline_chart(summary: dict[str, Any], path: Path) -> Path:
    """Write ``pipeline_figure`` to ``path`` (needs matplotlib)."""
    pipeline_figure(summary).savefig(path, dpi=120)
    return path


def charts(summary: dict[str, Any], results_dir: Path) -> list[Path]:
    """Draw every chart into ``results_dir`` (the files of ``CHART_FILES``)."""
    for name in CHART_FILES:
        (results_dir / name).unlink(missing_ok=True)
    return [
        chart(summary, results_dir / CHART_FILES[0]),
        pipeline_chart(summary, results_dir / CHART_FILES[1]),
    ]


def _whiskers(
    rates: Sequence[float | None], cis: Sequence[Sequence[float] | None]
) -> list[list[float]]:
    """Error-bar lengths in percent points below and above each rate (0 where n/a)."""
    below, above = [], []
    for r, ci in zip(rates, cis, strict=True):
        if r is None or ci is None:
            below.append(0.0)
            above.append(0.0)
        else:
            below.append(max(0.0, 100 * (r - ci[0])))
            above.append(max(0.0, 100 * (ci[1] - r)))
    return [below, above]


def _curve(
    ax: Axes,
    budgets: Sequence[int],
    figures: dict[str, Any],
    colour: str,
    marker: str,
    strong: bool,
    dashed: bool,
    gid: str,
    scale: float = 100,
) -> None:
    """One system's line over the budgets (or another x), whiskers for its 95% intervals;
    n/a points are gaps. The highlighted and the competitor's lines, drawn on top, print
    each value so that 0% reads as 0%, not as a line lost on the axis. ``scale`` 1: a
    count, printed as it is."""
    rates = figures["rates"]
    ax.errorbar(
        budgets,
        [float("nan") if r is None else scale * r for r in rates],
        yerr=_whiskers(rates, figures.get("intervals") or [None] * len(rates)),
        color=colour,
        marker=marker,
        markersize=5 if strong else 3.5,
        linewidth=2.0 if strong else 0.9,
        linestyle="--" if dashed else "-",
        capsize=2,
        elinewidth=0.7,
        alpha=1 if strong else 0.6,
        zorder=3 if strong else 2,
        clip_on=False,
        gid=gid,
    )
    if not strong or dashed:
        return
    for b, r in zip(budgets, rates, strict=True):
        if r is not None:
            offset = (0, 6) if colour == HIGHLIGHT else (0, -10)
            text = value_text(100 * r) if scale == 100 else f"{r:g}"
            ax.annotate(text, (b, scale * r), xytext=offset, fontsize=6,
                        textcoords="offset points", ha="center", color=colour)  # fmt: skip


def _curve_label(name: str, role: str, missing: Sequence[int], budgets: Sequence[int]) -> str:
    """A legend entry: the system, its role, and where it has no figure ("n/a")."""
    if missing and len(missing) == len(budgets):
        return f"{name}{role}: n/a, no figure"
    if missing:
        return f"{name}{role} (n/a at {', '.join(map(str, missing))})"
    return name + role


Series = Mapping[str, Mapping[str, Any]]  # style -> system -> {"rates", "intervals"}
MARKERS = "os^Dvp*hX<>"


def curve_panel(
    ax: Axes,
    xs: Sequence[int],
    series: Series,
    key: str,
    label: str,
    xlabel: str,
    percent: bool = True,
    marker_of: Mapping[str, str] | None = None,
) -> tuple[str, str | None, int, list[Any]]:
    """One metric over ``xs`` on ``ax``: a line per system and style (solid: the first
    style, dashed: the others, e.g. extractors or repair off/on), whiskers for the 95%
    intervals. The competitor is the best of the rest under the first style, by its
    mean over ``xs``. Returns the highlighted system, the competitor, its ties and one
    legend handle per system. ``percent=False``: counts, drawn as they are; ``marker_of``
    keeps a system's marker the same across panels."""
    from matplotlib.lines import Line2D

    styles = list(series)
    names = list(dict.fromkeys(n for s in styles for n in series[s]))
    nothing = {"rates": [None] * len(xs), "intervals": [None] * len(xs)}

    def figures(style: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = series[style].get(name) or nothing
        return found

    chosen = highlighted(names)
    main = {n: figures(styles[0], n) for n in names}
    candidates = {
        n: list(zip(f["rates"], f["intervals"], strict=True))
        for n, f in main.items()
        if competes(n, chosen)
    }
    rival, ties = strongest(candidates, lower_is_better(key))
    colour = colours(names, chosen, rival)
    roles = {chosen: " (highlighted)"}
    if rival is not None:
        roles[rival] = f" (strongest competitor{f', +{ties} tied' if ties else ''})"
    scale = 100 if percent else 1
    handles = []
    for i, name in enumerate(names):
        marker = (marker_of or {}).get(name) or MARKERS[i % len(MARKERS)]
        strong = name in roles
        for j, style in enumerate(styles):
            mine = figures(style, name)
            if any(r is not None for r in mine["rates"]):
                _curve(ax, xs, mine, colour[name], marker, strong, j > 0, f"{name} ({style})",
                       scale)  # fmt: skip
        missing = [x for x, r in zip(xs, main[name]["rates"], strict=True) if r is None]
        text = _curve_label(name, roles.get(name, ""), missing, xs)
        handles.append(Line2D([], [], color=colour[name], marker=marker, label=text))
    ax.set_xticks(list(xs), [str(x) for x in xs])
    ax.set_xticks([], minor=True)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(axis_label(label, key) if percent else _count_label(label, key))
    if percent:
        ax.set_ylim(-3, 103)  # a figure at 0% or 100% sits inside the frame
    else:
        ax.set_ylim(bottom=-0.03 * max(1.0, ax.get_ylim()[1]))  # a count of 0 shows too
    ax.grid(alpha=0.3)
    return chosen, rival, ties, handles


def _count_label(label: str, key: str) -> str:
    return f"{label} ({'lower' if lower_is_better(key) else 'higher'} is better)"


def style_handles(styles: Sequence[str], prefix: str) -> list[Any]:
    """Legend entries for the line styles (solid: the first, dashed: the others)."""
    from matplotlib.lines import Line2D

    return [
        Line2D([], [], color=INK, linestyle="--" if j else "-", label=f"{prefix}{s}")
        for j, s in enumerate(styles)
    ]


def curve_figure(curves: dict[str, Any], key: str, label: str) -> Figure:
    """One metric of ``curve.run_curve`` over the token budgets: a line per system and
    extractor (solid: the first, dashed: the others), drawn by ``curve_panel``."""
    from matplotlib.figure import Figure

    budgets = curves["budgets"]
    series = {e: {n: m.get(key) for n, m in s.items()} for e, s in curves["curves"].items()}
    fig = Figure(figsize=(10, 5.2), layout="constrained")
    ax = fig.subplots()
    ax.set_xscale("log")
    chosen, rival, _, handles = curve_panel(ax, budgets, series, key, label, "token budget")
    if len(series) > 1:
        handles += style_handles(list(series), "extractor ")
    vs = f" vs strongest competitor {rival}" if rival else ""
    ax.set_title(
        f"branchbench {curves['split']}: {label} by token budget, {chosen}{vs}\n"
        "whiskers: 95% intervals",
        fontsize=9,
    )
    fig.legend(handles=handles, loc="outside right upper", fontsize=7, frameon=False)
    return fig


class CurvePanel(NamedTuple):
    """One panel of ``curve_grid``: a metric over ``xs``, one line per system and style."""

    title: str
    xs: Sequence[int]
    series: Series
    key: str
    label: str
    xlabel: str
    percent: bool


def curve_grid(rows: Sequence[Sequence[CurvePanel]], title: str) -> Figure:
    """Small multiples of ``curve_panel`` (the cascade's cadence sweeps). Each panel picks
    its own competitor and names it in its title; a system keeps its marker everywhere,
    so one legend lists them, with what the colours mean."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    cols = max((len(r) for r in rows), default=1) or 1
    fig = Figure(figsize=(4.2 * cols + 2.4, 3.4 * max(len(rows), 1) + 1.0), layout="constrained")
    axes = fig.subplots(max(len(rows), 1), cols, squeeze=False)
    names = list(dict.fromkeys(n for row in rows for p in row for s in p.series.values()
                               for n in s))  # fmt: skip
    markers = {n: MARKERS[i % len(MARKERS)] for i, n in enumerate(names)}
    chosen = highlighted(names) if names else ""
    for r, row in enumerate(rows):
        for c in range(cols):
            ax = axes[r][c]
            if c >= len(row):
                ax.set_visible(False)
                continue
            p = row[c]
            _, rival, ties, _ = curve_panel(
                ax, p.xs, p.series, p.key, p.label, p.xlabel, p.percent, markers
            )
            ax.xaxis.label.set_fontsize(7)
            ax.yaxis.label.set_fontsize(7)
            ax.tick_params(labelsize=7)
            ax.set_title(f"{p.title}\nvs {_competitor_text(rival, ties)}", fontsize=8)
    handles = [
        Line2D([], [], color=INK, marker=m, linestyle="none", label=n) for n, m in markers.items()
    ]
    handles += [
        Line2D([], [], color=HIGHLIGHT, linewidth=2, label=f"{chosen} (highlighted)"),
        Line2D([], [], color=COMPETITOR, linewidth=2,
               label="strongest competitor (named in the panel title)"),
        Line2D([], [], color=OTHER, linewidth=2, label="other systems"),
    ]  # fmt: skip
    fig.legend(handles=handles, loc="outside right upper", fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=9)
    return fig


def has_matplotlib() -> bool:
    """Charts need the ``[bench]`` extra; everything else works without it."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
