"""Scores and report of ``branchbench retrieval`` (the tasks and retrievers are in
``branchbench.retrieval``; docs/retrieval.md).

Every question is scored once; the report then summarises the same per-question values
over all questions and over each split (the held-out questions are the headline: the
newest-first constants were chosen on the tuning ones). Each summary is a mean with a 95%
percentile bootstrap interval over questions, so a difference of a few questions is not
mistaken for a difference of retrievers.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from branchbench.errors import BenchError

if TYPE_CHECKING:
    from branchbench.retrieval import (
        BeamTask,
        ContradictionQuery,
        EvidenceQuery,
        Haystack,
        LocomoTask,
        Retriever,
        Task,
        UpdateQuery,
    )

KS: Final = (5, 10)  # the cut-offs reported
STALE_K: Final = 10  # stale-above-update is judged within the top 10
CONTRADICTION_K: Final = 10  # both sides of a contradiction are looked for in the top 10
ALL, TUNING_SPLIT, HELD_OUT = "all", "tuning", "held-out"
SPLITS: Final = (ALL, TUNING_SPLIT, HELD_OUT)
BOOTSTRAP_RESAMPLES: Final = 1000
BOOTSTRAP_SEED: Final = 20240601  # fixed: a rerun prints the same intervals
CONFIDENCE: Final = 0.95
# Upstream's integer categories; the names are the reading most re-implementations use
# (upstream's scorer treats 1 as multi-answer, 3 as open-domain, 5 as adversarial).
LOCOMO_CATEGORIES: Final = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
_TITLES: Final = {
    HELD_OUT: "Held-out questions (the headline: no constant was chosen on them)",
    ALL: "All questions (tuning and held-out)",
    TUNING_SPLIT: "Tuning questions (the newest-first constants were chosen on these)",
}


# -- metrics ---------------------------------------------------------------------------
def evidence_recall(ranking: Sequence[str], gold: Iterable[str], k: int) -> float:
    """The fraction of the gold turns among the first ``k`` of ``ranking``."""
    wanted = set(gold)
    if not wanted:
        raise BenchError("evidence_recall needs at least one gold turn id")
    return len(wanted.intersection(ranking[:k])) / len(wanted)


def first_rank(ranking: Sequence[str], ids: Iterable[str]) -> int | None:
    """The 1-based rank of the first of ``ids`` in ``ranking``, None when none is there."""
    wanted = set(ids)
    for position, doc_id in enumerate(ranking, start=1):
        if doc_id in wanted:
            return position
    return None


def updated_at(ranking: Sequence[str], updated: Iterable[str], k: int) -> bool:
    """An update turn is among the first ``k``."""
    rank = first_rank(ranking, updated)
    return rank is not None and rank <= k


def stale_above_update(
    ranking: Sequence[str], updated: Iterable[str], original: Iterable[str], k: int
) -> bool:
    """An original (old-value) turn is among the first ``k`` and above every update turn
    there: a reader that trusts the higher-ranked turn gets the stale value."""
    old = first_rank(ranking, original)
    if old is None or old > k:
        return False
    new = first_rank(ranking, updated)
    return new is None or new > k or old < new


def contradiction_both(
    ranking: Sequence[str], first: Iterable[str], second: Iterable[str], k: int
) -> bool:
    """A turn of each conflicting statement is among the first ``k``: a reader shown only
    one side answers confidently instead of noticing the contradiction."""
    return updated_at(ranking, first, k) and updated_at(ranking, second, k)


def bootstrap_interval(
    values: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``values`` (NaNs when empty).

    Resamples the values with replacement ``resamples`` times from ``random.Random(seed)``
    and takes the (1 ± confidence) / 2 quantiles of the resample means (interpolated); the
    same seed and the same values give the same interval, and two retrievers scored on
    the same questions are resampled on the same draws.
    """
    if not values:
        return math.nan, math.nan
    if resamples < 1 or not 0 < confidence < 1:
        raise BenchError("bootstrap_interval needs resamples >= 1 and 0 < confidence < 1")
    rng = random.Random(seed)
    population = list(values)
    n = len(population)
    means = sorted(math.fsum(rng.choices(population, k=n)) / n for _ in range(resamples))
    tail = (1 - confidence) / 2
    return _quantile(means, tail), _quantile(means, 1 - tail)


def _quantile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


# -- summaries -------------------------------------------------------------------------
@dataclass(frozen=True)
class Estimate:
    """A metric over ``n`` questions: the mean and its bootstrap interval (NaN when n = 0)."""

    value: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Estimate:
        mean = math.fsum(values) / len(values) if values else math.nan
        low, high = bootstrap_interval(values)
        return cls(mean, low, high, len(values))

    def to_json(self) -> dict[str, Any]:
        return {"value": _num(self.value), "ci": [_num(self.low), _num(self.high)], "n": self.n}


