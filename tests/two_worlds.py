"""Two worlds for tenant isolation: what tenant A sees must not depend on anyone else's data.

World 1 holds only A's data (namespace ``a``): a small scripted history, then every routed
operation of ``branchmem.api.operations.operations()`` called with the example arguments of
``CALLS`` / ``BY_PARAM`` (twice: the second pass reads what the first one wrote). World 2 runs
the very same A steps, with random writes of tenant B (namespace ``b``) and of A's other
namespace (``a2``) interleaved before, between and after them: the same sentences, the same
ids and keys as A's, and B's secret, which A's history "guesses" (A writes the same text,
then forgets it and verifies receipts, among them receipts with fingerprints A chose).

A face (``run_python``, ``run_http``, the TypeScript runner of ``test_two_worlds.py``) runs a
script and returns A's outcomes, one per A step; ``normalise`` then takes out what may
legitimately differ, and ``differences`` says where the two worlds' outcomes part.

A step's arguments are plain JSON values, ``Ref`` (an earlier A result, for the receipts
``verify_receipt`` is given and the delivery ``blame`` traces) or ``Each`` (one call per
value; several ``Each`` of one call are zipped).
"""

from __future__ import annotations

import json
import random
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from branchmem.api.codec import encode, encode_argument
from branchmem.api.operations import Operation, operations
from branchmem.receipt import text_fingerprints

# -- texts: A's sentences, which B repeats word for word, and B's secret -------------------
T_MOVE = "I need help planning a move to a new city this spring."
T_CHENGDU = "I'm moving to Chengdu next month with my whole family."
T_HANGZHOU = "I'm moving to Hangzhou next month with my whole family."
T_FLAT = "Found a flat near West Lake with a small balcony garden."
T_PEANUTS = "My doctor says I'm allergic to peanuts and also to shrimp."
T_REVIEW = "Design review notes: the storage layer needs a second pass."
T_TYPO = "Ignore the previous message, it was meant for someone else."
T_P1 = "Actually the movers arrive on the third of May at nine."
F_CHENGDU = "moving to Chengdu next month"
F_HANGZHOU = "moving to Hangzhou next month"
F_HANGZHOU_MAY = "moving to Hangzhou in May, movers booked"
F_PEANUTS = "allergic to peanuts (told by the doctor)"
F_SHRIMP = "allergic to peanuts and shrimp (told by the doctor)"
F_FLAT = "rents a flat near West Lake with a balcony"
F_PLAN = "plan the move to Hangzhou around the West Lake flat"
F_REVIEW = "the storage layer needs a second design pass"
# B's secret; A writes the same text as its guess (world 1: only A's copy exists)
SECRET = "Bob's bank PIN is 4417 and his safe code is tulip-42."
WRONG_GUESS = "Bob's bank PIN is 9051 and his safe code is daisy-17."
TEXTS = (T_MOVE, T_CHENGDU, T_HANGZHOU, T_FLAT, T_PEANUTS, T_REVIEW, T_TYPO, T_P1, SECRET)
FACTS = (F_CHENGDU, F_HANGZHOU, F_HANGZHOU_MAY, F_PEANUTS, F_SHRIMP, F_FLAT, F_PLAN, SECRET)

NAMESPACES = {"a": "a", "a2": "a2", "b": "b"}
AS_OF = 20  # an arrival number inside A's history (seq is drawn per namespace)


@dataclass(frozen=True)
class Ref:
    """The result of an earlier A call of this pass (``op``, its ``index``-th call), then
    ``path`` into it (keys and list indexes); ``set`` overrides fields of the value found."""

    op: str
    index: int = 0
    path: tuple[Any, ...] = ()
    set: dict[str, Any] | None = None


@dataclass(frozen=True)
class Each:
    """One call per value; several ``Each`` of one call are zipped (same length)."""

    values: tuple[Any, ...]

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", values)


@dataclass(frozen=True)
class Label:
    """A resolved ``Ref``: the label of the step whose result it names."""

    label: str
    path: tuple[Any, ...] = ()
    set: dict[str, Any] | None = None


