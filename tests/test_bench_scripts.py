"""The benchmark scripts that share ``bench/storage.py``'s store helpers still run, at a tiny
size: a change to a helper's shape once broke two of them, and no other test runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from timing import scaled

BENCH = Path(__file__).parent.parent / "bench"


def run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=BENCH,
        capture_output=True,
        text=True,
        timeout=scaled(300),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_search_runs_in_memory_and_on_sqlite(tmp_path: Path) -> None:
    out = run(
        "search.py", "--sizes", "100", "--backends", "memory,sqlite", "--queries", "2",
        "--out", str(tmp_path / "search.json"),
    )  # fmt: skip
    assert "memory: gated / ungated median" in out and "sqlite: gated / ungated median" in out


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_erase_soak_runs_and_finds_no_residue(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    args = ["--rounds", "3", "--backends", backend, "--out", str(tmp_path / "soak.json")]
    if backend == "postgres":
        args += ["--pg-dsn", request.getfixturevalue("pg_dsn")]
    out = run("erase_soak.py", *args)
    assert "residues 0" in out and "failures 0" in out, out


def test_active_conversations_and_ingest_floor_run(tmp_path: Path) -> None:
    out = run(
        "active_conversations.py", "--large", "30", "--small", "5", "--queries", "5",
        "--rounds", "1", "--out", str(tmp_path / "active.json"),
    )  # fmt: skip
    assert "t(30 active) / t(5 active)" in out
    out = run("ingest_floor.py", "--records", "300", "--out", str(tmp_path / "ingest.json"))
    assert "store / floor:" in out
