"""The service's API keys in SQL (``KeyStore``), one key creation at a time."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Final

from . import codec
from .keys import ApiKeyRow, KeyStore
from .sqlsession import SQLSession

KEYS_LOCK: Final = "\x00api keys"  # the lock of key creation: no namespace is named this


class ApiKeysTable(KeyStore):
    """The ``api_keys`` table (not under any namespace) over the store's session: what
    ``Store.api_keys`` gives the service."""

    __slots__ = ("session",)

    def __init__(self, session: SQLSession) -> None:
        self.session = session

    def add_api_key(self, row: ApiKeyRow, admit: Callable[[list[ApiKeyRow]], None]) -> None:
        # One write transaction around the check and the insert: SQLite's BEGIN IMMEDIATE
        # and PostgreSQL's advisory lock on KEYS_LOCK admit one key creation at a time.
        with self.session.transaction(KEYS_LOCK):
            admit(self._api_key_rows(None))
            self.session._run(
                "INSERT INTO api_keys (key_id, secret_hash, tenant, namespaces, created) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    row.key_id, row.secret_hash, row.tenant, codec.dumps(list(row.namespaces)),
                    row.created,
                ),
            )  # fmt: skip

    def _api_key_rows(self, key_id: str | None) -> list[ApiKeyRow]:
        where, params = ("WHERE key_id = ?", (key_id,)) if key_id is not None else ("", ())
        with self.session.reading(KEYS_LOCK) if self.session._depth == 0 else nullcontext():
            rows = self.session._all(
                "SELECT key_id, secret_hash, tenant, namespaces, created FROM api_keys "
                f"{where} ORDER BY created, key_id",
                params,
            )
        return [
            ApiKeyRow(str(r[0]), str(r[1]), str(r[2]), tuple(codec.loads(r[3])), float(r[4]))
            for r in rows
        ]

    def get_api_key(self, key_id: str) -> ApiKeyRow | None:
        rows = self._api_key_rows(key_id)
        return rows[0] if rows else None

    def list_api_keys(self) -> list[ApiKeyRow]:
        return self._api_key_rows(None)

    def delete_api_key(self, key_id: str) -> bool:
        with self.session.transaction(KEYS_LOCK):
            found = (
                self.session._one("SELECT 1 FROM api_keys WHERE key_id = ?", (key_id,)) is not None
            )
            self.session._run("DELETE FROM api_keys WHERE key_id = ?", (key_id,))
        return found
