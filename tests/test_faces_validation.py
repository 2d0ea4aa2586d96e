"""One table of invalid inputs, refused alike on every face: Python, HTTP, CLI and MCP.

Each row is one rule (``branchmem/validation.py`` holds the bounds; ``Memory`` and the
service's schema apply them) with the call that breaks it on each face. Python and HTTP run
the same call, on ``Memory`` and on a ``Client`` of a live server; the CLI runs the command
against a SQLite store; MCP calls the agent's tools in process through the MCP client. A
refusal is ``invalid_input`` with the field named, and nothing is written. A face a rule
cannot reach says why in ``not_on``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
pytest.importorskip("mcp", reason="the MCP SDK is in the 'mcp' extra")

import httpx
from mcp import Client as McpClient

from branchmem import InvalidInput, Memory
from branchmem.cli import main
from branchmem.client import Client
from branchmem.integrations.mcp import Conversation, build_server
from branchmem.server import KeyRing, create_app
from test_server_harness import LiveService

FACES = ("python", "http", "cli", "mcp")
Call = Callable[[Any, str], Any]  # (memory or client, namespace) -> result


@dataclass(frozen=True)
class Row:
    """An invalid input and the call that makes it on each face."""

    name: str
    names: str  # a pattern the refusal must match on every face: the field it names
    call: Call | None = None  # Python and HTTP (Memory and Client share the API)
    error: type[Exception] = InvalidInput
    cli: list[str] | None = None
    mcp: tuple[str, dict[str, Any]] | None = None
    wire: tuple[str, str, dict[str, Any]] | None = None  # raw HTTP, where Client cannot say it
    not_on: dict[str, str] = field(default_factory=dict)


ROWS = [
    Row("search k=-3", r"\bk\b",
        call=lambda m, ns: m.search("Chengdu", "a2", k=-3, namespace=ns),
        cli=["search", "Chengdu", "a2", "-k", "-3"],
        mcp=("recall", {"k": -3})),  # without a query: the gap MCP had
    Row("search k=0", r"\bk\b",
        call=lambda m, ns: m.search("Chengdu", "a2", k=0, namespace=ns),
        cli=["search", "Chengdu", "a2", "-k", "0"],
        mcp=("recall", {"query": "Chengdu", "k": 0})),
    Row("search k=1001", r"\bk\b",
        call=lambda m, ns: m.search("Chengdu", "a2", k=1001, namespace=ns),
        cli=["search", "Chengdu", "a2", "-k", "1001"],
        mcp=("recall", {"k": 1001})),
    Row("context budget=0", "budget",
        call=lambda m, ns: m.context("a2", budget=0, namespace=ns),
        cli=["context", "a2", "--budget", "0"],
        not_on={"mcp": "no tool takes a budget"}),
    Row("context budget=-5", "budget",
        call=lambda m, ns: m.context("a2", budget=-5, namespace=ns),
        cli=["context", "a2", "--budget", "-5"],
        not_on={"mcp": "no tool takes a budget"}),
    Row("explain an empty record id", "record.id|record_id",
        call=lambda m, ns: m.explain("", "a2", namespace=ns),
        cli=["explain", "", "a2"],
        mcp=("explain", {"record_id": ""})),
    Row("search at an empty anchor", "anchor|event id",
        call=lambda m, ns: m.search("Chengdu", "", namespace=ns),
        cli=["search", "Chengdu", ""],
        mcp=("recall", {"event": ""})),
    Row("add a record without choosing its sources", "sources|message",
        call=lambda m, ns: m.add_record("tea", content="likes tea", namespace=ns),
        error=TypeError,  # Python requires the argument: mypy and the call both say so
        cli=["add-record", "tea", "--content", "likes tea"],
        mcp=("remember", {"content": "likes tea"}),
        wire=("POST", "/records", {"id": "tea", "content": "likes tea"})),
    Row("retract without a placement", "no sources|needs its sources|targets or a key",
        call=lambda m, ns: m.retract("x1", sources=[], targets=["chengdu"], namespace=ns),
        cli=["retract", "x1", "-t", "chengdu"],
        mcp=("forget", {})),
    Row("retract at no branch, said explicitly", "no sources",
        call=lambda m, ns: m.retract("x1", sources=[], key="city", namespace=ns),
        cli=["retract", "x1", "--key", "city", "--global"],
        not_on={"mcp": "forget always acts from the current message"}),
    Row("promote without saying onto which event", "onto",
        call=lambda m, ns: m.promote("chengdu", onto=None, namespace=ns),
        cli=["promote", "chengdu"],
        wire=("POST", "/records/chengdu/promote", {}),
        not_on={"mcp": "no tool promotes: the agent stays on its branch"}),
    Row("diff at an empty anchor", "anchor_b",
        call=lambda m, ns: m.diff("a2", "", namespace=ns),
        cli=["diff", "a2", ""],
        not_on={"mcp": "no tool compares branches"}),
]  # fmt: skip


def story(memory: Memory | Client, namespace: str) -> None:
    """Chengdu on branch a2, Hangzhou on its sibling b2, in conversation ``chat``."""
    memory.add_event("u1", tree="chat", content="I'm moving", namespace=namespace)
    memory.add_event("a2", "u1", content="to Chengdu", namespace=namespace)
    memory.add_event("b2", "u1", content="to Hangzhou", namespace=namespace)
    memory.set_head("a2", namespace=namespace)
    memory.add_record(
        "chengdu", sources=["a2"], content="moving to Chengdu", key="city", namespace=namespace
    )


class Faces:
    """A fresh namespace per use on each face's own store; the server and CLI store are
    shared by the module."""

    def __init__(self, tmp: Path) -> None:
        self.memory = Memory()
        served = Memory()
        key, _ = KeyRing(served).create("faces", ["*"])
        self.live = LiveService(create_app(served)).start()  # type: ignore[arg-type]
        self.client = Client(self.live.url, key)
        self.key = key
        self.db = str(tmp / "faces.db")
        Memory.open(self.db, migrate=True).close()
        self.names = (f"ns{n}" for n in itertools.count())

    def on(self, face: str) -> tuple[Any, str]:
        """(the API object, a namespace holding the story) for ``face``."""
        namespace = next(self.names)
        if face == "cli":
            with Memory.open(self.db) as memory:
                story(memory, namespace)
            return None, namespace
        target = self.client if face == "http" else self.memory
        story(target, namespace)
        return target, namespace

    def written(self, face: str, namespace: str) -> int:
        if face == "cli":
            with Memory.open(self.db) as memory:
                return len(memory.audit(namespace=namespace))
        target = self.client if face == "http" else self.memory
        return len(target.audit(namespace=namespace))

    def cli(self, argv: list[str], namespace: str, capsys: pytest.CaptureFixture[str]) -> str:
        """Run a command; return its one-line complaint (it must fail)."""
        capsys.readouterr()
        status = main([*argv, "--db", self.db, "--namespace", namespace])
        complaint = capsys.readouterr().err.strip()
        assert status != 0, f"branchmem {' '.join(argv)} succeeded"
        assert "\n" not in complaint and complaint.startswith("branchmem"), complaint
        return complaint

    def mcp(self, tool: str, arguments: dict[str, Any], namespace: str) -> Any:
        server = build_server(Conversation(self.memory, namespace, "chat"))

        async def call() -> Any:
            async with McpClient(server) as session:
                return await session.call_tool(tool, arguments)

        return anyio.run(call)


@pytest.fixture(scope="module")
def faces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Faces]:
    made = Faces(tmp_path_factory.mktemp("faces"))
    yield made
    made.client.close()
    made.live.stop()
    made.memory.close()


def cases() -> Iterator[Any]:
    for row in ROWS:
        for face in FACES:
            if face not in row.not_on:
                yield pytest.param(row, face, id=f"{row.name}-{face}")


def test_every_row_reaches_every_face_or_says_why() -> None:
    for row in ROWS:
        reached = {
            "python": row.call, "http": row.call or row.wire, "cli": row.cli, "mcp": row.mcp,
        }  # fmt: skip
        missing = {face for face, how in reached.items() if how is None} - set(row.not_on)
        assert not missing, f"{row.name}: no call on {sorted(missing)} and no reason given"


@pytest.mark.parametrize(("row", "face"), list(cases()))
def test_the_invalid_input_is_refused_and_writes_nothing(
    row: Row, face: str, faces: Faces, capsys: pytest.CaptureFixture[str]
) -> None:
    target, namespace = faces.on(face)
    before = faces.written(face, namespace)
    if face == "cli":
        assert row.cli is not None
        complaint = faces.cli(row.cli, namespace, capsys)
    elif face == "mcp":
        assert row.mcp is not None
        called = faces.mcp(*row.mcp, namespace)
        assert called.is_error, f"{row.mcp} was accepted: {called}"
        complaint = called.content[0].text
        assert "invalid_input: " in complaint, complaint
    else:
        assert row.call is not None
        with pytest.raises(row.error) as refused:
            row.call(target, namespace)
        complaint = str(refused.value)
        if face == "http" and row.wire is not None:  # what Client refuses, the server too
            verb, path, body = row.wire
            answer = httpx.request(
                verb, f"{faces.live.url}/v1/ns/{namespace}{path}", json=body,
                headers={"Authorization": f"Bearer {faces.key}"},
            )  # fmt: skip
            assert answer.status_code == 422 and answer.json()["code"] == "invalid_input"
            complaint = answer.json()["detail"]
    assert re.search(row.names, complaint), f"{complaint!r} does not name {row.names!r}"
    assert faces.written(face, namespace) == before


# -- revise: leaving the sources out keeps them -------------------------------------------------
@pytest.mark.parametrize("face", ["python", "http", "cli"])
def test_revise_without_sources_keeps_them_on_every_face(
    face: str, faces: Faces, capsys: pytest.CaptureFixture[str]
) -> None:
    """The typo fix of issue #25: a Chengdu fact must stay off the Hangzhou branch."""
    target, namespace = faces.on(face)
    if face == "cli":
        assert main(["revise", "chengdu", "--content", "moving to Chengdu (typo fixed)",
                     "--db", faces.db, "--namespace", namespace]) == 0  # fmt: skip
        with Memory.open(faces.db) as memory:
            revised = memory.get_record("chengdu", namespace=namespace)
            hidden = not memory.explain("chengdu", "b2", namespace=namespace).visible
    else:
        target.revise("chengdu", content="moving to Chengdu (typo fixed)", namespace=namespace)
        revised = target.get_record("chengdu", namespace=namespace)
        hidden = not target.explain("chengdu", "b2", namespace=namespace).visible
    assert (revised.revision, revised.content) == (2, "moving to Chengdu (typo fixed)")
    assert revised.sources == ("a2",)
    assert hidden


