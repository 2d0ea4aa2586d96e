"""Append-only numbered migrations shared by every SQL backend.

Each migration is a list of statements in a portable subset of SQL; ``{bigint}``,
``{double}``, ``{blob}`` and ``{without_rowid}`` are filled in per dialect. What only one
database had (SQLite's FTS5 table of version 3) is dropped by the backend before the portable
statements run. Every table carries ``namespace`` first in its primary key and its indexes: the
shape a sharded PostgreSQL (Citus) distributes by, except ``REFERENCE_TABLES`` (docs/scaling.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

# keyed reads: a key's revisions in the order a view ranks them, one row per frontier tree
# (tree '' and depth -1: no frontier), and retractions found by what they name, so reading
# a key's current value costs what it returns, not the key's history (the backend fills
# retraction_targets: the targets are JSON)
KEYED_READS: Final[list[str]] = [
    """CREATE TABLE key_frontiers (
            namespace TEXT NOT NULL, key_name TEXT NOT NULL, tree TEXT NOT NULL,
            depth INTEGER NOT NULL, seq {bigint} NOT NULL, record_id TEXT NOT NULL,
            revision INTEGER NOT NULL, PRIMARY KEY (namespace, record_id, revision, tree))""",
    "CREATE INDEX key_frontiers_ranked ON key_frontiers (namespace, key_name, tree, depth, seq)",
    "CREATE INDEX key_frontiers_by_seq ON key_frontiers (namespace, key_name, seq)",
    # what was written before: one row per frontier (from the frontier index and the
    # events' depth), one for each revision without a frontier
    """INSERT INTO key_frontiers (namespace, key_name, tree, depth, seq, record_id, revision)
        SELECT r.namespace, r.key_name, e.tree, e.depth, r.seq, r.record_id, r.revision
        FROM frontiers f JOIN revisions r ON r.namespace = f.namespace
        AND r.record_id = f.record_id AND r.revision = f.revision
        JOIN events e ON e.namespace = f.namespace AND e.id = f.event_id
        WHERE r.key_name IS NOT NULL""",
    """INSERT INTO key_frontiers (namespace, key_name, tree, depth, seq, record_id, revision)
        SELECT r.namespace, r.key_name, '', -1, r.seq, r.record_id, r.revision
        FROM ungated u JOIN revisions r ON r.namespace = u.namespace
        AND r.record_id = u.record_id AND r.revision = u.revision
        WHERE r.key_name IS NOT NULL""",
    # retraction_targets and retractions_by_key, which keyed reads use too, come with 4
]

# tree index: what a one-tree view decides from without walking its path — the (key, scope)
# groups placed in each tree (scope_tag '-' for no scope, '+' and the scope otherwise: a key
# scope may be any string, '' included) and the revisions competing under no key (no key, or
# a retraction), once per frontier tree, deepest first. visible() reads them instead of the
# path while they are few next to the path's length.
TREE_INDEX: Final[list[str]] = [
    """CREATE TABLE tree_keys (
            namespace TEXT NOT NULL, tree TEXT NOT NULL, key_name TEXT NOT NULL,
            scope_tag TEXT NOT NULL, PRIMARY KEY (namespace, tree, key_name, scope_tag))""",
    """CREATE TABLE unkeyed_frontiers (
            namespace TEXT NOT NULL, tree TEXT NOT NULL, depth INTEGER NOT NULL,
            seq {bigint} NOT NULL, record_id TEXT NOT NULL, revision INTEGER NOT NULL,
            PRIMARY KEY (namespace, record_id, revision, tree))""",
    "CREATE INDEX unkeyed_frontiers_ranked ON unkeyed_frontiers (namespace, tree, depth, seq)",
    """INSERT INTO tree_keys (namespace, tree, key_name, scope_tag)
        SELECT DISTINCT k.namespace, k.tree, k.key_name,
        CASE WHEN r.key_scope IS NULL THEN '-' ELSE '+' || r.key_scope END
        FROM key_frontiers k JOIN revisions r ON r.namespace = k.namespace
        AND r.record_id = k.record_id AND r.revision = k.revision""",
    """INSERT INTO unkeyed_frontiers (namespace, tree, depth, seq, record_id, revision)
        SELECT r.namespace, e.tree, e.depth, r.seq, r.record_id, r.revision
        FROM frontiers f JOIN revisions r ON r.namespace = f.namespace
        AND r.record_id = f.record_id AND r.revision = f.revision
        JOIN events e ON e.namespace = f.namespace AND e.id = f.event_id
        WHERE r.key_name IS NULL OR r.kind = 'retraction'""",
]


def _clustered(
    table: str,
    columns: str,
    key: str,
    indexes: Sequence[str] = (),
    added: tuple[str, str] | None = None,
) -> list[str]:
    """Rebuild ``table`` stored in the order of its primary key: SQLite's ``WITHOUT ROWID``
    (PostgreSQL gets the same table back). A rowid table whose key is (nearly) the whole row
    holds every row twice, once in the table and once in the key's index. ``added``: a new
    column and its value in the rows copied."""
    names = ", ".join(column.split()[0] for column in columns.split(","))
    values = names
    if added is not None:
        columns += ", " + added[0]
        names += ", " + added[0].split()[0]
        values += ", " + added[1]
    return [
        f"CREATE TABLE {table}_clustered ({columns}, PRIMARY KEY ({key})) {{without_rowid}}",
        f"INSERT INTO {table}_clustered ({names}) SELECT {values} FROM {table}",
        f"DROP TABLE {table}",
        f"ALTER TABLE {table}_clustered RENAME TO {table}",
        *indexes,
    ]


REVISION = "record_id TEXT NOT NULL, revision INTEGER NOT NULL"

# Disk (schema 7): the index-like tables, whose primary key is (nearly) the whole row, stored
# once in key order; the (namespace, record_id, revision) indexes of frontiers, citing and
# pending are gone: a replaced revision's rows are deleted by their whole key, derived from the
# revision as stored (sqlrevisions.py, ``put_revision``). The codec writes references and gates
# short; the backend re-encodes the revisions written before (``_after_migration``).
COMPACT_STORAGE: Final[list[str]] = [
    *_clustered("heads", "namespace TEXT NOT NULL, tree TEXT NOT NULL, event_id TEXT NOT NULL",
                "namespace, tree"),
    # cited = 1: the revision cites its frontier event itself (a fact's one source), which
    # then has no citing row (rows copied keep theirs: cited = 0)
    *_clustered("frontiers", f"namespace TEXT NOT NULL, event_id TEXT NOT NULL, {REVISION}",
                "namespace, event_id, record_id, revision",
                added=("cited INTEGER NOT NULL", "0")),
    *_clustered("ungated", f"namespace TEXT NOT NULL, {REVISION}",
                "namespace, record_id, revision"),
    *_clustered("citing", f"namespace TEXT NOT NULL, target TEXT NOT NULL, {REVISION}",
                "namespace, target, record_id, revision"),
    *_clustered("pending", f"namespace TEXT NOT NULL, event_id TEXT NOT NULL, {REVISION}",
                "namespace, event_id, record_id, revision"),
    *_clustered(
        "supersedes",
        "namespace TEXT NOT NULL, old_id TEXT NOT NULL, new_id TEXT NOT NULL, "
        "seq {bigint} NOT NULL",
        "namespace, old_id, new_id",
        ["CREATE INDEX supersedes_by_new ON supersedes (namespace, new_id)"],
    ),
    *_clustered("statuses", "namespace TEXT NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL",
                "namespace, id"),
    *_clustered("audit_ids", "namespace TEXT NOT NULL, id TEXT NOT NULL, seq {bigint} NOT NULL",
                "namespace, id, seq"),
    *_clustered("retraction_targets",
                "namespace TEXT NOT NULL, target TEXT NOT NULL, id TEXT NOT NULL",
                "namespace, target, id"),
    *_clustered("erase_cleanup", "namespace TEXT NOT NULL, seq {bigint} NOT NULL",
                "namespace, seq"),
    # the rank tables are stored in the order a view reads them: their rows are deleted by
    # whole key too, and a key's records are found through key_frontiers, which holds a row
    # for every keyed revision (so revisions needs no index by key)
    *_clustered(
        "key_frontiers",
        "namespace TEXT NOT NULL, key_name TEXT NOT NULL, tree TEXT NOT NULL, "
        f"depth INTEGER NOT NULL, seq {{bigint}} NOT NULL, {REVISION}",
        "namespace, key_name, tree, depth, seq, record_id, revision",
        ["CREATE INDEX key_frontiers_by_seq ON key_frontiers (namespace, key_name, seq)"],
    ),
    *_clustered("tree_keys",
                "namespace TEXT NOT NULL, tree TEXT NOT NULL, key_name TEXT NOT NULL, "
                "scope_tag TEXT NOT NULL",
                "namespace, tree, key_name, scope_tag"),
    *_clustered(
        "unkeyed_frontiers",
        "namespace TEXT NOT NULL, tree TEXT NOT NULL, depth INTEGER NOT NULL, "
        f"seq {{bigint}} NOT NULL, {REVISION}",
        "namespace, tree, depth, seq, record_id, revision",
    ),
    "DROP INDEX IF EXISTS revisions_by_key",
    # whole-namespace listings (iter_events, record_ids) sort what they read anyway
    "DROP INDEX IF EXISTS events_by_seq",
    "DROP INDEX IF EXISTS revisions_by_seq",
]  # fmt: skip

MIGRATIONS: Final[list[list[str]]] = [
    # 1: the engine's state
    [
        "CREATE TABLE IF NOT EXISTS branchmem_schema (version INTEGER NOT NULL)",
        """CREATE TABLE namespaces (
            namespace TEXT NOT NULL PRIMARY KEY,
            seq {bigint} NOT NULL)""",
        """CREATE TABLE events (
            namespace TEXT NOT NULL, id TEXT NOT NULL, parent TEXT, tree TEXT,
            explicit_tree TEXT, role TEXT NOT NULL, content TEXT NOT NULL, meta TEXT NOT NULL,
            ts {double}, seq {bigint} NOT NULL, attached INTEGER NOT NULL, depth INTEGER,
            jump TEXT, PRIMARY KEY (namespace, id))""",
        "CREATE INDEX events_by_parent ON events (namespace, parent)",
        "CREATE INDEX events_by_seq ON events (namespace, seq)",
        """CREATE TABLE heads (
            namespace TEXT NOT NULL, tree TEXT NOT NULL, event_id TEXT NOT NULL,
            PRIMARY KEY (namespace, tree))""",
        """CREATE TABLE revisions (
            namespace TEXT NOT NULL, record_id TEXT NOT NULL, revision INTEGER NOT NULL,
            kind TEXT NOT NULL, content TEXT NOT NULL, sources TEXT, refs TEXT,
            key_name TEXT, key_scope TEXT, meta TEXT NOT NULL, seq {bigint} NOT NULL,
            gate TEXT NOT NULL, legacy INTEGER NOT NULL, unknown_sources INTEGER NOT NULL,
            detached_sources INTEGER NOT NULL, consistent INTEGER NOT NULL,
            PRIMARY KEY (namespace, record_id, revision))""",
        "CREATE INDEX revisions_by_seq ON revisions (namespace, revision, seq)",
        """CREATE TABLE frontiers (
            namespace TEXT NOT NULL, event_id TEXT NOT NULL, record_id TEXT NOT NULL,
            revision INTEGER NOT NULL, PRIMARY KEY (namespace, event_id, record_id, revision))""",
        """CREATE TABLE ungated (
            namespace TEXT NOT NULL, record_id TEXT NOT NULL, revision INTEGER NOT NULL,
            PRIMARY KEY (namespace, record_id, revision))""",
        """CREATE TABLE citing (
            namespace TEXT NOT NULL, target TEXT NOT NULL, record_id TEXT NOT NULL,
            revision INTEGER NOT NULL, PRIMARY KEY (namespace, target, record_id, revision))""",
        """CREATE TABLE pending (
            namespace TEXT NOT NULL, event_id TEXT NOT NULL, record_id TEXT NOT NULL,
            revision INTEGER NOT NULL, PRIMARY KEY (namespace, event_id, record_id, revision))""",
        """CREATE TABLE supersedes (
            namespace TEXT NOT NULL, old_id TEXT NOT NULL, new_id TEXT NOT NULL,
            seq {bigint} NOT NULL, PRIMARY KEY (namespace, old_id, new_id))""",
        "CREATE INDEX supersedes_by_new ON supersedes (namespace, new_id)",
        """CREATE TABLE retractions (
            namespace TEXT NOT NULL, id TEXT NOT NULL, scope TEXT NOT NULL,
            targets TEXT NOT NULL, key_name TEXT, key_scope TEXT, seq {bigint} NOT NULL,
            PRIMARY KEY (namespace, id))""",
        "CREATE INDEX retractions_by_scope ON retractions (namespace, scope, seq)",
        """CREATE TABLE statuses (
            namespace TEXT NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL,
            PRIMARY KEY (namespace, id))""",
        """CREATE TABLE audit (
            namespace TEXT NOT NULL, seq {bigint} NOT NULL, time {double} NOT NULL,
            op TEXT NOT NULL, ids TEXT NOT NULL, actor TEXT, reason TEXT NOT NULL,
            revision INTEGER, PRIMARY KEY (namespace, seq))""",
        """CREATE TABLE audit_ids (
            namespace TEXT NOT NULL, id TEXT NOT NULL, seq {bigint} NOT NULL,
            PRIMARY KEY (namespace, id, seq))""",
    ],
    # 2: children in arrival order without a sort; index rows found by their revision
    [
        "DROP INDEX events_by_parent",
        "CREATE INDEX events_by_parent ON events (namespace, parent, seq)",
        "CREATE INDEX frontiers_by_revision ON frontiers (namespace, record_id, revision)",
        "CREATE INDEX citing_by_revision ON citing (namespace, record_id, revision)",
        "CREATE INDEX pending_by_revision ON pending (namespace, record_id, revision)",
    ],
    # 3: search index, vectors, repair queue, deliveries, service keys
    [
        "CREATE INDEX revisions_by_key ON revisions (namespace, key_name)",
        """CREATE TABLE search_docs (
            namespace TEXT NOT NULL, record_id TEXT NOT NULL, revision INTEGER NOT NULL,
            search_text TEXT NOT NULL, PRIMARY KEY (namespace, record_id, revision))""",
        """CREATE TABLE vectors (
            namespace TEXT NOT NULL, record_id TEXT NOT NULL, revision INTEGER NOT NULL,
            vector {blob} NOT NULL, PRIMARY KEY (namespace, record_id, revision))""",
        """CREATE TABLE repairs (
            namespace TEXT NOT NULL, record_id TEXT NOT NULL, cause TEXT NOT NULL,
            revision INTEGER NOT NULL, reason TEXT NOT NULL, anchor TEXT, seq {bigint} NOT NULL,
            attempts INTEGER NOT NULL, last_error TEXT NOT NULL,
            PRIMARY KEY (namespace, record_id, cause))""",
        "CREATE INDEX repairs_by_seq ON repairs (namespace, seq)",
        """CREATE TABLE counters (
            namespace TEXT NOT NULL, name TEXT NOT NULL, value {bigint} NOT NULL,
            PRIMARY KEY (namespace, name))""",
        """CREATE TABLE deliveries (
            namespace TEXT NOT NULL, session TEXT NOT NULL, seq {bigint} NOT NULL,
            anchor TEXT, time {double} NOT NULL, items TEXT NOT NULL,
            PRIMARY KEY (namespace, session, seq))""",
        """CREATE TABLE api_keys (
            key_id TEXT NOT NULL PRIMARY KEY, secret_hash TEXT NOT NULL, tenant TEXT NOT NULL,
            namespaces TEXT NOT NULL, created {double} NOT NULL)""",
    ],
    # 4: no lexical index. Gated search never read it (it ranks the visible revisions' own
    # text); its only readers were benchmarks, and SQLite's FTS5 'optimize', run after every
    # erase, corrupted it after ~1,300 erasures. An erase records here that its cleanup of
    # the files (WAL checkpoint, VACUUM) is due, so a crash before the cleanup cannot lose it.
    # An erase finds the retractions about what it erases by target and by key (their text
    # goes too); the backend fills retraction_targets from the retractions already written.
    [
        "DROP TABLE search_docs",
        """CREATE TABLE retraction_targets (
            namespace TEXT NOT NULL, target TEXT NOT NULL, id TEXT NOT NULL,
            PRIMARY KEY (namespace, target, id))""",
        "CREATE INDEX retractions_by_key ON retractions (namespace, key_name)",
        """CREATE TABLE erase_cleanup (
            namespace TEXT NOT NULL, seq {bigint} NOT NULL, PRIMARY KEY (namespace, seq))""",
    ],
    KEYED_READS,  # 5, defined above; its version is its place in this list
    TREE_INDEX,  # 6, defined above
    COMPACT_STORAGE,  # 7, defined above
    # 8: each event's token count under the default counter, taken at write, so a context
    # prices its messages without counting them; NULL for events written before (counted
    # when read) and for erased ones
    ["ALTER TABLE events ADD COLUMN tokens INTEGER"],
    # 9: where each conversation starts (its roots, and the events waiting for a parent), so
    # reading one conversation (iter_events(tree), which forget uses) walks it down from
    # there instead of reading every event of the namespace (bench/forget_scale.py); a
    # partial index: one row a conversation, not one an event (bench/disk.py)
    [
        "CREATE INDEX events_tree_starts ON events (namespace, tree) "
        "WHERE parent IS NULL OR attached = 0"
    ],
]

# Not distributed by namespace in a sharded deployment, but copied to every node: the schema
# version; API keys (namespace-free: a key names its namespaces); the erasures whose VACUUM is
# due (read whole by the cleanup, as VACUUM cleans every shard at once). Every other table, and
# every statement on it, is routed by namespace (tests/test_namespace_routing.py).
REFERENCE_TABLES: Final = ("branchmem_schema", "api_keys", "erase_cleanup")

KEYED_READS_VERSION: Final = MIGRATIONS.index(KEYED_READS) + 1
COMPACT_STORAGE_VERSION: Final = MIGRATIONS.index(COMPACT_STORAGE) + 1

SCHEMA_VERSION: Final = len(MIGRATIONS)
