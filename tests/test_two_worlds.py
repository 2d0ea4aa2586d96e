"""Tenant isolation, two worlds: what tenant A sees is the same with or without tenant B.

World 1 holds A's data only; world 2 the same A steps with B's (and A's other namespace's)
random calls around them, B's text equal to A's where it can be (tests/two_worlds.py). Every
routed operation is called with its example arguments on every face (``Memory`` in memory,
on SQLite and on PostgreSQL; HTTP with a key bound to ``a``; the TypeScript client against
``branchmem serve``), and every answer, error, header and receipt field A gets must be the
same in both worlds once ``two_worlds.normalise`` took out the clock and the random receipt
keys. The forget receipts are where a store-wide byte check would show: A writes B's secret
as its guess, forgets it (dry run and real) and verifies its receipts, among them receipts
carrying fingerprints A chose.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import two_worlds as tw
from branchmem import Memory
from branchmem.api.operations import operations
from branchmem.api.protocol import MemoryAPI
from branchmem.store import open_store
from timing import scaled, wait_until_serving

pytest_plugins = ["pg"]  # the pg_dsn fixture

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "clients" / "typescript"
SEEDS = {"memory": 1, "sqlite": 2, "postgresql": 3, "http-memory": 4, "http-sqlite": 5, "ts": 6}


def scripts(seed: int, a_steps: list[tw.Step] | None = None) -> tuple[list[tw.Step], list[tw.Step]]:
    """World 1's script (A alone) and world 2's (A's steps among B's), from one seed."""
    mine = tw.a_script() if a_steps is None else a_steps
    return mine, tw.interleave(mine, seed)


def failing(outcomes: list[tuple[str, Any]]) -> list[str]:
    """The A steps that failed: an error, or a status of 400 and more (a paged list: its
    first page)."""
    found = []
    for label, answer in outcomes:
        first = answer[0] if isinstance(answer, list) else answer
        if "error" in first or first.get("status", 200) >= 400:
            found.append(label)
    return found


def assert_exercised(
    face: str, outcomes: list[tuple[str, Any]], script: list[tw.Step] | None = None
) -> None:
    """The face ran the calls, not just refused them alike in both worlds: A's steps fail
    on it exactly where they fail on ``Memory()`` (ids of B, a receipt naming B, ...)."""
    reference = failing(tw.run_python(Memory(), tw.a_script() if script is None else script))
    assert len(reference) < 20
    assert failing(outcomes) == reference, face


def assert_same(
    face: str, one: Any, two: Any, secrets: tuple[dict[str, str], ...] = ({}, {})
) -> None:
    found = tw.compare(face, tw.normalise(one, secrets[0]), tw.normalise(two, secrets[1]))
    assert not found, f"{len(found)} A step(s) answered differently:\n" + "\n".join(found)


# -- the table ----------------------------------------------------------------------------
def test_every_routed_operation_has_example_calls() -> None:
    """A new operation fails here until it has its line in ``two_worlds.CALLS``."""
    missing = []
    for op in operations().values():
        try:
            assert tw.calls_of(op)
        except tw.MissingExample as error:
            missing.append(str(error))
    assert not missing, "\n".join(missing)
    assert set(tw.CALLS) <= set(operations()), set(tw.CALLS) - set(operations())
    probed = {step.op for step in tw.probes(1)}
    assert probed == set(operations())


def test_every_in_process_operation_has_example_calls() -> None:
    """A public ``Memory`` method without a route that acts in a namespace joins the Python
    face's two worlds: it fails here until it has its line in ``two_worlds.IN_PROCESS``."""
    routed = {name for name in vars(MemoryAPI) if not name.startswith("_")}
    namespaced = {
        name
        for name, value in vars(Memory).items()
        if not name.startswith("_")
        and name not in routed
        and callable(value)
        and "namespace" in inspect.signature(value).parameters
    }
    assert namespaced == set(tw.IN_PROCESS) | set(tw.NOT_CALLED), (
        "give it a line in two_worlds.IN_PROCESS",
        namespaced ^ (set(tw.IN_PROCESS) | set(tw.NOT_CALLED)),
    )
    for step in tw.in_process_probes():
        assert step.kwargs.keys() <= inspect.signature(getattr(Memory, step.op)).parameters.keys()


