"""Scoring from saved rows alone: keyword-only, no judge, every cell recomputable.

Model-free (always): a context *leaks* when any forbidden keyword of a leak probe is in
the context handed to the model, *retains* when every answer keyword of a retain probe
is in it, and is *stale* (or *retracted*) when a superseded (retracted) value is in the
memory section as rendered, the text the model reads. The rows also carry what a system
says it asserts as current (``asserted``), but no rate reads it: a system that declared
nothing asserted would otherwise score 0% stale. So a summary's "(earlier: ...)" notes
count as stale: the model sees the old value in its memory either way.

Part of that holds by construction: the validator puts every forbidden keyword off the
anchor path and every answer keyword on it, so a transcript in arrival order leaks, a
transcript of the anchor path does not, and a context holding the whole path retains.
Those parts are reported as structural bounds (``transcript_*``, systems without a
memory section); the measurements are what the memory section does (``memory_*``,
stale, retracted) and the retain rate on probes whose path did not fit the budget.
A system without a memory section has no memory rates (None, printed n/a).

Every rate comes with the number of probes and of scenarios it rests on, a 95% Wilson
interval (``intervals``, probes taken as independent) and a 95% bootstrap interval
(``bootstrap``: whole units resampled, since the probes of one dialogue share its facts
and its system state; fixed seed, so two scorings agree). The unit is the scenario, or,
in a scenario forked at several points (corpus splits), the fork: every probe about one
fork (leak, retain, stale) is drawn together (``units`` counts them).

With a model: the same keywords on each saved answer (three runs, two prompts).
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from branchbench.errors import BenchError, ResultsError
from branchbench.keywords import contains
from branchbench.lexical import sibling_words
from branchbench.manifest import FROZEN_SPLIT, verify_manifest
from branchbench.pipeline import PIPELINES, READ_POLICIES, pipeline_labels
from branchbench.scenario import OPERATIONS, Scenario, load_split

Row = dict[str, Any]
Rates = dict[str, Any]

OPERATION_ORDER = OPERATIONS  # tables list operations in the order scenarios declare them
Z95 = 1.959964
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 24  # fixed: the same rows always give the same intervals
# Files of a results directory whose SHA-256 run.json records; score refuses edited ones.
HASHED_FILES = ("contexts.jsonl", "answers.jsonl")


def wilson(hits: int, n: int) -> list[float] | None:
    """95% Wilson score interval of hits/n (None for n = 0)."""
    if n == 0:
        return None
    p = hits / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


@lru_cache(maxsize=256)
def _draws(k: int) -> tuple[tuple[int, ...], ...]:
    """How often each of k scenarios is drawn in each resample (seeded by k alone, so a
    cell's interval depends only on its own scenarios)."""
    rng = random.Random(BOOTSTRAP_SEED * 1_000_003 + k)
    out = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        counts = [0] * k
        for _ in range(k):
            counts[rng.randrange(k)] += 1
        out.append(tuple(counts))
    return tuple(out)


@lru_cache(maxsize=65536)
def _bootstrap(cells: tuple[tuple[int, int], ...]) -> tuple[float, float]:
    hits = [h for h, _ in cells]
    sizes = [n for _, n in cells]
    rates = sorted(
        sum(map(operator.mul, draw, hits)) / sum(map(operator.mul, draw, sizes))
        for draw in _draws(len(cells))
    )
    last = len(rates) - 1
    lo, hi = rates[math.floor(0.025 * last)], rates[math.ceil(0.975 * last)]
    return round(lo, 4), round(hi, 4)


def scenario_bootstrap(cells: Iterable[tuple[int, int]]) -> list[float] | None:
    """95% percentile interval of sum(hits)/sum(probes) when whole scenarios are drawn
    with replacement; ``cells`` is (hits, probes) per scenario. None without probes.

    Probes of one scenario share its dialogue and the system's state, so they are not
    independent draws; resampling scenarios keeps that dependence. A rate of 0% or
    100% gives a point interval here: the Wilson interval is the bound to read there.
    """
    kept = tuple(sorted((h, n) for h, n in cells if n > 0))
    if not kept:
        return None
    return list(_bootstrap(kept))


def _unit_of(row: Row) -> str:
    """What the bootstrap resamples a row with: its fork on a scenario forked at several
    points (corpus splits), else its scenario."""
    return str(row.get("unit") or row.get("scenario", ""))


class _Tally:
    """Rates with their intervals and probe and scenario counts, filled in one place."""

    def __init__(self) -> None:
        self.rates: Rates = {}
        self.intervals: dict[str, list[float] | None] = {}
        self.bootstrap: dict[str, list[float] | None] = {}
        self.counts: dict[str, int] = {}
        self.scenarios: dict[str, int] = {}
        self.units: dict[str, int] = {}

    def add(self, key: str, rows: Sequence[Row], hit: Callable[[Row], bool]) -> None:
        per_unit: dict[str, list[int]] = {}
        for r in rows:
            cell = per_unit.setdefault(_unit_of(r), [0, 0])
            cell[0] += 1 if hit(r) else 0
            cell[1] += 1
        hits = sum(h for h, _ in per_unit.values())
        self.rates[key] = round(hits / len(rows), 4) if rows else None
        self.intervals[key] = wilson(hits, len(rows))
        self.bootstrap[key] = scenario_bootstrap((h, n) for h, n in per_unit.values())
        self.counts[key] = len(rows)
        self.scenarios[key] = len({str(r.get("scenario", "")) for r in rows})
        self.units[key] = len(per_unit)

    def skip(self, key: str) -> None:
        self.rates[key] = None
        self.intervals[key] = None
        self.bootstrap[key] = None
        self.counts[key] = 0
        self.scenarios[key] = 0
        self.units[key] = 0

    def figures(self) -> Rates:
        """The rates with their intervals and counts, as summary.json holds them."""
        return {
            **self.rates,
            "intervals": self.intervals,
            "bootstrap": self.bootstrap,
            "n": self.counts,
            "scenarios": self.scenarios,
            "units": self.units,
        }


def _hits(row: Row, text: str, keywords: Iterable[str]) -> list[bool]:
    aliases, unless = row.get("aliases") or {}, row.get("unless") or {}
    return [contains(text, k, aliases, unless) for k in keywords]


def _any(row: Row, field: str, keywords: str = "forbidden") -> bool:
    return any(_hits(row, row.get(field, ""), row[keywords]))


def _all(row: Row, field: str) -> bool:
    return bool(row["answer"]) and all(_hits(row, row.get(field, ""), row["answer"]))


def _of(rows: Sequence[Row], kind: str) -> list[Row]:
    return [r for r in rows if r["type"] == kind]


def context_rates(rows: Sequence[Row]) -> Rates:
    """Model-free rates over one system's context rows."""
    leak, retain = _of(rows, "leak"), _of(rows, "retain")
    stale, retracted = _of(rows, "stale"), _of(rows, "retracted")
    # a system has a memory section when it declares one (an empty memory in every row of
    # one group is a measurement, not n/a); older rows only tell by their text
    has_memory = any(r.get("has_memory") or r["memory"] for r in rows)
    # a memory section that repeats raw path messages verbatim is raw history: a bound
    raw_path = sum(r.get("memory_raw_path") or 0 for r in rows)
    if raw_path:
        has_memory = False
    # a summary or profile the system was given and did not keep: a failed check, not 0%
    dropped = sorted({d for r in rows for d in r.get("dropped") or ()})
    # the path did not fit, and the transcript kept does not hold every answer keyword: only
    # then does retaining it say anything about memory (an answer in the recent turns, as
    # on the corpus splits where most forks' answers are, is retained by construction)
    beyond = [
        r for r in retain if not r.get("path_in_transcript", True) and not _all(r, "transcript")
    ]
    t = _Tally()
    t.add("context_leak_rate", leak, lambda r: _any(r, "context"))
    t.add("context_retain_rate", retain, lambda r: _all(r, "context"))
    t.add("transcript_leak_rate", leak, lambda r: _any(r, "transcript"))
    t.add("transcript_retain_rate", retain, lambda r: _all(r, "transcript"))
    t.add("retain_beyond_window_rate", beyond, lambda r: _all(r, "context"))
    if has_memory:
        # from the rendered memory section, never from the system's own "asserted"
        if dropped:
            t.skip("context_stale_rate")
        else:
            t.add("context_stale_rate", stale, lambda r: _any(r, "memory"))
        t.add("context_retracted_rate", retracted, lambda r: _any(r, "memory"))
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
        **t.figures(),
        "has_memory": has_memory,
        "raw_path_in_memory": raw_path,
        "dropped_artifacts": len(dropped),
        "path_fits": sum(1 for r in rows if r.get("path_in_transcript", True)),
        "mean_context_tokens": round(sum(r["tokens"] for r in rows) / len(rows), 1)
        if rows
        else None,
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
    return {**t.figures(), "answers": len(rows)}


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


def _pipeline_of(row: Row) -> str:
    return str(row.get("pipeline") or "one_message")


def _arrival_of(row: Row) -> str:
    return str(row.get("arrival") or "")


def _ordered(values: Iterable[str], canonical: Sequence[str]) -> list[str]:
    """Known values in their canonical order, then the others as they first appear."""
    present = list(dict.fromkeys(values))
    return [v for v in canonical if v in present] + [v for v in present if v not in canonical]


def _by_extractor(
    rows: Sequence[Row], extractors: Sequence[str], systems: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """{EXTRACTOR: {"systems": {NAME: rates}}} for the extractors with rows here."""
    out: dict[str, dict[str, Any]] = {}
    for e in extractors:
        mine = [r for r in rows if _extractor_of(r) == e]
        if mine:
            out[e] = {"systems": _per_system(mine, context_rates, systems)}
    return out


def verify_results(results_dir: Path, meta: dict[str, Any]) -> bool:
    """Check the files run.json hashed against their SHA-256; False when the run
    recorded none (written before hashes were recorded).

    Raises ResultsError naming the first file that was edited, added or removed.
    """
    recorded = meta.get("files")
    if recorded is None:
        return False
    if not isinstance(recorded, dict):
        raise ResultsError(f"{results_dir}/run.json: field 'files' must map names to SHA-256")
    for name in HASHED_FILES:
        path = results_dir / name
        expected = recorded.get(name)
        if expected is None:
            if path.exists():
                raise ResultsError(
                    f"{path} was added after the run: run.json records no SHA-256 for it"
                )
            continue
        if not path.exists():
            raise ResultsError(f"{path} is missing: run.json records sha256 {expected[:12]}...")
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
        if actual != expected:
            raise ResultsError(
                f"{path} was edited after the run (sha256 {actual[:12]}..., run.json"
                f" records {expected[:12]}...); refusing to score it"
            )
    return True


def _pinned(meta: dict[str, Any], rows: list[Row]) -> tuple[list[Row], list[Scenario]]:
    """The rows with every scoring field taken from the split itself, never from what the
    results saved: the frozen test split as its manifest pins it, a corpus split as its
    digest pins it, another split from the scenario root the run named. A row whose probe
    the split does not have, or whose saved keywords differ from the split's, is refused
    (ResultsError): the results were edited or come from another split."""
    split = meta.get("split")
    root = Path(meta["scenarios_root"]) if meta.get("scenarios_root") else None
    try:
        if split == FROZEN_SPLIT:
            verify_manifest(root)
        scenarios = load_split(str(split), root)
    except BenchError as error:
        raise BenchError(f"cannot score: the split {split!r} the run used: {error}") from error
    probes = {(s.id, p.id): (s, p) for s in scenarios for p in s.probes}
    out = []
    for row in rows:
        found = probes.get((str(row.get("scenario")), str(row.get("probe"))))
        if found is None:
            raise ResultsError(
                f"row of {row.get('system')!r}: split {split!r} has no probe"
                f" {row.get('scenario')}/{row.get('probe')}"
            )
        scenario, probe = found
        pinned = {
            "type": probe.type,
            "question": probe.question,
            "answer": list(probe.answer),
            "forbidden": list(probe.forbidden),
            "aliases": {k: list(v) for k, v in probe.aliases.items()},
            "unless": {k: list(v) for k, v in probe.unless.items()},
            "forbidden_in_question": any(probe.hit(probe.question, k) for k in probe.forbidden),
            "unit": scenario.probe_unit(probe),
            # a fork's own arrival order (corpus splits) groups its rows; a scenario-wide
            # one is the row's as the run recorded it
            **({"arrival": probe.arrival} if probe.arrival else {}),
        }
        for name, value in pinned.items():
            if name in row and row[name] != value:
                raise ResultsError(
                    f"probe {row['scenario']}/{row['probe']}: the results' {name!r} is not the"
                    f" split's ({row[name]!r} saved, {value!r} in split {split!r})"
                )
        out.append({**row, **pinned})
    return out, scenarios


def summarize(results_dir: Path) -> dict[str, Any]:
    """Recompute every table from the files in ``results_dir`` (no endpoint needed).

    ``systems`` holds the rates under the first pipeline and the first extractor of the
    run (the oracle by default); ``by_extractor`` holds them under each extractor for
    that pipeline, ``by_pipeline`` under each pipeline and extractor, and
    ``by_arrival`` (corpus splits) under each arrival order. Refuses a directory whose
    files changed after the run (ResultsError names the file).
    """
    meta_path = results_dir / "run.json"
    if not meta_path.exists():
        raise BenchError(f"{results_dir} has no run.json; is it a branchbench results dir?")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    verified = verify_results(results_dir, meta)
    rows = _read_jsonl(results_dir / "contexts.jsonl")
    if not rows:
        raise BenchError(f"{results_dir}/contexts.jsonl is missing or empty")
    rows, scenarios = _pinned(meta, rows)
    extractors = list(dict.fromkeys(_extractor_of(r) for r in rows))
    pipelines = _ordered(
        (_pipeline_of(r) for r in rows), pipeline_labels(PIPELINES, list(READ_POLICIES))
    )
    first_pipeline = [r for r in rows if _pipeline_of(r) == pipelines[0]]
    main = [r for r in first_pipeline if _extractor_of(r) == extractors[0]]
    if not main:  # the first extractor ran only under other pipelines
        extractors.sort(key=lambda e: not any(_extractor_of(r) == e for r in first_pipeline))
        main = [r for r in first_pipeline if _extractor_of(r) == extractors[0]]
    systems = [s for s in meta.get("systems", []) if any(r["system"] == s for r in main)]
    systems += sorted({r["system"] for r in main} - set(systems))
    first = systems[0]
    probes = [r for r in main if r["system"] == first]
    dropped = sorted(
        {f"{r['scenario']}/{r['probe']}" for r in probes if r["forbidden_in_question"]}
    )
    kept = [r for r in main if not r["forbidden_in_question"]]
    by_pipeline = {
        p: _by_extractor([r for r in rows if _pipeline_of(r) == p], extractors, systems)
        for p in pipelines
    }
    arrivals = [a for a in dict.fromkeys(map(_arrival_of, first_pipeline)) if a]
    limit = meta.get("limit")
    truncated = bool(meta.get("truncated", limit is not None))

    summary: dict[str, Any] = {
        "split": meta["split"],
        "probes": len(probes),
        "leak_probes": len(_of(probes, "leak")),
        "scenarios": len({r["scenario"] for r in probes}),
        "manifest_sha256": meta.get("manifest_sha256"),
        "budget": meta.get("budget"),
        "extractor": extractors[0],
        "extractors": extractors,
        "pipeline": pipelines[0],
        "pipelines": pipelines,
        "integrations": meta.get("integrations") or {},
        "limit": limit,
        "truncated": truncated,
        "scenarios_in_split": meta.get("scenarios_in_split"),
        "files_verified": verified,
        "record": {
            k: meta.get(k) for k in ("git_commit", "git_head", "code_sha256", "python", "packages")
        },
        "operations": _ordered_ops(main),
        "systems": by_pipeline[pipelines[0]][extractors[0]]["systems"],
        "by_extractor": {e: t["systems"] for e, t in by_pipeline[pipelines[0]].items()},
        "by_pipeline": by_pipeline,
        "sibling_words": sibling_words(
            s for s in scenarios if s.id in {r["scenario"] for r in probes}
        ),
        "sensitivity": {
            "dropped_probes": dropped,
            "systems": _per_system(kept, context_rates, systems),
        },
    }
    if arrivals:
        summary["arrivals"] = arrivals
        summary["by_arrival"] = {
            a: _by_extractor(
                [r for r in first_pipeline if _arrival_of(r) == a], extractors, systems
            )
            for a in arrivals
        }

    answers = _read_jsonl(results_dir / "answers.jsonl")
    if answers:

        def where(r: Row) -> tuple[str, ...]:
            return (_pipeline_of(r), _extractor_of(r), r["scenario"], r["system"], r["probe"])

        probe_of = {where(r): r for r in rows}
        joined = []
        for a in answers:
            row = probe_of.get(where(a))
            if row is None:
                raise BenchError(
                    f"answer for unknown probe {a['scenario']}/{a['probe']} of system {a['system']}"
                )
            joined.append({**row, "prompt": a["prompt"], "run": a["run"], "text": a["answer"]})
        joined = [
            j
            for j in joined
            if _extractor_of(j) == extractors[0] and _pipeline_of(j) == pipelines[0]
        ]
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
