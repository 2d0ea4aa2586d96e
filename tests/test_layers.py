"""The architecture of docs/architecture.md, enforced: which part may import which.

Every module of ``src/branchmem`` belongs to exactly one part; an import from one part into
another that the table does not allow fails here, whether it runs at import time, lazily
inside a function, or only for type checking.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "src" / "branchmem"

CORE = (
    "errors", "model", "topology", "provenance", "resolution", "visibility", "retraction",
    "validation", "audit", "keyed", "receipt",
)  # fmt: skip

# part -> the parts it may import (itself always). Mirrors the table in docs/architecture.md.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "search": {"core"},
    "store": {"core"},
    "engine": {"core", "search", "store.base"},
    "memory": {"core", "search", "engine", "store", "importers"},
    "importers": {"core", "memory"},
    "api": {"core", "search", "memory", "importers"},
    "client": {"core", "search", "api", "importers", "package"},
    "async_client": {"core", "search", "api", "importers", "client", "package"},
    "async_memory": {"core", "search", "api", "memory", "importers"},
    "server": {"core", "search", "api", "memory", "importers", "store", "package"},
    "integrations": {"core", "search", "memory", "client", "package"},
    "testing": {"core", "search", "engine", "memory", "store", "package"},
    "cli": {
        "core",
        "search",
        "api",
        "memory",
        "importers",
        "store",
        "client",
        "server",
        "integrations",
        "demo",
        "package",
    },
    "demo": {"package"},
    "package": {"core", "search", "memory", "client", "async_client", "async_memory"},
}


def part_of(parts: tuple[str, ...]) -> str:
    """The part a module path (relative to the package, without suffix) belongs to."""
    top = parts[0]
    if top in CORE:
        return "core"
    if top == "__init__":
        return "package"
    return top


def imports(path: Path) -> Iterator[tuple[int, tuple[str, ...]]]:
    """(line, target module path inside branchmem) of every branchmem import in ``path``."""
    here = path.relative_to(PACKAGE).with_suffix("").parts
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = here[: len(here) - node.level]
            named = tuple((node.module or "").split(".")) if node.module else ()
            if named:
                yield node.lineno, base + named
            else:  # from . import x, y: each name is a module or a package attribute
                for alias in node.names:
                    target = (*base, alias.name)
                    found = (PACKAGE.joinpath(*target).with_suffix(".py").exists()
                             or PACKAGE.joinpath(*target).is_dir())  # fmt: skip
                    yield node.lineno, target if found and base else base or ("__init__",)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "branchmem" or node.module.startswith("branchmem."):
                yield node.lineno, tuple(node.module.split(".")[1:]) or ("__init__",)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("branchmem."):
                    yield node.lineno, tuple(alias.name.split(".")[1:])


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_belongs_to_a_known_part() -> None:
    unknown = {
        str(path.relative_to(PACKAGE))
        for path in MODULES
        if part_of(path.relative_to(PACKAGE).with_suffix("").parts) not in ALLOWED
    }
    assert not unknown, f"add these to docs/architecture.md and ALLOWED: {sorted(unknown)}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_architecture(path: Path) -> None:
    source = part_of(path.relative_to(PACKAGE).with_suffix("").parts)
    for line, target in imports(path):
        if not target or target == ("",):
            continue
        wanted = part_of(target)
        if wanted == source:
            continue
        allowed = ALLOWED[source]
        qualified = f"{wanted}.{target[1]}" if wanted == "store" and len(target) > 1 else wanted
        assert wanted in allowed or qualified in allowed, (
            f"{path.relative_to(PACKAGE)}:{line} ({source}) imports "
            f"{'.'.join(target)} ({qualified}); docs/architecture.md does not allow it"
        )


def test_nothing_imports_the_command_line_or_the_benchmark() -> None:
    for path in MODULES:
        if part_of(path.relative_to(PACKAGE).with_suffix("").parts) == "cli":
            continue
        for line, target in imports(path):
            assert target[:1] != ("cli",), f"{path}:{line} imports the CLI"
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            assert not any(n.split(".")[0] == "branchbench" for n in names), (
                f"{path}:{node.lineno} imports branchbench: the library never needs its benchmark"
            )
