"""The conformance suite on the in-memory backend."""

from branchmem import Memory
from branchmem.testing import BackendConformance


class TestInMemory(BackendConformance):
    def make_memory(self, mode: str = "strict") -> Memory:
        return Memory(mode)
