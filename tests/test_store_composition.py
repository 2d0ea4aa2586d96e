"""``SQLStore`` is a composition: every engine table's statements live in the mixin named for
its concern (STYLE.md: modules split by concept long before 1,000 lines)."""

from __future__ import annotations

import inspect
from pathlib import Path

from branchmem.store import sql
from branchmem.store.sql import SQLStore
from branchmem.store.sqlsession import SQLSession
from branchmem.store.sqlshared import SQLShared

STORE = Path(sql.__file__).parent
MAX_LINES = 500  # well below STYLE.md's 1,000: a concern that grows past it is two concerns

# the mixins SQLStore composes, without the session and shared base under them
MIXINS = [
    cls
    for cls in SQLStore.__mro__[1:]
    if cls.__module__.startswith("branchmem.store.sql") and cls not in (SQLSession, SQLShared)
]


def test_the_sql_store_defines_nothing_of_its_own() -> None:
    own = sorted(name for name, value in vars(SQLStore).items() if inspect.isfunction(value))
    assert not own, f"put these in the sql*.py mixin of their concern, not sql.py: {own}"


def test_no_method_is_defined_in_two_mixins() -> None:
    """A name in two mixins would be silently shadowed by the earlier base."""
    seen: dict[str, str] = {}
    for cls in MIXINS:
        for name, value in vars(cls).items():
            if inspect.isfunction(value) or isinstance(value, staticmethod):
                assert name not in seen, f"{name} is in both {seen[name]} and {cls.__name__}"
                seen[name] = cls.__name__


def test_every_sql_module_is_small_enough_to_read() -> None:
    for path in sorted(STORE.glob("sql*.py")):
        count = len(path.read_text().splitlines())
        assert count <= MAX_LINES, f"store/{path.name} has {count} lines: split it by concern"
