"""Each validator check, shown failing on a scenario built to fail it."""

from __future__ import annotations

from typing import Any

import pytest

from branchbench.errors import ScenarioError
from branchbench.keywords import contains, normalize
from branchbench.scenario import SPLITS, load_split, scenario_from_dict
from branchbench.validate import (
    IDS_WARN_ONLY,
    keyword_warnings,
    validate_scenario,
    validate_split,
)


def base() -> dict[str, Any]:
    """A small valid edit scenario: Chengdu edited into Hangzhou, budget corrected.
    Every retain answer is stated by a fact on the kept path (``provenance``)."""
    return {
        "id": "t-1",
        "language": "zh",
        "operation": "edit_user",
        "split": "dev",
        "title": "t",
        "events": [
            {"id": "u1", "parent": None, "role": "user", "content": "帮我规划搬家",
             "facts": [{"key": "task", "value": "规划搬家"}]},
            {"id": "a1", "parent": "u1", "role": "assistant", "content": "好的"},
            {"id": "u2", "parent": "a1", "role": "user", "content": "下个月搬去成都",
             "facts": [{"key": "city", "value": "搬去成都"}]},
            {"id": "u2b", "parent": "a1", "role": "user", "content": "下个月搬去杭州",
             "facts": [{"key": "city", "value": "搬去杭州"}]},
            {"id": "u3b", "parent": "u2b", "role": "user", "content": "预算3000",
             "facts": [{"key": "budget", "value": "预算3000"}]},
            {"id": "u4b", "parent": "u3b", "role": "user", "content": "预算改成4000",
             "facts": [{"key": "budget", "value": "预算4000"}]},
        ],
        "anchor": "u4b",
        "probes": [
            {"id": "p1", "type": "leak", "question": "我搬去哪？", "answer": ["杭州"],
             "forbidden": ["成都"]},
            {"id": "p2", "type": "retain", "question": "要做什么？", "answer": ["搬家"]},
            {"id": "p3", "type": "stale", "question": "预算多少？", "answer": ["4000"],
             "forbidden": ["3000"]},
        ],
    }  # fmt: skip


def checks(raw: dict[str, Any]) -> set[str]:
    return {p.check for p in validate_scenario(scenario_from_dict(raw))}


def test_base_scenario_passes() -> None:
    assert checks(base()) == set()


def test_parent_arriving_after_child_fails_tree() -> None:
    raw = base()
    raw["events"][1]["parent"] = "u2"
    assert "tree" in checks(raw)


def test_two_roots_fail_tree() -> None:
    raw = base()
    raw["events"][1]["parent"] = None
    assert "tree" in checks(raw)


def test_duplicate_event_id_fails_tree() -> None:
    raw = base()
    raw["events"][5]["id"] = "u3b"
    raw["anchor"] = "u3b"
    assert "tree" in checks(raw)


def test_unknown_anchor_fails_tree() -> None:
    raw = base()
    raw["anchor"] = "nope"
    assert "tree" in checks(raw)


def test_scenario_without_a_fork_fails() -> None:
    raw = base()
    raw["events"] = [e for e in raw["events"] if e["id"] != "u2"]
    raw["probes"] = raw["probes"][1:]
    assert checks(raw) == {"fork"}


def test_forbidden_keyword_on_the_path_fails_leak() -> None:
    raw = base()
    raw["events"][4]["content"] = "预算3000，不去成都了"
    assert "leak" in checks(raw)


def test_forbidden_keyword_nowhere_off_path_fails_leak() -> None:
    raw = base()
    raw["probes"][0]["forbidden"] = ["上海"]
    assert "leak" in checks(raw)


def test_forbidden_keyword_arriving_after_the_question_fails_leak() -> None:
    raw = base()
    raw["events"].append({"id": "x", "parent": "a1", "role": "user", "content": "去上海"})
    raw["probes"][0]["forbidden"] = ["上海"]
    raw["probes"][0]["asked_after"] = "u4b"
    assert "leak" in checks(raw)


