"""Who may open the ``/ui`` explorer without typing a key.

What the explorer shows comes through the API like everything else (``Memory.trees``,
``tree_events``, ``record_views``: ``GET /trees``, ``/trees/{tree}``, ``/explanations``);
this module only grants a local session the right to read it.

``LocalSession`` is how ``branchmem serve`` on a loopback address opens the explorer without
anyone typing a key: a random token, held only in the server's memory and printed once in
the link's fragment (``/ui#token=...``; a fragment never reaches a server log or a proxy). It
reads every namespace and writes nothing, and dies with the process. Nothing is granted by
address: behind a reverse proxy every request comes from 127.0.0.1.
"""

from __future__ import annotations

import hmac
import secrets
import time
from typing import Final

from .keys import ApiKey

LOCAL_KEY_ID: Final = "local"
READ_METHODS: Final = frozenset({"GET", "HEAD"})


class LocalSession:
    """A read-only grant over every namespace for whoever holds this process's token."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self.grant = ApiKey(LOCAL_KEY_ID, "local explorer", ("*",), time.time())

    def admits(self, method: str, presented: str) -> bool:
        """True for a read presenting this session's token (constant-time comparison)."""
        same = hmac.compare_digest(presented.encode(), self.token.encode())
        return same and method.upper() in READ_METHODS

    def link(self, host: str, port: int) -> str:
        """The explorer's address with the token in the fragment."""
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/ui#token={self.token}"
