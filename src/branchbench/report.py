"""Tables: summary.md, summary.json and the console tables (the charts: ``charts``).

The report keeps apart what holds by construction (structural bounds, said so) and what
is measured. Every rate carries a 95% interval, the wider at each end of the Wilson
interval (probe count) and the scenario bootstrap (probes of one dialogue are not
independent; at 0% or 100% the bootstrap alone collapses to a point), and the probes
and scenarios it rests on. A ``--limit`` run says it is truncated wherever it prints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from branchbench import lexical
from branchbench.score import BOOTSTRAP_RESAMPLES

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
    "superseded or retracted value wherever the rendered memory section shows it (a "
    'summary\'s "(earlier: ...)" notes included), not what a system says it asserts. '
    "*Retain beyond window* is the retain rate on the probes whose anchor path did not fit "
    "the budget and whose answer the kept transcript does not hold (an answer in the recent "
    "turns is retained by construction); it is the one retain figure that is not."
)
INTERVAL_NOTE = (
    "Rates are percentages; brackets hold a 95% interval, the wider at each end of the "
    "Wilson interval (probes as independent draws) and a bootstrap ({resamples} "
    "resamples, fixed seed) of whole scenarios, or on a scenario forked at several points "
    "(corpus splits) of whole forks, each fork's probes drawn together, since the probes "
    "of one dialogue are not independent. n: probes / scenarios a figure rests on, and the "
    "forks where they are the unit (in a header when every row shares it, else in the cell)."
)
# The chart files `branchbench run`/`score` draw (removed before drawing, so none is stale).


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


def interval(entry: dict[str, Any], key: str) -> list[float] | None:
    """The printed 95% interval: the wider at each end of Wilson and scenario bootstrap."""
    found = [
        ci
        for ci in (entry.get("intervals", {}).get(key), entry.get("bootstrap", {}).get(key))
        if ci is not None
    ]
    if not found:
        return None
    return [min(ci[0] for ci in found), max(ci[1] for ci in found)]


def _count(entry: dict[str, Any], key: str) -> tuple[int, int, int]:
    scenarios = entry.get("scenarios", {}).get(key, 0)
    # the bootstrap's units: forks on a corpus split, else the scenarios themselves
    units = entry.get("units", {}).get(key, scenarios)
    return entry.get("n", {}).get(key, 0), scenarios, units


def _shared_count(systems: dict[str, Any], key: str) -> tuple[int, int, int] | None:
    """The (probes, scenarios, units) of a column when every system with a figure shares
    it."""
    counts = {_count(s, key) for s in systems.values() if s.get(key) is not None}
    if not counts:  # no figure at all: say on how little
        counts = {_count(s, key) for s in systems.values()}
    return counts.pop() if len(counts) == 1 else None


def _count_text(count: tuple[int, int, int]) -> str:
    forks = f", {count[2]} forks" if count[2] != count[1] else ""
    return f"n={count[0]}/{count[1]}{forks}"


def _cell(
    entry: dict[str, Any], key: str, is_memory: bool, with_ci: bool = True, count: bool = False
) -> str:
    if is_memory and not entry.get("has_memory", True):
        return "n/a"
    text = cell(key, entry.get(key), interval(entry, key) if with_ci else None)
    if count:
        text += f" ({_count_text(_count(entry, key))})"
    return text


def _columns(systems: dict[str, Any], columns: Columns) -> Columns:
    """Drop columns with no probe for any system (e.g. retracted outside invalidation)."""
    return tuple(
        (k, h, m)
        for k, h, m in columns
        if k == "retain_beyond_window_rate"  # "– (n=0/0)" says the budget never bound
        or any(s.get("n", {}).get(k, 1) or s.get(k) is not None for s in systems.values())
    )


def _header(systems: dict[str, Any], key: str, header: str) -> tuple[str, bool]:
    """A column header with its counts when shared; else the cells carry them."""
    shared = _shared_count(systems, key)
    if shared is None:
        return header, True
    return f"{header} ({_count_text(shared)})", False


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _system_table(systems: dict[str, Any], columns: Columns) -> str:
    cols = _columns(systems, columns)
    heads = [_header(systems, k, h) for k, h, _ in cols]
    return _md_table(
        ["system", *[h for h, _ in heads]],
        [
            [
                name,
                *[
                    _cell(s, k, m, count=per_cell)
                    for (k, _, m), (_, per_cell) in zip(cols, heads, strict=True)
                ],
            ]
            for name, s in systems.items()
        ],
    )


def _across_table(
    tables: dict[str, dict[str, Any]], key: str, is_memory: bool, names: list[str]
) -> str:
    """Systems down, one column per group (pipeline, arrival order, operation)."""
    heads = {g: _header(t, key, g) for g, t in tables.items()}
    rows = []
    for name in names:
        row = [name]
        for group, table in tables.items():
            entry = table.get(name)
            row.append(
                "–" if entry is None else _cell(entry, key, is_memory, count=heads[group][1])
            )
        rows.append(row)
    return _md_table(["system", *[h for h, _ in heads.values()]], rows)


def _operation_table(systems: dict[str, Any], operations: list[str], key: str) -> str:
    per_op = {
        op: {
            name: s["per_operation"][op] for name, s in systems.items() if op in s["per_operation"]
        }
        for op in operations
    }
    return _across_table(per_op, key, False, list(systems))


def truncation_note(summary: dict[str, Any]) -> str | None:
    """What a ``--limit`` run left out (None for a whole split)."""
    if not summary.get("truncated"):
        return None
    of = summary.get("scenarios_in_split")
    return (
        f"TRUNCATED: --limit {summary.get('limit')} ran {summary.get('scenarios')} of "
        f"{of if of is not None else '?'} scenarios; not a result for split `{summary['split']}`"
    )


def split_rows(systems: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(structural bounds, measured systems): a system without a memory section only
    restates the validator's rules."""
    bounds = {n: s for n, s in systems.items() if not s.get("has_memory", True)}
    measured = {n: s for n, s in systems.items() if s.get("has_memory", True)}
    return bounds, measured


