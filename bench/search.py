"""Gated search at 10k, 100k and 1M records, against ungated search and "search then filter".

One store per backend (in-memory, SQLite; PostgreSQL when a server is given) is grown through
the sizes on chat-like histories (bench/chatlike.py: a main line with abandoned edits and
forks, ~0.7 facts per event, summaries), every record holding Chinese or English text drawn
from a Zipf-distributed vocabulary (facts without keys unless ``--keys``). At each size, in
one run and in interleaved rounds (so machine load weighs on all three alike), the same
queries at anchors 200 turns deep go to:

- **gated**: ``Memory.search(query, anchor, k)``, the records visible at the anchor ranked by
  BM25 over those candidates;
- **ungated**: the same query with gating disabled: a lexical index over every revision of
  the namespace (the bench's own FTS5 trigram table, since the store keeps none), ranked by
  the same BM25 with the namespace's statistics, top k;
- **search then filter**: the ungated top k, then the hits not visible at the anchor dropped
  (what a vector store's post-filter does). It is as fast as ungated plus one ``visible()``,
  and it returns fewer than k results: the table counts them.

Nothing is asserted: the table prints median and p95 latency per path, the ratio gated /
ungated measured side by side, and how many results "search then filter" returned; JSON goes
to bench/results/search.json.

    python bench/search.py [--sizes 10000,100000,1000000] [--backends memory,sqlite]
                           [--queries 100] [--k 10] [--keys] [--pg-dsn URL]

``BRANCHMEM_BENCH_SEARCH_SIZES`` sets the default sizes (e.g. ``2000,20000`` for a quick run).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import random
import sqlite3
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from branchmem import Memory
from branchmem.search.lexical import (
    CorpusStats,
    bm25,
    describe,
    normalize,
    query_terms,
    term_frequencies,
)
from chatlike import Conversation, conversations
from storage import Grown, percentile, postgres_store, sqlite_store

NAMESPACE = "bench"
ANCHORS = 40  # distinct anchors searched at every size
VOCABULARY = 600  # words per language
ZIPF = 1.1
QUERY_RANKS = range(4, 60)  # query words: the 5th to the 60th commonest
GOAL = 1.2  # gated / ungated at the largest size (issue #6)


# -- text ---------------------------------------------------------------------------------
def _english_words(rng: random.Random, count: int) -> list[str]:
    """Pronounceable made-up words of 4-9 letters, all distinct."""
    onsets = ["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z"]
    onsets += ["br", "ch", "st", "tr", "pl", "sh"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou"]
    words: dict[str, None] = {}
    while len(words) < count:
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.randint(2, 3)))
        words.setdefault(word)
    return list(words)


def _chinese_words(rng: random.Random, count: int) -> list[str]:
    """Two-character words from 200 common ideographs, all distinct."""
    characters = (
        "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工"
        "也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小"
        "物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形"
        "相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建"
        "月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长"
    )
    words: dict[str, None] = {}
    while len(words) < count:
        words.setdefault(rng.choice(characters) + rng.choice(characters))
    return list(words)


@dataclass
class Vocabulary:
    """Words per language with Zipf weights: a few common words, a long tail of rare ones."""

    english: list[str]
    chinese: list[str]
    weights: list[float]

    @classmethod
    def make(cls, seed: int = 11) -> Vocabulary:
        rng = random.Random(seed)
        weights = [1.0 / (rank**ZIPF) for rank in range(1, VOCABULARY + 1)]
        return cls(_english_words(rng, VOCABULARY), _chinese_words(rng, VOCABULARY), weights)

    def text(self, rng: random.Random) -> str:
        """A record: 4-12 words of one language (Chinese without spaces)."""
        chinese = rng.random() < 0.5
        words = rng.choices(
            self.chinese if chinese else self.english, self.weights, k=rng.randint(4, 12)
        )
        return "".join(words) if chinese else " ".join(words)

    def query(self, rng: random.Random) -> str:
        """A question: one or two content words (Chinese ones run together), from the ranks
        that a conversation of a few hundred records holds a handful of times (the commonest
        words match nearly everything, the rarest nothing)."""
        pool = self.chinese if rng.random() < 0.5 else self.english
        words = [pool[rng.choice(QUERY_RANKS)] for _ in range(rng.randint(1, 2))]
        return "".join(words) if pool is self.chinese else " ".join(words)


# -- the baselines ------------------------------------------------------------------------
class Corpus:
    """The ungated path's own lexical index: every revision of the namespace in an in-memory
    SQLite FTS5 table (trigram tokens over ``lexical.normalize``d text), as a retriever
    without gating would keep it, and the namespace's BM25 statistics. (The store keeps no
    lexical index: gated search ranks the visible revisions' own text.)"""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(record_id UNINDEXED, revision UNINDEXED, "
            "search_text, tokenize = 'trigram case_sensitive 1')"
        )
        self.documents = 0
        self.total_length = 0

    def add(self, key: tuple[str, int], text: str) -> None:
        normalized = normalize(text)
        self.db.execute("INSERT INTO docs VALUES (?, ?, ?)", (*key, normalized))
        self.documents += 1
        self.total_length += len(normalized)

    def match(self, terms: list[str]) -> list[tuple[tuple[str, int], str]]:
        """Revisions containing one of ``terms``: a quoted FTS5 phrase finds exactly the rows
        holding a term of three or more characters; shorter (CJK) terms by ``instr``."""
        unique = list(dict.fromkeys(terms))
        conditions: list[str] = []
        params: list[Any] = []
        long_terms = [term for term in unique if len(term) >= 3]
        if long_terms:
            conditions.append("docs MATCH ?")
            params.append(" OR ".join('"' + term.replace('"', '""') + '"' for term in long_terms))
        for term in unique:
            if len(term) < 3:
                conditions.append("instr(search_text, ?) > 0")
                params.append(term)
        rows = self.db.execute(
            f"SELECT record_id, revision, search_text FROM docs WHERE {' OR '.join(conditions)}",
            params,
        )
        return [((str(r[0]), int(r[1])), str(r[2])) for r in rows]

    def stats(self) -> CorpusStats:
        return CorpusStats(self.documents, self.total_length / max(self.documents, 1))


