"""``BranchMem0.forget``: the forgotten text leaves Mem0's own stores too, and the receipt says so.

A real Mem0 (scripted LLM, hashing embedder, local Qdrant on disk, SQLite history) wrapped by
``BranchMem0``. The receipt's Mem0 section is held against an independent scan: the plain
marker searched byte by byte in every file under Mem0's directory (history database and
Qdrant's files), sharing no code with the receipt's fingerprint check.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("mem0") is None:
    pytest.skip("mem0ai is not installed (extra: branchmem[mem0])", allow_module_level=True)

from branchmem import Memory
from branchmem.integrations.mem0 import AsyncBranchMem0, BranchMem0
from branchmem.integrations.mem0.offline import AnnotatedFact, offline_memory
from branchmem.receipt import Receipt

USER = "alice"
MARKER = "Zanzibarquartz"  # in the forgotten message and the memory Mem0 derives from it
FORGOTTEN = f"My locker code word is {MARKER} since May."
KEPT = "I am allergic to shrimp and crabs."
FACTS = {
    FORGOTTEN: [AnnotatedFact("locker", f"User's locker code word is {MARKER}")],
    KEPT: [AnnotatedFact("allergy", "User is allergic to shrimp and crabs")],
}


# Mem0 2.x keeps each scope's last messages in its history database; 1.0.x does not
SAVED = int(importlib.metadata.version("mem0ai").startswith("2."))


def scan(root: Path) -> dict[str, int]:
    """Occurrences of MARKER per file under ``root``, read as bytes."""
    needle = MARKER.encode()
    return {
        str(file.relative_to(root)): file.read_bytes().count(needle)
        for file in sorted(root.rglob("*"))
        if file.is_file()
    }


def plain_items(wrapper: BranchMem0) -> list[dict[str, Any]]:
    """Mem0's own memories, read without the wrapper (2.x: filters; 1.0.x: user_id)."""
    if wrapper.filters_api:
        found = wrapper.memory.get_all(filters={"user_id": USER})
    else:
        found = wrapper.memory.get_all(user_id=USER)
    return list(found["results"])


def plain_texts(wrapper: BranchMem0) -> set[str]:
    return {str(m["memory"]) for m in plain_items(wrapper)}


@pytest.fixture
def mem0_dir(tmp_path: Path) -> Path:
    return tmp_path / "mem0"


@pytest.fixture
def wrapped(mem0_dir: Path) -> Iterator[BranchMem0]:
    memory = offline_memory(mem0_dir)
    for content, facts in FACTS.items():
        memory.llm.annotate(content, facts)
    # as SQLite builds without SECURE_DELETE do: a deleted row's bytes stay in a free page
    memory.db.connection.execute("PRAGMA secure_delete = OFF")
    store = Memory()
    wrapper = BranchMem0(memory, store)
    store.add_event("root", None, role="user", content="Hello there.")
    for event_id, content in (("secret", FORGOTTEN), ("allergy", KEPT)):
        store.add_event(event_id, "root", role="user", content=content)
        wrapper.add([{"role": "user", "content": content}], event_ids=[event_id], user_id=USER)
    yield wrapper
    wrapper.close()


def memory_id(wrapper: BranchMem0, text: str) -> str:
    return next(str(m["id"]) for m in plain_items(wrapper) if m["memory"] == text)


def test_forget_erases_mem0s_vector_store_rows_and_history(
    wrapped: BranchMem0, mem0_dir: Path
) -> None:
    gone = memory_id(wrapped, f"User's locker code word is {MARKER}")
    assert sum(scan(mem0_dir).values()) > 0  # the history db and Qdrant's file hold it
    assert wrapped.memory.history(gone)
    receipt = wrapped.forget("message", "secret")
    assert scan(mem0_dir) == dict.fromkeys(scan(mem0_dir), 0)
    assert plain_texts(wrapped) == {"User is allergic to shrimp and crabs"}
    assert wrapped.memory.history(gone) == []
    (section,) = receipt.stores
    assert section.name == "mem0"
    assert section.erased["vector_store"] == (gone,)
    # history: Mem0's ADD row and the DELETE row its delete logs; messages: 2.x only
    assert section.counts == {"vector_store": 1, "history": 2, "messages": SAVED}
    assert section.check.clean, section.check
    assert any("qdrant" in location for location in section.check.locations)
    assert any("history.db" in location for location in section.check.locations)
    # the store's own check too: the mirror's meta names the Mem0 id, which the tombstone's
    # record id (mem0:<id>) keeps, so it is not text that went
    assert receipt.check.clean, receipt.check


def test_the_mem0_section_is_covered_by_the_hash_and_the_audit(wrapped: BranchMem0) -> None:
    receipt = wrapped.forget("message", "secret")
    assert receipt.hash_matches
    verified = wrapped.store.verify_receipt(receipt)
    assert verified.hash_matches and verified.in_audit
    again = Receipt.from_json(receipt.to_json())
    assert again == receipt and again.hash_matches
    assert len(receipt.stores) == 1
    forged = again.to_json()
    forged["stores"][0]["counts"]["history"] = 0
    assert not Receipt.from_json(forged).hash_matches


