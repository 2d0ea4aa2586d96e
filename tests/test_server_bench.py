"""``bench/service.py --runs``: every run measured afresh, each run's ratios and a verdict.

A small store (one conversation) and a few rounds: what is checked is the shape of the
report, not the figures (which depend on the machine).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from timing import scaled

pytest.importorskip("uvicorn", reason="the service needs the 'server' extra")
pytest.importorskip("httpx", reason="the client needs the 'client' extra")

BENCH = Path(__file__).parent.parent / "bench" / "service.py"


def small_run(out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """``service.py`` on one conversation, 30 rounds after 5 untimed, JSON to ``out``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, str(BENCH), "--records", "150", "--rounds", "30", "--warmup", "5",
         *options, "--out", str(out)],
        capture_output=True, text=True, timeout=scaled(300), env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_runs_are_reported_one_by_one_with_a_verdict(tmp_path: Path) -> None:
    out = tmp_path / "service.json"
    done = small_run(out, "--runs", "2")
    assert "30 interleaved rounds after 5 untimed" in done.stdout
    assert "run 1/2" in done.stdout and "run 2/2" in done.stdout
    data = json.loads(out.read_text())
    assert data["rounds"] == 30 and data["warmup"] == 5 and len(data["runs"]) == 2
    worst = []
    for run in data["runs"]:
        ops = {row["operation"]: row for row in run["rows"]}
        assert set(ops) == {"visible", "search"}
        worst.append(max(row["ratio_p99"] for row in ops.values()))
    assert data["worst_p99_ratio_per_run"] == worst
    assert data["all_within_goal"] == all(ratio <= 1.5 for ratio in worst)
    assert data["rows"] == data["runs"][worst.index(max(worst))]["rows"]
    verdict = "yes" if data["all_within_goal"] else "no"
    assert done.stdout.rstrip().endswith(f"all 2 <= 1.5: {verdict}")


def test_the_hop_is_timed_in_the_same_rounds(tmp_path: Path) -> None:
    """``--hop``: the same calls in a second process over a bare socket, a third side of
    every round, checked against the embedded answer and reported beside the service;
    ``--cpus`` pins every process (the header and the JSON say so)."""
    out = tmp_path / "service.json"
    cpu = str(min(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else None
    pinned = ["--cpus", cpu] if cpu is not None else []
    done = small_run(out, "--runs", "1", "--hop", *pinned)
    data = json.loads(out.read_text())
    assert data["hop"] is True and data["cpus"] == cpu
    if cpu is not None:
        assert done.stdout.splitlines()[0].endswith(f"every process pinned to CPUs {cpu}")
    hop_lines = done.stdout.split("the hop (the same call in another process", 1)[1]
    for row in data["rows"]:
        assert 0 < row["hop_p50_ms"] <= row["hop_p99_ms"]
        assert row["hop_ratio_p99"] == row["hop_p99_ms"] / row["embedded_p99_ms"]
        assert row["hop_cpu_ms"] > 0
        assert f"{row['operation']} {row['hop_ratio_p99']:.2f}x" in done.stdout
        assert f"{row['hop_ratio_p99']:>5.2f}x; CPU {row['hop_cpu_ms']:.2f} ms" in hop_lines


def test_compared_servers_are_timed_in_the_same_rounds(tmp_path: Path) -> None:
    """``--compare no-direct``: a server answering every read through its FastAPI route, a
    side of every round, checked against the embedded answer and reported beside the
    service with its own ratios and CPU."""
    out = tmp_path / "service.json"
    done = small_run(out, "--compare", "no-direct")
    data = json.loads(out.read_text())
    assert data["compare"] == ["no-direct"]
    assert done.stdout.splitlines()[0].endswith("compared with no-direct")
    lines = done.stdout.split("no-direct (every read through its FastAPI route", 1)[1]
    for row in data["rows"]:
        assert 0 < row["no-direct_p50_ms"] <= row["no-direct_p99_ms"]
        assert row["no-direct_ratio_p99"] == row["no-direct_p99_ms"] / row["embedded_p99_ms"]
        assert row["no-direct_client_cpu_ms"] > 0
        assert f"{row['no-direct_ratio_p99']:>5.2f}x; CPU" in lines
    ratios = ", ".join(
        f"{row['operation']} {row['no-direct_ratio_p99']:.2f}x" for row in data["rows"]
    )
    assert f"; no-direct's {ratios}" in done.stdout
