"""The differential harness moved to ``branchmem.testing.differential``."""

from branchmem.testing.differential import (
    Op,
    apply,
    compare,
    index_reads,
    oracle_current,
    random_history,
    run_scenario,
)

__all__ = [
    "Op", "apply", "compare", "index_reads", "oracle_current", "random_history", "run_scenario",
]  # fmt: skip
