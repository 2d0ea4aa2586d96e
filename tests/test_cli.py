"""The command line calls the API it is named after; errors become one-line messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.api.operations import operations
from branchmem.cli import app, main
from branchmem.server.keys import split_key
from timing import scaled

# API methods without a command of their own, and what to use instead
NO_COMMAND = {
    "change_stamp": "a number every write moves, for in-process caches over a shared store",
    "snapshot": "several reads in one snapshot of this process's connection",
    "transaction": "several writes as one transaction of this process's connection",
    "open": "--db URL on every command",
    "close": "each command closes what it opened",
    "store": "the backend object; --db names it",
    "acting_as": "--actor NAME on every command",
    "repair": "takes a Python function (the deriver)",
    "is_visible": "explain prints visible/hidden (--json: .visible)",
    "mode": "an attribute, not a call",
    "write_generation": "an attribute: this process's write count, for in-process caches",
    "finish_cleanup": "opening a store resumes a pending erase cleanup: every command does it",
    "process_local": "an attribute: whether only this process writes the store",
    "schema_version": "branchmem migrate URL prints it",
    "api_keys": "branchmem keys create/list/delete",
    "currents": "a cost hint for an in-process cache; visible and current answer the same",
    "forget_with": "takes a Python function (the cleaner of the caller's own store)",
    "when_free": "this process's lock, for the service's event loop",
}
OTHER_COMMANDS = [
    "import", "tree", "namespaces", "scan-store", "migrate", "serve", "mcp", "demo", "keys create",
    "keys list", "keys delete",
]  # fmt: skip
COMMANDS = [name.replace("_", "-") for name in operations()] + OTHER_COMMANDS


def registered() -> dict[str, object]:
    import typer.main

    group = typer.main.get_command(app)
    names: dict[str, object] = {}
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        sub = getattr(command, "commands", None)
        if sub:
            names.update({f"{name} {s}": c for s, c in sub.items()})
        else:
            names[name] = command
    return names


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command.split(), "--help"]) == 0
    shown = capsys.readouterr().out
    assert "Usage: branchmem " + command in " ".join(shown.split())


def test_every_public_memory_method_has_a_command() -> None:
    public = {name for name in vars(Memory) if not name.startswith("_")}
    commands = set(registered())
    missing = {
        name
        for name in public - set(NO_COMMAND)
        if name.replace("_", "-") not in commands and name.rstrip("_") not in commands
    }
    assert missing == set(), f"add {sorted(missing)} to MemoryAPI (api/protocol.py)"
    assert set(registered()) == set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_json(command: str) -> None:
    if command in ("serve", "demo"):
        return  # a server, and a story told in prose: no value to print
    options = {opt for p in registered()[command].params for opt in p.opts}  # type: ignore[attr-defined]
    assert "--json" in options


def test_the_anchor_is_an_argument_everywhere() -> None:
    for command in registered().values():
        for param in command.params:  # type: ignore[attr-defined]
            if param.name == "anchor":
                assert param.param_type_name == "argument", command


def test_migrate_creates_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", str(tmp_path / "new.db")]) == 0
    assert "schema version" in capsys.readouterr().out


def test_import_prints_a_summary_and_the_head_path_is_the_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = {
        "id": "chat-1",
        "title": "moving",
        "chat": {
            "history": {
                "currentId": "m3b",
                "messages": {
                    "m1": {"id": "m1", "parentId": None, "childrenIds": ["m2"], "role": "user",
                           "content": "I'm moving", "timestamp": 1},
                    "m2": {"id": "m2", "parentId": "m1", "childrenIds": ["m3", "m3b"],
                           "role": "assistant", "content": "Where to?", "timestamp": 2},
                    "m3": {"id": "m3", "parentId": "m2", "childrenIds": [], "role": "user",
                           "content": "Chengdu", "timestamp": 3},
                    "m3b": {"id": "m3b", "parentId": "m2", "childrenIds": [], "role": "user",
                            "content": "Hangzhou", "timestamp": 4},
                },
            }
        },
    }  # fmt: skip
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(export))
    db = str(tmp_path / "mem.db")
    assert main(["import", str(path), "--db", db, "--namespace", "alice", "--dry-run"]) == 0
    assert "nothing written" in capsys.readouterr().out
    assert not Path(db).exists()
    assert main(["import", str(path), "--db", db, "--namespace", "alice"]) == 0
    shown = capsys.readouterr().out
    assert "conversations: 1" in shown
    row = next(line for line in shown.splitlines() if "chat-1" in line)
    assert "moving" in row and "m3b" in row and "currentId" in row, row
    with Memory.open(db) as mem:
        head = mem.head("chat-1", namespace="alice")
    assert head is not None and head.endswith("m3b")
    assert main(["import", str(path), "--db", db, "-n", "alice", "--json"]) == 0
    (outcome,) = json.loads(capsys.readouterr().out)["outcomes"]
    assert (outcome["tree"], outcome["title"], outcome["head"]) == ("chat-1", "moving", head)
    assert outcome["added"] == 0 and outcome["events"] == 4
    assert main(["conversations", "--db", db, "-n", "alice", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["tree"], listed["head"], listed["events"]) == ("chat-1", head, 4)
    with Memory.open(db) as mem:
        head = mem.head("chat-1", namespace="alice")
        assert head is not None
        assert [e.content for e in mem.path(head, namespace="alice")][-1] == "Hangzhou"


def test_a_library_error_is_a_one_line_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    assert main(["import", str(bad), "--db", str(tmp_path / "m.db")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("branchmem: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["visible"],  # a missing argument
        ["context", "u1", "--budget", "abc", "--db", "x.db"],  # a value of the wrong type
        ["no-such-command"],
        ["visible", "u1", "--no-such-option"],
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("branchmem") and err.count("\n") == 1 and "Traceback" not in err


def test_no_command_shows_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "get-event" in capsys.readouterr().out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import branchmem

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"branchmem {branchmem.__version__}"
    assert branchmem.__version__[0].isdigit()


def test_reading_a_store_that_does_not_exist_does_not_create_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "typo.db"
    for argv in (["visible", "u1"], ["heads"], ["conversations"], ["keys", "list"]):
        assert main([*argv, "--db", str(typo)]) == 1
        assert capsys.readouterr().err.strip() == f"branchmem: no store at {typo}"
    assert not typo.exists()


def test_unknown_parents_and_sources_are_accepted_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", str(tmp_path / "m.db")]
    assert main(["add-event", "x9", "nothere", *db]) == 0
    assert capsys.readouterr().err.strip() == (
        "branchmem: warning: event 'x9': parent 'nothere' is not in the store yet; "
        "x9 stays hidden until it arrives"
    )
    assert main(["add-record", "f9", "-s", "ghost", "-s", "x9", *db]) == 0
    warned = capsys.readouterr().err.strip().splitlines()
    assert len(warned) == 1 and "source 'ghost'" in warned[0] and "f9 stays hidden" in warned[0]
    assert main(["add-event", "nothere", *db]) == 0
    assert capsys.readouterr().err == ""


def test_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert "Hangzhou" in capsys.readouterr().out


def test_the_story_through_the_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--db", str(tmp_path / "m.db")]
    for argv in (
        ["add-event", "u1", "--content", "planning a move"],
        ["add-event", "u2", "u1", "--content", "moving to Chengdu"],
        ["add-event", "u2b", "u1", "--content", "moving to Hangzhou"],
        ["add-record", "f1", "-s", "u2", "--content", "moving to Chengdu", "--key", "city"],
        ["add-record", "f2", "-s", "u2b", "--content", "moving to Hangzhou", "--key", "city"],
    ):
        assert main([*argv, *db]) == 0
    capsys.readouterr()
    assert main(["visible", "u2b", "--json", *db]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["f2"]
    assert main(["explain", "f1", "u2b", *db]) == 0
    assert "hidden (off_path); source u2, paths part at u1" in capsys.readouterr().out
    assert main(["search", "Hangzhou", "u2b", "--json", *db]) == 0
    assert [h["record"]["id"] for h in json.loads(capsys.readouterr().out)] == ["f2"]
    assert main(["context", "u2b", "--budget", "200", "--session", "s1", *db]) == 0
    assert "moving to Hangzhou" in capsys.readouterr().out
    assert main(["path", "u2b", "--json", *db]) == 0
    assert [e["id"] for e in json.loads(capsys.readouterr().out)] == ["u1", "u2b"]
    assert main(["set-head", "u2", *db]) == 0
    assert main(["head", "u1", "--json", *db]) == 0
    assert json.loads(capsys.readouterr().out.split("\n", 1)[1]) == "u2"
    assert main(["retract", "x1", "-s", "u2b", "-t", "f2", "--reason", "asked", *db]) == 0
    assert main(["current", "city", "u2b", "--json", *db]) == 0
    capsys.readouterr()
    assert main(["stale-deliveries", "s1", "u2b", "--json", *db]) == 0
    assert [d["reason"] for d in json.loads(capsys.readouterr().out)] == ["retracted"]
    assert main(["deliveries", "s1", "--json", *db]) == 0
    assert json.loads(capsys.readouterr().out)[0]["items"] == [["f2", 1]]
    assert main(["tree", "u1", "u2", *db]) == 0
    shown = capsys.readouterr().out
    assert "u2 [user] moving to Chengdu ◀ anchor" in shown
    assert "f2" in shown and "off_path" in shown
    assert main(["dependents", "u2", "--json", *db]) == 0
    assert json.loads(capsys.readouterr().out) == ["f1"]
    assert main(["erase", "u2", "--json", *db]) == 0
    assert json.loads(capsys.readouterr().out) == ["f1", "u2"]
    assert main(["audit", "--json", *db]) == 0
    assert [e["op"] for e in json.loads(capsys.readouterr().out)][-2:] == ["retract", "erase"]
    assert main(["get-record", "f2", "--json", *db]) == 0
    assert json.loads(capsys.readouterr().out)["content"] == "moving to Hangzhou"


def test_actor_names_the_audit_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--db", str(tmp_path / "m.db")]
    assert main(["add-event", "u1", "--actor", "ops", *db]) == 0
    assert main(["audit", "--json", *db]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("[") :])[0]["actor"] == "ops"


def test_add_events_reads_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = tmp_path / "events.jsonl"
    lines.write_text('{"id": "a"}\n{"id": "b", "parent": "a", "content": "hi"}\n')
    assert main(["add-events", str(lines), "--db", str(tmp_path / "m.db"), "--json"]) == 0
    assert [e["tree"] for e in json.loads(capsys.readouterr().out)] == ["a", "a"]


def test_keys_are_created_listed_and_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", str(tmp_path / "keys.db")]
    assert main(["keys", "create", "--tenant", "acme", "-n", "acme/*", *db]) == 0
    secret = capsys.readouterr().out.strip()
    assert secret.startswith("bm_")
    assert main(["keys", "list", "--json", *db]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(k["tenant"], k["namespaces"]) for k in listed] == [("acme", ["acme/*"])]
    parts = split_key(secret)  # a secret may hold "_", so no cut at the last one
    assert parts is not None and parts[1] not in json.dumps(listed)
    assert main(["keys", "create", "--tenant", "globex", "-n", "acme/bob", *db]) == 1
    assert "overlaps" in capsys.readouterr().err
    assert main(["keys", "delete", listed[0]["key_id"], *db]) == 0
    assert main(["keys", "delete", listed[0]["key_id"], *db]) == 1


def test_no_store_given_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["visible", "u1"]) == 1
    assert "--db" in capsys.readouterr().err


def test_serve_refuses_no_auth_beyond_loopback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--db", str(tmp_path / "s.db"), "--no-auth", "--host", "0.0.0.0"]
    assert main(argv) == 1
    assert "loopback" in capsys.readouterr().err


def test_commands_work_through_the_service_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from branchmem.server import KeyRing, create_app
    from test_server_harness import LiveService

    memory = Memory()
    api_key, _ = KeyRing(memory).create("cli", ["alice"])
    live = LiveService(create_app(memory)).start()
    try:
        remote = ["--url", live.url, "--api-key", api_key, "-n", "alice"]
        export = tmp_path / "chat.jsonl"
        export.write_text(
            json.dumps({"user_name": "u", "character_name": "c"}) + "\n"
            + json.dumps({"name": "u", "is_user": True, "mes": "hello", "send_date": 1}) + "\n"
        )  # fmt: skip
        assert main(["add-event", "u1", "--content", "hi", *remote]) == 0
        assert main(["add-record", "f1", "-s", "u1", "--content", "greets", *remote]) == 0
        capsys.readouterr()
        assert main(["visible", "u1", "--json", *remote]) == 0
        assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["f1"]
        assert main(["tree", "u1", *remote]) == 0
        assert "f1" in capsys.readouterr().out
        assert main(["import", str(export), "--format", "sillytavern", *remote]) == 0
        assert "conversations: 1" in capsys.readouterr().out
        assert main(["conversations", "--json", *remote]) == 0
        assert len(json.loads(capsys.readouterr().out)) == 2
        assert main(["visible", "u1", "--url", live.url, "--api-key", api_key]) == 1
        assert "not bound to namespace 'default'" in capsys.readouterr().err
    finally:
        live.stop()
        memory.close()


# -- a missing extra is a one-line error naming the install command ---------------------------
def run_without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where importing ``module`` fails."""
    prelude = f"import sys; sys.modules[{module!r}] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=scaled(60)
    )


