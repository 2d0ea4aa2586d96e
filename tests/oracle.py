"""The oracle moved to ``branchmem.testing.oracle``; kept for the test modules' imports."""

from branchmem.testing.oracle import Oracle, ORevision

__all__ = ["ORevision", "Oracle"]
