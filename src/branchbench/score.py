"""Scoring from saved rows alone: keyword-only, no judge, every cell recomputable.

Model-free (always): a context *leaks* when any forbidden keyword of a leak probe is in
the context handed to the model, *retains* when every answer keyword of a retain probe
is in it, and is *stale* (or *retracted*) when a superseded (retracted) value is in the
memory section, where it is asserted as current. That bounds what any model could leak.

With a model: the same keywords on each saved answer (three runs, two prompts).
"""

from __future__ import annotations

import json
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


def _rate(rows: Sequence[Row], hit: Callable[[Row], bool]) -> float | None:
    return round(sum(1 for r in rows if hit(r)) / len(rows), 4) if rows else None


def _any(text: str, keywords: Iterable[str]) -> bool:
    return any(contains(text, k) for k in keywords)


def _all(text: str, keywords: Sequence[str]) -> bool:
    return bool(keywords) and all(contains(text, k) for k in keywords)


def _of(rows: Sequence[Row], kind: str) -> list[Row]:
    return [r for r in rows if r["type"] == kind]


def context_rates(rows: Sequence[Row]) -> Rates:
    """Model-free rates over one system's context rows."""
    leak, retain = _of(rows, "leak"), _of(rows, "retain")
    stale, retracted = _of(rows, "stale"), _of(rows, "retracted")
    return {
        "context_leak_rate": _rate(leak, lambda r: _any(r["context"], r["forbidden"])),
        "context_retain_rate": _rate(retain, lambda r: _all(r["context"], r["answer"])),
        "context_stale_rate": _rate(stale, lambda r: _any(r["memory"], r["forbidden"])),
        "context_retracted_rate": _rate(retracted, lambda r: _any(r["memory"], r["forbidden"])),
        "memory_leak_rate": _rate(leak, lambda r: _any(r["memory"], r["forbidden"])),
        "memory_retain_rate": _rate(retain, lambda r: _all(r["memory"], r["answer"])),
        "mean_context_tokens": round(sum(r["tokens"] for r in rows) / len(rows), 1)
        if rows
        else None,
        "probes": {
            "leak": len(leak),
            "retain": len(retain),
            "stale": len(stale),
            "retracted": len(retracted),
        },
    }


def answer_rates(rows: Sequence[Row]) -> Rates:
    """Rates over answer rows (each joined with its probe's keywords)."""
    leak, retain, stale = _of(rows, "leak"), _of(rows, "retain"), _of(rows, "stale")
    return {
        "leak_rate": _rate(leak, lambda r: _any(r["text"], r["forbidden"])),
        "correct_rate": _rate(
            rows, lambda r: _all(r["text"], r["answer"]) and not _any(r["text"], r["forbidden"])
        ),
        "sibling_outright_rate": _rate(
            leak, lambda r: _any(r["text"], r["forbidden"]) and not _any(r["text"], r["answer"])
        ),
        "retain_rate": _rate(retain, lambda r: _all(r["text"], r["answer"])),
        "stale_rate": _rate(stale, lambda r: _any(r["text"], r["forbidden"])),
        "answers": len(rows),
    }


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


def summarize(results_dir: Path) -> dict[str, Any]:
    """Recompute every table from the files in ``results_dir`` (no endpoint needed)."""
    meta_path = results_dir / "run.json"
    if not meta_path.exists():
        raise BenchError(f"{results_dir} has no run.json; is it a branchbench results dir?")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    rows = _read_jsonl(results_dir / "contexts.jsonl")
    if not rows:
        raise BenchError(f"{results_dir}/contexts.jsonl is missing or empty")
    systems = [s for s in meta.get("systems", []) if any(r["system"] == s for r in rows)]
    first = systems[0]
    probes = [r for r in rows if r["system"] == first]
    dropped = sorted(
        {f"{r['scenario']}/{r['probe']}" for r in probes if r["forbidden_in_question"]}
    )
    kept = [r for r in rows if not r["forbidden_in_question"]]

    summary: dict[str, Any] = {
        "split": meta["split"],
        "probes": len(probes),
        "leak_probes": len(_of(probes, "leak")),
        "manifest_sha256": meta.get("manifest_sha256"),
        "budget": meta.get("budget"),
        "extractor": meta.get("extractor"),
        "operations": _ordered_ops(rows),
        "systems": _per_system(rows, context_rates, systems),
        "sensitivity": {
            "dropped_probes": dropped,
            "systems": _per_system(kept, context_rates, systems),
        },
    }

    answers = _read_jsonl(results_dir / "answers.jsonl")
    if answers:
        probe_of = {(r["scenario"], r["system"], r["probe"]): r for r in rows}
        joined = []
        for a in answers:
            row = probe_of.get((a["scenario"], a["system"], a["probe"]))
            if row is None:
                raise BenchError(
                    f"answer for unknown probe {a['scenario']}/{a['probe']} of system {a['system']}"
                )
            joined.append({**row, "prompt": a["prompt"], "run": a["run"], "text": a["answer"]})
        prompts = sorted(_group(joined, "prompt"))
        summary["model"] = {
            "name": meta.get("model"),
            "runs": meta.get("runs"),
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
