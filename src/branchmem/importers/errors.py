"""Import errors: malformed exports are invalid input that names where it broke."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InvalidInput, TooLarge

if TYPE_CHECKING:
    from .plan import ImportSummary


class ImportFormatError(InvalidInput):
    """An export does not follow its format; names the conversation and the JSON path.

    ``conversation`` is the conversation's id or title when known (else its position),
    ``path`` a JSON path such as ``$[3].mapping["ab12"].parent``.
    """

    code = "import_format"

    def __init__(self, message: str, *, conversation: str | None = None, path: str = "$") -> None:
        self.conversation = conversation
        self.path = path
        self.reason = message
        where = f"conversation {conversation}, " if conversation else ""
        super().__init__(f"{where}at {path}: {message}")


class ImportTooLarge(ImportFormatError, TooLarge):
    """An export is over one of the ``ImportLimits``: refused before memory grows.

    ``limit`` names the ``ImportLimits`` field and ``allowed`` its value, so a caller that
    trusts the file can raise exactly that one. The service answers it with 413.
    """

    code = "too_large"

    def __init__(
        self,
        message: str,
        *,
        limit: str,
        allowed: int,
        conversation: str | None = None,
        path: str = "$",
    ) -> None:
        self.limit = limit
        self.allowed = allowed
        self.summary: ImportSummary | None = None
        super().__init__(message, conversation=conversation, path=path)

    def stopped_after(self, summary: ImportSummary) -> ImportTooLarge:
        """This refusal, saying what the import wrote before it; ``summary`` attached."""
        error = ImportTooLarge(
            f"{self.reason}; the import stopped there, after {summary.imported} "
            f"conversations imported ({summary.events_added} events) and {summary.failed} "
            "failed",
            limit=self.limit,
            allowed=self.allowed,
            conversation=self.conversation,
            path=self.path,
        )
        error.summary = summary
        return error
