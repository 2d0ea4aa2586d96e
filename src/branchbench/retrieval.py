"""Public, model-free retrieval numbers on the corpora themselves (docs/retrieval.md).

Every retriever ranks the raw turns of one conversation (one document per turn) for the
corpus's own questions, and two scores need no answer key and no model:

- LoCoMo evidence Recall@k: per question, the fraction of its gold evidence turns
  (``dia_id``) among the top k, averaged (overall and per category);
- BEAM 100K knowledge updates: ``updated@k`` (a turn that states the new value is in the
  top k) and ``stale-above-update@k`` (a turn that states the old value is in the top k and
  ranked above every update turn).

Retrievers, side by side in one run: branchmem's ``Memory.search`` (turns ingested as
events, one record per turn citing it) with no embedder, with ``HashingEmbedder`` and with a
dense embedder; ``Memory.context`` (its rendered records, then its transcript, newest first,
mapped back to turns: the order in which the context uses them); BM25 from ``bm25s``; and a
dense embedder alone (WordLlama's static embeddings, whose weights ship inside the wheel).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from branchbench.errors import BenchError
from branchmem import Memory
from branchmem.search.embedding import Embedder, HashingEmbedder, vector_rank

if TYPE_CHECKING:
    from branchbench.corpora import BeamChat, LocomoConversation

KS: Final = (5, 10)  # the cut-offs reported
STALE_K: Final = 10  # stale-above-update is judged within the top 10
CONTEXT_BUDGET: Final = 2000  # tokens: branchmem's default context budget
TURN_KIND: Final = "turn"
# Upstream's integer categories; the names are the reading most re-implementations use
# (upstream's scorer treats 1 as multi-answer, 3 as open-domain, 5 as adversarial).
LOCOMO_CATEGORIES: Final = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}


class RetrieverUnavailable(BenchError):
    """A retriever's package is not installed; the message names the package and extra."""


# -- documents and questions -----------------------------------------------------------
@dataclass(frozen=True)
class Document:
    """One turn as a retriever sees it: its corpus id, its role and its text."""

    id: str
    role: str
    text: str


@dataclass(frozen=True)
class Haystack:
    """One conversation: its turns in order (the last one is the anchor of every query)."""

    id: str
    documents: tuple[Document, ...]


@dataclass(frozen=True)
class EvidenceQuery:
    """A LoCoMo question and the turns that hold its answer."""

    haystack: str
    question: str
    gold: tuple[str, ...]
    category: str


@dataclass(frozen=True)
class UpdateQuery:
    """A BEAM knowledge-update question: the turns with the new value and with the old."""

    haystack: str
    question: str
    updated: tuple[str, ...]
    original: tuple[str, ...]


@dataclass(frozen=True)
class LocomoTask:
    """LoCoMo's haystacks and evidence questions; ``dropped`` counts the questions left out
    (no gold turn to score against) and ``truncated`` says a limit was applied."""

    haystacks: tuple[Haystack, ...]
    queries: tuple[EvidenceQuery, ...]
    dropped: int = 0
    truncated: bool = False
    corpus: str = "locomo"


@dataclass(frozen=True)
class BeamTask:
    """BEAM 100K's haystacks and knowledge-update questions (fields as ``LocomoTask``)."""

    haystacks: tuple[Haystack, ...]
    queries: tuple[UpdateQuery, ...]
    dropped: int = 0
    truncated: bool = False
    corpus: str = "beam"


Task = LocomoTask | BeamTask


def locomo_text(speaker: str, text: str, image_caption: str = "") -> str:
    """A LoCoMo turn as upstream renders it for its models: ``speaker: text``, and a
    shared image as ``[shares <caption>]`` (the caption is what the question may ask about)."""
    line = f"{speaker}: {text}"
    return f"{line} [shares {image_caption}]" if image_caption else line


