"""The conversation trees in SQL: events, their parents and paths, the trees' heads."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping

from .._core.provenance import RevisionNode
from .._core.topology import EventNode
from . import codec
from .base import MessageRow, PathMessage
from .sqlsession import Alongside, SQLSession


class EventsTable:
    """The ``events``, ``heads`` and ``namespaces`` tables over the store's session (a call
    caches what it read, in the session's caches); a backend's subclass may read a path its
    own way (``path_ids``)."""

    __slots__ = ("session",)

    def __init__(self, session: SQLSession) -> None:
        self.session = session

    def get_event(self, namespace: str, event_id: str) -> EventNode | None:
        session = self.session
        key = (namespace, event_id)
        if key in session._events:
            return session._events[key]
        row = session._one(
            f"SELECT {codec.EVENT_COLUMNS} FROM events WHERE namespace = ? AND id = ?",
            (namespace, event_id),
        )
        node = None if row is None else codec.event_node(row)
        if session._depth > 0:
            session._events[key] = node
        return node

    def event_roles(self, namespace: str, ids: Collection[str]) -> dict[str, str]:
        """Who said each of these events: one statement per chunk of ids, no text decoded;
        an event this call read already is not asked again."""
        session = self.session
        found: dict[str, str] = {}
        wanted: list[str] = []
        for item in dict.fromkeys(ids):
            key = (namespace, item)
            if key in session._events:
                if (node := session._events[key]) is not None:
                    found[item] = node.role
            else:
                wanted.append(item)
        for chunk in session._chunks(wanted):
            rows = session._all(
                f"SELECT id, role FROM events WHERE namespace = ? "
                f"AND id IN ({session._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.update((str(item), str(role)) for item, role in rows)
        return found

    def learn_events(
        self, namespace: str, asked: Collection[str], found: Mapping[str, EventNode]
    ) -> None:
        """Keep for the call the events a bulk answer brought (``ReadAhead``): the asked ones
        as found (None: absent), the steps above them unless cached already."""
        session = self.session
        if session._depth == 0:
            return
        for item in asked:
            session._events[(namespace, item)] = found.get(item)
        for item, node in found.items():  # a node cached already may be newer
            session._events.setdefault((namespace, item), node)

    def prefetch(
        self,
        namespace: str,
        ids: Collection[str],
        *,
        children: bool = True,
        ancestry: Collection[str] | None = None,
        alongside: Alongside | None = None,
    ) -> None:
        """Load in bulk what one call will ask about these ids (events, records, children),
        with ``alongside`` (another table's reads) in the same round trip, then the first
        steps up from the events of ``ancestry``."""
        session = self.session
        if session._depth == 0:
            return
        wanted = [i for i in dict.fromkeys(ids) if (namespace, i) not in session._events]
        extra = [] if alongside is None else alongside.statements
        chunks = list(session._chunks(wanted))
        if alongside is not None and not chunks:
            alongside.take(session._all_together(extra))
        for number, chunk in enumerate(chunks):
            marks = session._marks(len(chunk))
            statements = [
                (
                    f"SELECT {codec.EVENT_COLUMNS} FROM events WHERE namespace = ? "
                    f"AND id IN ({marks})",
                    (namespace, *chunk),
                ),
                (
                    f"SELECT {codec.REVISION_COLUMNS} FROM revisions WHERE namespace = ? "
                    f"AND record_id IN ({marks}) ORDER BY record_id, revision",
                    (namespace, *chunk),
                ),
            ]
            if children:
                statements.append(
                    (  # no ORDER BY: a planner may answer it by scanning seq order
                        "SELECT id, parent, seq FROM events WHERE namespace = ? "
                        f"AND parent IN ({marks})",
                        (namespace, *chunk),
                    )
                )
            together = session._all_together(statements + (extra if number == 0 else []))
            if alongside is not None and number == 0:
                alongside.take(together[len(statements) :])
            event_rows, revision_rows, *child_rows = together[: len(statements)]
            found = {row[0]: codec.event_node(row) for row in event_rows}
            records: dict[str, list[RevisionNode]] = {i: [] for i in chunk}
            for row in revision_rows:
                records[row[0]].append(codec.revision_node(row))
            for item in chunk:
                session._events[(namespace, item)] = found.get(item)
                session._revisions[(namespace, item)] = records[item]
            if child_rows:
                known: dict[str, list[str]] = {i: [] for i in chunk}
                for child, parent, _ in sorted(child_rows[0], key=lambda row: int(row[2])):
                    known[parent].append(child)
                for item in chunk:
                    session._children[(namespace, item)] = known[item]
        self._load_steps(
            namespace, self._steps_up(namespace, ids if ancestry is None else ancestry)
        )

    def _steps_up(self, namespace: str, ids: Iterable[str]) -> list[str]:
        """The jump targets and parents of cached events that are not cached yet: the first
        step of every ancestor test from them (merging two sources' frontiers, placing a
        child), fetched with them instead of one round trip each."""
        session = self.session
        steps: dict[str, None] = {}
        for item in ids:
            node = session._events.get((namespace, item))
            if node is not None:
                for step in (node.jump, node.parent):
                    if step is not None and (namespace, step) not in session._events:
                        steps[step] = None
        return list(steps)

    def _load_steps(self, namespace: str, steps: Collection[str]) -> None:
        """Cache these events and those one step (jump or parent) above them, in one query:
        an ancestor test from a batch's events mostly takes two steps (on the chat-like
        histories of bench/storage.py, 10,000 records: 127 single look-ups with one step
        fetched, 23 with two)."""
        session = self.session
        columns = ", ".join("e." + c for c in codec.EVENT_COLUMNS.split(", "))
        for chunk in session._chunks(steps):
            marks = session._marks(len(chunk))
            rows = session._all(
                f"SELECT {codec.EVENT_COLUMNS} FROM events WHERE namespace = ? "
                f"AND id IN ({marks}) UNION ALL SELECT {columns} FROM events s "
                "JOIN events e ON e.namespace = s.namespace AND e.id IN (s.jump, s.parent) "
                f"WHERE s.namespace = ? AND s.id IN ({marks})",
                (namespace, *chunk, namespace, *chunk),
            )
            found: dict[str, EventNode] = {}
            for row in rows:  # steps up from neighbouring events repeat: decode each once
                if row[0] not in found:
                    found[row[0]] = codec.event_node(row)
            for item in chunk:
                session._events[(namespace, item)] = found.pop(item, None)
            for item, node in found.items():  # a node cached already may be newer
                session._events.setdefault((namespace, item), node)

    _NEW_EVENT = (
        f"INSERT INTO events (namespace, {codec.EVENT_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    _PUT_EVENT = (
        _NEW_EVENT + " ON CONFLICT (namespace, id) DO UPDATE SET tree = excluded.tree, "
        "attached = excluded.attached, depth = excluded.depth, jump = excluded.jump"
    )

    def put_event(self, namespace: str, node: EventNode) -> None:
        # Held until the call's next statement: a batch of events is one multi-row insert.
        # An event the call knows is absent (looked up, or held new) needs no upsert.
        session = self.session
        key, row = (namespace, node.id), (namespace, *codec.event_row(node))
        new = key in session._held.get(self._NEW_EVENT, ()) or (
            key in session._events and session._events[key] is None
        )
        session._hold(self._NEW_EVENT if new else self._PUT_EVENT, key, row)
        key = (namespace, node.id)
        if session._depth > 0:
            if session._events.get(key, node) is None and node.parent is not None:  # known new
                siblings = session._children.get((namespace, node.parent))
                if siblings is not None:
                    siblings.append(node.id)
            session._events[key] = node

    def children(self, namespace: str, parent_id: str) -> list[str]:
        session = self.session
        key = (namespace, parent_id)
        if key in session._children:
            return list(session._children[key])
        rows = session._all(
            "SELECT id FROM events WHERE namespace = ? AND parent = ? ORDER BY seq",
            (namespace, parent_id),
        )
        found = [row[0] for row in rows]
        if session._depth > 0:
            session._children[key] = found
        return list(found)

    def path_ids(self, namespace: str, anchor: str) -> list[str]:
        session = self.session
        rows = session._all(
            "WITH RECURSIVE up(id, parent, n) AS ("
            " SELECT id, parent, 0 FROM events WHERE namespace = ? AND id = ?"
            " UNION ALL SELECT e.id, e.parent, up.n + 1 FROM events e JOIN up"
            " ON e.namespace = ? AND e.id = up.parent)"
            " SELECT id FROM up ORDER BY n DESC",
            (namespace, anchor, namespace),
        )
        return [row[0] for row in rows]

    def path_events(self, namespace: str, anchor: str) -> list[EventNode]:
        session = self.session
        columns = ", ".join("e." + c for c in codec.EVENT_COLUMNS.split(", "))
        rows = session._all(
            "WITH RECURSIVE up(id, parent, n) AS ("
            " SELECT id, parent, 0 FROM events WHERE namespace = ? AND id = ?"
            " UNION ALL SELECT e.id, e.parent, up.n + 1 FROM events e JOIN up"
            " ON e.namespace = ? AND e.id = up.parent)"
            f" SELECT {columns} FROM up JOIN events e ON e.namespace = ? AND e.id = up.id"
            " ORDER BY up.n DESC",
            (namespace, anchor, namespace, namespace),
        )
        nodes = [codec.event_node(row) for row in rows]
        if session._depth > 0:
            for node in nodes:
                session._events[(namespace, node.id)] = node
        return nodes

    def transcript(self, namespace: str, event_id: str, limit: int) -> list[PathMessage]:
        # Only the columns a prompt shows, carried up the recursion (no second join), and the
        # statuses joined in: one statement per page, about half the time of whole events.
        session = self.session
        rows = session._all(
            "WITH RECURSIVE up(id, parent, role, content, tokens, n) AS ("
            " SELECT id, parent, role, content, tokens, 0 FROM events"
            " WHERE namespace = ? AND id = ?"
            " UNION ALL SELECT e.id, e.parent, e.role, e.content, e.tokens, up.n + 1"
            " FROM events e JOIN up ON e.namespace = ? AND e.id = up.parent"
            " WHERE up.n + 1 < ?)"
            " SELECT up.id, up.parent, up.role, up.content, up.tokens, s.status FROM up"
            " LEFT JOIN statuses s ON s.namespace = ? AND s.id = up.id ORDER BY up.n",
            (namespace, event_id, namespace, limit, namespace),
        )
        return [
            MessageRow(item, parent, role, content, tokens)
            if status is None
            else MessageRow(item, parent, role, "")
            for item, parent, role, content, tokens, status in rows
        ]

    def iter_events(self, namespace: str, tree: str | None = None) -> Iterator[EventNode]:
        session = self.session
        if tree is None:
            rows = session._all(
                f"SELECT {codec.EVENT_COLUMNS} FROM events WHERE namespace = ? ORDER BY seq",
                (namespace,),
            )
        else:  # down from where the tree starts: a child is in its parent's tree
            columns = ", ".join("e." + c for c in codec.EVENT_COLUMNS.split(", "))
            rows = session._all(
                "WITH RECURSIVE below(id) AS ("
                "SELECT id FROM events WHERE namespace = ? AND tree = ? "
                "AND (parent IS NULL OR attached = 0) "
                "UNION SELECT c.id FROM events c JOIN below b "
                "ON c.namespace = ? AND c.parent = b.id) "
                f"SELECT {columns} FROM below b JOIN events e ON e.namespace = ? "
                "AND e.id = b.id WHERE e.tree = ? ORDER BY e.seq",
                (namespace, tree, namespace, namespace, tree),
            )
        return (codec.event_node(row) for row in rows)

    def set_head(self, namespace: str, tree: str, event_id: str) -> None:
        session = self.session
        session._run(
            "INSERT INTO heads (namespace, tree, event_id) VALUES (?, ?, ?) "
            "ON CONFLICT (namespace, tree) DO UPDATE SET event_id = excluded.event_id",
            (namespace, tree, event_id),
        )

    def heads(self, namespace: str) -> dict[str, str]:
        session = self.session
        if session._depth == 0:
            rows = session._all(
                "SELECT tree, event_id FROM heads WHERE namespace = ?", (namespace,)
            )
            return {tree: event_id for tree, event_id in rows}
        columns = ", ".join("e." + c for c in codec.EVENT_COLUMNS.split(", "))
        rows = session._all(  # within a call, the head events too: a cross-tree read asks next
            f"SELECT h.tree, h.event_id, {columns} FROM heads h LEFT JOIN events e "
            "ON e.namespace = h.namespace AND e.id = h.event_id WHERE h.namespace = ?",
            (namespace,),
        )
        for row in rows:
            node = None if row[2] is None else codec.event_node(tuple(row[2:]))
            session._events.setdefault((namespace, row[1]), node)
        return {row[0]: row[1] for row in rows}

    def namespaces(self) -> list[str]:
        session = self.session
        rows = session._all("SELECT namespace FROM namespaces WHERE seq > 0 ORDER BY namespace")
        return [row[0] for row in rows]
