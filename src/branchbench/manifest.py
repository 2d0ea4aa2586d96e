"""The frozen test split: a SHA-256 per file, checked before every run.

Reported results use the test split only; if a probe could be tuned after seeing
results, the figures would mean nothing. The manifest makes any change visible and
makes ``branchbench run`` refuse to start, naming the file; and the manifest's own
SHA-256 is pinned here, so a copy of the split with a regenerated manifest is refused
too (re-freezing is a code change, visible in review).

``run_record`` is what a results directory says about the code that produced it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from branchbench.errors import ManifestError, ScenarioError
from branchbench.scenario import scenarios_root, split_files

FROZEN_SPLIT = "test"
MANIFEST_NAME = "manifest.json"
# SHA-256 of scenarios/manifest.json; changing the test split means changing this line.
FROZEN_MANIFEST_SHA256 = "6f67fa4ae19f8b267c25c836791e944b836053c008a101963709ea5a18b6b930"
# Modules that decide no figure of a run: the command line, the scenario generators (their
# output is data, pinned by the manifest) and the separate propagation experiments. Every
# other module of the package is hashed, so a module added later is covered by default.
UNSCORED_CODE = (
    "__main__.py",
    "cli.py",
    "longgen.py",
    "spreadgen.py",
    "propagation/__init__.py",
    "propagation/experiments.py",
    "propagation/probes.py",
    "propagation/report.py",
)
RECORDED_PACKAGES = ("branchmem", "mem0ai", "langgraph", "graphiti-core", "langmem")


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest_path(root: Path | None = None) -> Path:
    """Where the manifest lives (next to the split folders)."""
    return (root or scenarios_root()) / MANIFEST_NAME


def _digests(root: Path | None) -> dict[str, str]:
    folder = (root or scenarios_root()) / FROZEN_SPLIT
    return {p.name: file_sha256(p) for p in sorted(folder.glob("*.json"))}


def build_manifest(root: Path | None = None) -> dict[str, object]:
    """The manifest of the frozen split as it is on disk now."""
    return {"split": FROZEN_SPLIT, "algorithm": "sha256", "files": _digests(root)}


def write_manifest(root: Path | None = None) -> Path:
    """Regenerate the manifest (maintainers only: this re-freezes the split)."""
    path = manifest_path(root)
    text = json.dumps(build_manifest(root), ensure_ascii=False, indent=2)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def verify_manifest(root: Path | None = None, pinned: bool = True) -> str:
    """Check every frozen file against the manifest and (``pinned``) the manifest
    against the SHA-256 pinned in this module; return the manifest's SHA-256.

    Raises ManifestError naming the first file that is changed, missing or unlisted.
    """
    path = manifest_path(root)
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
        expected: dict[str, str] = dict(recorded["files"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ManifestError(f"cannot read the test split manifest {path}: {e}") from e
    actual = _digests(root)
    for name, digest in sorted(expected.items()):
        if name not in actual:
            raise ManifestError(f"frozen test file {name} is missing")
        if actual[name] != digest:
            raise ManifestError(
                f"frozen test file {name} does not match the manifest "
                f"(expected sha256 {digest[:12]}..., found {actual[name][:12]}...)"
            )
    for name in sorted(set(actual) - set(expected)):
        raise ManifestError(f"test file {name} is not in the manifest")
    digest = file_sha256(path)
    if pinned and digest != FROZEN_MANIFEST_SHA256:
        raise ManifestError(
            f"test split manifest {path} has sha256 {digest[:12]}..., not the frozen "
            f"{FROZEN_MANIFEST_SHA256[:12]}... pinned in branchbench.manifest: the split "
            "was re-frozen"
        )
    return digest


def scored_files() -> list[Path]:
    """The modules a figure depends on: scorer, matching rules, validator, runner,
    report, budget, extractors, baselines (every module but ``UNSCORED_CODE``)."""
    package = Path(__file__).resolve().parent
    return sorted(
        p
        for p in package.rglob("*.py")
        if p.relative_to(package).as_posix() not in UNSCORED_CODE
        and "scenarios" not in p.relative_to(package).parts
    )


def code_sha256() -> str:
    """One SHA-256 over the modules a figure depends on (sorted relative paths + bytes)."""
    package = Path(__file__).resolve().parent
    files = scored_files()
    h = hashlib.sha256()
    for path in files:
        h.update(path.relative_to(package).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def results_record(
    texts: Mapping[str, str],
    scenarios: int,
    split: str,
    root: str | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """What run.json says about its own files: the SHA-256 of each (``score`` refuses a
    file edited after the run) and whether ``--limit`` left scenarios of the split out
    (when the split's size cannot be listed, any ``--limit`` counts as truncating)."""
    try:
        in_split: int | None = len(split_files(split, Path(root) if root else None))
    except ScenarioError:
        in_split = None
    truncated = limit is not None and (in_split is None or scenarios < in_split)
    return {
        "scenarios_in_split": in_split,
        "truncated": truncated,
        "files": {
            name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in texts.items()
        },
    }


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def run_record() -> dict[str, Any]:
    """Commit (``"dirty"`` when the checkout has uncommitted changes, None outside git),
    the code hash, the Python and package versions."""
    head = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if head else None
    return {
        "git_commit": ("dirty" if status else head) if head else None,
        "git_head": head,
        "code_sha256": code_sha256(),
        "python": platform.python_version(),
        "packages": {name: _version(name) for name in RECORDED_PACKAGES},
    }
