"""``BranchMem0`` over a Mem0 whose vector store is pgvector on a real PostgreSQL server (the
store ``bench/mem0_add.py`` times, since local Qdrant's ``add`` grows with the memories):
the wrapper gates the same way whatever vector store Mem0 runs on."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import pytest

if importlib.util.find_spec("mem0") is None:
    pytest.skip("mem0ai is not installed (extra: branchmem[mem0])", allow_module_level=True)

os.environ.setdefault("MEM0_TELEMETRY", "False")  # before mem0 reads it on import

from branchmem.integrations.mem0 import BranchMem0
from branchmem.integrations.mem0.offline import offline_memory, pgvector_store
from pg import fresh_database
from test_mem0_follow import FACTS, edited, readme_chat, scripted, texts


@pytest.fixture
def on_pgvector(pg_dsn: str) -> Iterator[Any]:
    """A fresh offline Mem0 (scripted LLM, hashing embedder) storing its vectors in pgvector."""
    with fresh_database(pg_dsn, "mem0") as url:
        memory = offline_memory(vector_store=pgvector_store(url, "memories"))
        for content, facts in FACTS.items():
            memory.llm.annotate(content, facts)
        yield memory
        memory.close()


def test_the_readme_chat_loop_answers_alike_on_pgvector_and_on_qdrant(on_pgvector: Any) -> None:
    assert readme_chat(BranchMem0(on_pgvector)) == readme_chat(BranchMem0(scripted()))


def test_an_edited_message_leaves_its_memory_behind_on_pgvector(on_pgvector: Any) -> None:
    memory = BranchMem0(on_pgvector)
    edited(memory)
    found = texts(memory.search("What does the user drink?", filters={"user_id": "alice"}))
    assert "User likes tea" not in found
    # Mem0's own pgvector table still holds the abandoned branch's memory; the gate hides it
    stored = on_pgvector.get_all(filters={"user_id": "alice"})["results"]
    assert "User likes tea" in {str(m["memory"]) for m in stored}
