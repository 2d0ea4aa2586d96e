"""The architecture of docs/architecture.md, enforced: which part may import which.

Every module of ``src/branchmem`` belongs to exactly one part; an import from one part into
another that the table does not allow fails here, whether it runs at import time, lazily
inside a function, or only for type checking.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "src" / "branchmem"

CORE = (
    "errors", "model", "topology", "provenance", "resolution", "visibility", "retraction",
    "validation", "audit", "keyed", "receipt", "rules", "questions",
)  # fmt: skip
# Database drivers: the core never imports one (the byte scans over them are ``bytescan``'s
# and the backends' ports, ``Store.residue_values`` and ``Store.scan_bytes``).
DRIVERS = frozenset({"sqlite3", "psycopg", "psycopg_pool", "psycopg2", "aiosqlite"})

# part -> the parts it may import (itself always). Mirrors the table in docs/architecture.md.
# The service and the command line reach a store only through ``Memory`` (``Memory.open``,
# ``api_keys``, ``schema_version``): neither imports ``branchmem.store``.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "search": {"core"},
    "store": {"core", "bytescan"},
    "bytescan": {"core"},
    "engine": {"core", "search", "store.base"},
    "memory": {"core", "search", "engine", "store", "importers", "api.protocol"},
    "importers": {"core", "memory"},
    "api": {"core", "search", "memory", "importers"},
    "client": {"core", "search", "api", "importers", "keepalive", "package"},
    "keepalive": {"core"},
    "async_client": {"core", "search", "api", "importers", "client", "package"},
    "async_memory": {"core", "search", "api", "memory", "importers"},
    "server": {"core", "search", "api", "memory", "importers", "package"},
    "integrations": {"core", "search", "memory", "client", "bytescan", "package"},
    "testing": {"core", "search", "engine", "memory", "store", "package"},
    "cli": {
        "core",
        "search",
        "api",
        "memory",
        "importers",
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
    if top in CORE or top == "_core":
        return "core"
    if top == "_engine":
        return "engine"
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
        qualified = f"{wanted}.{target[1]}" if wanted == target[0] and len(target) > 1 else wanted
        assert wanted in allowed or qualified in allowed, (
            f"{path.relative_to(PACKAGE)}:{line} ({source}) imports "
            f"{'.'.join(target)} ({qualified}); docs/architecture.md does not allow it"
        )


def third_party_imports(source: str) -> Iterator[tuple[int, str]]:
    """(line, top-level name) of every absolute import in ``source``, lazy ones included."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if part_of(p.relative_to(PACKAGE).with_suffix("").parts) == "core"],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_the_core_imports_no_database_driver(path: Path) -> None:
    found = [
        f"{line}: {name}" for line, name in third_party_imports(path.read_text()) if name in DRIVERS
    ]
    assert not found, f"{path.relative_to(PACKAGE)} imports a driver: {found}"


def test_the_driver_check_sees_a_lazy_import() -> None:
    source = "def rows(db):\n    from psycopg.rows import tuple_row\n    import sqlite3.dbapi2\n"
    assert {name for _line, name in third_party_imports(source)} == {"psycopg", "sqlite3"}


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


# -- one door into Memory ------------------------------------------------------------------------
# What only memory/ and _engine/ may touch of a Memory: its transactions, its lock, its store.
INSIDES = frozenset({"_read", "_write", "_lock", "_store", "_namespace", "store"})
# Transaction scopes are Memory's alone whatever the receiver is called (``self`` excepted).
SCOPES = frozenset({"_read", "_write"})
# A receiver with one of these names holds a Memory (the names the package uses for one).
MEMORY_NAMES = frozenset({"mem", "memory", "_memory"})
# module -> the insides it may touch, and why. The differential harness compares every
# decision of a view with the oracle inside one snapshot, as one public call would.
DOCUMENTED: dict[str, frozenset[str]] = {"testing/differential.py": frozenset({"_read"})}


@dataclass(frozen=True, slots=True)
class Reach:
    line: int
    receiver: str
    attribute: str


