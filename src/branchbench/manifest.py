"""The frozen test split: a SHA-256 per file, checked before every run.

Reported results use the test split only; if a probe could be tuned after seeing
results, the figures would mean nothing. The manifest makes any change visible and
makes ``branchbench run`` refuse to start, naming the file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from branchbench.errors import ManifestError
from branchbench.scenario import scenarios_root

FROZEN_SPLIT = "test"
MANIFEST_NAME = "manifest.json"


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


def verify_manifest(root: Path | None = None) -> str:
    """Check every frozen file against the manifest; return the manifest's own SHA-256.

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
    return file_sha256(path)