@dataclass(frozen=True)
class QuestionScore:
    """One question's values for the metrics that apply to it, with its split and its
    category ("" when the corpus has none)."""

    split: str
    category: str
    values: Mapping[str, float]


@dataclass(frozen=True)
class SplitScores:
    """A retriever's metrics over one split's questions, overall and per category."""

    metrics: dict[str, Estimate]
    by_category: dict[str, dict[str, Estimate]] = field(default_factory=dict)


def summarise(
    scores: Sequence[QuestionScore], metrics: Sequence[str], *, per_category: bool = False
) -> dict[str, SplitScores]:
    """Every split (``SPLITS``) of the same per-question values; a metric is averaged over
    the questions it applies to."""

    def estimates(chosen: list[QuestionScore]) -> dict[str, Estimate]:
        return {m: Estimate.of([s.values[m] for s in chosen if m in s.values]) for m in metrics}

    summary: dict[str, SplitScores] = {}
    for split in SPLITS:
        chosen = [s for s in scores if split in (ALL, s.split)]
        categories = _category_order(s.category for s in chosen) if per_category else []
        summary[split] = SplitScores(
            estimates(chosen),
            {c: estimates([s for s in chosen if s.category == c]) for c in categories},
        )
    return summary


def _category_order(categories: Iterable[str]) -> list[str]:
    order = {name: position for position, name in enumerate(LOCOMO_CATEGORIES.values())}
    return sorted(set(categories) - {""}, key=lambda c: (order.get(c, 99), c))


@dataclass
class Row:
    """One retriever's scores on one corpus, per split (``splits[ALL]`` holds every
    question scored)."""

    retriever: str
    corpus: str
    splits: dict[str, SplitScores] = field(default_factory=dict)
    seconds: float = 0.0  # ranking time

    @property
    def metrics(self) -> dict[str, float]:
        """The means over all questions."""
        return {m: e.value for m, e in self.splits[ALL].metrics.items()}

    @property
    def n(self) -> dict[str, int]:
        """The questions behind each of ``metrics``."""
        return {m: e.n for m, e in self.splits[ALL].metrics.items()}


# -- scoring ---------------------------------------------------------------------------
def _rankings(
    retriever: Retriever,
    haystacks: Sequence[Haystack],
    queries: Sequence[EvidenceQuery | UpdateQuery | ContradictionQuery],
    depth: int,
) -> list[list[str]]:
    """Every query's ranking, in ``queries`` order (one ingest per haystack)."""
    by_haystack: dict[str, list[int]] = {}
    for index, query in enumerate(queries):
        by_haystack.setdefault(query.haystack, []).append(index)
    rankings: list[list[str]] = [[] for _ in queries]
    for haystack in haystacks:
        indices = by_haystack.get(haystack.id, [])
        if not indices:
            continue
        questions = [queries[i].question for i in indices]
        for i, ranking in zip(indices, retriever.rank(haystack, questions, depth), strict=True):
            rankings[i] = ranking
    return rankings


def score_locomo(retriever: Retriever, task: LocomoTask, ks: Sequence[int] = KS) -> Row:
    """Evidence Recall@k per question, summarised per split, overall and per category."""
    started = time.perf_counter()
    rankings = _rankings(retriever, task.haystacks, task.queries, max(ks))
    seconds = time.perf_counter() - started  # ranking time, not the bootstrap's
    scores = [
        QuestionScore(
            query.split,
            query.category,
            {f"recall@{k}": evidence_recall(ranking, query.gold, k) for k in ks},
        )
        for query, ranking in zip(task.queries, rankings, strict=True)
    ]
    splits = summarise(scores, [f"recall@{k}" for k in ks], per_category=True)
    return Row(retriever.name, task.corpus, splits, seconds)


def score_beam(
    retriever: Retriever,
    task: BeamTask,
    ks: Sequence[int] = KS,
    stale_k: int = STALE_K,
    contradiction_k: int = CONTRADICTION_K,
) -> Row:
    """``updated@k`` over the update questions, ``stale-above-update@stale_k`` over those
    that also name an original turn, ``contradiction-both@contradiction_k`` over the
    contradiction questions; both kinds ranked in one pass per chat."""
    started = time.perf_counter()
    depth = max(*ks, stale_k, contradiction_k)
    rankings = _rankings(retriever, task.haystacks, task.asked, depth)
    seconds = time.perf_counter() - started
    stale_name = f"stale-above-update@{stale_k}"
    both_name = f"contradiction-both@{contradiction_k}"
    scores: list[QuestionScore] = []
    for query, ranking in zip(task.queries, rankings[: len(task.queries)], strict=True):
        values = {f"updated@{k}": float(updated_at(ranking, query.updated, k)) for k in ks}
        if query.original:
            values[stale_name] = float(
                stale_above_update(ranking, query.updated, query.original, stale_k)
            )
        scores.append(QuestionScore(query.split, "", values))
    for contradiction, ranking in zip(
        task.contradictions, rankings[len(task.queries) :], strict=True
    ):
        both = contradiction_both(
            ranking, contradiction.first, contradiction.second, contradiction_k
        )
        scores.append(QuestionScore(contradiction.split, "", {both_name: float(both)}))
    metrics = [*(f"updated@{k}" for k in ks), stale_name, both_name]
    return Row(retriever.name, task.corpus, summarise(scores, metrics), seconds)


