"""Tables and charts: summary.md, summary.json, PNGs, and the console tables.

The report keeps apart what holds by construction (structural bounds, said so) and what
is measured; every rate carries its 95% Wilson interval and the probes it rests on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table

# (key, header, is_memory): memory columns print n/a for a system without a memory section
MEASURED = (
    ("memory_leak_rate", "memory leak", True),
    ("memory_retain_rate", "memory retain", True),
    ("context_stale_rate", "stale", True),
    ("context_retracted_rate", "retracted", True),
    ("retain_beyond_window_rate", "retain beyond window", False),
)
CONTEXT = (
    ("context_leak_rate", "leak", False),
    ("transcript_leak_rate", "of it from the transcript", False),
    ("context_retain_rate", "retain", False),
)
BOUNDS = (
    ("context_leak_rate", "leak", False),
    ("context_retain_rate", "retain", False),
)
MODEL_COLUMNS = (
    ("leak_rate", "leak", False),
    ("correct_rate", "correct", False),
    ("sibling_outright_rate", "sibling outright", False),
    ("retain_rate", "retain", False),
    ("stale_rate", "stale", False),
)
Columns = tuple[tuple[str, str, bool], ...]

BOUNDS_NOTE = (
    "These rows hold by construction, not by measurement: the validator puts every "
    "forbidden keyword only off the anchor path and every answer keyword on it, so a "
    "transcript in arrival order leaks every leak probe whose abandoned message fits the "
    "budget, a transcript of the anchor path leaks none, and a context holding the whole "
    "anchor path retains every retain probe."
)
MEASURED_NOTE = (
    "What the memory section does (n/a: the system has none). Stale and retracted count a "
    "value only where the memory asserts it as current. *Retain beyond window* is the "
    "retain rate on the probes whose anchor path did not fit the budget (count in "
    "brackets); it is the one retain figure that is not true by construction."
)


def cell(key: str, value: Any, interval: list[float] | None = None) -> str:
    """A rate as a percentage with its interval, other figures as they are, a dash for
    no probes."""
    if value is None:
        return "–"
    if key.endswith("_rate"):
        text = f"{value * 100:.1f}%"
        if interval is not None:
            text += f" [{interval[0] * 100:.0f}–{interval[1] * 100:.0f}]"
        return text
    return str(value)


def _cell(entry: dict[str, Any], key: str, is_memory: bool, with_ci: bool = True) -> str:
    if is_memory and not entry.get("has_memory", True):
        return "n/a"
    interval = entry.get("intervals", {}).get(key) if with_ci else None
    text = cell(key, entry.get(key), interval)
    if key == "retain_beyond_window_rate":
        text += f" ({entry.get('n', {}).get(key, 0)})"
    return text


def _columns(systems: dict[str, Any], columns: Columns) -> Columns:
    """Drop columns with no probe for any system (e.g. retracted outside invalidation)."""
    return tuple(
        (k, h, m)
        for k, h, m in columns
        if k == "retain_beyond_window_rate"  # "– (0)" says the budget never bound
        or any(s.get("n", {}).get(k, 1) or s.get(k) is not None for s in systems.values())
    )


def _n(systems: dict[str, Any], key: str) -> str:
    counts = {s.get("n", {}).get(key) for s in systems.values() if s.get("has_memory", True)}
    counts.discard(None)
    return f" (n={counts.pop()})" if len(counts) == 1 and key != "retain_beyond_window_rate" else ""


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _system_table(systems: dict[str, Any], columns: Columns) -> str:
    cols = _columns(systems, columns)
    return _md_table(
        ["system", *[h + _n(systems, k) for k, h, _ in cols]],
        [[name, *[_cell(s, k, m) for k, _, m in cols]] for name, s in systems.items()],
    )


def _operation_table(systems: dict[str, Any], operations: list[str], key: str) -> str:
    rows = [
        [name, *[cell(key, s["per_operation"].get(op, {}).get(key)) for op in operations]]
        for name, s in systems.items()
    ]
    return _md_table(["system", *operations], rows)


def split_rows(systems: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(structural bounds, measured systems): a system without a memory section only
    restates the validator's rules."""
    bounds = {n: s for n, s in systems.items() if not s.get("has_memory", True)}
    measured = {n: s for n, s in systems.items() if s.get("has_memory", True)}
    return bounds, measured


