"""Context assembly: branch messages plus current records, deterministic, never over budget."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from branchmem.errors import InvalidInput
from branchmem.model import Event, Record
from branchmem.search.context import (
    CHINESE_FORMAT,
    Context,
    assemble_context,
    prioritize,
)
from branchmem.search.tokens import count_tokens


def event(event_id: str, content: str, role: str = "user") -> Event:
    return Event(event_id, None, "t", role=role, content=content)


def record(
    record_id: str,
    content: str,
    *,
    key: str | None = None,
    scope: str | None = None,
    kind: str = "fact",
    revision: int = 1,
) -> Record:
    return Record(record_id, revision, kind, content, ("u1",), key=key, scope=scope)


PATH = [
    event("u1", "Hi, I need help planning a move."),
    event("a1", "Where to?", "assistant"),
    event("u2", "I'm moving to Hangzhou next month."),
    event("a2", "Hangzhou is lovely in spring.", "assistant"),
]
RECORDS = [
    record("city-1", "moving to Chengdu", key="city"),
    record("tea", "likes green tea"),
    record("city-2", "moving to Hangzhou", key="city", revision=2),
]


def test_the_default_format() -> None:
    context = assemble_context(anchor="a2", path_events=PATH, records=RECORDS, budget=200)
    assert context.text == (
        "Memory:\n"
        "- moving to Hangzhou\n"
        "- likes green tea\n"
        "\n"
        "Conversation:\n"
        "User: Hi, I need help planning a move.\n"
        "Assistant: Where to?\n"
        "User: I'm moving to Hangzhou next month.\n"
        "Assistant: Hangzhou is lovely in spring."
    )
    assert context == Context(
        text=context.text,
        items=(("city-2", 2), ("tea", 1)),
        anchor="a2",
        tokens=count_tokens(context.text),
        events=("u1", "a1", "u2", "a2"),
    )


def test_only_the_current_value_of_a_key_is_used() -> None:
    context = assemble_context(anchor="a2", path_events=[], records=RECORDS, budget=200)
    assert "Chengdu" not in context.text
    assert ("city-1", 1) not in context.items


def test_keys_compete_within_a_scope_only() -> None:
    records = [
        record("p1", "async feedback", key="meetings", scope="design reviews"),
        record("p2", "a voice call", key="meetings", scope="incident calls"),
    ]
    context = assemble_context(anchor="x", path_events=[], records=records, budget=100)
    assert {item[0] for item in context.items} == {"p1", "p2"}


def test_retractions_are_left_out_by_default() -> None:
    records = [*RECORDS, record("r", "retracted city-1", kind="retraction")]
    default = assemble_context(anchor="a2", path_events=[], records=records, budget=200)
    assert "retracted" not in default.text
    kept = assemble_context(anchor="a2", path_events=[], records=records, budget=200, skip_kinds=())
    assert ("r", 1) in kept.items


def test_a_query_puts_the_relevant_record_first() -> None:
    records = [record(f"n{i}", f"note number {i}") for i in range(5)]
    records.insert(0, record("move", "用户下个月搬去杭州"))
    context = assemble_context(
        anchor="a2", path_events=[], records=records, query="杭州", budget=200
    )
    assert context.items[0] == ("move", 1)
    without = assemble_context(anchor="a2", path_events=[], records=records, budget=200)
    assert without.items[0] == ("n4", 1)  # no query: most recent first


def test_a_given_ranking_replaces_the_lexical_one() -> None:
    order = prioritize(RECORDS, query="Hangzhou", ranking=["tea"])
    assert [r.id for r in order] == ["tea", "city-2"]


def test_keyed_records_come_before_unkeyed_ones_without_a_query() -> None:
    assert [r.id for r in prioritize(RECORDS)] == ["city-2", "tea"]


def test_a_tight_budget_keeps_the_most_recent_messages_in_chronological_order() -> None:
    kept = "Conversation:\nUser: I'm moving to Hangzhou next month.\nAssistant: Hangzhou is lovely"
    budget = count_tokens(kept + " in spring.")
    context = assemble_context(anchor="a2", path_events=PATH, records=[], budget=budget)
    assert context.events == ("u2", "a2")
    assert context.text.index("moving to Hangzhou") < context.text.index("lovely")


def test_a_message_too_long_for_what_is_left_is_cut_and_older_ones_dropped() -> None:
    path = [event("u1", "old message"), event("u2", "我下个月搬去杭州，" * 30)]
    context = assemble_context(anchor="u2", path_events=path, records=[], budget=20)
    assert context.events == ("u2",)
    assert context.text.endswith("…")
    assert context.tokens <= 20


def test_records_get_their_share_then_whatever_messages_leave() -> None:
    records = [record(f"r{i}", f"fact {i} about the user") for i in range(30)]
    path = [event("u1", "short")]
    context = assemble_context(
        anchor="u1", path_events=path, records=records, budget=60, record_share=0.25
    )
    assert context.events == ("u1",)
    assert count_tokens(context.text) > 60 * 0.25  # records filled the unused message room


def test_zero_budget_gives_the_empty_context() -> None:
    context = assemble_context(anchor="a2", path_events=PATH, records=RECORDS, budget=0)
    assert (context.text, context.items, context.events, context.tokens) == ("", (), (), 0)


def test_chinese_format() -> None:
    context = assemble_context(
        anchor="u1",
        path_events=[event("u1", "我要搬去杭州")],
        records=[record("c", "用户搬去杭州")],
        budget=100,
        style=CHINESE_FORMAT,
    )
    assert context.text == "记忆：\n- 用户搬去杭州\n\n对话：\n用户: 我要搬去杭州"


@pytest.mark.parametrize(
    ("options", "field"),
    [({"budget": -1}, "budget"), ({"budget": 10, "record_share": 1.5}, "record_share")],
)
def test_bad_options_are_rejected(options: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput, match=field):
        assemble_context(anchor="a", path_events=[], records=[], **options)  # type: ignore[arg-type]


# -- properties ----------------------------------------------------------------------------

WORDS = st.sampled_from(
    [
        "杭州",
        "搬去",
        "成都",
        "用户",
        "moving",
        "to",
        "Hangzhou",
        "the",
        "，",
        "!",
        "antidisestablish",
    ]
)
TEXT = st.lists(WORDS, max_size=12).map(lambda ws: " ".join(ws))
MESSAGE_TEXT = st.one_of(TEXT, st.text(max_size=40))
# long records of sentences, lines and fenced code, which a query-relevant record is cut from
SENTENCE = st.tuples(TEXT, st.sampled_from([". ", "。", "！", "? ", "\n", "\n```\n", " "]))
LONG_TEXT = st.lists(SENTENCE, max_size=16).map(lambda parts: "".join(a + b for a, b in parts))
RECORD_TEXT = st.one_of(MESSAGE_TEXT, LONG_TEXT)


@st.composite
def inputs(draw: st.DrawFn) -> tuple[list[Event], list[Record], str | None, int, float]:
    events = [
        event(f"e{i}", draw(MESSAGE_TEXT), draw(st.sampled_from(["user", "assistant", "tool"])))
        for i in range(draw(st.integers(0, 8)))
    ]
    records = [
        record(
            f"r{index}",  # visible() gives one revision per record
            draw(RECORD_TEXT),
            key=draw(st.sampled_from([None, "city", "food"])),
            scope=draw(st.sampled_from([None, "work"])),
            kind=draw(st.sampled_from(["fact", "summary", "retraction"])),
            revision=draw(st.integers(1, 3)),
        )
        for index in range(draw(st.integers(0, 10)))
    ]
    query = draw(st.one_of(st.none(), TEXT))
    return events, records, query, draw(st.integers(0, 120)), draw(st.floats(0.0, 1.0))


class NewlinesCost:
    """A counter that does not add up over pieces: every newline costs two tokens."""

    def count(self, text: str) -> int:
        return count_tokens(text) + 2 * text.count("\n")


class LongTextsCostMore:
    """A counter that grows faster than its pieces: the whole is dearer than the parts."""

    def count(self, text: str) -> int:
        return count_tokens(text) + len(text) // 30


@given(inputs())
@settings(max_examples=200, deadline=None)
def test_the_budget_is_never_exceeded(
    case: tuple[list[Event], list[Record], str | None, int, float],
) -> None:
    events, records, query, budget, share = case
    for counter in (None, NewlinesCost(), LongTextsCostMore()):
        extra = {} if counter is None else {"counter": counter}
        context = assemble_context(
            anchor="a",
            path_events=events,
            records=records,
            query=query,
            budget=budget,
            record_share=share,
            **extra,  # type: ignore[arg-type]
        )
        measure = counter.count if counter is not None else count_tokens
        assert context.tokens == measure(context.text) <= budget


@given(inputs())
@settings(max_examples=150, deadline=None)
def test_assembly_is_deterministic_and_uses_only_what_it_was_given(
    case: tuple[list[Event], list[Record], str | None, int, float],
) -> None:
    events, records, query, budget, share = case
    options = {"query": query, "budget": budget, "record_share": share}
    context = assemble_context(anchor="a", path_events=events, records=records, **options)  # type: ignore[arg-type]
    again = assemble_context(anchor="a", path_events=list(events), records=list(records), **options)  # type: ignore[arg-type]
    assert context == again
    given_pairs = {(r.id, r.revision) for r in records if r.kind != "retraction"}
    assert set(context.items) <= given_pairs
    assert len(set(context.items)) == len(context.items)
    keyed = [r for r in records if (r.id, r.revision) in set(context.items) and r.key]
    assert len({(r.scope, r.key) for r in keyed}) == len(keyed)  # one value per key
    spoken = [e.id for e in events if e.content.strip()]
    if context.events:  # one unbroken stretch of the branch that ends at the anchor
        assert list(context.events) == spoken[len(spoken) - len(context.events) :]
