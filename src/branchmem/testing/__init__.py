"""The conformance suite, shipped so that a backend outside this project can prove itself.

A new backend's test module is a few lines: subclass ``BackendConformance`` and say how to
build a ``Memory`` on it. pytest collects every behavioural test of the engine (the SPEC's
sentences) plus a differential test that replays random forests, in shuffled arrival order,
into the backend and into a naive oracle and compares every decision::

    from branchmem import Memory
    from branchmem.testing import BackendConformance

    class TestMyStore(BackendConformance):
        differential_trees = 200  # fewer random trees for a backend with round trips

        def make_memory(self, mode: str = "strict") -> Memory:
            return Memory(mode, store=MyStore())

``StoreConformance`` pins the storage contract underneath at the ``Store`` level (its one
bulk reader ``answer`` complete and agreeing with the per-item reads, namespace isolation,
atomic transactions); its one factory is ``make_store()``. ``AnswersOnlyStore`` is a backend
that defines only what ``Store`` leaves abstract, over another store: every per-item read
through ``answer``.

Importing this package needs pytest (``pip install 'branchmem[test-core]'``); importing
``branchmem`` does not.
"""

from __future__ import annotations

from .answers_only import AnswersOnlyStore
from .conformance import SCALE, BackendConformance, chengdu, ids
from .differential import Op, apply, compare, random_history, run_scenario
from .oracle import Oracle, ORevision
from .store_conformance import StoreConformance

__all__ = [
    "SCALE",
    "AnswersOnlyStore",
    "BackendConformance",
    "ORevision",
    "Op",
    "Oracle",
    "StoreConformance",
    "apply",
    "chengdu",
    "compare",
    "ids",
    "random_history",
    "run_scenario",
]
