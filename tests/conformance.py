"""The suite moved to ``branchmem.testing``; kept so the test modules' imports still read."""

from branchmem.testing.conformance import SCALE, BackendConformance, chengdu, ids

__all__ = ["SCALE", "BackendConformance", "chengdu", "ids"]
