"""Cited contexts and ``blame``: each line of a delivery traced to its messages and
branch."""

from __future__ import annotations

import pytest

from branchmem import Memory, NotFoundError

from .story import chengdu


# -- citations and blame -------------------------------------------------------------------
def test_a_cited_context_names_each_lines_record_messages_and_conversation(mem: Memory) -> None:
    chengdu(mem)
    mem.add_record("f-food", sources=["f-chengdu", "a2"], content="likes Chengdu food")
    cited = mem.context("a2", cite=True, budget=10_000)
    assert [c.marker for c in cited.citations] == list(range(1, len(cited.items) + 1))
    assert [(c.record_id, c.revision) for c in cited.citations] == list(cited.items)
    food = next(c for c in cited.citations if c.record_id == "f-food")
    assert food.sources == ("f-chengdu", "a2")
    assert set(food.messages) == {"u2", "a2"} and food.trees == ("u1",)
    lines = cited.text.split("\n")
    assert f"- likes Chengdu food [{food.marker}]" in lines
    assert lines[lines.index("Sources:") + food.marker] == (
        f"[{food.marker}] f-food <- " + ", ".join(food.messages) + " (u1)"
    )
    assert mem.context("a2", budget=10_000).citations == ()


def test_a_cited_context_keeps_within_its_budget(mem: Memory) -> None:
    chengdu(mem)
    for budget in (5, 12, 20, 40):
        cited = mem.context("a2", cite=True, budget=budget)
        assert cited.tokens <= budget
        assert len(cited.citations) == len(cited.items)
        assert all(f"[{c.marker}] {c.record_id}" in cited.text for c in cited.citations)


def test_blame_traces_a_delivery_to_its_messages_and_branch(mem: Memory) -> None:
    chengdu(mem)
    given = mem.context("a2", cite=True, session="s1", budget=10_000)
    assert given.delivery == mem.deliveries("s1")[-1].seq
    blame = mem.blame("s1", given.delivery)
    assert (blame.session, blame.anchor, blame.tree) == ("s1", "a2", "u1")
    assert blame.path == ("u1", "a1", "u2", "a2")
    assert [(b.record_id, b.revision) for b in blame.lines] == list(given.items)
    assert [b.line for b in blame.lines] == [c.marker for c in given.citations]
    chosen = next(b for b in blame.lines if b.record_id == "f-chengdu")
    (message,) = chosen.messages
    assert (message.id, message.role, message.on_path) == ("u2", "user", True)
    assert message.text == "I'm moving to Chengdu next month."
    assert mem.blame("s1", given.delivery, chosen.line).lines == (chosen,)


def test_blame_shows_an_erased_source_by_id_only(mem: Memory) -> None:
    chengdu(mem)
    given = mem.context("a2", session="s1", budget=10_000)
    mem.erase("u2")
    blamed = {b.record_id: b for b in mem.blame("s1", given.delivery or 0).lines}
    chosen = blamed["f-chengdu"]
    assert (chosen.status, chosen.text) == ("erased", None)
    assert [(m.id, m.status, m.text) for m in chosen.messages] == [("u2", "erased", None)]
    assert "Chengdu" not in repr(chosen)


def test_blame_names_what_it_cannot_find(mem: Memory) -> None:
    chengdu(mem)
    given = mem.context("a2", session="s1", budget=10_000)
    assert given.delivery is not None
    with pytest.raises(NotFoundError, match="'nobody'"):
        mem.blame("nobody", 1)
    with pytest.raises(NotFoundError, match="no delivery 999999"):
        mem.blame("s1", 999_999)
    with pytest.raises(NotFoundError, match="memory line 99"):
        mem.blame("s1", given.delivery, 99)