@dataclass
class Step:
    who: str  # "a", "a2" or "b"
    op: str
    kwargs: dict[str, Any]
    label: str = ""


# -- the attacker's receipts ------------------------------------------------------------
# A chooses a key and the fingerprints of a guess, and puts them into a receipt of its own
# namespace: its real receipt, or one made up from scratch (not in the audit, wrong hash).
ATTACK_KEY = "a7" * 32  # a key as forget draws them (32 bytes, hex), fixed
GUESSED = {"key": ATTACK_KEY, "fingerprints": sorted(set(text_fingerprints(ATTACK_KEY, SECRET)))}
WRONG = {"key": ATTACK_KEY, "fingerprints": sorted(set(text_fingerprints(ATTACK_KEY, WRONG_GUESS)))}


def fabricated(namespace: str, fingerprints: dict[str, Any]) -> dict[str, Any]:
    """A receipt no forget wrote: namespace ``namespace``, naming A's guess ``g1``."""
    return {
        "version": 2, "namespace": namespace, "kind": "message", "target": "g1",
        "dry_run": False, "time": 1_700_000_000.0, "actor": None,
        "erased": {"events": ["g1"], "records": ["gr1"], "revisions": ["gr1@1"],
                   "vectors": [], "repairs": []},
        "counts": {"events": 1, "records": 1, "revisions": 1, "vectors": 0, "repairs": 0},
        "shown": [], "sources_kept": [],
        "check": {"backend": "memory", "locations": {}, "unchecked": [], "clean": True,
                  "time": 1_700_000_000.0},
        "cannot_clean": [], "cleanup_pending": None, "short_fields": 0,
        "fingerprint_digest": "sha256:" + "0" * 64, "content_hash": "sha256:" + "1" * 64,
        "stores": [], **fingerprints,
    }  # fmt: skip


# -- A's scripted history -----------------------------------------------------------------
HISTORY: list[tuple[str, dict[str, Any]]] = [
    ("add_event", {"id": "u1", "content": T_MOVE}),
    ("add_event", {"id": "u2", "parent": "u1", "content": T_CHENGDU}),
    ("add_record", {"id": "city-1", "sources": ["u2"], "content": F_CHENGDU, "key": "city"}),
    ("add_event", {"id": "u2b", "parent": "u1", "content": T_HANGZHOU}),
    ("add_record", {"id": "city-2", "sources": ["u2b"], "content": F_HANGZHOU, "key": "city"}),
    ("add_events", {"events": [
        {"id": "u3", "parent": "u2b", "content": T_FLAT},
        {"id": "u4", "parent": "u3", "content": T_PEANUTS},
    ]}),
    ("add_record", {"id": "diet-1", "sources": ["u4"], "content": F_PEANUTS,
                    "key": "alice:diet", "meta": {"subject": "alice"}}),
    ("add_records", {"records": [
        {"id": "diet-2", "sources": ["u4"], "content": F_SHRIMP, "key": "alice:diet"},
        {"id": "flat-1", "sources": ["u3"], "content": F_FLAT},
        {"id": "plan-1", "sources": ["city-2", "u3"], "content": F_PLAN},
    ]}),
    ("supersede", {"new_id": "diet-2", "old_id": "diet-1"}),
    ("retract", {"id": "ret-1", "sources": ["u4"], "targets": ["flat-1"], "reason": "moved"}),
    ("revise", {"id": "city-2", "content": F_HANGZHOU_MAY}),
    ("set_head", {"event_id": "u4"}),
    ("context", {"anchor": "u4", "session": "s1", "cite": True}),
    ("add_event", {"id": "g1", "parent": "u1", "content": SECRET}),  # the guess
    ("add_record", {"id": "gr1", "sources": ["g1"], "content": SECRET}),
    ("search", {"query": "bank PIN safe code tulip", "anchor": "g1"}),
    ("context", {"anchor": "g1", "session": "s1"}),
    ("add_event", {"id": "x1", "parent": "u3", "content": T_TYPO}),
    ("erase", {"id": "x1", "reason": "sent by mistake"}),
    ("add_event", {"id": "w1", "content": T_REVIEW}),
    ("add_record", {"id": "w-fact", "sources": ["w1"], "content": F_REVIEW,
                    "key": "review", "scope": "team/alice"}),
    ("withdraw", {"id": "flat-1", "reason": "checking"}),
    ("restore", {"id": "flat-1"}),
    ("forget", {"kind": "subject", "id": "bob", "dry_run": True}),
]  # fmt: skip

