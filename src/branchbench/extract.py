"""Extractors: what derived content every system receives for a message.

The oracle extractor returns the annotated facts, so every system gets identical derived
content and differences come from how each stores and serves it, not from extraction.
The LLM extractor asks the configured model instead (same facts for every system too:
the runner extracts once per message).
"""

from __future__ import annotations

from typing import Protocol

from branchbench.llm import ChatModel, extraction_messages, parse_facts
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


class LLMExtractor:
    """Facts from a chat model (assertions only: retractions need the annotation)."""

    name = "llm"

    def __init__(self, model: ChatModel) -> None:
        self.model = model

    def extract(self, message: Message) -> tuple[Fact, ...]:
        if message.role not in ("user", "assistant") or not message.content.strip():
            return ()
        _, reply = self.model.complete(extraction_messages(message.role, message.content))
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