def test_a_dry_run_changes_nothing_in_mem0(wrapped: BranchMem0, mem0_dir: Path) -> None:
    gone = memory_id(wrapped, f"User's locker code word is {MARKER}")
    before = scan(mem0_dir)
    receipt = wrapped.forget("message", "secret", dry_run=True)
    (section,) = receipt.stores
    assert section.erased["vector_store"] == (gone,)
    assert section.counts["history"] == 1 and section.counts["messages"] == SAVED
    assert not section.check.clean  # the text is still there, and the check finds it
    assert scan(mem0_dir) == before
    assert len(plain_texts(wrapped)) == 2
    assert wrapped.memory.history(gone)


def test_a_receipt_without_integrations_hashes_as_before(wrapped: BranchMem0) -> None:
    receipt = wrapped.store.forget("message", "allergy")
    assert receipt.stores == ()
    assert "stores" not in {k for k, v in receipt.to_json().items() if v}
    assert receipt.hash_matches and wrapped.store.verify_receipt(receipt).in_audit


def test_the_async_wrapper_forgets_in_mem0_too(wrapped: BranchMem0, mem0_dir: Path) -> None:
    async_wrapped = AsyncBranchMem0(wrapped.memory, wrapped.store)
    receipt = asyncio.run(async_wrapped.forget("message", "secret"))
    assert receipt.stores[0].check.clean
    assert sum(scan(mem0_dir).values()) == 0


def test_a_receipt_with_a_mem0_section_verifies_over_http(wrapped: BranchMem0) -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from fastapi.testclient import TestClient

    from branchmem.server import KeyRing, create_app

    receipt = wrapped.forget("message", "secret")
    key, _ = KeyRing(wrapped.store).create("me", ["default"])
    http = TestClient(create_app(wrapped.store), raise_server_exceptions=False)
    answer = http.post(
        "/v1/ns/default/receipts/verify",
        json={"receipt": receipt.to_json()},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["hash_matches"] and answer.json()["in_audit"]


def test_verify_receipt_checks_mem0s_files_again(wrapped: BranchMem0, mem0_dir: Path) -> None:
    receipt = wrapped.forget("message", "secret")
    verified = wrapped.verify_receipt(receipt.to_json())  # a receipt read back from JSON too
    assert verified.ok and verified.store.ok
    assert verified.wrapped is not None and verified.wrapped.clean
    assert any("history.db" in location for location in verified.wrapped.locations)
    # the forgotten text comes back into Mem0 (a history database restored from a backup,
    # a memory written again): the store is still clean, Mem0's files are not
    history = wrapped.memory.db.connection
    history.execute("CREATE TABLE restored (text TEXT)")
    history.execute("INSERT INTO restored VALUES (?)", (FORGOTTEN,))
    history.commit()
    assert scan(mem0_dir)["history.db"] > 0  # the independent scan sees it
    again = asyncio.run(AsyncBranchMem0(wrapped.memory, wrapped.store).verify_receipt(receipt))
    assert again.store.ok and again.wrapped is not None and not again.wrapped.clean
    assert not again.ok
    assert sum(again.wrapped.locations.values()) > 0


def test_verify_receipt_finds_what_a_plain_store_forget_left_in_mem0(
    wrapped: BranchMem0,
) -> None:
    receipt = wrapped.store.forget("message", "secret")  # the mirror only: Mem0 keeps the text
    assert wrapped.store.verify_receipt(receipt).ok  # the store's own check cannot see Mem0
    verified = wrapped.verify_receipt(receipt)
    assert verified.store.ok and not verified.ok
    assert verified.wrapped is not None and not verified.wrapped.clean


def test_a_plain_store_forget_leaves_mem0_and_the_wrapper_catches_up(
    wrapped: BranchMem0, mem0_dir: Path
) -> None:
    gone = memory_id(wrapped, f"User's locker code word is {MARKER}")
    wrapped.store.forget("message", "secret")  # the mirror only: Mem0 keeps the text
    assert scan(mem0_dir)["qdrant/collection/memories/storage.sqlite"] > 0
    receipt = wrapped.forget("message", "allergy")
    (section,) = receipt.stores
    assert section.counts["vector_store"] == 2  # this forget's memory and the earlier one
    assert plain_texts(wrapped) == set()
    assert wrapped.memory.history(gone) == []
    found = scan(mem0_dir)
    assert found["qdrant/collection/memories/storage.sqlite"] == 0
    # the earlier message's own text is gone from branchmem, so nothing matches the copy
    # Mem0 2.x saved in its messages table: the documented limit of a forget past the wrapper
    assert found["history.db"] == SAVED


def test_an_in_memory_vector_store_is_named_as_not_checked() -> None:
    memory = offline_memory()  # Qdrant's in-memory client, history in ":memory:"
    for content, facts in FACTS.items():
        memory.llm.annotate(content, facts)
    store = Memory()
    wrapper = BranchMem0(memory, store)
    store.add_event("secret", None, role="user", content=FORGOTTEN)
    wrapper.add([{"role": "user", "content": FORGOTTEN}], event_ids=["secret"], user_id=USER)
    (section,) = wrapper.forget("message", "secret").stores
    assert section.counts["vector_store"] == 1 and plain_texts(wrapper) == set()
    assert section.check.locations == {"history (in-memory rows)": 0}
    assert any("qdrant" in item for item in section.check.unchecked)
    assert any("qdrant" in item for item in section.cannot_clean)
    assert not section.check.clean
