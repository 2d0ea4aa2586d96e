"""Public, model-free retrieval numbers on the corpora themselves (docs/retrieval.md).

Every retriever ranks the raw turns of one conversation (one document per turn) for the
corpus's own questions, and the scores need no answer key and no model:

- LoCoMo evidence Recall@k: per question, the fraction of its gold evidence turns
  (``dia_id``) among the top k, averaged (overall and per category);
- BEAM (100K and 500K chats together) knowledge updates: ``updated@k`` (a turn that states
  the new value is in the top k) and ``stale-above-update@k`` (a turn that states the old
  value is in the top k and ranked above every update turn);
- BEAM contradictions: ``contradiction-both@k`` (a turn of each conflicting statement is in
  the top k: a reader must see both to notice the contradiction).

Each question belongs to the tuning split (``TUNING``: the conversations the newest-first
constants were chosen on) or the held-out one; the report (``branchbench.retrieval_report``,
whose names are re-exported here) gives every metric over all questions and per split, with
bootstrap intervals.

Retrievers, side by side in one run: branchmem's ``Memory.search`` (turns ingested as
events, one record per turn citing it) with no embedder, with ``HashingEmbedder`` and with a
dense embedder; ``Memory.context`` (its rendered records, then its transcript, newest first,
mapped back to turns: the order in which the context uses them); BM25 from ``bm25s``; and a
dense embedder alone (WordLlama's static embeddings, whose weights ship inside the wheel).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from branchbench.errors import BenchError
from branchbench.retrieval_report import (
    ALL,
    HELD_OUT,
    LOCOMO_CATEGORIES,
    SPLITS,
    TUNING_SPLIT,
)
from branchmem import Memory
from branchmem.search.embedding import Embedder, HashingEmbedder, vector_rank

if TYPE_CHECKING:
    from branchbench.corpora import BeamChat, LocomoConversation

CONTEXT_BUDGET: Final = 2000  # tokens: branchmem's default context budget
TURN_KIND: Final = "turn"


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
    """A LoCoMo question and the turns that hold its answer; ``split`` is "tuning" or
    "held-out" (any question not tuned on is held out)."""

    haystack: str
    question: str
    gold: tuple[str, ...]
    category: str
    split: str = HELD_OUT


@dataclass(frozen=True)
class UpdateQuery:
    """A BEAM knowledge-update question: the turns with the new value and with the old."""

    haystack: str
    question: str
    updated: tuple[str, ...]
    original: tuple[str, ...]
    split: str = HELD_OUT


@dataclass(frozen=True)
class ContradictionQuery:
    """A BEAM contradiction question: the turns of the first and of the second statement."""

    haystack: str
    question: str
    first: tuple[str, ...]
    second: tuple[str, ...]
    split: str = HELD_OUT


@dataclass(frozen=True)
class LocomoTask:
    """LoCoMo's haystacks and evidence questions; ``dropped`` counts the questions left out
    (no gold turn to score against) and ``truncated`` says a limit was applied."""

    haystacks: tuple[Haystack, ...]
    queries: tuple[EvidenceQuery, ...]
    dropped: int = 0
    truncated: bool = False
    corpus: str = "locomo"

    @property
    def asked(self) -> tuple[EvidenceQuery, ...]:
        """Every question scored."""
        return self.queries


@dataclass(frozen=True)
class BeamTask:
    """BEAM's haystacks (100K and 500K chats, ids ``beam-100k-N`` / ``beam-500k-N``), its
    knowledge-update questions (``queries``; ``dropped`` those without an update turn) and
    its contradiction questions (``contradictions_dropped`` those lacking a side)."""

    haystacks: tuple[Haystack, ...]
    queries: tuple[UpdateQuery, ...]
    dropped: int = 0
    truncated: bool = False
    corpus: str = "beam"
    contradictions: tuple[ContradictionQuery, ...] = ()
    contradictions_dropped: int = 0

    @property
    def asked(self) -> tuple[UpdateQuery | ContradictionQuery, ...]:
        """Every question scored: the updates, then the contradictions."""
        return (*self.queries, *self.contradictions)


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
        split = question_split("locomo", conversation.id)
        qa = list(conversation.qa)
        if questions_limit is not None and questions_limit < len(qa):
            qa, truncated = qa[:questions_limit], True
        for item in qa:
            if not item.evidence:
                dropped += 1
                continue
            category = LOCOMO_CATEGORIES.get(item.category, str(item.category))
            queries.append(
                EvidenceQuery(haystacks[-1].id, item.question, item.evidence, category, split)
            )
    return LocomoTask(tuple(haystacks), tuple(queries), dropped, truncated)


def beam_task(
    chats: Sequence[BeamChat],
    *,
    conversations_limit: int | None = None,
    questions_limit: int | None = None,
    source: str = "beam-100k",
) -> BeamTask:
    """Documents, knowledge-update and contradiction questions of one BEAM folder
    (``source``: "beam-100k" or "beam-500k", the prefix of the haystack ids and the key of
    its ``TUNING`` split). Updates without an update turn and contradictions lacking either
    statement's turn are dropped (nothing to retrieve); ``questions_limit`` applies per
    chat to each kind."""
    chosen = list(chats)[:conversations_limit]
    haystacks: list[Haystack] = []
    queries: list[UpdateQuery] = []
    contradictions: list[ContradictionQuery] = []
    dropped = contradictions_dropped = 0
    truncated = conversations_limit is not None and conversations_limit < len(chats)
    for chat in chosen:
        documents = tuple(Document(t.id, t.speaker, t.text) for t in chat.turns)
        haystack = Haystack(f"{source}-{chat.id}", documents)
        haystacks.append(haystack)
        split = question_split(source, chat.id)
        known = {d.id for d in documents}

        def resolved(ids: Sequence[str], known: set[str] = known) -> tuple[str, ...]:
            return tuple(i for i in ids if i in known)

        updates, contradicts = list(chat.updates), list(chat.contradictions)
        if questions_limit is not None and questions_limit < max(len(updates), len(contradicts)):
            updates, contradicts = updates[:questions_limit], contradicts[:questions_limit]
            truncated = True
        for item in updates:
            updated = resolved(item.updated_ids)
            if not updated:
                dropped += 1
                continue
            queries.append(
                UpdateQuery(haystack.id, item.question, updated, resolved(item.original_ids), split)
            )
        for contradiction in contradicts:
            first, second = resolved(contradiction.first_ids), resolved(contradiction.second_ids)
            if not first or not second:
                contradictions_dropped += 1
                continue
            contradictions.append(
                ContradictionQuery(haystack.id, contradiction.question, first, second, split)
            )
    return BeamTask(
        tuple(haystacks),
        tuple(queries),
        dropped,
        truncated,
        contradictions=tuple(contradictions),
        contradictions_dropped=contradictions_dropped,
    )


def join_beam(tasks: Sequence[BeamTask]) -> BeamTask:
    """BEAM folders as one corpus: their haystacks stay apart (different chats), their
    questions and counts add up."""
    return BeamTask(
        tuple(h for t in tasks for h in t.haystacks),
        tuple(q for t in tasks for q in t.queries),
        sum(t.dropped for t in tasks),
        any(t.truncated for t in tasks),
        contradictions=tuple(c for t in tasks for c in t.contradictions),
        contradictions_dropped=sum(t.contradictions_dropped for t in tasks),
    )


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


def ingest(memory: Memory, haystack: Haystack, *, roles: bool = True) -> str:
    """Write a conversation as a user would: the turns as one chain of events, and one
    record per turn citing its event (search ranks records). Returns the anchor (last turn).
    ``roles=False``: every turn is written as the user's, so search cannot tell whose words
    a turn holds (``search.voice``): the row that shows what that rule buys."""
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
                "role": document.role if roles else "user",
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
    roles: bool = True  # False: every turn ingested as the user's (``ingest``)

    @property
    def name(self) -> str:
        return self.label

    def rank(self, haystack: Haystack, questions: Sequence[str], depth: int) -> list[list[str]]:
        memory = Memory(embedder=self.embedder)
        anchor = ingest(memory, haystack, roles=self.roles)
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
class PlainRank:
    """The turns ranked as search ranked them before newest first and the blend: branchmem's
    BM25 alone (``lexical.rank``), or with an embedder fused by RRF (``embedding.hybrid_rank``);
    no path order, no store. What those two parts buy is this row against ``search``."""

    embedder: Embedder | None = None
    label: str = "branchmem BM25 (no newest first)"

    @property
    def name(self) -> str:
        return self.label

    def rank(self, haystack: Haystack, questions: Sequence[str], depth: int) -> list[list[str]]:
        from branchmem.search.embedding import hybrid_rank
        from branchmem.search.lexical import rank

        documents = {d.id: d.text for d in haystack.documents}
        if self.embedder is None:
            return [[h.doc_id for h in rank(q, documents, depth)] for q in questions]
        vectors = dict(zip(documents, self.embedder.embed(list(documents.values())), strict=True))
        return [
            [h.doc_id for h in hybrid_rank(q, documents, vector, vectors, depth)]
            for q, vector in zip(questions, self.embedder.embed(list(questions)), strict=True)
        ]


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


def WordLlamaEmbedder() -> Embedder:
    """branchmem's ``WordLlamaEmbedder``, or ``RetrieverUnavailable`` naming the extra."""
    from branchmem.search.embedding import WordLlamaEmbedder as Packaged

    return _packaged(Packaged)


