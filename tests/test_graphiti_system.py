"""Graphiti (on embedded Kuzu) as a branchbench system, on one edited conversation and on
the frozen test split's first scenarios.

The user edits "moving to Chengdu" into "moving to Hangzhou", then goes back to the Chengdu
branch. Graphiti invalidates the older edge when the newer one arrives, whatever branch
either came from, and its search still returns the invalidated edge: at the Chengdu anchor
the memory section holds Hangzhou as current and Chengdu as invalidated. (Graphiti looks
for the edges a new fact may contradict by search: the two lines share words, so the
deterministic embedder finds one from the other, as the test split's lines do.)
"""

from __future__ import annotations

import importlib.util
import json
from importlib.metadata import version
from pathlib import Path

import pytest

if importlib.util.find_spec("graphiti_core") is None or importlib.util.find_spec("kuzu") is None:
    pytest.skip(
        "graphiti-core[kuzu] is not installed (extra: branchmem[graphiti])",
        allow_module_level=True,
    )

from branchbench.cli import main
from branchbench.context import Context
from branchbench.scenario import Fact, Message
from branchbench.systems import registry
from branchbench.systems.base import Setup

MESSAGES = (
    Message("s0", None, "system", "You are a helpful assistant."),
    Message(
        "u1",
        "s0",
        "user",
        "I am moving to Chengdu next month.",
        (Fact("city", "moving to Chengdu"),),
    ),
    Message("a1", "u1", "assistant", "Great, good luck with the move."),
    Message(
        "u1b",
        "s0",
        "user",
        "I am moving to Hangzhou next month.",
        (Fact("city", "moving to Hangzhou"),),
    ),
    Message("a1b", "u1b", "assistant", "Great, good luck with the move."),
    Message(
        "u3", "a1b", "user", "I have a cat called Mochi.", (Fact("pet", "a cat called Mochi"),)
    ),
    Message("u4", "u3", "user", "Forget the cat.", (Fact("pet", op="retract"),)),
    Message("u2", "a1", "user", "Which neighbourhood should I look at?"),
)
QUESTION = "Which city am I moving to?"
BUDGET = 400


def run(workdir: Path, anchor: str = "u2", question: str = QUESTION) -> Context:
    system = registry()["graphiti"](Setup(language="en", workdir=workdir))
    try:
        for message in MESSAGES:
            system.ingest(message, message.facts)
        return system.context(anchor, question, BUDGET)
    finally:
        system.close()


def test_graphiti_is_registered_and_its_gate_names_the_version() -> None:
    system = registry()["graphiti"]
    assert version("graphiti-core") in system.integration.gate  # type: ignore[attr-defined]


def test_the_later_branch_invalidates_the_kept_one_and_both_are_shown(tmp_path: Path) -> None:
    context = run(tmp_path)
    lines = {line.split(" (")[0]: line for line in context.memory}
    assert "invalid from" not in lines["moving to Hangzhou"]  # the sibling's value, current
    assert "invalid from" in lines["moving to Chengdu"]  # the anchor's own value, invalidated
    assert all("Hangzhou" not in turn.content for turn in context.transcript)  # the path
    assert context.tokens() <= BUDGET


def test_a_retraction_invalidates_the_edge_and_search_still_returns_it(tmp_path: Path) -> None:
    memory = run(tmp_path, anchor="u4", question="my pet").memory_text()
    assert "(retracted) pet" in memory
    assert "a cat called Mochi (valid from 2026-01-01T00:00:06, invalid from" in memory


def test_two_runs_give_the_same_context(tmp_path: Path) -> None:
    assert run(tmp_path / "1").render() == run(tmp_path / "2").render()


def test_a_run_on_the_test_split_records_graphitis_version(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["run", "--split", "test", "--limit", "3", "--systems", "graphiti", "branchmem",
            "--pipeline", "one_message", "--extractor", "oracle", "--quiet",
            "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    meta = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert meta["packages"]["graphiti-core"] == version("graphiti-core")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert set(summary["systems"]) == {"graphiti", "branchmem"}
    # the user's graph holds every branch: what branchmem hides, Graphiti shows
    assert summary["systems"]["graphiti"]["memory_leak_rate"] > 0
    assert summary["systems"]["branchmem"]["memory_leak_rate"] == 0
