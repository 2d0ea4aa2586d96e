"""The conformance suites on the in-memory backend."""

from branchmem import Memory
from branchmem.store.base import Store
from branchmem.store.inmemory import InMemoryStore
from branchmem.testing import BackendConformance, StoreConformance


class TestInMemory(BackendConformance):
    def make_memory(self, mode: str = "strict") -> Memory:
        return Memory(mode)


class TestInMemoryContract(StoreConformance):
    def make_store(self) -> Store:
        return InMemoryStore()