@functools.cache
def ParaphraseMiniLMEmbedder() -> Embedder:
    """branchmem's recommended embedder, loaded once per process (loading checks 69 MB of
    weights), or ``RetrieverUnavailable`` naming the extra."""
    from branchmem.search.embedding import ParaphraseMiniLMEmbedder as Packaged

    return _packaged(Packaged)


def _minilm() -> Embedder:
    from branchmem.search.embedding import MiniLMEmbedder

    return _packaged(MiniLMEmbedder)


def _packaged(make: Callable[[], Embedder]) -> Embedder:
    """An embedder from its extra; a missing extra is ``RetrieverUnavailable``, named."""
    from branchmem.search.embedding import EmbedderUnavailable

    try:
        return make()
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
        "search-paraphrase": lambda budget: MemorySearch(
            ParaphraseMiniLMEmbedder(), "branchmem search + paraphrase-MiniLM (blend; recommended)"
        ),
        "search-paraphrase-noroles": lambda budget: MemorySearch(
            ParaphraseMiniLMEmbedder(),
            "branchmem search + paraphrase-MiniLM, every turn the user's",
            roles=False,
        ),
        "search-wordllama": lambda budget: MemorySearch(
            WordLlamaEmbedder(), "branchmem search + WordLlama (blend)"
        ),
        "context": lambda budget: MemoryContext(
            budget, label=f"branchmem context ({budget} tokens)"
        ),
        "context-paraphrase": lambda budget: MemoryContext(
            budget,
            ParaphraseMiniLMEmbedder(),
            f"branchmem context ({budget} tokens) + paraphrase-MiniLM",
        ),
        "bm25-plain": lambda budget: PlainRank(),
        "rrf-paraphrase": lambda budget: PlainRank(
            ParaphraseMiniLMEmbedder(), "RRF: branchmem BM25 + paraphrase-MiniLM (no newest first)"
        ),
        "rrf-wordllama": lambda budget: PlainRank(
            WordLlamaEmbedder(), "RRF: branchmem BM25 + WordLlama (no newest first)"
        ),
        "bm25s": lambda budget: Bm25s(),
        "dense-paraphrase": lambda budget: Dense(
            ParaphraseMiniLMEmbedder(), "dense: paraphrase-MiniLM"
        ),
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


