"""The naive references tests/test_search.py compares every backend with: random texts and
queries, the newest-first rule, path neighbours and the blend written apart from
``branchmem.search``, and the random scenarios that replay a history on one backend and check
search and context against the oracle (``branchmem.testing.oracle``)."""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections.abc import Callable, Iterator
from typing import Any

from branchmem import Memory
from branchmem.errors import BranchmemError
from branchmem.search.embedding import LEXICAL_WEIGHT, Embedder, cosines
from branchmem.search.lexical import (
    CorpusStats,
    LexicalHit,
    bm25,
    describe,
    idf,
    matches,
    normalize,
    query_terms,
    rank,
)
from branchmem.search.tokens import count_tokens
from branchmem.testing.differential import Op, apply, random_history
from branchmem.testing.oracle import Oracle, ORevision

DIMENSIONS = 32  # a small HashingEmbedder: collisions make vector ties, which must agree too

# Small vocabularies, so that random records and queries share terms often. Full-width and
# upper-case spellings check that every backend searches lexical.normalize()d text.
ZH_WORDS = ("搬去", "杭州", "成都", "预算", "绿茶", "火锅", "猫", "会议", "用户", "喜欢", "下个月")
EN_WORDS = (
    "moving", "Hangzhou", "HANGZHOU", "Ｈａｎｇｚｈｏｕ", "Chengdu", "budget", "green", "tea",
    "hotpot", "meeting", "async", "user", "cat", "snake_case", "2026",
)  # fmt: skip
TERMLESS_QUERIES = ("", "to be", "？！", "a is it")  # no term: nothing matches lexically
FILTERS: tuple[dict[str, str | None], ...] = (
    {},
    {},
    {"kind": "fact"},
    {"kind": "summary"},
    {"kind": "retraction"},
    {"key": "city"},
    {"key": "budget", "scope": "work"},
    {"scope": "work"},
)


def random_text(rng: random.Random) -> str:
    """A record's text: Chinese (no spaces), English, or both; now and then empty."""
    if rng.random() < 0.07:
        return ""
    words = rng.randint(1, 6)
    style = rng.random()
    if style < 0.4:
        return rng.choice(("", "，")).join(rng.choice(ZH_WORDS) for _ in range(words))
    if style < 0.8:
        return " ".join(rng.choice(EN_WORDS) for _ in range(words))
    return " ".join(rng.choice(rng.choice((ZH_WORDS, EN_WORDS))) for _ in range(words))


def random_query(rng: random.Random) -> str:
    """A question: words (Chinese ones run together, as questions are typed), a fragment
    of a word (substring semantics), or a query without any term."""
    roll = rng.random()
    if roll < 0.08:
        return rng.choice(TERMLESS_QUERIES)
    if roll < 0.18:
        word = rng.choice([w for w in EN_WORDS if len(w) > 4])
        start = rng.randrange(len(word) - 3)
        return word[start : start + rng.randint(3, 4)]
    if roll < 0.5:
        return "".join(rng.choice(ZH_WORDS) for _ in range(rng.randint(1, 3))) + rng.choice(
            ("", "？", "吗")
        )
    pool = EN_WORDS + ZH_WORDS if roll < 0.7 else EN_WORDS
    return " ".join(rng.choice(pool) for _ in range(rng.randint(1, 3)))


# -- a naive reference of the newest-first rule (docs/retrieval.md), written apart from
# branchmem.search.newest: the engine must agree with it on every random store.
SAME_THING = 0.9
HEAVIER_SHARE = 0.3
WINDOW = 10
NEIGHBOUR_SHARE = 0.3
REACH = 1
LENDERS = 10
ASSISTANT_SHARE = 0.5  # of its score a record citing only assistant messages keeps


