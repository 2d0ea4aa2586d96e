"""A run whose collected tests did not all report an outcome fails (tests/all_reported.py).

Each test runs a tiny pytest session in a subprocess, with and without xdist: one of its
tests is dropped without a report (its run protocol is taken over by a hook that reports
nothing, as a worker stopping early leaves it), and the session must exit non-zero, printing
how many tests reported; without the plugin the same session exits 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from timing import scaled

TESTS = Path(__file__).parent

SESSION = """
def test_one():
    pass

def test_two_goes_unreported():
    pass

def test_three_skips():
    import pytest
    pytest.skip("a skip is an outcome")
"""
# takes over the run protocol of one test and reports nothing for it
DROP_ONE = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if item.name == "test_two_goes_unreported":
        return True
    return None
"""


def run(folder: Path, *args: str, plugin: bool = True) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
    environment["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # seconds of imports each, not needed
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(folder)]
    if plugin:
        command[3:3] = ["-p", "all_reported"]
    return subprocess.run(
        command, cwd=folder, env=environment, capture_output=True, text=True, timeout=scaled(120)
    )


@pytest.fixture
def session(tmp_path: Path) -> Path:
    (tmp_path / "test_tiny.py").write_text(SESSION)
    (tmp_path / "conftest.py").write_text(DROP_ONE)
    return tmp_path


def test_an_unreported_test_fails_a_run_that_would_pass(session: Path) -> None:
    without = run(session, plugin=False)
    assert without.returncode == 0, without.stdout  # the gap the plugin closes
    result = run(session)
    assert result.returncode == 1, result.stdout
    assert "2 of 3 collected tests reported an outcome: 1 never did; failing" in result.stdout


def test_an_unreported_test_fails_an_xdist_run(session: Path) -> None:
    pytest.importorskip("xdist")
    result = run(session, "-p", "xdist", "-n", "2")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 of 3 collected tests reported an outcome: 1 never did; failing" in result.stdout


def test_a_run_where_every_test_reported_passes(session: Path) -> None:
    (session / "conftest.py").write_text("")
    result = run(session)
    assert result.returncode == 0, result.stdout
    assert "3 of 3 collected tests reported an outcome" in result.stdout


def test_subtests_and_items_sharing_an_id_neither_hide_nor_invent_a_gap(session: Path) -> None:
    """Three subtests' reports do not stand in for the dropped test; an item collected twice
    under one id (as schemathesis collects one per API operation) counts twice."""
    (session / "test_more.py").write_text(
        "def test_with_subtests(subtests):\n"
        "    for n in range(3):\n"
        "        with subtests.test(n=n):\n"
        "            assert n < 3\n"
    )
    result = run(session)
    assert result.returncode == 1, result.stdout
    assert "3 of 4 collected tests reported an outcome: 1 never did; failing" in result.stdout
    assert "never reported: test_tiny.py::test_two_goes_unreported" in result.stdout
    (session / "conftest.py").write_text(
        "def pytest_collection_modifyitems(items):\n    items.append(items[0])\n"
    )
    result = run(session)
    assert result.returncode == 0, result.stdout
    assert "5 of 5 collected tests reported an outcome" in result.stdout
