"""docs/async.md is true when followed literally: its Python blocks run, each in a fresh
interpreter in an empty directory, and the values its comments claim are checked (the
rules of ``test_docs.py``, whose reader this uses)."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_docs import ROOT, Reader, blocks

ASYNC_DOCS = ROOT / "docs" / "async.md"


def test_the_async_docs_run_as_written(tmp_path: Path) -> None:
    pytest.importorskip("langgraph", reason="the LangGraph example needs the 'langgraph' extra")
    pytest.importorskip("fastapi", reason="the FastAPI example needs the 'server' extra")
    reader = Reader(tmp_path)
    ran = 0
    for language, code, skip in blocks(ASYNC_DOCS.read_text(encoding="utf-8")):
        if language == "python" and skip is None:
            reader.python(code)
            ran += 1
    assert ran == 3
    assert (tmp_path / "chat.db").exists()


def test_the_readme_points_to_the_async_docs() -> None:
    assert "docs/async.md" in (ROOT / "README.md").read_text(encoding="utf-8")