def receiver_name(node: ast.expr) -> str | None:
    """``memory`` of ``memory.store``, ``memory`` of ``self.memory._read``, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def insides_reached(source: str) -> Iterator[Reach]:
    """Every ``<a Memory>.<inside>`` in ``source``: an inside attribute read on a receiver
    named like a Memory, or a transaction scope on anything but ``self``."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or node.attr not in INSIDES:
            continue
        name = receiver_name(node.value)
        if name in MEMORY_NAMES or (node.attr in SCOPES and name not in ("self", "cls")):
            yield Reach(node.lineno, name or "?", node.attr)


def behind_the_door(path: Path) -> bool:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] in ("_engine", "memory")


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if not behind_the_door(p)],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_nothing_but_memory_and_the_engine_reaches_inside_a_memory(path: Path) -> None:
    allowed = DOCUMENTED.get(path.relative_to(PACKAGE).as_posix(), frozenset())
    for reach in insides_reached(path.read_text()):
        assert reach.attribute in allowed, (
            f"{path.relative_to(PACKAGE)}:{reach.line} reads {reach.receiver}.{reach.attribute}: "
            "go through the public API (docs/architecture.md, the door)"
        )


def test_the_command_line_does_not_tell_memory_from_client() -> None:
    """``Memory`` and ``Client`` offer the same API: a command asks neither what it is."""
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                asked = node.args[0] if node.args else None
                if node.func.id in ("hasattr", "isinstance") and asked is not None:
                    assert receiver_name(asked) not in MEMORY_NAMES, (
                        f"{path.relative_to(PACKAGE)}:{node.lineno} asks what a memory is"
                    )


@pytest.mark.parametrize(
    "source",
    [
        "with memory._read(ns):\n    pass",
        "memory.store.heads('default')",
        "self.memory._lock",
        "keys = mem._store",
        "with wrapper._write(ns):\n    pass",
    ],
)
def test_the_door_check_sees_a_reach_inside(source: str) -> None:
    assert list(insides_reached(source))


@pytest.mark.parametrize(
    "source", ["self._read = 0", "wrapper.store.visible(None)", "memory.visible(None)"]
)
def test_the_door_check_lets_the_api_through(source: str) -> None:
    assert not list(insides_reached(source))


# -- private names stay in their module ----------------------------------------------------------
# A name with a leading underscore is its module's own: a file that needs another's gets it
# under a public name (in the module that owns it, or a small shared one), so renaming or
# dropping a private helper never breaks a module that is not its own.
PROJECT = (PACKAGE, PACKAGE.parent / "branchbench")


def private_imports(source: str) -> Iterator[tuple[int, str]]:
    """(line, ``module.name``) of every project import of another module's private name."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
            continue
        module = node.module or ""
        if node.level == 0 and module.split(".")[0] not in {"branchmem", "branchbench"}:
            continue  # a third-party module: what it calls private is its own business
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                yield node.lineno, f"{'.' * node.level}{module}.{alias.name}"


PROJECT_MODULES = sorted(path for root in PROJECT for path in root.rglob("*.py"))


@pytest.mark.parametrize("path", PROJECT_MODULES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_no_module_imports_another_modules_private_name(path: Path) -> None:
    found = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
             for line, name in private_imports(path.read_text())]  # fmt: skip
    assert not found, f"give these a public name in the module that owns them: {found}"


@pytest.mark.parametrize(
    "source",
    [
        "from .observe import _md5",
        "from ..client import PAGE, _segment",
        "from branchmem.store.sql import _Row",
        "def f():\n    from .x import _lazy",
    ],
)
def test_the_private_import_check_sees_one(source: str) -> None:
    assert list(private_imports(source))


@pytest.mark.parametrize(
    "source",
    [
        "from .observe import md5_hex",
        "from . import __version__",
        "from __future__ import annotations",
        "from typing import _SpecialForm",
    ],
)
def test_the_private_import_check_lets_public_names_through(source: str) -> None:
    assert not list(private_imports(source))


# -- private attributes stay in their package ----------------------------------------------------
# An attribute with a leading underscore belongs to the package that defines it (a module of
# branchmem's top level is its own package): its modules may read each other's objects'
# private attributes (the Mem0 wrapper's split files read ``wrapper._done``), nothing outside
# may, on any receiver but ``self``/``cls``, by ``x._name`` or ``getattr(x, "_name")``. What
# another package needs gets a public, documented hook (``Memory.currents``,
# ``Memory.forget_with``). A name is defined where a ``def``/``class`` takes it, where
# ``self``/``cls`` carry it, or where it is assigned; a name defined nowhere in the project
# is a third party's private and is refused too. The check cannot tell whose object a
# receiver is: a name the module's own package also defines passes (``db._lock`` in a package
# with a ``self._lock``), which is why the door check above names Memory's insides outright.
# (module, attribute) -> why it may cross; each is a debt, not a pattern.
CROSSINGS: dict[tuple[str, str], str] = {
    ("branchmem/testing/differential.py", "_read"): (
        "compares every decision of a view with the oracle inside one snapshot, as one "
        "public call would (the door's one exception)"
    ),
}
SOURCES = PACKAGE.parent
ATTRIBUTE_CALLS = frozenset({"getattr", "hasattr", "setattr", "delattr"})


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def package_of(path: Path) -> str:
    """``branchmem/integrations/mem0`` for a module in a subpackage; a top-level module is
    its own package (``branchmem/memory``)."""
    parts = path.relative_to(SOURCES).with_suffix("").parts
    return "/".join(parts[:-1] if len(parts) > 2 else parts)


def private_names_defined(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id
        elif isinstance(node, ast.Attribute) and is_own(node.value):
            yield node.attr


def is_own(receiver: ast.expr) -> bool:
    return isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")


def private_reaches(tree: ast.AST) -> Iterator[tuple[int, str, str]]:
    """(line, code, attribute) of every private attribute read or written on a receiver
    that is not ``self``/``cls``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr) and not is_own(node.value):
            yield node.lineno, ast.unparse(node), node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ATTRIBUTE_CALLS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and private(node.args[1].value)
            and not is_own(node.args[0])
        ):
            yield node.lineno, ast.unparse(node), node.args[1].value


