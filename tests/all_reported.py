"""Fail a run in which fewer tests reported an outcome than were collected (a pytest plugin).

Under pytest-xdist a worker that stops early (an interrupt, a crash it does not report) can
leave collected tests that never ran, and the run may still exit 0: a run once reported
3,204 of 3,245 tests and passed. Here every test that reports an outcome is counted (passed,
failed, skipped, xfailed, xpassed, or an error in setup; subtests and teardown errors add no
test) on the process that sees every report: the xdist controller, or the only
process without xdist. When fewer tests reported than were collected the run fails (exit 1),
and the summary prints both numbers on every run. Loaded by tests/conftest.py; another
session can load it with ``-p all_reported`` (tests/ on ``sys.path``).

Tests are counted by node id with multiplicity: schemathesis collects one item per API
operation, all under the same id (tests/test_server_fuzz.py: 42 items, one id), so a set of
ids would miss 41 tests that did run.
"""

from __future__ import annotations

from collections import Counter

import pytest


class AllReported:
    """Counts the tests that reported an outcome; fails the run when some did not."""

    def __init__(self) -> None:
        self.reported: Counter[str] = Counter()
        self.collected: Counter[str] = Counter()
        self.summary: str | None = None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = Counter(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        """Under xdist the controller collects nothing itself: each worker sends its ids."""
        self.collected = Counter(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """One report per test is its outcome: the call's, or a setup's that failed or
        skipped it (a subtest's report or a teardown error is a second word on a test)."""
        if "subtest" in type(report).__name__.lower():
            return
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self.reported[report.nodeid] += 1

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Turn a passing run with unreported tests into a failing one, saying how many."""
        if session.config.option.collectonly or exitstatus not in (
            pytest.ExitCode.OK,
            pytest.ExitCode.TESTS_FAILED,
        ):
            return  # nothing was to run; or interrupted, a usage or internal error (non-zero)
        collected = session.testscollected
        reported = sum(self.reported.values())
        missing = list((self.collected - self.reported).elements())
        self.summary = f"{reported:,} of {collected:,} collected tests reported an outcome"
        if (missing or reported < collected) and exitstatus == pytest.ExitCode.OK:
            self.summary += f": {max(len(missing), collected - reported):,} never did; failing"
            self.summary += "".join(f"\n  never reported: {nodeid}" for nodeid in missing[:10])
            if len(missing) > 10:
                self.summary += f"\n  ... and {len(missing) - 10:,} more"
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.summary is not None:
            terminalreporter.write_line(self.summary)


def pytest_configure(config: pytest.Config) -> None:
    """Only on the process that sees every report: an xdist worker runs part of the tests."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(AllReported(), "all-reported")