def failed_checks(summary: dict[str, Any]) -> list[str]:
    """Cells where a system dropped a summary or profile it was given (its stale rate is
    then n/a: a failure, not 0%), or repeated raw path messages in its memory section
    (scored as a structural bound)."""
    found: list[str] = []
    for pipeline, extractors in summary.get("by_pipeline", {}).items():
        for extractor, table in extractors.items():
            for name, entry in table.get("systems", {}).items():
                if entry.get("dropped_artifacts"):
                    found.append(
                        f"- `{name}` under `{pipeline}` (`{extractor}`): dropped "
                        f"{entry['dropped_artifacts']} summary/profile it was given "
                        "(check `stored` failed; stale n/a)"
                    )
                if entry.get("raw_path_in_memory"):
                    found.append(
                        f"- `{name}` under `{pipeline}` (`{extractor}`): "
                        f"{entry['raw_path_in_memory']} memory line(s) repeat a raw path "
                        "message (structural, scored as a bound)"
                    )
    if not found:
        return []
    return ["## Failed checks", "\n".join(found)]


def markdown(summary: dict[str, Any]) -> str:
    """The summary.md text: the same-inputs comparisons, bounds, measurements per
    extractor, context totals, per-operation tables, sensitivity tables, model tables."""
    ops = summary["operations"]
    systems = summary["systems"]
    sens = summary["sensitivity"]
    bounds, measured = split_rows(systems)
    any_entry = next(iter(systems.values()))
    n_retain = any_entry.get("probes", {}).get("retain", 0)
    record = summary.get("record") or {}
    truncated = truncation_note(summary)
    parts = [
        f"# branchbench — split `{summary['split']}`" + (" (truncated)" if truncated else ""),
        *([f"**{truncated}.**"] if truncated else []),
        f"{summary['probes']} probes ({summary['leak_probes']} leak) in "
        f"{summary.get('scenarios', '?')} scenarios, token budget "
        f"{summary['budget']}, extractors {', '.join(f'`{e}`' for e in summary['extractors'])}"
        f", manifest sha256 `{summary['manifest_sha256'] or 'n/a (split not frozen)'}`, "
        f"commit `{record.get('git_commit')}`, code sha256 "
        f"`{(record.get('code_sha256') or '')[:16]}`.",
        INTERVAL_NOTE.format(resamples=BOOTSTRAP_RESAMPLES)
        + (
            ""
            if summary.get("files_verified", True)
            else " This run recorded no file hashes: its files could not be checked."
        ),
        *same_inputs(summary),
        *([lexical.note(summary["sibling_words"])] if "sibling_words" in summary else []),
        "## Structural bounds (true by construction)",
        BOUNDS_NOTE
        + f" The whole anchor path fit the budget on {any_entry.get('path_fits', 0)} of "
        f"{summary['probes']} probes ({n_retain} retain probes).",
        _system_table(bounds, BOUNDS) if bounds else "(no such system in this run)",
        *failed_checks(summary),
    ]
    pipeline = summary.get("pipeline", "one_message")
    for extractor, table in summary.get("by_extractor", {"": systems}).items():
        _, mine = split_rows(table)
        parts += [
            f"## Measurements: derived memory, extractor `{extractor}`, pipeline `{pipeline}`",
            MEASURED_NOTE,
            _system_table(mine, MEASURED),
        ]
    parts += _grouped_sections(summary)
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


