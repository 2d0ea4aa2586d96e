"""``forget`` by message, branch, conversation or subject, and the receipt it hands back."""

from __future__ import annotations

import json

import pytest

from branchmem import ErasedError, InvalidInput, Memory, NotFoundError
from branchmem.receipt import Receipt

from .story import chengdu, ids


# -- forget and receipts -------------------------------------------------------------------
def test_forget_a_message_erases_what_was_built_on_it_and_hands_a_receipt(mem: Memory) -> None:
    chengdu(mem)
    mem.add_record("summary", sources=["f-chengdu", "f-planning"], kind="summary",
                   content="planning a move to Chengdu")  # fmt: skip
    receipt = mem.forget("message", "u2")
    assert receipt.erased["events"] == ("u2",)
    assert receipt.erased["records"] == ("f-chengdu", "summary")
    assert receipt.erased["revisions"] == ("f-chengdu@1", "summary@1")
    assert receipt.counts["records"] == 2 and not receipt.dry_run
    assert receipt.sources_kept == ("f-planning",)  # the summary's other source stays
    assert mem.get_event("u2").content == ""
    with pytest.raises(ErasedError):
        mem.get_record("summary")
    assert receipt.check.clean, receipt.check
    assert receipt.cannot_clean  # said plainly, whatever the backend
    assert "Chengdu" not in repr(receipt.to_json())  # fingerprints, never the text
    assert [e.reason for e in mem.audit(op="forget")] == [receipt.content_hash]
    kept = [Receipt.from_json(json.loads(e.reason)) for e in mem.audit(op="receipt")]
    assert kept == [receipt.redacted()]  # committed with the erase: a re-run returns it
    checked = mem.verify_receipt(receipt)
    assert checked.ok and checked.in_audit and checked.hash_matches, checked


def test_forget_a_branch_takes_the_event_and_everything_below_it(mem: Memory) -> None:
    chengdu(mem)
    mem.add_event("u3b", "a2b", content="Any neighbourhood tips for Hangzhou?")
    receipt = mem.forget("branch", "u2b")
    assert receipt.erased["events"] == ("a2b", "u2b", "u3b")
    assert receipt.erased["records"] == ("f-hangzhou",)
    assert mem.get_event("u2").content == "I'm moving to Chengdu next month."
    assert ids(mem.visible("a2")) == ["f-planning", "f-chengdu"]


def test_forget_a_conversation_leaves_the_other_conversations(mem: Memory) -> None:
    chengdu(mem)
    mem.add_event("t1", content="Another chat about a recipe with peanuts")
    mem.add_record("f-peanut", sources=["t1"], content="likes peanut recipes")
    receipt = mem.forget("conversation", "t1")
    assert receipt.erased["events"] == ("t1",)
    assert receipt.erased["records"] == ("f-peanut",)
    assert mem.get_event("u2b").content == "I'm moving to Hangzhou next month."
    with pytest.raises(NotFoundError, match="conversation 'nowhere'"):
        mem.forget("conversation", "nowhere")


def test_forget_a_subject_takes_the_records_naming_it(mem: Memory) -> None:
    chengdu(mem)
    mem.add_record("f-diet", sources=["u2"], content="is vegetarian", key="alice:diet")
    mem.add_record("f-team", sources=["u1"], content="leads design", scope="alice")
    mem.add_record("f-tag", sources=["u1"], content="likes tea", meta={"about": ["alice"]})
    mem.add_record("f-bob", sources=["u1"], content="likes coffee", key="bob:drink")
    mem.add_record("f-al", sources=["u1"], content="other", key="alicent")
    receipt = mem.forget("subject", "alice")
    assert receipt.erased["records"] == ("f-diet", "f-tag", "f-team")
    assert receipt.erased["events"] == ()
    assert receipt.sources_kept == ("u1", "u2")  # the messages stay: forget them by id
    assert mem.get_record("f-bob").content == "likes coffee"
    assert mem.get_record("f-al").content == "other"


def test_a_dry_run_lists_what_would_go_and_changes_nothing(mem: Memory) -> None:
    chengdu(mem)
    before = mem.audit()
    dry = mem.forget("branch", "u2b", dry_run=True)
    assert dry.dry_run and dry.erased["events"] == ("a2b", "u2b")
    assert not dry.check.clean  # the text is still there, and the check sees it
    assert mem.get_event("u2b").content == "I'm moving to Hangzhou next month."
    assert mem.audit() == before
    assert mem.forget("branch", "u2b").erased == dry.erased


def test_forget_names_the_sessions_that_were_shown_the_text(mem: Memory) -> None:
    chengdu(mem)
    mem.context("a2", session="chat-1")  # delivered f-chengdu; its recent messages: u2
    mem.context("a2b", session="chat-2")  # the other branch: saw neither
    receipt = mem.forget("message", "u2")
    assert [(s.session, s.records, s.messages) for s in receipt.shown] == [
        ("chat-1", ("f-chengdu",), True)
    ]
    assert [e.reason for e in mem.audit(id="chat-1", op="forget")] == [receipt.content_hash]
    assert [d.reason for d in mem.stale_deliveries("chat-1")] == ["erased"]


def test_a_receipt_that_was_altered_or_redacted_checks_as_such(mem: Memory) -> None:
    chengdu(mem)
    receipt = mem.forget("message", "u2b")
    altered = dict(receipt.to_json(), counts={"events": 0})
    assert not mem.verify_receipt(altered).hash_matches
    assert not mem.verify_receipt(altered).ok
    redacted = mem.verify_receipt(receipt.redacted())
    assert redacted.ok and redacted.check is None
    again = mem.forget("message", "u2b")  # run again: the receipt it made, redacted
    assert again == receipt.redacted() and mem.verify_receipt(again).ok


def test_forget_refuses_what_it_cannot_name(mem: Memory) -> None:
    chengdu(mem)
    with pytest.raises(InvalidInput, match="forget kind"):
        mem.forget("everything", "u2")
    with pytest.raises(NotFoundError, match="'nope'"):
        mem.forget("message", "nope")
    receipt = mem.forget("message", "u2")
    with pytest.raises(InvalidInput, match="namespace 'default', not 'other'"):
        mem.verify_receipt(receipt, namespace="other")
    with pytest.raises(InvalidInput, match="receipt"):
        mem.verify_receipt({"version": 1})