def naive_lexical(
    query: str, documents: dict[str, str], superseded: dict[str, str]
) -> tuple[list[LexicalHit], dict[str, set[str]], dict[str, float]]:
    """Every matching candidate and superseded text, BM25 with the candidates' statistics
    only; the terms each matches; each query term's idf over the candidates."""
    terms = query_terms(query)
    folded = {d: normalize(t) for d, t in documents.items()}
    stats = CorpusStats(
        len(folded), sum(map(len, folded.values())) / len(folded) if folded else 0.0
    )
    df = {t: sum(1 for text in folded.values() if t in text) for t in terms}
    everything = dict(folded)
    everything.update({d: normalize(t) for d, t in superseded.items() if d not in folded})
    hits: list[LexicalHit] = []
    matched: dict[str, set[str]] = {}
    for doc_id, text in everything.items():
        tfs = {t: text.count(t) for t in terms if t in text}
        if tfs:
            hits.append(LexicalHit(doc_id, bm25(tfs, len(text), df, stats), describe(terms, tfs)))
            matched[doc_id] = set(tfs)
    hits.sort(key=lambda h: (-h.score, h.doc_id))
    return hits, matched, {t: idf(df[t], stats) for t in terms}


def naive_lend(
    hits: list[LexicalHit], matched: dict[str, set[str]], superseder: dict[str, str]
) -> tuple[list[LexicalHit], dict[str, set[str]]]:
    out: list[LexicalHit] = []
    terms: dict[str, set[str]] = {}
    for hit in hits:
        new = superseder.get(hit.doc_id)
        if new is None:
            if hit.doc_id not in terms:
                out.append(hit)
                terms[hit.doc_id] = set(matched.get(hit.doc_id, set()))
            else:
                terms[hit.doc_id] |= matched[hit.doc_id]
            continue
        if new not in terms:
            out.append(LexicalHit(new, hit.score, f"for {hit.doc_id} (superseded): {hit.why}"))
            terms[new] = set(matched.get(new, set()))
        terms[new] |= matched[hit.doc_id]
    return out, terms


def naive_same(a: set[str], b: set[str], weights: dict[str, float]) -> bool:
    both = math.fsum(weights[t] for t in sorted(a & b))
    lighter = min(
        math.fsum(weights[t] for t in sorted(a)), math.fsum(weights[t] for t in sorted(b))
    )
    heavier = max(
        math.fsum(weights[t] for t in sorted(a)), math.fsum(weights[t] for t in sorted(b))
    )
    return lighter > 0 and both >= SAME_THING * lighter and both >= HEAVIER_SHARE * heavier


def naive_newest_first(
    ranking: list[str],
    depth: dict[str, int | None],
    matched: dict[str, set[str]],
    weights: dict[str, float],
    assistant: set[str] | None = None,
) -> list[tuple[str, str]]:
    """Slot by slot through the window: the first hit below, later on the path, that states
    the same thing as the slot's unplaced hit takes the slot, unless it is the assistant's
    (in ``assistant``) and the slot's hit is not; the rest stays."""
    quiet = assistant or set()
    window = ranking[:WINDOW]
    out: list[tuple[str, str]] = []
    placed: set[str] = set()
    waiting = list(window)  # hits not yet given a slot, in their current order
    while waiting:
        here = waiting[0]
        if here in placed or depth[here] is None:
            out.append((here, ""))
            placed.add(here)
            waiting.pop(0)
            continue
        below = [
            d
            for d in waiting[1:]
            if d not in placed
            and depth[d] is not None
            and depth[d] > depth[here]  # type: ignore[operator]
            and (d not in quiet or here in quiet)
            and naive_same(matched.get(here, set()), matched.get(d, set()), weights)
        ]
        if below:
            out.append((below[0], here))
            placed.add(below[0])
            waiting.remove(below[0])
        else:
            out.append((here, ""))
            placed.add(here)
            waiting.pop(0)
    return out + [(doc_id, "") for doc_id in ranking[WINDOW:]]


