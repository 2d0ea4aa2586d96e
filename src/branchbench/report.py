"""Tables and the chart: summary.md, summary.json, a PNG, and the console table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table

MAIN_COLUMNS = (
    ("context_leak_rate", "leak"),
    ("context_retain_rate", "retain"),
    ("context_stale_rate", "stale"),
    ("context_retracted_rate", "retracted"),
    ("memory_leak_rate", "memory leak"),
    ("memory_retain_rate", "memory retain"),
    ("mean_context_tokens", "tokens"),
)
MODEL_COLUMNS = (
    ("leak_rate", "leak"),
    ("correct_rate", "correct"),
    ("sibling_outright_rate", "sibling outright"),
    ("retain_rate", "retain"),
    ("stale_rate", "stale"),
)


def cell(key: str, value: Any) -> str:
    """A rate as a percentage, other figures as they are, a dash for no probes."""
    if value is None:
        return "–"
    if key.endswith("_rate"):
        return f"{value * 100:.1f}%"
    return str(value)


def _columns(
    systems: dict[str, Any], columns: tuple[tuple[str, str], ...]
) -> list[tuple[str, str]]:
    """Drop columns that are empty for every system (e.g. retracted outside invalidation)."""
    return [(k, h) for k, h in columns if any(s.get(k) is not None for s in systems.values())]


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _system_table(systems: dict[str, Any], columns: tuple[tuple[str, str], ...]) -> str:
    cols = _columns(systems, columns)
    return _md_table(
        ["system", *[h for _, h in cols]],
        [[name, *[cell(k, s.get(k)) for k, _ in cols]] for name, s in systems.items()],
    )


def _operation_table(systems: dict[str, Any], operations: list[str], key: str) -> str:
    rows = [
        [name, *[cell(key, s["per_operation"].get(op, {}).get(key)) for op in operations]]
        for name, s in systems.items()
    ]
    return _md_table(["system", *operations], rows)


def markdown(summary: dict[str, Any]) -> str:
    """The summary.md text: main table, per-operation tables, sensitivity tables."""
    ops = summary["operations"]
    systems = summary["systems"]
    sens = summary["sensitivity"]
    parts = [
        f"# branchbench — split `{summary['split']}`",
        f"{summary['probes']} probes ({summary['leak_probes']} leak), token budget "
        f"{summary['budget']}, extractor `{summary['extractor']}`, manifest sha256 "
        f"`{summary['manifest_sha256'] or 'n/a (split not frozen)'}`.",
        "Model-free: leak = a forbidden keyword is in the context; retain = every answer "
        "keyword is in it; stale/retracted = the old value is in the memory section.",
        "## Main table (model-free)",
        _system_table(systems, MAIN_COLUMNS),
        "## Context leak rate by operation",
        _operation_table(systems, ops, "context_leak_rate"),
        "## Context retain rate by operation",
        _operation_table(systems, ops, "context_retain_rate"),
        "## Sensitivity: without probes whose forbidden word is in the question",
        f"Dropped: {', '.join(sens['dropped_probes']) or 'none'}.",
        _system_table(sens["systems"], MAIN_COLUMNS[:3]),
    ]
    model = summary.get("model")
    if model:
        for prompt, table in model["prompts"].items():
            parts += [
                f"## With a model: `{model['name']}`, prompt `{prompt}`, "
                f"{model['runs']} runs, temperature 0",
                _system_table(table, MODEL_COLUMNS),
                f"### Leak rate by operation (`{prompt}`)",
                _operation_table(table, ops, "leak_rate"),
                f"### Sensitivity (`{prompt}`)",
                _system_table(model["sensitivity"][prompt], MODEL_COLUMNS),
            ]
    return "\n\n".join(parts) + "\n"


def console_table(summary: dict[str, Any]) -> Table:
    """The main model-free table for the terminal."""
    systems = summary["systems"]
    cols = _columns(systems, MAIN_COLUMNS[:6])
    table = Table(
        title=f"branchbench {summary['split']}: {summary['probes']} probes "
        f"({summary['leak_probes']} leak), model-free context rates"
    )
    table.add_column("system")
    for _, header in cols:
        table.add_column(header, justify="right")
    for name, s in systems.items():
        table.add_row(name, *[cell(k, s.get(k)) for k, _ in cols])
    return table


def model_table(summary: dict[str, Any], prompt: str) -> Table:
    """The with-model table for one prompt."""
    model = summary["model"]
    table = Table(title=f"{model['name']}, prompt {prompt}: answer rates")
    table.add_column("system")
    for _, header in MODEL_COLUMNS:
        table.add_column(header, justify="right")
    for name, s in model["prompts"][prompt].items():
        table.add_row(name, *[cell(k, s.get(k)) for k, _ in MODEL_COLUMNS])
    return table


def chart(summary: dict[str, Any], path: Path) -> Path:
    """Bar chart of context leak rate by system and operation."""
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
    """Write summary.json, summary.md and leak_by_operation.png into the results dir."""
    json_path = results_dir / "summary.json"
    json_path.write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    md_path = results_dir / "summary.md"
    md_path.write_text(markdown(summary), encoding="utf-8")
    return [json_path, md_path, chart(summary, results_dir / "leak_by_operation.png")]
