"""The real corpora for tests: skipped when absent, a failure when CI demands them.

``BRANCHMEM_REQUIRE_CORPORA=1`` (CI) turns the skip into a failure, so the corpus tests
never silently vanish.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from branchbench.corpora import corpora_root

REQUIRE_VARIABLE = "BRANCHMEM_REQUIRE_CORPORA"


def require_corpora() -> Path:
    """The corpora root, or skip (fail under ``BRANCHMEM_REQUIRE_CORPORA=1``)."""
    root = corpora_root()
    if root is not None:
        return root
    message = "the corpora (../shared/corpora or $BRANCHBENCH_CORPORA) are absent"
    if os.environ.get(REQUIRE_VARIABLE, "") not in ("", "0"):
        pytest.fail(f"{message} ({REQUIRE_VARIABLE}=1)", pytrace=False)
    pytest.skip(message)
