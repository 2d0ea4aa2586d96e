"""Every behavioural test of the engine, written once; each backend subclasses it.

A backend's test module is a few lines: subclass ``BackendConformance`` and implement
``make_memory``. The tests read like SPEC.md's sentences; the differential test at the end
compares the backend against the naive oracle on random forests with shuffled arrival.

The tests live by topic in this package's modules, as plain functions of the ``mem`` (or
``compat``) fixture; ``BackendConformance`` gathers them, so a backend still subclasses one
class and a reader opens one topic at a time. A new topic module is listed in ``GROUPS``.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from branchmem import Memory

from ..asof_conformance import AsOfConformance
from ..differential import ReadView, run_scenario
from . import citations, diff, forget, garbage, namespaces, revisions, visibility, writes
from .story import chengdu, ids

__all__ = ["GROUPS", "SCALE", "BackendConformance", "chengdu", "gathered", "ids"]

SCALE = int(os.environ.get("BRANCHMEM_BENCH_SCALE", "1"))

# the topic modules whose tests every backend runs, in the order a run reports them
GROUPS: tuple[ModuleType, ...] = (
    visibility,
    writes,
    revisions,
    garbage,
    forget,
    namespaces,
    citations,
    diff,
)


def gathered(groups: tuple[ModuleType, ...], beside: type) -> dict[str, Any]:
    """The ``test_*`` functions defined in ``groups``, as tests of a class whose bases are
    ``beside``. A name met twice is refused: as a class attribute, one would silently hide
    the other and a backend would run one test fewer."""
    tests: dict[str, Any] = {}
    for group in groups:
        for name, test in vars(group).items():
            if not name.startswith("test_") or getattr(test, "__module__", None) != group.__name__:
                continue
            if name in tests or hasattr(beside, name):
                raise TypeError(f"conformance test {name} is defined twice ({group.__name__})")
            tests[name] = staticmethod(test)  # a plain function of its fixtures, no self
    return tests


class BackendConformance(AsOfConformance):
    """The engine's contract. Subclasses say how to build a ``Memory`` on their backend."""

    # ~1.15M decisions with as_of and diff compared too; make bench runs ten times as many
    differential_trees = 1760 * SCALE
    differential_chunks = 8

    def make_memory(self, mode: str = "strict") -> Memory:
        raise NotImplementedError

    @pytest.fixture
    def mem(self) -> Iterator[Memory]:
        memory = self.make_memory()
        yield memory
        memory.close()

    @pytest.fixture
    def compat(self) -> Iterator[Memory]:
        memory = self.make_memory("compat")
        yield memory
        memory.close()

    # the class body's namespace: the topic modules' tests become this class's own
    vars().update(gathered(GROUPS, beside=AsOfConformance))

    # -- the oracle --------------------------------------------------------------------
    # how the differential test reads a view's decisions through this face; None: the
    # engine's own views (a ``Memory``); a face over HTTP or async overrides it
    read_views: Callable[[Memory], ReadView] | None = None

    @pytest.fixture(params=range(differential_chunks))
    def chunk(self, request: pytest.FixtureRequest) -> int:
        return int(request.param)

    def test_differential_against_the_oracle(
        self, chunk: int, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        per_chunk = self.differential_trees // self.differential_chunks
        compared = 0
        for index in range(per_chunk):
            seed = chunk * 1_000_003 + index
            compared += run_scenario(self.make_memory, random.Random(seed), self.read_views)
        session = Path(tmp_path_factory.getbasetemp())
        if hasattr(request.config, "workerinput"):  # an xdist worker: its basetemp is below
            session = session.parent
        tally = session / "differential-tally"
        tally.mkdir(exist_ok=True)
        (tally / f"{type(self).__name__}-{chunk}").write_text(f"{per_chunk} {compared}")
        assert compared > 0
