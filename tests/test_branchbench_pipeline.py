"""Pipelines: what the run's extractor step reads (the read policy, the same for every
system) and what each system's output cites decide what leaks.

The scenarios are built here, small enough to read: a shared prefix, a message on a branch
that is abandoned, the kept branch arriving after it. Each test names the mechanism that
carries (or stops) the abandoned value.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from branchbench.pipeline import (
    PIPELINES,
    PROFILE_EVERY,
    READ_POLICIES,
    SUMMARY_EVERY,
    Pipeline,
    Recalled,
    integration_of,
)
from branchbench.scenario import Fact, Message
from branchbench.systems import CORE_SYSTEMS, registry
from branchbench.systems.base import Setup
from branchbench.systems.derived import BranchLabels


def msg(mid: str, parent: str | None, content: str, *facts: Fact) -> Message:
    return Message(mid, parent, "user", content, tuple(facts))


# u1 -> a1 -> (u2: the abandoned branch states a pet) | (u2b: the kept branch, an edit)
FORK = (
    msg("u1", None, "hello"),
    msg("a1", "u1", "hi, how can I help"),
    msg("u2", "a1", "I have a cat called Mochi", Fact("pet", "a cat called Mochi")),
    msg("u2b", "a1", "I am moving to Hangzhou", Fact("city", "moving to Hangzhou")),
    msg("a2b", "u2b", "Hangzhou is lovely"),
)


def feed(
    name: str, mode: str, messages: Sequence[Message], tmp_path: Path, policy: str = "path"
) -> object:
    tmp_path.mkdir(parents=True, exist_ok=True)
    system = registry()[name](Setup("en", tmp_path))
    attribution = integration_of(system).attribution
    pipeline = Pipeline(mode, READ_POLICIES[policy], attribution, lambda m: m.facts, "en")
    for message in messages:
        system.ingest(message, pipeline.derive(message))  # type: ignore[attr-defined]
    return system


def memory_at(system: object, anchor: str, question: str = "what do you know") -> str:
    return system.context(anchor, question, 1500).memory_text()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "policy", "leaks"),
    [
        ("branchmem", "path", False),  # the sibling is never read
        ("label_lineage", "path", False),
        ("branchmem_unattributed", "path", False),
        ("branchmem", "arrival", False),  # read, but cited: the output is hidden
        ("label_lineage", "arrival", True),  # the write point is on the path, the content not
        ("branchmem_unattributed", "arrival", True),  # cited to the message alone
        ("extract_retrieve_rawfilter", "path", True),  # shows every memory it holds
        ("langgraph_store", "path", True),  # the user's namespace holds every branch
    ],
)
def test_an_arrival_window_carries_the_sibling_onto_the_kept_branch(
    name: str, policy: str, leaks: bool, tmp_path: Path
) -> None:
    if name not in registry():
        pytest.skip(f"{name} is not installed")
    system = feed(name, "window", FORK, tmp_path, policy)
    assert ("Mochi" in memory_at(system, "a2b")) is leaks
    # one message at a time, nothing is carried: a label or the gate is enough
    if name not in ("extract_retrieve_rawfilter", "langgraph_store"):
        assert "Mochi" not in memory_at(feed(name, "one_message", FORK, tmp_path / "one"), "a2b")


def test_transitive_attribution_cites_every_message_the_window_read(tmp_path: Path) -> None:
    system = feed("branchmem", "window", FORK, tmp_path)
    record = next(r for r in system.memory.visible("a2b") if r.key == "city")  # type: ignore[attr-defined]
    # the window at a2b was a1, u2b, a2b on the path: the restated city cites all three
    assert set(record.sources) == {"a1", "u2b", "a2b"}


def test_citing_a_sibling_hides_the_output_on_both_branches(tmp_path: Path) -> None:
    system = feed("branchmem", "window", FORK, tmp_path, "arrival")
    # what u2b's window carried cites u2 and u2b, which lie on no one path: hidden
    # everywhere, the kept fact with it (attribution costs retain, it does not leak)
    assert "Mochi" not in memory_at(system, "a2b")
    assert "Hangzhou" not in memory_at(system, "a2b")
    assert "Hangzhou" not in memory_at(system, "u2")


def consulted(policy: str, attribution: str = "message") -> dict[str, tuple[str, ...]]:
    """What a consulting step derived at each message of FORK: the values it restated."""
    pipeline = Pipeline("consult", READ_POLICIES[policy], attribution, lambda m: m.facts, "en")  # type: ignore[arg-type]
    return {m.id: tuple(f.value for f in pipeline.derive(m)) for m in FORK}


def test_an_ungated_consult_shows_the_sibling_a_path_consult_does_not() -> None:
    assert "a cat called Mochi" in consulted("ungated")["a2b"]  # restated on the kept branch
    assert "a cat called Mochi" in consulted("arrival")["a2b"]
    assert "a cat called Mochi" not in consulted("path")["a2b"]


@pytest.mark.parametrize(
    ("name", "leaks"),
    [
        ("extract_retrieve", True),
        ("label_lineage", True),  # written at a2b, on the path: the labels let it through
        ("branchmem", False),  # cites the pet's message, on no path with a2b: hidden
        ("branchmem_unattributed", True),
        ("mem0", True),
        ("mem0_branchmem", False),
    ],
)
def test_memories_shown_to_the_update_step_are_restated(
    name: str, leaks: bool, tmp_path: Path
) -> None:
    if name not in registry():
        pytest.skip("mem0 is not installed")
    system = feed(name, "consult", FORK, tmp_path, "ungated")
    assert ("Mochi" in memory_at(system, "a2b", "pet cat")) is leaks


@pytest.mark.parametrize("mode", PIPELINES)
@pytest.mark.parametrize("policy", list(READ_POLICIES))
def test_every_system_is_given_the_same_inputs(mode: str, policy: str) -> None:
    """What a step derives depends on the run, never on the system: two attributions give
    the same memories (ids, keys, values, kinds), only their sources differ."""
    messages = [*long_fork(), *FORK[2:]]
    made = []
    for attribution in ("message", "transitive"):
        pipeline = Pipeline(mode, READ_POLICIES[policy], attribution, lambda m: m.facts, "en")  # type: ignore[arg-type]
        made.append(
            [(f.id, f.key, f.value, f.kind, f.op) for m in messages for f in pipeline.derive(m)]
        )
    assert made[0] == made[1] and made[0]


def long_fork() -> list[Message]:
    """A shared prefix that states a budget; the kept branch starts, an abandoned sibling
    that states a pet arrives inside the kept branch's summary window, then the kept
    branch goes on long enough for summaries to be written on it."""
    out = [msg("u1", None, "budget is 3000", Fact("budget", "budget 3000"))]
    out += [msg("p2", "u1", "prefix turn 2"), msg("p3", "p2", "prefix turn 3")]
    out.append(msg("k1", "p3", "kept turn 1"))
    out.append(msg("x1", "p3", "I own a cat called Mochi", Fact("pet", "a cat called Mochi")))
    out.append(msg("x2", "x1", "Mochi says hi"))
    for i in range(2, 3 * SUMMARY_EVERY):
        out.append(msg(f"k{i}", f"k{i - 1}", f"kept turn {i}"))
    return out


@pytest.mark.parametrize(
    ("name", "policy", "leaks"),
    [
        ("rolling_summary", "path", True),  # its own summary, by arrival
        ("label_lineage", "arrival", True),
        ("branchmem_unattributed", "arrival", True),
        ("branchmem", "arrival", False),
        ("label_lineage", "path", False),
        ("branchmem", "path", False),
    ],
)
def test_a_summary_whose_window_spans_the_fork(
    name: str, policy: str, leaks: bool, tmp_path: Path
) -> None:
    messages = long_fork()
    system = feed(name, "summary", messages, tmp_path, policy)
    memory = memory_at(system, messages[-1].id, "summary")
    assert ("Mochi" in memory) is leaks
    assert "budget 3000" in memory  # the prefix survives through the summaries


def test_a_profile_built_from_a_replaced_fact_goes_stale_only_under_provenance(
    tmp_path: Path,
) -> None:
    messages = [msg("u1", None, "budget is 3000", Fact("budget", "budget 3000"))]
    for i in range(2, PROFILE_EVERY + 1):
        messages.append(msg(f"u{i}", f"u{i - 1}", f"turn {i}"))
    # the profile was written at u{PROFILE_EVERY}; the budget changes after it
    changed = PROFILE_EVERY + 1
    messages.append(msg(f"u{changed}", f"u{changed - 1}", "budget is 4500",
                        Fact("budget", "budget 4500")))  # fmt: skip
    anchor = messages[-1].id
    lineage = memory_at(feed("label_lineage", "profile", messages, tmp_path / "l"), anchor)
    gated = memory_at(feed("branchmem", "profile", messages, tmp_path / "b"), anchor)
    assert "budget 3000" in lineage  # the profile still asserts the old budget
    assert "budget 3000" not in gated  # it cites the replaced fact: stale, hidden
    assert "budget 4500" in gated and "budget 4500" in lineage


def test_lineage_labels_cut_at_the_fork_point() -> None:
    labels = BranchLabels()
    chain = [msg("r", None, ""), msg("a", "r", ""), msg("b", "a", ""), msg("c", "b", "")]
    for m in chain:
        labels.assign(m)
    labels.assign(msg("b2", "a", ""))  # a fork below a, inside the labelled run r..c
    lineage = labels.lineage("b2")
    first = labels.label_of["r"]
    assert labels.label_of["b2"] != first
    # r and a are on b2's path, b and c (same label, later positions) are not
    assert lineage[first] == labels.position["a"] < labels.position["b"]


def test_every_system_declares_its_attribution_and_gate() -> None:
    for name, factory in registry().items():
        integration = integration_of(factory)
        assert integration.attribution in ("message", "transitive"), name
        assert integration.gate, name
    assert integration_of(CORE_SYSTEMS["branchmem"]).attribution == "transitive"


def test_unknown_pipeline_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown pipeline 'magic'"):
        Pipeline("magic", READ_POLICIES["path"], "message", lambda m: (), "en")


def test_recalled_ranks_by_similarity() -> None:
    from branchbench.pipeline import rank_recalled

    items = [Recalled("1", "moving to Chengdu"), Recalled("2", "a cat called Mochi")]
    assert [r.id for r in rank_recalled(items, "cat Mochi", 1)] == ["2"]


@pytest.mark.parametrize("name", ["mem0", "mem0_branchmem"])
def test_mem0_stamps_come_from_a_fixed_clock(name: str, tmp_path: Path) -> None:
    if name not in registry():
        pytest.skip("mem0 is not installed")
    first = memory_at(feed(name, "one_message", FORK, tmp_path / "1"), "a2b", "city")
    again = memory_at(feed(name, "one_message", FORK, tmp_path / "2"), "a2b", "city")
    assert first == again and "created 2026-01-01T00:00:0" in first


@pytest.mark.parametrize("name", ["label_lineage", "branchmem"])
def test_a_fork_inside_an_already_summarised_region_hides_that_summary(
    name: str, tmp_path: Path
) -> None:
    # u1..u8 on one branch: summaries at the 4th and 8th arrival; the one at u8 restates
    # u5's cat and u7's dog. Then the user edits u6: x6 forks inside the summarised u5..u8.
    messages = [msg("u1", None, "hello")]
    for i in range(2, 2 * SUMMARY_EVERY + 1):
        facts = {5: (Fact("pet", "a cat called Mochi"),), 7: (Fact("dog", "a dog called Rex"),)}
        messages.append(msg(f"u{i}", f"u{i - 1}", f"turn {i}", *facts.get(i, ())))
    messages.append(msg("x6", "u5", "an edit of turn 6"))
    system = feed(name, "summary", messages, tmp_path)
    memory = memory_at(system, "x6", "pet dog")
    # both designs hide the summary written below the fork point (lineage labels cut at
    # the fork position, provenance at its sources): they do not differ here
    assert "Rex" not in memory
    assert "Mochi" in memory  # u5 lies on x6's path: its own fact is kept


def test_the_langgraph_store_overwrites_a_topic_and_deletes_a_retracted_one(
    tmp_path: Path,
) -> None:
    if "langgraph_store" not in registry():
        pytest.skip("langgraph is not installed")
    messages = [
        msg("u1", None, "I live in Chengdu", Fact("city", "lives in Chengdu")),
        msg("u2", "u1", "moved to Hangzhou", Fact("city", "lives in Hangzhou")),
        msg("u3", "u2", "I have a cat", Fact("pet", "a cat")),
        msg("u4", "u3", "forget the cat", Fact("pet", "", op="retract")),
    ]
    memory = memory_at(feed("langgraph_store", "one_message", messages, tmp_path), "u4", "city")
    assert "Hangzhou" in memory and "Chengdu" not in memory and "cat" not in memory
