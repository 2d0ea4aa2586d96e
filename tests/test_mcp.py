"""``branchmem mcp`` over stdio, driven by the MCP client as an agent host would."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the MCP SDK is in the 'server' extra")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import branchmem
from branchmem import Memory


def result(called: Any) -> Any:
    """A tool call's structured result (or its error text, raised)."""
    if getattr(called, "is_error", False) or getattr(called, "isError", False):
        raise AssertionError(called.content[0].text)
    structured = getattr(called, "structured_content", None) or getattr(
        called, "structuredContent", None
    )
    if structured is not None:
        return structured.get("result", structured)
    return json.loads(called.content[0].text)


async def session_run(db: Path, steps: Any) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "branchmem.cli", "mcp", "--db", str(db), "--namespace", "alice",
              "--conversation", "chat"],
        env=dict(os.environ),  # the SDK passes only a safe subset: keep PYTHONPATH
    )  # fmt: skip
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await steps(session)


def test_the_four_tools_follow_the_conversations_branch(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"

    async def steps(session: ClientSession) -> dict[str, Any]:
        tools = {t.name for t in (await session.list_tools()).tools}
        chengdu = result(
            await session.call_tool(
                "remember",
                {"content": "moving to Chengdu", "key": "city",
                 "message": "I'm moving to Chengdu next month"},
            )
        )  # fmt: skip
        on_chengdu = result(await session.call_tool("recall", {"query": "moving"}))
        # the user edits the message: the host moves to the parent and sends the new text
        root = "chat"
        hangzhou = result(
            await session.call_tool(
                "remember",
                {"content": "moving to Hangzhou", "key": "city", "event": root,
                 "message": "I'm moving to Hangzhou next month"},
            )
        )  # fmt: skip
        on_hangzhou = result(await session.call_tool("recall", {"query": "moving"}))
        why = result(await session.call_tool("explain", {"record_id": chengdu["id"]}))
        compared = result(await session.call_tool("diff", {"other": chengdu["event"]}))
        forgot = result(await session.call_tool("forget", {"key": "city", "reason": "asked"}))
        after = result(await session.call_tool("recall", {}))
        back = result(await session.call_tool("recall", {"event": chengdu["event"]}))
        return {
            "tools": tools, "chengdu": chengdu, "on_chengdu": on_chengdu,
            "hangzhou": hangzhou, "on_hangzhou": on_hangzhou, "why": why, "diff": compared,
            "forgot": forgot, "after": after, "back": back,
        }  # fmt: skip

    seen = anyio.run(session_run, db, steps)
    assert seen["tools"] >= {"remember", "recall", "forget", "explain", "diff"}
    # recall cites: each record names the message it was built from
    assert [r["sources"] for r in seen["on_chengdu"]["records"]] == [[seen["chengdu"]["event"]]]
    compared = seen["diff"]  # at the Hangzhou message against the Chengdu one
    assert [(e["content"], e["why_not_on_the_other"]) for e in compared["only_here"]] == [
        ("moving to Hangzhou", "off_path")
    ]
    assert [(e["content"], e["why_not_on_the_other"]) for e in compared["only_there"]] == [
        ("moving to Chengdu", "off_path")
    ]
    assert compared["keys"] == [
        {"key": "city", "scope": None, "here": "moving to Hangzhou", "there": "moving to Chengdu"}
    ]
    assert [r["content"] for r in seen["on_chengdu"]["records"]] == ["moving to Chengdu"]
    assert [r["content"] for r in seen["on_hangzhou"]["records"]] == ["moving to Hangzhou"]
    assert (seen["why"]["visible"], seen["why"]["reason"]) == (False, "off_path")
    assert seen["after"]["records"] == []  # forgotten on this branch ...
    assert [r["content"] for r in seen["back"]["records"]] == ["moving to Chengdu"]  # not there
    with Memory.open(db) as mem:
        record = mem.get_record(seen["hangzhou"]["id"], namespace="alice")
        assert record.sources == (seen["hangzhou"]["event"],)
        assert mem.get_event(seen["hangzhou"]["event"], namespace="alice").content == (
            "I'm moving to Hangzhou next month"
        )
        assert mem.head("chat", namespace="alice") == seen["chengdu"]["event"]


def test_a_tool_error_names_the_problem(tmp_path: Path) -> None:
    async def steps(session: ClientSession) -> Any:
        return await session.call_tool("explain", {"record_id": "nope"})

    called = anyio.run(session_run, tmp_path / "agent.db", steps)
    assert getattr(called, "is_error", getattr(called, "isError", False))
    assert "not_found" in called.content[0].text and "'nope'" in called.content[0].text


def test_remember_without_a_message_or_event_is_refused(tmp_path: Path) -> None:
    """A fact tied to no message would be sourced at a head that never moves: no gating."""
    db = tmp_path / "agent.db"

    async def steps(session: ClientSession) -> Any:
        return await session.call_tool("remember", {"content": "likes tea", "key": "drink"})

    called = anyio.run(session_run, db, steps)
    assert getattr(called, "is_error", getattr(called, "isError", False))
    text = called.content[0].text
    assert "invalid_input: remember needs `message`" in text and "`event`" in text
    with Memory.open(db) as mem:
        assert mem.audit(namespace="alice") == []  # nothing was written


def test_remember_with_an_event_is_sourced_at_that_message(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"

    async def steps(session: ClientSession) -> Any:
        first = result(
            await session.call_tool(
                "remember", {"content": "moving to Chengdu", "message": "I'm moving to Chengdu"}
            )
        )
        second = result(
            await session.call_tool("remember", {"content": "has a cat", "event": first["event"]})
        )
        return first, second

    first, second = anyio.run(session_run, db, steps)
    assert second["event"] == first["event"]
    with Memory.open(db) as mem:
        record = mem.get_record(second["id"], namespace="alice")
        assert record.sources == (first["event"],)
        assert mem.visible(first["event"], namespace="alice")[-1].id == second["id"]
        assert not mem.explain(second["id"], "chat", namespace="alice").visible  # above it


def test_the_server_reports_the_package_version(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "branchmem.cli", "mcp", "--db", str(tmp_path / "agent.db")],
        env=dict(os.environ),
    )

    async def handshake() -> Any:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            return await session.initialize()

    started = anyio.run(handshake)
    assert started.server_info.name == "branchmem"
    assert started.server_info.version == branchmem.__version__ != ""
