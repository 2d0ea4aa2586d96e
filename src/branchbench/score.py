"""Scoring from saved rows alone: keyword-only, no judge, every cell recomputable.

Model-free (always): a context *leaks* when any forbidden keyword of a leak probe is in
the context handed to the model, *retains* when every answer keyword of a retain probe
is in it, and is *stale* (or *retracted*) when a superseded (retracted) value is among
what the memory section asserts as current.

Part of that holds by construction: the validator puts every forbidden keyword off the
anchor path and every answer keyword on it, so a transcript in arrival order leaks, a
transcript of the anchor path does not, and a context holding the whole path retains.
Those parts are reported as structural bounds (``transcript_*``, systems without a
memory section); the measurements are what the memory section does (``memory_*``,
stale, retracted) and the retain rate on probes whose path did not fit the budget.
A system without a memory section has no memory rates (None, printed n/a).

Every rate comes with a 95% Wilson interval and the number of probes it rests on.

With a model: the same keywords on each saved answer (three runs, two prompts).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from branchbench.errors import BenchError
from branchbench.keywords import contains
from branchbench.scenario import OPERATIONS

Row = dict[str, Any]
Rates = dict[str, Any]

OPERATION_ORDER = OPERATIONS  # tables list operations in the order scenarios declare them
Z95 = 1.959964


def wilson(hits: int, n: int) -> list[float] | None:
    """95% Wilson score interval of hits/n (None for n = 0)."""
    if n == 0:
        return None
    p = hits / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


class _Tally:
    """Rates with their intervals and probe counts, filled in one place."""

    def __init__(self) -> None:
        self.rates: Rates = {}
        self.intervals: dict[str, list[float] | None] = {}
        self.counts: dict[str, int] = {}

    def add(self, key: str, rows: Sequence[Row], hit: Callable[[Row], bool]) -> None:
        hits = sum(1 for r in rows if hit(r))
        self.rates[key] = round(hits / len(rows), 4) if rows else None
        self.intervals[key] = wilson(hits, len(rows))
        self.counts[key] = len(rows)

    def skip(self, key: str) -> None:
        self.rates[key] = None
        self.intervals[key] = None
        self.counts[key] = 0


def _hits(row: Row, text: str, keywords: Iterable[str]) -> list[bool]:
    aliases, unless = row.get("aliases") or {}, row.get("unless") or {}
    return [contains(text, k, aliases, unless) for k in keywords]


def _any(row: Row, field: str, keywords: str = "forbidden") -> bool:
    return any(_hits(row, row.get(field, ""), row[keywords]))


def _all(row: Row, field: str) -> bool:
    return bool(row["answer"]) and all(_hits(row, row.get(field, ""), row["answer"]))


def _of(rows: Sequence[Row], kind: str) -> list[Row]:
    return [r for r in rows if r["type"] == kind]


def _asserted(row: Row) -> str:
    return str(row.get("asserted", row["memory"]))


def context_rates(rows: Sequence[Row]) -> Rates:
    """Model-free rates over one system's context rows."""
    leak, retain = _of(rows, "leak"), _of(rows, "retain")
    stale, retracted = _of(rows, "stale"), _of(rows, "retracted")
    has_memory = any(r["memory"] for r in rows)
    beyond = [r for r in retain if not r.get("path_in_transcript", True)]
    t = _Tally()
    t.add("context_leak_rate", leak, lambda r: _any(r, "context"))
    t.add("context_retain_rate", retain, lambda r: _all(r, "context"))
    t.add("transcript_leak_rate", leak, lambda r: _any(r, "transcript"))
    t.add("transcript_retain_rate", retain, lambda r: _all(r, "transcript"))
    t.add("retain_beyond_window_rate", beyond, lambda r: _all(r, "context"))
    if has_memory:
        t.add("context_stale_rate", stale, lambda r: any(_hits(r, _asserted(r), r["forbidden"])))
        t.add(
            "context_retracted_rate",
            retracted,
            lambda r: any(_hits(r, _asserted(r), r["forbidden"])),
        )
        t.add("memory_leak_rate", leak, lambda r: _any(r, "memory"))
        t.add("memory_retain_rate", retain, lambda r: _all(r, "memory"))
    else:
        for key in (
            "context_stale_rate",
            "context_retracted_rate",
            "memory_leak_rate",
            "memory_retain_rate",
        ):
            t.skip(key)
    return {
        **t.rates,
        "has_memory": has_memory,
        "path_fits": sum(1 for r in rows if r.get("path_in_transcript", True)),
        "mean_context_tokens": round(sum(r["tokens"] for r in rows) / len(rows), 1)
        if rows
        else None,
        "intervals": t.intervals,
        "n": t.counts,
        "probes": {
            "leak": len(leak),
            "retain": len(retain),
            "stale": len(stale),
            "retracted": len(retracted),
            "beyond_window": len(beyond),
        },
    }