GROUPED = (
    ("memory_leak_rate", "Memory leak"),
    ("memory_retain_rate", "Memory retain"),
    ("context_stale_rate", "Stale"),
)
PIPELINE_NOTE = (
    "Every system's pipeline step reads the same input, set by the run's read policy "
    "(`branchbench.pipeline`; a row's pipeline is `mode@policy`): `path` reads the message's "
    "path and is shown the memories written on it, `arrival` the last arrivals and every "
    "memory, `ungated` the path and every memory. A system decides only what its output "
    "cites (attribution) and what it shows at a probe (its gate)."
)
# the comparisons the headline leads with, each against branchmem on the same inputs
SAME_INPUTS = (
    "branchmem", "label_lineage", "mem0", "mem0_branchmem", "langgraph_store", "raw_current_branch",
)  # fmt: skip
SAME_INPUT_COLUMNS = (
    ("memory_leak_rate", "memory leak", True),
    ("memory_retain_rate", "memory retain", True),
    ("context_stale_rate", "stale", True),
    ("context_retain_rate", "context retain", False),
)


def _integrations_table(integrations: dict[str, Any]) -> str:
    rows = [
        [f"`{name}`", spec.get("attribution", ""), spec.get("gate", "")]
        for name, spec in integrations.items()
    ]
    return _md_table(["system", "output attributed to", "shown at a probe"], rows)


def same_inputs(summary: dict[str, Any]) -> list[str]:
    """The headline: branchmem beside label_lineage, Mem0 and the raw path, each pipeline
    and read policy a row, the first extractor (every system given the same inputs)."""
    extractor = summary["extractor"]
    by_pipeline = summary.get("by_pipeline") or {}
    tables = {label: t[extractor]["systems"] for label, t in by_pipeline.items() if extractor in t}
    names = [n for n in SAME_INPUTS if any(n in t for t in tables.values())]
    if "branchmem" not in names or len(names) < 2:
        return []
    parts = [
        f"## Same inputs: branchmem against {', '.join(f'`{n}`' for n in names[1:])}",
        "Each row is one pipeline under one read policy: every system was given the same "
        f"messages and memories to derive from (extractor `{extractor}`).",
    ]
    for key, header, is_memory in SAME_INPUT_COLUMNS:
        rows = [
            [f"`{label}`", *[_cell(t[n], key, is_memory) if n in t else "–" for n in names]]
            for label, t in tables.items()
        ]
        parts += [f"### {header}", _md_table(["pipeline", *names], rows)]
    return parts


