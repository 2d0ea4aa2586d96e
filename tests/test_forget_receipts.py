"""A forget receipt's byte check, held against an independent scan of the same storage.

The receipt looks for keyed fingerprints in its namespace's rows of what went
(``check_rows``), and the operator's ``scan_store`` in every file, table and statistic;
these tests look for the plain marker with the scans of ``test_erasure_residue`` (file
bytes, every row of every table, ``pg_stats``), which share no code with either. They must
agree: clean when the text is gone, not clean while a copy is left.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.cli import main
from branchmem.errors import InvalidInput, NotFoundError
from branchmem.receipt import WINDOW, ByteCheck, Receipt, StoreSection
from branchmem.store import CleanupPending
from branchmem.testing import chengdu
from test_erasure_residue import MARKER, file_hits, pg_hits
from timing import scaled


def write_marked(mem: Memory) -> None:
    """A branch below a2 whose messages and records carry MARKER in every caller field."""
    chengdu(mem)
    meta = {"note": f"meta {MARKER} and more words"}
    mem.add_event("s", "a2", role=f"role {MARKER}", content=f"I said {MARKER} here", meta=meta)
    mem.add_event("s2", "s", content=f"and below it {MARKER} again")
    mem.add_record(
        "f-s", sources=["s"], content=f"fact {MARKER} stated", kind=f"kind {MARKER}",
        key=f"key {MARKER} key", scope=f"scope {MARKER} scope", meta=meta,
    )  # fmt: skip
    mem.add_record("sum", sources=["f-s", "f-planning"], content=f"summary {MARKER} of it")


# -- SQLite ------------------------------------------------------------------------------
def test_sqlite_receipt_agrees_with_a_scan_of_the_files(tmp_path: Path) -> None:
    path = tmp_path / "forget.db"
    with Memory.open(path) as mem:
        write_marked(mem)
        dry = mem.forget("branch", "s", dry_run=True)
        assert sum(file_hits(path, MARKER).values()) > 0
        assert not dry.check.clean and dry.check.locations["events"] > 0
        assert dry.check.locations["revisions"] > 0 and dry.check.locations["tree_keys"] > 0
        assert not mem.scan_store(dry).clean
        receipt = mem.forget("branch", "s")
        assert receipt.erased["events"] == ("s", "s2")
        assert receipt.erased["records"] == ("f-s", "sum")
        assert file_hits(path, MARKER) == {"forget.db": 0, "forget.db-wal": 0, "forget.db-shm": 0}
        assert receipt.check.clean, receipt.check
        assert {"events", "revisions", "audit"} <= set(receipt.check.locations)
        scanned = mem.scan_store(receipt)
        assert scanned.clean, scanned
        assert set(scanned.locations) == {"forget.db", "forget.db-wal", "forget.db-shm"}
        assert mem.verify_receipt(receipt).ok
    with Memory.open(path) as mem:  # later, from the file alone
        assert mem.verify_receipt(Receipt.from_json(receipt.to_json())).ok


def test_a_receipt_says_so_while_a_reader_pins_the_erased_pages(tmp_path: Path) -> None:
    path = tmp_path / "pinned.db"
    with Memory.open(path) as mem:
        write_marked(mem)
        for i in range(20):  # copies of the marked pages in many WAL frames
            mem.add_record(f"other{i}", sources=["u2"], content=f"filler {i}")
        reader = sqlite3.connect(path, isolation_level=None)  # another process's reader
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM revisions").fetchone()
        with pytest.warns(CleanupPending):
            receipt = mem.forget("branch", "s")
        assert "read transaction" in (receipt.cleanup_pending or "")
        assert file_hits(path, MARKER)["pinned.db-wal"] > 0  # the scan sees the copy ...
        assert mem.scan_store(receipt).locations["pinned.db-wal"] > 0  # ... so does the operator's
        assert receipt.check.clean  # the rows are clean; the receipt says the WAL is not:
        assert receipt.cleanup_pending
        pinned = mem.verify_receipt(receipt)
        assert not pinned.ok and pinned.check is not None and not pinned.check.clean, pinned
        assert any("write-ahead log" in line for line in pinned.check.unchecked)
        reader.execute("COMMIT")
        reader.close()
        assert mem.finish_cleanup() is None
        assert sum(file_hits(path, MARKER).values()) == 0
        assert mem.scan_store(receipt).clean
        later = mem.verify_receipt(receipt)
        assert later.ok and later.check is not None and later.check.clean, later


# -- PostgreSQL --------------------------------------------------------------------------
@pytest.fixture
def pg_url(pg_dsn: str) -> Iterator[str]:
    from pg import fresh_database

    with fresh_database(pg_dsn, "bm_forget") as url:
        yield url


def test_postgres_receipt_agrees_with_a_scan_of_rows_and_statistics(pg_url: str) -> None:
    import psycopg

    with Memory.open(pg_url) as mem:
        write_marked(mem)
        for i in range(20):  # enough distinct text for a histogram
            mem.add_event(f"x{i}", "a2", content=f"another line {i}")
        with psycopg.connect(pg_url, autocommit=True) as db:
            db.execute("ANALYZE")  # what autovacuum does while the text is there
        assert "pg_stats events.content" in pg_hits(pg_url, MARKER)
        dry = mem.forget("conversation", "u1", dry_run=True)
        assert dry.check.locations["events"] > 0
        assert mem.scan_store(dry).locations["pg_stats"] > 0
        receipt = mem.forget("conversation", "u1")
        assert "x3" in receipt.erased["events"]
        assert pg_hits(pg_url, MARKER) == {}
        assert receipt.check.clean, receipt.check
        assert {"events", "revisions", "audit"} <= set(receipt.check.locations)
        scanned = mem.scan_store(receipt)
        assert scanned.clean and {"events", "revisions", "audit", "pg_stats"} <= set(
            scanned.locations
        ), scanned
        assert any("WAL" in line for line in receipt.cannot_clean)
        assert any("index" in line for line in receipt.cannot_clean)
        assert mem.verify_receipt(receipt).ok


# -- what a receipt keeps ----------------------------------------------------------------
def test_a_receipt_keeps_keyed_fingerprints_never_the_text() -> None:
    mem = Memory()
    write_marked(mem)
    first = mem.forget("branch", "s", dry_run=True)
    second = mem.forget("branch", "s", dry_run=True)
    for receipt in (first, second):
        assert MARKER not in json.dumps(receipt.to_json())
        assert receipt.fingerprints and receipt.key
    assert not set(first.fingerprints) & set(second.fingerprints)  # one key per receipt
    assert first.redacted().fingerprints == () and first.redacted().hash_matches


def test_the_store_keeps_the_receipts_hash_not_its_key_or_fingerprints(tmp_path: Path) -> None:
    path = tmp_path / "kept.db"
    with Memory.open(path) as mem:
        write_marked(mem)
        receipt = mem.forget("branch", "s")
    stored = b"".join(Path(f"{path}{suffix}").read_bytes() for suffix in ("", "-wal")
                      if Path(f"{path}{suffix}").exists())  # fmt: skip
    assert receipt.content_hash.encode() in stored  # the audit keeps the hash
    assert receipt.key.encode() not in stored
    assert not [fp for fp in receipt.fingerprints if fp.encode() in stored]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_text_shorter_than_a_window_is_fingerprinted_whole_and_seen(
    tmp_path: Path, backend: str
) -> None:
    """A one-word field had no fingerprint, so a receipt said clean with it still there."""
    mem = Memory() if backend == "memory" else Memory.open(tmp_path / "short.db")
    with mem:
        mem.add_event("e", content="asthma", meta={"dx": "asthma"})
        mem.add_record("f", sources=["e"], content="asthma", key="diagnosis")
        assert len(b"asthma") < WINDOW
        dry = mem.forget("message", "e", dry_run=True)
        assert dry.fingerprints and dry.short_fields == 0
        assert dry.check.locations["events"] >= 2  # content, meta's value
        assert dry.check.locations["revisions"] >= 2 and not dry.check.clean
        receipt = mem.forget("message", "e")
        assert receipt.check.clean and mem.verify_receipt(receipt).ok


def test_a_chinese_message_is_fingerprinted_and_found(tmp_path: Path) -> None:
    path = tmp_path / "zh.db"
    text = "我下个月要搬到成都去，想了解一下那边的租房情况"
    with Memory.open(path) as mem:
        mem.add_event("z", content=text)
        dry = mem.forget("message", "z", dry_run=True)
        assert dry.fingerprints and sum(dry.check.locations.values()) > 0
        assert mem.forget("message", "z").check.clean
        assert path.read_bytes().count(text[4:10].encode()) == 0


# -- the command line --------------------------------------------------------------------
def test_the_cli_writes_a_receipt_that_verify_receipt_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "cli.db")
    with Memory.open(db) as mem:
        write_marked(mem)
    assert main(["forget", "branch", "s", "--dry-run", "--db", db, "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["dry_run"] and dry["erased"]["events"] == ["s", "s2"]
    assert main(["forget", "branch", "s", "--db", db, "--json"]) == 0
    receipt = tmp_path / "receipt.json"
    receipt.write_text(capsys.readouterr().out, encoding="utf-8")
    assert main(["verify-receipt", str(receipt), "--db", db, "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["ok"] and checked["in_audit"], checked
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["verify-receipt", str(tmp_path / "none.json"), "--db", db]) != 0
    assert "none.json" in capsys.readouterr().err


# -- the service -------------------------------------------------------------------------
def test_the_service_finishes_a_forget_that_a_reader_held_up(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from fastapi.testclient import TestClient

    from branchmem.server import create_app

    path = tmp_path / "served.db"
    mem = Memory.open(path)
    app = create_app(mem, auth=False)
    try:
        with TestClient(app) as http:
            write_marked(mem)
            for i in range(20):
                mem.add_record(f"other{i}", sources=["u2"], content=f"filler {i}")
            reader = sqlite3.connect(path, isolation_level=None)
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM revisions").fetchone()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CleanupPending)
                answer = http.post("/v1/ns/default/forget", json={"kind": "branch", "id": "s"})
            assert answer.status_code == 200, answer.text
            receipt = answer.json()
            assert receipt["cleanup_pending"] and receipt["check"]["clean"]
            held = http.post("/v1/ns/default/receipts/verify", json={"receipt": receipt})
            assert held.status_code == 200 and not held.json()["ok"], held.text
            reader.execute("COMMIT")
            reader.close()
            deadline = time.monotonic() + scaled(10)
            while sum(file_hits(path, MARKER).values()) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert sum(file_hits(path, MARKER).values()) == 0
            checked = http.post("/v1/ns/default/receipts/verify", json={"receipt": receipt})
            assert checked.status_code == 200, checked.text
            assert checked.json()["ok"], checked.json()
    finally:
        mem.close()


@pytest.mark.parametrize("key", ["zz" * 32, "not hex", "ab" * 65])
def test_a_receipt_with_a_key_forget_could_not_have_written_is_refused(
    tmp_path: Path, key: str
) -> None:
    """A hand-edited key (not hex, or longer than BLAKE2b takes) is an InvalidInput naming
    the field, read back or verified as an object; it was a ValueError, a 500 over HTTP."""
    with Memory.open(tmp_path / "k.db") as mem:
        write_marked(mem)
        receipt = mem.forget("branch", "s")
        with pytest.raises(InvalidInput, match="receipt: key"):
            Receipt.from_json({**receipt.to_json(), "key": key})
        with pytest.raises(InvalidInput, match="receipt: key"):
            mem.verify_receipt(dataclasses.replace(receipt, key=key))


# -- no tenant learns another's bytes ------------------------------------------------------
SECRET = "patient 4471 was diagnosed with tuberculosis in March"


def forget_a_guess(mem: Memory, guess: str) -> list[dict[str, object]]:
    """What tenant a sees when it writes a guess, forgets it (dry run, then real) and
    verifies the receipts, with the fields a fresh key makes different every time cut."""
    mem.add_event("g1", content=guess, meta={"note": guess}, namespace="a")
    mem.add_record("f-g", sources=["g1"], content=guess, key=guess[:40], namespace="a")
    seen = []
    for dry_run in (True, False):
        receipt = mem.forget("message", "g1", dry_run=dry_run, namespace="a")
        checked = mem.verify_receipt(receipt, namespace="a")
        doctored = dataclasses.replace(receipt, fingerprints=())
        refused = mem.verify_receipt(doctored, namespace="a")
        for item in (receipt, checked, refused):
            seen.append(_without_randomness(item))
    return seen


def _without_randomness(item: object) -> dict[str, object]:
    plain = json.loads(json.dumps(dataclasses.asdict(item), default=str))  # type: ignore[call-overload]
    for name in ("key", "fingerprints", "fingerprint_digest", "content_hash", "time"):
        plain.pop(name, None)
    for check in (plain.get("check"),):
        if isinstance(check, dict):
            check.pop("time", None)
    return plain


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_tenant_sees_the_same_receipts_whatever_another_tenant_holds(
    tmp_path: Path, backend: str
) -> None:
    """A right guess of another tenant's text gave 4 hits and a wrong one 1: the check
    scanned the whole store. Now it reads the tenant's own rows of what went."""
    worlds = []
    for world in ("alone", "shared"):
        mem = Memory() if backend == "memory" else Memory.open(tmp_path / f"{world}.db")
        with mem:
            if world == "shared":
                mem.add_event("g1", content=SECRET, meta={"note": SECRET}, namespace="b")
                mem.add_record("f-g", sources=["g1"], content=SECRET, key=SECRET[:40],
                               namespace="b")  # fmt: skip
            worlds.append(forget_a_guess(mem, SECRET))
            if world == "shared":
                assert mem.get_event("g1", namespace="b").content == SECRET
    assert worlds[0] == worlds[1]
    real, checked, refused = worlds[0][3:]
    assert real["check"]["clean"] and checked["ok"] and checked["check"]["clean"]
    assert not refused["ok"] and refused["check"] is None and not refused["in_audit"]