# -- the examples every routed operation is called with ---------------------------------
# One line per operation (``{}`` when every argument comes from BY_PARAM or has a default).
# An operation missing here fails the suite: add its line.
CALLS: dict[str, dict[str, Any]] = {
    "add_event": {"id": "p1", "parent": "u2b", "content": T_P1, "meta": {"topic": "move"}},
    "add_events": {"events": [{"id": "p2", "parent": "p1", "content": T_CHENGDU},
                              {"id": "p3", "parent": "p2", "content": T_FLAT}]},
    "get_event": {"id": Each("u2", "bx1", "x1")},
    "path": {"anchor": Each("u4", "bx1")},
    "set_head": {"event_id": "p3"},
    "head": {"tree": Each("u1", "bx1")},
    "heads": {},
    "conversations": {},
    "trees": {},
    "tree_events": {"tree": Each("u1", "w1")},
    "record_views": {"tree": Each(None, "u1")},
    "add_record": {"id": "p-fact", "sources": ["p1"], "content": F_HANGZHOU_MAY, "key": "city"},
    "add_records": {"records": [{"id": "p-f2", "sources": ["p2"], "content": F_SHRIMP,
                                 "key": "alice:diet"}]},
    "revise": {"id": "flat-1", "content": F_FLAT + ", three rooms"},
    "get_record": {"id": Each("city-2", "bsecret-r"), "revision": Each(1, None)},
    "supersede": {"new_id": "p-f2", "old_id": "diet-2"},
    "retract": {"id": "ret-2", "sources": ["p3"], "key": "city"},
    "withdraw": {"id": "city-1", "reason": "wrong city"},
    "erase": {"id": "p3"},
    "restore": {"id": "city-1"},
    "dependents": {"id": Each("u4", "u1")},
    "forget": {"kind": Each("message", "message", "subject", "conversation"),
               "id": Each("g1", "g1", "alice", "w1"), "dry_run": Each(True, False, True, False)},
    "verify_receipt": {"receipt": Each(
        Ref("forget", 1),  # A's own receipt, in the audit
        Ref("forget", 0),  # a dry run's: not in the audit
        Ref("forget", 1, set=GUESSED),  # its own receipt, fingerprints of the guess
        Ref("forget", 1, set=WRONG),  # ... of a wrong guess
        fabricated("a", GUESSED),  # made up, in A's namespace
        fabricated("a", WRONG),
        fabricated("b", GUESSED),  # made up, naming B's namespace
    )},
    "visible": {"key": Each(None, "city")},
    "explain": {"record_id": Each("city-1", "bsecret-r"), "anchor": "u2b"},
    "current": {"key": Each("city", "alice:diet")},
    "stale": {},
    "diff": {"anchor_a": "u2", "anchor_b": "u4"},
    "promote": {"record_id": "city-1", "onto": "u3"},
    "report": {},
    "audit": {"id": Each(None, "g1"), "op": Each(None, "forget")},
    "history": {"record_id": Each("diet-1", "bsecret-r")},
    "repair_queue": {},
    "search": {"query": Each("moving next month", "bank PIN safe code tulip"), "k": 5},
    "context": {"session": Each("s2", None), "cite": True, "budget": 400},
    "deliveries": {"session": "s1"},
    "stale_deliveries": {"session": "s1"},
    "blame": {"session": "s1", "delivery": Ref("deliveries", 0, (0, "seq")),
              "line": Each(None, 1)},
}  # fmt: skip
# By parameter name, for every operation that has the parameter (CALLS wins).
BY_PARAM: dict[str, Any] = {"anchor": "u4", "as_of": Each(None, AS_OF)}


class MissingExample(AssertionError):
    pass


