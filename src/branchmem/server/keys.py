"""API keys: one tenant each, bound to namespaces, stored as a hash.

A key reads ``bm_<key_id>_<secret>``. The store keeps the key id, ``sha256:<hex>`` of the
secret, the tenant and the namespaces; the secret itself is shown once, at creation. The
secret is 256 random bits, so a fast hash is as strong as a slow one here: nobody can
enumerate the inputs. Comparison is constant-time.

A namespace binding is an exact name (``alice``) or a prefix ending in ``*`` (``acme/*``:
every namespace starting with ``acme/``; ``*`` alone: every namespace, for a single-tenant
server). Two tenants may never hold overlapping bindings,
so no namespace is ever reachable from two tenants.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

from ..errors import ConflictError, InvalidInput, NotFoundError
from ..memory import ApiKeyRow, ApiKeys, Memory

PREFIX: Final = "bm_"
CACHE_SECONDS: Final = 2.0  # a deleted key stops working within this long on every worker
# a key in use has its row read again in the background once its cached copy is this old, so
# no request waits for the store; past CACHE_SECONDS the copy is not used at all
REFRESH_SECONDS: Final = CACHE_SECONDS / 2


@dataclass(frozen=True, slots=True)
class ApiKey:
    """What a presented key grants (never the secret)."""

    key_id: str
    tenant: str
    namespaces: tuple[str, ...]
    created: float

    def allows(self, namespace: str) -> bool:
        return any(binding_covers(binding, namespace) for binding in self.namespaces)

    @property
    def actor(self) -> str:
        """How the audit log names mutations made with this key."""
        return f"key:{self.key_id}"


def binding_covers(binding: str, namespace: str) -> bool:
    if binding.endswith("*"):
        return namespace.startswith(binding[:-1])
    return namespace == binding


def bindings_overlap(a: str, b: str) -> bool:
    """True when some namespace is covered by both bindings."""
    if a.endswith("*") and b.endswith("*"):
        return a[:-1].startswith(b[:-1]) or b[:-1].startswith(a[:-1])
    if a.endswith("*"):
        return binding_covers(a, b)
    if b.endswith("*"):
        return binding_covers(b, a)
    return a == b


def check_binding(binding: object) -> str:
    if not isinstance(binding, str) or not binding:
        raise InvalidInput(f"a namespace binding must be a name or a 'prefix*', got {binding!r}")
    if "*" in binding[:-1]:
        raise InvalidInput(f"namespace binding {binding!r}: '*' may only end a prefix")
    return binding


def hash_secret(secret: str) -> str:
    return "sha256:" + hashlib.sha256(secret.encode("utf-8")).hexdigest()


def split_key(presented: str) -> tuple[str, str] | None:
    """``(key_id, secret)`` of a well-formed key, else None."""
    if not presented.startswith(PREFIX):
        return None
    key_id, sep, secret = presented[len(PREFIX) :].partition("_")
    if not sep or not key_id or not secret or not key_id.isalnum():
        return None
    return key_id, secret


log = logging.getLogger(__name__)


class KeyRing:
    """Keys kept in a ``Memory``'s store (``Memory.api_keys``), with a short cache so a
    request costs no query.

    A row read is used for ``CACHE_SECONDS``. A key in steady use would otherwise send one
    request in every ``CACHE_SECONDS`` through the store and a thread (the slowest request
    of its stream); so a cached row older than ``REFRESH_SECONDS`` is read again in a
    background thread while requests go on with the copy. ``clock`` is the ring's time
    (``time.monotonic``); ``refresher`` runs those reads (default: a thread of the ring's
    own, started with the first one)."""

    def __init__(
        self,
        memory: Memory,
        clock: Callable[[], float] = time.monotonic,
        refresher: Executor | None = None,
    ) -> None:
        self.memory = memory
        self.clock = clock
        self._cache: dict[str, tuple[float, ApiKeyRow | None]] = {}
        self._cache_lock = threading.Lock()
        self._refreshing: set[str] = set()
        self.refresher = refresher

    def _keys(self) -> ApiKeys:
        return self.memory.api_keys()  # refuses a store that keeps no keys

    # -- administration (the CLI) ----------------------------------------------------------
    def create(self, tenant: str, namespaces: list[str]) -> tuple[str, ApiKey]:
        """A new key for ``tenant`` bound to ``namespaces``: the full key (shown once) and
        what it grants. Refuses bindings that overlap another tenant's; the check and the
        insert are one step, so two concurrent creations cannot both take a namespace."""
        if not isinstance(tenant, str) or not tenant:
            raise InvalidInput(f"tenant must be a non-empty string, got {tenant!r}")
        bindings = [check_binding(b) for b in namespaces]
        if not bindings:
            raise InvalidInput("a key needs at least one namespace binding")

        def admit(stored: list[ApiKeyRow]) -> None:
            for other in stored:
                if other.tenant == tenant:
                    continue
                for mine in bindings:
                    for theirs in other.namespaces:
                        if bindings_overlap(mine, theirs):
                            raise ConflictError(
                                f"namespace binding {mine!r} overlaps {theirs!r} of tenant "
                                f"{other.tenant!r} (key {other.key_id!r})"
                            )

        key_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        row = ApiKeyRow(key_id, hash_secret(secret), tenant, tuple(bindings), time.time())
        self._keys().add(row, admit)
        return f"{PREFIX}{key_id}_{secret}", self._granted(row)

    def list(self) -> list[ApiKey]:
        return [self._granted(row) for row in self._keys().list()]

    def delete(self, key_id: str) -> None:
        if not self._keys().delete(key_id):
            raise NotFoundError(f"API key {key_id!r} not found")
        with self._cache_lock:
            self._cache.pop(key_id, None)

    # -- per request -----------------------------------------------------------------------
    def verify(self, presented: str) -> ApiKey | None:
        """The key's grant when ``presented`` is a live key, else None."""
        parts = split_key(presented)
        if parts is None:
            return None
        return self._check(self._row(parts[0]), parts[1])

    def verify_cached(self, presented: str) -> tuple[bool, ApiKey | None]:
        """``(True, verify(presented))`` when that needs no query (a malformed key, or its
        row read less than ``CACHE_SECONDS`` ago), else ``(False, None)``: the event loop
        answers most requests without handing them to a thread or waiting for the store."""
        parts = split_key(presented)
        if parts is None:
            return True, None
        with self._cache_lock:
            cached = self._cache.get(parts[0])
        if cached is None:
            return False, None
        age = self.clock() - cached[0]
        if age >= CACHE_SECONDS:
            return False, None
        if age >= REFRESH_SECONDS:
            self._refresh_soon(parts[0])
        return True, self._check(cached[1], parts[1])

    def _refresh_soon(self, key_id: str) -> None:
        """Read ``key_id``'s row again in the ring's one background thread (once at a time)."""
        with self._cache_lock:
            if key_id in self._refreshing:
                return
            self._refreshing.add(key_id)
            if self.refresher is None:
                self.refresher = ThreadPoolExecutor(1, thread_name_prefix="branchmem-keys")
            refresher = self.refresher
        try:  # outside the lock: an executor may run the read at once, in this thread
            refresher.submit(self._refresh, key_id)
        except RuntimeError:  # a refresher shut down: requests read the store themselves
            with self._cache_lock:
                self._refreshing.discard(key_id)

    def _refresh(self, key_id: str) -> None:
        try:
            read_at = self.clock()  # the copy is as old as the read's start
            row = self._keys().get(key_id)
            with self._cache_lock:
                self._cache[key_id] = (read_at, row)
        except Exception:  # the copy ages out; the next request reads the store itself
            log.debug("refreshing API key %s failed", key_id, exc_info=True)
        finally:
            with self._cache_lock:
                self._refreshing.discard(key_id)

    def _check(self, row: ApiKeyRow | None, secret: str) -> ApiKey | None:
        if row is None or not hmac.compare_digest(row.secret_hash, hash_secret(secret)):
            return None
        return self._granted(row)

    def _row(self, key_id: str) -> ApiKeyRow | None:
        now = self.clock()
        with self._cache_lock:
            cached = self._cache.get(key_id)
            if cached is not None and now - cached[0] < CACHE_SECONDS:
                return cached[1]
        row = self._keys().get(key_id)
        with self._cache_lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key_id] = (now, row)
        return row

    @staticmethod
    def _granted(row: ApiKeyRow) -> ApiKey:
        return ApiKey(row.key_id, row.tenant, row.namespaces, row.created)


