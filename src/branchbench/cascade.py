"""The correction cascade: stale summaries and profiles, and the work to repair them.

``branchbench cascade`` runs the ``cascade`` split (facts corrected after summaries and
profiles restated them), sweeping one cadence constant at a time over ``CADENCES`` with
the others at their defaults, each point a complete results directory
(``<constant>-<value>/<policy>-repair-<off|on>/``):

- ``summary_every`` and ``profile_every`` under the ``summary`` and ``profile`` modes,
  read policy ``path``, once without and once with each system's repair mechanism
  (``RunConfig.repair``; a system without one runs the same twice). Per system: the share
  of summary and profile lines shown at the anchor that restate a corrected value
  (artifact stale rate), the artifacts the pipeline wrote on the path and the system
  showed nowhere (missing), what the repair rebuilt and read, and whether the system kept
  every artifact it was given (the ``stored`` check of ``branchbench.artifacts``);
- ``window`` under the ``window`` mode, read policies ``path`` and ``arrival`` (``ungated``
  reads the same window as ``path``). A window step writes facts, never a digest, so
  there is nothing to repair (repair off only) and no artifact rate: what moves is the
  probes' memory leak, retain and stale rates. Under ``path`` a window holds only the
  message's own path, so a write-point design cannot leak whatever its size; under
  ``arrival`` it holds the last arrivals, siblings included.

Besides ``cascade.json`` and ``cascade.md``, ``cascade_charts`` draws the curves
(``CASCADE_CHARTS``) with ``charts.curve_panel``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from branchbench.charts import has_matplotlib
from branchbench.pipeline import PROFILE_EVERY, SUMMARY_EVERY, WINDOW
from branchbench.report import interval
from branchbench.runner import Progress, RunConfig, run, write_atomic
from branchbench.score import context_rates, scenario_bootstrap, wilson

CADENCES: Mapping[str, tuple[int, ...]] = {
    "summary_every": (2, 3, 4, 6, 8),
    "profile_every": (2, 3, 4, 6, 8),
    "window": (1, 2, 3, 4, 6, 8),  # 1: the message alone, as one_message reads
}
DEFAULTS = {"summary_every": SUMMARY_EVERY, "profile_every": PROFILE_EVERY, "window": WINDOW}
MODES = {"summary_every": "summary", "profile_every": "profile", "window": "window"}
POLICIES: Mapping[str, tuple[str, ...]] = {
    "summary_every": ("path",),
    "profile_every": ("path",),
    "window": ("path", "arrival"),
}
DIGESTS = ("summary_every", "profile_every")  # constants whose steps write digests
PROBE_RATES = (
    ("memory_leak_rate", "memory leak"),
    ("memory_retain_rate", "memory retain"),
    ("context_stale_rate", "stale"),
)
CASCADE_CHARTS = ("cascade_digests.png", "cascade_window.png")


def tally(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per system: artifact lines shown, stale, missing, repair work, dropped, and the
    probes' memory leak / retain / stale rates, each rate with its 95% intervals (Wilson,
    and a bootstrap over scenarios: a scenario's lines share its dialogue)."""
    out: dict[str, dict[str, Any]] = {}
    by_system: dict[str, list[dict[str, Any]]] = {}
    cells: dict[str, dict[str, list[int]]] = {}
    for row in rows:
        by_system.setdefault(row["system"], []).append(row)
        t = out.setdefault(
            row["system"],
            {"shown": 0, "stale": 0, "missing": 0, "rebuilt": 0, "read": 0, "repair": False},
        )
        art = row.get("artifacts") or {}
        for key in ("shown", "stale", "missing"):
            t[key] += art.get(key, 0)
        cell = cells.setdefault(row["system"], {}).setdefault(row["scenario"], [0, 0])
        cell[0] += art.get("stale", 0)
        cell[1] += art.get("shown", 0)
        if row.get("repair") is not None:
            t["repair"] = True
            t["rebuilt"] += row["repair"]["rebuilt"]
            t["read"] += row["repair"]["read"]
        t["dropped"] = max(t.get("dropped", 0), len(row.get("dropped") or ()))
        t["observations"] = t.get("observations", 0) + 1
    for name, t in out.items():
        t["stale_rate"] = t["stale"] / t["shown"] if t["shown"] else None
        t["intervals"] = {"stale_rate": wilson(t["stale"], t["shown"])}
        t["bootstrap"] = {"stale_rate": scenario_bootstrap((h, n) for h, n in cells[name].values())}
        rates = context_rates(by_system[name])
        for key, _ in PROBE_RATES:
            t[key] = rates[key]
            t["intervals"][key] = rates["intervals"][key]
            t["bootstrap"][key] = rates["bootstrap"][key]
            t.setdefault("n", {})[key] = rates["n"][key]
    return out