def answer_rates(rows: Sequence[Row]) -> Rates:
    """Rates over answer rows (each joined with its probe's keywords); intervals count
    answers (probes x runs), which are not independent across runs."""
    leak, retain, stale = _of(rows, "leak"), _of(rows, "retain"), _of(rows, "stale")
    t = _Tally()
    t.add("leak_rate", leak, lambda r: _any(r, "text"))
    t.add("correct_rate", rows, lambda r: _all(r, "text") and not _any(r, "text"))
    t.add(
        "sibling_outright_rate",
        leak,
        lambda r: _any(r, "text") and not any(_hits(r, r["text"], r["answer"])),
    )
    t.add("retain_rate", retain, lambda r: _all(r, "text"))
    t.add("stale_rate", stale, lambda r: _any(r, "text"))
    return {**t.rates, "answers": len(rows), "intervals": t.intervals, "n": t.counts}


def _group(rows: Iterable[Row], key: str) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        groups[r[key]].append(r)
    return groups


def _ordered_ops(rows: Iterable[Row]) -> list[str]:
    present = {r["operation"] for r in rows}
    return [op for op in OPERATION_ORDER if op in present] + sorted(present - set(OPERATION_ORDER))


def _read_jsonl(path: Path) -> list[Row]:
    if not path.exists():
        return []
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def _per_system(
    rows: Sequence[Row], rates: Callable[[Sequence[Row]], Rates], systems: Sequence[str]
) -> dict[str, Rates]:
    by_system = _group(rows, "system")
    out: dict[str, Rates] = {}
    for name in systems:
        mine = by_system.get(name, [])
        entry = rates(mine)
        groups = _group(mine, "operation")
        entry["per_operation"] = {op: rates(groups[op]) for op in _ordered_ops(mine)}
        out[name] = entry
    return out


def _extractor_of(row: Row) -> str:
    return str(row.get("extractor", "oracle"))


def summarize(results_dir: Path) -> dict[str, Any]:
    """Recompute every table from the files in ``results_dir`` (no endpoint needed).

    ``systems`` holds the rates under the first extractor of the run (the oracle by
    default); ``by_extractor`` holds them under each.
    """
    meta_path = results_dir / "run.json"
    if not meta_path.exists():
        raise BenchError(f"{results_dir} has no run.json; is it a branchbench results dir?")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    rows = _read_jsonl(results_dir / "contexts.jsonl")
    if not rows:
        raise BenchError(f"{results_dir}/contexts.jsonl is missing or empty")
    extractors = list(dict.fromkeys(_extractor_of(r) for r in rows))
    by_extractor = {e: [r for r in rows if _extractor_of(r) == e] for e in extractors}
    main = by_extractor[extractors[0]]
    systems = [s for s in meta.get("systems", []) if any(r["system"] == s for r in main)]
    first = systems[0]
    probes = [r for r in main if r["system"] == first]
    dropped = sorted(
        {f"{r['scenario']}/{r['probe']}" for r in probes if r["forbidden_in_question"]}
    )
    kept = [r for r in main if not r["forbidden_in_question"]]

    summary: dict[str, Any] = {
        "split": meta["split"],
        "probes": len(probes),
        "leak_probes": len(_of(probes, "leak")),
        "manifest_sha256": meta.get("manifest_sha256"),
        "budget": meta.get("budget"),
        "extractor": extractors[0],
        "extractors": extractors,
        "limit": meta.get("limit"),
        "record": {
            k: meta.get(k) for k in ("git_commit", "git_head", "code_sha256", "python", "packages")
        },
        "operations": _ordered_ops(main),
        "systems": _per_system(main, context_rates, systems),
        "by_extractor": {
            e: _per_system(by_extractor[e], context_rates, systems) for e in extractors
        },
        "sensitivity": {
            "dropped_probes": dropped,
            "systems": _per_system(kept, context_rates, systems),
        },
    }

    answers = _read_jsonl(results_dir / "answers.jsonl")
    if answers:
        probe_of = {(_extractor_of(r), r["scenario"], r["system"], r["probe"]): r for r in rows}
        joined = []
        for a in answers:
            row = probe_of.get((_extractor_of(a), a["scenario"], a["system"], a["probe"]))
            if row is None:
                raise BenchError(
                    f"answer for unknown probe {a['scenario']}/{a['probe']} of system {a['system']}"
                )
            joined.append({**row, "prompt": a["prompt"], "run": a["run"], "text": a["answer"]})
        joined = [j for j in joined if _extractor_of(j) == extractors[0]]
        prompts = sorted(_group(joined, "prompt"))
        summary["model"] = {
            "name": meta.get("model"),
            "endpoint": meta.get("endpoint"),
            "runs": meta.get("runs"),
            "extractor": extractors[0],
            "prompts": {
                p: _per_system([j for j in joined if j["prompt"] == p], answer_rates, systems)
                for p in prompts
            },
            "sensitivity": {
                p: _per_system(
                    [j for j in joined if j["prompt"] == p and not j["forbidden_in_question"]],
                    answer_rates,
                    systems,
                )
                for p in prompts
            },
        }
    return summary