def naive_neighbours(hits: list[Any], depth: dict[str, int | None]) -> list[LexicalHit]:
    """Path neighbours, written apart: every candidate 1..REACH path steps from one of the
    first LENDERS hits with a positive score gains NEIGHBOUR_SHARE of the best such hit's
    score (the smaller id on a tie); order by the new score, then the old rank (non-hits
    last), then id."""
    old = {h.doc_id: (number, h) for number, h in enumerate(hits)}
    out = []
    for doc_id, at in depth.items():
        lenders = [
            (h.score, h.doc_id)
            for h in hits[:LENDERS]
            if at is not None
            and h.score > 0
            and depth.get(h.doc_id) is not None
            and 1 <= abs(depth[h.doc_id] - at) <= REACH  # type: ignore[operator]
        ]
        best = min(lenders, key=lambda lender: (-lender[0], lender[1]), default=None)
        if doc_id not in old and best is None:
            continue
        number, hit = old.get(doc_id, (len(hits), None))
        score = 0.0 if hit is None else hit.score
        why = "" if hit is None else hit.why
        if best is not None:
            score += NEIGHBOUR_SHARE * best[0]
            near = f"beside {best[1]} on the path (+{NEIGHBOUR_SHARE * best[0]:.3f})"
            why = f"{why}; {near}" if why else near
        out.append((-score, number, doc_id, LexicalHit(doc_id, score, why)))
    return [hit for *_, hit in sorted(out)]


def naive_voices(hits: list[LexicalHit], assistant: set[str]) -> list[LexicalHit]:
    """The assistant's words, written apart: a hit in ``assistant`` keeps ASSISTANT_SHARE of
    its score; then by the new score, ties in the old order."""
    out = []
    for number, hit in enumerate(hits):
        if hit.doc_id in assistant and hit.score:
            share = ASSISTANT_SHARE
            hit = LexicalHit(
                hit.doc_id, hit.score * share, f"{hit.why}; the assistant's words (x{share})"
            )
        out.append((-hit.score, number, hit))
    return [hit for *_, hit in sorted(out, key=lambda item: item[:2])]


def naive_blend(
    lexical: list[LexicalHit] | None,
    documents: dict[str, str],
    query_vector: list[float],
    vectors: dict[str, list[float]],
    k: int,
    query: str = "",
) -> list[LexicalHit]:
    """The blend of docs/retrieval.md, written apart: BM25 over the best BM25, the cosine
    above the candidates' median over the best's distance from it, 0.7 / 0.3."""
    if lexical is None:
        lexical = rank(query, documents, len(documents))
    top = max((h.score for h in lexical), default=0.0)
    lex = {h.doc_id: h for h in lexical}
    cos = {d: c for d, c in cosines(query_vector, vectors).items() if d in documents}
    median = statistics.median(cos.values()) if cos else 0.0
    spread = max(cos.values(), default=0.0) - median
    out = []
    for doc_id in documents:
        part = lex[doc_id].score / top if doc_id in lex and top > 0 else 0.0
        near = max(0.0, (cos[doc_id] - median) / spread) if doc_id in cos and spread > 0 else 0.0
        why = [f"lexical {part:.3f} ({lex[doc_id].why})"] if doc_id in lex else []
        why += [f"cosine {cos[doc_id]:.4f}"] if doc_id in cos else []
        score = LEXICAL_WEIGHT * part + (1 - LEXICAL_WEIGHT) * near
        out.append(
            (-score, -cos.get(doc_id, -2.0), doc_id, LexicalHit(doc_id, score, "; ".join(why)))
        )
    return [hit for *_, hit in sorted(out)[:k]]


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A record the oracle says is visible, with the revision shown and that revision's text."""

    record_id: str
    revision: int
    text: str


