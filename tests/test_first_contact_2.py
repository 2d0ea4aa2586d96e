"""What a new user meets first, second round: the README says what the code does (the MCP
tools, the citation line, diff and promote), the TypeScript client's README says which key
its tests need, the Mem0 page's example runs offline or says it needs a model key, a URL
that is not a branchmem service says so, an import error names the file uploaded, and
``branchmem deliveries`` prints times a person reads."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import zipfile
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory
from branchmem.cli import main
from test_docs import blocks, literal_prefix, with_checks

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MCP = ROOT / "src" / "branchmem" / "integrations" / "mcp.py"
TS = ROOT / "clients" / "typescript"
NUMBERS = {"three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def section(text: str, start: str, end: str) -> str:
    opened = text.index(start)
    return text[opened : text.index(end, opened + len(start))]


def readme_python(heading: str) -> str:
    """The Python blocks of the README section under ``heading``."""
    part = section(README, heading, "\n### ")
    return "\n".join(code for language, code, _ in blocks(part) if language == "python")


# -- the README ------------------------------------------------------------------------
def mcp_tools() -> list[str]:
    """The functions ``mcp.py`` registers with ``@server.tool()``."""
    tree = ast.parse(MCP.read_text(encoding="utf-8"))
    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and any(
            isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "tool"
            for d in node.decorator_list
        )
    ]


def test_the_readme_names_every_mcp_tool_and_counts_them_right() -> None:
    tools = mcp_tools()
    assert len(tools) >= 5, tools
    said = section(README, "**MCP**", "```")
    named = re.findall(r"`(\w+)`", said.split('pip install "branchmem[mcp]"')[0])
    assert sorted(named) == sorted(tools), (named, tools)
    counted = re.search(r"\b(\w+) tools\b", said)
    assert counted is not None and NUMBERS.get(counted.group(1)) == len(tools), said


def test_the_readme_sources_line_is_the_one_cite_writes() -> None:
    with Memory() as mem:  # the README's story up to its search section
        mem.add_event("u1", content="I need help planning a move.")
        mem.add_event("u2", "u1", content="I'm moving to Chengdu next month.")
        mem.add_record("city-1", sources=["u2"], content="moving to Chengdu", key="city")
        mem.add_event("u2b", "u1", content="I'm moving to Hangzhou next month.")
        mem.add_record("city-2", sources=["u2b"], content="moving to Hangzhou", key="city")
        written = mem.context("u2b", query="moving", cite=True, session="chat-7").text
    sources = written.splitlines()[-1]
    claimed = re.findall(r"\[1\] city-2 <- u2b \([^)]*\)", README)
    assert claimed and set(claimed) == {sources}, (claimed, sources)
    assert "cite=True" in readme_python("### Search and context")  # an example that runs


def test_the_diff_and_promote_story_keeps_each_branch_its_own_city() -> None:
    code = readme_python("### Diff and promote")
    claims = {
        call: literal_prefix(comment)
        for call, comment in re.findall(
            r'^\s*(mem\.current\("city", "u2b?"\)\.\w+)\s+(#.*)$', code, re.M
        )
    }
    assert claims == {
        'mem.current("city", "u2b").content': "'moving to Hangzhou'",
        'mem.current("city", "u2").content': "'moving to Chengdu'",
    }, claims  # test_docs.py runs the block, so each claim is checked against the code
    told = " ".join(section(README, "### Diff and promote", "```").split())
    assert "each branch keeps its own city" in told, told


# -- the TypeScript client's README ----------------------------------------------------
def test_the_typescript_readme_says_which_key_its_tests_need() -> None:
    said = (TS / "README.md").read_text(encoding="utf-8")
    read = set()
    for test in (TS / "test").glob("*.test.mjs"):
        read |= set(re.findall(r"process\.env\.(\w+)", test.read_text(encoding="utf-8")))
    assert read >= {"BRANCHMEM_URL", "BRANCHMEM_API_KEY", "BRANCHMEM_NAMESPACE"}
    assert all(name in said for name in read), read
    # how to make the key: bound to the tests' namespace only, as tests/test_ts_client.py does
    made = re.search(r"branchmem keys create --tenant \S+ --namespace (\w+)", said)
    assert made is not None, "the README does not say how to make the tests' key"
    assert f"BRANCHMEM_NAMESPACE={made.group(1)}" in said
    ts_test = (ROOT / "tests" / "test_ts_client.py").read_text(encoding="utf-8")
    assert '"keys", "create", "--tenant", "ts", "--namespace", "story"' in ts_test
    assert "'*'" in said and "Forbidden" in said  # why a key for every namespace fails
    assert "not a model provider's" in said


# -- docs/mem0.md ----------------------------------------------------------------------
def test_the_mem0_page_runs_offline_or_says_it_needs_a_model_key(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "mem0.md").read_text(encoding="utf-8")
    ran = 0
    for language, code, skip in blocks(page):
        if language != "python":
            continue
        if re.search(r"(?<![\w.])Mem0\(\)", code):  # Mem0's defaults: OpenAI's models
            assert skip is not None and "OPENAI_API_KEY" in skip, code[:200]
            continue
        if skip is not None or not code.startswith(("from ", "import ")):
            continue  # a fragment of an example above
        pytest.importorskip("mem0", reason="the Mem0 examples need the 'mem0' extra")
        env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")])
        )
        env["OPENAI_BASE_URL"] = "http://127.0.0.1:9"  # any model call would fail
        done = subprocess.run(
            [sys.executable, "-c", with_checks(code)], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, (code, done.stderr[-3000:])
        ran += 1
    assert ran >= 1, "docs/mem0.md has no example that runs offline"


# -- a URL that answers HTTP but is not branchmem ---------------------------------------
def handler(status: int, content_type: str, body: bytes) -> type[BaseHTTPRequestHandler]:
    class Answer(BaseHTTPRequestHandler):
        def answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = answer

        def log_message(self, *args: object) -> None:
            pass

    return Answer


OTHER_SERVERS = {
    "a web server's 404 page": (404, "text/html", b"<html><h1>Not Found</h1></html>"),
    "a web page for every path": (200, "text/html", b"<!doctype html><p>Welcome</p>"),
    "another JSON service": (200, "application/json", b'{"status": "ok", "data": []}'),
}


@pytest.fixture(params=sorted(OTHER_SERVERS))
def other_server(request: pytest.FixtureRequest) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(*OTHER_SERVERS[request.param]))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


CALLS: dict[str, Callable[[Any], Any]] = {  # a Client or an AsyncClient
    "visible": lambda mem: mem.visible("u1"),
    "add_event": lambda mem: mem.add_event("u1", content="hello"),
    "namespaces": lambda mem: mem.namespaces(),
    "path": lambda mem: mem.path("u1"),
}


def test_a_url_that_is_not_branchmem_is_said_to_be_so(other_server: str) -> None:
    from branchmem.client import Client, NotABranchmemService
    from branchmem.errors import Unavailable

    said = f"{other_server}/ answered but is not a branchmem service (no /healthz version"
    for name, call in CALLS.items():
        with Client(other_server + "/") as mem, pytest.raises(NotABranchmemService) as raised:
            call(mem)
        assert str(raised.value).startswith(said), (name, str(raised.value))
        assert isinstance(raised.value, Unavailable) and raised.value.url == other_server


def test_the_async_client_says_so_too(other_server: str) -> None:
    from branchmem.async_client import AsyncClient
    from branchmem.client import NotABranchmemService

    async def ask() -> list[str]:
        found = []
        async with AsyncClient(other_server) as mem:
            for call in CALLS.values():
                with pytest.raises(NotABranchmemService) as raised:
                    await call(mem)
                found.append(str(raised.value))
        return found

    said = f"{other_server}/ answered but is not a branchmem service (no /healthz version"
    assert all(message.startswith(said) for message in asyncio.run(ask()))


def test_the_cli_says_so_in_one_line(other_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["visible", "u1", "--url", other_server, "--api-key", "bm_x_y"]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip().startswith(
        f"branchmem: {other_server}/ answered but is not a branchmem service"
    ), captured.err
    assert len(captured.err.strip().splitlines()) == 1 and "Traceback" not in captured.err


@pytest.fixture
def service() -> Iterator[tuple[str, str, Memory]]:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from branchmem.server import KeyRing, create_app
    from test_server_harness import LiveService

    memory = Memory()
    api_key, _ = KeyRing(memory).create("first", ["alice"])
    live = LiveService(create_app(memory)).start()
    yield live.url, api_key, memory
    live.stop()
    memory.close()


def test_a_branchmem_service_is_not_mistaken_for_another(
    service: tuple[str, str, Memory],
) -> None:
    """Its refusals stay the library's classes, and a 404 of the service is its own."""
    from branchmem.client import Client
    from branchmem.errors import NotFoundError, Unauthorized

    url, api_key, _ = service
    with Client(url, api_key) as mem:
        with pytest.raises(NotFoundError):
            mem.get_event("nowhere", namespace="alice")
        mem.add_event("u1", content="hello", namespace="alice")
        assert [e.id for e in mem.path("u1", namespace="alice")] == ["u1"]
    with Client(url, "bm_nosuch_key") as stranger, pytest.raises(Unauthorized):
        stranger.visible("u1", namespace="alice")


