"""LangMem's memory store manager as a branchbench system (optional: needs the ``langmem``
package).

As LangMem's docs deploy it in the background: ``create_memory_store_manager(model,
namespace=("memories", "{langgraph_user_id}"), store=..., enable_deletes=True)`` (deletes
are off by default; on, a retraction can remove a memory, as in the other rows) over LangGraph's
``InMemoryStore`` with a semantic index, called with each new message of the thread. For
every call LangMem searches the user's namespace with the message (its ``query_limit``
of 5), shows the memories found to its LLM through trustcall, and applies what the LLM
answers: a new ``Memory``, a ``PatchDoc`` of a memory shown, a ``RemoveDoc``. A context is
the store's ``search(namespace, query=question)``; the transcript is the thread's, which
follows the fork (LangGraph's checkpointer). The store knows nothing of branches.

The LLM is scripted (``ScriptedChatModel``), as for the Mem0 and Graphiti rows: it answers
from the facts the run's pipeline derived for the message, as a careful model would. Each
fact becomes the line every system derives (``fact_line``); it patches a memory shown of
the same topic (key and scope) and inserts one where none is shown; a retraction removes
the memories shown of its topic. What LangMem does not show the LLM it cannot update, so a
topic's old memory the search missed stays beside the new one, as with a real model. The
embedder is branchmem's deterministic ``HashingEmbedder`` (no network).
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.store.memory import InMemoryStore
from langmem import create_memory_store_manager  # type: ignore[import-untyped, import-not-found, unused-ignore]
from pydantic import ConfigDict

from branchbench.context import Context, fit
from branchbench.pipeline import Integration, fact_line
from branchbench.scenario import Fact, Message
from branchbench.systems.base import Conversation, Setup
from branchmem.search.embedding import HashingEmbedder

USER = "branchbench"
NAMESPACE = ("memories", USER)
CONFIG = {"configurable": {"langgraph_user_id": USER}}
TOP_K = 20  # as many as the other library rows rank: the token budget decides what fits
DIMENSIONS = 256
_INSTANCE = re.compile(r'<instance id=(\S+) schema_type="(\w+)">\n(.*?)\n</instance>', re.S)

Topic = tuple[str, str | None]


class ScriptedChatModel(BaseChatModel):
    """A chat model whose tool calls come from ``script(shown, tools)``: ``shown`` is the
    (id, content) of each memory LangMem put in the prompt, ``tools`` the names bound."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    script: Any

    @property
    def _llm_type(self) -> str:
        return "branchbench-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        names = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self.bind(tool_names=names, **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        prompt = "\n".join(str(m.content) for m in messages)
        shown = [
            (mid, str(ast.literal_eval(body).get("content", "")))
            for mid, _, body in _INSTANCE.findall(prompt)
        ]
        calls = self.script(shown, list(kw.get("tool_names") or ()))
        message = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])


class LangMemStore:
    """LangMem's store manager over an ``InMemoryStore``, namespaced by user, searched by
    the question; the transcript is the thread's, which follows the fork."""

    name = "langmem"
    integration = Integration(
        "message", f"every memory in the user's namespace (langmem {version('langmem')})"
    )

    def __init__(self, setup: Setup) -> None:
        self.language = setup.language
        self.conversation = Conversation()
        embedder = HashingEmbedder(DIMENSIONS)
        self.store: Any = InMemoryStore(index={"embed": embedder.embed, "dims": DIMENSIONS})
        self.facts: Sequence[Fact] = ()
        self.topic_of: dict[str, Topic] = {}  # what the model wrote each content for
        self.calls = itertools.count(1)
        self.manager = create_memory_store_manager(
            ScriptedChatModel(script=self._answer),
            namespace=("memories", "{langgraph_user_id}"),
            store=self.store,
            enable_deletes=True,  # off by default; on, "forget ..." can remove a memory
        )

    def _call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "args": args, "id": f"call_{next(self.calls)}", "type": "tool_call"}

    def _answer(self, shown: list[tuple[str, str]], tools: list[str]) -> list[dict[str, Any]]:
        """The careful model: each fact of the message patches a memory shown of its topic,
        or is inserted; a retraction removes the memories shown of its topic."""
        calls = []
        for fact in self.facts:
            same = [
                mid
                for mid, content in shown
                if (topic := self.topic_of.get(content)) is not None
                and topic[0] == fact.key
                and ((fact.scope is None and fact.op == "retract") or topic[1] == fact.scope)
            ]
            if fact.op == "retract":
                if "RemoveDoc" in tools:
                    calls += [self._call("RemoveDoc", {"json_doc_id": mid}) for mid in same]
                continue
            text = fact_line(fact)
            self.topic_of[text] = (fact.key, fact.scope)
            if same and "PatchDoc" in tools:
                patch = {"op": "replace", "path": "/content", "value": text}
                args = {"json_doc_id": same[0], "planned_edits": "replace", "patches": [patch]}
                calls.append(self._call("PatchDoc", args))
            else:
                calls.append(self._call("Memory", {"content": text}))
        return calls

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.conversation.add(message)
        if not facts:
            return  # nothing for the model to say: LangMem would write nothing
        self.facts = facts
        role = "user" if message.role == "user" else "assistant"
        self.manager.invoke({"messages": [{"role": role, "content": message.content}]}, CONFIG)

    def context(self, anchor: str, question: str, budget: int) -> Context:
        found = self.store.search(NAMESPACE, query=question, limit=TOP_K)
        lines = [str(item.value["content"]["content"]) for item in found]
        return fit(lines, self.conversation.path_turns(anchor), budget, self.language)

    def close(self) -> None:
        pass


SYSTEMS = {"langmem": LangMemStore}
