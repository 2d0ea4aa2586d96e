"""Raw-history systems: no derived memory at all."""

from __future__ import annotations

from collections.abc import Sequence

from branchbench.context import Context, fit
from branchbench.pipeline import RAW_ONLY
from branchbench.scenario import Fact, Message
from branchbench.systems.base import Conversation, Setup


class FullHistory:
    """Every message in arrival order, most recent first to survive the budget.

    What a log-shaped memory does with a tree: abandoned branches are just earlier lines.
    """

    name = "full_history"
    integration = RAW_ONLY  # no derived memory: what a pipeline derives is not kept

    def __init__(self, setup: Setup) -> None:
        self.language = setup.language
        self.conversation = Conversation()

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.conversation.add(message)

    def context(self, anchor: str, question: str, budget: int) -> Context:
        return fit([], self.conversation.arrival_turns(), budget, self.language)

    def close(self) -> None:
        pass


class RawCurrentBranch(FullHistory):
    """Only the anchor's root path: the upper bound for leaks, blind to early facts
    once the path outgrows the budget."""

    name = "raw_current_branch"

    def context(self, anchor: str, question: str, budget: int) -> Context:
        return fit([], self.conversation.path_turns(anchor), budget, self.language)
