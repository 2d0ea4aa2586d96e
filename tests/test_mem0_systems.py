"""The three Mem0 systems of branchbench on one edited conversation.

The user edits "moving to Chengdu" into "moving to Hangzhou", then switches back to the
Chengdu branch; at that anchor "Hangzhou" is the sibling's fact and must not reach the
context. Mem0 1.x UPDATEs the memory in place and 2.x keeps both; either way plain Mem0's
memory section carries Hangzhou, which is the point of the comparison.
"""

from __future__ import annotations

import importlib.util
from importlib.metadata import version
from pathlib import Path

import pytest

if importlib.util.find_spec("mem0") is None:
    pytest.skip("mem0ai is not installed (extra: branchmem[mem0])", allow_module_level=True)

from branchbench.context import Context
from branchbench.scenario import Fact, Message
from branchbench.systems import registry
from branchbench.systems.base import Setup, System
from branchbench.systems.mem0 import SYSTEMS

MESSAGES = (
    Message("s0", None, "system", "You are a helpful assistant."),
    Message(
        "u1",
        "s0",
        "user",
        "I am moving to Chengdu next month.",
        (Fact(key="city", value="Chengdu"),),
    ),
    Message("a1", "u1", "assistant", "Great, good luck with the move."),
    Message(
        "u1b",
        "s0",
        "user",
        "I am moving to Hangzhou next month.",
        (Fact(key="city", value="Hangzhou"),),
    ),
    Message("a1b", "u1b", "assistant", "Great, good luck with the move."),
    Message("u2", "a1", "user", "Which neighbourhood should I look at?"),
)
QUESTION = "Which city am I moving to?"
BUDGET = 400


def run(name: str, workdir: Path, anchor: str = "u2") -> Context:
    system: System = SYSTEMS[name](Setup(language="en", workdir=workdir))
    try:
        for message in MESSAGES:
            system.ingest(message, message.facts)
        return system.context(anchor, QUESTION, BUDGET)
    finally:
        system.close()


def test_the_mem0_systems_are_registered() -> None:
    assert {"mem0", "mem0_rawfilter", "mem0_branchmem"} <= set(registry())


def test_plain_mem0_puts_the_sibling_fact_in_memory_and_transcript(tmp_path: Path) -> None:
    context = run("mem0", tmp_path)
    assert "Hangzhou" in context.memory_text()
    assert any("Hangzhou" in turn.content for turn in context.transcript)


def test_rawfilter_cleans_the_transcript_but_not_mem0s_memory(tmp_path: Path) -> None:
    context = run("mem0_rawfilter", tmp_path)
    assert "Hangzhou" in context.memory_text()
    assert all("Hangzhou" not in turn.content for turn in context.transcript)


# Mem0 2.x returns each memory's created_at from search, and a prompt shows it; 1.0.x's
# search results carry none, so its lines are the bare text
STAMPED = " (created " if version("mem0ai").split(".")[0] != "1" else ""


def test_wrapped_mem0_gives_only_the_anchor_branch(tmp_path: Path) -> None:
    context = run("mem0_branchmem", tmp_path)
    assert "Hangzhou" not in context.render()
    assert len(context.memory) == 1 and context.memory[0].startswith(f"Chengdu{STAMPED}")
    assert [turn.event_id for turn in context.transcript] == ["s0", "u1", "a1", "u2"]


def test_wrapped_mem0_on_the_edited_branch_keeps_its_fact(tmp_path: Path) -> None:
    context = run("mem0_branchmem", tmp_path, anchor="a1b")
    assert "Chengdu" not in context.render()
    assert len(context.memory) == 1 and context.memory[0].startswith(f"Hangzhou{STAMPED}")


def test_context_stays_within_the_budget(tmp_path: Path) -> None:
    for name in SYSTEMS:
        assert run(name, tmp_path / name).tokens() <= BUDGET
