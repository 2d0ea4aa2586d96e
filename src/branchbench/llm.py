"""The model path: any OpenAI-compatible endpoint, temperature 0, every answer cached.

Each request is keyed by the SHA-256 of (endpoint, model, messages, temperature, run
index): two servers that serve a model under the same name never share answers; the
cache is an append-only JSONL file, so an interrupted run resumes and ``branchbench
score`` never needs the endpoint.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from branchbench.errors import LLMError

NEUTRAL_PROMPT = (
    "You are a helpful assistant with memory of earlier conversations. "
    "Use the memory and conversation below to answer the user's question briefly."
)
CONFLICT_PROMPT = (
    NEUTRAL_PROMPT + " If the information conflicts, go with the latest state of the "
    "user's current conversation and give one answer."
)
PROMPTS = {"neutral": NEUTRAL_PROMPT, "conflict": CONFLICT_PROMPT}
QUESTION_HEADING = {"zh": "问题：", "en": "Question: "}

Messages = list[dict[str, str]]


def answer_messages(prompt: str, context: str, question: str, language: str) -> Messages:
    """The chat request for one probe: fixed system prompt, context, then the question."""
    heading = QUESTION_HEADING.get(language, QUESTION_HEADING["en"])
    body = f"{context}\n\n{heading}{question}" if context else f"{heading}{question}"
    return [{"role": "system", "content": prompt}, {"role": "user", "content": body}]


def request_hash(endpoint: str, model: str, messages: Messages, run: int) -> str:
    """Cache key of a request: what was asked, of which model at which endpoint, in
    which run."""
    payload = {
        "endpoint": endpoint.rstrip("/"),
        "model": model,
        "messages": messages,
        "temperature": 0,
        "run": run,
    }
    blob = json.dumps(payload, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class ChatModel:
    """A cached chat-completions client for one endpoint and model."""

    endpoint: str
    model: str
    cache_path: Path
    timeout: float = 120.0

    def __post_init__(self) -> None:
        self._cache: dict[str, str] = {}
        self._client: Any = None
        self.calls = 0
        if self.cache_path.exists():
            for line in self.cache_path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    self._cache[row["hash"]] = row["answer"]

    def _connect(self) -> Any:
        if self._client is None:
            from openai import OpenAI

            self._client = OpenAI(
                base_url=self.endpoint,
                api_key=os.environ.get("OPENAI_API_KEY") or "not-needed",
                timeout=self.timeout,
                max_retries=2,
            )
        return self._client

    def complete(self, messages: Messages, run: int = 0) -> tuple[str, str]:
        """(request hash, answer text); from the cache when this request was made before."""
        key = request_hash(self.endpoint, self.model, messages, run)
        if key in self._cache:
            return key, self._cache[key]
        import openai

        try:
            response = self._connect().chat.completions.create(
                model=self.model, messages=messages, temperature=0
            )
        except openai.OpenAIError as e:
            raise LLMError(f"endpoint {self.endpoint} failed for model {self.model}: {e}") from e
        choices = getattr(response, "choices", None) or []
        content = choices[0].message.content if choices else None
        if content is None:
            raise LLMError(f"endpoint {self.endpoint} returned no message content")
        self.calls += 1
        self._cache[key] = content
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        with self.cache_path.open("a", encoding="utf-8") as f:
            row = {
                "hash": key,
                "endpoint": self.endpoint,
                "model": self.model,
                "run": run,
                "answer": content,
            }
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
        return key, content


EXTRACT_PROMPT = (
    "Extract durable facts about the user from one chat message. Reply with a JSON list "
    'only, each item {"key": short_snake_case_topic, "value": the fact in the message\'s '
    'language, "scope": null or a context such as "incident"}. Reply [] when there is none.'
)


def parse_facts(text: str) -> list[dict[str, Any]]:
    """The fact objects in a model's reply; anything unparsable yields no facts."""
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end <= start:
        return []
    try:
        items = json.loads(text[start : end + 1])
    except ValueError:
        return []
    if not isinstance(items, list):
        return []
    return [
        i
        for i in items
        if isinstance(i, dict)
        and isinstance(i.get("key"), str)
        and isinstance(i.get("value"), str)
        and i["value"]
    ]


INPUT_EXTRACT_PROMPT = (
    "Extract durable facts about the user from the recent chat messages and the existing "
    "memories below; restate the existing memories that still hold. Reply with a JSON list "
    'only, each item {"key": short_snake_case_topic, "value": the fact in the messages\' '
    'language, "scope": null or a context such as "incident"}. Reply [] when there is none.'
)


def input_extraction_messages(said: Sequence[tuple[str, str]], memories: Sequence[str]) -> Messages:
    """The request for a pipeline step that reads several messages and memories."""
    parts = []
    if memories:
        parts.append("Existing memories:\n" + "\n".join(f"- {m}" for m in memories))
    if said:
        parts.append("Recent messages:\n" + "\n".join(f"{r}: {c}" for r, c in said))
    return [
        {"role": "system", "content": INPUT_EXTRACT_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def extraction_messages(role: str, content: str) -> Messages:
    """The request that asks the model for the facts in one message."""
    return [
        {"role": "system", "content": EXTRACT_PROMPT},
        {"role": "user", "content": f"{role}: {content}"},
    ]