def test_a_receipt_not_in_the_audit_gets_no_byte_check() -> None:
    """A dry run's receipt, or one whose fingerprints were chosen by its holder, is never
    checked: its fingerprints are not a forget's."""
    mem = Memory()
    write_marked(mem)
    dry = mem.forget("branch", "s", dry_run=True)
    checked = mem.verify_receipt(dry)
    assert not checked.in_audit and checked.check is None and not checked.ok
    real = mem.forget("branch", "s")
    chosen = dataclasses.replace(real, fingerprints=dry.fingerprints, key=dry.key)
    checked = mem.verify_receipt(chosen)
    assert not checked.hash_matches and checked.check is None and not checked.ok


def test_forget_with_hands_the_erased_text_to_the_callers_store_and_hashes_its_section() -> None:
    """``forget_with``: the caller's cleaner runs after the erase with the erased text, and
    the section it returns is in the receipt, its hash and the audit entry."""
    mem = Memory()
    write_marked(mem)
    seen: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def also(receipt: Receipt, texts: tuple[str, ...]) -> tuple[StoreSection, ...]:
        seen.append((receipt.erased["events"], texts))
        check = ByteCheck("outside", {"rows": 0}, (), True, time.time())
        return (StoreSection("outside", {"rows": ("r1",)}, {"rows": 1}, check, ()),)

    receipt = mem.forget_with("branch", "s", also=also)
    assert seen[0][0] == ("s", "s2")
    assert any(MARKER in text for text in seen[0][1])
    assert [section.name for section in receipt.stores] == ["outside"]
    assert receipt.hash_matches and mem.verify_receipt(receipt).in_audit
    tampered = dataclasses.replace(receipt, stores=())
    assert not tampered.hash_matches