TREES = {path: ast.parse(path.read_text()) for path in PROJECT_MODULES}
OWNERS: dict[str, set[str]] = {}
for _path, _tree in TREES.items():
    for _name in private_names_defined(_tree):
        if private(_name):
            OWNERS.setdefault(_name, set()).add(package_of(_path))


def crossings(path: Path) -> list[str]:
    here = package_of(path)
    module = path.relative_to(SOURCES).as_posix()
    return [
        f"{module}:{line} {code} (defined in {sorted(OWNERS.get(name, ())) or 'no package'})"
        for line, code, name in private_reaches(TREES[path])
        if here not in OWNERS.get(name, ()) and (module, name) not in CROSSINGS
    ]


@pytest.mark.parametrize("path", PROJECT_MODULES, ids=lambda p: str(p.relative_to(SOURCES)))
def test_no_module_reads_another_packages_private_attribute(path: Path) -> None:
    found = crossings(path)
    assert not found, f"use (or add) a public, documented hook instead: {found}"


def test_every_allowed_crossing_is_still_taken() -> None:
    taken = {
        (path.relative_to(SOURCES).as_posix(), name)
        for path in PROJECT_MODULES
        for _line, _code, name in private_reaches(TREES[path])
    }
    assert set(CROSSINGS) <= taken, f"drop these from CROSSINGS: {set(CROSSINGS) - taken}"


@pytest.mark.parametrize(
    "source",
    [
        "self.memory._forget('branch', 'b1', False, 'default', None)",
        "records = memory._currents('a1')",
        "lock = getattr(self.memory, '_lock', None)",
        "wrapper._done(result)",
        "view._bound_anchor = anchor",
    ],
)
def test_the_private_attribute_check_sees_a_reach(source: str) -> None:
    assert [name for _line, _code, name in private_reaches(ast.parse(source))]


@pytest.mark.parametrize(
    "source",
    ["self._lock", "cls._cache", "memory.currents('a1')", "getattr(memory, 'mode', None)"],
)
def test_the_private_attribute_check_lets_own_and_public_names_through(source: str) -> None:
    assert not list(private_reaches(ast.parse(source)))


def test_a_package_may_read_its_own_objects_private_attributes() -> None:
    mem0 = PACKAGE / "integrations" / "mem0"
    assert package_of(mem0 / "reads.py") == package_of(mem0 / "wrapper.py")
    assert "branchmem/integrations/mem0" in OWNERS["_done"]
    memory = PACKAGE / "memory"
    assert package_of(memory / "forget_calls.py") == package_of(memory / "__init__.py")
    assert package_of(memory / "__init__.py") != package_of(PACKAGE / "receipt.py")


