"""LangGraph's own ``InMemoryStore`` tests, run against ``BranchStore`` (docs/langgraph.md)."""

from __future__ import annotations

from peer_adapter import PEER, export, load, needs_peer, package

pytestmark = needs_peer

# test name -> why it contradicts branch gating by design (strict xfail)
EXPECTED: dict[str, str] = {}

if PEER is not None:
    from peer_stores import BranchInMemoryStore

    _utils = load(
        "langgraph/libs/checkpoint-postgres/tests/embed_test_utils.py", "peer_lg_embed_utils"
    )
    suite = load(
        "langgraph/libs/checkpoint/tests/test_store.py",
        "peer_lg_inmemory_store",
        aliases=package("tests", embed_test_utils=_utils),
    )
    suite.InMemoryStore = BranchInMemoryStore
    export(suite, globals(), expected=EXPECTED)
