"""Run a real ``mem0.Memory`` with no network: a scripted LLM, a hashing embedder, local Qdrant.

Mem0's pipeline (extraction prompt, neighbour search, hash dedup, ADD/UPDATE/DELETE/NONE,
history database) runs unchanged; only the two model calls are replaced. The scripted LLM
answers from fact annotations, the same oracle extraction branchbench uses, so every system
derives the same facts and the comparison measures memory management, not extraction.

Importing this module sets ``MEM0_TELEMETRY=False`` and points ``MEM0_DIR`` at a temporary
directory unless the caller set them first (Mem0 reads both once, at import time), and
quiets the ``mem0`` logger to errors unless the caller set its level.
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import itertools
import json
import logging
import math
import os
import re
import shutil
import tempfile
import threading
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

os.environ.setdefault("MEM0_TELEMETRY", "False")
if "MEM0_DIR" not in os.environ:
    _scratch = tempfile.mkdtemp(prefix="branchmem-mem0-")
    os.environ["MEM0_DIR"] = _scratch
    atexit.register(shutil.rmtree, _scratch, ignore_errors=True)

# Offline Mem0 runs without its optional extras (fastembed for BM25, spaCy for entities)
# and warns about each on every instance; keep them quiet unless the caller set a level.
if logging.getLogger("mem0").level == logging.NOTSET:
    logging.getLogger("mem0").setLevel(logging.ERROR)

from branchmem.errors import InvalidInput, MissingExtra

# mem0 ships no type information, and the type-checking venv may not have it installed.
try:
    import mem0  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from mem0.embeddings.base import EmbeddingBase  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from mem0.llms.base import LLMBase  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from mem0.utils.factory import EmbedderFactory, LlmFactory  # type: ignore[import-untyped, import-not-found, unused-ignore]
except ImportError as missing:
    raise MissingExtra("branchmem.integrations.mem0.offline", "mem0", missing.name) from missing

__all__ = [
    "DEFAULT_DIMS",
    "AnnotatedFact",
    "HashEmbedder",
    "ScriptedLLM",
    "offline_async_memory",
    "offline_memory",
    "openai_compatible_llm",
    "pgvector_store",
]

DEFAULT_DIMS = 256
# Mem0 validates provider names, so the offline classes are registered under existing
# names for the duration of one constructor call and the factory is restored afterwards.
_LLM_SLOT = "ollama"
_EMBEDDER_SLOT = "huggingface"
_FACTORY_LOCK = threading.Lock()


@dataclass(frozen=True)
class AnnotatedFact:
    """A fact a message states, as the oracle extractor reads it.

    ``text`` is the memory text Mem0 will store. ``op="retract"`` means the message takes
    the key's value back ("I no longer have a cat"): Mem0 1.x's resolver answers DELETE.
    """

    key: str
    text: str
    scope: str | None = None
    op: Literal["assert", "retract"] = "assert"


class ScriptedLLM(LLMBase):  # type: ignore[misc]
    """An LLM that answers Mem0's prompts from annotations instead of a model.

    It reads only the new-messages part of each extraction prompt (Mem0 2.x also shows
    the last messages of the whole scope, sibling branches included; a good model ignores
    them and so does this one). For Mem0 1.x's update prompt it resolves per key: the same
    text is NONE, the same key with another text is UPDATE (or DELETE for a retraction),
    anything else is ADD. That is the resolver the 1.x prompt asks for, without its noise.
    """

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self._facts_by_message: dict[str, tuple[AnnotatedFact, ...]] = {}
        self._fact_by_text: dict[str, AnnotatedFact] = {}
        self.prompts: deque[str] = deque(maxlen=16)  # the latest prompts, for inspection

    def annotate(self, content: str, facts: Iterable[AnnotatedFact]) -> None:
        """Declare the facts a message with this exact content states (replacing what an
        earlier message with the same content declared: that one was already added)."""
        listed = tuple(facts)
        for fact in listed:
            if not fact.text.strip():
                raise InvalidInput(f"fact for key {fact.key!r} has an empty text")
            self._fact_by_text[fact.text] = fact
        self._facts_by_message[content] = listed

    def generate_response(
        self,
        messages: list[dict[str, str]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str = "auto",
        **kwargs: Any,
    ) -> str:
        """Answer one Mem0 prompt with the JSON Mem0 expects."""
        prompt = str(messages[-1].get("content", "")) if messages else ""
        self.prompts.append(prompt)
        if "## New Messages" in prompt:
            return self._additive_extraction(prompt)
        if "new retrieved facts" in prompt:
            return self._update_decisions(prompt)
        if prompt.startswith("Input:"):
            facts = self._facts_in(prompt[len("Input:") :])
            return json.dumps({"facts": [f.text for f in facts]}, ensure_ascii=False)
        return json.dumps({"facts": [], "memory": []})

    def _facts_in(self, new_messages: str) -> list[AnnotatedFact]:
        # Mem0 renders each message as "role: content\n"; the ": " prefix and the newline
        # keep one message's content from matching inside another's.
        found: list[AnnotatedFact] = []
        for content, facts in self._facts_by_message.items():
            if f": {content}\n" in new_messages or new_messages.endswith(f": {content}"):
                found.extend(facts)
        return found

    def _additive_extraction(self, prompt: str) -> str:
        section = prompt.split("## New Messages", 1)[1]
        section = section.split("\n## ", 1)[0]
        facts = self._facts_in(section)
        memory = [
            {"id": str(i), "text": f.text, "attributed_to": "user", "linked_memory_ids": []}
            for i, f in enumerate(facts)
        ]
        return json.dumps({"memory": memory}, ensure_ascii=False)

    def _update_decisions(self, prompt: str) -> str:
        old = _literal_block(prompt, "collected till now")
        new_texts = _literal_block(prompt, "new retrieved facts")
        old_memories = [m for m in old if isinstance(m, dict)]
        decisions: list[dict[str, str]] = []
        touched: set[str] = set()
        for text in (t for t in new_texts if isinstance(t, str)):
            fact = self._fact_by_text.get(text)
            same_text = next((m for m in old_memories if m.get("text") == text), None)
            if same_text is not None:
                continue  # already known: NONE below
            rival = None
            if fact is not None:
                rival = next(
                    (
                        m
                        for m in old_memories
                        if str(m.get("id")) not in touched
                        and (other := self._fact_by_text.get(str(m.get("text")))) is not None
                        and _competes(fact, other)
                    ),
                    None,
                )
            if rival is not None:
                rid = str(rival.get("id"))
                touched.add(rid)
                if fact is not None and fact.op == "retract":
                    decisions.append({"id": rid, "text": str(rival.get("text")), "event": "DELETE"})
                else:
                    decisions.append(
                        {
                            "id": rid,
                            "text": text,
                            "event": "UPDATE",
                            "old_memory": str(rival.get("text")),
                        }
                    )
            elif fact is None or fact.op == "assert":
                decisions.append({"id": f"new-{len(decisions)}", "text": text, "event": "ADD"})
        for m in old_memories:
            if str(m.get("id")) not in touched:
                decisions.append(
                    {"id": str(m.get("id")), "text": str(m.get("text")), "event": "NONE"}
                )
        return json.dumps({"memory": decisions}, ensure_ascii=False)


def _competes(new: AnnotatedFact, old: AnnotatedFact) -> bool:
    """Same key and scope; a retraction without a scope takes back every scope of its key."""
    if new.key != old.key or old.op == "retract":
        return False
    return new.scope == old.scope or (new.op == "retract" and new.scope is None)


def _literal_block(prompt: str, marker: str) -> list[Any]:
    """The Python literal in the first fenced block after ``marker`` (Mem0 1.x formats the
    old memories and new facts with ``str(list)``, not JSON)."""
    at = prompt.find(marker)
    if at < 0:
        return []
    match = re.search(r"```\s*(.*?)\s*```", prompt[at:], flags=re.S)
    if match is None:
        return []
    try:
        value = ast.literal_eval(match.group(1))
    except (ValueError, SyntaxError):
        return []
    return list(value) if isinstance(value, list) else []


_WORD = re.compile(r"[a-z0-9]+")
_CJK = re.compile(r"[\u3400-\u9fff]")


def _features(text: str) -> Iterator[str]:
    lowered = text.lower()
    yield from _WORD.findall(lowered)
    cjk = _CJK.findall(lowered)
    yield from cjk
    yield from (a + b for a, b in itertools.pairwise(cjk))


class HashEmbedder(EmbeddingBase):  # type: ignore[misc]
    """Feature hashing of words and CJK character bigrams into a unit vector.

    Deterministic and dependency-free: texts sharing words land near each other, which
    is all Mem0's neighbour search needs to put a sibling branch's memory in front of
    the resolver, the situation under test. Counts are unsigned, so every cosine is >= 0
    and a search with threshold 0 ranks every memory instead of dropping some.
    """

    def embed(self, text: Any, memory_action: str | None = None) -> list[float]:
        """Embed one text (Mem0 1.x may hand over a list of message dicts)."""
        dims = int(getattr(self.config, "embedding_dims", None) or DEFAULT_DIMS)
        vector = [0.0] * dims
        for feature in _features(text if isinstance(text, str) else json.dumps(text)):
            digest = hashlib.blake2b(feature.encode(), digest_size=4).digest()
            vector[int.from_bytes(digest, "big") % dims] += 1.0
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0:
            vector[0] = 1.0
            return vector
        return [v / norm for v in vector]


@contextmanager
def _offline_providers() -> Iterator[None]:
    from mem0.configs.llms.base import BaseLlmConfig  # type: ignore[import-untyped, import-not-found, unused-ignore]

    with _FACTORY_LOCK:
        llm_slot = LlmFactory.provider_to_class[_LLM_SLOT]
        embedder_slot = EmbedderFactory.provider_to_class[_EMBEDDER_SLOT]
        LlmFactory.provider_to_class[_LLM_SLOT] = (f"{__name__}.ScriptedLLM", BaseLlmConfig)
        EmbedderFactory.provider_to_class[_EMBEDDER_SLOT] = f"{__name__}.HashEmbedder"
        try:
            yield
        finally:
            LlmFactory.provider_to_class[_LLM_SLOT] = llm_slot
            EmbedderFactory.provider_to_class[_EMBEDDER_SLOT] = embedder_slot


def offline_memory(
    directory: str | Path | None = None,
    *,
    dims: int = DEFAULT_DIMS,
    llm: dict[str, Any] | None = None,
    vector_store: dict[str, Any] | None = None,
) -> Any:
    """A real ``mem0.Memory`` with the scripted LLM and hashing embedder.

    Annotate facts through ``memory.llm.annotate(...)``. With ``directory``, Qdrant runs in
    local path mode and Mem0's SQLite history lives there; without, both are in memory
    (Qdrant's local in-memory client: the same code path, ten times faster to open, which
    is what branchbench wants for one fresh Mem0 per scenario and system). ``llm`` replaces
    the scripted LLM with a Mem0 LLM section (e.g. ``openai_compatible_llm(url, model)``);
    ``vector_store`` replaces Qdrant with a Mem0 vector store section (e.g.
    ``pgvector_store(url, "memories")``: local Qdrant's payload filter visits every point,
    so its ``add`` grows with the memories, where pgvector's HNSW index does not).
    """
    return _offline(mem0.Memory, directory, dims, llm, vector_store)


def offline_async_memory(
    directory: str | Path | None = None,
    *,
    dims: int = DEFAULT_DIMS,
    llm: dict[str, Any] | None = None,
    vector_store: dict[str, Any] | None = None,
) -> Any:
    """``offline_memory`` as a ``mem0.AsyncMemory`` (the same LLM, embedder and stores), so
    the async API can be checked against the wrapper offline too."""
    return _offline(mem0.AsyncMemory, directory, dims, llm, vector_store)


def pgvector_store(
    url: str, collection: str, *, dims: int = DEFAULT_DIMS, hnsw: bool = True
) -> dict[str, Any]:
    """Mem0's vector store section for pgvector on the PostgreSQL server at ``url`` (a
    ``postgresql://`` URL; the server needs the ``vector`` extension), with an HNSW index."""
    config = {"connection_string": url, "collection_name": collection}
    return {
        "provider": "pgvector",
        "config": {**config, "embedding_model_dims": dims, "hnsw": hnsw},
    }


def _offline(
    cls: Any,
    directory: str | Path | None,
    dims: int,
    llm: dict[str, Any] | None,
    vector_store: dict[str, Any] | None = None,
) -> Any:
    store: dict[str, Any] = {"collection_name": "memories", "embedding_model_dims": dims}
    if vector_store is not None:
        history = ":memory:" if directory is None else str(Path(directory) / "history.db")
        if directory is not None:
            Path(directory).mkdir(parents=True, exist_ok=True)
    elif directory is None:
        from qdrant_client import QdrantClient  # type: ignore[import-not-found, unused-ignore]

        store["client"] = QdrantClient(location=":memory:")
        history = ":memory:"
    else:
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        store.update(path=str(root / "qdrant"), on_disk=True)
        history = str(root / "history.db")
    config = {
        "llm": llm or {"provider": _LLM_SLOT, "config": {"model": "scripted"}},
        "embedder": {"provider": _EMBEDDER_SLOT, "config": {"embedding_dims": dims}},
        "vector_store": vector_store or {"provider": "qdrant", "config": store},
        "history_db_path": history,
    }
    with _offline_providers(), warnings.catch_warnings():
        # local Qdrant says payload indexes have no effect; Mem0 creates them anyway
        warnings.simplefilter("ignore", UserWarning)
        return cls.from_config(config)


def openai_compatible_llm(endpoint: str, model: str, api_key: str | None = None) -> dict[str, Any]:
    """Mem0's LLM section for any OpenAI-compatible server (temperature 0)."""
    return {
        "provider": "openai",
        "config": {
            "model": model,
            "openai_base_url": endpoint,
            "api_key": api_key or os.environ.get("OPENAI_API_KEY", "not-needed"),
            "temperature": 0.0,
        },
    }