# -- capabilities are ports, never discovered --------------------------------------------------
# What a backend can do is a method of ``Store`` that it overrides (``schema_version``,
# ``api_keys``, ``cannot_clean``, ``arrival_seq``, ``commit_stamp``, ``scan_bytes``): outside
# ``store/`` nothing asks a store what it is, by ``getattr``/``hasattr``, ``isinstance``, its
# type or class name, or its ``backend`` name (a backend that reads ahead says so by
# overriding ``Store.keyed_reads``, not with a flag).
STORE_CLASSES = frozenset(
    node.name
    for path in sorted((PACKAGE / "store").glob("*.py"))
    for node in ast.walk(ast.parse(path.read_text()))
    if isinstance(node, ast.ClassDef)
)
ASKS = frozenset({"getattr", "hasattr", "isinstance", "issubclass", "type"})


def names_a_store(node: ast.expr) -> bool:
    """A receiver named for a store (``store``, ``self._store``, ``ns.store``) or a store
    class (``KeyStore``, a tuple of them)."""
    if isinstance(node, ast.Tuple):
        return any(names_a_store(item) for item in node.elts)
    name = receiver_name(node)
    return name is not None and (name.lower().split("_")[-1] == "store" or name in STORE_CLASSES)


def capabilities_discovered(source: str) -> Iterator[tuple[int, str]]:
    """(line, code) of every question a module asks a store about what it is."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ASKS and any(names_a_store(arg) for arg in node.args[:2]):
                yield node.lineno, ast.unparse(node)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            by_name = any(
                isinstance(side, ast.Constant) and side.value in STORE_CLASSES for side in sides
            )
            by_backend = any(
                isinstance(side, ast.Attribute)
                and side.attr == "backend"
                and names_a_store(side.value)
                for side in sides
            )
            if by_name or by_backend:
                yield node.lineno, ast.unparse(node)


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if p.relative_to(PACKAGE).parts[0] != "store"],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_no_capability_of_a_store_is_discovered_outside_the_store(path: Path) -> None:
    found = list(capabilities_discovered(path.read_text()))
    assert not found, f"make it a port of Store that each backend overrides: {found}"


@pytest.mark.parametrize(
    "source",
    [
        'version = getattr(self._store, "schema_version", lambda: None)()',
        "if not isinstance(self._store, KeyStore): pass",
        "keys = isinstance(store, (SQLiteStore, PostgresStore))",
        "name = type(self._store).__name__",
        'if name == "SQLiteStore": pass',
        'if ns.store.backend == "sqlite": pass',
        'hasattr(store, "arrival_seq")',
    ],
)
def test_the_capability_check_sees_a_discovery(source: str) -> None:
    assert list(capabilities_discovered(source))


@pytest.mark.parametrize(
    "source",
    [
        "version = self._store.schema_version()",
        "keys = self._store.api_keys()",
        "isinstance(namespace, Namespace)",
        "getattr(memory, 'mode', None)",
        "check.backend == 'sqlite'",
    ],
)
def test_the_capability_check_lets_ports_through(source: str) -> None:
    assert not list(capabilities_discovered(source))


# -- the face and the insides ------------------------------------------------------------------
PRIVATE = ("_core", "_engine")
FACE_DOCS = sorted(
    [*(PACKAGE.parent.parent / "docs").glob("*.md"), PACKAGE.parent.parent / "README.md"]
)


def test_the_insides_have_private_names() -> None:
    """What is not the public face lives under a private name (docs/architecture.md "The face
    and the insides"): no module of the engine or of the core's rules sits in a public one."""
    public_rules = {"topology", "provenance", "resolution", "visibility", "retraction",
                    "validation", "keyed", "rules", "questions", "engine"}  # fmt: skip
    assert not [p.name for p in PACKAGE.iterdir() if p.stem in public_rules]
    assert all((PACKAGE / name).is_dir() for name in PRIVATE)


@pytest.mark.parametrize("doc", FACE_DOCS, ids=lambda p: p.name)
def test_no_example_imports_a_private_module(doc: Path) -> None:
    """A reader copies the docs' code: it must reach only the face."""
    found = re.findall(r"(?:from|import) branchmem\.(_\w+)", doc.read_text())
    assert not found, f"{doc.name} imports private modules in its examples: {found}"
