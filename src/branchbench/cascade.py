"""The correction cascade: stale summaries and profiles, and the work to repair them.

``branchbench cascade`` runs the ``cascade`` split (facts corrected after summaries and
profiles restated them) under the ``summary`` and ``profile`` pipelines, once without
and once with each system's repair mechanism (``RunConfig.repair``; a system without one
runs the same twice), sweeping one cadence constant at a time over ``CADENCES`` with the
others at their defaults. Each point is a complete results directory
(``<constant>-<value>/repair-<off|on>/``). Per system it reports the share of summary
and profile lines shown at the anchor that restate a corrected value (artifact stale
rate), the artifacts the pipeline wrote on the path and the system showed nowhere
(missing), what the repair rebuilt and read, and whether the system kept every artifact
it was given (the ``stored`` check of ``branchbench.artifacts``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from branchbench.pipeline import PROFILE_EVERY, SUMMARY_EVERY, WINDOW
from branchbench.runner import Progress, RunConfig, run, write_atomic

CADENCES: Mapping[str, tuple[int, ...]] = {
    "summary_every": (2, 3, 4, 6, 8),
    "profile_every": (2, 3, 4, 6, 8),
}  # WINDOW is not swept here: a window step writes facts, never a summary or profile
DEFAULTS = {"summary_every": SUMMARY_EVERY, "profile_every": PROFILE_EVERY, "window": WINDOW}
MODES = {"summary_every": "summary", "profile_every": "profile", "window": "window"}


def tally(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per system: artifact lines shown, stale, missing, repair work, dropped, stale probes."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        t = out.setdefault(
            row["system"],
            {"shown": 0, "stale": 0, "missing": 0, "rebuilt": 0, "read": 0, "repair": False},
        )
        art = row.get("artifacts") or {}
        for key in ("shown", "stale", "missing"):
            t[key] += art.get(key, 0)
        if row.get("repair") is not None:
            t["repair"] = True
            t["rebuilt"] += row["repair"]["rebuilt"]
            t["read"] += row["repair"]["read"]
        t["dropped"] = max(t.get("dropped", 0), len(row.get("dropped") or ()))
        t["observations"] = t.get("observations", 0) + 1
    for t in out.values():
        t["stale_rate"] = t["stale"] / t["shown"] if t["shown"] else None
    return out


def run_cascade(
    config: RunConfig,
    out_dir: Path,
    cadences: Mapping[str, Sequence[int]] = CADENCES,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every cadence point, without and with repair; written to ``cascade.json``/``.md``."""
    points: dict[str, Any] = {}
    for constant, values in cadences.items():
        for value in values:
            for repair in (False, True):
                target = out_dir / f"{constant}-{value}" / f"repair-{'on' if repair else 'off'}"
                cadence = {**DEFAULTS, constant: value}
                point = replace(
                    config,
                    pipelines=[MODES[constant]],
                    read_policies=["path"],
                    repair=repair,
                    window=cadence["window"],
                    summary_every=cadence["summary_every"],
                    profile_every=cadence["profile_every"],
                )
                run(point, target, progress)
                text = (target / "contexts.jsonl").read_text(encoding="utf-8")
                rows = [json.loads(line) for line in text.splitlines() if line]
                key = f"{constant}={value} repair={'on' if repair else 'off'}"
                points[key] = {
                    "constant": constant,
                    "value": value,
                    "repair": repair,
                    "systems": tally(rows),
                }
    result = {"split": config.split, "cadences": {k: list(v) for k, v in cadences.items()}}
    result["points"] = points
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "cascade.json", json.dumps(result, indent=2) + "\n")
    write_atomic(out_dir / "cascade.md", cascade_markdown(result))
    return result


def _pct(rate: float | None) -> str:
    return "–" if rate is None else f"{100 * rate:.0f}"


def cascade_markdown(result: dict[str, Any]) -> str:
    """One table per cadence constant: systems down, values across; each cell is
    stale % of artifact lines shown (off → on) / missing (off → on) / rebuilt·read."""
    parts = [
        f"# branchbench correction cascade — split `{result['split']}`",
        "Each cell: artifact stale % without → with repair; artifacts missing at the "
        "anchor without → with; with repair, artifacts rebuilt / fact records read. "
        "`–`: no summary or profile shown. A system without a repair mechanism runs the "
        "same twice. DROPPED: the system did not keep an artifact it was given.",
    ]
    for constant, values in result["cadences"].items():
        header = ["system", *[f"{constant}={v}" for v in values]]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        names = list(result["points"][f"{constant}={values[0]} repair=off"]["systems"])
        for name in names:
            cells = []
            for v in values:
                off = result["points"][f"{constant}={v} repair=off"]["systems"][name]
                on = result["points"][f"{constant}={v} repair=on"]["systems"][name]
                cell = (
                    f"{_pct(off['stale_rate'])} → {_pct(on['stale_rate'])} / "
                    f"{off['missing']} → {on['missing']}"
                )
                if on["repair"]:
                    cell += f" / {on['rebuilt']}·{on['read']}"
                if off["dropped"] or on["dropped"]:
                    cell += " DROPPED"
                cells.append(cell)
            lines.append("| " + " | ".join([name, *cells]) + " |")
        parts += [
            f"## `{constant}` (mode `{MODES[constant]}`, read policy `path`)",
            "\n".join(lines),
        ]
    return "\n\n".join(parts) + "\n"