def test_a_missing_example_fails_rather_than_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {k: v for k, v in tw.CALLS.items() if k != "blame"}
    monkeypatch.setattr(tw, "CALLS", calls)
    with pytest.raises(tw.MissingExample, match="'blame' has no line"):
        tw.probes()
    monkeypatch.setattr(tw, "CALLS", {**calls, "blame": {"session": "s1"}})
    with pytest.raises(tw.MissingExample, match="required parameter 'delivery'"):
        tw.probes()


def test_world_two_really_holds_b_text_overlapping_a() -> None:
    """The worlds differ where it matters: B writes A's sentences and ids, and its secret
    (A's guess), before A's first write and between A's writes."""
    one, two = scripts(SEEDS["memory"])
    theirs = [step for step in two if step.who != "a"]
    assert len(theirs) >= 60 and {s.who for s in theirs} == {"b", "a2"}
    assert two[0].who != "a" and two[-1].who != "a"
    history = [i for i, s in enumerate(two) if s.label.startswith("h")]
    assert any(s.who != "a" for s in two[history[0] : history[-1]]), "B between A's writes"
    texts = json.dumps([s.kwargs for s in theirs])
    assert tw.SECRET in texts and tw.T_CHENGDU in texts and '"u2"' in texts
    assert [s for s in two if s.who == "a"] == one


# -- Python: Memory on every backend -------------------------------------------------------
def sqlite_files(tmp_path: Path) -> tuple[str, str]:
    """A database file per world, under the same name (a byte check names the files)."""
    urls = []
    for world in ("1", "2"):
        (tmp_path / world).mkdir()
        urls.append(str(tmp_path / world / "world.db"))
    return urls[0], urls[1]


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def two_memories(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, Memory, Memory]]:
    backend = request.param
    with contextlib.ExitStack() as stack:
        urls: tuple[str | None, ...] = (None, None)
        if backend == "sqlite":
            urls = sqlite_files(tmp_path)
        elif backend == "postgresql":
            from pg import fresh_database

            dsn = request.getfixturevalue("pg_dsn")
            urls = tuple(stack.enter_context(fresh_database(dsn, "two_worlds")) for _ in "12")
        memories = [Memory() if url is None else Memory.open(url) for url in urls]
        for memory in memories:
            stack.callback(memory.close)  # before the databases are dropped
        yield backend, memories[0], memories[1]


def test_python_face(two_memories: tuple[str, Memory, Memory]) -> None:
    """Every routed operation, then the in-process ones (``two_worlds.IN_PROCESS``)."""
    backend, memory1, memory2 = two_memories
    script = tw.a_script(in_process=True)
    one, two = scripts(SEEDS[backend], script)
    seen1 = tw.run_python(memory1, one)
    assert_exercised(f"python/{backend}", seen1, script)
    assert {label.split("#")[0] for label, _ in seen1 if label.startswith("in:")} == {
        f"in:{name}" for name in tw.IN_PROCESS
    }
    assert_same(f"python/{backend}", seen1, tw.run_python(memory2, two))


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_python_face_reading_the_key_index(backend: str, tmp_path: Path) -> None:
    """The same with every view read from the tree's key index where the anchor allows
    (``path_events_per_entry=0``): the read ``currents`` answers from (by default a short
    path is read whole, and ``currents`` says None: ask ``visible``)."""
    urls = sqlite_files(tmp_path) if backend == "sqlite" else (None, None)
    memory1, memory2 = (
        Memory(store=None if url is None else open_store(url), path_events_per_entry=0)
        for url in urls
    )
    try:
        script = tw.a_script(in_process=True)
        one, two = scripts(SEEDS[backend], script)
        seen1 = tw.run_python(memory1, one)
        assert_exercised(f"python/{backend}/key index", seen1, script)
        currents = [answer for label, answer in seen1 if label.startswith("in:currents")]
        assert any(isinstance(answer.get("value"), list) for answer in currents), currents
        assert_same(f"python/{backend}/key index", seen1, tw.run_python(memory2, two))
    finally:
        memory1.close()
        memory2.close()