def test_revise_over_http_without_the_field_keeps_the_sources(faces: Faces) -> None:
    """The wire: ``sources`` left out of the body keeps them; ``null`` is still legacy."""
    _, namespace = faces.on("http")
    url = f"{faces.live.url}/v1/ns/{namespace}/records/chengdu/revisions"
    headers = {"Authorization": f"Bearer {faces.key}"}
    kept = httpx.post(url, json={"content": "typo fixed"}, headers=headers).json()
    assert kept["sources"] == ["a2"]
    legacy = httpx.post(url, json={"content": "legacy", "sources": None}, headers=headers).json()
    assert legacy["sources"] is None


def test_keeping_sources_keeps_their_pins() -> None:
    """A kept source record stays pinned to the revision it was: revising a summary's
    wording does not quietly re-base it on a newer fact."""
    with Memory() as memory:
        story(memory, "default")
        memory.add_record("summary", sources=["chengdu"], content="moving west")
        memory.revise("chengdu", content="moving to Chengdu, Sichuan", sources=["a2"])
        memory.revise("summary", content="moving west (reworded)")
        assert memory.explain("summary", "a2").reason == "stale"
        assert memory.revise("summary", content="moving west", sources=["chengdu"]).sources == (
            "chengdu",
        )
        assert memory.explain("summary", "a2").visible


def test_the_cli_takes_one_sources_choice(faces: Faces, capsys: pytest.CaptureFixture[str]) -> None:
    _, namespace = faces.on("cli")
    complaint = faces.cli(["add-record", "tea", "-s", "a2", "--global"], namespace, capsys)
    assert "only one of -s, --global" in complaint
    capsys.readouterr()
    assert main(["add-record", "tea", "--global", "--json", "--db", faces.db,
                 "--namespace", namespace]) == 0  # fmt: skip
    assert '"sources": []' in capsys.readouterr().out
