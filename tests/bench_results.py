"""A results directory as ``branchbench run`` writes it, from hand-made rows, with the
split its probes come from: ``score`` takes every scoring field from the split, never from
the rows, so a test that scores made-up rows writes the scenarios they name too."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PROBE_FIELDS = ("type", "question", "answer", "forbidden", "aliases", "unless")


def probe_row(
    system: str, scenario: str, kind: str, memory: str = "", **extra: Any
) -> dict[str, Any]:
    """One contexts.jsonl row; the probe asks for 杭州 and forbids 成都."""
    return {
        "split": "dev",
        "scenario": scenario,
        "language": "zh",
        "operation": "edit_user",
        "extractor": "oracle",
        "system": system,
        "probe": extra.pop("probe", "p1"),
        "type": kind,
        "anchor": "a",
        "question": "搬去哪？",
        "answer": ["杭州"],
        "forbidden": ["成都"],
        "aliases": {},
        "unless": {},
        "forbidden_in_question": False,
        "path_in_transcript": True,
        "memory": memory,
        "asserted": memory,
        "transcript": "",
        "context": memory,
        "tokens": 10,
        **extra,
    }


def write_split(root: Path, rows: list[dict[str, Any]], split: str = "dev") -> Path:
    """One scenario file per scenario the rows name, holding their probes as the rows
    state them."""
    folder = root / split
    folder.mkdir(parents=True, exist_ok=True)
    scenarios: dict[str, dict[str, Any]] = {}
    for r in rows:
        scenario = scenarios.setdefault(
            r["scenario"],
            {"id": r["scenario"], "split": split, "language": r.get("language", "zh"),
             "operation": r.get("operation", "edit_user"), "anchor": "a",
             "events": [{"id": "a", "role": "user", "content": "x"}], "probes": {}},
        )  # fmt: skip
        scenario["probes"].setdefault(
            r["probe"], {"id": r["probe"], **{k: r[k] for k in PROBE_FIELDS if k in r}}
        )
    for sid, scenario in scenarios.items():
        scenario["probes"] = list(scenario["probes"].values())
        (folder / f"{sid}.json").write_text(json.dumps(scenario, ensure_ascii=False))
    return root


def write_results(out: Path, rows: Iterable[dict[str, Any]], **meta: Any) -> Path:
    """contexts.jsonl and run.json (hashes included) into ``out``, the split beside them."""
    rows = list(rows)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (out / "contexts.jsonl").write_text(text, encoding="utf-8")
    record = {
        "split": "dev",
        "budget": 1500,
        "limit": None,
        "scenarios_root": str(write_split(out / "scenarios", rows)),
        "files": {"contexts.jsonl": hashlib.sha256(text.encode()).hexdigest()},
        **meta,
    }
    (out / "run.json").write_text(json.dumps(record), encoding="utf-8")
    return out