def calls_of(op: Operation) -> list[dict[str, Any]]:
    """The keyword arguments of each example call of ``op``: its ``CALLS`` line, then
    ``BY_PARAM`` for the parameters the line leaves out; ``Each`` unrolled."""
    if op.name not in CALLS:
        raise MissingExample(f"operation {op.name!r} has no line in CALLS (tests/two_worlds.py)")
    line = CALLS[op.name]
    names = {p.name for p in op.params}
    unknown = set(line) - names
    if unknown:
        raise MissingExample(f"CALLS[{op.name!r}] names no parameter {sorted(unknown)}")
    chosen: dict[str, Any] = {}
    for param in op.params:
        if param.name in line:
            chosen[param.name] = line[param.name]
        elif param.name in BY_PARAM:
            chosen[param.name] = BY_PARAM[param.name]
        elif param.required:
            raise MissingExample(
                f"operation {op.name!r}: no example for required parameter {param.name!r}"
            )
    lengths = {len(v.values) for v in chosen.values() if isinstance(v, Each)}
    if len(lengths) > 1:
        raise MissingExample(f"operation {op.name!r}: Each of different lengths {lengths}")
    count = lengths.pop() if lengths else 1
    return [
        {k: v.values[i] if isinstance(v, Each) else v for k, v in chosen.items()}
        for i in range(count)
    ]


def probes(passes: int = 2) -> list[Step]:
    """Every routed operation with its example calls, in the table's order, ``passes``
    times; ``Ref`` resolved to the label of the call it names in the same pass."""
    steps = []
    for run in range(1, passes + 1):
        for op in operations().values():
            for index, kwargs in enumerate(calls_of(op)):
                label = f"p{run}:{op.name}#{index}"
                resolved = {k: _label(v, run) for k, v in kwargs.items()}
                steps.append(Step("a", op.name, resolved, label))
    return steps


def _label(value: Any, run: int) -> Any:
    if isinstance(value, Ref):
        return Label(f"p{run}:{value.op}#{value.index}", value.path, value.set)
    return value


def a_script(*, in_process: bool = False) -> list[Step]:
    """A's history, then every routed operation's examples (twice); ``in_process``: then
    the in-process operations' too (the Python face only: they have no route)."""
    history = [Step("a", op, kwargs, f"h{i}:{op}") for i, (op, kwargs) in enumerate(HISTORY)]
    return history + probes() + (in_process_probes() if in_process else [])


# -- the in-process operations ------------------------------------------------------------
# Public ``Memory`` methods that have no route (tests/test_client_api.py's EMBEDDED_ONLY) and
# act in one namespace: the Python face calls each with these examples after the routed
# probes, so a hook for integrations is held to the same isolation as the table. A method
# that takes a ``namespace`` and is in neither dict fails test_two_worlds.py.
def _cleans_nothing(receipt: Any, texts: tuple[str, ...]) -> tuple[Any, ...]:
    """``forget_with``'s ``also``: a store outside branchmem that held none of it."""
    return ()


def _rebuilt(record: Any, view: Any) -> tuple[str, list[str]]:
    """``repair``'s deriver: the stale record again, from its own sources."""
    return f"{record.content} (rebuilt)", list(record.sources or ())


IN_PROCESS: dict[str, dict[str, Any]] = {
    "change_stamp": {},
    "currents": {"anchor": Each("u4", "u4", "p2"), "prefix": Each("", "city", "alice:")},
    "repair": {"deriver": _rebuilt, "anchor": Each(None, "u4")},
    "forget_with": {"kind": "message", "id": "p2", "also": _cleans_nothing,
                    "dry_run": Each(True, False)},
}  # fmt: skip
IN_PROCESS_WRITES = frozenset({"repair", "forget_with"})  # the rest only read
# ... and why these are not called on their own: each call made inside them is one of the above
NOT_CALLED: dict[str, str] = {
    "snapshot": "a context manager: the reads made inside it are the operations",
    "transaction": "a context manager: the writes made inside it are the operations",
}


