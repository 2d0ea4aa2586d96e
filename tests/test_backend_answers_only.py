"""A backend that implements only the narrow contract: the writers, ``answer``, the two scans,
the lifecycle and the side tables; every per-item read comes from ``Store``'s wrappers over
``answer``. It passes the same conformance suites as the shipped backends, which is what
shows that ``answer`` is the one reader a backend must provide."""

from __future__ import annotations

from branchmem import Memory
from branchmem.store.base import WRAPPED_READS, Store
from branchmem.testing import BackendConformance, StoreConformance
from branchmem.testing.answers_only import NARROW_CONTRACT, AnswersOnlyStore


def test_the_narrow_contract_is_what_the_backend_defines() -> None:
    defined = {name for name in vars(AnswersOnlyStore) if not name.startswith("_")}
    assert defined == set(NARROW_CONTRACT)
    assert "answer" in NARROW_CONTRACT
    assert not set(WRAPPED_READS) & set(NARROW_CONTRACT)  # every per-item read is a wrapper
    for name in WRAPPED_READS:
        assert getattr(AnswersOnlyStore, name) is getattr(Store, name), name


class TestAnswersOnly(BackendConformance):
    differential_trees = 224  # every read through answer: slower, and the same code paths

    def make_memory(self, mode: str = "strict") -> Memory:
        return Memory(mode, store=AnswersOnlyStore())

    def test_forget_a_message_erases_what_was_built_on_it_and_hands_a_receipt(self) -> None:
        """A receipt's check reads rows through the backend's ``residue_values`` port, so
        it checks a backend it knows nothing else of; what stays is said generically."""
        with self.make_memory() as mem:
            mem.add_event("u1", content="I'm moving to Chengdu next month, to a flat")
            dry = mem.forget("message", "u1", dry_run=True)
            receipt = mem.forget("message", "u1")
            assert mem.verify_receipt(receipt).ok
            assert mem.scan_store(receipt).unchecked == (
                "a unknown store: no byte scan is known for this backend",
            )
        assert not dry.check.clean and dry.check.locations["events"] > 0
        assert receipt.check.clean and receipt.check.backend == "unknown"
        assert any("storage" in line for line in receipt.cannot_clean)


class TestAnswersOnlyContract(StoreConformance):
    def make_store(self) -> Store:
        return AnswersOnlyStore()