def _grouped_sections(summary: dict[str, Any]) -> list[str]:
    """Memory leak and retain per pipeline (pipelines across), then per arrival order
    (orders across, first pipeline), each under every extractor."""
    parts: list[str] = []
    integrations = summary.get("integrations") or {}
    if integrations:
        parts += ["## Read policies and integrations", PIPELINE_NOTE]
        parts.append(_integrations_table(integrations))
    groupings = [("pipeline", summary.get("by_pipeline") or {})]
    if summary.get("by_arrival"):
        groupings.append(("arrival order", summary["by_arrival"]))
    for label, grouped in groupings:
        extractors = list(dict.fromkeys(e for tables in grouped.values() for e in tables))
        for extractor in extractors:
            tables = {
                g: split_rows(t[extractor]["systems"])[1]
                for g, t in grouped.items()
                if extractor in t
            }
            names = list(dict.fromkeys(n for t in tables.values() for n in t))
            for key, title in GROUPED:
                where = f" (pipeline `{summary.get('pipeline')}`)" if label != "pipeline" else ""
                parts += [
                    f"## {title} by {label}{where}, extractor `{extractor}`",
                    _across_table(tables, key, True, names),
                ]
    return parts


def _rich_table(title: str, systems: dict[str, Any], columns: Columns) -> Table:
    cols = _columns(systems, columns)
    table = Table(title=title)
    # never cut or wrap a system name: two names cut to one prefix would read as duplicates
    width = max((len(name) for name in systems), default=6)
    table.add_column("system", no_wrap=True, min_width=width)
    heads = [_header(systems, k, h) for k, h, _ in cols]
    for header, _ in heads:
        table.add_column(header, justify="right")
    for name, s in systems.items():
        table.add_row(
            name,
            *[
                _cell(s, k, m, with_ci=False, count=per_cell)
                for (k, _, m), (_, per_cell) in zip(cols, heads, strict=True)
            ],
        )
    return table


def print_table(console: Console, table: Table) -> None:
    """Print a table; off a terminal (a pipe, a file, CI) at its natural width, so that
    nothing is cut to fit 80 columns."""
    if console.is_terminal:
        console.print(table)
        return
    options = console.options.update(width=10_000)
    natural = Measurement.get(console, options, table).maximum
    console.print(table, width=max(console.width, natural), crop=False)


def console_tables(summary: dict[str, Any]) -> list[Table]:
    """The terminal view: bounds, then the measurements under each extractor."""
    bounds, measured = split_rows(summary["systems"])
    head = f"branchbench {summary['split']}: {summary['probes']} probes"
    if truncated := truncation_note(summary):
        head = f"{truncated} — {head}"
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
    by_pipeline = summary.get("by_pipeline") or {}
    if len(by_pipeline) > 1:
        extractor = summary["extractor"]
        for key, title in GROUPED:
            per_pipeline = {
                p: split_rows(t[extractor]["systems"])[1]
                for p, t in by_pipeline.items()
                if extractor in t
            }
            tables.append(_across_rich(f"{head} — {title.lower()} by pipeline", per_pipeline, key))
    return tables


def _across_rich(title: str, tables: dict[str, dict[str, Any]], key: str) -> Table:
    names = list(dict.fromkeys(n for t in tables.values() for n in t))
    table = Table(title=title)
    table.add_column("system", no_wrap=True, min_width=max(map(len, names), default=6))
    heads = {g: _header(t, key, g) for g, t in tables.items()}
    for header, _ in heads.values():
        table.add_column(header, justify="right")
    for name in names:
        table.add_row(
            name,
            *[
                "–"
                if name not in t
                else _cell(t[name], key, True, with_ci=False, count=heads[g][1])
                for g, t in tables.items()
            ],
        )
    return table


def console_table(summary: dict[str, Any]) -> Table:
    """The main measured table (first extractor) for the terminal."""
    _, measured = split_rows(summary["systems"])
    return _rich_table(
        f"branchbench {summary['split']}: {summary['probes']} probes, measured", measured, MEASURED
    )


def model_table(summary: dict[str, Any], prompt: str) -> Table:
    """The with-model table for one prompt."""
    model = summary["model"]
    title = f"{model['name']}, prompt {prompt}: answer rates"
    if truncated := truncation_note(summary):
        title = f"{truncated} — {title}"
    return _rich_table(title, model["prompts"][prompt], MODEL_COLUMNS)


def write_outputs(summary: dict[str, Any], results_dir: Path) -> list[Path]:
    """Write summary.json and summary.md (the chart is a separate, optional step)."""
    json_path = results_dir / "summary.json"
    json_path.write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    md_path = results_dir / "summary.md"
    md_path.write_text(markdown(summary), encoding="utf-8")
    return [json_path, md_path]
