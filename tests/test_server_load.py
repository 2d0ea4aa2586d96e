"""Two workers on one PostgreSQL under 50 concurrent clients: no errors, nothing lost,
and a worker killed mid-load costs nothing acknowledged (``bench/load.py``, short runs).

``BRANCHMEM_LOAD_SECONDS`` sets the steady run's length (10 s here; ``make bench`` runs
the full 60 s through the script).
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the service needs the 'server' extra")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from load import run

SECONDS = float(os.environ.get("BRANCHMEM_LOAD_SECONDS", "10"))
CLIENTS = 50


@pytest.fixture
def database(pg_dsn: str) -> Iterator[str]:
    import psycopg

    from pg import with_database

    name = f"bm_load_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield with_database(pg_dsn, name)
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_two_workers_serve_fifty_clients_without_errors_or_loss(database: str) -> None:
    result = run(database, clients=CLIENTS, seconds=SECONDS)
    print("\n" + result.summary())
    assert result.errors == []
    assert result.lost == []
    assert result.acknowledged >= CLIENTS  # every client got writes through
    assert set(result.latencies) == {"add_event", "add_record", "visible", "search"}


def test_killing_a_worker_mid_load_loses_no_acknowledged_write(database: str) -> None:
    result = run(database, clients=CLIENTS, seconds=6, kill_after=2)
    print("\n" + result.summary())
    assert result.errors == []
    assert result.lost == []  # read back from the surviving worker
    assert result.failovers > 0  # clients of the killed worker went on with the other
