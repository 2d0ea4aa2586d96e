"""The figures table of docs/scaling.md, rebuilt from what the benchmarks of this run wrote.

``make bench`` runs every benchmark (each writes JSON to bench/results/), then this script,
which rewrites the block between the ``figures`` markers of docs/scaling.md: one row per goal
of the performance contract, the figure measured, the goal and whether it was met, with the
machine, the date and the load average each benchmark recorded. A benchmark that did not run
shows as "not measured", never as an old figure.

    python bench/figures.py [--results bench/results] [--doc docs/scaling.md]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BEGIN = "<!-- figures:begin (bench/figures.py writes this block) -->"
END = "<!-- figures:end -->"

Row = tuple[str, str, str, bool | None]  # what, measured, goal, met


def _load(results: Path, name: str) -> dict[str, Any] | None:
    path = results / name
    return json.loads(path.read_text()) if path.exists() else None


def _ratio_row(what: str, value: float | None, goal: float, *, at_most: bool = True) -> Row:
    if value is None:
        return (what, "not measured", f"{'<=' if at_most else '>='} {goal:g}", None)
    met = value <= goal if at_most else value >= goal
    return (what, f"{value:.2f}", f"{'<=' if at_most else '>='} {goal:g}", met)


def agent_rows(results: Path) -> list[Row]:
    found = _load(results, "agent.json")
    by_read = {row["read"]: row for row in found["rows"]} if found else {}
    turns = found["turns"] if found else [1000, 10000]
    rows = []
    for backend in ("memory", "sqlite", "postgres"):
        for read in ("current()", "current(cross_tree=True)", "visible()"):
            row = by_read.get(f"{backend} {read}")
            rows.append(
                _ratio_row(
                    f"{backend} `{read}` t({turns[-1]:,} turns) / t({turns[0]:,})",
                    row["ratio"] if row else None,
                    1.5,
                )
            )
    row = by_read.get("branchmem BranchStore.get (memory)")
    rows.append(
        _ratio_row("LangGraph `BranchStore.get` t(10k) / t(1k)", row["ratio"] if row else None, 1.5)
    )
    return rows


def context_rows(results: Path) -> list[Row]:
    found = _load(results, "context.json")
    by_read = {row["read"]: row for row in found["rows"]} if found else {}
    size = f"{found['records']:,}" if found else "1,000,000"
    return [
        _ratio_row(
            f"{backend} `context()` / `visible()`, depth 200, {size} records",
            by_read[f"{backend} context()"]["ratio"] if f"{backend} context()" in by_read else None,
            1.3,
        )
        for backend in ("memory", "sqlite")
    ]


def records_rows(results: Path) -> list[Row]:
    found = _load(results, "records.json")
    sqlite = found["backends"].get("sqlite") if found else None
    rate = sqlite["batched_per_s"] if sqlite else None
    return [
        (
            "SQLite `add_records` records/s (batches of 1,000)",
            "not measured" if rate is None else f"{rate:,.0f}",
            ">= 10,000",
            None if rate is None else rate >= 10_000,
        )
    ]


def service_rows(results: Path) -> list[Row]:
    found = _load(results, "service.json")
    by_op = {row["operation"]: row for row in found["rows"]} if found else {}
    rows = []
    for op, goal in (("visible", 1.5), ("search", None)):
        row = by_op.get(op)
        for share in ("p50", "p99"):
            what = f"service / embedded `{op}()` {share}, one client, depth 200"
            value = row[f"ratio_{share}"] if row else None
            if goal is None:
                measured = "not measured" if value is None else f"{value:.2f}"
                rows.append((what, measured, "—", None))
            else:
                rows.append(_ratio_row(what, value, goal))
    return rows


def storage_rows(results: Path) -> list[Row]:
    found = _load(results, "storage.json")
    backends = found["backends"] if found else {}
    rows = []
    for backend, goal in (("sqlite", 1.5), ("postgresql", 2.0)):
        got = backends.get(backend)
        sizes = got["rows"] if got else []
        span = (
            f"t({sizes[-1]['records']:,}) / t({sizes[0]['records']:,})" if sizes else "t(1M)/t(10k)"
        )
        rows.append(
            _ratio_row(
                f"{backend} `visible()` at depth 200, {span} records", got and got["ratio"], goal
            )
        )
    lite, pg = backends.get("sqlite"), backends.get("postgresql")
    for kind in ("events", "records"):
        share = None
        if lite and pg:
            share = min(
                p[f"{kind}_per_s_batched"] / s[f"{kind}_per_s_batched"]
                for s, p in zip(lite["rows"], pg["rows"], strict=False)
            )
        rows.append(
            _ratio_row(
                f"PostgreSQL / SQLite batched {kind}/s, lowest over the sizes",
                share,
                0.5,
                at_most=False,
            )
        )
    return rows


def deep_path_rows(results: Path) -> list[Row]:
    found = _load(results, "deep_path.json")
    depth = f"{found['depth']:,}" if found else "100,000"
    rows = []
    for what in ("path", "explain (visible)", "explain (off path)"):
        ratio = None
        if found and what in found["seconds"]["sqlite"]:
            ratio = found["seconds"]["postgresql"][what] / found["seconds"]["sqlite"][what]
        rows.append(_ratio_row(f"PostgreSQL / SQLite `{what}` at depth {depth}", ratio, 2.0))
    return rows


def disk_rows(results: Path) -> list[Row]:
    found = _load(results, "disk.json")
    what = (
        f"SQLite store / plain-table floor at {found['records']:,} records"
        if found
        else ("SQLite store / plain-table floor at 1,000,000 records")
    )
    return [_ratio_row(what, found["ratio"] if found else None, 3.0)]


SECTIONS: list[tuple[str, Callable[[Path], list[Row]]]] = [
    ("agent history (bench/agent_history.py)", agent_rows),
    ("context (bench/context.py)", context_rows),
    ("bulk records (bench/records.py)", records_rows),
    ("storage at 10k to 1M records (bench/storage.py)", storage_rows),
    ("depth 100,000 (bench/deep_path.py)", deep_path_rows),
    ("disk (bench/disk.py)", disk_rows),
    ("service overhead (bench/service.py)", service_rows),
]


def table(results: Path) -> str:
    loads = []
    for path in sorted(results.glob("*.json")):
        load = json.loads(path.read_text()).get("load")
        if load:
            loads.append(f"{path.stem} {load[0]:.1f}")
    lines = [
        BEGIN,
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()} "
        f"(1-minute load average when each benchmark ended: {', '.join(loads) or 'unknown'}).",
        "",
        "| figure | measured | goal | met |",
        "|---|---:|---:|:---:|",
    ]
    for title, rows_of in SECTIONS:
        lines.append(f"| **{title}** | | | |")
        for what, measured, goal, met in rows_of(results):
            mark = "—" if met is None else ("yes" if met else "**no**")
            lines.append(f"| {what} | {measured} | {goal} | {mark} |")
    lines.append(END)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--results", default=str(HERE / "results"))
    parser.add_argument("--doc", default=str(HERE.parent / "docs" / "scaling.md"))
    args = parser.parse_args()
    doc = Path(args.doc)
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{doc}: no figures block ({BEGIN} ... {END})")
    before, rest = text.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    block = table(Path(args.results))
    doc.write_text(before + block + after)
    print(block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