# -- a forget run again, a forget that finds nothing ---------------------------------------
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_forget_run_again_returns_the_receipt_it_made(tmp_path: Path, backend: str) -> None:
    mem = Memory() if backend == "memory" else Memory.open(tmp_path / "again.db")
    with mem:
        write_marked(mem)
        first = mem.forget("branch", "s")
        again = mem.forget("branch", "s")
        assert again.content_hash == first.content_hash and again == first.redacted()
        assert again.erased["events"] == ("s", "s2")
        assert mem.verify_receipt(again).ok and mem.verify_receipt(first).ok
        with pytest.raises(NotFoundError, match="names it"):  # its key went with it
            mem.forget("subject", f"key {MARKER} key")


def test_a_forget_that_finds_nothing_says_what_it_looked_for() -> None:
    mem = Memory()
    write_marked(mem)
    with pytest.raises(NotFoundError, match=r"forget subject 'key QX-typo'.*names it"):
        mem.forget("subject", "key QX-typo")
    mem.erase("s2")
    with pytest.raises(NotFoundError, match=r"erased already.*no receipt"):
        mem.forget("message", "s2")


# -- a crash in the middle of a forget -------------------------------------------------
FORGET_IN_A_CHILD = """
import sys
from branchmem import Memory
mem = Memory.open(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
mem.forget("conversation", "c0")
print("done", flush=True)
"""


