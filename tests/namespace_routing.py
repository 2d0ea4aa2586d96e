"""The reader of our own SQL that test_namespace_routing.py checks statements with: is each
table a statement reads or writes pinned to one namespace, and where in its parameters does it
name the namespace (issue 26, item 5).

It reads our own SQL, not SQL at large: a small tokenizer and a scope-by-scope reading of
table references and ``namespace`` equalities. It is conservative: what it cannot read as
routed (an ``OR`` beside the equality, a bare ``namespace`` with two tables in scope, ``= ANY``)
counts as not routed. The exemptions below say why each one needs no namespace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

# -- what needs no namespace, and why ------------------------------------------------------
# statement kinds outside the data path (their first word)
EXEMPT_KINDS: dict[str, str] = {
    "BEGIN": "transaction control: no table",
    "COMMIT": "transaction control: no table",
    "ROLLBACK": "transaction control: no table",
    "SAVEPOINT": "transaction control: no table",
    "RELEASE": "transaction control: no table",
    "SET": "session settings (lock_timeout, planner): no table",
    "CREATE": "DDL of a migration: run once on the coordinator, which propagates it",
    "DROP": "DDL of a migration: run once on the coordinator, which propagates it",
    "ALTER": "DDL of a migration: run once on the coordinator, which propagates it",
    "VACUUM": "maintenance after an erase: reclaims dead tuples of every shard (a fan-out)",
    "ANALYZE": "maintenance: planner statistics of every shard (a fan-out)",
    "SHOW": "a server setting (the version, before the erase cleanup's statistics): no table",
}
# tables that are not distributed: a statement touching only these needs no namespace
UNDISTRIBUTED: dict[str, str] = {
    "branchmem_schema": "reference table: the schema version, one row per migration",
    "api_keys": "reference table: a key is namespace-free (it names the namespaces it may use)",
    "erase_cleanup": "reference table: the erasures whose VACUUM is still due; the cleanup "
    "reads it whole because VACUUM cleans every shard's files at once",
}
CATALOG = re.compile(r"^(pg_catalog\.|information_schema\.|pg_)", re.I)
KEYWORDS = frozenset(
    re.findall(
        r"[A-Z]+",
        """SELECT FROM WHERE JOIN LEFT RIGHT INNER OUTER FULL CROSS LATERAL ON USING AND OR NOT
    ORDER GROUP BY HAVING LIMIT OFFSET UNION ALL INTERSECT EXCEPT WITH RECURSIVE AS SET
    VALUES RETURNING INSERT INTO UPDATE DELETE ON CONFLICT DO NOTHING WINDOW FOR
    ORDINALITY NATURAL COPY""",
    )
)
CLAUSE_END = frozenset(
    re.findall(
        r"[A-Z]+",
        """JOIN LEFT RIGHT INNER FULL CROSS NATURAL ORDER GROUP HAVING LIMIT OFFSET UNION
    INTERSECT EXCEPT RETURNING WINDOW FOR WHERE ON SET""",
    )
)
TOKEN = re.compile(
    r"""\s+|--[^\n]*|(?P<str>'(?:[^']|'')*')|(?P<qid>"(?:[^"]|"")*")
    |(?P<param>%[sbt]|\$\d+|\?)|(?P<num>\d+(?:\.\d+)?)|(?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    |(?P<op>::|<=|>=|<>|!=|\|\||[(),.;=<>+\-*/\[\]|:])""",
    re.X,
)


@dataclass
class Group:
    """A parenthesised part of a statement; ``items`` are tokens (str) and groups."""

    items: list[str | Group] = field(default_factory=list)

    def starts(self, *words: str) -> bool:
        return bool(self.items) and self.items[0] in words


def tokens(text: str) -> list[str]:
    """Words upper-cased, strings as ``'…'``, the n-th placeholder as ``?n``; text it
    cannot read fails (so nothing is passed unread)."""
    out: list[str] = []
    position = 0
    params = 0
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"cannot read {text[position : position + 20]!r} in {text!r}")
        position = match.end()
        kind = match.lastgroup
        if kind is None:
            continue  # whitespace, comment
        if kind == "param":
            out.append(f"?{params}")
            params += 1
        elif kind == "str":
            out.append("'…'")
        elif kind == "qid":
            out.append(match.group().strip('"').lower())
        elif kind == "word":
            word = match.group()
            out.append(word.upper() if word.upper() in KEYWORDS else word.lower())
        else:
            out.append(match.group())
    return out


# the one data read that spans namespaces on purpose: ``Memory.namespaces()`` lists them (in
# Citus a fan-out to every shard of ``namespaces``, merged by the coordinator; see
# docs/scaling.md). Matched on the whole text: any other read of the table must be routed.
FAN_OUT: dict[str, str] = {
    " ".join(tokens(text)): why
    for text, why in {
        "SELECT namespace FROM namespaces WHERE seq > 0 ORDER BY namespace":
            "Memory.namespaces(): the listing of every namespace, a fan-out read",
        **{
            f'SELECT NOT EXISTS (SELECT 1 FROM "{table}")':
                "erase cleanup: is the table empty in every shard (then its planner "
                "statistics are cleared); maintenance over all namespaces, like the VACUUM"
            for table in (  # the store's TEXT_TABLES (importing it needs psycopg)
                "events", "revisions", "vectors", "repairs", "retractions", "audit",
                "key_frontiers", "tree_keys",
            )
        },
    }.items()
}  # fmt: skip
# fan-out reads of a shape rather than one text
FAN_OUT_PATTERNS: dict[re.Pattern[str], str] = {
    re.compile(r"SELECT \* FROM [a-z_]+"): "a forget receipt's byte check "
    "(store/residue.py): every row of every table, all namespaces and shards, on a connection "
    "of its own; proving no byte is left anywhere is a whole-store read by design",
}


def nest(flat: list[str]) -> Group:
    stack = [Group()]
    for token in flat:
        if token == "(":
            group = Group()
            stack[-1].items.append(group)
            stack.append(group)
        elif token == ")":
            if len(stack) == 1:
                raise ValueError("unbalanced ')'")
            stack.pop()
        else:
            stack[-1].items.append(token)
    if len(stack) != 1:
        raise ValueError("unbalanced '('")
    return stack[0]


@dataclass
class Scope:
    """One ``SELECT``/``UPDATE``/``DELETE`` level: its base tables (alias -> table), the
    aliases it pins by a constant, the alias pairs it equates, and the subqueries below it."""

    tables: dict[str, str] = field(default_factory=dict)
    pinned: set[str] = field(default_factory=set)
    equal: list[tuple[str, str]] = field(default_factory=list)
    children: list[Group] = field(default_factory=list)
    params: list[int] = field(default_factory=list)  # the placeholders that pin


def _is_name(item: str | Group) -> bool:
    return isinstance(item, str) and re.fullmatch(r"[a-z_][a-z0-9_$]*", item) is not None


def _read_scope(items: list[str | Group], ctes: set[str]) -> Scope:
    """Table references and namespace predicates at this level (not inside subqueries)."""
    scope = Scope()
    index = 0
    while index < len(items):
        item = items[index]
        if isinstance(item, Group):
            if item.starts("SELECT", "WITH"):
                scope.children.append(item)
            else:  # a plain parenthesis: its subqueries are scopes of their own
                scope.children.extend(_subqueries(item))
            index += 1
            continue
        if item in ("FROM", "JOIN", "UPDATE", "USING"):
            index = _table_ref(items, index + 1, scope, ctes)
            while item == "FROM" and index < len(items) and items[index] == ",":
                index = _table_ref(items, index + 1, scope, ctes)
            continue
        index += 1
    _predicates(items, scope)
    return scope


def _subqueries(group: Group) -> list[Group]:
    found: list[Group] = []
    for item in group.items:
        if isinstance(item, Group):
            found.extend([item] if item.starts("SELECT", "WITH") else _subqueries(item))
    return found


def _table_ref(items: list[str | Group], index: int, scope: Scope, ctes: set[str]) -> int:
    """Read one ``FROM``/``JOIN`` target starting at ``index``; the index after it."""
    if index < len(items) and items[index] == "LATERAL":
        index += 1
    if index >= len(items):
        return index
    target = items[index]
    if isinstance(target, Group):  # a derived table: a scope of its own
        if target.starts("SELECT", "WITH"):
            scope.children.append(target)
        index += 1
        return _alias(items, index)[1]
    if not _is_name(target):
        return index
    name = str(target)
    index += 1
    while index + 1 < len(items) and items[index] == "." and _is_name(items[index + 1]):
        name += "." + str(items[index + 1])
        index += 2
    if index < len(items) and isinstance(items[index], Group):  # a function: unnest(...)
        scope.children.extend(_subqueries(items[index]))  # type: ignore[arg-type]
        index += 1
        if index < len(items) and items[index] == "WITH":  # WITH ORDINALITY
            index += 2
        return _alias(items, index)[1]
    alias, index = _alias(items, index)
    if name not in ctes:
        scope.tables[alias or name] = name
    return index


def _alias(items: list[str | Group], index: int) -> tuple[str | None, int]:
    if index < len(items) and items[index] == "AS":
        index += 1
    if index < len(items) and _is_name(items[index]):
        alias = str(items[index])
        index += 1
        if index < len(items) and isinstance(items[index], Group):  # column names
            index += 1
        return alias, index
    return None, index


def _column(items: list[str | Group], index: int) -> tuple[str | None, str, int] | None:
    """``[qualifier .] name`` at ``index``: (qualifier, name, index after) or None."""
    if not _is_name(items[index]):
        return None
    if index + 2 < len(items) and items[index + 1] == "." and _is_name(items[index + 2]):
        return str(items[index]), str(items[index + 2]), index + 3
    if index > 0 and items[index - 1] == ".":
        return None
    return None, str(items[index]), index + 1


def _predicates(items: list[str | Group], scope: Scope) -> None:
    """``q.namespace = <param | literal>`` pins ``q``; ``a.namespace = b.namespace`` equates
    them; only in a WHERE/ON clause with no top-level OR (else it may not constrain)."""
    for index, item in enumerate(items):
        if item != "=" or index == 0 or index + 1 >= len(items):
            continue
        clause = _clause(items, index)
        if clause is None or "OR" in clause:
            continue
        left = _left_column(items, index)
        if left is None or left[1] != "namespace":
            continue
        value = items[index + 1]
        after = index + 2
        if isinstance(value, str) and (value.startswith("?") or value == "'…'"):
            if after < len(items) and items[after] in ("::",):
                after += 2
            if after >= len(items) or items[after] not in ("||", "+", "-", "*", "/"):
                scope.pinned.add(_owner(left[0], scope))
                if value.startswith("?"):
                    scope.params.append(int(value[1:]))
            continue
        right = _column(items, index + 1)
        if right is not None and right[1] == "namespace":
            scope.equal.append((_owner(left[0], scope), _owner(right[0], scope)))


def _left_column(items: list[str | Group], index: int) -> tuple[str | None, str] | None:
    if index >= 3 and items[index - 2] == "." and _is_name(items[index - 3]):
        if _is_name(items[index - 1]):
            return str(items[index - 3]), str(items[index - 1])
        return None
    if _is_name(items[index - 1]):
        return None, str(items[index - 1])
    return None


def _owner(qualifier: str | None, scope: Scope) -> str:
    """The alias a column belongs to; a bare column only when one table is in scope."""
    if qualifier is not None:
        return qualifier
    if len(scope.tables) == 1:
        return next(iter(scope.tables))
    return "?ambiguous"


def _clause(items: list[str | Group], index: int) -> list[str | Group] | None:
    """The WHERE/ON clause holding ``index`` (its items), or None when it is in another."""
    start = None
    for back in range(index, -1, -1):
        if items[back] in ("WHERE", "ON"):
            start = back + 1
            break
        if isinstance(items[back], str) and items[back] in CLAUSE_END | {"SELECT", "FROM"}:
            return None
    if start is None:
        return None
    end = start
    while end < len(items) and not (isinstance(items[end], str) and items[end] in CLAUSE_END):
        end += 1
    return items[start:end]


def _split_set_operations(items: list[str | Group]) -> list[list[str | Group]]:
    parts: list[list[str | Group]] = [[]]
    for item in items:
        if item in ("UNION", "INTERSECT", "EXCEPT"):
            parts.append([])
        elif item != "ALL" or parts[-1]:
            parts[-1].append(item)
    return parts


def _ctes(items: list[str | Group]) -> tuple[set[str], list[Group], list[str | Group]]:
    """A leading ``WITH``: the CTE names, their bodies, and the main statement after them."""
    if not items or items[0] != "WITH":
        return set(), [], items
    index = 2 if len(items) > 1 and items[1] == "RECURSIVE" else 1
    names: set[str] = set()
    bodies: list[Group] = []
    while index < len(items) and _is_name(items[index]):
        names.add(str(items[index]))
        index += 1
        if isinstance(items[index], Group) and items[index + 1] == "AS":
            index += 1
        if items[index] != "AS" or not isinstance(items[index + 1], Group):
            raise ValueError("cannot read the WITH clause")
        bodies.append(items[index + 1])  # type: ignore[arg-type]
        index += 2
        if index < len(items) and items[index] == ",":
            index += 1
    return names, bodies, items[index:]


@dataclass
class Walk:
    """What a walk through a statement's scopes found."""

    unpinned: list[str] = field(default_factory=list)  # "table alias" left unpinned
    tables: set[str] = field(default_factory=set)  # every base table
    params: list[int] = field(default_factory=list)  # placeholders equated to a namespace


def walk(
    items: list[str | Group], found: Walk, outer: frozenset[str] = frozenset(),
    ctes: frozenset[str] = frozenset(),
) -> Walk:  # fmt: skip
    """Check every scope of ``items``: each base table pinned to one namespace, by a value or
    by equality with a pinned alias of its own scope or an enclosing one."""
    names, bodies, main = _ctes(items)
    ctes = ctes | names
    for body in bodies:
        walk(body.items, found, outer, ctes)
    for part in _split_set_operations(main):
        scope = _read_scope(part, ctes)
        found.tables |= set(scope.tables.values())
        found.params += scope.params
        pinned = set(scope.pinned) | (outer - set(scope.tables))
        grown = True
        while grown:
            grown = False
            for left, right in scope.equal:
                for one, other in ((left, right), (right, left)):
                    if one in pinned and other not in pinned:
                        pinned.add(other)
                        grown = True
        for alias, table in scope.tables.items():
            if alias not in pinned:
                found.unpinned.append(f"{table} {alias}" if alias != table else table)
        inner = frozenset(a for a in pinned if a in scope.tables) | (outer - set(scope.tables))
        for child in scope.children:
            walk(child.items, found, inner, ctes)
    return found


@dataclass(frozen=True)
class Verdict:
    """Why a statement is not routed (``problem``), or why it needs no namespace
    (``exempt``); and where its namespace values are, so each execution can be checked to
    name one namespace: placeholders, array placeholders (one value per row), the column of
    a ``COPY`` row."""

    problem: str | None = None
    exempt: str | None = None
    params: tuple[int, ...] = ()
    arrays: tuple[int, ...] = ()
    copy_column: int | None = None


def _is_undistributed(table: str) -> bool:
    return table in UNDISTRIBUTED or CATALOG.match(table) is not None


@lru_cache(maxsize=4096)
def verdict(text: str) -> Verdict:
    """Read ``text``: routed by namespace, exempt (and why), or not routed (and why)."""
    flat = tokens(text)
    while flat and flat[-1] == ";":
        flat.pop()
    if not flat:
        return Verdict(exempt="empty")
    first = flat[0].upper()
    if first in EXEMPT_KINDS:
        return Verdict(exempt=EXEMPT_KINDS[first])
    if " ".join(flat) in FAN_OUT:
        return Verdict(exempt=FAN_OUT[" ".join(flat)])
    for pattern, why in FAN_OUT_PATTERNS.items():
        if pattern.fullmatch(" ".join(flat)):
            return Verdict(exempt=why)
    root = nest(flat)
    if first in ("INSERT", "COPY"):
        return _insert_verdict(root.items)
    if first not in ("SELECT", "WITH", "UPDATE", "DELETE"):
        return Verdict(problem=f"an unknown kind of statement ({first})")
    found = walk(root.items, Walk())
    if found.tables and all(_is_undistributed(t) for t in found.tables):
        return Verdict(exempt="; ".join(UNDISTRIBUTED.get(t, "catalog") for t in found.tables))
    bad = [t for t in found.unpinned if not _is_undistributed(t.split()[0])]
    if bad:
        return Verdict(problem=f"not pinned to one namespace: {', '.join(bad)}")
    return Verdict(params=tuple(found.params))


def _split_commas(items: list[str | Group]) -> list[list[str | Group]]:
    parts: list[list[str | Group]] = [[]]
    for item in items:
        if item == ",":
            parts.append([])
        else:
            parts[-1].append(item)
    return parts


def _param(part: list[str | Group]) -> int | None:
    head = part[0] if part else None
    return int(head[1:]) if isinstance(head, str) and head.startswith("?") else None


def _insert_verdict(items: list[str | Group]) -> Verdict:
    """``INSERT INTO t (namespace, …) VALUES …`` or ``… SELECT * FROM unnest(…)``, ``COPY t
    (namespace, …) FROM STDIN``; a ``SELECT`` from tables must be routed itself."""
    index = 2 if items[0] == "INSERT" else 1
    table = str(items[index])
    if table in UNDISTRIBUTED:
        return Verdict(exempt=UNDISTRIBUTED[table])
    columns = items[index + 1] if index + 1 < len(items) else None
    if not isinstance(columns, Group) or "namespace" not in columns.items:
        return Verdict(problem=f"an insert into {table} that does not name the namespace column")
    column = [str(part[0]) for part in _split_commas(columns.items)].index("namespace")
    rest = items[index + 2 :]
    if items[0] == "COPY":
        return Verdict(copy_column=column)
    if rest and rest[0] == "VALUES":
        end = next((i for i, x in enumerate(rest) if x == "ON"), len(rest))
        rows = [item for item in rest[:end] if isinstance(item, Group)]
        params = [_param(_split_commas(row.items)[column]) for row in rows]
        if None in params:
            return Verdict(problem=f"an insert into {table} whose namespace is not a value")
        return Verdict(params=tuple(p for p in params if p is not None))
    if rest[:4] == ["SELECT", "*", "FROM", "unnest"] and isinstance(rest[4], Group):
        array = _param(_split_commas(rest[4].items)[column])
        if array is None:
            return Verdict(problem=f"an insert into {table} whose namespace is not a value")
        return Verdict(arrays=(array,))
    end = next((i for i, x in enumerate(rest) if x == "ON"), len(rest))
    found = walk(rest[:end], Walk())
    if found.unpinned:
        return Verdict(
            problem=f"an insert into {table} from tables not pinned to one namespace: "
            + ", ".join(found.unpinned)
        )
    return Verdict(problem=f"an insert into {table} whose rows' namespace cannot be read")


def array_values(value: Any) -> list[Any]:
    """The elements of an array parameter: a list, or PostgreSQL's text form the store
    sends (``{"a","b\\"c"}``)."""
    if isinstance(value, list | tuple):
        return list(value)
    text = str(value)
    if not (text.startswith("{") and text.endswith("}")):
        raise ValueError(f"not an array literal: {text[:40]!r}")
    values: list[Any] = []
    body, position = text[1:-1], 0
    while position < len(body):
        if body[position] == '"':
            chars = []
            position += 1
            while body[position] != '"':
                if body[position] == "\\":
                    position += 1
                chars.append(body[position])
                position += 1
            values.append("".join(chars))
            position += 1
        else:
            end = body.find(",", position)
            end = len(body) if end < 0 else end
            word = body[position:end]
            values.append(None if word == "NULL" else word)
            position = end
        position += 1  # the comma
    return values
