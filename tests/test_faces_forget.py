"""The face of forget on the command line: without ``--json`` each of ``forget``,
``verify-receipt``, ``diff`` and ``blame`` prints one line a person reads, with ``--json``
the whole value; ``verify-receipt`` exits 1 when the receipt does not verify, so a script
can test it like any command."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.cli import main

HASH = re.compile(r"sha256:[0-9a-f]{64}")


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture
def db(tmp_path: Path) -> Iterator[list[str]]:
    """The README's move, with a cited context given to session chat-7 at u2b."""
    path = str(tmp_path / "memory.db")
    with Memory.open(path) as mem:
        mem.add_event("u1", content="I need help planning a move.")
        mem.add_event("u2", "u1", content="I'm moving to Chengdu next month.")
        mem.add_record("city-1", sources=["u2"], content="moving to Chengdu", key="city")
        mem.add_event("u2b", "u1", content="I'm moving to Hangzhou next month.")
        mem.add_record("city-2", sources=["u2b"], content="moving to Hangzhou", key="city")
        mem.add_event("n1", content="My neighbour is Mrs Zhang from flat 12B.")
        mem.add_record("neighbour", sources=["n1"], content="neighbour Mrs Zhang, flat 12B")
        mem.context("n1", session="chat-1")
        mem.context("u2b", session="chat-7", cite=True)
    yield ["--db", path]