def test_forbidden_keyword_in_the_question_fails() -> None:
    raw = base()
    raw["probes"][0]["question"] = "我是搬去成都吗？"
    assert "question" in checks(raw)


def test_forbidden_keyword_in_the_question_is_caught_after_normalising() -> None:
    raw = base()
    raw["probes"][2]["question"] = "预算是 ３０００ 吗？"  # full-width digits, spaces
    assert "question" in checks(raw)


def test_forbidden_keyword_inside_an_answer_keyword_fails() -> None:
    raw = base()
    raw["probes"][0]["answer"] = ["杭州", "不是成都"]
    assert "answer" in checks(raw)


def test_answer_keyword_off_the_path_fails() -> None:
    raw = base()
    raw["probes"][1]["answer"] = ["成都"]
    assert "answer-on-path" in checks(raw)


def test_stale_value_never_stated_on_the_path_fails() -> None:
    raw = base()
    raw["probes"][2]["forbidden"] = ["5000"]
    assert "stale" in checks(raw)


def test_stale_value_not_superseded_later_fails() -> None:
    raw = base()
    del raw["events"][5]["facts"]  # the correction is said but never derived
    assert "stale" in checks(raw)


def test_stale_value_superseded_under_another_scope_fails() -> None:
    raw = base()
    raw["events"][5]["facts"][0]["scope"] = "travel"
    assert "stale" in checks(raw)


def test_explicit_supersede_counts_as_superseded() -> None:
    raw = base()
    raw["events"][4]["facts"][0]["id"] = "b-old"
    raw["events"][5]["facts"] = [{"key": "spend", "value": "预算4000", "supersedes": ["b-old"]}]
    assert "stale" not in checks(raw)


def test_retracted_value_without_a_reaching_retraction_fails() -> None:
    raw = base()
    raw["probes"].append({"id": "p4", "type": "retracted", "question": "预算多少？",
                          "answer": ["4000"], "forbidden": ["3000"]})  # fmt: skip
    assert "retracted" in checks(raw)
    raw["events"].append({"id": "u5b", "parent": "u4b", "role": "user", "content": "别再提预算",
                          "facts": [{"op": "retract", "retract_scope": "branch",
                                     "key": "budget"}]})  # fmt: skip
    raw["anchor"] = "u5b"
    assert "retracted" not in checks(raw)


def test_tree_scope_retraction_reaches_a_sibling_branch() -> None:
    raw = base()
    raw["events"].append({"id": "r", "parent": "u2", "role": "user", "content": "忘掉预算",
                          "facts": [{"op": "retract", "retract_scope": "tree",
                                     "key": "budget"}]})  # fmt: skip
    raw["probes"].append({"id": "p4", "type": "retracted", "question": "预算多少？",
                          "answer": ["4000"], "forbidden": ["3000"]})  # fmt: skip
    assert "retracted" not in checks(raw)
    raw["events"][-1]["facts"][0]["retract_scope"] = "branch"
    assert "retracted" in checks(raw)


def test_duplicate_probe_id_fails() -> None:
    raw = base()
    raw["probes"][1]["id"] = "p1"
    assert "probes" in checks(raw)


def test_scenario_filed_under_the_wrong_split_fails() -> None:
    problems = validate_split([scenario_from_dict(base())], "test")
    assert {p.check for p in problems} == {"split"}


@pytest.mark.parametrize(
    ("field", "value"),
    [("operation", "rebase"), ("split", "train"), ("events", "not a list")],
)
def test_schema_errors_name_the_field(field: str, value: object) -> None:
    raw = base()
    raw[field] = value
    with pytest.raises(ScenarioError, match=field if field != "events" else "'events'"):
        scenario_from_dict(raw)


def test_unknown_probe_type_is_a_schema_error() -> None:
    raw = base()
    raw["probes"][0]["type"] = "vibes"
    with pytest.raises(ScenarioError, match="probes\\[0\\]"):
        scenario_from_dict(raw)


