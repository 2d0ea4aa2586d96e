"""PostgreSQL's own wording of the engine's tables: the subclasses ``PostgresStore`` passes
to ``SQLStore`` where its dialect reads better another way (a path eight levels per round
of the recursion, a candidate's sources as ``jsonb``, pages and newest revisions over
arrays), and the array literals its statements and batched writes take."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..errors import InvalidInput
from . import codec
from .sqlanswers import BulkReader
from .sqlevents import EventsTable
from .sqlkeyed import RankIndex

NUL_REFUSED = "PostgreSQL text cannot hold NUL (0x00) characters"


def text_array(values: list[Any]) -> Any:
    """A list of ids as one array literal: psycopg adapts a list element by element in
    Python (~1 us each), a joined string is parsed by the server (a path of 100,000 ids:
    35 ms instead of 160)."""
    literal = array_literal(values)
    return values if literal is None else literal


def array_literal(values: list[Any]) -> str | None:
    """One column of a batch as an array literal for the server to parse, or None when a
    value is neither text nor a number (the driver adapts those). Text holding a NUL, which
    PostgreSQL cannot store, is ``InvalidInput``.

    psycopg dumps a list element by element in Python (~0.7 us each, a sixth of the client's
    time building 10,000 records); a column of text is a few passes of C over one string."""
    kinds = set(map(type, values))
    if kinds == {str}:
        body = "\x00".join(values)  # NUL: no text PostgreSQL stores can hold one
        if body.count("\x00") != len(values) - 1:
            raise InvalidInput(NUL_REFUSED)
        body = body.replace("\\", "\\\\").replace('"', '\\"').replace("\x00", '","')
        return '{"' + body + '"}'
    if kinds <= {int, type(None)}:
        return "{" + ",".join(["NULL" if v is None else str(v) for v in values]) + "}"
    if kinds <= {float, int, type(None)}:
        return "{" + ",".join(["NULL" if v is None else repr(v) for v in values]) + "}"
    if kinds == {str, type(None)}:
        parts = []
        for value in values:
            if value is None:
                parts.append("NULL")
            elif "\x00" in value:
                raise InvalidInput(NUL_REFUSED)
            else:
                parts.append('"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')
        return "{" + ",".join(parts) + "}"
    return None


PATH_STEPS = 8  # ancestors fetched per round of the recursive path query


@lru_cache(maxsize=1)
def _path_query(steps: int) -> str:
    """The ancestors of an anchor, ``steps`` levels per round of the recursion.

    Every level is one index lookup by (namespace, id), as in a one-level recursion, but each
    round of a recursive query has its own overhead (a work table rescanned, a new row
    stored): a path of 100,000 events takes 12,500 rounds instead of 100,000. A round ends
    early, with NULLs, at a root or a gap (a detached anchor's missing ancestor)."""
    columns = ", ".join(f"e{level}.id" for level in range(1, steps + 1))
    joins = " ".join(
        f"{'JOIN' if level == 1 else 'LEFT JOIN'} events e{level} ON e{level}.namespace = ? "
        f"AND e{level}.id = {'up.parent' if level == 1 else f'e{level - 1}.parent'}"
        for level in range(1, steps + 1)
    )
    names = ", ".join(f"i{level}" for level in range(1, steps + 1))
    nulls = ", ".join("NULL::text" for _ in range(1, steps))
    return (
        f"WITH RECURSIVE up(n, parent, {names}) AS ("
        f"SELECT 0, parent, id, {nulls} FROM events WHERE namespace = ? AND id = ? "
        f"UNION ALL SELECT up.n + 1, e{steps}.parent, {columns} FROM up {joins} "
        f"WHERE up.parent IS NOT NULL) SELECT {names} FROM up ORDER BY n"
    )


class PostgresEventsTable(EventsTable):
    """The conversation trees, a path read ``PATH_STEPS`` levels per round of its
    recursion (``_path_query``)."""

    __slots__ = ()

    def path_ids(self, namespace: str, anchor: str) -> list[str]:
        rows = self.session._all(
            _path_query(PATH_STEPS), (namespace, anchor, *[namespace] * PATH_STEPS)
        )
        found = [event_id for row in rows for event_id in row if event_id is not None]
        found.reverse()  # rows run from the anchor up, each row deepest first
        return found


class PostgresRankIndex(RankIndex):
    """The rank index and keyed reads, a candidate's sources read as ``jsonb``."""

    __slots__ = ()

    SOURCES_WITH_STATUS = (
        ", (SELECT COUNT(*) FROM jsonb_array_elements_text(r.sources::jsonb) j(value) "
        "JOIN statuses g ON g.namespace = ? AND g.id = j.value) "
    )


class PostgresBulkReader(BulkReader):
    """The bulk reader, its pages and newest revisions read with one statement for every
    key or record (over arrays), not one each."""

    __slots__ = ()

    def page_statements(
        self, namespace: str, keys: list[str], tree: str, depth: int, size: int
    ) -> list[tuple[str, Sequence[Any]]]:
        # one statement for every key (a pipeline still costs each statement its own
        # parse and sync): the same page, on the same index, per key
        columns = ", ".join("r." + c for c in codec.REVISION_COLUMNS.split(", "))
        return [
            (
                "SELECT asked.key, page.* FROM unnest(?::text[]) WITH ORDINALITY "
                f"AS asked(key, n) CROSS JOIN LATERAL (SELECT {columns}, k.depth "
                "FROM key_frontiers k JOIN revisions r ON r.namespace = k.namespace "
                "AND r.record_id = k.record_id AND r.revision = k.revision "
                "WHERE k.namespace = ? AND k.key_name = asked.key AND k.tree = ? "
                "AND (k.depth, k.seq) < (?, ?) "
                # the rule's ranking (rules.rank_key): deepest frontier first, then latest seq
                "ORDER BY k.depth DESC, k.seq DESC LIMIT ?) page "
                "ORDER BY asked.n",
                (text_array(keys), namespace, tree, depth, 2**62, size),
            )
        ]

    def newest_revisions(
        self, namespace: str, record_ids: Sequence[str], count: int
    ) -> tuple[str, Sequence[Any]]:
        # one text for any number of records: a LIMIT on the primary key for each
        return (
            "SELECT r.* FROM unnest(?::text[]) AS asked(id) CROSS JOIN LATERAL "
            f"(SELECT {codec.REVISION_COLUMNS} FROM revisions WHERE namespace = ? "
            "AND record_id = asked.id ORDER BY revision DESC LIMIT ?) r",
            (text_array(list(record_ids)), namespace, count),
        )
