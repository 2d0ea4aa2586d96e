"""Retain and leak as curves over the token budget.

One budget proves little: on a short split every context holds the whole path, so every
system retains everything by construction; on a long one the figure depends on where the
budget happens to cut. ``branchbench curve`` runs the same split at several budgets
(each a complete results directory, ``budget-N/``) and reports each rate per budget,
with its interval, in ``curves.json``/``curves.md`` and one chart per metric.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from branchbench.charts import has_matplotlib
from branchbench.report import cell, write_outputs
from branchbench.runner import Progress, RunConfig, run, write_atomic
from branchbench.score import summarize

CURVE_BUDGETS = (500, 1000, 1500, 3000, 6000)
CURVE_METRICS = (
    ("context_retain_rate", "retain"),
    ("context_leak_rate", "leak"),
    ("memory_leak_rate", "memory leak"),
    ("context_stale_rate", "stale"),
)


def run_curve(
    config: RunConfig,
    out_dir: Path,
    budgets: Sequence[int] = CURVE_BUDGETS,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run ``config`` at every budget and collect the curves (also written to disk)."""
    per_budget: dict[int, dict[str, Any]] = {}
    for budget in budgets:
        target = out_dir / f"budget-{budget}"
        run(replace(config, budget=budget), target, progress)
        summary = summarize(target)
        write_outputs(summary, target)
        per_budget[budget] = summary
    first = per_budget[budgets[0]]
    curves: dict[str, Any] = {
        "split": first["split"],
        "budgets": list(budgets),
        "probes": first["probes"],
        "extractors": first["extractors"],
        "record": first.get("record"),
        "curves": {
            extractor: {
                name: {
                    key: {
                        "rates": [
                            per_budget[b]["by_extractor"][extractor][name][key] for b in budgets
                        ],
                        "intervals": [
                            per_budget[b]["by_extractor"][extractor][name]["intervals"][key]
                            for b in budgets
                        ],
                        "n": per_budget[budgets[0]]["by_extractor"][extractor][name]["n"][key],
                    }
                    for key, _ in CURVE_METRICS
                }
                for name in first["by_extractor"][extractor]
            }
            for extractor in first["extractors"]
        },
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "curves.json", json.dumps(curves, ensure_ascii=False, indent=2) + "\n")
    write_atomic(out_dir / "curves.md", curves_markdown(curves))
    return curves


def curves_markdown(curves: dict[str, Any]) -> str:
    """One table per metric and extractor: systems down, budgets across."""
    budgets = curves["budgets"]
    parts = [
        f"# branchbench curves — split `{curves['split']}`",
        f"{curves['probes']} probes per budget; rates with 95% Wilson intervals; n/a: the "
        "system has no memory section. At a budget that holds the whole anchor path, "
        "retain is true by construction for every system.",
    ]
    for key, label in CURVE_METRICS:
        for extractor, systems in curves["curves"].items():
            header = ["system", *[f"{b} tokens" for b in budgets]]
            rows = []
            for name, metrics in systems.items():
                m = metrics[key]
                cells = [
                    "n/a" if r is None and m["n"] == 0 else cell(key, r, ci)
                    for r, ci in zip(m["rates"], m["intervals"], strict=True)
                ]
                rows.append([name, *cells])
            n = next((s[key]["n"] for s in systems.values() if s[key]["n"]), 0)
            parts.append(f"## {label}, extractor `{extractor}` (n={n})")
            lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(r) + " |" for r in rows]
            parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def curve_charts(curves: dict[str, Any], out_dir: Path) -> list[Path]:
    """One PNG per metric, drawn by ``charts.curve_figure`` (axes labelled, branchmem
    against its strongest competitor, 95% whiskers). Needs matplotlib; returns nothing
    without it."""
    if not has_matplotlib():
        return []
    from branchbench.charts import curve_figure

    written = []
    for key, label in CURVE_METRICS:
        path = out_dir / f"{key.removesuffix('_rate')}_by_budget.png"
        curve_figure(curves, key, label).savefig(path, dpi=120)
        written.append(path)
    return written