def ungated_search(
    mem: Memory, corpus: Corpus, query: str, k: int
) -> list[tuple[tuple[str, int], float, str]]:
    """Top k of every revision of the namespace, through the ungated index and the same
    BM25 (namespace-wide statistics): the same query with gating disabled."""
    terms = query_terms(query)
    if not terms or not k:
        return []
    rows = corpus.match(terms)
    found = [(key, len(text), term_frequencies(terms, text)) for key, text in rows]
    document_frequencies = dict.fromkeys(terms, 0)
    for _, _, frequencies in found:
        for term in frequencies:
            document_frequencies[term] += 1
    stats = corpus.stats()
    hits = [
        (key, bm25(frequencies, length, document_frequencies, stats), describe(terms, frequencies))
        for key, length, frequencies in found
        if frequencies
    ]
    hits.sort(key=lambda hit: (-hit[1], hit[0]))
    return hits[:k]


def search_then_filter(
    mem: Memory, corpus: Corpus, query: str, anchor: str, k: int
) -> list[tuple[str, int]]:
    """The ungated top k, keeping only what is visible at the anchor."""
    hits = ungated_search(mem, corpus, query, k)
    visible = {(r.id, r.revision) for r in mem.visible(anchor, namespace=NAMESPACE)}
    return [key for key, _, _ in hits if key in visible]


# -- growing and measuring ----------------------------------------------------------------
@dataclass
class Store:
    mem: Memory
    backend: str
    where: str
    corpus: Corpus = field(default_factory=Corpus)
    anchors: list[str] = field(default_factory=list)
    records: int = 0
    events: int = 0
    build_s: float = 0.0


def ingest(
    store: Store, conv: Conversation, vocabulary: Vocabulary, rng: random.Random, keys: bool
) -> None:
    """One conversation: its events in one call, its records in one transaction."""
    mem = store.mem
    mem.add_events(conv.events, namespace=NAMESPACE)
    with mem._write(NAMESPACE):  # one commit per conversation: each add_record a savepoint
        for record in conv.records:
            text = vocabulary.text(rng)
            mem.add_record(
                str(record["id"]),
                sources=record["sources"],  # type: ignore[arg-type]
                content=text,
                kind=str(record.get("kind", "fact")),
                key=record.get("key") if keys else None,  # type: ignore[arg-type]
                namespace=NAMESPACE,
            )
            store.corpus.add((str(record["id"]), 1), text)
    store.records += len(conv.records)
    store.events += len(conv.events)
    store.anchors.append(conv.main_line[200])