def test_python_forget_receipts_cannot_test_guesses_of_other_tenants_text(tmp_path: Path) -> None:
    """The attack alone, on SQLite: A's guess is B's secret; A forgets its copy and verifies
    its real receipt, a dry run's, and receipts with fingerprints it chose. World 1 has no
    copy left, world 2 has B's: the answers must not tell them apart."""
    attack = tw.a_script()
    attack = [s for s in attack if s.label.startswith("h") or s.op in ("forget", "verify_receipt")]
    one, two = scripts(SEEDS["sqlite"], attack)
    memory1, memory2 = (Memory.open(url) for url in sqlite_files(tmp_path))
    try:
        assert_same(
            "python/sqlite attack", tw.run_python(memory1, one), tw.run_python(memory2, two)
        )
    finally:
        memory1.close()
        memory2.close()


# -- HTTP: the FastAPI app, keys bound to A's namespace --------------------------------------
class Service:
    """One world's app on ``memory``, with a key per namespace (B's and a2's in world 2)."""

    def __init__(self, memory: Memory, whose: tuple[str, ...]) -> None:
        from fastapi.testclient import TestClient

        from branchmem.server import KeyRing, create_app

        self.memory = memory
        ring = KeyRing(memory)
        tenants = {"a": "tenant-a", "a2": "tenant-a", "b": "tenant-b"}
        self.keys: dict[str, str] = {}
        self.key_ids: dict[str, str] = {}
        for who in whose:
            key, grant = ring.create(tenants[who], [tw.NAMESPACES[who]])
            self.keys[who], self.key_ids[who] = key, grant.key_id
        self.http = TestClient(create_app(memory), raise_server_exceptions=False)

    def send(self, verb: str, target: str, body: Any, who: str) -> Any:
        headers = {"Authorization": f"Bearer {self.keys[who]}"}
        if verb == "GET":
            return self.http.get(target, headers=headers)
        return self.http.post(target, headers=headers, json=body)

    @property
    def secrets(self) -> dict[str, str]:
        return {key_id: f"<key {who}>" for who, key_id in self.key_ids.items()}

    def extras(self) -> list[tuple[str, Any]]:
        """What A's key sees outside ``/v1/ns``: its namespaces and who it is."""
        seen = []
        for target in ("/v1/namespaces", "/v1/whoami"):
            response = self.send("GET", target, None, "a")
            seen.append((target, {"status": response.status_code, "body": response.json()}))
        return seen


@pytest.fixture(params=["memory", "sqlite"])
def two_services(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, Service, Service]]:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    if request.param == "memory":
        memories = Memory(), Memory()
    else:
        memories = tuple(Memory.open(url) for url in sqlite_files(tmp_path))
    services = Service(memories[0], ("a",)), Service(memories[1], ("a", "a2", "b"))
    with services[0].http, services[1].http:
        yield request.param, *services
    for memory in memories:
        memory.close()


def test_http_face(two_services: tuple[str, Service, Service]) -> None:
    backend, world1, world2 = two_services
    one, two = scripts(SEEDS[f"http-{backend}"])
    seen1 = tw.run_http(world1.send, one) + world1.extras()
    seen2 = tw.run_http(world2.send, two) + world2.extras()
    assert_exercised(f"http/{backend}", seen1)
    assert_same(f"http/{backend}", seen1, seen2, (world1.secrets, world2.secrets))


