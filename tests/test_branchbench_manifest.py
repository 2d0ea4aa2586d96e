"""The frozen test split: any change, addition or removal stops the run, naming the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from branchbench.cli import main
from branchbench.errors import ManifestError
from branchbench.manifest import (
    FROZEN_MANIFEST_SHA256,
    file_sha256,
    manifest_path,
    verify_manifest,
    write_manifest,
)
from branchbench.runner import RunConfig, run
from branchbench.scenario import scenarios_root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    copy = tmp_path / "scenarios"
    shutil.copytree(scenarios_root(), copy)
    return copy


def first_test_file(root: Path) -> Path:
    return sorted((root / "test").glob("*.json"))[0]


def test_packaged_split_matches_its_manifest_and_the_pinned_digest() -> None:
    assert verify_manifest() == FROZEN_MANIFEST_SHA256 == file_sha256(manifest_path())


def test_changed_file_is_named(root: Path) -> None:
    target = first_test_file(root)
    target.write_text(target.read_text(encoding="utf-8") + " ", encoding="utf-8")
    with pytest.raises(ManifestError, match=target.name):
        verify_manifest(root)


def test_missing_file_is_named(root: Path) -> None:
    target = first_test_file(root)
    target.unlink()
    with pytest.raises(ManifestError, match=f"{target.name} is missing"):
        verify_manifest(root)


def test_unlisted_file_is_named(root: Path) -> None:
    shutil.copy(first_test_file(root), root / "test" / "zz-extra.json")
    with pytest.raises(ManifestError, match=r"zz-extra\.json is not in the manifest"):
        verify_manifest(root)


def test_regenerated_manifest_accepts_the_change(root: Path) -> None:
    target = first_test_file(root)
    target.write_text(target.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    write_manifest(root)
    verify_manifest(root, pinned=False)


def test_a_refrozen_copy_is_refused_by_the_pin(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = first_test_file(root)
    target.write_text(target.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    write_manifest(root)
    with pytest.raises(ManifestError, match="re-frozen"):
        verify_manifest(root)
    status = main(["run", "--split", "test", "--scenarios", str(root), "--out",
                   str(tmp_path / "out"), "--quiet"])  # fmt: skip
    assert status == 2 and "re-frozen" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_run_refuses_to_start_on_a_mismatch(root: Path, tmp_path: Path) -> None:
    target = first_test_file(root)
    target.write_bytes(target.read_bytes().replace(b"\n", b"\r\n"))
    with pytest.raises(ManifestError, match=target.name):
        run(RunConfig(split="test", scenarios_root=str(root)), tmp_path / "out")
    assert not (tmp_path / "out" / "contexts.jsonl").exists()


def test_cli_run_reports_the_file_and_exits_2(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = first_test_file(root)
    target.write_text(target.read_text(encoding="utf-8").replace("p1", "p9"), encoding="utf-8")
    status = main(["run", "--split", "test", "--scenarios", str(root), "--out",
                   str(tmp_path / "out"), "--quiet"])  # fmt: skip
    assert status == 2
    assert target.name in capsys.readouterr().err
