"""Fail a run in which fewer tests reported an outcome than were collected (a pytest plugin).

Under pytest-xdist a worker that stops early (an interrupt, a crash it does not report) can
leave collected tests that never ran, and the run may still exit 0: a run once reported
3,204 of 3,245 tests and passed. Here every test that reports an outcome is counted (passed,
failed, skipped, xfailed, xpassed, or an error in setup or teardown; each test once, whatever
its subtests) on the process that sees every report: the xdist controller, or the only
process without xdist. When fewer tests reported than were collected the run fails (exit 1),
and the summary prints both numbers on every run. Loaded by tests/conftest.py; another
session can load it with ``-p all_reported`` (tests/ on ``sys.path``).
"""

from __future__ import annotations

import pytest


class AllReported:
    """Counts the tests that reported an outcome; fails the run when some did not."""

    def __init__(self) -> None:
        self.reported: set[str] = set()
        self.summary: str | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A test reported an outcome: its call ran, or its setup failed or skipped it."""
        if report.when == "call" or report.outcome != "passed":
            self.reported.add(report.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Turn a passing run with unreported tests into a failing one, saying how many."""
        if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return  # interrupted, a usage or internal error: pytest already exits non-zero
        collected = session.testscollected
        reported = len(self.reported)
        self.summary = f"{reported:,} of {collected:,} collected tests reported an outcome"
        if reported < collected and exitstatus == pytest.ExitCode.OK:
            self.summary += f": {collected - reported:,} never did; failing the run"
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.summary is not None:
            terminalreporter.write_line(self.summary)


def pytest_configure(config: pytest.Config) -> None:
    """Only on the process that sees every report: an xdist worker runs part of the tests."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(AllReported(), "all-reported")