# -- TypeScript: the client against branchmem serve -------------------------------------------
RUNNER = """
import { readFileSync } from "node:fs";
const [, , moduleUrl, planFile] = process.argv;
const { Client, BranchmemError } = await import(moduleUrl);
const plan = JSON.parse(readFileSync(planFile, "utf8"));
const clients = {};
for (const [who, { key, namespace }] of Object.entries(plan.keys)) {
  clients[who] = new Client(plan.url, { apiKey: key, namespace });
}
const results = {};
function resolve(value) {
  if (Array.isArray(value)) return value.map(resolve);
  if (value && typeof value === "object") {
    if ("$ref" in value) {
      let found = results[value.$ref];
      for (const part of value.path) found = found == null ? undefined : found[part];
      if (value.set && found && typeof found === "object") found = { ...found, ...value.set };
      return found ?? null;
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v)]));
  }
  return value;
}
const seen = [];
for (const step of plan.steps) {
  let answer;
  try {
    const value = await clients[step.who][step.method](...resolve(step.args));
    if (step.label) results[step.label] = value;
    answer = { value: value === undefined ? null : value };
  } catch (error) {
    answer = error instanceof BranchmemError
      ? { error: error.name, problem: error.problem }
      : { error: String(error) };
  }
  if (step.who === "a") seen.push([step.label, answer]);
}
console.log(JSON.stringify(seen));
"""

# a parameter taking an object of named fields (the rest of the call's arguments)
BAG = re.compile(r"\w+In|\w+Options|Omit<.+>|\{.*\}", re.S)


def ts_methods() -> dict[str, list[tuple[str, bool]]]:
    """The TypeScript client's methods that are routed operations, from ``client.ts``: the
    operation's name -> [(Python parameter name or "", takes the remaining arguments)]."""
    source = (PACKAGE / "src" / "client.ts").read_text("utf-8")
    found = {}
    table = operations()
    for name, params in re.findall(
        r"^  (?:async )?(\w+)\(((?:[^()]|\([^()]*\))*)\):\s*Promise<", source, re.M
    ):
        snake = re.sub(r"([A-Z])", lambda m: "_" + m[1].lower(), name)
        if snake not in table:
            continue
        shape = []
        for param in split_top_level(params):
            pname, _, ptype = param.split("=", 1)[0].partition(":")
            ptype = ptype.strip()
            pname = re.sub(r"([A-Z])", lambda m: "_" + m[1].lower(), pname.strip().rstrip("?"))
            bag = BAG.fullmatch(ptype) is not None
            if not bag:
                assert pname in {p.name for p in table[snake].params}, (name, pname)
            shape.append(("" if bag else pname, bag))
        found[snake] = shape
    return found


def split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for i, char in enumerate(text):
        if char in "<({[":
            depth += 1
        elif char in ")}]" or (char == ">" and text[i - 1] != "="):
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [p.strip() for p in [*parts, current] if p.strip()]


# What the TypeScript client has no place for, though the API takes it: the step is sent
# without it (in both worlds alike). An entry the client gains fails the test below.
TS_CANNOT_SEND = {("stale_deliveries", "as_of")}


def ts_step(step: tw.Step, methods: dict[str, list[tuple[str, bool]]]) -> dict[str, Any]:
    """One step as the runner takes it: the camelCase method and its arguments, positional
    ones by name, the rest in the method's options object. An argument the method has no
    place for must be in ``TS_CANNOT_SEND`` and is left out."""
    shape = methods[step.op]
    kwargs = dict(step.kwargs)
    args: list[Any] = []
    for pname, bag in shape:
        if bag:
            args.append(tw.as_json({k: v for k, v in kwargs.items() if v is not None}))
            kwargs = {}
        else:
            args.append(tw.as_json(kwargs.pop(pname, None)))
    left = {(step.op, name) for name, value in kwargs.items() if value is not None}
    assert left <= TS_CANNOT_SEND, f"the TypeScript client cannot send {sorted(left)}"
    while args and args[-1] is None:
        args.pop()
    method = re.sub(r"_([a-z])", lambda m: m[1].upper(), step.op)
    return {"who": step.who, "method": method, "args": args, "label": step.label}


