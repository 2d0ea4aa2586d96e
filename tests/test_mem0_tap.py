"""``BranchMem0`` observes Mem0's LLM without breaking a ``MagicMock`` LLM (how mem0's own
tests build one): the shadowing pass-through must leave the mock's attribute in place."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import pytest

if importlib.util.find_spec("mem0") is None:
    pytest.skip("mem0ai is not installed (extra: branchmem[mem0])", allow_module_level=True)

from branchmem import Memory
from branchmem.integrations.mem0 import BranchMem0
from branchmem.integrations.mem0.offline import AnnotatedFact, offline_memory


def test_two_adds_through_a_magicmock_llm(tmp_path: Path) -> None:
    mem0_memory: Any = offline_memory(tmp_path / "mem0")
    scripted = mem0_memory.llm
    scripted.annotate("I have a cat.", [AnnotatedFact("pet", "User has a cat")])
    scripted.annotate("I have a dog.", [AnnotatedFact("pet2", "User has a dog")])
    mem0_memory.llm = MagicMock(wraps=scripted)
    store = Memory()
    store.add_event("m1", None, role="user", content="I have a cat.")
    store.add_event("m2", "m1", role="user", content="I have a dog.")
    wrapped = BranchMem0(mem0_memory, store=store)
    message = {"role": "user", "content": "I have a cat."}
    wrapped.add([message], event_ids=["m1"], user_id="u")
    wrapped.add([{"role": "user", "content": "I have a dog."}], event_ids=["m2"], user_id="u")
    assert mem0_memory.llm.generate_response.call_count >= 2
    texts = {m["memory"] for m in wrapped.get_all(anchor="m2", user_id="u")["results"]}
    assert texts == {"User has a cat", "User has a dog"}
