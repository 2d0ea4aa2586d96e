"""The corpus-built splits: values of a kind, forks with siblings from the corpus, arrival
orders drawn per fork, the pin, and a run of every core system over both splits on the
real corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from branchbench import corpusgen
from branchbench.corpora import ENV_ROOT, CorpusTurn, CorpusUnavailable
from branchbench.corpus_beam import original_value, rubric_value
from branchbench.corpus_forks import (
    ORDERS,
    AnnotatedFact,
    Candidate,
    Conversation,
    Drawn,
    Layout,
    build,
    build_valid,
)
from branchbench.corpus_locomo import answer_value
from branchbench.corpus_values import Value, cloze, occurs, substitute, typed, typed_values
from branchbench.corpusgen import (
    CorpusMismatch,
    canonical_json,
    generate,
    load_corpus_split,
    split_digest,
)
from branchbench.errors import ScenarioError
from branchbench.lexical import sibling_words
from branchbench.pipeline import PIPELINES
from branchbench.runner import RunConfig, context_rows, run
from branchbench.scenario import (
    CORPUS_SPLITS,
    Tree,
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


def test_values_of_one_kind_share_unit_and_shape() -> None:
    assert typed("$6,200") == Value("$6,200", "number:$#")
    assert typed("4 years") == Value("4 years", "number:# years")
    assert typed("April 5, 2024") == Value("April 5, 2024", "date:M #, #")
    assert typed("19 May") == Value("19 May", "date:# M")
    assert typed("12") is None  # a bare two-digit figure is no value
    assert [v.text for v in typed_values("From $65 to $70 in 3 weeks, 12.")] == [
        "$65",
        "$70",
        "3 weeks",
    ]


def test_a_cloze_question_blanks_the_value() -> None:
    question = cloze("Busy week. My first sprint ends on March 29, then a demo.", "March 29")
    assert "___" in question and "March 29" not in question and "sprint ends on" in question


def test_locomo_answers_take_their_kind_from_the_question() -> None:
    assert answer_value("Which city in Ireland will Tim stay in?", "Galway") == Value(
        "Galway", "place"
    )
    assert answer_value("What book did Melanie read?", '"Becoming Nicole"') == Value(
        "Becoming Nicole", "what:book"
    )
    assert answer_value("Who did John go to yoga with?", "Rob") == Value("Rob", "person")
    assert answer_value("How long has she known them?", "4 years") == Value(
        "4 years", "number:# years"
    )
    assert answer_value("Does Deborah like cats?", "Yes") is None
    assert answer_value("What did Tim praise?", "arts") is None  # asks for no kind of thing


def test_beam_update_and_original_values() -> None:
    updated = "I've adjusted the snack budget to $75, can you suggest drinks?"
    original = "I've increased my snack budget to $65, so I can order cupcakes for 12 kids."
    value = rubric_value(("LLM response should state: $75",), "$75", updated)
    assert value == Value("$75", "number:$#")
    assert original_value(value, original, updated) == Value("$65", "number:$#")
    # two candidates of the same unit: ambiguous, no stale probe
    assert original_value(value, "from $65 to $70", updated) is None


CITIES = ("Galway", "Porto", "Lisbon", "Bergen", "Kyoto", "Hobart")


def _conversation() -> Conversation:
    """Twenty-four turns; every fourth states where a friend lives, the cities of the
    other turns' friends and one said only in another conversation are the pool."""
    turns = []
    for i in range(24):
        text = f"Small talk number {i}."
        if i % 4 == 2:
            text = f"My friend {i} lives in {CITIES[i // 4]} now."
        turns.append(CorpusTurn(str(i), "A" if i % 2 == 0 else "B", text, "1", ""))
    facts = tuple(
        AnnotatedFact(i, Value(CITIES[i // 4], "place"), f"Where does friend {i} live?", f"qa {i}")
        for i in range(2, 24, 4)
    )
    pool = tuple(Candidate(Value(c, "place"), f"turn {c}", "c1") for c in CITIES)
    return Conversation(
        id="c1",
        turns=tuple(turns),
        facts=facts,
        shown=lambda t, keep="": t.text,
        role=lambda t: "user" if t.speaker == "A" else "assistant",
        pool=pool,
    )


OTHER = {"place": [Candidate(Value("Tallinn", "place"), "elsewhere", "c2")]}
# enough values said elsewhere for five forks of up to three siblings each, none shared
ELSEWHERE = {
    "place": [
        Candidate(Value(city, "place"), "elsewhere", "c2")
        for city in (
            "Tallinn", "Riga", "Vilnius", "Oslo", "Bergen", "Turku", "Tampere", "Gdansk",
            "Krakow", "Brno", "Graz", "Linz", "Basel", "Lyon", "Porto", "Cadiz",
        )
    ]
}  # fmt: skip


def test_a_fork_per_fact_with_siblings_off_the_kept_path() -> None:
    conv = _conversation()
    facts = conv.facts[:5]
    built = build_valid(
        conv, facts, ELSEWHERE, key="k", split="locomo", title="t",
        layout=Layout(1, 1), seed="s", minimum=5,
    )  # fmt: skip
    assert built is not None
    scenario, drawn = built
    values = [c.value.text for d in drawn for c in d.siblings]
    assert len(values) == len(set(values))  # no value is a sibling at two forks
    # with only the sixth city and one value from elsewhere, two forks at most get one
    assert build_valid(
        conv, facts, OTHER, key="k", split="locomo", title="t",
        layout=Layout(1, 1), seed="s", minimum=5,
    ) is None  # fmt: skip
    assert validate_split([scenario], "locomo") == []
    tree = Tree(scenario.messages)
    path = tree.path(scenario.anchor)
    kept_text = " ".join(m.content for m in scenario.messages if m.id in path)
    assert len(drawn) == 5 and all(1 <= len(d.siblings) <= 3 for d in drawn)
    for d in drawn:
        assert d.fork in path
        assert not any(occurs(kept_text, c.value.text) for c in d.siblings)
        # the kept city is never its own sibling; the sixth city, not on the path, can be
        assert d.fact.value not in [c.value for c in d.siblings]
    leak = [p for p in scenario.probes if p.type == "leak"]
    assert [p.fork for p in leak] == [d.fork for d in drawn]
    assert [p.arrival for p in leak] == [d.order for d in drawn]


def test_arrival_orders_place_each_forks_siblings() -> None:
    conv = _conversation()
    sibling = [Candidate(Value("Tallinn", "place"), "elsewhere", "c2")]
    facts = conv.facts[:3]
    drawn = [Drawn(f, str(f.at), order, sibling) for f, order in zip(facts, ORDERS, strict=True)]
    s = build(conv, drawn, key="k", split="locomo", title="t", layout=Layout(1, 1))
    ids = [m.id for m in s.messages]
    # abandoned_first: the copy of turn 2 and its reply arrive before turn 2
    assert ids.index("2x") < ids.index("3x") < ids.index("2")
    # interleaved: after the kept turn 6, before its reply 7
    assert ids.index("6") < ids.index("6x") < ids.index("7x") < ids.index("7")
    # abandoned_last: after the anchor
    assert ids.index(s.anchor) < ids.index("10x")
    assert validate_split([s], "locomo") == []


def test_probe_fork_and_arrival_round_trip_and_are_checked() -> None:
    conv = _conversation()
    sibling = [Candidate(Value("Tallinn", "place"), "elsewhere", "c2")]
    drawn = [Drawn(conv.facts[0], "2", "interleaved", sibling)]
    s = build(conv, drawn, key="k", split="beam", title="t", layout=Layout(1, 1))
    raw = scenario_to_dict(s)
    assert raw["probes"][0]["fork"] == "2" and raw["probes"][0]["arrival"] == "interleaved"
    back = scenario_from_dict(raw)
    assert back.probes == s.probes
    assert back.probe_unit(back.probes[0]) == "k/2"
    raw["probes"][0]["arrival"] = "sideways"
    with pytest.raises(ScenarioError, match="unknown arrival 'sideways'"):
        scenario_from_dict(raw)


def test_sibling_words_count_words_of_the_value_found_on_the_kept_path() -> None:
    conv = _conversation()
    # the path is turns 1-3: "friend" occurs on it, "7" and "Tallinn" do not
    sibling = [Candidate(Value("Tallinn", "place"), "elsewhere", "c2")]
    drawn = [Drawn(conv.facts[0], "2", "interleaved", sibling)]
    s = build(conv, drawn, key="k", split="beam", title="t", layout=Layout(1, 1))
    figures = sibling_words([s])
    assert figures["values"] == 1 and figures["some_word_on_path"] == 0
    forked = scenario_from_dict(
        {
            **scenario_to_dict(s),
            "probes": [{**scenario_to_dict(s)["probes"][0], "forbidden": ["friend 7"]}],
        }
    )
    figures = sibling_words([forked])
    assert figures["words"] == 2 and figures["words_on_path"] == 1  # "friend", not "7"


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
    monkeypatch.setattr(corpusgen, "SEED", corpusgen.SEED + 1)
    with pytest.raises(CorpusMismatch, match=r"split beam: generated \d+ scenarios with SHA-256"):
        load_corpus_split("beam", root)


@pytest.mark.parametrize("split", CORPUS_SPLITS)
def test_every_core_system_runs_on_the_corpus_split(
    split: str, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_ROOT, str(root))
    scenarios = load_split(split)  # pinned digest checked here
    assert len(scenarios) >= 8
    assert validate_split(scenarios, split) == []
    assert split_digest(scenarios) == corpusgen.PINNED[split].sha256
    assert canonical_json(generate(split, root)) == canonical_json(scenarios)  # deterministic
    for s in scenarios:
        leak = [p for p in s.probes if p.type == "leak"]
        assert len({p.fork for p in leak}) == len(leak) >= corpusgen.MIN_FACTS
        assert all(1 <= len(p.forbidden) <= 3 for p in leak)  # 2-4 branches per fork
        assert all(p.arrival in ORDERS for p in s.probes)
    # drawn per fork, not enumerated: every order occurs, and not in equal thirds by design
    orders = [p.arrival for s in scenarios for p in s.probes if p.type == "leak"]
    assert set(orders) == set(ORDERS)

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
    assert {r["unit"] for r in rows} == {s.probe_unit(p) for s in scenarios for p in s.probes}
    assert all(r["split"] == split for r in rows)
    # the benchmark's own bounds hold on real text: the current branch alone never leaks
    raw = [r for r in rows if r["system"] == "raw_current_branch" and r["type"] == "leak"]
    assert raw and not any(k in r["context"] for r in raw for k in r["forbidden"])


def test_context_rows_carry_the_probes_arrival_order_and_fork() -> None:
    conv = _conversation()
    sibling = [Candidate(Value("Tallinn", "place"), "elsewhere", "c2")]
    drawn = [Drawn(conv.facts[0], "2", "abandoned_last", sibling)]
    s = build(conv, drawn, key="k", split="locomo", title="t", layout=Layout(1, 1))
    extracted = {m.id: m.facts for m in s.messages}
    rows = context_rows(s, "raw_current_branch", CORE_SYSTEMS["raw_current_branch"], extracted, 500)
    assert {r["arrival"] for r in rows} == {"abandoned_last"}
    assert {r["unit"] for r in rows} == {"k/2"}


def test_validate_checks_a_corpus_split(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from branchbench.cli import main

    monkeypatch.setenv(ENV_ROOT, str(root))
    assert main(["validate", "--split", "locomo", "--split", "beam"]) == 0
    assert "locomo, beam: every check passed" in capsys.readouterr().out
