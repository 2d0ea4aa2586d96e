"""The `spread` split and the budget curves: derived memory and provenance both matter."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from branchbench.cli import main
from branchbench.scenario import Tree, load_split, scenarios_root
from branchbench.spreadgen import EN, generate, write


def test_committed_files_are_what_the_generator_writes(tmp_path: Path) -> None:
    written = write(tmp_path)
    packaged = sorted((scenarios_root() / "spread").glob("*.json"))
    assert [p.name for p in sorted(written)] == [p.name for p in packaged]
    for path in written:
        assert path.read_bytes() == (scenarios_root() / "spread" / path.name).read_bytes()


def test_abandoned_branches_arrive_before_and_after_the_kept_one() -> None:
    before = after = 0
    for s in load_split("spread"):
        tree = Tree(s.messages)
        path = set(tree.path(s.anchor))
        trips = [(tree.arrival[m.id], m.id in path) for m in s.messages
                 if m.facts and m.facts[0].key == "trip"]  # fmt: skip
        kept = next(i for i, on_path in trips if on_path)
        before += sum(1 for i, on_path in trips if not on_path and i < kept)
        after += sum(1 for i, on_path in trips if not on_path and i > kept)
    assert before >= 4 and after >= 4


def test_facts_are_said_inside_ordinary_messages() -> None:
    s = generate("edit_user", EN, 0)
    with_facts = [m for m in s.messages if m.facts and m.facts[0].key == "pet"]
    assert with_facts and all(len(m.content.split(". ")) >= 2 for m in with_facts)


@pytest.fixture(scope="module")
def curve(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("scenarios")
    (root / "spread").mkdir()
    for name in ("zh-spread-late-sibling-1.json", "en-spread-switch-back-1.json"):
        shutil.copy(scenarios_root() / "spread" / name, root / "spread" / name)
    out = tmp_path_factory.mktemp("curve")
    status = main(["curve", "--split", "spread", "--scenarios", str(root), "--out", str(out),
                   "--budgets", "500", "6000", "--quiet", "--systems", "raw_current_branch",
                   "extract_retrieve", "branchmem", "--pipeline", "one_message"])  # fmt: skip
    assert status == 0
    data: dict[str, object] = json.loads((out / "curves.json").read_text(encoding="utf-8"))
    data["out"] = str(out)
    return data


def test_curve_writes_one_results_dir_per_budget_and_a_chart_per_metric(
    curve: dict[str, object],
) -> None:
    out = Path(str(curve["out"]))
    assert curve["budgets"] == [500, 6000]
    for budget in (500, 6000):
        assert (out / f"budget-{budget}" / "summary.json").exists()
    for metric in ("context_retain", "context_leak"):
        assert (out / f"{metric}_by_budget.png").stat().st_size > 0
    assert "## retain, extractor `oracle`" in (out / "curves.md").read_text(encoding="utf-8")


def test_raw_history_loses_early_facts_at_a_small_budget_only(curve: dict[str, object]) -> None:
    oracle = curve["curves"]["oracle"]  # type: ignore[index]
    raw = oracle["raw_current_branch"]["context_retain_rate"]["rates"]
    mem = oracle["branchmem"]["context_retain_rate"]["rates"]
    assert raw[0] < mem[0] == 1.0  # 500 tokens: the path does not fit
    assert raw[1] == 1.0  # 6000 tokens: it does, and retain is true by construction


def test_arrival_order_memory_leaks_when_the_abandoned_branch_arrives_later(
    curve: dict[str, object],
) -> None:
    oracle = curve["curves"]["oracle"]  # type: ignore[index]
    assert oracle["extract_retrieve"]["memory_leak_rate"]["rates"][0] > 0
    assert oracle["branchmem"]["context_leak_rate"]["rates"] == [0.0, 0.0]
    assert oracle["raw_current_branch"]["memory_leak_rate"]["rates"] == [None, None]