def locomo_task(
    conversations: Sequence[LocomoConversation],
    *,
    conversations_limit: int | None = None,
    questions_limit: int | None = None,
) -> LocomoTask:
    """Documents and evidence questions of LoCoMo; questions without a resolvable evidence
    turn are dropped (upstream's scorer counts them as recall 1; we do not score them)."""
    chosen = list(conversations)[:conversations_limit]
    haystacks: list[Haystack] = []
    queries: list[EvidenceQuery] = []
    dropped = 0
    truncated = conversations_limit is not None and conversations_limit < len(conversations)
    for conversation in chosen:
        documents = tuple(
            Document(t.id, "user", locomo_text(t.speaker, t.text, t.image_caption))
            for t in conversation.turns
        )
        haystacks.append(Haystack(f"locomo-{conversation.id}", documents))
        qa = list(conversation.qa)
        if questions_limit is not None and questions_limit < len(qa):
            qa, truncated = qa[:questions_limit], True
        for item in qa:
            if not item.evidence:
                dropped += 1
                continue
            category = LOCOMO_CATEGORIES.get(item.category, str(item.category))
            queries.append(EvidenceQuery(haystacks[-1].id, item.question, item.evidence, category))
    return LocomoTask(tuple(haystacks), tuple(queries), dropped, truncated)


def beam_task(
    chats: Sequence[BeamChat],
    *,
    conversations_limit: int | None = None,
    questions_limit: int | None = None,
) -> BeamTask:
    """Documents and knowledge-update questions of BEAM 100K; items without an update turn
    are dropped (nothing to retrieve)."""
    chosen = list(chats)[:conversations_limit]
    haystacks: list[Haystack] = []
    queries: list[UpdateQuery] = []
    dropped = 0
    truncated = conversations_limit is not None and conversations_limit < len(chats)
    for chat in chosen:
        documents = tuple(Document(t.id, t.speaker, t.text) for t in chat.turns)
        haystacks.append(Haystack(f"beam-{chat.id}", documents))
        known = {d.id for d in documents}
        updates = list(chat.updates)
        if questions_limit is not None and questions_limit < len(updates):
            updates, truncated = updates[:questions_limit], True
        for item in updates:
            updated = tuple(i for i in item.updated_ids if i in known)
            if not updated:
                dropped += 1
                continue
            original = tuple(i for i in item.original_ids if i in known)
            queries.append(UpdateQuery(haystacks[-1].id, item.question, updated, original))
    return BeamTask(tuple(haystacks), tuple(queries), dropped, truncated)


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


# -- retrievers ------------------------------------------------------------------------
class Retriever(Protocol):
    """Ranks one haystack's turns for each question, best first, at most ``depth`` ids."""

    @property
    def name(self) -> str: ...

    def rank(self, haystack: Haystack, questions: Sequence[str], depth: int) -> list[list[str]]:
        """One ranking of turn ids per question."""
        ...


def record_id(turn_id: str) -> str:
    """The id of the record that stands for a turn in ``Memory``."""
    return f"turn:{turn_id}"


def ingest(memory: Memory, haystack: Haystack) -> str:
    """Write a conversation as a user would: the turns as one chain of events, and one
    record per turn citing its event (search ranks records). Returns the anchor (last turn)."""
    if not haystack.documents:
        raise BenchError(f"haystack {haystack.id} has no turns")
    events: list[dict[str, Any]] = []
    parent: str | None = None
    for document in haystack.documents:
        events.append(
            {
                "id": document.id,
                "parent": parent,
                "tree": haystack.id,
                "role": document.role,
                "content": document.text,
            }
        )
        parent = document.id
    memory.add_events(events)
    memory.add_records(
        {
            "id": record_id(d.id),
            "sources": [d.id],
            "content": d.text,
            "kind": TURN_KIND,
        }
        for d in haystack.documents
    )
    return haystack.documents[-1].id


def _source_turn(sources: tuple[str, ...] | None, record: str) -> str:
    if not sources:
        raise BenchError(f"record {record} cites no turn")
    return sources[0]


