"""The differential harness moved to ``branchmem.testing.differential``."""

from branchmem.testing.differential import (
    Op,
    apply,
    compare,
    oracle_current,
    random_history,
    run_scenario,
)

__all__ = ["Op", "apply", "compare", "oracle_current", "random_history", "run_scenario"]