def test_the_typescript_client_sees_its_operations_with_their_arguments() -> None:
    methods = ts_methods()
    assert len(methods) >= 30
    assert methods["forget"] == [("kind", False), ("id", False), ("", True)]
    assert methods["verify_receipt"] == [("receipt", False)]
    assert methods["add_event"] == [("", True)]
    assert methods["explain"] == [("record_id", False), ("anchor", False), ("", True)]
    for op, name in TS_CANNOT_SEND:  # still missing (else: take it out of the set)
        assert name in {p.name for p in operations()[op].params}
        assert all(not bag and pname != name for pname, bag in methods[op]), (op, name)


def start_world(
    directory: Path, whose: tuple[str, ...]
) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    from branchmem.server import KeyRing
    from test_ts_client import free_port

    directory.mkdir()
    db = directory / "world.db"
    memory = Memory.open(str(db))
    ring = KeyRing(memory)
    tenants = {"a": "tenant-a", "a2": "tenant-a", "b": "tenant-b"}
    keys, key_ids = {}, {}
    for who in whose:
        key, grant = ring.create(tenants[who], [tw.NAMESPACES[who]])
        keys[who] = {"key": key, "namespace": tw.NAMESPACES[who]}
        key_ids[grant.key_id] = f"<key {who}>"
    memory.close()
    port = free_port()
    serve = subprocess.Popen(
        [sys.executable, "-m", "branchmem.cli", "serve", "--db", str(db), "--port", str(port),
         "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return serve, {"url": f"http://127.0.0.1:{port}", "keys": keys, "key_ids": key_ids}


def compiled_client(node: str) -> Path:
    """``dist/index.js``, compiled when a source is newer (as test_ts_client.py compiles)."""
    index = PACKAGE / "dist" / "index.js"
    sources = [*(PACKAGE / "src").glob("*.ts"), PACKAGE / "tsconfig.json"]
    if not index.exists() or index.stat().st_mtime < max(p.stat().st_mtime for p in sources):
        done = subprocess.run(
            [node, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json"],
            cwd=PACKAGE, capture_output=True, text=True, timeout=scaled(300),
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return index


def test_typescript_face(tmp_path: Path) -> None:
    from test_ts_client import node_or_skip

    node = node_or_skip()
    index = compiled_client(node)
    methods = ts_methods()
    one, two = scripts(SEEDS["ts"])
    runner = tmp_path / "runner.mjs"
    runner.write_text(RUNNER, "utf-8")
    worlds = [start_world(tmp_path / "1", ("a",)), start_world(tmp_path / "2", ("a", "a2", "b"))]
    try:
        running = []
        for n, ((serve, plan), steps) in enumerate(zip(worlds, (one, two), strict=True), 1):
            wait_until_serving(serve, plan["url"])
            file = tmp_path / f"plan{n}.json"
            body = {**plan, "steps": [ts_step(step, methods) for step in steps]}
            file.write_text(json.dumps(body), "utf-8")
            running.append(subprocess.Popen(
                [node, str(runner), index.as_uri(), str(file)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            ))  # fmt: skip
        seen = []
        for process in running:
            out, err = process.communicate(timeout=scaled(120))
            assert process.returncode == 0, err[-3000:]
            seen.append([tuple(pair) for pair in json.loads(out)])
    finally:
        for serve, _ in worlds:
            serve.terminate()
            serve.wait(timeout=scaled(20))
    assert len(seen[0]) == len(one) > 80
    assert_exercised("typescript", seen[0])
    assert_same("typescript", seen[0], seen[1], (worlds[0][1]["key_ids"], worlds[1][1]["key_ids"]))
