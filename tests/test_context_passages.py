"""A query-relevant record too long for the room left is cut to what matches the query.

Long records (chat turns of hundreds of tokens, with code) were skipped whole, so the turn
that states the answer was missing from the context a search would have found it in.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from branchmem.model import Citation, Record
from branchmem.search.context import MIN_CUT, Context, _pieces, assemble_context
from branchmem.search.lexical import normalize, query_terms
from branchmem.search.tokens import count_tokens
from test_retrieval_context import LONG_TEXT, TEXT, LongTextsCostMore, NewlinesCost, record

FILLER = "We went over lunch plans and weekend hikes in detail. "  # 15 tokens, no query term
ANSWER = "The API latency is now 120ms after the cache change. "  # 15 tokens
TURN = record("turn", FILLER * 20 + ANSWER + FILLER * 20)
TEA = record("tea", "likes green tea")


def build(records: list[Record], query: str | None, budget: int, **options: Any) -> Context:
    return assemble_context(
        anchor=None, path_events=[], records=records, query=query, budget=budget, **options
    )


def memory_lines(text: str) -> list[str]:
    return text.split("\n\n")[0].split("\n")[1:] if text.startswith("Memory:") else []


def test_a_long_relevant_record_is_cut_to_the_passage_that_answers() -> None:
    # share 20: the heading 2, so 18 are left, what "- … <answer> …" costs; a filler more is not
    made = build([TURN, TEA], "API latency", 40)
    assert made.text == (
        "Memory:\n- … The API latency is now 120ms after the cache change. …\n- likes green tea"
    )
    assert made.items == (("turn", 1), ("tea", 1))
    assert made.tokens == count_tokens(made.text) <= 40


def test_a_cut_never_crowds_out_a_relevant_record_that_fits_whole() -> None:
    short = record("short", "API latency target is 100ms")  # "- …": 9 tokens
    ranking = ["turn", "short"]  # the long turn ranks first
    # 18 tokens of room: the turn's passage alone would fill it; the short record comes first
    alone = build([TURN, short], "API latency", 20, ranking=ranking, record_share=1.0)
    assert alone.items == (("short", 1),)
    # room for both: the passage is taken after, and rendered in ranked order
    both = build([TURN, short], "API latency", 40, ranking=ranking)
    assert both.text == "Memory:\n- … " + ANSWER + "…\n- API latency target is 100ms"
    assert both.items == (("turn", 1), ("short", 1))


def test_without_a_query_a_record_that_does_not_fit_is_skipped_never_cut() -> None:
    for ranking in (None, ["turn", "tea"]):
        made = build([TURN, TEA], None, 40, ranking=ranking)
        assert made.items == (("tea", 1),)
        assert "120ms" not in made.text and "…" not in made.text


def test_only_query_relevant_records_are_cut() -> None:
    unmatched = build([TURN, TEA], "green tea", 40)
    assert unmatched.items == (("tea", 1),)  # the turn does not match: skipped as before
    unranked = build([TURN, TEA], "API latency", 40, ranking=["tea"])
    assert unranked.items == (("tea", 1),)  # the ranking leaves it out: not relevant
    no_term = build([TURN, TEA], "green tea", 40, ranking=["turn", "tea"])
    assert no_term.items == (("tea", 1),)  # ranked, but no passage matches a term


def test_no_passage_is_cut_down_below_the_minimum() -> None:
    short = record("turn", FILLER * 10 + "API is 9ms. " + FILLER * 10)
    assert count_tokens("- … API is 9ms. …") < MIN_CUT
    # 18 tokens of room: the sentence fits, a filler more does not
    assert build([short], "API", 20, record_share=1.0).items == ()
    # 7 tokens of room: not even tried
    assert build([TURN], "API latency", 18).items == ()


def test_chinese_is_cut_at_the_full_stop() -> None:
    content = "我们聊了很多事情。" * 5 + "用户下个月搬去杭州。" + "天气一直很好。" * 5
    made = build([record("z", content)], "用户搬去哪里", 32)
    assert made.text == "Memory:\n- … 用户下个月搬去杭州。 …"
    assert made.items == (("z", 1),)


def test_records_split_into_sentences_and_lines_and_code_lines_whole() -> None:
    content = "Run this. It works!\n```py\nx = a. b  # odd. spacing\n```\n我搬家了。你呢？好\n  \n"
    assert [content[start:end] for start, end in _pieces(content)] == [
        "Run this.",
        " It works!",
        "```py",
        "x = a. b  # odd. spacing",
        "```",
        "我搬家了。",
        "你呢？",
        "好",
    ]


def test_ties_go_to_the_earliest_piece() -> None:
    # either sentence alone fits the 10 tokens left, and costs as much as the other
    content = "I moved to Hangzhou with Ann. " + FILLER * 3 + "I moved to Hangzhou with Bob."
    made = build([record("m", content)], "Hangzhou", 24)
    assert made.text == "Memory:\n- I moved to Hangzhou with Ann. …"
    assert build([record("m", content)], "Hangzhou", 24) == made


def test_the_passage_grows_by_the_neighbour_that_matches_else_the_earlier() -> None:
    tie = record("m", "We had tea. I moved to Hangzhou. We had soy.")  # 14 tokens whole
    assert build([tie], "Hangzhou", 28).text == "Memory:\n- We had tea. I moved to Hangzhou. …"
    flat = record("m", "We had tea. I moved to Hangzhou. Got a flat.")  # 15 tokens whole
    made = build([flat], "Hangzhou flat", 30)
    assert made.text == "Memory:\n- … I moved to Hangzhou. Got a flat."


def test_a_rare_term_outweighs_a_common_one() -> None:
    main = record(
        "main",
        "The cache was cold again this morning. " + FILLER + "Latency went up during the night.",
    )
    others = [record("c1", "cache hits rose"), record("c2", "cache misses fell")]
    # 15 tokens of share: the heading and one sentence of main; "cache" is in every record
    made = build([main, *others], "cache latency", 100, ranking=["main"], record_share=0.15)
    assert memory_lines(made.text)[0] == "- … Latency went up during the night."
    assert made.items[0] == ("main", 1)


def test_a_cut_record_is_delivered_and_cited() -> None:
    def cite(record_id: str, revision: int) -> Citation:
        return Citation(0, record_id, revision, ("u1",), ("u1",), ("chat",))

    # 35 tokens of room: the answer and a filler (33) would fit, but not with " [1]" and the
    # source line (6 more), so the answer alone is taken
    made = build([TURN], "API latency", 39, record_share=1.0, cite=cite)
    assert made.items == (("turn", 1),)
    assert [c.record_id for c in made.citations] == ["turn"]
    assert made.text == "Memory:\n- … " + ANSWER + "… [1]\n\nSources:\n[1] turn <- u1 (chat)"
    assert made.tokens == count_tokens(made.text) <= 39


@st.composite
def long_records(draw: st.DrawFn) -> tuple[list[Record], str, int, float]:
    records = [record(f"r{i}", draw(LONG_TEXT)) for i in range(draw(st.integers(1, 6)))]
    return records, draw(TEXT), draw(st.integers(0, 200)), draw(st.floats(0.0, 1.0))


@given(long_records(), st.booleans())
@settings(max_examples=150, deadline=None)
def test_cut_lines_hold_the_budget_and_a_matching_stretch_of_their_record(
    case: tuple[list[Record], str, int, float], cited: bool
) -> None:
    records, query, budget, share = case
    cite = (lambda i, r: Citation(0, i, r, (), ("m1",), ())) if cited else None
    contents = {(r.id, r.revision): " ".join(r.content.split()) for r in records}
    terms = query_terms(query)
    for counter in (None, NewlinesCost(), LongTextsCostMore()):
        extra = {} if counter is None else {"counter": counter}
        made = assemble_context(
            anchor="a", path_events=[], records=records, query=query, budget=budget,
            record_share=share, cite=cite, **extra,  # type: ignore[arg-type]
        )  # fmt: skip
        measure = count_tokens if counter is None else counter.count
        assert made.tokens == measure(made.text) <= budget
        lines = memory_lines(made.text)
        assert len(lines) == len(made.items)
        for line, item in zip(lines, made.items, strict=True):
            text = line[2:].rsplit(" [", 1)[0] if cited else line[2:]
            passage = text.removeprefix("… ").removesuffix(" …")
            if passage == contents[item]:
                continue  # whole
            assert passage in contents[item]
            assert any(term in normalize(passage) for term in terms)
            assert count_tokens(line) >= MIN_CUT or counter is not None


def test_a_relevant_record_longer_than_its_slot_is_cut_even_when_it_fits_whole() -> None:
    from branchmem.search.context import PASSAGE_SHARE

    # budget 2,000: the records' share is 1,000, a relevant record's slot 1,000 // 16 = 62
    others = [record(f"r{i}", f"API latency note {i}: " + FILLER * 10) for i in range(20)]
    made = build([TURN, *others], "API latency", 2000, ranking=["turn"] + [r.id for r in others])
    lines = memory_lines(made.text)
    slot = 1000 // PASSAGE_SHARE
    # the 620-token turn would fit whole, yet is cut to its answer and what fits around it
    assert lines[0].startswith("- … ") and ANSWER.strip() in lines[0] and lines[0].endswith("…")
    assert all(count_tokens(line) <= slot for line in lines)
    # so more relevant records get in than whole ones would (each note is 160 tokens whole)
    assert len(made.items) > 1000 // 160
    assert made.tokens <= 2000
    # a slot below the minimum cut does not cap: a small budget keeps the old rule
    small = build([TURN, TEA], "API latency", 40)
    assert memory_lines(small.text)[0] == "- … " + ANSWER + "…"