# -- an import error over HTTP ---------------------------------------------------------
def test_an_import_error_names_the_uploaded_file(
    service: tuple[str, str, Memory], tmp_path: Path
) -> None:
    import httpx

    from branchmem.client import Client
    from branchmem.errors import ImportFormatError

    url, api_key, _ = service
    export = tmp_path / "my-chats.zip"
    with zipfile.ZipFile(export, "w") as archive:  # two JSON files: which one is meant?
        archive.writestr("a.json", "[]")
        archive.writestr("b.json", "[]")
    with Client(url, api_key) as mem, pytest.raises(ImportFormatError) as raised:
        mem.import_file(str(export), namespace="alice")
    said = str(raised.value)
    assert "my-chats.zip is a zip archive" in said, said
    assert "branchmem-import" not in said and "export.zip" not in said, said

    answered = httpx.post(
        url + "/v1/ns/alice/import", params={"filename": "history.json"},
        content=json.dumps([{"title": "t", "mapping": {}}]).encode(),
        headers={"Authorization": f"Bearer {api_key}"},
    )  # fmt: skip
    assert answered.status_code == 200, answered.text
    assert answered.json()["source"] == "history.json"


# -- branchmem deliveries --------------------------------------------------------------
def test_deliveries_prints_times_in_iso_8601_utc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", str(tmp_path / "memory.db")]
    with Memory.open(db[1]) as mem:
        mem.add_event("u1", content="I'm moving to Chengdu next month.")
        mem.add_record("city-1", sources=["u1"], content="moving to Chengdu", key="city")
        given = mem.context("u1", session="chat-7")
        (delivery,) = mem.deliveries("chat-7")
    assert main(["deliveries", "chat-7", *db]) == 0
    shown = capsys.readouterr().out
    from datetime import UTC, datetime

    stamp = datetime.fromtimestamp(delivery.time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert stamp in shown, shown
    assert f"{delivery.time:.3f}" not in shown and str(int(delivery.time)) not in shown
    assert "city-1@1" in shown and str(given.delivery) in shown
