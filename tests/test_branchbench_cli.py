"""The command line: exit codes, messages at the edge, every command documented."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from branchbench.cli import _parser, main
from branchbench.scenario import scenarios_root

DOCS = Path(__file__).resolve().parent.parent / "docs" / "branchbench.md"
COMMANDS = ["run", "curve", "validate", "score", "manifest"]


def test_validate_passes_on_every_packaged_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate"]) == 0
    assert "every check passed" in capsys.readouterr().out


def test_validate_reports_a_broken_file_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = sorted((scenarios_root() / "dev").glob("*.json"))[0]
    raw = json.loads(source.read_text(encoding="utf-8"))
    leak = next(p for p in raw["probes"] if p["type"] == "leak")
    leak["question"] += leak["forbidden"][0]
    broken = tmp_path / source.name
    broken.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    assert main(["validate", str(broken)]) == 1
    out = capsys.readouterr().out
    assert "[question]" in out and leak["id"] in out


def test_validate_flags_a_file_whose_name_is_not_its_id(tmp_path: Path) -> None:
    root = tmp_path / "scenarios"
    (root / "dev").mkdir(parents=True)
    source = sorted((scenarios_root() / "dev").glob("*.json"))[0]
    shutil.copy(source, root / "dev" / "renamed.json")
    assert main(["validate", "--split", "dev", "--scenarios", str(root)]) == 1


def test_unreadable_scenario_is_a_message_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["validate", str(bad)]) == 2
    assert "bad.json" in capsys.readouterr().err


def test_manifest_check_passes_on_the_packaged_split() -> None:
    assert main(["manifest", "--check"]) == 0


def test_score_on_a_directory_without_results_is_an_error(tmp_path: Path) -> None:
    assert main(["score", str(tmp_path)]) == 2


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_and_is_documented(command: str) -> None:
    sub = _parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    assert sub.description and sub.format_help()
    assert f"branchbench {command}" in DOCS.read_text(encoding="utf-8")


def test_validate_reports_a_tampered_test_split(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "scenarios"
    shutil.copytree(scenarios_root(), root)
    target = sorted((root / "test").glob("*.json"))[-1]
    target.write_text(target.read_text(encoding="utf-8").replace("  ", "   "), encoding="utf-8")
    assert main(["validate", "--split", "test", "--scenarios", str(root)]) == 1
    out = capsys.readouterr().out
    assert "[manifest]" in out and target.name in out


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    import branchmem

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"branchbench {branchmem.__version__}"
