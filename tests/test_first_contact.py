"""What a new user copies from the README works as written: the install line of each part
brings every package the part's commands need, and the import paths it names exist."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "optional-dependencies"
]


def packages(extra: str) -> set[str]:
    """The distributions ``pip install "branchmem[extra]"`` installs beyond the base,
    following ``branchmem[...]`` inside an extra."""
    found: set[str] = set()
    for requirement in EXTRAS[extra]:
        name = re.split(r"[\s\[<>=!;~]", requirement, maxsplit=1)[0]
        if name == "branchmem":
            inner = requirement[requirement.index("[") + 1 : requirement.index("]")]
            for each in inner.split(","):
                found |= packages(each.strip())
        else:
            found.add(name.lower())
    return found


def test_the_service_install_line_brings_what_the_service_block_runs() -> None:
    """The block runs ``branchmem serve`` (server) and ``--url`` / ``Client`` (client)."""
    section = README[README.index("**Service + client**") :]
    named = re.search(r'pip install "branchmem\[(\w+)\]"', section)
    assert named is not None
    block = section[: section.index("**MCP**")]
    needed = {"server"} if "branchmem serve" in block else set()
    if "--url" in block or "Client(" in block:
        needed.add("client")
    assert needed == {"server", "client"}
    installed = packages(named.group(1))
    for extra in needed:
        assert packages(extra) <= installed, (named.group(1), extra)


def test_every_embedder_the_readme_names_has_the_import_it_gives() -> None:
    imports = re.findall(r"from (branchmem[\w.]*) import\s+(\w+Embedder)", README)
    names = {name for name in re.findall(r"\b(\w+Embedder)\(", README)}
    assert names and names <= {name for _, name in imports}, (names, imports)
    for module, name in imports:
        done = subprocess.run(
            [sys.executable, "-c", f"from {module} import {name}"], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr


def test_the_embedders_import_from_branchmem_search() -> None:
    from branchmem.search import HashingEmbedder, MiniLMEmbedder
    from branchmem.search.embedding import HashingEmbedder as Defined

    assert HashingEmbedder is Defined and MiniLMEmbedder.__name__ == "MiniLMEmbedder"