def point_key(constant: str, value: int, policy: str, repair: bool) -> str:
    """A point's key in ``cascade.json``'s ``points``."""
    return f"{constant}={value} policy={policy} repair={'on' if repair else 'off'}"


def repairs(constant: str) -> tuple[bool, ...]:
    """Repair off and on where a step writes digests; off alone for the window (a repair
    rebuilds digests, and a window step writes none)."""
    return (False, True) if constant in DIGESTS else (False,)


def run_cascade(
    config: RunConfig,
    out_dir: Path,
    cadences: Mapping[str, Sequence[int]] = CADENCES,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every cadence point under its read policies, without and with repair where a step
    writes digests; written to ``cascade.json``/``.md`` (charts: ``cascade_charts``)."""
    points: dict[str, Any] = {}
    for constant, values in cadences.items():
        for value in values:
            for policy in POLICIES[constant]:
                for repair in repairs(constant):
                    target = (
                        out_dir
                        / f"{constant}-{value}"
                        / f"{policy}-repair-{'on' if repair else 'off'}"
                    )
                    cadence = {**DEFAULTS, constant: value}
                    point = replace(
                        config,
                        pipelines=[MODES[constant]],
                        read_policies=[policy],
                        repair=repair,
                        window=cadence["window"],
                        summary_every=cadence["summary_every"],
                        profile_every=cadence["profile_every"],
                    )
                    run(point, target, progress)
                    text = (target / "contexts.jsonl").read_text(encoding="utf-8")
                    rows = [json.loads(line) for line in text.splitlines() if line]
                    points[point_key(constant, value, policy, repair)] = {
                        "constant": constant,
                        "value": value,
                        "policy": policy,
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


def _systems(result: dict[str, Any], constant: str, policy: str) -> dict[str, Any]:
    first = result["cadences"][constant][0]
    return dict(result["points"][point_key(constant, first, policy, False)]["systems"])


def _digest_table(result: dict[str, Any], constant: str) -> str:
    values = result["cadences"][constant]
    header = ["system", *[f"{constant}={v}" for v in values]]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in _systems(result, constant, "path"):
        cells = []
        for v in values:
            off = result["points"][point_key(constant, v, "path", False)]["systems"][name]
            on = result["points"][point_key(constant, v, "path", True)]["systems"][name]
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
    return "\n".join(lines)


def _window_table(result: dict[str, Any], constant: str, policy: str) -> str:
    values = result["cadences"][constant]
    header = ["system", *[f"{constant}={v}" for v in values]]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in _systems(result, constant, policy):
        cells = []
        for v in values:
            entry = result["points"][point_key(constant, v, policy, False)]["systems"][name]
            cells.append(" / ".join(_pct(entry.get(key)) for key, _ in PROBE_RATES))
        lines.append("| " + " | ".join([name, *cells]) + " |")
    return "\n".join(lines)


def cascade_markdown(result: dict[str, Any]) -> str:
    """One table per cadence constant and read policy: systems down, values across."""
    parts = [
        f"# branchbench correction cascade — split `{result['split']}`",
        "Digest constants (`summary_every`, `profile_every`), each cell: artifact stale % "
        "without → with repair; artifacts missing at the anchor without → with; with "
        "repair, artifacts rebuilt · fact records read. `–`: no summary or profile shown. "
        "A system without a repair mechanism runs the same twice. DROPPED: the system did "
        "not keep an artifact it was given.",
        "`window`, each cell: memory leak / memory retain / stale % of the probes (`–`: "
        "the split has no probe of that type). A window step writes no digest: repair off.",
    ]
    for constant in result["cadences"]:
        for policy in POLICIES[constant]:
            parts.append(f"## `{constant}` (mode `{MODES[constant]}`, read policy `{policy}`)")
            parts.append(
                _digest_table(result, constant)
                if constant in DIGESTS
                else _window_table(result, constant, policy)
            )
    return "\n\n".join(parts) + "\n"


def _series(
    result: dict[str, Any],
    constant: str,
    policy: str,
    styles: Mapping[str, tuple[bool, str]],
    only_repairing: bool = False,
) -> dict[str, dict[str, Any]]:
    """style -> system -> {"rates", "intervals"} over the constant's values; a style is
    (repair, figure). Counts have no interval (totals over the whole split)."""
    values = result["cadences"][constant]
    out: dict[str, dict[str, Any]] = {}
    for style, (repair, key) in styles.items():
        out[style] = {}
        for name in _systems(result, constant, policy):
            entries = [
                result["points"][point_key(constant, v, policy, repair)]["systems"][name]
                for v in values
            ]
            if only_repairing and not any(e["repair"] for e in entries):
                continue
            out[style][name] = {
                "rates": [e.get(key) for e in entries],
                "intervals": [interval(e, key) for e in entries],
            }
    return out


def cascade_charts(result: dict[str, Any], out_dir: Path) -> list[Path]:
    """``cascade_digests.png`` (per digest constant: artifact stale %, digests missing at
    the anchor, the repair's work; repair off solid, on dashed) and ``cascade_window.png``
    (per read policy: memory leak, retain, stale over the window). Drawn by
    ``charts.curve_grid``; needs matplotlib, returns nothing without it."""
    if not has_matplotlib():
        return []
    from branchbench.charts import CurvePanel, curve_grid

    written: list[Path] = []
    split = result["split"]
    digests = [c for c in DIGESTS if c in result["cadences"]]
    if digests:
        rows = []
        for c in digests:
            xs, x = result["cadences"][c], f"{c} (arrivals between two digests)"
            off_on = {"repair off": (False, "stale_rate"), "repair on": (True, "stale_rate")}
            missing = {"repair off": (False, "missing"), "repair on": (True, "missing")}
            work = {"digests rebuilt": (True, "rebuilt"), "fact records read": (True, "read")}
            rows.append(
                [
                    CurvePanel(
                        f"{c}: artifact stale", xs, _series(result, c, "path", off_on),
                        "stale_rate", "artifact lines stale %", x, True,
                    ),
                    CurvePanel(
                        f"{c}: digests missing at the anchor", xs,
                        _series(result, c, "path", missing), "missing",
                        "digests missing (probe-anchors)", x, False,
                    ),
                    CurvePanel(
                        f"{c}: repair work", xs,
                        _series(result, c, "path", work, only_repairing=True),
                        "repair_work", "repair work (count over the split)", x, False,
                    ),
                ]
            )  # fmt: skip
        title = (
            f"branchbench {split}: summaries and profiles after corrections, by cadence "
            "(read policy path)\nsolid: repair off, dashed: repair on (repair work: solid "
            "digests rebuilt, dashed fact records read); whiskers: 95% intervals"
        )
        path = out_dir / CASCADE_CHARTS[0]
        curve_grid(rows, title).savefig(path, dpi=120)
        written.append(path)
    if "window" in result["cadences"]:
        xs = result["cadences"]["window"]
        rows = [
            [
                CurvePanel(
                    f"window@{policy}: {label}", xs,
                    _series(result, "window", policy, {policy: (False, key)}), key, label,
                    "window (messages an extraction step reads)", True,
                )
                for key, label in PROBE_RATES
            ]
            for policy in POLICIES["window"]
        ]  # fmt: skip
        title = (
            f"branchbench {split}: what a window step's size does, by read policy\n"
            "whiskers: 95% intervals; n/a: the split has no probe of that type"
        )
        path = out_dir / CASCADE_CHARTS[1]
        curve_grid(rows, title).savefig(path, dpi=120)
        written.append(path)
    return written