@pytest.mark.parametrize(
    "module, argv, extra",
    [
        ("uvicorn", ["serve", "--db", "{db}"], "server"),
        ("fastapi", ["serve", "--db", "{db}"], "server"),
        ("mcp", ["mcp", "--db", "{db}"], "mcp"),
        ("httpx", ["visible", "u1", "--url", "http://127.0.0.1:9"], "client"),
    ],
)
def test_a_missing_extra_names_the_install_command(
    module: str, argv: list[str], extra: str, tmp_path: Path
) -> None:
    args = [a.replace("{db}", str(tmp_path / "m.db")) for a in argv]
    done = run_without(module, f"from branchmem.cli import main; raise SystemExit(main({args!r}))")
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("branchmem: ") and f"needs {module!r}" in done.stderr
    assert done.stderr.rstrip().endswith(f'pip install "branchmem[{extra}]"')
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_the_client_without_httpx_says_how_to_install_it() -> None:
    done = run_without(
        "httpx",
        "from branchmem.errors import MissingExtra\n"
        "try:\n    from branchmem import Client\n"
        "except MissingExtra as error:\n    print(error)\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "branchmem.Client needs 'httpx', which is not installed: pip install \"branchmem[client]\""
    )


def test_serve_refuses_a_store_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in --db must not serve a new, empty store as if it were the data."""
    pytest.importorskip("uvicorn", reason="the service needs the 'server' extra")
    typo = tmp_path / "memroy.db"
    assert main(["serve", "--db", str(typo)]) == 1
    complaint = capsys.readouterr().err
    assert f"no store at {typo}" in complaint and "--create" in complaint
    assert not typo.exists()


def test_serve_create_starts_a_new_store(tmp_path: Path) -> None:
    import os

    pytest.importorskip("uvicorn", reason="the service needs the 'server' extra")
    from test_server_harness import free_port

    new = tmp_path / "new.db"
    serve = subprocess.Popen(
        [sys.executable, "-m", "branchmem.cli", "serve", "--db", str(new), "--create",
         "--port", str(free_port()), "--log-level", "warning"],
        stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )  # fmt: skip
    try:
        assert serve.stderr is not None
        assert serve.stderr.readline().startswith("explorer: http://127.0.0.1:")
        assert new.exists()
    finally:
        serve.terminate()
        serve.wait(timeout=scaled(30))
