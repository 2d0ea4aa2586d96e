"""Citations and blame beyond the conformance suite: the cited format within any budget,
the messages a citation names against the oracle's effective sources, and the CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings

from branchmem import Citation, Event, InvalidInput, Memory, NotFoundError, Record
from branchmem._engine.blame import shorten, source_messages
from branchmem.cli import main
from branchmem.search.context import CHINESE_FORMAT, assemble_context, citation_line
from branchmem.search.tokens import count_tokens
from branchmem.testing.differential import apply, random_history
from branchmem.testing.oracle import Oracle
from test_retrieval_context import LongTextsCostMore, NewlinesCost, inputs


def cite(record_id: str, revision: int) -> Citation:
    return Citation(0, record_id, revision, ("u1", "r0"), ("u1", "u2"), ("chat",))


@given(inputs())
@settings(max_examples=150, deadline=None)
def test_a_cited_context_never_exceeds_its_budget_and_numbers_its_lines(
    case: tuple[list[Event], list[Record], str | None, int, float],
) -> None:
    events, records, query, budget, share = case
    for counter in (None, NewlinesCost(), LongTextsCostMore()):
        made = assemble_context(
            anchor="a", path_events=events, records=records, query=query, budget=budget,
            record_share=share, cite=cite, **({} if counter is None else {"counter": counter}),
        )  # fmt: skip
        measure = count_tokens if counter is None else counter.count
        assert made.tokens == measure(made.text) <= budget
        assert [c.marker for c in made.citations] == list(range(1, len(made.items) + 1))
        assert [(c.record_id, c.revision) for c in made.citations] == list(made.items)
        if made.items:
            sources = made.text.split("\n\nSources:\n")[1].split("\n")
            assert sources == [citation_line(c) for c in made.citations]
            memory = made.text.split("\n\n")[0].split("\n")[1:]
            assert [line.rsplit(" ", 1)[1] for line in memory] == [
                f"[{c.marker}]" for c in made.citations
            ]
        else:
            assert "Sources" not in made.text and made.citations == ()


def test_the_citation_list_has_its_heading_in_the_context_language() -> None:
    made = assemble_context(
        anchor="u1",
        path_events=[Event("u1", None, "chat", content="我下个月搬去杭州")],
        records=[Record("city", 1, "fact", "搬去杭州", ("u1",))],
        budget=200,
        style=CHINESE_FORMAT,
        cite=cite,
    )
    assert made.text.endswith("来源：\n[1] city <- u1, u2 (chat)")


def test_a_citation_line_without_messages_names_the_record_only() -> None:
    assert citation_line(Citation(3, "legacy", 1, None, (), ())) == "[3] legacy"


def test_blame_shortens_text_to_one_line() -> None:
    assert shorten("a\n b") == "a b"
    long = shorten("word " * 40)
    assert len(long) == 80 and long.endswith("…")


@pytest.mark.parametrize("seed", range(40))
def test_a_citation_names_the_oracles_effective_source_events(seed: int) -> None:
    """The messages of every revision (through cited records, at their pinned revision)
    are the oracle's effective source events, on random histories in any arrival order."""
    rng = random.Random(seed)
    mem, oracle = Memory(), Oracle()
    for op in random_history(rng):
        apply(mem, oracle, op, "default")
    ns = mem._namespace("default")
    with mem._read(ns):
        for record_id, revisions in oracle.records.items():
            stored = mem.store.get_revisions("default", record_id)
            for revision, node in zip(revisions, stored, strict=True):
                want, _, _ = oracle.effective(revision)
                got = source_messages(ns, node)
                assert len(got) == len(set(got)) and set(got) == want, (record_id, revision)


def test_the_cli_cites_a_context_and_blames_its_delivery(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", str(tmp_path / "m.db")]
    with Memory.open(db[1]) as memory:
        memory.add_event("u1", tree="chat", content="I'm moving to Chengdu next month")
        memory.add_record("city", sources=["u1"], content="moving to Chengdu", key="city")
    assert main(["context", "u1", "--cite", "--session", "s1", *db]) == 0
    out, err = capsys.readouterr()
    assert "- moving to Chengdu [1]" in out and "Sources:\n[1] city <- u1 (chat)" in out
    delivery = int(err.rsplit("delivery ", 1)[1])
    assert main(["blame", "s1", str(delivery), "1", "--json", *db]) == 0
    blamed = json.loads(capsys.readouterr().out)
    assert (blamed["tree"], blamed["path"]) == ("chat", ["u1"])
    (line,) = blamed["lines"]
    assert (line["record_id"], line["messages"][0]["text"]) == (
        "city", "I'm moving to Chengdu next month",
    )  # fmt: skip
    assert main(["blame", "s1", str(delivery), "2", *db]) != 0
    assert "no memory line 2" in capsys.readouterr().err


def test_blame_refuses_a_delivery_or_line_that_is_not_a_number() -> None:
    memory = Memory()
    memory.add_event("u1", content="hello")
    given = memory.context("u1", session="s1").delivery
    assert given is not None
    with pytest.raises(InvalidInput, match="delivery"):
        memory.blame("s1", "latest")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="line"):
        memory.blame("s1", given, "1")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match=r"no memory line 1 \(it has 0\)"):
        memory.blame("s1", given, 1)
    with pytest.raises(InvalidInput, match="cite"):
        memory.context("u1", cite="yes")  # type: ignore[arg-type]
