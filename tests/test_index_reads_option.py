"""When ``visible()`` reads a tree's key index instead of the anchor's path is one Memory's
option (``path_events_per_entry``), not a module global: the answer is the same either way,
only the work differs, and changing one Memory leaves the others as they were made."""

from __future__ import annotations

from branchmem import Memory
from branchmem._core.questions import Facts, Questions
from branchmem._engine.views import PATH_EVENTS_PER_ENTRY
from branchmem.store.inmemory import InMemoryStore
from branchmem.testing.differential import index_reads


class IndexCounting(InMemoryStore):
    """The in-memory store, counting the tree-index reads ``visible()`` makes."""

    def __init__(self) -> None:
        super().__init__()
        self.index_reads = 0

    def answer(self, namespace: str, questions: Questions) -> Facts:
        self.index_reads += questions.index_tree is not None
        return super().answer(namespace, questions)


def agent(mem: Memory, turns: int = 60) -> str:
    """One path; each turn rewrites one of five keys, so most revisions are superseded."""
    mem.add_events([{"id": f"e{i}", "parent": f"e{i - 1}" if i else None} for i in range(turns)])
    for i in range(turns):
        mem.add_record(f"w{i}", sources=[f"e{i}"], content=str(i), key=f"k{i % 5}")
    return f"e{turns - 1}"


def decided(mem: Memory, store: IndexCounting, head: str) -> tuple[list[str], int]:
    """What ``visible`` returns, and how many tree-index reads it made."""
    before = store.index_reads
    found = [r.id for r in mem.visible(head)]
    return found, store.index_reads - before


def test_the_index_and_the_path_give_the_same_records_for_different_work() -> None:
    index_store, path_store = IndexCounting(), IndexCounting()
    by_index = Memory(store=index_store, path_events_per_entry=0)
    by_path = Memory(store=path_store, path_events_per_entry=None)
    head = agent(by_index)
    agent(by_path)
    found_index, index_reads_made = decided(by_index, index_store, head)
    found_path, path_reads_made = decided(by_path, path_store, head)
    assert found_index == found_path and len(found_index) == 5
    assert (index_reads_made, path_reads_made) == (1, 0)


def test_index_reads_changes_one_memory_only_and_restores_it() -> None:
    store, other_store = IndexCounting(), IndexCounting()
    mem, other = Memory(store=store), Memory(store=other_store)
    assert mem.path_events_per_entry == other.path_events_per_entry == PATH_EVENTS_PER_ENTRY
    head = agent(mem)  # 60 events, 5 keys: the index is the cheaper read as shipped
    agent(other)
    with index_reads(mem, None):
        assert decided(mem, store, head)[1] == 0
        assert decided(other, other_store, head)[1] == 1
    assert mem.path_events_per_entry == PATH_EVENTS_PER_ENTRY
    assert decided(mem, store, head)[1] == 1
