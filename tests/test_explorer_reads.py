"""The explorer's reads as API methods (``trees``, ``tree_events``, ``record_views``): one
snapshot each, the same answers embedded and over HTTP, and the service's door to a store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.cli.main import main
from branchmem.errors import InvalidInput, NotFoundError, StorageError
from branchmem.model import RecordView, TreeEvents, TreeSummary
from branchmem.store.inmemory import InMemoryStore
from branchmem.testing.conformance import chengdu


class CountingStore(InMemoryStore):
    """An in-memory store that counts the read snapshots it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.snapshots = 0

    def reading(self, namespace: str | None = None) -> AbstractContextManager[None]:
        return self._counted(super().reading(namespace))

    @contextmanager
    def _counted(self, inner: AbstractContextManager[None]) -> Iterator[None]:
        self.snapshots += 1
        with inner:
            yield


@pytest.fixture
def memory() -> Iterator[Memory]:
    mem = Memory(store=CountingStore())
    chengdu(mem)  # tree u1
    mem.set_head("a2b")
    mem.add_record("s-move", sources=["f-chengdu", "a2"], content="summary: moving to Chengdu")
    mem.add_event("k1", content="Two weeks in Kyoto?")
    mem.add_record("f-kyoto", sources=["k1"], content="trip to Kyoto")
    mem.add_record("f-legacy", sources=None, content="no sources")
    yield mem
    mem.close()


def snapshots(mem: Memory) -> int:
    store = mem.store
    assert isinstance(store, CountingStore)
    return store.snapshots


def test_record_views_decide_every_record_in_one_snapshot(memory: Memory) -> None:
    before = snapshots(memory)
    views = memory.record_views("a2")
    assert snapshots(memory) - before == 1  # was one per record for explain, one for its text
    assert [v.explanation.record_id for v in views] == sorted(v.explanation.record_id
                                                              for v in views)  # fmt: skip
    assert len(views) >= 5 and all(isinstance(v, RecordView) for v in views)


def test_record_views_agree_with_explain_and_get_record(memory: Memory) -> None:
    memory.withdraw("f-kyoto")
    for anchor, cross_tree in (("a2", False), ("u2b", True), (None, False)):
        for view in memory.record_views(anchor, cross_tree=cross_tree, include_stale=True):
            record_id = view.explanation.record_id
            assert view.explanation == memory.explain(
                record_id, anchor, cross_tree=cross_tree, include_stale=True
            )
            shown = memory.get_record(record_id, revision=view.explanation.revision)
            assert (view.kind, view.key, view.content) == (shown.kind, shown.key, shown.content)


def test_an_erased_record_is_listed_without_its_text(memory: Memory) -> None:
    memory.erase("f-kyoto")
    views = {v.explanation.record_id: v for v in memory.record_views("k1")}
    assert views["f-kyoto"].explanation.reason == "erased"
    assert (views["f-kyoto"].kind, views["f-kyoto"].content) == (None, None)


def test_one_tree_lists_its_records_with_the_events_they_draw_on(memory: Memory) -> None:
    views = {v.explanation.record_id: v for v in memory.record_views("a2", tree="u1")}
    assert "f-kyoto" not in views and "f-legacy" not in views
    assert views["s-move"].tree_sources and set(views["s-move"].tree_sources) <= {
        e.id for e in memory.tree_events("u1").events
    }
    assert memory.record_views("a2", tree="nowhere") == []


def test_trees_and_one_tree(memory: Memory) -> None:
    before = snapshots(memory)
    listed = memory.trees()
    assert [t.tree for t in listed] == ["k1", "u1"]
    assert listed[1] == TreeSummary(tree="u1", roots=("u1",), events=listed[1].events, head="a2b")
    shown = memory.tree_events("u1")
    assert isinstance(shown, TreeEvents) and shown.head == "a2b"
    assert [e.seq for e in shown.events] == sorted(e.seq for e in shown.events)
    assert len(shown.events) == listed[1].events
    assert snapshots(memory) - before == 2


def test_an_unknown_tree_or_anchor_is_named(memory: Memory) -> None:
    with pytest.raises(NotFoundError, match=r"'nowhere'.*'default'"):
        memory.tree_events("nowhere")
    with pytest.raises(NotFoundError, match="nowhere"):
        memory.record_views("nowhere")
    with pytest.raises(InvalidInput, match="tree"):
        memory.record_views("a2", tree="")


def test_the_client_reads_the_same_trees(memory: Memory) -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from branchmem.client import Client
    from branchmem.server import create_app
    from test_server_harness import LiveService

    live = LiveService(create_app(memory, auth=False)).start()
    try:
        with Client(live.url) as client:
            assert client.trees() == memory.trees()
            assert client.tree_events("u1") == memory.tree_events("u1")
            for tree in (None, "u1"):
                found = client.record_views("a2", tree=tree)
                assert found == memory.record_views("a2", tree=tree)
            assert client.explanations("a2") == [v.explanation for v in memory.record_views("a2")]
    finally:
        live.stop()


def test_the_commands_come_from_the_operation_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", str(tmp_path / "m.db")]
    assert main(["add-event", "u1", "--content", "hi", *db]) == 0
    assert main(["add-record", "f1", "-s", "u1", "--content", "greets", *db]) == 0
    capsys.readouterr()
    assert main(["trees", "--json", *db]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"tree": "u1", "roots": ["u1"], "events": 1, "head": None}
    ]
    assert main(["record-views", "u1", "--json", *db]) == 0
    [view] = json.loads(capsys.readouterr().out)
    assert (view["explanation"]["reason"], view["content"]) == ("visible", "greets")


def test_open_can_refuse_a_store_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    with pytest.raises(StorageError, match=r"typo\.db"):
        Memory.open(missing, create=False)
    assert not missing.exists()
    with Memory.open(missing) as mem:
        assert mem.schema_version() is not None
    with Memory.open(missing, create=False) as mem:
        assert mem.trees() == []


def test_api_keys_go_through_memory(tmp_path: Path) -> None:
    from branchmem.memory import ApiKeyRow

    with Memory.open(tmp_path / "keys.db") as mem:
        keys = mem.api_keys()
        keys.add(ApiKeyRow("k1", "sha256:00", "acme", ("acme/*",), 1.0), lambda stored: None)
        assert [row.key_id for row in keys.list()] == ["k1"]
        assert keys.get("k1") == ApiKeyRow("k1", "sha256:00", "acme", ("acme/*",), 1.0)
        assert keys.delete("k1") and not keys.delete("k1")
