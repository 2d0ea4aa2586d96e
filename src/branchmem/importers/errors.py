"""Import errors, kept importable here: they are declared in ``branchmem.errors``."""

from __future__ import annotations

from ..errors import ImportFormatError, ImportTooLarge

__all__ = ["ImportFormatError", "ImportTooLarge"]
