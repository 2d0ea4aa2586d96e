"""The registry of systems under test, by name.

Optional systems live in their own modules and are registered only when they import
cleanly and their library is installed (``branchbench.systems.mem0`` exposes
``SYSTEMS`` and needs the ``mem0`` package).
"""

from __future__ import annotations

import importlib
import importlib.util

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
}


def optional_systems() -> dict[str, SystemFactory]:
    """Systems from optional modules whose library is installed and which import."""
    found: dict[str, SystemFactory] = {}
    for module_name, library in OPTIONAL_MODULES.items():
        try:
            if importlib.util.find_spec(library) is None:
                continue
            module = importlib.import_module(module_name)
        except Exception:  # an optional adapter must never break the core benchmark
            continue
        systems = getattr(module, "SYSTEMS", None)
        if isinstance(systems, dict):
            found.update(systems)
    return found


def registry() -> dict[str, SystemFactory]:
    """Every available system by name: the core ones first, then optional ones."""
    return {**CORE_SYSTEMS, **optional_systems()}


__all__ = [
    "CORE_SYSTEMS",
    "Conversation",
    "Setup",
    "System",
    "SystemFactory",
    "optional_systems",
    "registry",
]