@dataclass
class MemorySearch:
    """``Memory.search(question, anchor=last turn, k=depth)``; each hit's record names its
    turn through its ``sources``."""

    embedder: Embedder | None = None
    label: str = "branchmem search"

    @property
    def name(self) -> str:
        return self.label

    def rank(self, haystack: Haystack, questions: Sequence[str], depth: int) -> list[list[str]]:
        memory = Memory(embedder=self.embedder)
        anchor = ingest(memory, haystack)
        return [
            [
                _source_turn(hit.record.sources, hit.record.id)
                for hit in memory.search(question, anchor, k=depth)
            ]
            for question in questions
        ]


@dataclass
class MemoryContext:
    """``Memory.context(anchor, query=question, budget=...)`` mapped to a ranking by order of
    use: the rendered records in the order the context ranks them (query-relevant first),
    each as the turn it cites, then the transcript's turns from the anchor backwards; a turn
    already listed is not listed again. Turns outside the context are not ranked at all."""

    budget: int = CONTEXT_BUDGET
    embedder: Embedder | None = None
    label: str = "branchmem context"

    @property
    def name(self) -> str:
        return self.label

    def rank(self, haystack: Haystack, questions: Sequence[str], depth: int) -> list[list[str]]:
        memory = Memory(embedder=self.embedder)
        anchor = ingest(memory, haystack)
        rankings: list[list[str]] = []
        for question in questions:
            context = memory.context(anchor, query=question, budget=self.budget)
            cited = {
                rid: _source_turn(memory.get_record(rid).sources, rid) for rid, _ in context.items
            }
            order = [cited[rid] for rid, _ in context.items] + list(reversed(context.events))
            rankings.append(list(dict.fromkeys(order))[:depth])
        return rankings


@dataclass
class Dense:
    """Every turn ranked by cosine similarity to the question (``embedding.vector_rank``,
    ties by id): an embedder with no lexical part."""

    embedder: Embedder
    label: str

    @property
    def name(self) -> str:
        return self.label

    def rank(self, haystack: Haystack, questions: Sequence[str], depth: int) -> list[list[str]]:
        ids = [d.id for d in haystack.documents]
        vectors = dict(
            zip(ids, self.embedder.embed([d.text for d in haystack.documents]), strict=True)
        )
        return [
            [hit.doc_id for hit in vector_rank(query_vector, vectors, depth)]
            for query_vector in self.embedder.embed(list(questions))
        ]


