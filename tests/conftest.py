import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# the PostgreSQL server fixture (pg_dsn) for every test module; the count of Mem0's own
# tests that reached a BranchMem0 method; a run fails when a collected test never reported
pytest_plugins = ["pg", "mem0_peer_calls", "all_reported"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print how many oracle decisions each backend matched (workers write tallies)."""
    base = terminalreporter.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    tally = Path(base) / "differential-tally"
    if not tally.is_dir():
        return
    totals: dict[str, list[int]] = {}
    for path in sorted(tally.iterdir()):
        backend = path.name.rsplit("-", 1)[0]
        trees, decisions = (int(x) for x in path.read_text().split())
        total = totals.setdefault(backend, [0, 0])
        total[0] += trees
        total[1] += decisions
    for backend, (trees, decisions) in totals.items():
        terminalreporter.write_line(
            f"differential {backend}: {decisions:,} decisions on {trees:,} random trees "
            "matched the oracle"
        )


@pytest.fixture(params=[True, False], ids=["numpy", "no-numpy"])
def with_numpy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """The test twice: as installed, and as if numpy were not (``search.embedding`` then
    sums cosines one by one and sorts a blend whole)."""
    if not request.param:
        from branchmem.search import embedding

        monkeypatch.setattr(embedding, "_NUMPY", [None])
    return bool(request.param)
