"""The matching and ranking rules can be reproduced in SQL exactly (the recipe docs/retrieval.md
gives a backend), shown with the standard library's SQLite: FTS5 trigram for terms of three or
more characters, a CJK gram table (or instr) for shorter ones, aggregates for BM25's statistics.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from branchmem.search.lexical import (
    MIN_WORD,
    CorpusStats,
    LexicalHit,
    bm25,
    describe,
    index_grams,
    normalize,
    query_terms,
    rank,
)

ZH = st.text(alphabet=st.sampled_from(list("杭州搬去成都用户喜欢")), max_size=12)
EN = st.text(alphabet=st.sampled_from(list("abcdehABÉé ")), max_size=24)
DOCS = st.dictionaries(
    st.text(alphabet="xyz0123", min_size=1, max_size=4), st.one_of(ZH, EN), max_size=12
)
QUERIES = st.one_of(ZH, EN, st.builds(lambda a, b: a + " " + b, ZH, EN))


def _has_trigram() -> bool:
    with closing(sqlite3.connect(":memory:")) as db:
        try:
            db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram case_sensitive 1')")
        except sqlite3.OperationalError:
            return False
    return True


pytestmark = pytest.mark.skipif(not _has_trigram(), reason="SQLite without FTS5 trigram")


@contextmanager
def indexed(docs: dict[str, str]) -> Iterator[sqlite3.Connection]:
    """The schema a backend would keep: normalised text, a trigram index, a CJK gram table."""
    db = sqlite3.connect(":memory:")
    db.executescript(
        """
        CREATE TABLE doc (id TEXT PRIMARY KEY, search_text TEXT NOT NULL);
        CREATE VIRTUAL TABLE doc_fts USING fts5(
            id UNINDEXED, search_text, tokenize = 'trigram case_sensitive 1');
        CREATE TABLE doc_gram (gram TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (gram, id));
        """
    )
    for doc_id, text in docs.items():
        db.execute("INSERT INTO doc VALUES (?, ?)", (doc_id, normalize(text)))
        db.execute("INSERT INTO doc_fts VALUES (?, ?)", (doc_id, normalize(text)))
        db.executemany(
            "INSERT INTO doc_gram VALUES (?, ?)", [(g, doc_id) for g in index_grams(text)]
        )
    try:
        yield db
    finally:
        db.close()


def matching_ids(db: sqlite3.Connection, term: str) -> set[str]:
    """Index lookup: trigram phrase for long terms, gram table for short (CJK) ones."""
    if len(term) >= MIN_WORD:
        phrase = '"' + term.replace('"', '""') + '"'
        rows = db.execute("SELECT id FROM doc_fts WHERE doc_fts MATCH ?", (phrase,))
    else:
        rows = db.execute("SELECT id FROM doc_gram WHERE gram = ?", (term,))
    return {row[0] for row in rows}


def scanned_ids(db: sqlite3.Connection, term: str) -> set[str]:
    """The same predicate without an index: instr over the candidates."""
    rows = db.execute("SELECT id FROM doc WHERE instr(search_text, ?) > 0", (term,))
    return {row[0] for row in rows}


def sql_rank(db: sqlite3.Connection, query: str, k: int) -> list[LexicalHit]:
    """Candidates and integers from SQL, the float from ``lexical.bm25``."""
    terms = query_terms(query)
    count, total = db.execute("SELECT count(*), sum(length(search_text)) FROM doc").fetchone()
    stats = CorpusStats(count, total / count if count else 0.0)
    frequencies: dict[str, dict[str, int]] = {}
    lengths: dict[str, int] = {}
    for term in terms:
        for doc_id in matching_ids(db, term):
            tf, length = db.execute(
                "SELECT (length(search_text) - length(replace(search_text, ?1, ''))) "
                "/ length(?1), length(search_text) FROM doc WHERE id = ?2",
                (term, doc_id),
            ).fetchone()
            frequencies.setdefault(doc_id, {})[term] = tf
            lengths[doc_id] = length
    document_frequencies = {t: sum(t in f for f in frequencies.values()) for t in terms}
    hits = [
        LexicalHit(
            doc_id, bm25(f, lengths[doc_id], document_frequencies, stats), describe(terms, f)
        )
        for doc_id, f in frequencies.items()
    ]
    hits.sort(key=lambda hit: (-hit.score, hit.doc_id))
    return hits[:k]


def test_trigram_index_finds_a_long_term_inside_a_word() -> None:
    with indexed({"a": "Moving to HANGZHOU", "b": "staying"}) as db:
        assert matching_ids(db, "hangzhou") == {"a"}
        assert matching_ids(db, "ing") == {"a", "b"}


def test_gram_table_finds_a_two_character_chinese_word() -> None:
    with indexed({"a": "用户搬去杭州", "b": "用户搬去成都"}) as db:
        assert matching_ids(db, "杭州") == {"a"}
        assert matching_ids(db, "搬去") == {"a", "b"}


@given(DOCS, QUERIES)
@settings(max_examples=120, deadline=None)
def test_sql_lookups_match_exactly_the_documents_python_matches(
    docs: dict[str, str], query: str
) -> None:
    with indexed(docs) as db:
        for term in query_terms(query):
            expected = {d for d, text in docs.items() if term in normalize(text)}
            assert matching_ids(db, term) == expected, term
            assert scanned_ids(db, term) == expected, term


@given(DOCS, QUERIES, st.integers(min_value=0, max_value=12))
@settings(max_examples=120, deadline=None)
def test_sql_ranking_equals_the_reference_bit_for_bit(
    docs: dict[str, str], query: str, k: int
) -> None:
    with indexed(docs) as db:
        assert sql_rank(db, query, k) == rank(query, docs, k)
