"""The problem codes are declared once, on the error classes: unique, and the service and the
client read the same registry (a problem the server sends decodes to the class it came from)."""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Iterator

import pytest

from branchmem import errors
from branchmem.errors import PROBLEMS, BranchmemError, ServiceError


def subclasses(cls: type[BranchmemError]) -> Iterator[type[BranchmemError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)


INTEGRATIONS = (
    "branchmem.integrations.mem0.observe",
    "branchmem.integrations.langgraph.store",
    "branchmem.integrations.langgraph.checkpointer",
)


def test_every_code_names_exactly_one_error_family() -> None:
    for module in INTEGRATIONS:
        with contextlib.suppress(ImportError):  # a class they declared would show up here
            importlib.import_module(module)
    holders: dict[str, type[BranchmemError]] = {}
    for cls in [BranchmemError, *subclasses(BranchmemError)]:
        if "code" not in vars(cls):
            continue
        first = holders.setdefault(cls.code, cls)
        assert issubclass(cls, first) or issubclass(first, cls), (cls, first)
    declared_here = {
        cls.code
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, BranchmemError)
    }
    assert set(PROBLEMS) == declared_here


def test_a_second_class_cannot_take_a_code() -> None:
    with pytest.raises(TypeError, match=r"'conflict'.*ConflictError"):

        class Clash(BranchmemError):
            code = "conflict"


def test_the_old_import_paths_still_name_the_same_classes() -> None:
    from branchmem.importers import ImportFormatError, ImportTooLarge
    from branchmem.importers.errors import ImportFormatError as Old
    from branchmem.search import EmbedderUnavailable
    from branchmem.store import CleanupPending
    from branchmem.store.base import CleanupPending as Base

    assert ImportFormatError is Old is errors.ImportFormatError
    assert ImportTooLarge is errors.ImportTooLarge
    assert EmbedderUnavailable is errors.EmbedderUnavailable
    assert CleanupPending is Base is errors.CleanupPending


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("branchmem.integrations.mem0", "MemoryNotVisible"),
        ("branchmem.integrations.mem0.observe", "UnknownMemory"),
        ("branchmem.integrations.mem0.observe", "AmbiguousHead"),
        ("branchmem.integrations.langgraph", "UnsupportedSaver"),
        ("branchmem.integrations.langgraph.gated", "MissingAnchor"),
        ("branchmem.integrations.langgraph.store", "CheckpointNotMirrored"),
    ],
)
def test_the_integrations_errors_are_the_registrys(module: str, name: str) -> None:
    """Declared in ``errors.py`` with their codes (one tree, one registry); the modules that
    declared them before still export them."""
    cls = getattr(errors, name)
    assert PROBLEMS[cls.code] is cls
    try:
        found = importlib.import_module(module)
    except ImportError as error:  # the integration's extra is not installed
        pytest.skip(f"{module}: {error}")
    assert getattr(found, name) is cls


def test_no_integration_declares_a_coded_error_of_its_own() -> None:
    for module in INTEGRATIONS:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    outside = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in subclasses(BranchmemError)
        if "code" in vars(cls)
        and not cls.__module__.startswith("branchmem.errors")
        and cls.__module__.startswith("branchmem.")
    ]
    assert not outside, f"declare these in branchmem/errors.py (re-export them): {outside}"


def test_an_ambiguous_head_from_a_problem_has_its_fields() -> None:
    error = errors.AmbiguousHead.from_problem("conversation 't' has no head and 2 leaves")
    assert isinstance(error, errors.AmbiguousHead)
    assert (error.tree, error.candidates) == ("", ())
    assert str(error) == "conversation 't' has no head and 2 leaves"


@pytest.mark.parametrize("code", sorted(PROBLEMS))
def test_server_and_client_agree_on_every_code(code: str) -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from branchmem.client import Client
    from branchmem.server.problems import STATUS, library_problem

    cls = PROBLEMS[code]
    sent = library_problem(cls.from_problem(f"refused: {code}"))
    body = json.loads(bytes(sent.body))
    assert (body["code"], body["status"], sent.status_code) == (code, cls.status, STATUS[code])
    client = Client("http://127.0.0.1:9", api_key="bm_unused")  # never sends a request
    try:
        received = client._problem(sent.status_code, bytes(sent.body))
    finally:
        client.close()
    assert type(received) is cls
    assert str(received) == f"refused: {code}"


def test_an_unknown_code_from_a_newer_service_is_a_service_error() -> None:
    assert errors.problem_class("brand_new") is ServiceError


def test_a_missing_extra_decodes_with_its_extra() -> None:
    sent = errors.MissingExtra("vector search", "embeddings", "numpy")
    received = errors.MissingExtra.from_problem(str(sent))
    assert isinstance(received, errors.MissingExtra) and received.extra == "embeddings"


def test_the_service_refuses_only_with_a_declared_code() -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from branchmem.server.problems import Refusal

    assert Refusal("forbidden", "no").code == "forbidden"
    with pytest.raises(ValueError, match="'forbiden'"):
        Refusal("forbiden", "a typo")
