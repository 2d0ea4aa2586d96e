"""``bench/ingest_floor.py --profile`` splits the store's time into SQLite's statements and
Python, at a tiny size: the split is what says how far a Python change can move the ratio."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from timing import scaled

BENCH = Path(__file__).parent.parent / "bench"


def test_profile_prints_the_sqlite_share_and_the_bound_without_python(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable, str(BENCH / "ingest_floor.py"), "--records", "300", "--profile",
            "--out", str(tmp_path / "ingest.json"),
        ],
        cwd=BENCH, capture_output=True, text=True, timeout=scaled(300),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    split = re.search(
        r"SQLite statements ([0-9.]+) s of the store's ([0-9.]+) s unprofiled \(([0-9]+)%\); "
        r"with no Python at all: [0-9,]+ items/s, ([0-9.]+)x the floor",
        done.stdout,
    )
    assert split is not None, done.stdout
    assert float(split.group(3)) > 0 and float(split.group(4)) > 0
    assert "sqlite3.Connection" in done.stdout  # the top costs follow