def run_retrieval(
    tasks: Sequence[Task],
    retrievers: Sequence[Retriever],
    *,
    skipped: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> RetrievalReport:
    """Every retriever on every task: one row per (retriever, corpus)."""
    from branchbench.retrieval import LocomoTask  # here: retrieval imports this module

    rows: list[Row] = []
    for retriever in retrievers:
        for task in tasks:
            if progress is not None:
                progress(f"{retriever.name} on {task.corpus}")
            if isinstance(task, LocomoTask):
                rows.append(score_locomo(retriever, task))
            else:
                rows.append(score_beam(retriever, task))
    return RetrievalReport(list(tasks), rows, list(skipped))


# -- report ----------------------------------------------------------------------------
def _question_splits(task: Task) -> list[str]:
    return [q.split for q in task.asked]


@dataclass
class RetrievalReport:
    """All rows of one run, with what the run covered."""

    tasks: list[Task]
    rows: list[Row]
    skipped: list[str] = field(default_factory=list)

    def columns(self) -> list[tuple[str, str]]:
        """(corpus, metric) in table order."""
        seen: list[tuple[str, str]] = []
        for row in self.rows:
            for metric in row.splits[ALL].metrics:
                if (row.corpus, metric) not in seen:
                    seen.append((row.corpus, metric))
        return seen

    def retrievers(self) -> list[str]:
        return list(dict.fromkeys(row.retriever for row in self.rows))

    def cell(self, retriever: str, corpus: str, metric: str, split: str = ALL) -> Estimate | None:
        for row in self.rows:
            if row.retriever == retriever and row.corpus == corpus:
                found = row.splits[split].metrics.get(metric)
                if found is not None:
                    return found
        return None

    def shown_splits(self) -> list[str]:
        """The splits the markdown shows: held-out, all and tuning when the run holds both
        kinds of question; the one split it holds otherwise (``--split``, or a limit that
        kept only tuning conversations)."""
        present = {s for t in self.tasks for s in _question_splits(t)}
        if present == {TUNING_SPLIT}:
            return [TUNING_SPLIT]
        if present == {HELD_OUT}:
            return [HELD_OUT]
        return [HELD_OUT, ALL, TUNING_SPLIT]

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": {
                "documents": "one per turn, raw text (LoCoMo: 'speaker: text [shares caption]')",
                "anchor": "the last turn of each conversation",
                "ks": list(KS),
                "stale_k": STALE_K,
                "contradiction_k": CONTRADICTION_K,
                "interval": {
                    "kind": "percentile bootstrap of the mean over questions",
                    "confidence": CONFIDENCE,
                    "resamples": BOOTSTRAP_RESAMPLES,
                    "seed": BOOTSTRAP_SEED,
                },
            },
            "tasks": [
                {
                    "corpus": t.corpus,
                    "conversations": len(t.haystacks),
                    "turns": sum(len(h.documents) for h in t.haystacks),
                    "questions": {
                        s: sum(s in (ALL, q) for q in _question_splits(t)) for s in SPLITS
                    },
                    "dropped": _dropped(t),
                    "truncated": t.truncated,
                }
                for t in self.tasks
            ],
            "skipped": self.skipped,
            "rows": [
                {
                    "retriever": r.retriever,
                    "corpus": r.corpus,
                    "seconds": round(r.seconds, 2),
                    "splits": {
                        split: {
                            "metrics": {m: e.to_json() for m, e in scores.metrics.items()},
                            "by_category": {
                                c: {m: e.to_json() for m, e in values.items()}
                                for c, values in scores.by_category.items()
                            },
                        }
                        for split, scores in r.splits.items()
                    },
                }
                for r in self.rows
            ],
        }

    def table(self, split: str) -> str:
        """Retrievers × metrics over one split's questions: mean [95% interval], with the
        question count in each column's header."""
        columns = self.columns()
        header = ["retriever"]
        for corpus, metric in columns:
            counts = {
                found.n
                for r in self.retrievers()
                if (found := self.cell(r, corpus, metric, split)) is not None
            }
            n = str(counts.pop()) if len(counts) == 1 else "varies"
            header.append(f"{corpus} {metric} (n={n})")
        lines = [_md_row(header), _md_row(["---"] + ["---:"] * len(columns))]
        for retriever in self.retrievers():
            cells = [retriever]
            for corpus, metric in columns:
                found = self.cell(retriever, corpus, metric, split)
                cells.append("n/a" if found is None else format_estimate(found))
            lines.append(_md_row(cells))
        return "\n".join(lines) + "\n"

    def main_table(self) -> str:
        """One titled table per shown split, the held-out one first."""
        return "\n".join(
            f"### {_TITLES[split]}\n\n{self.table(split)}" for split in self.shown_splits()
        )

    def category_table(self) -> str:
        """LoCoMo Recall@5 / @10 per category and retriever, one column pair per split
        (held-out and all); empty when no row has categories."""
        shown = self.shown_splits()
        splits = [s for s in shown if s != TUNING_SPLIT] or shown
        rows = [r for r in self.rows if any(r.splits[s].by_category for s in splits)]
        categories = _category_order(
            c for r in rows for s in splits for c in r.splits[s].by_category
        )
        if not categories:
            return ""
        header = ["category (n " + " / ".join(splits) + ")", "retriever"]
        header += [f"{s} R@{k}" for s in splits for k in KS]
        lines = [_md_row(header), _md_row(["---", "---"] + ["---:"] * (len(header) - 2))]
        for category in categories:
            for row in rows:
                per_split = [row.splits[s].by_category.get(category) for s in splits]
                counts = " / ".join(str(next(iter(v.values())).n) if v else "0" for v in per_split)
                cells = [f"{category} ({counts})", row.retriever]
                for values in per_split:
                    cells += [
                        format_estimate(values[f"recall@{k}"]) if values else "n/a" for k in KS
                    ]
                lines.append(_md_row(cells))
        return "### LoCoMo evidence recall by category\n\n" + "\n".join(lines) + "\n"

    def notes(self) -> list[str]:
        """What each corpus contributed (and whether a limit cut it), what was skipped, and
        how the intervals were drawn."""
        interval = (
            f"intervals: {CONFIDENCE:.0%} percentile bootstrap over questions "
            f"({BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED})"
        )
        reading = (
            f"stale-above-update@{STALE_K} is a failure rate (lower is better); every other"
            " metric is a success rate"
        )
        return (
            [f"{t.corpus}: {_coverage(t)}" for t in self.tasks]
            + [f"skipped: {s}" for s in self.skipped]
            + [interval, reading]
        )

    def markdown(self) -> str:
        """The split tables (held-out first), LoCoMo per category, then the notes."""
        parts = [self.main_table(), self.category_table()]
        notes = "\n".join(f"- {note}" for note in self.notes()) + "\n"
        return "\n".join(p for p in parts if p) + "\n" + notes