def test_a_forget_killed_at_any_moment_leaves_nothing_or_its_receipt(tmp_path: Path) -> None:
    """A SIGKILL between the erase's commit and its audit entry left no receipt for good (a
    re-run answered all counts 0). The plan, the erase and the receipt now commit together:
    after a kill at any moment of the forget (spread over the time one takes here), a re-run
    returns a receipt in the audit that lists it all."""
    took = _forget_in_a_child(tmp_path / "timed.db", None)
    for attempt, share in enumerate((0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 1.0)):
        path = tmp_path / f"killed{attempt}.db"
        _forget_in_a_child(path, took * share)
        with Memory.open(path) as mem:
            receipt = mem.forget("conversation", "c0")
            assert receipt.counts["events"] == 300 and receipt.counts["records"] == 100
            checked = mem.verify_receipt(receipt)
            assert checked.in_audit and not checked.reappeared, checked


def _forget_in_a_child(path: Path, kill_after: float | None) -> float:
    """Run the forget in a child and kill it ``kill_after`` seconds after it starts (None:
    let it finish); how long it ran."""
    import subprocess
    import sys

    with Memory.open(path) as mem:
        mem.add_events([{"id": "c0", "content": "the start of it all, said once"}] + [
            {"id": f"c{i}", "parent": f"c{i - 1}", "content": f"line {i} of a long talk"}
            for i in range(1, 300)
        ])  # fmt: skip
        mem.add_records([
            {"id": f"f{i}", "sources": [f"c{i}"], "content": f"fact {i} from the talk"}
            for i in range(0, 300, 3)
        ])  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-c", FORGET_IN_A_CHILD, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "ready"
    started = time.monotonic()
    child.stdin.write("go\n")
    child.stdin.flush()
    if kill_after is None:
        assert child.stdout.readline().strip() == "done"
    else:
        time.sleep(kill_after)
        child.kill()
    child.wait()
    return time.monotonic() - started