# -- splits and loading ----------------------------------------------------------------
# The tuning split of the newest-first rule (branchmem.search.newest): its threshold was
# chosen on these conversations only; the rest are held out (docs/retrieval.md). Keyed by
# corpus folder ("beam-100k", "beam-500k": the prefixes of the BEAM haystack ids).
TUNING: Final = {
    "locomo": frozenset({"26", "30", "41", "42", "43", "44"}),
    "beam-100k": frozenset(str(n) for n in range(1, 15)),
    "beam-500k": frozenset(str(n) for n in range(1, 9)),
}


def question_split(source: str, conversation: str) -> str:
    """ "tuning" when the conversation of ``source`` (a ``TUNING`` key) was tuned on, else
    "held-out"."""
    if source not in TUNING:
        raise BenchError(f"unknown corpus {source!r}; known: {', '.join(TUNING)}")
    return TUNING_SPLIT if conversation in TUNING[source] else HELD_OUT


def in_split(corpus: str, conversation: str, split: str) -> bool:
    """Whether a conversation of ``corpus`` belongs to ``split`` ("all" holds every one)."""
    if split not in SPLITS:
        raise BenchError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    return split == ALL or question_split(corpus, conversation) == split


def load_tasks(
    root: Path | None,
    *,
    conversations_limit: int | None = None,
    questions_limit: int | None = None,
    split: str = ALL,
) -> tuple[list[Task], list[str]]:
    """The LoCoMo task and one BEAM task (100K and 500K chats) under ``root`` (default: the
    corpora beside the repo); ``split`` keeps only that split's conversations (the report
    splits an "all" run itself). A corpus that is absent is reported in the second list,
    not raised, unless every one is; limits apply per folder."""
    from branchbench.corpora import (
        BEAM_500K_DIR,
        BEAM_DIR,
        CorpusUnavailable,
        load_beam,
        load_locomo,
    )

    in_split("locomo", "", split)  # an unknown split is refused before anything is read

    tasks: list[Task] = []
    skipped: list[str] = []
    try:
        conversations = load_locomo(root)
    except CorpusUnavailable as error:
        skipped.append(f"locomo ({error})")
    else:
        tasks.append(
            locomo_task(
                [c for c in conversations if in_split("locomo", c.id, split)],
                conversations_limit=conversations_limit,
                questions_limit=questions_limit,
            )
        )
    beams: list[BeamTask] = []
    for source in (BEAM_DIR, BEAM_500K_DIR):
        try:
            chats = load_beam(root, source)
        except CorpusUnavailable as error:
            skipped.append(f"{source} ({error})")
            continue
        beams.append(
            beam_task(
                [c for c in chats if in_split(source, c.id, split)],
                conversations_limit=conversations_limit,
                questions_limit=questions_limit,
                source=source,
            )
        )
    if beams:
        tasks.append(join_beam(beams))
    if not tasks:
        raise BenchError("no corpus found: " + "; ".join(skipped))
    return tasks, skipped
