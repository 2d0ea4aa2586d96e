"""The corpus readers on the real LoCoMo and BEAM files, and their typed errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from branchbench.corpora import (
    BEAM_500K_DIR,
    BEAM_DIR,
    ENV_ROOT,
    CorpusError,
    CorpusUnavailable,
    corpora_root,
    load_beam,
    load_locomo,
    normalise_dia_id,
    read_beam_chat,
    read_locomo_file,
)
from corpora_env import require_corpora


@pytest.fixture(scope="module")
def root() -> Path:
    return require_corpora()


def test_locomo_reads_every_conversation_with_resolved_evidence(root: Path) -> None:
    conversations = load_locomo(root)
    assert len(conversations) == 10
    for conv in conversations:
        ids = [t.id for t in conv.turns]
        assert len(ids) == len(set(ids)), conv.id
        assert all(t.text and t.date for t in conv.turns), conv.id
        assert {t.speaker for t in conv.turns} == set(conv.speakers), conv.id
        for qa in conv.qa:
            assert isinstance(qa.answer, str)
            assert set(qa.evidence) <= set(ids), (conv.id, qa.question)


def test_locomo_oddities_are_smoothed(root: Path) -> None:
    conv = {c.id: c for c in load_locomo(root)}
    first = conv["26"]
    assert first.turn("D1:3").speaker == first.speakers[0]
    # "D8:6; D9:17" upstream: two ids, both real turns.
    painted = next(q for q in first.qa if q.question == "What did Melanie paint recently?")
    assert painted.evidence == ("D8:6", "D9:17")
    # an int answer upstream becomes text
    assert (
        next(q for q in first.qa if q.question == "When did Melanie paint a sunrise?").answer
        == "2022"
    )
    adversarial = [q for q in first.qa if q.category == 5]
    assert adversarial and all(q.adversarial_answer for q in adversarial)
    assert sum(q.answer == "" for q in adversarial) == len(adversarial) - 2  # two have both
    assert any(t.image_caption for t in first.turns)
    # "D:11:26" upstream
    authors = next(q for q in conv["43"].qa if q.question.startswith("What authors has Tim"))
    assert "D11:26" in authors.evidence


def test_beam_reads_every_chat_with_update_turns(root: Path) -> None:
    chats = load_beam(root)
    assert [c.id for c in chats] == [str(n) for n in range(1, 21)]
    for chat in chats:
        assert [t.id for t in chat.turns] == [str(i) for i in range(len(chat.turns))]
        assert {t.speaker for t in chat.turns} == {"user", "assistant"}
        assert not any("->->" in t.text for t in chat.turns), chat.id  # odd markers too
        assert chat.updates, chat.id
        for u in chat.updates:
            assert u.original_ids, (chat.id, u.question)
            for turn_id in u.original_ids + u.updated_ids:
                chat.turn(turn_id)
    first = chats[0]
    update = first.updates[0]
    assert (update.original_ids, update.updated_ids) == (("86",), ("114",))
    assert "250ms" in first.turn("114").text
    assert first.turn("0").date == "March-15-2024"
    assert first.turn("5").date == "March-15-2024"  # the anchor holds until the next one
    assert "->->" not in first.turn("0").text and first.turn("0").index == "1,1"


def test_beam_contradictions_name_turns_of_both_statements(root: Path) -> None:
    for folder, expected in ((BEAM_DIR, 40), (BEAM_500K_DIR, 24)):
        chats = load_beam(root, folder)
        assert sum(len(c.contradictions) for c in chats) == expected, folder
        for chat in chats:
            for c in chat.contradictions:
                assert c.first_ids and c.second_ids, (folder, chat.id, c.question)
                for turn_id in c.first_ids + c.second_ids:
                    chat.turn(turn_id)
    flask = load_beam(root)[0].contradictions[0]
    assert (flask.first_ids, flask.second_ids) == (("58",), ("24",))
    assert flask.answer.startswith("I notice you've mentioned contradictory information")


def test_normalise_dia_id() -> None:
    assert normalise_dia_id("D8:6; D9:17") == ("D8:6", "D9:17")
    assert normalise_dia_id("D:11:26") == ("D11:26",)
    assert normalise_dia_id("D30:05") == ("D30:5",)
    assert normalise_dia_id("D") == ()


def test_absent_corpora_raise_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_ROOT, str(tmp_path / "nowhere"))
    assert corpora_root() is None
    with pytest.raises(CorpusUnavailable, match="BRANCHBENCH_CORPORA"):
        load_locomo()
    with pytest.raises(CorpusUnavailable, match="beam-100k"):
        load_beam(tmp_path)


def test_malformed_files_name_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "1.json"
    bad.write_text(json.dumps({"speaker_a": "A", "speaker_b": "B", "session_1": [{}], "qa": []}))
    with pytest.raises(CorpusError, match=r"1\.json: session_1\[0\]: missing field 'dia_id'"):
        read_locomo_file(bad)
    chat = tmp_path / "7"
    chat.mkdir()
    (chat / "chat.json").write_text(json.dumps([{"turns": [[{"id": "x", "role": "user"}]]}]))
    with pytest.raises(CorpusError, match=r"chat\.json: batch\[0\]\.turns\[0\]\[0\]: field 'id'"):
        read_beam_chat(chat)
