"""The corpus-built splits: typed counterfactuals, arrival orders, the pin, and a run of
every core system over both splits on the real corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from branchbench import corpusgen
from branchbench.corpora import ENV_ROOT, CorpusUnavailable
from branchbench.corpusgen import (
    ORDERS,
    CorpusMismatch,
    Fork,
    Value,
    beam_original,
    beam_value,
    candidates,
    canonical_json,
    generate,
    lay_out,
    load_corpus_split,
    locomo_value,
    occurs,
    split_digest,
    substitute,
)
from branchbench.errors import ScenarioError
from branchbench.pipeline import PIPELINES
from branchbench.runner import RunConfig, context_rows, run
from branchbench.scenario import (
    CORPUS_SPLITS,
    Message,
    Probe,
    load_split,
    scenario_from_dict,
    scenario_to_dict,
)
from branchbench.systems import CORE_SYSTEMS
from branchbench.validate import validate_split
from corpora_env import require_corpora


def test_values_are_replaced_whole_not_inside_longer_numbers() -> None:
    text = "The budget is $75, not $750 or 75%; $75 again."
    assert occurs(text, "$75")
    assert substitute(text, "$75", "$80") == "The budget is $80, not $750 or 75%; $80 again."
    assert not occurs("I paid $750", "$75")


def test_counterfactuals_keep_the_type_and_the_format() -> None:
    assert "$6,300" in candidates(Value("$6,200", "number"))
    assert all(c.endswith(" years") for c in candidates(Value("4 years", "number")))
    assert "6-8 months" in candidates(Value("5-7 months", "number"))
    assert "April 9, 2024" in candidates(Value("April 5, 2024", "date"))
    assert "April 5, 2024" not in candidates(Value("April 5, 2024", "date"))
    assert "6:30 PM" in candidates(Value("4:30 PM", "time"))
    assert "Galway" not in candidates(Value("Galway", "place"))
    assert all(" " in c for c in candidates(Value("Ed Sheeran", "name")))


def test_locomo_answers_are_typed_only_when_verbatim_in_the_evidence() -> None:
    turn = "I'm gonna stay in Galway, it's great for its arts. I've known them for 4 years."
    assert locomo_value("Which city in Ireland will Tim stay in?", "Galway", turn) == Value(
        "Galway", "place"
    )
    assert locomo_value("How long has she known them?", "4 years", turn) == Value(
        "4 years", "number"
    )
    assert locomo_value("Where did Tim go?", "Dublin", turn) is None  # not in the turn
    assert locomo_value("What did Tim praise?", "arts", turn) is None  # no typed value


def test_beam_update_and_original_values() -> None:
    updated = "I've adjusted the snack budget to $75, can you suggest drinks?"
    original = "I've increased my snack budget to $65, so I can order cupcakes for 12 kids."
    value = beam_value(("LLM response should state: $75",), "$75", updated)
    assert value == Value("$75", "number")
    assert beam_original(value, original, updated) == Value("$65", "number")
    # two candidates of the same unit: ambiguous, no stale probe
    assert beam_original(value, "from $65 to $70", updated) is None


def _fork() -> Fork:
    prefix = (Message("p1", None, "user", "hello"), Message("p2", "p1", "assistant", "hi"))
    kept = (
        Message("k1", "p2", "user", "I moved to Galway."),
        Message("k2", "k1", "assistant", "Nice."),
    )
    abandoned = (
        Message("k1x", "p2", "user", "I moved to Porto."),
        Message("k2x", "k1x", "assistant", "Nice."),
    )
    probe = Probe("leak", "leak", "Where did I move?", ("Galway",), ("Porto",))
    return Fork("f", "t", "edit_user", prefix, kept, abandoned, (probe,))


def test_arrival_orders() -> None:
    ids = {o: [m.id for m in lay_out(_fork(), o, "locomo").messages][2:] for o in ORDERS}
    assert ids["abandoned_first"] == ["k1x", "k2x", "k1", "k2"]
    assert ids["abandoned_last"] == ["k1", "k2", "k1x", "k2x"]
    assert ids["interleaved"] == ["k1", "k1x", "k2x", "k2"]
    s = lay_out(_fork(), "interleaved", "locomo")
    assert s.anchor == "k2" and s.arrival == "interleaved"
    assert validate_split([s], "locomo") == []


def test_arrival_field_round_trips_and_is_checked() -> None:
    s = lay_out(_fork(), "abandoned_last", "beam")
    raw = scenario_to_dict(s)
    assert raw["arrival"] == "abandoned_last"
    assert scenario_from_dict(raw).arrival == "abandoned_last"
    with pytest.raises(ScenarioError, match="unknown arrival 'sideways'"):
        scenario_from_dict({**raw, "arrival": "sideways"})
    del raw["arrival"]
    assert scenario_from_dict(raw).arrival == ""


def test_absent_corpora_raise_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_ROOT, str(tmp_path / "nowhere"))
    for split in CORPUS_SPLITS:
        with pytest.raises(CorpusUnavailable, match=f"split {split} needs the corpora"):
            load_split(split)
    assert corpusgen.main(["check", "locomo"]) == 3


@pytest.fixture(scope="module")
def root() -> Path:
    return require_corpora()


def test_a_readme_naming_another_commit_is_refused(root: Path, tmp_path: Path) -> None:
    (tmp_path / "locomo").symlink_to(root / "locomo")
    readme = (root / "README.md").read_text(encoding="utf-8")
    commit = corpusgen.PINNED["locomo"].upstream[1]
    (tmp_path / "README.md").write_text(readme.replace(commit, "0" * 40), encoding="utf-8")
    with pytest.raises(CorpusMismatch, match=r"split locomo: .*README\.md names locomo"):
        load_corpus_split("locomo", tmp_path)


def test_a_changed_generation_is_refused(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpusgen, "CONTINUATION", corpusgen.CONTINUATION + 1)
    with pytest.raises(CorpusMismatch, match="split beam: generated 24 scenarios with SHA-256"):
        load_corpus_split("beam", root)


@pytest.mark.parametrize("split", CORPUS_SPLITS)
def test_every_core_system_runs_on_the_corpus_split(
    split: str, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_ROOT, str(root))
    scenarios = load_split(split)  # pinned digest checked here
    assert 18 <= len(scenarios) <= 30
    assert validate_split(scenarios, split) == []
    assert split_digest(scenarios) == corpusgen.PINNED[split].sha256
    assert canonical_json(generate(split, root)) == canonical_json(scenarios)  # deterministic
    forks: dict[str, set[str]] = {}
    for s in scenarios:
        forks.setdefault(s.id.rsplit("-abandoned", 1)[0].removesuffix("-interleaved"), set()).add(
            s.arrival
        )
    assert all(orders == set(ORDERS) for orders in forks.values())

    # the arrival read policy, where a step reads the last arrivals and every memory
    config = RunConfig(
        split=split, systems=list(CORE_SYSTEMS), extractors=["oracle"], read_policies=["arrival"]
    )
    out = run(config, tmp_path / "out")
    rows = [json.loads(line) for line in (out / "contexts.jsonl").read_text().splitlines()]
    probes = sum(len(s.probes) for s in scenarios)
    assert len(rows) == probes * len(CORE_SYSTEMS) * len(PIPELINES)
    # provenance, whatever the step read: the counterfactual never reaches branchmem's memory
    gated = [r for r in rows if r["system"] == "branchmem" and r["type"] == "leak"]
    assert gated and not any(k in r["memory"] for r in gated for k in r["forbidden"])
    assert {r["arrival"] for r in rows} == set(ORDERS)
    assert all(r["split"] == split for r in rows)
    # the benchmark's own bounds hold on real text: the current branch alone never leaks
    raw = [r for r in rows if r["system"] == "raw_current_branch" and r["type"] == "leak"]
    assert raw and not any(k in r["context"] for r in raw for k in r["forbidden"])


def test_context_rows_carry_the_arrival_order() -> None:
    s = lay_out(_fork(), "abandoned_last", "locomo")
    extracted = {m.id: m.facts for m in s.messages}
    rows = context_rows(s, "raw_current_branch", CORE_SYSTEMS["raw_current_branch"], extracted, 500)
    assert [r["arrival"] for r in rows] == ["abandoned_last"]


def test_validate_checks_a_corpus_split(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from branchbench.cli import main

    monkeypatch.setenv(ENV_ROOT, str(root))
    assert main(["validate", "--split", "locomo", "--split", "beam"]) == 0
    assert "locomo, beam: every check passed" in capsys.readouterr().out
