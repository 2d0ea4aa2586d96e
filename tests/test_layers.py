"""The architecture the layout shows: the core imports no storage, service or adapter."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "src" / "branchmem"
CORE = [
    "resolution", "validation",
    "topology", "provenance", "visibility", "retraction", "audit", "model", "errors",
    "search/tokens", "search/lexical", "search/embedding", "search/context",
]  # fmt: skip
OUTSIDE = ("store", "server", "integrations", "importers", "memory", "cli", "client")


@pytest.mark.parametrize("module", CORE)
def test_core_modules_import_nothing_outside_the_core(module: str) -> None:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            name = (node.module or "").split(".")[0]
            assert name not in OUTSIDE, f"{module} imports .{node.module}"
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            assert not node.module.startswith("branchmem."), f"{module} imports {node.module}"


ENGINE = sorted(path.stem for path in (PACKAGE / "engine").glob("*.py"))
ENGINE_MAY_NOT_IMPORT = ("server", "integrations", "importers", "memory", "cli", "client")


@pytest.mark.parametrize("module", ENGINE)
def test_engine_modules_import_the_core_and_the_store_interface_only(module: str) -> None:
    """The engine composes the core with ``store.base``; a concrete backend is the caller's."""
    tree = ast.parse((PACKAGE / "engine" / f"{module}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 2:
            name = node.module or ""
            assert name.split(".")[0] not in ENGINE_MAY_NOT_IMPORT, f"{module} imports ..{name}"
            if name.startswith("store"):
                assert name == "store.base", f"{module} imports ..{name}"
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            assert not node.module.startswith("branchmem"), f"{module} imports {node.module}"
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
            assert not any(n.startswith("branchmem") for n in names), f"{module}: {names}"


def test_backends_do_not_import_the_api_layer() -> None:
    for path in (PACKAGE / "store").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 2:
                assert node.module not in ("memory", "cli"), f"{path.name} imports {node.module}"