@dataclass
class Bm25s:
    """BM25 from the ``bm25s`` package (its defaults: Lucene variant, k1 = 1.5, b = 0.75,
    lower-cased ``\\w\\w+`` tokens, English stop words, no stemming). Only turns with a score
    above 0 are ranked; ties go to the earlier turn."""

    label: str = "BM25 (bm25s)"

    @property
    def name(self) -> str:
        return self.label

    def rank(self, haystack: Haystack, questions: Sequence[str], depth: int) -> list[list[str]]:
        try:
            import bm25s  # type: ignore[import-untyped, import-not-found, unused-ignore]
        except ImportError as error:
            raise RetrieverUnavailable(
                f"the BM25 baseline needs bm25s (pip install 'branchmem[retrieval]'): {error}"
            ) from error
        logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs each index at DEBUG
        texts = [d.text for d in haystack.documents]
        index = bm25s.BM25()
        index.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        tokenized = bm25s.tokenize(
            list(questions), stopwords="en", return_ids=False, show_progress=False
        )
        rankings: list[list[str]] = []
        for tokens in tokenized:
            scores = index.get_scores(tokens) if tokens else [0.0] * len(texts)
            order = sorted(
                (i for i, score in enumerate(scores) if score > 0),
                key=lambda i: (-float(scores[i]), i),
            )
            rankings.append([haystack.documents[i].id for i in order[:depth]])
        return rankings


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` static embeddings (256 dimensions), unit vectors.

    The weights and the tokenizer ship inside the ``wordllama`` wheel and are loaded from
    it with downloads disabled (its default lookup misses the shipped tokenizer and would go
    to the hub). A text with no known token embeds to the zero vector. It is a bag of token
    embeddings, not a transformer encoder: a cheap dense baseline, not a strong one.
    """

    model_id = "wordllama-l2-supercat-256"

    def __init__(self) -> None:
        try:
            import wordllama  # type: ignore[import-untyped, import-not-found, unused-ignore]
        except ImportError as error:
            raise RetrieverUnavailable(
                f"the dense baseline needs wordllama (pip install 'branchmem[retrieval]'): {error}"
            ) from error
        package = Path(wordllama.__file__).parent
        self._model: Any = wordllama.WordLlama.load(cache_dir=package, disable_download=True)

    @property
    def dimensions(self) -> int:
        return 256

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        rows = self._model.embed(list(texts), norm=False).tolist()
        return [_unit(row) for row in rows]


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else [0.0] * len(vector)


def _minilm() -> Embedder:
    from branchmem.search.embedding import EmbedderUnavailable, MiniLMEmbedder

    try:
        return MiniLMEmbedder()
    except EmbedderUnavailable as error:
        raise RetrieverUnavailable(str(error)) from error


RetrieverFactory = Callable[[int], Retriever]


def _registry() -> dict[str, RetrieverFactory]:
    """Retriever names → factories taking the context budget; embedders are loaded lazily."""
    return {
        "search": lambda budget: MemorySearch(),
        "search-hashing": lambda budget: MemorySearch(
            HashingEmbedder(), "branchmem search + HashingEmbedder"
        ),
        "search-wordllama": lambda budget: MemorySearch(
            WordLlamaEmbedder(), "branchmem search + WordLlama"
        ),
        "context": lambda budget: MemoryContext(
            budget, label=f"branchmem context ({budget} tokens)"
        ),
        "bm25s": lambda budget: Bm25s(),
        "dense-wordllama": lambda budget: Dense(WordLlamaEmbedder(), "dense: WordLlama"),
        "dense-minilm": lambda budget: Dense(_minilm(), "dense: all-MiniLM-L6-v2"),
    }


RETRIEVERS: Final = tuple(_registry())
DEFAULT_RETRIEVERS: Final = tuple(name for name in RETRIEVERS if name != "dense-minilm")


def make_retrievers(names: Sequence[str], budget: int = CONTEXT_BUDGET) -> list[Retriever]:
    """The named retrievers, in the order given (unknown names are refused by name)."""
    registry = _registry()
    unknown = [name for name in names if name not in registry]
    if unknown:
        raise BenchError(f"unknown retriever(s) {', '.join(unknown)}; known: {', '.join(registry)}")
    return [registry[name](budget) for name in names]


# -- evaluation ------------------------------------------------------------------------
@dataclass
class Row:
    """One retriever's scores on one corpus; ``n`` the questions scored (per metric)."""

    retriever: str
    corpus: str
    metrics: dict[str, float] = field(default_factory=dict)
    n: dict[str, int] = field(default_factory=dict)
    by_category: dict[str, dict[str, float]] = field(default_factory=dict)
    category_n: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def _rankings(
    retriever: Retriever,
    haystacks: Sequence[Haystack],
    queries: Sequence[EvidenceQuery] | Sequence[UpdateQuery],
    depth: int,
) -> list[list[str]]:
    """Every query's ranking, in ``queries`` order (one ingest per haystack)."""
    asked: list[tuple[str, str]] = [(q.haystack, q.question) for q in queries]
    by_haystack: dict[str, list[int]] = {}
    for index, (haystack_id, _) in enumerate(asked):
        by_haystack.setdefault(haystack_id, []).append(index)
    rankings: list[list[str]] = [[] for _ in asked]
    for haystack in haystacks:
        indices = by_haystack.get(haystack.id, [])
        if not indices:
            continue
        questions = [asked[i][1] for i in indices]
        for i, ranking in zip(indices, retriever.rank(haystack, questions, depth), strict=True):
            rankings[i] = ranking
    return rankings


def score_locomo(retriever: Retriever, task: LocomoTask, ks: Sequence[int] = KS) -> Row:
    """Mean evidence Recall@k over the task's questions, overall and per category."""
    started = time.perf_counter()
    rankings = _rankings(retriever, task.haystacks, task.queries, max(ks))
    row = Row(retriever.name, task.corpus)
    sums: dict[str, dict[int, float]] = {}
    counts: dict[str, int] = {}
    for query, ranking in zip(task.queries, rankings, strict=True):
        for key in ("all", query.category):
            counts[key] = counts.get(key, 0) + 1
            bucket = sums.setdefault(key, dict.fromkeys(ks, 0.0))
            for k in ks:
                bucket[k] += evidence_recall(ranking, query.gold, k)
    for key, bucket in sums.items():
        means = {f"recall@{k}": total / counts[key] for k, total in bucket.items()}
        if key == "all":
            row.metrics = means
            row.n = dict.fromkeys(means, counts[key])
        else:
            row.by_category[key] = means
            row.category_n[key] = counts[key]
    row.seconds = time.perf_counter() - started
    return row


def score_beam(
    retriever: Retriever, task: BeamTask, ks: Sequence[int] = KS, stale_k: int = STALE_K
) -> Row:
    """``updated@k`` over the update questions and ``stale-above-update@stale_k`` over those
    that also name an original turn."""
    started = time.perf_counter()
    rankings = _rankings(retriever, task.haystacks, task.queries, max(*ks, stale_k))
    row = Row(retriever.name, task.corpus)
    hits = dict.fromkeys(ks, 0)
    stale = stale_n = 0
    for query, ranking in zip(task.queries, rankings, strict=True):
        for k in ks:
            hits[k] += updated_at(ranking, query.updated, k)
        if query.original:
            stale_n += 1
            stale += stale_above_update(ranking, query.updated, query.original, stale_k)
    total = len(task.queries)
    for k in ks:
        row.metrics[f"updated@{k}"] = hits[k] / total if total else math.nan
        row.n[f"updated@{k}"] = total
    row.metrics[f"stale-above-update@{stale_k}"] = stale / stale_n if stale_n else math.nan
    row.n[f"stale-above-update@{stale_k}"] = stale_n
    row.seconds = time.perf_counter() - started
    return row


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
            for metric in row.metrics:
                if (row.corpus, metric) not in seen:
                    seen.append((row.corpus, metric))
        return seen

    def retrievers(self) -> list[str]:
        return list(dict.fromkeys(row.retriever for row in self.rows))

    def cell(self, retriever: str, corpus: str, metric: str) -> tuple[float, int] | None:
        for row in self.rows:
            if row.retriever == retriever and row.corpus == corpus and metric in row.metrics:
                return row.metrics[metric], row.n[metric]
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": {
                "documents": "one per turn, raw text (LoCoMo: 'speaker: text [shares caption]')",
                "anchor": "the last turn of each conversation",
                "ks": list(KS),
                "stale_k": STALE_K,
            },
            "tasks": [
                {
                    "corpus": t.corpus,
                    "conversations": len(t.haystacks),
                    "turns": sum(len(h.documents) for h in t.haystacks),
                    "questions": len(t.queries),
                    "dropped": t.dropped,
                    "truncated": t.truncated,
                }
                for t in self.tasks
            ],
            "skipped": self.skipped,
            "rows": [
                {
                    "retriever": r.retriever,
                    "corpus": r.corpus,
                    "metrics": r.metrics,
                    "n": r.n,
                    "by_category": r.by_category,
                    "category_n": r.category_n,
                    "seconds": round(r.seconds, 2),
                }
                for r in self.rows
            ],
        }

    def main_table(self) -> str:
        """Retrievers × metrics as a markdown table, each cell with its question count."""
        columns = self.columns()
        header = ["retriever"] + [f"{corpus} {metric} (n)" for corpus, metric in columns]
        lines = [_md_row(header), _md_row(["---"] + ["---:"] * len(columns))]
        for retriever in self.retrievers():
            cells = [retriever]
            for corpus, metric in columns:
                found = self.cell(retriever, corpus, metric)
                cells.append("n/a" if found is None else f"{_pct(found[0])} ({found[1]})")
            lines.append(_md_row(cells))
        return "\n".join(lines) + "\n"

    def notes(self) -> list[str]:
        """What each corpus contributed (and whether a limit cut it), and what was skipped."""
        return [f"{t.corpus}: {_coverage(t)}" for t in self.tasks] + [
            f"skipped: {s}" for s in self.skipped
        ]

    def markdown(self) -> str:
        """The main table, then LoCoMo per category, then the coverage notes."""
        lines = [self.main_table().rstrip("\n")]
        order = {name: position for position, name in enumerate(LOCOMO_CATEGORIES.values())}
        categories = sorted(
            {c for r in self.rows for c in r.by_category}, key=lambda c: (order.get(c, 99), c)
        )
        if categories:
            counts = {c: n for r in self.rows for c, n in r.category_n.items()}
            lines += ["", "LoCoMo evidence recall by category (R@5 / R@10):", ""]
            lines.append(_md_row(["retriever"] + [f"{c} ({counts[c]})" for c in categories]))
            lines.append(_md_row(["---"] + ["---:"] * len(categories)))
            for row in self.rows:
                if not row.by_category:
                    continue
                cells = [row.retriever]
                for c in categories:
                    values = row.by_category.get(c)
                    cells.append(
                        "n/a"
                        if values is None
                        else " / ".join(_pct(values[f"recall@{k}"]) for k in KS)
                    )
                lines.append(_md_row(cells))
        return "\n".join(lines + [""] + [f"- {note}" for note in self.notes()]) + "\n"


def _coverage(task: Task) -> str:
    turns = sum(len(h.documents) for h in task.haystacks)
    text = (
        f"{len(task.haystacks)} conversations, {turns} turns, {len(task.queries)} questions"
        f" scored, {task.dropped} without a gold turn left out"
    )
    return text + (" (TRUNCATED by a limit)" if task.truncated else "")


def _pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.1f}%"


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def run_retrieval(
    tasks: Sequence[Task],
    retrievers: Sequence[Retriever],
    *,
    skipped: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> RetrievalReport:
    """Every retriever on every task: one row per (retriever, corpus)."""
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


def write_report(report: RetrievalReport, out: Path) -> tuple[Path, Path]:
    """``retrieval.json`` and ``retrieval.md`` in ``out``."""
    import json

    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "retrieval.json", out / "retrieval.md"
    json_path.write_text(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    md_path.write_text(report.markdown())
    return json_path, md_path


def load_tasks(
    root: Path | None,
    *,
    conversations_limit: int | None = None,
    questions_limit: int | None = None,
) -> tuple[list[Task], list[str]]:
    """The LoCoMo and BEAM tasks under ``root`` (default: the corpora beside the repo); a
    corpus that is absent is reported in the second list, not raised, unless both are."""
    from branchbench.corpora import CorpusUnavailable, load_beam, load_locomo

    tasks: list[Task] = []
    skipped: list[str] = []
    try:
        conversations = load_locomo(root)
    except CorpusUnavailable as error:
        skipped.append(f"locomo ({error})")
    else:
        tasks.append(
            locomo_task(
                conversations,
                conversations_limit=conversations_limit,
                questions_limit=questions_limit,
            )
        )
    try:
        chats = load_beam(root)
    except CorpusUnavailable as error:
        skipped.append(f"beam ({error})")
    else:
        tasks.append(
            beam_task(
                chats, conversations_limit=conversations_limit, questions_limit=questions_limit
            )
        )
    if not tasks:
        raise BenchError("no corpus found: " + "; ".join(skipped))
    return tasks, skipped