def in_process_probes() -> list[Step]:
    """Each in-process operation with its example calls, ``Each`` unrolled."""
    steps = []
    for name, line in IN_PROCESS.items():
        lengths = {len(v.values) for v in line.values() if isinstance(v, Each)}
        assert len(lengths) <= 1, f"IN_PROCESS[{name!r}]: Each of different lengths"
        for index in range(lengths.pop() if lengths else 1):
            kwargs = {k: v.values[index] if isinstance(v, Each) else v for k, v in line.items()}
            steps.append(Step("a", name, kwargs, f"in:{name}#{index}"))
    return steps


# -- tenant B (and A's other namespace) ----------------------------------------------------
A_EVENTS = ("u1", "u2", "u2b", "u3", "u4", "g1", "x1", "w1", "p1", "p2", "p3")
A_RECORDS = ("city-1", "city-2", "diet-1", "diet-2", "flat-1", "plan-1", "gr1", "w-fact",
             "p-fact", "p-f2", "ret-1", "ret-2")  # fmt: skip
KEYS = ("city", "alice:diet", "review", "bob:bank")
PROTECTED = frozenset({"g1", "gr1", "bsecret", "bsecret-r"})  # B's secret stays to the end


def secret_steps(who: str) -> list[Step]:
    """B's secret, under A's guess ids ``g1``/``gr1`` and ids of its own."""
    return [
        Step(who, "add_event", {"id": "g1", "content": SECRET}),
        Step(who, "add_record", {"id": "gr1", "sources": ["g1"], "content": SECRET}),
        Step(who, "add_event", {"id": "bsecret", "parent": "g1", "content": SECRET}),
        Step(who, "add_record", {"id": "bsecret-r", "sources": ["bsecret"], "content": SECRET,
                                 "key": "bob:bank", "meta": {"subject": "bob"}}),
    ]  # fmt: skip


@dataclass
class _Space:
    events: list[str] = field(default_factory=list)
    records: list[str] = field(default_factory=list)
    fresh: int = 0

    def new_id(self, rng: random.Random, taken_from: tuple[str, ...], prefix: str) -> str:
        free = [i for i in taken_from if i not in self.events and i not in self.records]
        if free and rng.random() < 0.7:
            return rng.choice(free)
        self.fresh += 1
        return f"{prefix}{self.fresh}"


