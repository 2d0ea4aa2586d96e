"""`branchbench run` on the frozen test split, model-free, and `score` from saved files."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from branchbench.cli import main
from branchbench.scenario import scenarios_root
from branchbench.score import summarize
from branchbench.systems import CORE_SYSTEMS


@pytest.fixture(scope="module")
def test_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("results") / "latest"
    status = main(["run", "--split", "test", "--out", str(out), "--quiet",
                   "--systems", *CORE_SYSTEMS])  # fmt: skip
    assert status == 0
    return out, json.loads((out / "summary.json").read_text(encoding="utf-8"))


def test_summary_has_the_documented_shape(test_run: tuple[Path, dict[str, Any]]) -> None:
    out, summary = test_run
    assert summary["split"] == "test"
    assert summary["probes"] == 69 and summary["leak_probes"] == 34
    assert len(summary["manifest_sha256"]) == 64
    assert set(summary["systems"]) == set(CORE_SYSTEMS)
    for name, entry in summary["systems"].items():
        for key in ("context_leak_rate", "context_retain_rate"):
            assert 0.0 <= entry[key] <= 1.0
            lo, hi = entry["intervals"][key]
            assert lo <= entry[key] <= hi
        assert entry["n"]["context_leak_rate"] == 34
        memory_rates = [entry[k] for k in ("memory_leak_rate", "context_stale_rate")]
        if name in ("full_history", "raw_current_branch"):
            assert not entry["has_memory"] and memory_rates == [None, None]  # n/a, not 0%
        else:
            assert entry["has_memory"] and all(0.0 <= r <= 1.0 for r in memory_rates)
        assert set(entry["per_operation"]) == {
            "edit_user", "regenerate", "fork_checkpoint", "switch_back", "correct_in_branch"
        }  # fmt: skip
        for op in entry["per_operation"].values():
            assert 0.0 <= op["context_leak_rate"] <= 1.0
    for name in ("summary.md", "leak_by_operation.png", "contexts.jsonl", "run.json"):
        assert (out / name).stat().st_size > 0


def test_branchmem_leaks_nothing_and_retains_like_the_upper_bound(
    test_run: tuple[Path, dict[str, Any]],
) -> None:
    systems = test_run[1]["systems"]
    assert systems["branchmem"]["context_leak_rate"] == 0.0
    assert systems["branchmem"]["context_stale_rate"] == 0.0
    upper = systems["raw_current_branch"]["context_retain_rate"]
    assert systems["branchmem"]["context_retain_rate"] == upper


@pytest.mark.parametrize(
    "name", ["full_history", "rolling_summary", "rolling_summary_notes", "extract_retrieve"]
)
def test_baselines_leak(test_run: tuple[Path, dict[str, Any]], name: str) -> None:
    assert test_run[1]["systems"][name]["context_leak_rate"] > 0.0


def test_raw_filter_still_leaks_through_extracted_memories(
    test_run: tuple[Path, dict[str, Any]],
) -> None:
    entry = test_run[1]["systems"]["extract_retrieve_rawfilter"]
    assert entry["context_leak_rate"] == entry["memory_leak_rate"] > 0.0


def test_every_context_fits_the_budget(test_run: tuple[Path, dict[str, Any]]) -> None:
    out, _ = test_run
    budget = json.loads((out / "run.json").read_text(encoding="utf-8"))["budget"]
    rows = [json.loads(line) for line in (out / "contexts.jsonl").read_text().splitlines()]
    assert rows and all(r["tokens"] <= budget for r in rows)


def test_score_recomputes_the_same_summary_from_saved_files(
    test_run: tuple[Path, dict[str, Any]],
) -> None:
    out, summary = test_run
    (out / "summary.json").unlink()
    assert main(["score", str(out)]) == 0
    assert summarize(out) == summary
    assert json.loads((out / "summary.json").read_text(encoding="utf-8")) == summary


def test_long_split_needs_derived_memory(tmp_path: Path) -> None:
    root = tmp_path / "scenarios"
    (root / "long").mkdir(parents=True)
    for path in sorted((scenarios_root() / "long").glob("*.json"))[:3]:
        shutil.copy(path, root / "long" / path.name)
    out = tmp_path / "long"
    systems = ["raw_current_branch", "branchmem"]
    args = ["run", "--split", "long", "--scenarios", str(root), "--out", str(out), "--quiet",
            "--pipeline", "one_message", "--pipeline", "summary"]  # fmt: skip
    assert main([*args, "--systems", *systems]) == 0
    entry = json.loads((out / "summary.json").read_text(encoding="utf-8"))["systems"]
    assert (
        entry["branchmem"]["context_retain_rate"]
        > entry["raw_current_branch"]["context_retain_rate"]
    )
    assert entry["branchmem"]["context_leak_rate"] == 0.0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    # rolling summaries over a long path keep the gate too, whatever the step read
    for policy in ("path", "arrival", "ungated"):
        tables = summary["by_pipeline"][f"summary@{policy}"]["oracle"]["systems"]
        assert tables["branchmem"]["context_leak_rate"] == 0.0, policy


def test_invalidation_split_honours_retractions_and_scopes(tmp_path: Path) -> None:
    out = tmp_path / "inv"
    assert main(["run", "--split", "invalidation", "--out", str(out), "--quiet",
                 "--systems", "branchmem", "extract_retrieve"]) == 0  # fmt: skip
    entry = json.loads((out / "summary.json").read_text(encoding="utf-8"))["systems"]
    assert entry["branchmem"]["context_retracted_rate"] == 0.0
    assert entry["branchmem"]["context_retain_rate"] == 1.0
    # scopes ignored: "incident calls: voice" overwrites "design reviews: async"
    assert entry["extract_retrieve"]["memory_retain_rate"] < 1.0


def test_unknown_system_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--split", "dev", "--out", str(tmp_path), "--systems", "nope"]) == 2
    assert "'nope'" in capsys.readouterr().err


def test_run_json_records_the_code_and_versions(test_run: tuple[Path, dict[str, Any]]) -> None:
    meta = json.loads((test_run[0] / "run.json").read_text(encoding="utf-8"))
    assert (
        meta["git_commit"] is None
        or meta["git_commit"] == "dirty"
        or (len(meta["git_commit"]) == 40)
    )
    assert len(meta["code_sha256"]) == 64 and meta["python"].count(".") == 2
    assert set(meta["packages"]) == {"branchmem", "mem0ai", "langgraph", "graphiti-core", "langmem"}
    assert meta["packages"]["branchmem"]


def test_both_extractors_are_reported(test_run: tuple[Path, dict[str, Any]]) -> None:
    summary = test_run[1]
    assert summary["extractors"] == ["oracle", "rules"]
    assert summary["by_extractor"]["oracle"] == summary["systems"]
    rules = summary["by_extractor"]["rules"]["branchmem"]
    # text-derived keys are not perfect entity resolution: less is retained
    assert rules["memory_retain_rate"] < summary["systems"]["branchmem"]["memory_retain_rate"]
    assert "extractor `rules`" in (test_run[0] / "summary.md").read_text(encoding="utf-8")


def test_without_matplotlib_the_table_comes_first_and_the_chart_is_skipped(
    test_run: tuple[Path, dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = test_run[0]
    (out / "leak_by_operation.png").unlink()
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    assert main(["score", str(out)]) == 0
    printed = capsys.readouterr()
    assert "Traceback" not in printed.out + printed.err
    assert printed.out.index("branchmem") < printed.out.index("chart skipped")
    assert 'pip install "branchmem[bench]"' in printed.out
    assert not (out / "leak_by_operation.png").exists()
