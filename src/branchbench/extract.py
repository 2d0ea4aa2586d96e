"""Extractors: what derived content every system receives for a message.

The oracle extractor returns the annotated facts, so every system gets identical derived
content and differences come from how each stores and serves it, not from extraction.
The oracle's keys are perfect entity resolution, which flatters every keyed system; the
rule extractor derives keys and values from the text alone, so its resolution errors
(two phrasings of one topic under two keys, one clause under the wrong topic) become
part of the measurement. The LLM extractor asks the configured model instead (same facts
for every system too: the runner extracts once per message).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from branchbench.llm import ChatModel, extraction_messages, input_extraction_messages, parse_facts
from branchbench.scenario import Fact, Message


class Extractor(Protocol):
    """Derives the facts of one message."""

    name: str

    def extract(self, message: Message) -> tuple[Fact, ...]:
        """Facts derived from ``message``."""


class OracleExtractor:
    """Exactly the annotated facts."""

    name = "oracle"

    def extract(self, message: Message) -> tuple[Fact, ...]:
        return message.facts


# Topics in priority order: a clause gets the key of the first topic whose cue it
# contains. Cues are everyday words for common personal topics, not scenario keys, and
# one list serves every split; it was written with the packaged dialogues in view, so
# it is a crude but not a blind extractor.
TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("allergy", ("过敏", "allerg")),
    ("budget", ("预算", "人均", "budget", "per person", "spend")),
    ("rent", ("房租", "租金", "rent")),
    ("address", ("地址", "address", "住址")),
    ("hotel", ("酒店", "宾馆", "民宿", "hotel", "inn", "hostel")),
    ("restaurant", ("餐厅", "饭店", "restaurant")),
    ("job", ("工作", "上班", "跳槽", "job", "work as", "offer")),
    ("move", ("搬", "move", "moving", "relocat")),
    ("home", ("住在", "老家", "live in", "hometown")),
    ("trip", ("旅行", "旅游", "假期", "trip", "travel", "holiday", "vacation")),
    ("transport", ("高铁", "飞机", "坐车", "自驾", "train", "fly", "flight", "drive")),
    ("meeting", ("会议", "开会", "评审", "meeting", "review")),
    ("pet", ("猫", "狗", "宠物", "cat", "dog", "pet", "puppy", "kitten")),
    ("family", ("女儿", "儿子", "孩子", "daughter", "son", "kid")),
    ("medication", ("药", "medication", "medicine", "pill")),
    ("exercise", ("健身", "跑步", "运动", "锻炼", "gym", "run", "exercise", "workout")),
    ("diet", ("不吃", "忌口", "素食", "diet", "vegetarian", "don't eat")),
    ("gift", ("礼物", "gift", "present")),
    ("goal", ("目标", "goal", "target")),
    ("time", ("点", "周一", "周二", "周三", "周四", "周五", "周六", "周日", "o'clock",
              "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")),
)  # fmt: skip
_RETRACT = re.compile(r"别再提|不要再提|不用再提|忘掉|忘了|删掉|forget|don't bring|stop mentioning")
_EVERYWHERE = re.compile(r"所有|任何|全部|everywhere|any conversation|all conversations")
_CLAUSE = re.compile(r"(?:[^。！？；;!?\n.]|\.(?=\S))+[。！？；;!?.]?")
_LATIN_CUE = re.compile(r"[a-z]")


def _topic(clause: str) -> str | None:
    folded = clause.casefold()
    for key, cues in TOPICS:
        for cue in cues:
            if _LATIN_CUE.match(cue):
                if re.search(rf"(?<![a-z]){re.escape(cue)}", folded):
                    return key
            elif cue in folded:
                return key
    return None


class RuleExtractor:
    """Deterministic, no network, no annotation: one fact per topic per message, keyed
    by the first topic cue of a clause, valued by the clause itself. Questions state no
    fact; "forget ..." retracts its topic (everywhere when it says so)."""

    name = "rules"

    def extract(self, message: Message) -> tuple[Fact, ...]:
        if message.role not in ("user", "assistant"):
            return ()
        facts: dict[str, Fact] = {}
        for match in _CLAUSE.finditer(message.content):
            clause = match.group(0).strip()
            if not clause or clause.endswith(("？", "?")):
                continue
            key = _topic(clause)
            if key is None:
                continue
            if message.role == "user" and _RETRACT.search(clause.casefold()):
                everywhere = _EVERYWHERE.search(clause.casefold())
                facts[key] = Fact(
                    key=key, op="retract", retract_scope="tree" if everywhere else "branch"
                )
                continue
            value = clause.rstrip("。！；;!.")
            if key in facts and facts[key].op == "assert":
                value = f"{facts[key].value}，{value}"
            facts[key] = Fact(key=key, value=value)
        return tuple(facts.values())


class LLMExtractor:
    """Facts from a chat model (assertions only: retractions need the annotation)."""

    name = "llm"

    def __init__(self, model: ChatModel) -> None:
        self.model = model

    def extract(self, message: Message) -> tuple[Fact, ...]:
        if message.role not in ("user", "assistant") or not message.content.strip():
            return ()
        _, reply = self.model.complete(extraction_messages(message.role, message.content))
        return _facts(reply)

    def extract_input(
        self, messages: Sequence[Message], memories: Sequence[str]
    ) -> tuple[Fact, ...]:
        """The model reads a whole pipeline input (a window of messages and the memories
        it is shown) and states the facts it holds, as an LLM pipeline step does."""
        said = [(m.role, m.content) for m in messages if m.role in ("user", "assistant")]
        if not said and not memories:
            return ()
        _, reply = self.model.complete(input_extraction_messages(said, memories))
        return _facts(reply)


def _facts(reply: str) -> tuple[Fact, ...]:
    facts = []
    for item in parse_facts(reply):
        scope = item.get("scope")
        facts.append(
            Fact(
                key=item["key"],
                value=item["value"],
                scope=scope if isinstance(scope, str) and scope else None,
            )
        )
    return tuple(facts)