def test_normalisation_folds_width_case_and_space() -> None:
    assert normalize("Ｃｈｅｎｇ du　３,０００") == normalize("cheng du 3000") == "cheng du 3000"
    assert normalize("成 都") == "成都"
    assert contains("We move to CHENG  DU", "cheng du")
    assert not contains("Hangzhou", "")


@pytest.mark.parametrize("split", SPLITS)
def test_every_packaged_split_passes(split: str) -> None:
    scenarios = load_split(split)
    assert scenarios
    assert validate_split(scenarios, split) == []


def test_test_split_covers_five_operations_four_times() -> None:
    ops: dict[str, int] = {}
    for s in load_split("test"):
        ops[s.operation] = ops.get(s.operation, 0) + 1
    assert ops == dict.fromkeys(
        ["edit_user", "regenerate", "fork_checkpoint", "switch_back", "correct_in_branch"], 4
    )


def test_switch_back_includes_the_peanut_shrimp_merge_trap() -> None:
    traps = [
        p
        for s in load_split("test")
        if s.operation == "switch_back"
        for p in s.probes
        if p.type == "leak" and "花生" in p.answer and "虾" in p.forbidden
    ]
    assert traps


def test_english_split_mirrors_the_chinese_scenarios() -> None:
    zh = {s.id.removeprefix("zh-") for split in ("dev", "test") for s in load_split(split)}
    en = {s.id.removeprefix("en-") for s in load_split("en")}
    assert zh == en and len(en) == 30


def test_long_scenario_that_fits_the_raw_budget_fails() -> None:
    raw = base()
    raw.update(split="long", operation="long_history")
    assert "long" in checks(raw)
    filler = [{"id": f"f{i}", "parent": "u4b" if i == 0 else f"f{i - 1}", "role": "user",
               "content": "今天天气不错" * 20} for i in range(20)]  # fmt: skip
    raw["events"].extend(filler)
    raw["anchor"] = "f19"
    assert "long" not in checks(raw)


# One crafted bad scenario per class an audit found passing the old validator: each is
# rejected with a message naming the scenario, the probe and the word.
def _label_as_forbidden(raw: dict[str, Any]) -> None:
    raw["events"][2]["content"] = "下个月搬去成都，助手帮我查查"
    raw["probes"][0]["forbidden"] = ["助手"]


def _label_as_answer(raw: dict[str, Any]) -> None:
    raw["events"][0]["content"] = "用户想规划搬家"
    raw["probes"][1]["answer"] = ["用户"]


def _forbidden_in_path_fact(raw: dict[str, Any]) -> None:
    raw["events"][3]["facts"][0]["value"] = "搬去杭州，不去成都"


def _stale_in_current_fact(raw: dict[str, Any]) -> None:
    raw["events"][5]["facts"].append({"key": "deposit", "value": "押金3000"})


def _answer_in_question(raw: dict[str, Any]) -> None:
    raw["probes"][0]["question"] = "我是搬去杭州吗？"


def _linear_chain_mid_anchor(raw: dict[str, Any]) -> None:
    raw["events"] = [e for e in raw["events"] if e["id"] in ("u1", "a1", "u2")]
    raw["events"][1]["content"] = "好的，杭州还是别处？"
    raw["anchor"] = "a1"
    raw["probes"] = [raw["probes"][0]]


@pytest.mark.parametrize(
    ("craft", "check", "probe", "word"),
    [
        (_label_as_forbidden, "labels", "p1", "助手"),
        (_label_as_answer, "labels", "p2", "用户"),
        (_forbidden_in_path_fact, "leak", "p1", "成都"),
        (_stale_in_current_fact, "stale", "p3", "3000"),
        (_answer_in_question, "question", "p1", "杭州"),
        (_linear_chain_mid_anchor, "fork", None, "成都"),
    ],
)
def test_each_audited_class_is_rejected_and_named(
    craft: Any, check: str, probe: str | None, word: str
) -> None:
    raw = base()
    craft(raw)
    problems = [p for p in validate_scenario(scenario_from_dict(raw)) if p.check == check]
    assert problems, f"{craft.__name__} passed the validator"
    text = str(problems[0])
    assert "t-1" in text and repr(word) in text
    if probe:
        assert repr(probe) in text