def _dropped(task: Task) -> dict[str, int]:
    """Questions left out for want of their turns, per kind."""
    from branchbench.retrieval import BeamTask  # here: retrieval imports this module

    if isinstance(task, BeamTask):
        return {"knowledge-update": task.dropped, "contradiction": task.contradictions_dropped}
    return {"evidence": task.dropped}


def _coverage(task: Task) -> str:
    from branchbench.retrieval import BeamTask  # here: retrieval imports this module

    turns = sum(len(h.documents) for h in task.haystacks)
    splits = _question_splits(task)
    held = sum(s == HELD_OUT for s in splits)
    text = (
        f"{len(task.haystacks)} conversations, {turns} turns, {len(splits)} questions scored"
        f" ({held} held-out, {len(splits) - held} tuning)"
    )
    if isinstance(task, BeamTask):
        text += (
            f": {len(task.queries)} knowledge-update ({task.dropped} without an update turn"
            f" left out), {len(task.contradictions)} contradiction"
            f" ({task.contradictions_dropped} without both statements' turns left out)"
        )
    else:
        text += f", {task.dropped} without a gold turn left out"
    return text + (" (TRUNCATED by a limit)" if task.truncated else "")


def format_estimate(estimate: Estimate) -> str:
    """``57.1% [52.3–61.8]``; "n/a" when no question was scored."""
    if math.isnan(estimate.value):
        return "n/a"
    return f"{_pct(estimate.value)} [{_pct(estimate.low, '')}–{_pct(estimate.high, '')}]"


def _pct(value: float, unit: str = "%") -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.1f}{unit}"


def _num(value: float) -> float | None:
    return None if math.isnan(value) else value


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def write_report(report: RetrievalReport, out: Path) -> tuple[Path, Path]:
    """``retrieval.json`` and ``retrieval.md`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "retrieval.json", out / "retrieval.md"
    json_path.write_text(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    md_path.write_text(report.markdown())
    return json_path, md_path