def others(rng: random.Random, count: int) -> list[Step]:
    """``count`` random calls of B and of A's ``a2``, after their secrets: A's sentences,
    ids and keys again, every kind of write (erasures and forgets included), and reads
    (whatever a store or worker keeps across namespaces, counters and caches, gets used)."""
    spaces = {"b": _Space(["g1", "bsecret"], ["gr1", "bsecret-r"]), "a2": _Space()}
    steps = secret_steps("b") + secret_steps("a2")[:2]
    spaces["a2"].events.append("g1")
    spaces["a2"].records.append("gr1")
    ops = ("add_event", "add_event", "add_events", "add_record", "add_record", "add_records",
           "supersede", "retract", "revise", "set_head", "context", "withdraw", "restore",
           "erase", "forget", "promote", "visible", "search", "explain", "current",
           "report", "stale_deliveries")  # fmt: skip
    while len(steps) < count:
        who = rng.choice(("b", "b", "a2"))
        space = spaces[who]
        op = rng.choice(ops)
        events, records = space.events, space.records
        removable = [i for i in events + records if i not in PROTECTED]
        kwargs: dict[str, Any]
        if op == "add_event" or (op != "add_events" and not events):
            op = "add_event"
            new = space.new_id(rng, A_EVENTS, "bx")
            parent = rng.choice([None, *events]) if events else None
            kwargs = {"id": new, "parent": parent, "content": rng.choice(TEXTS)}
            events.append(new)
        elif op == "add_events":
            first, second = space.new_id(rng, A_EVENTS, "bx"), ""
            events.append(first)
            second = space.new_id(rng, A_EVENTS, "bx")
            events.append(second)
            kwargs = {"events": [
                {"id": first, "parent": rng.choice(events[:-2] or [None]),
                 "content": rng.choice(TEXTS)},
                {"id": second, "parent": first, "content": rng.choice(TEXTS)},
            ]}  # fmt: skip
        elif op in ("add_record", "add_records") or not records:
            new = space.new_id(rng, A_RECORDS, "br")
            item: dict[str, Any] = {
                "id": new, "sources": rng.sample(events, min(len(events), rng.randint(1, 2))),
                "content": rng.choice(FACTS + TEXTS),
            }  # fmt: skip
            if rng.random() < 0.6:
                item["key"] = rng.choice(KEYS)
            if rng.random() < 0.3:
                item["meta"] = {"subject": rng.choice(("alice", "bob"))}
            records.append(new)
            op, kwargs = ("add_record", item) if op != "add_records" else (op, {"records": [item]})
        elif op == "supersede":
            kwargs = {"new_id": rng.choice(records), "old_id": rng.choice(records)}
        elif op == "retract":
            new = space.new_id(rng, ("ret-1", "ret-2"), "bret")
            kwargs = {"id": new, "sources": [rng.choice(events)], "targets": [rng.choice(records)]}
            records.append(new)
        elif op == "revise":
            kwargs = {"id": rng.choice(records), "content": rng.choice(FACTS)}
        elif op == "set_head":
            kwargs = {"event_id": rng.choice(events)}
        elif op == "context":
            kwargs = {"anchor": rng.choice(events), "session": rng.choice(("s1", "s2")),
                      "cite": rng.random() < 0.5}  # fmt: skip
        elif op in ("withdraw", "restore", "erase"):
            if not removable:
                continue
            kwargs = {"id": rng.choice(removable)}
        elif op == "forget":
            kind = rng.choice(("message", "branch", "subject"))
            target = rng.choice(("alice", "city")) if kind == "subject" else None
            if target is None:
                leaves = [e for e in events if e not in PROTECTED]
                if not leaves:
                    continue
                target = rng.choice(leaves)
            kwargs = {"kind": kind, "id": target, "dry_run": rng.random() < 0.4}
        elif op == "promote":
            kwargs = {"record_id": rng.choice(records), "onto": rng.choice(events)}
        elif op in ("visible", "search", "current"):  # reads: caches and counters
            kwargs = {"anchor": rng.choice(events), "cross_tree": rng.random() < 0.3}
            if op == "search":
                kwargs["query"] = rng.choice(TEXTS)
            elif op == "current":
                kwargs["key"] = rng.choice(KEYS)
        elif op == "explain":
            kwargs = {"record_id": rng.choice(records), "anchor": rng.choice(events)}
        elif op == "stale_deliveries":
            kwargs = {"session": rng.choice(("s1", "s2"))}
        else:  # report
            kwargs = {}
        steps.append(Step(who, op, kwargs))
    return steps


def interleave(a_steps: list[Step], seed: int, count: int = 90) -> list[Step]:
    """A's steps with ``count`` calls of B and ``a2`` among them: the secrets and a few
    more before A's first write, the rest at random places between, a few after the last."""
    rng = random.Random(seed)
    theirs = others(rng, count)
    head, tail, rest = theirs[:8], theirs[-3:], theirs[8:-3]
    slots: dict[int, list[Step]] = {}
    for step in rest:
        slots.setdefault(rng.randrange(1, len(a_steps)), []).append(step)
    merged = list(head)
    for i, step in enumerate(a_steps):
        merged.extend(slots.get(i, []))
        merged.append(step)
    return merged + tail


# -- resolving references --------------------------------------------------------------
def resolve(value: Any, results: dict[str, Any]) -> Any:
    if isinstance(value, Label):
        found = results.get(value.label)
        for part in value.path:
            try:
                found = found[part]
            except (KeyError, IndexError, TypeError):
                found = None
        if value.set is not None and isinstance(found, dict):
            found = {**found, **value.set}
        return found
    if isinstance(value, dict):
        return {k: resolve(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, results) for v in value]
    return value


def as_json(value: Any) -> Any:
    """The step argument as the TypeScript runner takes it (``{"$ref": label, ...}``)."""
    if isinstance(value, Label):
        return {"$ref": value.label, "path": list(value.path), "set": value.set}
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    return value