# -- the file scan, in a child, in chunks -------------------------------------------------
def test_a_stream_in_chunks_counts_what_one_read_counts() -> None:
    """The operator's scan reads files a chunk at a time (memory bounded by the chunk): a
    window that straddles two chunks is counted once, with the byte before it seen."""
    import random

    from branchmem.receipt import HitCounter, count_hits, new_key, text_fingerprints

    rng = random.Random(7)
    key = new_key()
    text = "我下个月要搬到成都去 and then to Hangzhou, a city of lakes and tea"
    prints = frozenset(text_fingerprints(key, text))
    words = ["tea", "lakes", text, "zz", "成都", "\x00\x01", " "]
    data = "".join(rng.choice(words) for _ in range(400)).encode()
    whole = count_hits(key, prints, data)
    assert whole > 0
    for _ in range(20):
        counter = HitCounter(key, prints)
        at = 0
        while at < len(data):
            step = rng.choice([1, 3, 15, 16, 17, 40, 1000])
            counter.feed(data[at : at + step])
            at += step
        assert counter.hits == whole


def test_the_file_scan_runs_in_a_child_and_leaves_this_process_locks(tmp_path: Path) -> None:
    """A scan of a live store's files from the process that holds it open, then another
    process's open and close: the WAL stays, and a write after it is kept."""
    import subprocess
    import sys

    path = tmp_path / "live.db"
    with Memory.open(path) as mem:
        write_marked(mem)
        receipt = mem.forget("message", "s2", dry_run=True)
        wal = Path(f"{path}-wal")
        assert wal.exists()
        inode = wal.stat().st_ino
        assert sum(mem.scan_store(receipt).locations.values()) > 0
        mem.verify_receipt(receipt)
        subprocess.run(  # another process opens and closes the file
            [sys.executable, "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
             "c.execute('select count(*) from events').fetchone(); c.close()", str(path)],
            check=True,
        )  # fmt: skip
        assert wal.exists() and wal.stat().st_ino == inode  # not deleted under us
        mem.add_event("after", "s2", content="written after the other process closed")
    with Memory.open(path) as mem:
        assert mem.get_event("after").content.startswith("written after")


def test_the_cli_scan_store_reads_a_local_store_and_says_what_it_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "scan.db")
    with Memory.open(db) as mem:
        write_marked(mem)
    assert main(["forget", "branch", "s", "--dry-run", "--db", db, "--json"]) == 0
    receipt = tmp_path / "dry.json"
    receipt.write_text(capsys.readouterr().out, encoding="utf-8")
    assert main(["scan-store", str(receipt), "--db", db]) == 1  # the text is still there
    assert "NOT clean" in capsys.readouterr().out
    assert main(["forget", "branch", "s", "--db", db, "--json"]) == 0
    receipt.write_text(capsys.readouterr().out, encoding="utf-8")
    assert main(["scan-store", str(receipt), "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["clean"]