def timed(call: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call(*args, **kwargs)
    return time.perf_counter() - started, result


def measure(
    store: Store, vocabulary: Vocabulary, queries: int, k: int, seed: int
) -> dict[str, Any]:
    """Every path on the same (query, anchor) pairs, interleaved: one round runs all three."""
    rng = random.Random(seed)
    sample = rng.sample(store.anchors, min(ANCHORS, len(store.anchors)))
    asked = [(vocabulary.query(rng), rng.choice(sample)) for _ in range(queries)]
    mem, corpus = store.mem, store.corpus
    for query, anchor in asked[: max(3, queries // 20)]:  # warm caches on every path
        mem.search(query, anchor, k=k, namespace=NAMESPACE)
        search_then_filter(mem, corpus, query, anchor, k)
    seconds: dict[str, list[float]] = {"gated": [], "ungated": [], "filter": []}
    gated_results = filter_results = short = matches = 0
    for query, anchor in asked:
        spent, hits = timed(mem.search, query, anchor, k=k, namespace=NAMESPACE)
        seconds["gated"].append(spent)
        gated_results += len(hits)
        spent, ungated = timed(ungated_search, mem, corpus, query, k)
        seconds["ungated"].append(spent)
        spent, kept = timed(search_then_filter, mem, corpus, query, anchor, k)
        seconds["filter"].append(spent)
        filter_results += len(kept)
        short += len(kept) < len(hits)  # gated found more visible matches than it kept
        matches += len(ungated)
    row: dict[str, Any] = {
        "backend": store.backend,
        "records": store.records,
        "events": store.events,
        "build_s": store.build_s,
        "queries": queries,
        "k": k,
        "load_average": os.getloadavg()[0],
    }
    for path, values in seconds.items():
        row[f"{path}_median_ms"] = statistics.median(values) * 1000
        row[f"{path}_p95_ms"] = percentile(values, 0.95) * 1000
    row["ratio_gated_ungated"] = row["gated_median_ms"] / row["ungated_median_ms"]
    row["gated_results_per_query"] = gated_results / queries
    row["filter_results_per_query"] = filter_results / queries
    row["filter_short_share"] = short / queries
    row["ungated_results_per_query"] = matches / queries
    return row


def grow(store: Store, sizes: list[int], args: Any) -> Iterator[dict[str, Any]]:
    vocabulary = Vocabulary.make()
    rng = random.Random(5)
    stream = conversations(sizes[-1] + 10_000, seed=7)
    for size in sizes:
        started = time.perf_counter()
        while store.records < size:
            ingest(store, next(stream), vocabulary, rng, args.keys)
            gc.freeze()  # a large, long-lived heap: keep the cyclic collector off it
        store.build_s = time.perf_counter() - started
        yield measure(store, vocabulary, args.queries, args.k, seed=size)


HEADER = (
    f"{'backend':<10} {'records':>9} {'build s':>8} "
    f"{'gated ms':>9} {'p95':>7} {'ungated ms':>10} {'p95':>7} {'ratio':>6} "
    f"{'filter ms':>9} {'p95':>7} {'results':>7} {'filtered':>8} {'short':>6} {'load':>5}"
)


def print_row(row: dict[str, Any]) -> None:
    print(
        f"{row['backend']:<10} {row['records']:>9,} {row['build_s']:>8.1f} "
        f"{row['gated_median_ms']:>9.2f} {row['gated_p95_ms']:>7.2f} "
        f"{row['ungated_median_ms']:>10.2f} {row['ungated_p95_ms']:>7.2f} "
        f"{row['ratio_gated_ungated']:>6.3f} "
        f"{row['filter_median_ms']:>9.2f} {row['filter_p95_ms']:>7.2f} "
        f"{row['gated_results_per_query']:>7.1f} {row['filter_results_per_query']:>8.1f} "
        f"{row['filter_short_share']:>6.0%} {row['load_average']:>5.1f}",
        flush=True,
    )


@contextlib.contextmanager
def memory_store() -> Iterator[Grown]:
    with Memory() as mem:
        yield Grown(mem, "in-memory store", ":memory:")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default=os.environ.get("BRANCHMEM_BENCH_SEARCH_SIZES", "10000,100000,1000000"),
        help="records, ascending (default: $BRANCHMEM_BENCH_SEARCH_SIZES or 10k,100k,1M)",
    )
    parser.add_argument("--backends", default="memory,sqlite")
    parser.add_argument("--queries", type=int, default=100, help="queries per size and path")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument(
        "--keys", action="store_true",
        help="give facts chatlike.py's keys (40 of them): a newer fact then supersedes the "
        "older ones of its key, and few facts stay visible; by default facts have no key, "
        "like extracted memories that are searched rather than looked up",
    )  # fmt: skip
    parser.add_argument(
        "--pg-dsn", default=os.environ.get("BRANCHMEM_TEST_PG_DSN", ""),
        help="a PostgreSQL server whose user may create databases, for --backends postgresql",
    )  # fmt: skip
    parser.add_argument("--dir", type=Path, default=None, help="where the SQLite file goes")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "search.json"))
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    results: dict[str, Any] = {
        "sizes": sizes,
        "queries": args.queries,
        "k": args.k,
        "keys": args.keys,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "backends": {},
    }
    print(HEADER)
    for backend in backends:
        if backend == "memory":
            opened: Any = memory_store()
        elif backend == "sqlite":
            opened = sqlite_store(args.dir, keep=False)
        elif backend == "postgresql":
            if not args.pg_dsn:
                print("postgresql: skipped, no server given (--pg-dsn or BRANCHMEM_TEST_PG_DSN)")
                continue
            opened = postgres_store(args.pg_dsn)
        else:
            raise SystemExit(f"unknown backend {backend!r}")
        with opened as grown:
            mem, where = grown.mem, grown.where
            store = Store(mem, backend, where)
            rows = []
            for row in grow(store, sizes, args):
                print_row(row)
                rows.append(row)
            results["backends"][backend] = {"where": where, "rows": rows}
    print(
        "\nratio = gated / ungated median; results = gated hits per query; filtered = hits left"
        f" after search then filter (k = {args.k}); short = queries where search then filter"
        " returned fewer visible results than gated search found"
    )
    for backend, found in results["backends"].items():
        last = found["rows"][-1]
        print(
            f"{backend}: gated / ungated median at {last['records']:,} records: "
            f"{last['ratio_gated_ungated']:.3f} (goal <= {GOAL}); search then filter kept "
            f"{last['filter_results_per_query']:.1f} of k = {args.k} per query"
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
