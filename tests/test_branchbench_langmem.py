"""LangMem's store manager as its docs deploy it, its LLM scripted from the run's facts:
what LangMem shows the model it patches or removes, and the user's namespace holds every
branch."""

from __future__ import annotations

from pathlib import Path

import pytest

from branchbench.pipeline import READ_POLICIES, Pipeline
from branchbench.scenario import Fact, Message
from branchbench.systems import NAMED_ONLY, default_systems, registry
from branchbench.systems.base import Setup

pytest.importorskip("langmem")


def msg(mid: str, parent: str | None, content: str, *facts: Fact) -> Message:
    return Message(mid, parent, "user", content, tuple(facts))


def fed(messages: list[Message], tmp_path: Path, mode: str = "one_message") -> object:
    system = registry()["langmem"](Setup("en", tmp_path))
    pipeline = Pipeline(mode, READ_POLICIES["path"], "message", lambda m: m.facts, "en")
    for message in messages:
        system.ingest(message, pipeline.derive(message))  # type: ignore[attr-defined]
    return system


def test_a_topic_is_patched_and_a_retraction_removes_it(tmp_path: Path) -> None:
    system = fed(
        [
            msg("u1", None, "I live in Chengdu", Fact("city", "lives in Chengdu")),
            msg("u2", "u1", "I moved, I live in Hangzhou", Fact("city", "lives in Hangzhou")),
            msg("u3", "u2", "I have a cat", Fact("pet", "a cat")),
            msg("u4", "u3", "forget the cat", Fact("pet", "", op="retract")),
        ],
        tmp_path,
    )
    items = system.store.search(("memories", "branchbench"), limit=100)  # type: ignore[attr-defined]
    assert [i.value["content"]["content"] for i in items] == ["lives in Hangzhou"]
    memory = system.context("u4", "where do I live", 1500).memory_text()  # type: ignore[attr-defined]
    assert "Hangzhou" in memory and "Chengdu" not in memory and "cat" not in memory


def test_the_users_namespace_holds_an_abandoned_branch(tmp_path: Path) -> None:
    fork = [
        msg("u1", None, "hello"),
        msg("u2", "u1", "I have a cat called Mochi", Fact("pet", "a cat called Mochi")),
        msg("u2b", "u1", "I am moving to Hangzhou", Fact("city", "moving to Hangzhou")),
    ]
    system = fed(fork, tmp_path)
    context = system.context("u2b", "what pet do I have", 1500)  # type: ignore[attr-defined]
    assert "Mochi" in context.memory_text()  # a memory of the user, whatever its branch
    assert "Mochi" not in context.transcript_text()  # the thread follows the fork


def test_the_row_names_its_version_and_runs_only_when_named() -> None:
    from importlib.metadata import version

    system = registry()["langmem"]
    assert f"langmem {version('langmem')}" in system.integration.gate  # type: ignore[attr-defined]
    assert "langmem" in NAMED_ONLY and "langmem" not in default_systems()
