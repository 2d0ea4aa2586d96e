"""The registry of systems under test, by name.

Optional systems live in their own modules and are registered only when they import
cleanly and their library is installed (``branchbench.systems.mem0`` exposes
``SYSTEMS`` and needs the ``mem0`` package).
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings

from branchbench.systems.base import Conversation, Setup, System, SystemFactory
from branchbench.systems.derived import (
    ExtractRetrieve,
    ExtractRetrieveRawFilter,
    LabelBased,
    LabelLineage,
    RollingSummary,
    RollingSummaryNotes,
)
from branchbench.systems.gated import Branchmem, BranchmemUnattributed
from branchbench.systems.raw import FullHistory, RawCurrentBranch

CORE_SYSTEMS: dict[str, SystemFactory] = {
    "full_history": FullHistory,
    "rolling_summary": RollingSummary,
    "rolling_summary_notes": RollingSummaryNotes,
    "extract_retrieve": ExtractRetrieve,
    "extract_retrieve_rawfilter": ExtractRetrieveRawFilter,
    "label_based": LabelBased,
    "label_lineage": LabelLineage,
    "raw_current_branch": RawCurrentBranch,
    "branchmem": Branchmem,
    "branchmem_unattributed": BranchmemUnattributed,
}

OPTIONAL_MODULES = {
    "branchbench.systems.mem0": "mem0",
    "branchbench.systems.langgraph": "langgraph",
    "branchbench.systems.graphiti": "graphiti_core",
    "branchbench.systems.langmem": "langmem",
}


def optional_systems() -> dict[str, SystemFactory]:
    """Systems from optional modules whose library is installed and which import."""
    found: dict[str, SystemFactory] = {}
    for module_name, library in OPTIONAL_MODULES.items():
        try:
            if importlib.util.find_spec(library) is None:
                continue
            with warnings.catch_warnings():  # a library's import-time deprecations
                warnings.simplefilter("ignore")
                module = importlib.import_module(module_name)
        except Exception:  # an optional adapter must never break the core benchmark
            continue
        systems = getattr(module, "SYSTEMS", None)
        if isinstance(systems, dict):
            found.update(systems)
    return found


# Run only when named (``--systems graphiti``): minutes per split, and Graphiti's contexts
# are not byte-for-byte reproducible (it runs its queries concurrently), so a default run,
# ``make run`` and ``score --reproduce`` leave it out. LangMem's are reproducible, but a
# LangGraph extraction graph per message takes minutes a split too.
NAMED_ONLY = frozenset({"graphiti", "langmem"})


def default_systems() -> list[str]:
    """The systems a run takes when none is named: every available one but ``NAMED_ONLY``."""
    return [name for name in registry() if name not in NAMED_ONLY]


def registry() -> dict[str, SystemFactory]:
    """Every available system by name: the core ones first, then optional ones."""
    return {**CORE_SYSTEMS, **optional_systems()}


__all__ = [
    "CORE_SYSTEMS",
    "NAMED_ONLY",
    "Conversation",
    "Setup",
    "System",
    "SystemFactory",
    "default_systems",
    "optional_systems",
    "registry",
]