# -- faces ------------------------------------------------------------------------------
def run_python(memory: Any, steps: list[Step]) -> list[tuple[str, Any]]:
    """Each step as a ``Memory`` call; A's outcomes: the answer as JSON (the codec's), or the
    error's class and message, and the warnings the call gave."""
    results: dict[str, Any] = {}
    seen = []
    for step in steps:
        kwargs = resolve(step.kwargs, results)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                answer: Any = {"value": encode(getattr(memory, step.op)(
                    **kwargs, namespace=NAMESPACES[step.who]))}  # fmt: skip
                results[step.label] = answer["value"]
            except Exception as error:  # every error is an outcome to compare
                answer = {"error": type(error).__name__, "message": str(error)}
        if caught:
            answer["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
        if step.who == "a":
            seen.append((step.label, answer))
    return seen


# the headers that may differ between two identical answers: the clock, and the length of
# a body whose own differences (times' digits) are normalised and compared as the body
VOLATILE_HEADERS = frozenset({"date", "content-length"})


def http_request(op: Operation, namespace: str, kwargs: dict[str, Any]) -> tuple[str, str, Any]:
    """(verb, path with query, JSON body) of one call, by the operation table's wire rules:
    path parameters as segments, a GET's others as the query, a POST's as the body."""
    segments = {p.name: _segment(kwargs[p.name]) for p in op.where("path")}
    path = f"/v1/ns/{quote(namespace, safe='')}" + op.path.format(**segments)
    rest = {k: v for k, v in kwargs.items() if k not in segments}
    if op.verb == "GET":
        query = [
            (k, ("true" if v else "false") if isinstance(v, bool) else str(v))
            for k, v in rest.items()
            if v is not None
        ]
        target = path + ("?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in query))
        return "GET", target if query else path, None
    return "POST", path, {k: encode_argument(v) for k, v in rest.items()}


def _segment(value: Any) -> str:
    encoded = quote(str(value), safe="")
    return encoded.replace(".", "%2E") if set(str(value)) == {"."} else encoded


def unwrap(op: Operation, body: Any) -> Any:
    """The value an API call returns, from its HTTP body (paged list, envelope)."""
    if op.page and isinstance(body, dict):
        return body.get("items")
    if op.envelope is not None and isinstance(body, dict):
        return body.get(op.envelope)
    return body


PAGE = 4  # A's lists run to tens of items: several pages each, cursors compared too


def run_http(send: Callable[[str, str, Any, str], Any], steps: list[Step]) -> list[tuple[str, Any]]:
    """Each step as an HTTP request with the key of its namespace (``send(verb, target,
    body, who)`` returns the response); A's outcomes: status, headers and body of every
    response, a paged list read ``PAGE`` items at a time (each page and its cursor)."""
    table = operations()
    results: dict[str, Any] = {}
    seen = []
    for step in steps:
        op = table[step.op]
        kwargs = resolve(step.kwargs, results)
        paging = {"limit": PAGE} if op.page and step.who == "a" else {}
        answers, items = [], []
        while True:
            verb, target, body = http_request(op, NAMESPACES[step.who], {**kwargs, **paging})
            response = send(verb, target, body, step.who)
            try:
                data = response.json() if response.content else None
            except json.JSONDecodeError:
                data = response.text
            headers = {
                k.lower(): v
                for k, v in response.headers.items()
                if k.lower() not in VOLATILE_HEADERS
            }
            answers.append({"status": response.status_code, "headers": headers, "body": data})
            cursor = data.get("next_cursor") if paging and isinstance(data, dict) else None
            if response.status_code < 300:
                items.extend(unwrap(op, data) if op.page else [data])
            if not cursor or len(answers) > 100:
                break
            paging = {**paging, "cursor": cursor}
        if response.status_code < 300:
            results[step.label] = items if op.page else unwrap(op, data)
        if step.who == "a":
            seen.append((step.label, answers[0] if len(answers) == 1 else answers))
    return seen


# -- normalising and comparing -------------------------------------------------------------
def normalise(outcomes: list[tuple[str, Any]], secrets: dict[str, str] | None = None) -> Any:
    """A's outcomes with what legitimately differs between the worlds replaced:

    - ``time`` fields (audit entries, deliveries, receipts, byte checks): the wall clock of
      the call, which runs at another moment in the other world;
    - a receipt's ``key``, ``fingerprint_digest`` and ``content_hash`` (and every copy of
      them: the audit entry's reason, a check's ``content_hash``, an error naming the
      receipt): each forget draws a random 32-byte key, so these are random per receipt;
      each becomes ``<hash n>`` by order of first appearance, which keeps "this check is of
      that receipt" comparable. ``fingerprints`` (random with the key) become their count;
    - ``secrets``: strings the test knows are generated per world (the API key ids in the
      audit's ``actor``), each replaced by its name.

    A receipt the audit keeps as JSON text (a redacted copy, so that a forget run again can
    answer it) is read as JSON, so that its ``time`` and hash get the same treatment.

    Nothing else: seq numbers are drawn per namespace (``Store.next_seq(namespace)``), ids
    are the caller's (``promote``'s default is ``RECORD~ONTO``), the attacker's key and
    fingerprints are the same constants in both worlds.
    """
    tokens: dict[str, str] = {}
    for value in _walk(_parsed(outcomes)):
        if isinstance(value, dict) and "fingerprints" in value:
            for name in ("key", "fingerprint_digest", "content_hash"):
                if isinstance(value.get(name), str) and value[name]:
                    tokens.setdefault(value[name], f"<hash {len(tokens) + 1}>")
    for secret, name in (secrets or {}).items():
        tokens[secret] = name

    def clean(value: Any, key: str = "") -> Any:
        if key == "time" and isinstance(value, float | int) and not isinstance(value, bool):
            return "<time>"
        if key == "fingerprints" and isinstance(value, list):
            return f"<{len(value)} fingerprints>"
        if isinstance(value, dict):
            return {k: clean(v, k) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        kept = _receipt_text(value)
        if kept is not None:
            return {"receipt as JSON text": clean(kept)}
        if isinstance(value, str):
            for secret, name in tokens.items():
                if secret in value:
                    value = value.replace(secret, name)
        return value

    return [(label, clean(answer)) for label, answer in outcomes]


def _receipt_text(value: Any) -> dict[str, Any] | None:
    """A receipt written as JSON text (the audit entry that keeps one), else None."""
    if not isinstance(value, str) or not value.startswith("{"):
        return None
    try:
        found = json.loads(value)
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, dict) and "fingerprint_digest" in found else None


def _parsed(value: Any) -> Any:
    kept = _receipt_text(value)
    if kept is not None:
        return kept
    if isinstance(value, dict):
        return {k: _parsed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_parsed(v) for v in value]
    return value


def _walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk(item)


def differences(one: Any, two: Any, where: str = "") -> Iterator[str]:
    """Each place where the two values differ, as ``path: world 1 != world 2``."""
    if isinstance(one, dict) and isinstance(two, dict):
        for key in sorted(set(one) | set(two), key=str):
            if key not in one or key not in two:
                first, second = one.get(key, "<absent>"), two.get(key, "<absent>")
                yield f"{where}.{key}: {_short(first)} != {_short(second)}"
            else:
                yield from differences(one[key], two[key], f"{where}.{key}")
    elif isinstance(one, list | tuple) and isinstance(two, list | tuple) and len(one) == len(two):
        for i, (x, y) in enumerate(zip(one, two, strict=True)):
            yield from differences(x, y, f"{where}[{i}]")
    elif one != two:
        yield f"{where}: {_short(one)} != {_short(two)}"


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def compare(face: str, world1: Any, world2: Any) -> list[str]:
    """One line per differing A step: ``face op label: where: world 1 != world 2``."""
    assert [label for label, _ in world1] == [label for label, _ in world2], face
    found = []
    for (label, one), (_, two) in zip(world1, world2, strict=True):
        parts = list(differences(one, two))
        if parts:
            found.append(f"[{face}] {label}: " + "; ".join(parts[:4]))
    return found
