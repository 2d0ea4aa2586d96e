"""The upstream PostgreSQL store suites, loaded once and pointed at ``BranchStore`` over
branchmem's PostgreSQL backend.

Every store the suites build is a ``BranchStore`` over one Memory on one database of the
tests' server (``pg_dsn``), in a branchmem namespace of its own, standing at the head of a
thread with one checkpoint: as isolated as the fresh database upstream makes per test,
without paying for a schema per test. What the suites read or write through SQL of
PostgresStore's own table (backdating ``expires_at``, checking a row is there) is done to
the item the same way through the store: its expiry is what BranchStore decides on."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from types import ModuleType
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.postgres import PostgresStore
from peer_adapter import load, package
from peer_stores import thread_head

from branchmem import Memory
from branchmem.integrations.langgraph import (
    AsyncBranchStore,
    BranchCheckpointer,
    BranchStore,
    item_key,
)
from branchmem.integrations.langgraph.gated import GatedStore
from branchmem.integrations.langgraph.ttl import expiry_key, expiry_spec, latest_expiries

THREAD = "peer-thread"
TTL_SECONDS = 6  # the suites' TTL config
TTL_CONFIG: dict[str, Any] = {
    "default_ttl": TTL_SECONDS / 60,
    "refresh_on_read": True,
    "sweep_interval_minutes": TTL_SECONDS / 120,
}
_MEMORY: list[Memory] = []  # the Memory the session's stores share (set by the fixture)


@pytest.fixture(scope="module")
def peer_pg_memory(pg_dsn: str) -> Iterator[Memory]:
    """One Memory on a fresh database for a suite's stores (each in its own namespace)."""
    from pg import fresh_database

    with fresh_database(pg_dsn, "peer_lg") as url:
        memory = Memory.open(url)
        _MEMORY[:] = [memory]
        try:
            yield memory
        finally:
            _MEMORY.clear()
            memory.close()


def new_store(flavour: type[GatedStore] = BranchStore, **options: Any) -> Any:
    """A BranchStore (or ``flavour``) in a fresh namespace, at the head of a thread saved
    there."""
    memory = _MEMORY[0]
    namespace = f"peer-{uuid.uuid4().hex[:12]}"
    checkpointer = BranchCheckpointer(InMemorySaver(), memory, namespace=namespace)
    config: Any = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
    checkpointer.put(config, empty_checkpoint(), {"source": "input", "step": -1, "parents": {}}, {})
    index = options.pop("index", None)
    if index is not None:  # PostgresStore's ANN options: pgvector's, nothing to honour here
        index = {k: v for k, v in index.items() if k != "ann_index_config" and v is not None}
    return flavour(
        memory, namespace=namespace, config={"configurable": {"thread_id": THREAD}}, index=index,
        **options,
    )  # fmt: skip


class PeerPostgresStore(BranchStore):
    """``PostgresStore`` for the suite's own ``store`` fixture, which runs as written (its
    fresh database per test, every connection mode, ``setup``, the TTL sweeper):
    ``from_conn_string`` is BranchStore's, standing at the head of a thread saved there.
    ``MIGRATIONS`` is PostgresStore's list, which the fixture reads and rewrites: branchmem's
    schema is its own (made by ``Memory.open``), and ``setup`` applies nothing."""

    MIGRATIONS = PostgresStore.MIGRATIONS

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, **options: Any) -> Iterator[Any]:
        with super().from_conn_string(conn_string, **options) as store:
            yield store.at(thread_head(store.memory))


@contextmanager
def vector_store(
    vector_type: str,
    distance_type: str,
    fake_embeddings: Any,
    text_fields: list[str] | None = None,
    enable_ttl: bool = True,
) -> Iterator[BranchStore]:
    """The suite's ``_create_vector_store`` on BranchStore."""
    index = {"dims": fake_embeddings.dims, "embed": fake_embeddings}
    index |= {"distance_type": distance_type, "fields": text_fields}
    ttl = {"default_ttl": 2, "refresh_on_read": True} if enable_ttl else None
    yield new_store(index=index, ttl=ttl)