def markdown(summary: dict[str, Any]) -> str:
    """The summary.md text: bounds, measurements per extractor, context totals,
    per-operation tables, sensitivity tables, model tables."""
    ops = summary["operations"]
    systems = summary["systems"]
    sens = summary["sensitivity"]
    bounds, measured = split_rows(systems)
    any_entry = next(iter(systems.values()))
    n_retain = any_entry.get("probes", {}).get("retain", 0)
    record = summary.get("record") or {}
    parts = [
        f"# branchbench — split `{summary['split']}`",
        f"{summary['probes']} probes ({summary['leak_probes']} leak), token budget "
        f"{summary['budget']}, extractors {', '.join(f'`{e}`' for e in summary['extractors'])}"
        f", manifest sha256 `{summary['manifest_sha256'] or 'n/a (split not frozen)'}`, "
        f"commit `{record.get('git_commit')}`, code sha256 "
        f"`{(record.get('code_sha256') or '')[:16]}`.",
        "Rates are percentages with a 95% Wilson interval in brackets; n is the number of "
        "probes a column rests on.",
        "## Structural bounds (true by construction)",
        BOUNDS_NOTE
        + f" The whole anchor path fit the budget on {any_entry.get('path_fits', 0)} of "
        f"{summary['probes']} probes ({n_retain} retain probes).",
        _system_table(bounds, BOUNDS) if bounds else "(no such system in this run)",
    ]
    for extractor, table in summary.get("by_extractor", {"": systems}).items():
        _, mine = split_rows(table)
        parts += [
            f"## Measurements: derived memory, extractor `{extractor}`",
            MEASURED_NOTE,
            _system_table(mine, MEASURED),
        ]
    parts += [
        "## Whole context (memory + transcript)",
        "The transcript's share of the leak is structural (see above); the rest comes "
        "from the memory section.",
        _system_table(measured, CONTEXT),
        "## Context leak rate by operation",
        _operation_table(systems, ops, "context_leak_rate"),
        "## Memory leak rate by operation",
        _operation_table(measured, ops, "memory_leak_rate"),
        "## Sensitivity: without probes whose forbidden word is in the question",
        f"Dropped: {', '.join(sens['dropped_probes']) or 'none'}.",
        _system_table(sens["systems"], CONTEXT),
    ]
    model = summary.get("model")
    if model:
        for prompt, table in model["prompts"].items():
            parts += [
                f"## With a model: `{model['name']}`, prompt `{prompt}`, "
                f"{model['runs']} runs, temperature 0, extractor `{model.get('extractor')}`",
                _system_table(table, MODEL_COLUMNS),
                f"### Leak rate by operation (`{prompt}`)",
                _operation_table(table, ops, "leak_rate"),
                f"### Sensitivity (`{prompt}`)",
                _system_table(model["sensitivity"][prompt], MODEL_COLUMNS),
            ]
    return "\n\n".join(parts) + "\n"


def _rich_table(title: str, systems: dict[str, Any], columns: Columns) -> Table:
    cols = _columns(systems, columns)
    table = Table(title=title)
    table.add_column("system")
    for key, header, _ in cols:
        table.add_column(header + _n(systems, key), justify="right")
    for name, s in systems.items():
        table.add_row(name, *[_cell(s, k, m, with_ci=False) for k, _, m in cols])
    return table


def console_tables(summary: dict[str, Any]) -> list[Table]:
    """The terminal view: bounds, then the measurements under each extractor."""
    bounds, measured = split_rows(summary["systems"])
    head = f"branchbench {summary['split']}: {summary['probes']} probes"
    tables = []
    if bounds:
        tables.append(
            _rich_table(f"{head} — structural bounds (true by construction)", bounds, BOUNDS)
        )
    tables.append(_rich_table(f"{head} — whole context", measured, CONTEXT))
    for extractor, table in summary.get("by_extractor", {}).items():
        _, mine = split_rows(table)
        tables.append(
            _rich_table(f"{head} — measured: memory section, extractor {extractor}", mine, MEASURED)
        )
    return tables


def console_table(summary: dict[str, Any]) -> Table:
    """The main measured table (first extractor) for the terminal."""
    _, measured = split_rows(summary["systems"])
    return _rich_table(
        f"branchbench {summary['split']}: {summary['probes']} probes, measured", measured, MEASURED
    )


def model_table(summary: dict[str, Any], prompt: str) -> Table:
    """The with-model table for one prompt."""
    model = summary["model"]
    return _rich_table(
        f"{model['name']}, prompt {prompt}: answer rates", model["prompts"][prompt], MODEL_COLUMNS
    )


def chart(summary: dict[str, Any], path: Path) -> Path:
    """Bar chart of context leak rate by system and operation (needs matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = summary["operations"]
    systems = summary["systems"]
    fig, ax = plt.subplots(figsize=(max(7.0, 1.6 * len(ops) + 4), 4.5))
    width = 0.8 / max(1, len(systems))
    for i, (name, s) in enumerate(systems.items()):
        values = [
            100 * (s["per_operation"].get(op, {}).get("context_leak_rate") or 0.0) for op in ops
        ]
        ax.bar([x + i * width for x in range(len(ops))], values, width, label=name)
    ax.set_xticks([x + width * (len(systems) - 1) / 2 for x in range(len(ops))], ops, rotation=15)
    ax.set_ylabel("context leak rate (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"branchbench {summary['split']}: leak by system and operation")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_outputs(summary: dict[str, Any], results_dir: Path) -> list[Path]:
    """Write summary.json and summary.md (the chart is a separate, optional step)."""
    json_path = results_dir / "summary.json"
    json_path.write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    md_path = results_dir / "summary.md"
    md_path.write_text(markdown(summary), encoding="utf-8")
    return [json_path, md_path]


def has_matplotlib() -> bool:
    """Charts need the ``[bench]`` extra; everything else works without it."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
