"""How LangGraph's checkpoint tree becomes branchmem events.

One LangGraph thread is one branchmem tree. Its events are:

* the **thread root** ``lg:<thread>``: the parent of every checkpoint without a parent;
* one **checkpoint event** ``lg:<thread>:<checkpoint_id>`` per root-namespace checkpoint;
* one **step event** ``lg:<thread>:<checkpoint_id>:step`` per super-step run *from* a
  checkpoint. The loop checkpoint that step produces hangs below it.

A node runs with its step's *input* checkpoint X in its config, and a replay forks X' from X
and reruns the node. Were a memory sourced at X, X would be an ancestor of the replayed branch
and the abandoned memory would stay visible there (the replay trap). Sourcing it at X's step
event instead ties it to the step's *output*: the step event lies on the path of the loop
checkpoint the step produced, and on no fork, update or new input branching off X.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ...errors import InvalidInput

PREFIX: Final = "lg"
THREAD_ROLE: Final = "thread"
CHECKPOINT_ROLE: Final = "checkpoint"
STEP_ROLE: Final = "step"
ROOT_NS: Final = ""

# Keys LangGraph puts into ``config["configurable"]`` while a node runs.
CONFIG_KEY_CHECKPOINT_MAP: Final = "checkpoint_map"
CONFIG_KEY_CHECKPOINTER: Final = "__pregel_checkpointer"
CONFIG_KEY_DURABILITY: Final = "__pregel_durability"


def thread_event_id(thread_id: str) -> str:
    """The root event of a thread's tree; also the tree id."""
    return f"{PREFIX}:{thread_id}"


def checkpoint_event_id(thread_id: str, checkpoint_id: str) -> str:
    """The event mirroring one root-namespace checkpoint."""
    return f"{PREFIX}:{thread_id}:{checkpoint_id}"


def step_event_id(thread_id: str, checkpoint_id: str) -> str:
    """The event of the super-step that runs from ``checkpoint_id``."""
    return f"{checkpoint_event_id(thread_id, checkpoint_id)}:step"


def configurable(config: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The ``configurable`` section of a RunnableConfig, empty when absent."""
    if not config:
        return {}
    section = config.get("configurable")
    return section if isinstance(section, Mapping) else {}


def thread_of(config: Mapping[str, Any] | None) -> str:
    """The thread id a config names; a config without one cannot be placed in any tree."""
    thread_id = configurable(config).get("thread_id")
    if thread_id is None or thread_id == "":
        raise InvalidInput("config has no configurable.thread_id: cannot place it in a tree")
    return str(thread_id)


def running_checkpoint(config: Mapping[str, Any] | None) -> str | None:
    """The root-namespace input checkpoint of the step a node is running in, if any.

    Inside a node ``configurable["checkpoint_id"]`` is None; LangGraph passes the input
    checkpoint of every enclosing graph in ``checkpoint_map``, keyed by namespace. The root
    graph's entry (key ``""``) is the one the thread's tree is made of, also for subgraphs.
    """
    checkpoint_map = configurable(config).get(CONFIG_KEY_CHECKPOINT_MAP)
    if not isinstance(checkpoint_map, Mapping):
        return None
    checkpoint_id = checkpoint_map.get(ROOT_NS)
    return str(checkpoint_id) if checkpoint_id else None


def anchor_of(config: Mapping[str, Any]) -> tuple[str, str | None]:
    """The thread and checkpoint (None: the head) an explicit config names."""
    conf = configurable(config)
    thread_id = thread_of(config)
    namespace = conf.get("checkpoint_ns", ROOT_NS) or ROOT_NS
    if namespace != ROOT_NS:
        raise InvalidInput(
            f"checkpoint_ns {namespace!r}: anchor at the root graph's checkpoint; a "
            "subgraph's memory belongs to the parent step it runs in"
        )
    checkpoint_id = conf.get("checkpoint_id")
    return thread_id, str(checkpoint_id) if checkpoint_id else None