def test_risky_keywords_are_warned_about_not_failed() -> None:
    raw = base()
    raw["probes"][0]["answer"] = ["杭州", "州"]
    raw["events"][5]["content"] = "预算改成4000, go"
    raw["probes"].append(
        {"id": "p5", "type": "retain", "question": "什么?", "answer": ["go", "搬家"]}
    )
    scenario = scenario_from_dict(raw)
    warned = {
        (p.message.split(": ")[0], p.message.split("'")[3]) for p in keyword_warnings(scenario)
    }
    assert ("probe 'p1'", "州") in warned
    assert ("probe 'p5'", "go") in warned
    assert ("probe 'p3'", "4000") in warned and ("probe 'p3'", "3000") in warned
    assert not any(w == "杭州" or w == "搬家" for _, w in warned)
    assert "risky" not in {p.check for p in validate_scenario(scenario)}


# Ways to game the scorer that the validator refuses (issue #24, item 5).
def test_retain_answer_superseded_later_on_the_path_fails() -> None:
    raw = base()
    raw["probes"][1]["answer"] = ["3000"]  # the budget was corrected to 4000 below it
    problems = [p for p in validate_scenario(scenario_from_dict(raw)) if p.check == "retain"]
    assert problems and "'p2'" in str(problems[0]) and "'3000'" in str(problems[0])
    raw["probes"][1]["answer"] = ["4000"]
    assert "retain" not in checks(raw)


def test_retain_answer_retracted_later_on_the_path_fails() -> None:
    raw = base()
    raw["events"].append({"id": "u5b", "parent": "u4b", "role": "user", "content": "别再提预算",
                          "facts": [{"op": "retract", "key": "budget"}]})  # fmt: skip
    raw["anchor"] = "u5b"
    raw["probes"] = raw["probes"][:2]
    raw["probes"][1]["answer"] = ["4000"]
    assert "retain" in checks(raw)


@pytest.mark.parametrize("field", ["key", "scope", "id"])
def test_forbidden_keyword_in_a_path_fact_key_or_scope_fails(field: str) -> None:
    raw = base()
    raw["events"][3]["facts"][0][field] = "不是成都"  # u2b, on the anchor path
    problems = [p for p in validate_scenario(scenario_from_dict(raw)) if p.check == "metadata"]
    assert problems and "'p1'" in str(problems[0]) and "'成都'" in str(problems[0])


def test_stale_value_in_the_key_of_the_current_fact_fails() -> None:
    raw = base()
    for event in raw["events"][4:6]:
        event["facts"][0]["key"] = "budget_not_3000"
    assert "metadata" in checks(raw)


def test_unless_mask_hiding_the_abandoned_value_fails() -> None:
    raw = base()
    raw["probes"][0]["unless"] = {"成都": ["搬去成都"]}  # masks the abandoned fact itself
    problems = [p for p in validate_scenario(scenario_from_dict(raw)) if p.check == "unless"]
    assert problems and "'搬去成都'" in str(problems[0]) and "'u2'" in str(problems[0])


def test_unless_mask_hiding_the_stale_value_fails() -> None:
    raw = base()
    raw["probes"][2]["unless"] = {"3000": ["预算3000"]}
    assert "unless" in checks(raw)


def test_unless_mask_for_another_word_passes() -> None:
    raw = base()
    raw["probes"][0]["unless"] = {"成都": ["成都话"]}
    raw["probes"][2]["unless"] = {"3000": ["3000米"]}
    assert checks(raw) == set()


