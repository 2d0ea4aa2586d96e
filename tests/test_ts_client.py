"""The TypeScript client (clients/typescript): drift against docs/openapi.json, then Node.

The first tests read files only and always run: the generated ``schema.ts`` must name every
route and operation of the OpenAPI document, the wrapper must call every route, and its
problem codes must be the service's. The rest need Node and ``npm ci`` in the folder
(.ci/run does both): they regenerate the schema with the pinned generator and compare it byte
for byte, compile the wrapper against it (``tsc`` refuses a route or field the schema lacks)
and run ``node --test`` on ``test/``: the typed errors offline, then the client against a
running ``branchmem serve`` on the README's Chengdu story. Without Node they skip, unless
``BRANCHMEM_REQUIRE_NODE=1`` (CI).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory
from branchmem.server.problems import STATUS
from timing import scaled, wait_until_serving

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "clients" / "typescript"
DOCUMENT = ROOT / "docs" / "openapi.json"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


# -- drift, from the files alone ------------------------------------------------------------
def document_operations(document: dict[str, Any]) -> set[tuple[str, str, str]]:
    """``(METHOD, path, operationId)`` for every operation of an OpenAPI document."""
    return {
        (method.upper(), path, operation["operationId"])
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


def schema_operations(schema_ts: str) -> set[tuple[str, str, str]]:
    """The same triples as the generated ``paths`` interface of ``schema.ts`` declares them."""
    block = schema_ts.split("export interface paths {", 1)[1].split("\n}\n", 1)[0]
    found: set[tuple[str, str, str]] = set()
    path = ""
    for line in block.splitlines():
        if opened := re.fullmatch(r' {4}"(/[^"]*)": \{', line):
            path = opened[1]
        elif method := re.fullmatch(rf' {{8}}({"|".join(METHODS)}): operations\["(\w+)"\];', line):
            found.add((method[1].upper(), path, method[2]))
    return found


def drift(document: dict[str, Any], schema_ts: str) -> list[str]:
    """What the document has and the client lacks, and the reverse; empty when they agree."""
    want, have = document_operations(document), schema_operations(schema_ts)
    return [f"not in the client: {m} {p} ({o})" for m, p, o in sorted(want - have)] + [
        f"not in docs/openapi.json: {m} {p} ({o})" for m, p, o in sorted(have - want)
    ]


def test_the_generated_client_has_every_operation_of_the_document() -> None:
    document = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    schema_ts = (PACKAGE / "src" / "schema.ts").read_text(encoding="utf-8")
    assert len(schema_operations(schema_ts)) == len(document_operations(document)) > 30
    assert drift(document, schema_ts) == [], "regenerate: cd clients/typescript && npm run generate"


def test_drift_names_an_operation_the_client_lacks_or_the_document_dropped() -> None:
    document = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    schema_ts = (PACKAGE / "src" / "schema.ts").read_text(encoding="utf-8")
    added = json.loads(json.dumps(document))
    added["paths"]["/v1/ns/{namespace}/undo"] = {"post": {"operationId": "undo_post"}}
    assert drift(added, schema_ts) == [
        "not in the client: POST /v1/ns/{namespace}/undo (undo_post)"
    ]
    renamed = json.loads(json.dumps(document))
    renamed["paths"]["/v1/ns/{namespace}/visible"]["get"]["operationId"] = "visible_at"
    assert len(drift(renamed, schema_ts)) == 2
    dropped = json.loads(json.dumps(document))
    del dropped["paths"]["/v1/ns/{namespace}/search"]
    assert drift(dropped, schema_ts) == [
        "not in docs/openapi.json: GET /v1/ns/{namespace}/search "
        "(search_v1_ns__namespace__search_get)"
    ]


def test_the_wrapper_calls_every_route() -> None:
    wrapper = (PACKAGE / "src" / "client.ts").read_text(encoding="utf-8")
    called = set(re.findall(r'this\.http\.(GET|POST|PUT|DELETE|PATCH)\(\s*"([^"]+)"', wrapper))
    routes = {(m, p) for m, p, _ in document_operations(json.loads(DOCUMENT.read_text("utf-8")))}
    assert routes - called == set(), "src/client.ts has no method for these routes"
    assert called - routes == set()


def test_the_typed_errors_mirror_the_service_problem_codes() -> None:
    errors_ts = (PACKAGE / "src" / "errors.ts").read_text(encoding="utf-8")
    table = errors_ts.split("export const PROBLEM_STATUS = {", 1)[1].split("} as const;", 1)[0]
    mirrored = {code: int(status) for code, status in re.findall(r"(\w+): (\d+),", table)}
    assert mirrored == STATUS, "src/errors.ts PROBLEM_STATUS differs from problems.STATUS"
    classes = errors_ts.split("export const ERROR_CLASSES", 1)[1].split("};", 1)[0]
    assert set(re.findall(r"^  (\w+): \w+,$", classes, re.M)) == set(STATUS)


# -- with Node ------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def node_or_skip() -> str:
    """The node binary, once ``npm ci`` has run in the folder; a skip (a failure in CI) else."""
    node = shutil.which("node")
    missing = (
        "no Node.js (node v18+ and npm)"
        if node is None
        else None
        if (PACKAGE / "node_modules" / ".bin" / "openapi-typescript").exists()
        else "clients/typescript has no node_modules: cd clients/typescript && npm ci"
    )
    if missing is None and node is not None:
        return node
    if os.environ.get("BRANCHMEM_REQUIRE_NODE", "") not in ("", "0"):
        pytest.fail(f"{missing} (BRANCHMEM_REQUIRE_NODE=1)", pytrace=False)
    pytest.skip(f"{missing} to test the TypeScript client")


def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=PACKAGE, capture_output=True, text=True, timeout=scaled(300), **kwargs
    )
    assert done.returncode == 0, f"{shlex.join(argv)}\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
    return done


def test_the_committed_schema_is_what_the_generator_writes(tmp_path: Path) -> None:
    node = node_or_skip()
    script = json.loads((PACKAGE / "package.json").read_text("utf-8"))["scripts"]["generate"]
    argv = shlex.split(script)
    assert argv[0] == "openapi-typescript" and argv[-2:] == ["-o", "src/schema.ts"], script
    out = tmp_path / "schema.ts"
    run([node, "node_modules/.bin/openapi-typescript", *argv[1:-1], str(out)])
    assert out.read_text("utf-8") == (PACKAGE / "src" / "schema.ts").read_text("utf-8"), (
        "clients/typescript/src/schema.ts is not what docs/openapi.json generates: "
        "cd clients/typescript && npm run generate"
    )


def test_the_client_against_a_running_server_on_the_chengdu_story(tmp_path: Path) -> None:
    node = node_or_skip()
    run([node, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json"])  # fails on drift too
    db = tmp_path / "story.db"
    Memory.open(str(db)).close()
    cli = [sys.executable, "-m", "branchmem.cli"]
    key = subprocess.run(
        [*cli, "keys", "create", "--tenant", "ts", "--namespace", "story", "--db", str(db)],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    port = free_port()
    serve = subprocess.Popen(
        [*cli, "serve", "--db", str(db), "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(serve, url)
        env = {**os.environ, "BRANCHMEM_URL": url, "BRANCHMEM_API_KEY": key}
        env["BRANCHMEM_NAMESPACE"] = "story"
        done = run([node, "--test", "--test-reporter=tap", "test/"], env=env)
    finally:
        serve.terminate()
        serve.wait(timeout=scaled(20))
    summary = dict(re.findall(r"^# (pass|fail|skipped) (\d+)$", done.stdout, re.M))
    assert summary.get("fail") == "0" and summary.get("skipped") == "0", done.stdout[-2000:]
    written = "".join(p.read_text("utf-8") for p in (PACKAGE / "test").glob("*.test.mjs"))
    assert int(summary.get("pass", "0")) == len(re.findall(r"^test\(", written, re.M)) >= 10
