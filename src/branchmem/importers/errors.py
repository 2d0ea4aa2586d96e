"""Import errors: malformed exports are invalid input that names where it broke."""

from __future__ import annotations

from ..errors import InvalidInput


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
