"""Import branched chat histories from ChatGPT, Open WebUI, LibreChat, SillyTavern and Claude.

``load(path_or_value)`` detects the format and plans the import (events in parent-before-
child order, the head and why it was chosen, per-conversation errors with JSON paths)
without touching a Memory; ``ImportPlan.apply(memory)`` writes it, one atomic
``add_events`` per conversation plus ``set_head``. ``ImportLimits`` bound what an import may
read and store (a small zip can hold gigabytes). See docs/importers.md.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .errors import ImportFormatError, ImportTooLarge
from .formats import FORMATS, detect
from .limits import ImportLimits
from .plan import ConversationPlan, ImportPlan, ImportProgress, ImportSummary, ProgressCallback
from .source import load

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = [
    "FORMATS",
    "ConversationPlan",
    "ImportFormatError",
    "ImportLimits",
    "ImportPlan",
    "ImportProgress",
    "ImportSummary",
    "ImportTooLarge",
    "ProgressCallback",
    "detect",
    "import_file",
    "load",
]


def import_file(
    path: str | os.PathLike[str],
    memory: Memory,
    *,
    format: str = "auto",
    namespace: str = "default",
    progress: ProgressCallback | None = None,
    limits: ImportLimits | None = None,
) -> ImportSummary:
    """Load ``path`` and apply it to ``memory``: what ``branchmem import`` runs.

    Raises ImportFormatError only when the file as a whole cannot be read or recognised,
    ImportTooLarge when it is over ``limits``; a broken conversation is reported in the
    summary and the others are imported.
    """
    plan = load(path, format, limits=limits)
    return plan.apply(memory, namespace=namespace, progress=progress)