@pytest.mark.parametrize("alias", ["的", "了", "the", "a", "The ", "x", "…", "，"])
def test_meaningless_alias_is_refused(alias: str) -> None:
    raw = base()
    raw["probes"][0]["aliases"] = {"杭州": [alias]}
    problems = [p for p in validate_scenario(scenario_from_dict(raw)) if p.check == "aliases"]
    assert problems and repr(alias) in str(problems[0])


@pytest.mark.parametrize("keyword", ["的", "the"])
def test_stop_word_keyword_is_refused(keyword: str) -> None:
    raw = base()
    raw["events"][0]["content"] = "帮我规划搬家的事, the move"
    raw["probes"][1]["answer"] = ["搬家", keyword]
    assert "keywords" in checks(raw)


def test_meaningful_short_alias_passes() -> None:
    raw = base()
    raw["probes"][0]["aliases"] = {"杭州": ["杭城", "HZ"]}
    raw["probes"][2]["aliases"] = {"4000": ["4k"]}
    assert checks(raw) == set()


def test_duplicate_probe_at_the_same_anchor_fails() -> None:
    raw = base()
    raw["probes"].append({"id": "p9", "type": "leak", "question": "新家在哪个城市？",
                          "answer": ["杭 州"], "forbidden": ["成都"]})  # fmt: skip
    problems = [p for p in validate_scenario(scenario_from_dict(raw)) if p.check == "duplicate"]
    assert problems and "'p9'" in str(problems[0]) and "'p1'" in str(problems[0])


def test_same_fact_at_another_anchor_is_not_a_duplicate() -> None:
    raw = base()
    raw["probes"].append({"id": "p9", "type": "leak", "question": "新家在哪个城市？",
                          "answer": ["杭州"], "forbidden": ["成都"], "anchor": "u3b"})  # fmt: skip
    assert checks(raw) == set()


# Classes a second audit found passing the validator: each crafted scenario fails only
# the new check (every older check passes it) and the message names scenario, probe and
# word.
def _paraphrased_sibling_fact(raw: dict[str, Any]) -> None:
    # the abandoned message says 成都 but its fact, what a memory stores, says 蓉城
    raw["events"][2]["facts"][0]["value"] = "搬去蓉城"


def _sibling_fact_restated_in_other_words(raw: dict[str, Any]) -> None:
    raw["events"].append({"id": "u3", "parent": "u2", "role": "user", "content": "对，蓉城",
                          "facts": [{"key": "city", "value": "搬去蓉城"}]})  # fmt: skip


def _abandoned_value_in_no_fact(raw: dict[str, Any]) -> None:
    raw["events"][2]["content"] = "下个月搬去成都，先看看房"
    raw["events"][2]["facts"] = [{"key": "todo", "value": "先看房"}]


def _answer_only_in_the_dialogue_text(raw: dict[str, Any]) -> None:
    # 北京 is on the path in words only: world knowledge answers the question
    raw["events"][0]["content"] = "帮我规划搬家，我现在在北京出差"
    raw["probes"][1].update(question="中国的首都是哪座城市？", answer=["北京"])


def _answer_said_but_not_derived(raw: dict[str, Any]) -> None:
    del raw["events"][0]["facts"]  # 搬家 is said in u1, never derived


def _number_in_an_event_id(raw: dict[str, Any]) -> None:
    raw["events"][5]["id"] = raw["anchor"] = "u4000"  # p3 answers 4000


