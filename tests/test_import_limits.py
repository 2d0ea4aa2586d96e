"""An import cannot be made to exhaust memory, and a killed import leaves whole conversations.

The zip bombs here are built by each test: a ChatGPT export whose one message is megabytes
of one letter, a few hundred kilobytes once zipped. Every refusal is checked for its type,
the limit it names and how to raise it, and peak memory is measured (tracemalloc in
process, the child's peak RSS for the CLI) against the size the bomb would decompress to.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from branchmem import InvalidInput, Memory, NotFoundError
from branchmem.errors import TooLarge
from branchmem.importers import ImportLimits, ImportTooLarge, load
from timing import scaled

MIB = 1 << 20
T = TypeVar("T")


def conversation(id: str, *texts: str) -> dict[str, Any]:
    """A linear ChatGPT conversation ``id`` with one message per text."""
    mapping: dict[str, Any] = {}
    parent = None
    for number, text in enumerate(texts):
        node = f"{id}-m{number}"
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [],
            "message": {
                "author": {"role": "user" if number % 2 == 0 else "assistant"},
                "content": {"content_type": "text", "parts": [text]},
            },
        }
        if parent is not None:
            mapping[parent]["children"].append(node)
        parent = node
    return {"id": id, "title": id, "current_node": parent, "mapping": mapping}


def zip_bomb(path: Path, decompressed: int, *, before: int = 0) -> Path:
    """A zipped ``conversations.json``: ``before`` small conversations, then one whose
    message is ``decompressed`` bytes of 'a' (written in chunks: the test holds 1 MiB)."""
    small = [conversation(f"small{n}", "hello", "hi") for n in range(before)]
    marker = "@@bomb@@"
    text = json.dumps([*small, conversation("bomb", marker)])
    head, tail = text.split(marker)
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open("conversations.json", "w", force_zip64=True) as member,
    ):
        member.write(head.encode())
        chunk = b"a" * MIB
        for _ in range(decompressed // MIB):
            member.write(chunk)
        member.write(tail.encode())
    assert path.stat().st_size < decompressed / 100  # small on disk
    return path


def peak_traced(action: Callable[[], T]) -> tuple[T | BaseException, int]:
    """What ``action`` returned or raised, and the peak of traced allocations meanwhile."""
    tracemalloc.start()
    try:
        try:
            outcome: T | BaseException = action()
        except Exception as error:
            outcome = error
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return outcome, peak


# -- the library -------------------------------------------------------------------------------
def test_a_zip_bomb_is_refused_by_its_declared_size_before_decompressing(tmp_path: Path) -> None:
    bomb = zip_bomb(tmp_path / "export.zip", 64 * MIB)
    limits = ImportLimits(max_export_bytes=4 * MIB)
    refused, peak = peak_traced(lambda: load(bomb, limits=limits))
    assert isinstance(refused, ImportTooLarge) and isinstance(refused, TooLarge)
    assert refused.limit == "max_export_bytes" and refused.allowed == 4 * MIB
    message = str(refused)
    assert "export.zip!conversations.json" in message and "once decompressed" in message
    assert "ImportLimits(max_export_bytes=" in message and "--limit max_export_bytes=" in message
    assert peak < MIB, f"{peak:,} bytes traced for a refusal from the archive's directory"


def test_a_zip_bomb_is_refused_while_streaming_in_memory_far_below_its_size(
    tmp_path: Path,
) -> None:
    decompressed = 64 * MIB
    bomb = zip_bomb(tmp_path / "export.zip", decompressed)
    limits = ImportLimits(max_conversation_bytes=MIB)  # the archive's size is allowed

    def run() -> Any:
        return load(bomb, limits=limits).apply(Memory())

    refused, peak = peak_traced(run)
    assert isinstance(refused, ImportTooLarge), refused
    assert refused.limit == "max_conversation_bytes" and refused.path == "$[0]"
    assert "conversations.json" in str(refused)
    # the unfinished value, the decoder's copy and one read: a few times the limit
    assert peak < 6 * MIB < decompressed / 10, f"peak {peak:,} bytes"


def test_a_plain_file_is_bounded_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([conversation("big", "b" * (3 * MIB))]))
    refused, peak = peak_traced(lambda: load(path, limits=ImportLimits(max_conversation_bytes=MIB)))
    assert isinstance(refused, ImportTooLarge) and refused.limit == "max_conversation_bytes"
    assert peak < 3 * MIB
    small = ImportLimits(max_export_bytes=MIB)
    with pytest.raises(ImportTooLarge, match=r"conversations\.json is 3,\d{3},\d{3} bytes"):
        load(path, limits=small)


def test_bytes_are_counted_as_they_arrive_not_only_as_declared(tmp_path: Path) -> None:
    # a file that grows after it was sized (or an archive member that would lie about its
    # size) is stopped by the count of bytes actually read
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([conversation(f"c{n}", "x" * 1000) for n in range(10)]))
    plan = load(path, limits=ImportLimits(max_export_bytes=path.stat().st_size))
    with path.open("a") as grown:
        grown.write(" " * 100)
    with pytest.raises(ImportTooLarge, match="holds more than") as refused:
        plan.apply(Memory())
    assert refused.value.limit == "max_export_bytes"


def test_conversations_before_the_limit_stay_written_and_the_error_says_so(
    tmp_path: Path,
) -> None:
    bomb = zip_bomb(tmp_path / "export.zip", 8 * MIB, before=3)
    memory = Memory()
    plan = load(bomb, limits=ImportLimits(max_conversation_bytes=MIB))
    with pytest.raises(ImportTooLarge) as refused:
        plan.apply(memory)
    assert "stopped there, after 3 conversations imported (6 events)" in str(refused.value)
    assert refused.value.summary is not None and refused.value.summary.imported == 3
    assert sorted(memory.heads()) == ["small0", "small1", "small2"]


def test_a_message_over_the_limit_fails_only_its_conversation() -> None:
    export = [conversation("fine", "hello", "hi"), conversation("long", "x" * 101, "ok")]
    summary = load(export, limits=ImportLimits(max_message_chars=100)).apply(memory := Memory())
    assert (summary.imported, summary.failed) == (1, 1)
    (error,) = summary.errors
    assert "'long:long-m0' has 101 characters" in error and "max_message_chars = 100" in error
    assert list(memory.heads()) == ["fine"]


def test_a_json_lines_chat_and_a_single_object_are_bounded(tmp_path: Path) -> None:
    chat = tmp_path / "Aria - 2025-1-1@10h00m00s.jsonl"
    lines = [{"user_name": "me", "character_name": "Aria", "create_date": "2025-1-1"}]
    lines += [{"name": "me", "is_user": True, "mes": "y" * MIB} for _ in range(3)]
    chat.write_text("\n".join(json.dumps(line) for line in lines))
    limits = ImportLimits(max_conversation_bytes=2 * MIB)
    with pytest.raises(ImportTooLarge, match=r"one chat of more than 2,097,152 bytes"):
        load(chat, limits=limits).apply(Memory())
    single = tmp_path / "one.json"
    single.write_text(json.dumps(conversation("one", "z" * (3 * MIB))))
    with pytest.raises(ImportTooLarge, match="max_conversation_bytes"):
        load(single, limits=limits).apply(Memory())
    assert load(chat).apply(Memory()).imported == 1  # the defaults take both
    assert load(single).apply(Memory()).imported == 1


def archive_with_entries(path: Path, count: int) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("conversations.json", json.dumps([conversation("c", "hi")]))
        for number in range(count):
            archive.writestr(f"attachments/file-{number:04}.png", b"")
    return path


def test_an_archive_with_too_many_entries_is_refused_from_its_end_record(tmp_path: Path) -> None:
    path = archive_with_entries(tmp_path / "many.zip", 20)
    with pytest.raises(ImportTooLarge, match="lists 21 entries") as refused:
        load(path, limits=ImportLimits(max_zip_entries=10))
    assert refused.value.limit == "max_zip_entries"
    assert load(path, limits=ImportLimits(max_zip_entries=21)).format == "chatgpt"


def test_an_end_record_that_understates_the_entries_is_caught_by_the_directory_size(
    tmp_path: Path,
) -> None:
    path = archive_with_entries(tmp_path / "liar.zip", 40)
    raw = bytearray(path.read_bytes())
    end = raw.rfind(b"PK\x05\x06")
    raw[end + 8 : end + 12] = (1).to_bytes(2, "little") * 2  # "one entry", on disk and total
    path.write_bytes(bytes(raw))
    with pytest.raises(ImportTooLarge, match="has a directory of") as refused:
        load(path, limits=ImportLimits(max_zip_entries=2))
    assert refused.value.limit == "max_zip_entries"


def test_limits_are_read_from_settings_and_checked() -> None:
    limits = ImportLimits.parse(["max_export_bytes=8GiB", "max_message_chars = 1_000"])
    assert limits.max_export_bytes == 8 << 30 and limits.max_message_chars == 1000
    assert limits.max_conversation_bytes == ImportLimits().max_conversation_bytes
    with pytest.raises(InvalidInput, match="unknown import limit 'max_size=1'"):
        ImportLimits.parse(["max_size=1"])
    with pytest.raises(InvalidInput, match="'12 parsecs' is not a size"):
        ImportLimits.parse(["max_export_bytes=12 parsecs"])
    with pytest.raises(InvalidInput, match="max_zip_entries must be a positive integer"):
        ImportLimits(max_zip_entries=0)


def test_the_service_limits_follow_its_upload_limit() -> None:
    derived = ImportLimits.for_upload(8 * MIB, MIB)
    assert derived.max_export_bytes == 128 * MIB
    assert derived.max_conversation_bytes == 8 * MIB and derived.max_message_chars == MIB
    big = ImportLimits.for_upload(1 << 30, MIB)
    assert big.max_conversation_bytes == 16 * MIB < ImportLimits().max_conversation_bytes


# -- the CLI -----------------------------------------------------------------------------------
SRC = str(Path(__file__).resolve().parents[1] / "src")
# runs its command as its only child, so RUSAGE_CHILDREN is that command's own peak
MEASURE = textwrap.dedent(
    """
    import resource, subprocess, sys
    done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    sys.stderr.write(done.stderr)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(done.returncode, peak_kib * 1024)
    """
)


def run_measured(*args: str) -> tuple[int, int, str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, sys.executable, "-m", "branchmem.cli", *args],
        capture_output=True, text=True, env=env, timeout=scaled(300),
    )  # fmt: skip
    code, peak = done.stdout.split()
    return int(code), int(peak), done.stderr


def test_the_cli_refuses_a_zip_bomb_in_one_line_with_flat_memory(tmp_path: Path) -> None:
    decompressed = 256 * MIB
    bomb = zip_bomb(tmp_path / "export.zip", decompressed)
    db = str(tmp_path / "cli.db")
    code, peak, stderr = run_measured(
        "import", str(bomb), "--db", db, "--limit", "max_conversation_bytes=1MiB"
    )
    assert code == 1, stderr  # a refused input; 2 is kept for usage errors
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith("branchmem: ") and "conversations.json" in stderr
    assert "--limit max_conversation_bytes=" in stderr
    assert peak < decompressed / 4, f"the CLI peaked at {peak / MIB:.0f} MiB"
    code, _, stderr = run_measured("import", str(bomb), "--db", db, "--limit", "max_export=1")
    assert code == 1 and "unknown import limit" in stderr and "Traceback" not in stderr


# -- the service -------------------------------------------------------------------------------
def test_the_service_answers_a_zip_bomb_with_413_and_stores_nothing(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from fastapi.testclient import TestClient

    from branchmem.server import Limits, create_app

    memory = Memory()
    http = TestClient(create_app(memory, auth=False, limits=Limits(max_import=MIB)))
    for decompressed, limit in (
        (64 * MIB, "max_export_bytes"),
        (15 * MIB, "max_conversation_bytes"),
    ):
        bomb = zip_bomb(tmp_path / f"{limit}.zip", decompressed, before=1)

        def upload(bomb: Path = bomb) -> Any:
            return http.post(
                "/v1/ns/default/import",
                params={"filename": "export.zip"},
                content=bomb.read_bytes(),
                headers={"Content-Type": "application/octet-stream"},
            )

        response, peak = peak_traced(upload)
        assert response.status_code == 413, response.text
        assert response.headers["content-type"] == "application/problem+json"
        problem = response.json()
        assert problem["code"] == "too_large" and limit in problem["detail"]
        assert "--max-import" in problem["detail"]
        assert peak < decompressed / 4, f"{limit}: peak {peak:,} bytes"
    assert memory.heads() == {"small0": "small0:small0-m1"}  # the second bomb's first one
    with pytest.raises(NotFoundError):
        memory.get_event("bomb:bomb-m0")


# -- a killed import ---------------------------------------------------------------------------
IMPORTER = textwrap.dedent(
    """
    import sys
    from branchmem import Memory
    from branchmem.importers import load

    memory = Memory.open(sys.argv[2])
    def progress(step):
        print(step.conversations, flush=True)
    load(sys.argv[1]).apply(memory, progress=progress)
    print("done", flush=True)
    """
)


MESSAGES = 6
KILL_AFTER = 60  # conversations written before the kill is sent


@pytest.fixture
def big_export(tmp_path: Path) -> Iterator[tuple[Path, list[dict[str, Any]]]]:
    export = [
        conversation(f"c{n:04}", *(f"message {m} of conversation {n}" for m in range(MESSAGES)))
        for n in range(400)
    ]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export))
    yield path, export


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "killed.db")
        return
    from pg import fresh_database

    with fresh_database(request.getfixturevalue("pg_dsn"), "bm_killed") as url:
        Memory.open(url, migrate=True).close()
        yield url


def test_a_killed_import_leaves_each_conversation_whole_or_absent(
    store_url: str, big_export: tuple[Path, list[dict[str, Any]]]
) -> None:
    path, export = big_export
    db = store_url
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    child = subprocess.Popen(
        [sys.executable, "-c", IMPORTER, str(path), db],
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert child.stdout is not None
    for line in child.stdout:  # kill once the writes are well under way, not at a boundary
        if line.strip() == "done" or int(line) >= KILL_AFTER:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=scaled(60))
    assert child.returncode == -signal.SIGKILL, "the import ended before it could be killed"

    memory = Memory.open(db)
    try:
        whole = absent = 0
        for entry in export:
            stored = 0
            for node in entry["mapping"]:
                try:
                    memory.get_event(f"{entry['id']}:{node}")
                    stored += 1
                except NotFoundError:
                    pass
            assert stored in (0, MESSAGES), f"{entry['id']}: {stored} of {MESSAGES} events"
            whole += stored > 0
            absent += stored == 0
        assert whole >= KILL_AFTER and absent > 0
        summary = load(path).apply(memory)  # finishing the import adds exactly what is missing
        assert summary.failed == 0 and summary.events_added == MESSAGES * absent
        assert len(memory.heads()) == len(export)
    finally:
        memory.close()
