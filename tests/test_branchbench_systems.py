"""Each system fails (or holds) the way its real-world counterpart does."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from branchbench import systems as registry_module
from branchbench.context import Context
from branchbench.scenario import Fact, Message
from branchbench.systems import CORE_SYSTEMS, registry
from branchbench.systems.base import Setup, System

# Peanuts on branch A, shrimp on branch B (arriving later), then back to A.
PREFIX = [
    Message("u1", None, "user", "我住在杭州，帮我订餐厅", (Fact("home", "住在杭州"),)),
    Message("a1", "u1", "assistant", "好的，有过敏吗？"),
]
BRANCH_A = [
    Message("u2", "a1", "user", "我对花生过敏", (Fact("allergy", "对花生过敏"),)),
    Message("a2", "u2", "assistant", "记下了"),
]
BRANCH_B = [
    Message("u2b", "a1", "user", "我对虾过敏", (Fact("allergy", "对虾过敏"),)),
    Message("a2b", "u2b", "assistant", "记下了"),
]
BACK_TO_A = [
    Message("u3", "a2", "user", "预算人均200", (Fact("budget", "人均200"),)),
    Message("u4", "u3", "user", "改成人均300", (Fact("budget", "人均300"),)),
]
ALL = PREFIX + BRANCH_A + BRANCH_B + BACK_TO_A
Build = Callable[[str, list[Message]], System]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Build]:
    opened: list[System] = []

    def build(name: str, messages: list[Message]) -> System:
        system = CORE_SYSTEMS[name](Setup("zh", tmp_path))
        opened.append(system)
        for m in messages:
            system.ingest(m, m.facts)
        return system

    yield build
    for system in opened:
        system.close()


def ctx(system: System, anchor: str, question: str = "我对什么过敏？") -> Context:
    return system.context(anchor, question, 1500)


def test_full_history_hands_over_the_abandoned_branch(make: Build) -> None:
    assert "虾" in ctx(make("full_history", ALL), "u4").render()


def test_raw_current_branch_sees_only_the_anchor_path(make: Build) -> None:
    text = ctx(make("raw_current_branch", ALL), "u4").render()
    assert "花生" in text and "虾" not in text


def test_raw_filter_cannot_reach_facts_extracted_at_add_time(make: Build) -> None:
    c = ctx(make("extract_retrieve_rawfilter", ALL), "u4")
    assert "虾" in c.memory_text()  # last write by arrival order wins
    assert all("虾" not in t.content for t in c.transcript)


def test_rolling_summary_keeps_the_last_arrival_of_each_topic(make: Build) -> None:
    c = ctx(make("rolling_summary", ALL), "u4")
    assert "虾" in c.memory_text() and "花生" not in c.memory_text()  # shrimp arrived last
    assert "300" in c.memory_text() and "200" not in c.memory_text()


def test_rolling_summary_notes_are_history_not_assertions(make: Build) -> None:
    c = ctx(make("rolling_summary_notes", ALL), "u4")
    assert "花生" in c.memory_text() and "200" in c.memory_text()  # "(earlier: ...)" notes
    assert "花生" not in c.asserted_text() and "200" not in c.asserted_text()
    assert "300" in c.asserted_text()


def test_label_based_shows_the_anchor_label_and_loses_the_shared_prefix(make: Build) -> None:
    system = make("label_based", PREFIX + BRANCH_A + BRANCH_B)
    c = ctx(system, "a2b", "我住在哪？")
    assert "杭州" not in c.memory_text()  # written under the first branch's label
    assert any("杭州" in t.content for t in c.transcript)
    assert "虾" in c.memory_text()
    # the anchor decides, not the last arrival: back on branch A the shrimp is not shown,
    # and the peanut record was rewritten under B's label, so nothing is
    at_a = ctx(system, "a2")
    assert "虾" not in at_a.memory_text() and "花生" not in at_a.memory_text()


def test_branchmem_shows_only_records_sourced_on_the_path(make: Build) -> None:
    system = make("branchmem", ALL)
    at_a = ctx(system, "u4").memory_text()
    at_b = ctx(system, "a2b").memory_text()
    assert "花生" in at_a and "虾" not in at_a
    assert "虾" in at_b and "花生" not in at_b
    assert "杭州" in at_a and "杭州" in at_b  # the shared prefix belongs to both


def test_branchmem_hides_a_value_superseded_later_on_the_path(make: Build) -> None:
    memory = ctx(make("branchmem", ALL), "u4", "人均预算？").memory_text()
    assert "300" in memory and "200" not in memory


def test_branchmem_answers_from_what_has_arrived_so_far(make: Build) -> None:
    system = make("branchmem", PREFIX + BRANCH_A)
    assert "花生" in ctx(system, "a2").memory_text()
    for m in BRANCH_B:
        system.ingest(m, m.facts)
    assert "虾" not in ctx(system, "a2").memory_text()


@pytest.mark.parametrize("name", sorted(CORE_SYSTEMS))
def test_every_system_respects_the_budget(make: Build, name: str) -> None:
    system = make(name, ALL)
    for budget in (0, 10, 25, 60):
        assert system.context("u4", "我对什么过敏？", budget).tokens() <= budget


def _optional_module(tmp_path: Path, body: str, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"bb_optional_{abs(hash(body)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(body, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def test_optional_system_registers_when_its_library_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = "from branchbench.systems.raw import FullHistory\nSYSTEMS = {'extra': FullHistory}\n"
    module = _optional_module(tmp_path, body, monkeypatch)
    monkeypatch.setattr(registry_module, "OPTIONAL_MODULES", {module: "json"})
    assert "extra" in registry()
    monkeypatch.setattr(registry_module, "OPTIONAL_MODULES", {module: "no_such_library_xyz"})
    assert "extra" not in registry()


def test_optional_system_that_fails_to_import_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _optional_module(tmp_path, "raise ImportError('broken adapter')\n", monkeypatch)
    monkeypatch.setattr(registry_module, "OPTIONAL_MODULES", {module: "json"})
    assert list(registry()) == list(CORE_SYSTEMS)


def test_a_run_without_names_leaves_out_the_named_only_systems() -> None:
    from branchbench.systems import NAMED_ONLY, default_systems

    assert "graphiti" in NAMED_ONLY
    assert default_systems() == [name for name in registry() if name not in NAMED_ONLY]
    assert "branchmem" in default_systems() and "graphiti" not in default_systems()