def forget_json(db: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """``forget message n1 --json``, kept in a file as the README says."""
    assert main(["forget", "message", "n1", "--json", *db]) == 0
    kept = tmp_path / "receipt.json"
    kept.write_text(capsys.readouterr().out, encoding="utf-8")
    return kept


def test_forget_prints_one_line_saying_what_went_and_the_receipt_hash(
    db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["forget", "message", "n1", "--dry-run", *db]) == 0
    (dry,) = lines(capsys.readouterr().out)
    assert dry.startswith("would forget message n1: 1 event, 1 record"), dry
    assert "dry run: nothing erased" in dry and HASH.search(dry)

    assert main(["forget", "message", "n1", *db]) == 0
    (said,) = lines(capsys.readouterr().out)
    assert said.startswith("forgot message n1: 1 event, 1 record"), said
    assert "erased" in said and "check clean" in said
    assert "had been shown to 1 session (chat-1)" in said
    shown = HASH.search(said)
    assert shown is not None and said.endswith("receipt " + shown.group())
    assert main(["audit", "--op", "forget", "--json", *db]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["reason"] == shown.group()  # the hash the audit log keeps


def test_verify_receipt_says_verified_in_one_line(
    db: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = forget_json(db, tmp_path, capsys)
    digest = json.loads(kept.read_text())["content_hash"]
    assert main(["verify-receipt", str(kept), *db]) == 0
    (said,) = lines(capsys.readouterr().out)
    assert said == f"receipt {digest} verified: in audit, nothing reappeared, check clean"

    redacted = dict(json.loads(kept.read_text()), key="", fingerprints=[])
    kept.write_text(json.dumps(redacted))
    assert main(["verify-receipt", str(kept), *db]) == 0
    (said,) = lines(capsys.readouterr().out)
    assert said.startswith(f"receipt {digest} verified: in audit, nothing reappeared, no byte")


def test_a_receipt_that_does_not_verify_exits_non_zero_and_says_why(
    db: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = forget_json(db, tmp_path, capsys)
    receipt = json.loads(kept.read_text())
    receipt["counts"]["events"] = 7  # changed after the fact: the hash no longer matches
    kept.write_text(json.dumps(receipt))
    assert main(["verify-receipt", str(kept), *db]) == 1
    (said,) = lines(capsys.readouterr().out)
    assert said.startswith(f"receipt {receipt['content_hash']} NOT verified: ")
    assert "hash does not match" in said

    assert main(["verify-receipt", str(kept), "--json", *db]) == 1  # --json: same status
    answered = json.loads(capsys.readouterr().out)
    assert (answered["ok"], answered["hash_matches"]) == (False, False)


def test_a_receipt_the_audit_log_does_not_know_is_not_verified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A receipt from another store: intact, but no forget of it is in this audit log."""
    first, second = ["--db", str(tmp_path / "a.db")], ["--db", str(tmp_path / "b.db")]
    for store in (first, second):
        assert main(["add-event", "n1", "--content", "Mrs Zhang lives in flat 12B.", *store]) == 0
    capsys.readouterr()
    assert main(["forget", "message", "n1", "--json", *first]) == 0
    kept = tmp_path / "receipt.json"
    kept.write_text(capsys.readouterr().out)
    assert main(["verify-receipt", str(kept), *second]) == 1
    (said,) = lines(capsys.readouterr().out)
    assert "NOT verified" in said
    assert "no forget with this hash in the audit log" in said


def test_each_reason_a_receipt_fails_is_said(
    db: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The line names every failed part of a verification, from the answer's fields."""
    from dataclasses import replace

    from branchmem.cli.lines import receipt_check_line

    kept = forget_json(db, tmp_path, capsys)
    with Memory.open(db[1]) as mem:
        passed = mem.verify_receipt(json.loads(kept.read_text()))
    assert passed.ok and passed.check is not None
    dirty = replace(passed.check, clean=False, locations={"memory.db": 2, "memory.db-wal": 0})
    failed = replace(passed, ok=False, reappeared=("n1", "neighbour"), check=dirty)
    said = receipt_check_line(failed)
    assert said.startswith(f"receipt {passed.content_hash} NOT verified: "), said
    assert "2 ids no longer erased (n1, neighbour)" in said
    assert "check NOT clean: text found in memory.db (2)" in said
    assert "audit" not in said and "hash" not in said.split("NOT verified")[1]


def test_diff_prints_one_line_of_what_switching_changes(
    db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diff", "u2", "u2b", *db]) == 0
    (said,) = lines(capsys.readouterr().out)
    assert said == (
        "u2 -> u2b: only at u2: city-1 (off_path at u2b); only at u2b: city-2 (off_path at "
        "u2); 1 key differs: city (city-1 -> city-2)"
    )
    assert main(["diff", "u2b", "u2b", *db]) == 0
    assert lines(capsys.readouterr().out) == [
        "u2b -> u2b: no difference (both anchors show the same records)"
    ]
    assert main(["diff", "u2", "u2b", "--json", *db]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [e["record"]["id"] for e in found["only_a"]] == ["city-1"]


def test_blame_prints_one_line_per_delivery(
    db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["deliveries", "chat-7", "--json", *db]) == 0
    (given,) = json.loads(capsys.readouterr().out)
    assert main(["blame", "chat-7", str(given["seq"]), *db]) == 0
    (said,) = lines(capsys.readouterr().out)
    assert said.startswith(
        f"session chat-7 delivery {given['seq']} at u2b (tree u1, 2 messages on the path), "
    )
    assert re.search(r", \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: ", said), said
    assert said.endswith(': [1] city-2@1 "moving to Hangzhou" from u2b'), said

    assert main(["erase", "u2b", *db]) == 0  # the text goes; blame names the ids, never it
    capsys.readouterr()
    assert main(["blame", "chat-7", str(given["seq"]), *db]) == 0
    (said,) = lines(capsys.readouterr().out)
    assert said.endswith(": [1] city-2@1 (erased) from u2b (erased)"), said
    assert "Hangzhou" not in said


def test_the_same_lines_and_status_through_the_service(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from branchmem.server import KeyRing, create_app
    from test_server_harness import LiveService

    memory = Memory()
    api_key, _ = KeyRing(memory).create("cli", ["alice"])
    live = LiveService(create_app(memory)).start()
    try:
        remote = ["--url", live.url, "--api-key", api_key, "-n", "alice"]
        assert main(["add-event", "n1", "--content", "Mrs Zhang lives in flat 12B.", *remote]) == 0
        capsys.readouterr()
        assert main(["forget", "message", "n1", "--json", *remote]) == 0
        kept = tmp_path / "receipt.json"
        kept.write_text(capsys.readouterr().out)
        assert main(["verify-receipt", str(kept), *remote]) == 0
        (said,) = lines(capsys.readouterr().out)
        assert " verified: in audit, nothing reappeared, check clean" in said
        receipt = json.loads(kept.read_text())
        receipt["target"] = "n2"
        kept.write_text(json.dumps(receipt))
        assert main(["verify-receipt", str(kept), *remote]) == 1
        assert "NOT verified: its hash does not match" in capsys.readouterr().out
    finally:
        live.stop()
        memory.close()


def test_the_forget_line_names_the_sources_it_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A subject forget kept the messages its records cited: ``check clean`` alone read as
    if the subject were gone, while those messages may still name it."""
    db = str(tmp_path / "kept.db")
    with Memory.open(db) as mem:
        mem.add_event("m1", content="Alice is allergic to peanuts, she told me")
        mem.add_record("f-a", sources=["m1"], content="allergic to peanuts", key="alice:diet")
    assert main(["forget", "subject", "alice", "--db", db]) == 0
    said = capsys.readouterr().out
    assert "check clean" in said and "kept 1 cited source (m1): not checked" in said, said
