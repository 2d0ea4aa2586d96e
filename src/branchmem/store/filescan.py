"""Count a receipt's fingerprints in files, from a child process.

Closing any descriptor of a file drops every POSIX lock the process holds on that file,
SQLite's own included (sqlite.org/howtocorrupt.html, 2.2): a process that read its live
database, ``-wal`` or ``-shm`` with ordinary file I/O and closed it let the next process to
open the database delete the write-ahead log under it, and acknowledged writes were lost.
So no process that may hold a database open reads its files: a child that holds no lock
does, in chunks (memory bounded by the chunk, whatever the file's size), and answers counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from ..errors import StorageError

CHUNK: Final = 1 << 20
# a safety net only: the child reads ~5 MB a second, so a file under a few GB is done first
TIMEOUT_S: Final = 3600.0
SQLITE_HEADER: Final = b"SQLite format 3\x00"


class FileScan:
    """What the child read: hits per file (None: not there), the SQLite databases among
    the files found under the roots, and what it could not read (file: why)."""

    def __init__(self, hits: dict[str, int | None], sqlite: list[str], errors: dict[str, str]):
        self.hits, self.sqlite, self.errors = hits, sqlite, errors


def scan_files(
    key: str, fingerprints: Iterable[str], paths: Iterable[str] = (), roots: Iterable[str] = ()
) -> FileScan:
    """Count the fingerprints in ``paths`` and in every file under ``roots``, in a child
    process; a child that fails, or runs past ``TIMEOUT_S``, is a ``StorageError`` naming
    what it said."""
    request = {
        "key": key,
        "fingerprints": sorted(fingerprints),
        "paths": [str(path) for path in paths],
        "roots": [str(root) for root in roots],
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", "from branchmem.store.filescan import main; main()"],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise StorageError(f"the file scan ran past {TIMEOUT_S:.0f} s and was stopped") from None
    if done.returncode != 0:
        raise StorageError(f"the file scan failed ({done.returncode}): {done.stderr.strip()}")
    answer = json.loads(done.stdout)
    return FileScan(answer["hits"], answer["sqlite"], answer["errors"])


def _scan(request: dict[str, object]) -> dict[str, object]:
    from branchmem.receipt import HitCounter

    key = str(request["key"])
    fingerprints = frozenset(map(str, request["fingerprints"]))  # type: ignore[call-overload]
    hits: dict[str, int | None] = {}
    sqlite: list[str] = []
    errors: dict[str, str] = {}
    files = [Path(str(path)) for path in request["paths"]]  # type: ignore[attr-defined]
    for root in request["roots"]:  # type: ignore[attr-defined]
        files.extend(sorted(path for path in Path(str(root)).rglob("*") if path.is_file()))
    for file in files:
        counter = HitCounter(key, fingerprints)
        try:
            with file.open("rb") as stream:
                first = stream.read(CHUNK)
                if first.startswith(SQLITE_HEADER):
                    sqlite.append(str(file))
                while first:
                    counter.feed(first)
                    first = stream.read(CHUNK)
        except FileNotFoundError:
            hits[str(file)] = None
            continue
        except OSError as error:
            errors[str(file)] = error.strerror or str(error)
            continue
        hits[str(file)] = counter.hits
    return {"hits": hits, "sqlite": sqlite, "errors": errors}


def main() -> None:
    """The child: a request on standard input, the counts on standard output."""
    json.dump(_scan(json.load(sys.stdin)), sys.stdout)