@asynccontextmanager
async def avector_store(
    vector_type: str,
    distance_type: str,
    fake_embeddings: Any,
    text_fields: list[str] | None = None,
    enable_ttl: bool = True,
) -> AsyncIterator[AsyncBranchStore]:
    """The async suite's ``_create_vector_store`` on AsyncBranchStore."""
    index = {"dims": fake_embeddings.dims, "embed": fake_embeddings}
    index |= {"distance_type": distance_type, "fields": text_fields}
    ttl = {"default_ttl": 2, "refresh_on_read": True} if enable_ttl else None
    store = new_store(AsyncBranchStore, index=index, ttl=ttl)
    await store.setup()
    yield store


def async_store(**options: Any) -> AsyncBranchStore:
    store: AsyncBranchStore = new_store(AsyncBranchStore, **options)
    return store


# -- what the suites do through PostgresStore's table, done through the store ---------------
def _current(store: GatedStore, record_key: str) -> Any:
    place = store._place()
    return store.memory.current(
        record_key, place.anchor, cross_tree=True, namespace=store.namespace
    )


def expire_now(store: GatedStore, ns: tuple[str, ...], key: str) -> None:
    """Backdate the item's expiry a minute into the past (``_expire_now``), as a refresh
    record would set it: another store, or a later read, sees it as stored."""
    record = _current(store, item_key(ns, key))
    assert record is not None
    spec = expiry_spec(record, time.time() - 60.0)
    store.memory.add_records([spec], namespace=store.namespace)


def row_exists(store: GatedStore, ns: tuple[str, ...], key: str) -> bool:
    """The item's record is still stored, expired or not (``_row_exists``)."""
    return _current(store, item_key(ns, key)) is not None


def stored_expires_at(store: GatedStore, ns: tuple[str, ...], key: str) -> float | None:
    """The expiry as stored: the item's latest refresh record, else its put's."""
    record = _current(store, item_key(ns, key))
    assert record is not None
    refresh = _current(store, expiry_key(ns, key))
    stored = latest_expiries([refresh] if refresh is not None else [])
    expires = stored.get((record.id, record.revision), record.meta.get("expires_at"))
    return None if expires is None else float(expires)


async def aexpire_now(store: GatedStore, ns: tuple[str, ...], key: str) -> None:
    expire_now(store, ns, key)


async def arow_exists(store: GatedStore, ns: tuple[str, ...], key: str) -> bool:
    return row_exists(store, ns, key)


async def astored_expires_at(store: GatedStore, ns: tuple[str, ...], key: str) -> float | None:
    return stored_expires_at(store, ns, key)


def _helpers(suite: ModuleType) -> None:
    suite._expire_now = expire_now
    suite._row_exists = row_exists
    suite._stored_expires_at = stored_expires_at
    suite._aexpire_now = aexpire_now
    suite._arow_exists = arow_exists
    suite._astored_expires_at = astored_expires_at


def _tests_package() -> dict[str, ModuleType]:
    utils = load(
        "langgraph/libs/checkpoint-postgres/tests/embed_test_utils.py", "peer_lg_embed_utils"
    )
    conftest = load(
        "langgraph/libs/checkpoint-postgres/tests/conftest.py",
        "peer_lg_pg_conftest",
        aliases=package("tests", embed_test_utils=utils),
    )
    return package("tests", conftest=conftest, embed_test_utils=utils)


def sync_suite() -> ModuleType:
    suite = load(
        "langgraph/libs/checkpoint-postgres/tests/test_store.py",
        "peer_lg_pg_store",
        aliases=_tests_package(),
    )
    suite.PostgresStore = PeerPostgresStore
    suite._create_vector_store = vector_store
    _helpers(suite)
    return suite


def async_suite() -> ModuleType:
    suite = load(
        "langgraph/libs/checkpoint-postgres/tests/test_async_store.py",
        "peer_lg_pg_async_store",
        aliases=_tests_package(),
    )
    suite._create_vector_store = avector_store
    _helpers(suite)
    return suite