class AfterTheAnswer(Executor):
    """The refresher of a server's ring: a read asked for on the event loop runs on the loop
    as soon as the callback that asked returns (a direct read's answer is written by then),
    when the store is free; a read asked for off the loop, or while a write holds the store,
    runs in a thread of its own.

    A row read in a thread runs while the loop answers the next requests and takes the
    interpreter's lock from them: each request it met took ~0.1-0.3 ms longer (about one a
    second in steady traffic, measured). On the loop the read is one lookup by key, made
    while the server has no request to answer."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._threads: ThreadPoolExecutor | None = None
        self._guard = threading.Lock()
        self._shut = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self._threaded().submit(fn, *args, **kwargs)
        if self._shut:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future: Future[Any] = Future()
        loop.call_soon(self._on_the_loop, future, fn, args, kwargs)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._guard:
            self._shut = True
            threads = self._threads
        if threads is not None:
            threads.shutdown(wait, cancel_futures=cancel_futures)

    def _threaded(self) -> ThreadPoolExecutor:
        with self._guard:
            if self._shut:
                raise RuntimeError("cannot schedule new futures after shutdown")
            if self._threads is None:
                self._threads = ThreadPoolExecutor(1, thread_name_prefix="branchmem-keys")
            return self._threads

    def _on_the_loop(
        self, future: Future[Any], fn: Callable[..., Any], args: Any, kwargs: Any
    ) -> None:
        with self.memory.when_free() as free:
            if free:  # fn takes the Memory again: it is reentrant
                run_into(future, fn, args, kwargs)
                return
        try:  # the store is busy: the read waits for it in a thread, not on the loop
            self._threaded().submit(run_into, future, fn, args, kwargs)
        except RuntimeError as error:  # shut down meanwhile
            if future.set_running_or_notify_cancel():
                future.set_exception(error)


def run_into(future: Future[Any], fn: Callable[..., Any], args: Any, kwargs: Any) -> None:
    """``fn(*args, **kwargs)``, its outcome set on ``future`` (unless it was cancelled)."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(fn(*args, **kwargs))
    except Exception as error:  # an interrupt is not swallowed on the loop
        future.set_exception(error)