class SearchScenario:
    """One random history replayed into a ``Memory`` and the oracle, with every revision's
    text kept here (the oracle keeps no text), so the reference never reads the engine."""

    def __init__(self, mem: Memory, rng: random.Random, embedder: Embedder | None) -> None:
        self.mem = mem
        self.rng = rng
        self.embedder = embedder
        self.oracle = Oracle()
        self.namespace = f"ns{rng.randrange(10**9)}"
        self.texts: dict[str, list[str]] = {}  # record id -> text of each revision
        self.vectors: dict[str, list[float]] = {}  # text -> the embedder's vector

    # -- writing -----------------------------------------------------------------------
    def apply(self, op: Op) -> None:
        kind, args = op
        if kind not in ("record", "revise", "retract"):
            apply(self.mem, self.oracle, op, self.namespace)
            return
        text = random_text(self.rng)
        record_id = args["id"]
        before = len(self.oracle.records.get(record_id, []))
        mem, oracle, ns = self.mem, self.oracle, self.namespace
        if kind == "record":
            record_kind = self.rng.choice(("fact", "fact", "summary"))
            self.both(
                op,
                lambda: mem.add_record(
                    record_id, sources=args["sources"], content=text, kind=record_kind,
                    key=args["key"], scope=args["scope"], namespace=ns,
                ),
                lambda: oracle.add_record(
                    record_id, args["sources"], args["key"], args["scope"], kind=record_kind
                ),
            )  # fmt: skip
        elif kind == "revise":
            self.both(
                op,
                lambda: mem.revise(record_id, content=text, sources=args["sources"], namespace=ns),
                lambda: oracle.revise(record_id, args["sources"]),
            )
        else:
            text = text or "retracted"  # a retraction's content is its reason, when given
            self.both(
                op,
                lambda: mem.retract(
                    record_id, sources=args["sources"], targets=args["targets"], key=args["key"],
                    key_scope=args["key_scope"], scope=args["scope"], reason=text, namespace=ns,
                ),
                lambda: oracle.retract(
                    record_id, args["sources"], args["targets"], args["key"], args["key_scope"],
                    args["scope"],
                ),
            )  # fmt: skip
        if len(self.oracle.records.get(record_id, [])) > before:
            self.texts.setdefault(record_id, []).append(text)

    @staticmethod
    def both(op: Op, engine: Callable[[], object], reference: Callable[[], object]) -> None:
        """Run one write on both; an error from one must be the same error from the other."""
        errors: list[str | None] = []
        for call in (engine, reference):
            try:
                call()
                errors.append(None)
            except BranchmemError as error:
                errors.append(type(error).__name__)
        assert errors[0] == errors[1], (op, errors)

    # -- the reference -----------------------------------------------------------------
    def shown(self, revisions: list[ORevision], anchor: str | None, mode: str, cross: bool) -> int:
        """The revision a view shows: the highest one whose own gate passes."""
        passing = [
            r for r in revisions if self.oracle.gate_reason(r, anchor, cross, mode) == "visible"
        ]
        return passing[-1].number

    def candidates(
        self, anchor: str | None, mode: str, cross_tree: bool, filters: dict[str, str | None]
    ) -> dict[str, Candidate]:
        """The oracle's visible records at the anchor, after the kind/key/scope filters."""
        decisions = self.oracle.decide_all(anchor, mode=mode, cross_tree=cross_tree)
        found: dict[str, Candidate] = {}
        for record_id, decision in decisions.items():
            if not self.oracle.returned(decision, False, False):
                continue
            revisions = self.oracle.records[record_id]
            number = self.shown(revisions, anchor, mode, cross_tree)
            revision = revisions[number - 1]
            if any(
                value is not None and getattr(revision, name) != value
                for name, value in filters.items()
            ):
                continue
            text = self.texts[record_id][number - 1]
            if record_id in self.oracle.redacted:  # a retraction about an erased record
                text = ""
            found[record_id] = Candidate(record_id, number, text)
        return found

    def vector(self, text: str) -> list[float]:
        assert self.embedder is not None
        if text not in self.vectors:
            self.vectors[text] = self.embedder.embed([text])[0]
        return self.vectors[text]

    def assistants(self, candidate: Candidate) -> bool:
        """Whether a candidate cites events only, each a message of the assistant."""
        revision = self.oracle.records[candidate.record_id][candidate.revision - 1]
        return bool(revision.resolved) and all(
            kind == "event" and self.oracle.events[name].role == "assistant"
            for kind, name, _ in revision.resolved
        )

    def depth(self, revision: ORevision, anchor: str | None) -> int | None:
        """The rule's path position: the deepest effective source on an attached anchor's
        path (its index from the root), None without one."""
        if anchor is None or not self.oracle.attached(anchor):
            return None
        present, at, _ = self.oracle.position(revision, anchor)
        return at if present else None

    def superseded(
        self,
        anchor: str | None,
        mode: str,
        cross_tree: bool,
        filters: dict[str, str | None],
        found: dict[str, Candidate],
    ) -> dict[str, tuple[str, str]]:
        """Superseded records of the view (after the filters) with a visible superseder:
        id -> (text shown, superseder). Explicit supersede first (the deepest new one on
        the path, then the larger id), else the key's current value in the same scope."""
        decisions = self.oracle.decide_all(anchor, mode=mode, cross_tree=cross_tree)
        out: dict[str, tuple[str, str]] = {}
        for record_id, decision in decisions.items():
            if record_id in found or not decision[1].get("superseded"):
                continue
            if not self.oracle.returned(decision, True, False):
                continue
            revisions = self.oracle.records[record_id]
            revision = revisions[self.shown(revisions, anchor, mode, cross_tree) - 1]
            if any(
                value is not None and getattr(revision, name) != value
                for name, value in filters.items()
            ):
                continue
            text = (
                ""
                if record_id in self.oracle.redacted
                else self.texts[record_id][revision.number - 1]
            )
            news = [n for n, o in self.oracle.supersedes if o == record_id and n in found]
            if news:

                def where(new: str) -> tuple[int, str]:
                    revs = self.oracle.records[new]
                    shown = revs[found[new].revision - 1]
                    at = self.depth(shown, anchor)
                    return (-1 if at is None else at, new)

                out[record_id] = (text, max(news, key=where))
                continue
            if revision.key is None:
                continue
            for other in found.values():
                shown = self.oracle.records[other.record_id][other.revision - 1]
                if (
                    shown.kind != "retraction"
                    and shown.key == revision.key
                    and shown.scope == revision.scope
                ):
                    out[record_id] = (text, other.record_id)
        return out

    def expected(
        self,
        query: str,
        found: dict[str, Candidate],
        k: int,
        view: tuple[str | None, str, bool] = (None, "strict", False),
        filters: dict[str, str | None] | None = None,
    ) -> list[tuple[str, int, float, str]]:
        anchor, mode, cross_tree = view
        documents = {c.record_id: c.text for c in found.values()}
        lent = (
            self.superseded(anchor, mode, cross_tree, filters or {}, found)
            if query_terms(query)
            else {}
        )
        lexical, matched, weights = naive_lexical(
            query, documents, {o: t for o, (t, _) in lent.items()}
        )
        lexical, matched = naive_lend(lexical, matched, {o: n for o, (_, n) in lent.items()})
        if self.embedder is None:
            hits: list[Any] = lexical
        else:
            # a revision without text is not embedded: it ranks through lexical search only
            vectors = {c.record_id: self.vector(c.text) for c in found.values() if c.text}
            hits = naive_blend(lexical, documents, self.vector(query), vectors, len(documents))
        depth = {
            c.record_id: self.depth(self.oracle.records[c.record_id][c.revision - 1], anchor)
            for c in found.values()
        }
        hits = naive_neighbours(hits, depth)
        assistant = {c.record_id for c in found.values() if self.assistants(c)}
        hits = naive_voices(hits, assistant)
        order = naive_newest_first([h.doc_id for h in hits], depth, matched, weights, assistant)
        by_id = {h.doc_id: h for h in hits}
        out = []
        for record_id, displaced in order[:k]:
            hit = by_id[record_id]
            why = hit.why + (f"; newest first: in the place of {displaced}" if displaced else "")
            out.append((record_id, found[record_id].revision, hit.score, why))
        return out

    # -- checking ----------------------------------------------------------------------
    def views(self) -> Iterator[tuple[str | None, str, bool]]:
        for anchor in [None, *sorted(self.oracle.events)]:
            for mode in ("strict", "compat"):
                for cross_tree in (False, True) if self.oracle.heads else (False,):
                    yield anchor, mode, cross_tree

    def check_search(self) -> int:
        """Random searches per view, compared with the reference; returns how many. A view is
        searched twice with nothing written between: the second search may use what the
        first decided (a kept view and its term index, ``_engine.viewcache``)."""
        compared = 0
        for anchor, mode, cross_tree in self.views():
            filters = self.rng.choice(FILTERS)
            for _ in range(2):
                compared += self.check_one_search(anchor, mode, cross_tree, filters)
        return compared

    def check_one_search(
        self, anchor: str | None, mode: str, cross_tree: bool, filters: dict[str, str | None]
    ) -> int:
        query = random_query(self.rng)
        k = self.rng.choice((1, 2, 3, 5, 10, 50))
        found = self.candidates(anchor, mode, cross_tree, filters)
        want = self.expected(query, found, k, (anchor, mode, cross_tree), filters)
        hits = self.mem.search(
            query, anchor, k=k, mode=mode, cross_tree=cross_tree,
            namespace=self.namespace, **filters,  # type: ignore[arg-type]
        )  # fmt: skip
        got = [(h.record.id, h.record.revision, h.score, h.why) for h in hits]
        where = (anchor, mode, cross_tree, query, filters, k)
        assert got == want, where
        for hit in hits:
            assert hit.record.content == found[hit.record.id].text, (where, hit)
        if self.embedder is None:  # k results whenever k visible matches exist
            matching = sum(1 for c in found.values() if matches(query, c.text))
            assert len(hits) >= min(k, matching), where  # superseders lent a rank add
        return 1

    def check_context(self) -> int:
        """Context at a few views: within budget, only visible records, a tail of the path."""
        compared = 0
        views = list(self.views())
        for anchor, mode, cross_tree in self.rng.sample(views, min(4, len(views))):
            budget = self.rng.choice((1, 5, 20, 60, 400, 100_000))  # 0 is refused (validation.py)
            query = self.rng.choice((None, random_query(self.rng)))
            context = self.mem.context(
                anchor, query=query, budget=budget, mode=mode, cross_tree=cross_tree,
                namespace=self.namespace,
            )  # fmt: skip
            where = (anchor, mode, cross_tree, query, budget)
            assert context.tokens == count_tokens(context.text) <= budget, where
            visible = self.candidates(anchor, mode, cross_tree, {})
            for record_id, revision in context.items:
                assert record_id in visible, (where, record_id)
                candidate = visible[record_id]
                assert revision == candidate.revision, (where, record_id)
                assert " ".join(candidate.text.split()) in context.text, (where, record_id)
            messages = self.path_messages(anchor)
            events = list(context.events)
            assert events == (messages[len(messages) - len(events) :] if events else []), where
            if budget == 100_000:  # room for everything: every current record, every message
                assert len(context.items) == len(set(context.items)), where
                assert {r for r, _ in context.items} == self.current(visible), where
                assert events == messages, where
            compared += 1
        return compared

    def path_messages(self, anchor: str | None) -> list[str]:
        """Ids of the anchor's known ancestors-or-self (root first) that a prompt may get:
        those with text, neither erased nor withdrawn (SPEC §6: they leave every view)."""
        if anchor is None:
            return []
        return [
            e
            for e in reversed(self.oracle.chain(anchor))
            if e not in self.oracle.status and self.oracle.events[e].content.strip()
        ]

    def current(self, visible: dict[str, Candidate]) -> set[str]:
        """What a context with room for everything holds: every visible record with text
        that is not a retraction (a view shows one current record per (scope, key))."""
        return {
            c.record_id
            for c in visible.values()
            if c.text.strip() and self.oracle.records[c.record_id][0].kind != "retraction"
        }


def run_scenario(
    make_memory: Callable[[], Memory], rng: random.Random, embedder: Embedder | None
) -> int:
    """Replay one random history; compare searches midway and at the end, then contexts."""
    mem = make_memory()
    try:
        scenario = SearchScenario(mem, rng, embedder)
        ops = random_history(rng)
        checkpoint = rng.randrange(len(ops)) if ops else 0
        compared = 0
        for index, op in enumerate(ops):
            scenario.apply(op)
            if index == checkpoint:
                compared += scenario.check_search()
        compared += scenario.check_search()
        compared += scenario.check_context()
        return compared
    finally:
        mem.close()
