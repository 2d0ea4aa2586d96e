"""Typed readers of the public conversation corpora (LoCoMo, BEAM 100K and BEAM 500K).

The corpora are third-party data that live next to the repository
(``../shared/corpora``), never inside it: they are read at run time and nothing read
here is written back. The readers turn each format's quirks into one shape
(``CorpusTurn``) and say what they smoothed over, so a generator built on them does not
have to know that a LoCoMo answer can be an int or that a BEAM user turn ends with an
index marker.

Quirks handled (checked against the files at the pinned upstream commits):

- LoCoMo: the file is one flat object (``speaker_a``, ``session_N``,
  ``session_N_date_time`` ...); some files list dates for sessions that have no turns;
  image turns carry ``blip_caption`` (kept as ``image_caption``) next to their text;
  ``answer`` is sometimes an int and is absent for category-5 (adversarial) items, which
  have ``adversarial_answer`` instead; a few ``evidence`` entries are malformed
  (``"D8:6; D9:17"``, ``"D:11:26"``, ``"D30:05"``) or name turns that do not exist. Evidence
  is normalised to ``D<session>:<n>``; ids that still name no turn are kept apart in
  ``unresolved_evidence``.
- BEAM: ``chat.json`` is a list of batches, each a list of turn groups; ids are integers
  (kept as strings, like LoCoMo's); a ``time_anchor`` appears on some user turns only and
  holds until the next one; user turns end with an index marker ``->-> 1,21`` that is
  not part of what the user said (removed from ``text``, kept in ``index``); some
  ``knowledge_update`` items have no ``updated_info`` turn, and one 500K item has no
  ``source_chat_ids`` at all (read with no turns); a ``contradiction_resolution`` item
  lacking a side is read with no turns on that side too (the scorer leaves it out and
  counts it as dropped).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from branchbench.errors import BenchError

ENV_ROOT = "BRANCHBENCH_CORPORA"
LOCOMO_DIR = "locomo"
BEAM_DIR = "beam-100k"
BEAM_500K_DIR = "beam-500k"  # chats 1-12 of the 500K split, laid out as beam-100k
# Upstream commits the corpora README names; a generated split is pinned to them.
LOCOMO_UPSTREAM = ("snap-research/locomo", "e76cdff4a04fce19090596d49862fe87a5c15aaa")
BEAM_UPSTREAM = ("mohammadtavakoli78/BEAM", "b2a3ee8ba12d68f83143dda191097dc3e028ddd3")

_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D:?(\d+):0*(\d+)")
_INDEX_MARKER = re.compile(r"\s*->->[^\n]*$")


class CorpusUnavailable(BenchError):
    """The corpora folder (or one corpus in it) is not there; the message says where
    it was looked for and how to point at it."""


class CorpusError(BenchError):
    """A corpus file is there but not in the expected shape; the message names the
    file and the field."""


@dataclass(frozen=True)
class CorpusTurn:
    """One turn of a real conversation.

    ``speaker`` is the LoCoMo speaker's name or the BEAM role (``user``/``assistant``);
    ``session`` the LoCoMo session number or the BEAM batch number; ``date`` the
    session's date and time (LoCoMo) or the time anchor in force (BEAM, may be empty).
    """

    id: str
    speaker: str
    text: str
    session: str
    date: str
    image_caption: str = ""
    index: str = ""


@dataclass(frozen=True)
class LocomoQA:
    """A LoCoMo question with its gold answer and evidence turn ids.

    ``answer`` is always a string ("" for adversarial items, whose wrong-premise answer
    is ``adversarial_answer``). ``category`` is upstream's integer (1-5).
    """

    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]
    adversarial_answer: str = ""
    unresolved_evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class LocomoConversation:
    """One LoCoMo dialogue: its turns in order and its QA items."""

    id: str
    speakers: tuple[str, str]
    turns: tuple[CorpusTurn, ...]
    qa: tuple[LocomoQA, ...]

    def turn(self, turn_id: str) -> CorpusTurn:
        """The turn with this dia_id (KeyError naming it when absent)."""
        for t in self.turns:
            if t.id == turn_id:
                return t
        raise KeyError(f"LoCoMo conversation {self.id} has no turn {turn_id}")


@dataclass(frozen=True)
class BeamUpdate:
    """A BEAM ``knowledge_update`` item: the turns stating the old and the new value."""

    question: str
    answer: str
    original_ids: tuple[str, ...]
    updated_ids: tuple[str, ...]
    rubric: tuple[str, ...] = ()


@dataclass(frozen=True)
class BeamContradiction:
    """A BEAM ``contradiction_resolution`` item: the turns of the two conflicting
    statements (a reader must see both to notice the contradiction)."""

    question: str
    answer: str
    first_ids: tuple[str, ...]
    second_ids: tuple[str, ...]
    rubric: tuple[str, ...] = ()


@dataclass(frozen=True)
class BeamItem:
    """A BEAM question of another ability whose answer lies in named turns
    (``information_extraction``, ``temporal_reasoning``, ``multi_session_reasoning``)."""

    ability: str
    question: str
    answer: str
    source_ids: tuple[str, ...]
    rubric: tuple[str, ...] = ()


BEAM_SOURCED_ABILITIES = (
    "information_extraction",
    "temporal_reasoning",
    "multi_session_reasoning",
)


@dataclass(frozen=True)
class BeamChat:
    """One BEAM chat: its turns in order, its knowledge-update and its contradiction
    items, and the items of other abilities that name their source turns."""

    id: str
    turns: tuple[CorpusTurn, ...]
    updates: tuple[BeamUpdate, ...]
    contradictions: tuple[BeamContradiction, ...] = ()
    sourced: tuple[BeamItem, ...] = ()

    def turn(self, turn_id: str) -> CorpusTurn:
        """The turn with this id (KeyError naming it when absent)."""
        for t in self.turns:
            if t.id == turn_id:
                return t
        raise KeyError(f"BEAM chat {self.id} has no turn {turn_id}")


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def corpora_root() -> Path | None:
    """Where the corpora are: ``$BRANCHBENCH_CORPORA`` if set (None if that folder is
    absent), else the first ``shared/corpora`` beside the repository root, the current
    directory or a folder above them (a worktree sits one level deeper than a clone)."""
    env = os.environ.get(ENV_ROOT)
    if env:
        path = Path(env)
        return path if path.is_dir() else None
    seen: set[Path] = set()
    for base in (_repo_root(), Path.cwd().resolve()):
        for parent in base.parents:
            if parent in seen:
                continue
            seen.add(parent)
            candidate = parent / "shared" / "corpora"
            if (candidate / LOCOMO_DIR).is_dir() or (candidate / BEAM_DIR).is_dir():
                return candidate
    return None


def _resolve(root: Path | None, folder: str) -> Path:
    base = root if root is not None else corpora_root()
    if base is None:
        raise CorpusUnavailable(
            f"no corpora folder: set {ENV_ROOT} or put the corpora in ../shared/corpora"
        )
    path = base / folder
    if not path.is_dir():
        raise CorpusUnavailable(f"corpus folder {path} is absent")
    return path


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CorpusError(f"{path}: cannot read: {e}") from e


def _field(raw: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    if name not in raw:
        raise CorpusError(f"{where}: missing field {name!r}")
    value = raw[name]
    if not isinstance(value, kind):
        raise CorpusError(f"{where}: field {name!r} must be {kind.__name__}")
    return value


def normalise_dia_id(raw: str) -> tuple[str, ...]:
    """LoCoMo evidence text as canonical ``D<session>:<n>`` ids ("D8:6; D9:17" gives two,
    "D:11:26" gives D11:26, "D30:05" gives D30:5); fragments with no id are dropped."""
    return tuple(f"D{s}:{n}" for s, n in _DIA_ID.findall(raw))


def _answer_text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise CorpusError(f"{where}: answer must be text or a number")
    return str(value)


def read_locomo_file(path: Path) -> LocomoConversation:
    """One LoCoMo conversation file."""
    raw = _read_json(path)
    where = str(path)
    if not isinstance(raw, dict):
        raise CorpusError(f"{where}: a conversation must be a JSON object")
    speakers = (_field(raw, "speaker_a", str, where), _field(raw, "speaker_b", str, where))
    sessions = sorted(
        (int(m.group(1)), key) for key in raw if (m := _SESSION.fullmatch(key)) is not None
    )
    turns: list[CorpusTurn] = []
    for number, key in sessions:
        date = raw.get(f"{key}_date_time", "")
        items = _field(raw, key, list, where)
        for i, t in enumerate(items):
            at = f"{where}: {key}[{i}]"
            if not isinstance(t, dict):
                raise CorpusError(f"{at}: a turn must be an object")
            turns.append(
                CorpusTurn(
                    id=_field(t, "dia_id", str, at),
                    speaker=_field(t, "speaker", str, at),
                    text=_field(t, "text", str, at),
                    session=str(number),
                    date=str(date),
                    image_caption=str(t.get("blip_caption", "")),
                )
            )
    known = {t.id for t in turns}
    qa: list[LocomoQA] = []
    for i, q in enumerate(_field(raw, "qa", list, where)):
        at = f"{where}: qa[{i}]"
        if not isinstance(q, dict):
            raise CorpusError(f"{at}: a QA item must be an object")
        evidence: list[str] = []
        for e in _field(q, "evidence", list, at):
            if not isinstance(e, str):
                raise CorpusError(f"{at}: evidence entries must be strings")
            evidence.extend(normalise_dia_id(e))
        category = _field(q, "category", int, at)
        qa.append(
            LocomoQA(
                question=_field(q, "question", str, at),
                answer=_answer_text(q.get("answer"), at),
                category=category,
                evidence=tuple(e for e in evidence if e in known),
                adversarial_answer=_answer_text(q.get("adversarial_answer"), at),
                unresolved_evidence=tuple(e for e in evidence if e not in known),
            )
        )
    return LocomoConversation(id=path.stem, speakers=speakers, turns=tuple(turns), qa=tuple(qa))


def load_locomo(root: Path | None = None) -> tuple[LocomoConversation, ...]:
    """Every LoCoMo conversation under ``root/locomo`` (default: ``corpora_root()``),
    sorted by id."""
    folder = _resolve(root, LOCOMO_DIR)
    files = sorted(folder.glob("*.json"), key=lambda p: p.stem)
    if not files:
        raise CorpusUnavailable(f"corpus folder {folder} holds no conversation files")
    return tuple(read_locomo_file(p) for p in files)


def _ids(raw: Mapping[str, Any], name: str, where: str) -> tuple[str, ...]:
    value = raw.get(name, [])
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise CorpusError(f"{where}: source_chat_ids.{name} must be a list of turn ids")
    return tuple(str(v) for v in value)


def read_beam_chat(folder: Path) -> BeamChat:
    """One BEAM chat folder (``chat.json`` and ``probing_questions.json``)."""
    chat_path = folder / "chat.json"
    batches = _read_json(chat_path)
    if not isinstance(batches, list):
        raise CorpusError(f"{chat_path}: must be a list of batches")
    turns: list[CorpusTurn] = []
    anchor = ""
    for b, batch in enumerate(batches):
        at = f"{chat_path}: batch[{b}]"
        if not isinstance(batch, dict):
            raise CorpusError(f"{at}: a batch must be an object")
        number = str(batch.get("batch_number", b + 1))
        for g, group in enumerate(_field(batch, "turns", list, at)):
            if not isinstance(group, list):
                raise CorpusError(f"{at}.turns[{g}]: a turn group must be a list")
            for i, t in enumerate(group):
                tat = f"{at}.turns[{g}][{i}]"
                if not isinstance(t, dict):
                    raise CorpusError(f"{tat}: a turn must be an object")
                turn_id = _field(t, "id", int, tat)
                anchor = str(t.get("time_anchor") or anchor)
                content = _field(t, "content", str, tat)
                marker = _INDEX_MARKER.search(content)
                turns.append(
                    CorpusTurn(
                        id=str(turn_id),
                        speaker=_field(t, "role", str, tat),
                        text=content[: marker.start()] if marker else content,
                        session=number,
                        date=anchor,
                        index=str(t.get("index", "")),
                    )
                )
    questions_path = folder / "probing_questions.json"
    questions = _read_json(questions_path)
    if not isinstance(questions, dict):
        raise CorpusError(f"{questions_path}: must be an object of question lists")
    updates: list[BeamUpdate] = []
    for i, q in enumerate(_items(questions, "knowledge_update", questions_path)):
        at = f"{questions_path}: knowledge_update[{i}]"
        sources = _sources(q, at)
        updates.append(
            BeamUpdate(
                question=_field(q, "question", str, at),
                answer=_answer_text(q.get("answer"), at),
                original_ids=_ids(sources, "original_info", at),
                updated_ids=_ids(sources, "updated_info", at),
                rubric=_rubric(q),
            )
        )
    contradictions: list[BeamContradiction] = []
    for i, q in enumerate(_items(questions, "contradiction_resolution", questions_path)):
        at = f"{questions_path}: contradiction_resolution[{i}]"
        sources = _sources(q, at)
        contradictions.append(
            BeamContradiction(
                question=_field(q, "question", str, at),
                answer=_answer_text(q.get("ideal_answer", q.get("answer")), at),
                first_ids=_ids(sources, "first_statement", at),
                second_ids=_ids(sources, "second_statement", at),
                rubric=_rubric(q),
            )
        )
    sourced: list[BeamItem] = []
    for ability in BEAM_SOURCED_ABILITIES:
        for i, q in enumerate(_items(questions, ability, questions_path)):
            at = f"{questions_path}: {ability}[{i}]"
            ids = q.get("source_chat_ids", [])
            if isinstance(ids, dict):  # some items split their turns by role
                ids = [
                    v for side in ids.values() for v in (side if isinstance(side, list) else [side])
                ]
            sourced.append(
                BeamItem(
                    ability=ability,
                    question=_field(q, "question", str, at),
                    answer=_answer_text(q.get("answer"), at),
                    source_ids=_ids({"ids": ids}, "ids", at),
                    rubric=_rubric(q),
                )
            )
    return BeamChat(
        id=folder.name,
        turns=tuple(turns),
        updates=tuple(updates),
        contradictions=tuple(contradictions),
        sourced=tuple(sourced),
    )


def _items(questions: Mapping[str, Any], ability: str, path: Path) -> list[dict[str, Any]]:
    items = questions.get(ability, [])
    if not isinstance(items, list) or not all(isinstance(q, dict) for q in items):
        raise CorpusError(f"{path}: {ability} must be a list of objects")
    return items


def _sources(item: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    # one 500K update item names no turns at all: it is read with none (nothing to score)
    return _field(item, "source_chat_ids", dict, where) if "source_chat_ids" in item else {}


def _rubric(item: Mapping[str, Any]) -> tuple[str, ...]:
    rubric = item.get("rubric", [])
    return tuple(str(r) for r in rubric) if isinstance(rubric, list) else ()


def load_beam(root: Path | None = None, folder_name: str = BEAM_DIR) -> tuple[BeamChat, ...]:
    """Every BEAM chat under ``root/beam-100k`` (default: ``corpora_root()``; ``folder_name``
    ``BEAM_500K_DIR`` reads the 500K chats, laid out alike), sorted by number."""
    folder = _resolve(root, folder_name)
    chats = sorted(
        (p for p in folder.iterdir() if (p / "chat.json").is_file()),
        key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name),
    )
    if not chats:
        raise CorpusUnavailable(f"corpus folder {folder} holds no chats")
    return tuple(read_beam_chat(p) for p in chats)