@pytest.mark.parametrize(
    ("craft", "check", "probe", "word"),
    [
        (_paraphrased_sibling_fact, "sibling-fact", "p1", "成都"),
        (_sibling_fact_restated_in_other_words, "sibling-fact", "p1", "搬去蓉城"),
        (_abandoned_value_in_no_fact, "sibling-fact", "p1", "成都"),
        (_answer_only_in_the_dialogue_text, "provenance", "p2", "北京"),
        (_answer_said_but_not_derived, "provenance", "p2", "搬家"),
        (_number_in_an_event_id, "ids", "p3", "4000"),
    ],
)
def test_each_new_audited_class_fails_only_its_new_check(
    craft: Any, check: str, probe: str, word: str
) -> None:
    raw = base()
    craft(raw)
    problems = validate_scenario(scenario_from_dict(raw))
    assert {p.check for p in problems} == {check}
    text = str(problems[0])
    assert "t-1" in text and repr(probe) in text and repr(word) in text


def test_paraphrased_sibling_fact_passes_with_an_alias() -> None:
    raw = base()
    _paraphrased_sibling_fact(raw)
    message = str(validate_scenario(scenario_from_dict(raw))[0])
    assert "'u2'" in message and "'搬去蓉城'" in message
    raw["probes"][0]["aliases"] = {"成都": ["蓉城"]}
    assert checks(raw) == set()
    raw = base()
    _sibling_fact_restated_in_other_words(raw)
    raw["probes"][0]["aliases"] = {"成都": ["蓉城"]}
    assert checks(raw) == set()


def test_sibling_fact_forbidden_by_another_probe_is_measured_there() -> None:
    raw = base()
    raw["events"][2]["content"] = "下个月搬去成都，住锦江区"
    raw["events"][2]["facts"].append({"key": "city", "value": "住在锦江区"})
    assert checks(raw) == {"sibling-fact"}
    raw["probes"].append({"id": "p4", "type": "leak", "question": "我住哪个区？",
                          "answer": ["杭州"], "forbidden": ["锦江"]})  # fmt: skip
    assert checks(raw) == set()


def test_a_scenario_without_facts_is_scored_on_text_and_skips_sibling_facts() -> None:
    raw = base()
    for event in raw["events"]:
        event.pop("facts", None)
    raw["probes"] = [raw["probes"][0]]
    assert checks(raw) == set()


@pytest.mark.parametrize(
    ("where", "edit"),
    [
        ("an event id", lambda raw: raw["events"][4].update(id="m3000")),
        ("the scenario id", lambda raw: raw.update(id="t-3000")),
        ("the fact id", lambda raw: raw["events"][4]["facts"][0].update(id="f3000")),
        ("the fact scope", lambda raw: [e["facts"][0].update(scope="2026-01-01 00:30:00")
                                        for e in raw["events"][4:6]]),
    ],
)  # fmt: skip
def test_bare_number_the_scenario_ids_carry_fails(where: str, edit: Any) -> None:
    raw = base()
    raw["probes"][2].update(answer=["4000"], forbidden=["3000"])
    if where == "an event id":
        raw["events"][5]["parent"] = "m3000"
    if where == "the fact scope":
        raw["probes"][2]["forbidden"] = ["30"]
        raw["events"][4]["content"] = raw["events"][4]["facts"][0]["value"] = "预算30"
    edit(raw)
    problems = [p for p in validate_scenario(scenario_from_dict(raw)) if p.check == "ids"]
    assert problems and "'p3'" in str(problems[0]) and where in str(problems[0])


def test_bare_number_in_an_id_only_warns_on_a_pinned_generated_split() -> None:
    assert IDS_WARN_ONLY == ("beam",)
    raw = base()
    _number_in_an_event_id(raw)
    raw["split"] = "beam"
    scenario = scenario_from_dict(raw)
    assert "ids" not in {p.check for p in validate_scenario(scenario)}
    assert "ids" in {p.check for p in keyword_warnings(scenario)}


def test_a_bare_number_glued_into_a_path_fact_key_still_fails_metadata() -> None:
    # the scorer no longer reads 3000 inside "budget_3000", but a system may render it
    raw = base()
    for event in raw["events"][4:6]:
        event["facts"][0]["key"] = "budget_3000"
    assert contains("budget_3000", "3000") is False
    assert {"metadata", "ids"} <= checks(raw)
