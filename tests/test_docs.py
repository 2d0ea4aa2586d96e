"""The README is true when followed literally: its shell and Python blocks run, in order,
in an empty directory, the service part on a free loopback port.

A block preceded by ``<!-- docs-test: skip (why) -->`` is not run (the reason is shown to
the reader of the source). ``pip install`` lines are skipped: the test environment has the
extras already. A Python line ``expr  # 'value'`` whose comment starts with a literal is
checked: ``expr == 'value'``. Each Python block runs in a fresh interpreter, as a reader
pasting it into a new file would.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tokenize
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from timing import deadline, scaled

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
SKIP = re.compile(r"<!-- docs-test: skip \((.+?)\) -->")
FENCE = re.compile(r"^```(\w*)\s*$")


def blocks(text: str) -> Iterator[tuple[str, str, str | None]]:
    """(language, code, reason to skip or None) of every fenced block."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opened = FENCE.match(lines[index])
        if not opened or not opened.group(1):
            index += 1
            continue
        before = next((line for line in reversed(lines[:index]) if line.strip()), "")
        skip = SKIP.search(before)
        end = next(j for j in range(index + 1, len(lines)) if lines[j].startswith("```"))
        yield opened.group(1), "\n".join(lines[index + 1 : end]), skip and skip.group(1)
        index = end + 1


def literal_prefix(comment: str) -> str | None:
    """The longest start of ``comment`` that is a Python literal ("'x' (why)" -> "'x'")."""
    text = comment.lstrip("#").strip()
    if not text or text[0] not in "'\"[({0123456789-":
        return None
    for end in range(len(text), 0, -1):
        candidate = text[:end]
        if end < len(text) and text[end] not in " :;,":
            continue
        try:
            ast.literal_eval(candidate)
        except (ValueError, SyntaxError):
            continue
        return candidate
    return None


def with_checks(code: str) -> str:
    """``expr  # 'value'`` becomes ``assert (expr) == 'value'``."""
    comments = {
        token.start[0]: token.string
        for token in tokenize.generate_tokens(io.StringIO(code).readline)
        if token.type == tokenize.COMMENT
    }
    lines = code.splitlines()
    for node in ast.walk(ast.parse(code)):
        if not isinstance(node, ast.Expr) or node.lineno != node.end_lineno:
            continue
        expected = literal_prefix(comments.get(node.lineno, ""))
        if expected is None:
            continue
        line = lines[node.lineno - 1]
        source = line[node.col_offset : node.end_col_offset]
        lines[node.lineno - 1] = (
            " " * node.col_offset + f"assert ({source}) == {expected}, ({source!r}, {source})"
        )
    return "\n".join(lines)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(port: int, server: subprocess.Popen[bytes]) -> None:
    until = deadline(60)
    while time.monotonic() < until:
        if server.poll() is not None:
            raise AssertionError(f"branchmem serve exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=scaled(10)):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing answered on port {port}")


class Reader:
    """Runs blocks as a person at a fresh shell would, in one directory."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("BRANCHMEM_")}
        bin_dir = str(Path(sys.executable).parent)
        self.env["PATH"] = bin_dir + os.pathsep + self.env.get("PATH", "")
        source = str(ROOT / "src")
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (source, self.env.get("PYTHONPATH")) if p
        )
        self.servers: list[subprocess.Popen[bytes]] = []

    def shell(self, code: str) -> None:
        for raw in code.splitlines():
            line = raw.strip()
            if not line or line.startswith("#") or line.startswith("pip install"):
                continue
            background = re.match(r"(.*?)\s&\s*(#.*)?$", line)
            if background:
                self.serve(background.group(1))
                continue
            exported = re.match(r"export (\w+)=(.*?)\s*(#.*)?$", line)
            script = f'{line}\nprintf %s "${exported.group(1)}"' if exported else line
            done = subprocess.run(
                ["bash", "-c", f"set -e -o pipefail\n{script}"], cwd=self.folder, env=self.env,
                capture_output=True, text=True, timeout=scaled(120),
            )  # fmt: skip
            assert done.returncode == 0, (line, done.stdout, done.stderr)
            assert "Traceback" not in done.stderr, (line, done.stderr)
            if exported:
                self.env[exported.group(1)] = done.stdout.strip().splitlines()[-1]
            if line.startswith("curl"):
                answer = json.loads(done.stdout)
                assert not (isinstance(answer, dict) and "code" in answer), (line, answer)

    def serve(self, command: str) -> None:
        server = subprocess.Popen(
            ["bash", "-c", f"exec {command}"], cwd=self.folder, env=self.env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        self.servers.append(server)
        port = re.search(r"--port (\d+)", command)
        wait_for(int(port.group(1)) if port else 8765, server)

    def python(self, code: str) -> None:
        done = subprocess.run(
            [sys.executable, "-c", with_checks(code)], cwd=self.folder, env=self.env,
            capture_output=True, text=True, timeout=scaled(120),
        )  # fmt: skip
        assert done.returncode == 0, (code, done.stdout, done.stderr)

    def close(self) -> None:
        for server in self.servers:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=scaled(30))


def test_the_checks_compare_what_the_comment_claims() -> None:
    assert literal_prefix("# 'moving to Chengdu' (switch back)") == "'moving to Chengdu'"
    assert literal_prefix("# (('city-2', 1),): the memories") == "(('city-2', 1),)"
    assert literal_prefix("# the edit") is None
    checked = with_checks("x = 1\nx + 1   # 3\n")
    with pytest.raises(AssertionError):
        exec(compile(checked, "<readme>", "exec"), {})


def test_the_readme_runs_as_written(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn", reason="the README's service part needs the 'server' extra")
    text = README.read_text(encoding="utf-8").replace("8765", str(free_port()))
    reader = Reader(tmp_path)
    ran = {"bash": 0, "python": 0}
    try:
        for language, code, skip in blocks(text):
            if skip is not None or language not in ran:
                continue
            getattr(reader, "shell" if language == "bash" else "python")(code)
            ran[language] += 1
    finally:
        reader.close()
    assert ran["bash"] >= 3 and ran["python"] >= 3, ran
    assert (tmp_path / "memory.db").exists()


def test_the_service_docs_pair_every_method_with_its_command() -> None:
    from branchmem.api.operations import operations

    service = (ROOT / "docs" / "service.md").read_text(encoding="utf-8")
    rows = [line for line in service.splitlines() if line.startswith("| `")]
    for op in operations().values():
        row = next((line for line in rows if f"`{op.name}(" in line), "")
        assert f"branchmem {op.name.replace('_', '-')}" in row, (op.name, "no row")
        assert f"{op.verb} {op.path.split('{')[0].rstrip('/')}" in row, (op.name, row)
    assert "Authorization: Bearer <key>" in service and "/healthz" in service
