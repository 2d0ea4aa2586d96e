"""Importing a part of branchmem whose extra is missing says which extra to install.

Each case runs in a fresh interpreter where the dependency is hidden
(``sys.modules[name] = None``), so the import fails as it would on a base install.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from timing import scaled

CASES = [
    ("langgraph", "import branchmem.integrations.langgraph", "langgraph"),
    ("langchain_core", "import branchmem.integrations.langgraph", "langgraph"),
    ("langgraph", "from branchmem.integrations.langgraph.store import BranchStore", "langgraph"),
    ("mem0", "import branchmem.integrations.mem0.offline", "mem0"),
    (
        "mcp",
        "from branchmem import Memory\n"
        "from branchmem.integrations.mcp import Conversation, build_server\n"
        "build_server(Conversation(Memory(), 'default', 't'))",
        "mcp",
    ),
    ("fastapi", "import branchmem.server.app", "server"),
    ("fastapi", "from branchmem.server import create_app", "server"),
    ("httpx", "from branchmem import Client", "client"),
]


def import_without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` where ``module`` cannot be imported; print the ImportError it raised."""
    script = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "try:\n"
        + "".join(f"    {line}\n" for line in code.splitlines())
        + "except ImportError as error:\n"
        "    print(type(error).__name__, error, sep='|')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=scaled(120)
    )


@pytest.mark.parametrize("module, code, extra", CASES)
def test_a_missing_extra_is_an_import_error_naming_the_install_command(
    module: str, code: str, extra: str
) -> None:
    done = import_without(module, code)
    assert done.returncode == 0, done.stderr
    kind, _, message = done.stdout.strip().partition("|")
    assert kind == "MissingExtra", done.stdout
    assert message.endswith(f'pip install "branchmem[{extra}]"'), message
    assert repr(module) in message or f"'{module}." in message, message


def test_the_mem0_wrapper_itself_imports_without_mem0() -> None:
    """``BranchMem0`` drives the instance it is given: only ``offline`` needs the package."""
    done = import_without("mem0", "from branchmem.integrations.mem0 import BranchMem0")
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
