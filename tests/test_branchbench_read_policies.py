"""A run's read policies: every system's pipeline reads the same input under each, a row
says which, and the report leads with the comparisons made on the same inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from branchbench.cli import main
from branchbench.runner import RunConfig, run

SYSTEMS = ["branchmem", "label_lineage", "raw_current_branch"]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("policies")
    args = ["run", "--split", "test", "--out", str(out), "--quiet", "--extractor", "oracle",
            "--pipeline", "one_message", "--pipeline", "consult",
            "--read-policy", "path", "--read-policy", "ungated", "--systems", *SYSTEMS]  # fmt: skip
    assert main(args) == 0
    return out


def rows(out: Path) -> list[dict[str, object]]:
    text = (out / "contexts.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_a_row_names_its_mode_and_read_policy(results: Path) -> None:
    found = {(r["pipeline"], r["mode"], r["read_policy"]) for r in rows(results)}
    assert found == {
        ("one_message", "one_message", None),  # reads only its message: run once
        ("consult@path", "consult", "path"),
        ("consult@ungated", "consult", "ungated"),
    }


def test_run_json_records_each_systems_attribution_and_gate(results: Path) -> None:
    meta = json.loads((results / "run.json").read_text(encoding="utf-8"))
    assert meta["read_policies"] == ["path", "ungated"]
    assert meta["integrations"]["branchmem"]["attribution"] == "transitive"
    assert meta["integrations"]["label_lineage"]["attribution"] == "message"
    assert meta["integrations"]["raw_current_branch"]["gate"] == "none"


def test_the_report_leads_with_the_same_inputs(results: Path) -> None:
    text = (results / "summary.md").read_text(encoding="utf-8")
    assert text.index("## Same inputs") < text.index("## Structural bounds")
    section = text[text.index("## Same inputs") : text.index("## Structural bounds")]
    for label in ("`one_message`", "`consult@path`", "`consult@ungated`"):
        assert label in section
    summary = json.loads((results / "summary.json").read_text(encoding="utf-8"))
    cells = summary["by_pipeline"]
    lineage = cells["consult@ungated"]["oracle"]["systems"]["label_lineage"]
    gated = cells["consult@ungated"]["oracle"]["systems"]["branchmem"]
    # shown every memory, the label design restates a sibling's value where it writes;
    # branchmem cites what it was shown, and the gate hides the restatement
    assert lineage["memory_leak_rate"] > 0.0 == gated["memory_leak_rate"]
    for label in ("one_message", "consult@path"):  # the path alone: the two designs tie
        tables = cells[label]["oracle"]["systems"]
        assert tables["label_lineage"]["memory_leak_rate"] == 0.0
        assert tables["branchmem"]["memory_leak_rate"] == 0.0


def test_an_unknown_read_policy_is_refused(tmp_path: Path) -> None:
    config = RunConfig(split="dev", systems=["branchmem"], read_policies=["psychic"])
    with pytest.raises(Exception, match="unknown read policy 'psychic'"):
        run(config, tmp_path)
    assert not (tmp_path / "run.json").exists()
