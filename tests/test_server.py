"""The service's own promises: keys, tenant isolation, problem documents, limits, paging."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")

from fastapi.testclient import TestClient

from branchmem import ConflictError, InvalidInput, Memory, NotFoundError
from branchmem.client import Client, Forbidden, TooLarge, Unauthorized
from branchmem.errors import BranchmemError
from branchmem.server import KeyRing, Limits, create_app
from branchmem.server.keys import split_key
from branchmem.server.openapi import render
from branchmem.server.problems import STATUS
from branchmem.testing.conformance import chengdu
from test_server_harness import LiveService

DOCS = Path(__file__).parent.parent / "docs"


class Tenants:
    """A store with two tenants: acme (acme/*) and globex (globex), each with data."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.memory = Memory()
        ring = KeyRing(self.memory)
        self.acme, self.acme_grant = ring.create("acme", ["acme/*"])
        self.globex, _ = ring.create("globex", ["globex"])
        chengdu(self.memory)
        for namespace in ("acme/alice", "globex"):
            self.memory.add_event("u1", content=f"{namespace} says hi", namespace=namespace)
            self.memory.add_record("r1", sources=["u1"], content="secret", namespace=namespace)
        self.app = create_app(self.memory, limits=limits)
        self.http = TestClient(self.app, raise_server_exceptions=False)
        self.url: str | None = None

    def get(self, path: str, key: str | None, **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return self.http.get(path, headers=headers, **kw)

    def post(self, path: str, key: str | None, **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {key}", **kw.pop("headers", {})} if key else {}
        return self.http.post(path, headers=headers, **kw)


@pytest.fixture
def tenants() -> Iterator[Tenants]:
    made = Tenants()
    yield made
    made.memory.close()


def operations_of(app: Any) -> list[tuple[str, str]]:
    """Every (method, path template) of the namespaced API."""
    found = []
    for path, methods in app.openapi()["paths"].items():
        if "{namespace}" in path:
            found.extend((method.upper(), path) for method in methods)
    return found


def fill(path: str, namespace: str) -> str:
    return re.sub(r"\{[a-z_]+\}", "u1", path.replace("{namespace}", namespace))


# -- keys and tenant isolation -----------------------------------------------------------
def test_keys_are_stored_hashed_and_shown_once(tenants: Tenants) -> None:
    row = tenants.memory.store.get_api_key(tenants.acme_grant.key_id)
    assert row is not None and row.secret_hash.startswith("sha256:")
    parts = split_key(tenants.acme)
    assert parts is not None and parts[0] == tenants.acme_grant.key_id
    assert parts[1] not in repr(row)  # the whole secret: one cut at its last "_" may be 2 chars
    assert tenants.acme_grant.namespaces == ("acme/*",)


def test_overlapping_bindings_of_two_tenants_are_refused(tenants: Tenants) -> None:
    ring = KeyRing(tenants.memory)
    for binding in ("acme/bob", "acme/*", "acme*", "*", "globex"):
        with pytest.raises(ConflictError, match="overlaps"):
            ring.create("initech", [binding])
    ring.create("acme", ["acme/*", "acme-labs"])  # the same tenant may widen its own


def test_every_namespaced_operation_refuses_a_foreign_namespace_alike(tenants: Tenants) -> None:
    """403 for another tenant's namespace and for one that does not exist, same body."""
    ops = operations_of(tenants.app)
    assert len(ops) >= 30
    for method, template in ops:
        answers = []
        for namespace in ("globex", "nobody-has-this"):
            call = tenants.get if method == "GET" else tenants.post
            kw = {} if method == "GET" else {"json": {}}
            response = call(fill(template, namespace), tenants.acme, **kw)
            assert response.status_code == 403, (method, template, response.text)
            assert response.headers["content-type"] == "application/problem+json"
            body = response.json()
            answers.append((body["code"], body["detail"].replace(namespace, "NS")))
        assert answers[0] == answers[1] == ("forbidden", "this key is not bound to namespace 'NS'")


def test_every_operation_needs_a_valid_key(tenants: Tenants) -> None:
    # the last character changed to one it is not (a secret may already end in "x")
    tampered = tenants.acme[:-1] + ("y" if tenants.acme.endswith("x") else "x")
    for method, template in operations_of(tenants.app):
        call = tenants.get if method == "GET" else tenants.post
        for key in (None, "bm_0000_wrong", tampered, "not-a-key"):
            response = call(fill(template, "acme%2Falice"), key)
            assert response.status_code == 401, (method, template, key)
            assert response.json()["code"] == "unauthorized"
            assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_key_reads_and_writes_only_its_own_namespaces(
    tenants: Tenants, live: LiveService
) -> None:
    with (
        remote(live, tenants, tenants.acme) as acme,
        remote(live, tenants, tenants.globex) as globex,
    ):
        assert [r.content for r in acme.visible("u1", namespace="acme/alice")] == ["secret"]
        acme.add_event("u2", "u1", content="new", namespace="acme/bob")
        for call in (
            lambda: acme.visible("u1", namespace="globex"),
            lambda: acme.add_event("x", namespace="globex"),
            lambda: acme.get_record("f-chengdu"),  # "default" is nobody's here
            lambda: globex.audit(namespace="acme/alice"),
        ):
            with pytest.raises(Forbidden):
                call()
        assert globex.get_record("r1", namespace="globex").content == "secret"
    with pytest.raises(NotFoundError):
        tenants.memory.get_event("x", namespace="globex")


def test_the_audit_log_names_the_key_that_made_each_change(
    tenants: Tenants, live: LiveService
) -> None:
    with remote(live, tenants, tenants.acme) as acme:
        acme.add_record("r2", sources=["u1"], content="x", namespace="acme/alice")
        acme.withdraw("r2", reason="wrong", namespace="acme/alice")
        entries = acme.audit(id="r2", namespace="acme/alice")
    assert [(e.op, e.actor) for e in entries] == [
        ("add_record", tenants.acme_grant.actor),
        ("withdraw", tenants.acme_grant.actor),
    ]


def test_a_deleted_key_stops_working(tenants: Tenants) -> None:
    ring = KeyRing(tenants.memory)
    key, grant = ring.create("acme", ["acme/*"])
    assert tenants.get("/v1/ns/acme%2Falice/heads", key).status_code == 200
    ring.delete(grant.key_id)
    fresh = create_app(tenants.memory)  # another worker: no cached grant
    response = TestClient(fresh).get(
        "/v1/ns/acme%2Falice/heads", headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 401
    with pytest.raises(NotFoundError, match=grant.key_id):
        ring.delete(grant.key_id)


# -- problems ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def live() -> Iterator[LiveService]:
    service = LiveService().start()
    yield service
    service.stop()


def remote(live: LiveService, tenants: Tenants, key: str) -> Client:
    """A ``Client`` of ``tenants``' app, served over real HTTP."""
    if tenants.url is None:
        tenants.url = live.mount(tenants.app)
    return Client(tenants.url, key)


def test_client_errors_are_the_library_classes(tenants: Tenants, live: LiveService) -> None:
    with remote(live, tenants, tenants.acme) as acme:
        ns = {"namespace": "acme/alice"}
        with pytest.raises(NotFoundError, match="'nope'"):
            acme.visible("nope", **ns)
        with pytest.raises(ConflictError, match="'u1'"):
            acme.add_event("u1", content="different", **ns)
        with pytest.raises(InvalidInput, match="sources"):
            acme.add_record("bad", sources="u1", **ns)  # type: ignore[arg-type]
    with remote(live, tenants, "bm_x_y") as stranger, pytest.raises(Unauthorized):
        stranger.heads(namespace="acme/alice")


def test_each_error_code_has_one_status(tenants: Tenants) -> None:
    ns = "/v1/ns/acme%2Falice"
    seen = {
        "not_found": tenants.get(f"{ns}/events/missing", tenants.acme),
        "conflict": tenants.post(f"{ns}/events", tenants.acme, json={"id": "u1", "content": "x"}),
        "cycle": tenants.post(f"{ns}/events", tenants.acme, json={"id": "c", "parent": "c"}),
        "invalid_input": tenants.post(f"{ns}/events", tenants.acme, json={"id": 7}),
        "malformed": tenants.post(
            f"{ns}/events", tenants.acme, content=b"{not json",
            headers={"Content-Type": "application/json"},
        ),
    }  # fmt: skip
    tenants.post(f"{ns}/items/r1/erase", tenants.acme, json={})
    seen["erased"] = tenants.get(f"{ns}/records/r1", tenants.acme)
    for code, response in seen.items():
        assert response.headers["content-type"] == "application/problem+json", code
        body = response.json()
        assert (body["code"], body["status"], response.status_code) == (
            code, STATUS[code], STATUS[code],
        ), body  # fmt: skip
        assert body["type"].endswith("/" + code) and body["detail"]


@pytest.mark.parametrize(
    "text, why",
    [
        ("nul\x00inside", "NUL"),
        ("\ud800", "surrogate"),
        ("\udfff tail", "surrogate"),
    ],
)
def test_unstorable_text_is_refused_everywhere(tenants: Tenants, text: str, why: str) -> None:
    ns = "/v1/ns/acme%2Falice"
    escaped = json.dumps({"id": "e", "content": text}).encode()  # \\u escapes, valid JSON
    answers = [
        tenants.post(f"{ns}/events", tenants.acme, content=escaped,
                     headers={"Content-Type": "application/json"}),
        tenants.get(f"{ns}/visible?anchor={quote(text.encode('utf-8', 'surrogatepass'))}",
                    tenants.acme),
    ]  # fmt: skip
    if "\x00" in text:
        answers.append(tenants.get(f"{ns}/events/nul%00inside", tenants.acme))
    for response in answers:
        assert response.status_code in (400, 422), response.text
        assert why in response.json()["detail"] or "UTF-8" in response.json()["detail"]


def test_unicode_that_can_be_stored_round_trips(tenants: Tenants, live: LiveService) -> None:
    with remote(live, tenants, tenants.acme) as acme:
        ns = {"namespace": "acme/ünï/中文 😀"}
        for event_id in ("😀", "a/b", "..", ".", "%2F", "e\u200d\u0301", "x" * 512):
            parent = None if event_id == "😀" else "😀"
            stored = acme.add_event(event_id, parent, content="搬到杭州 \U0001f3e0", **ns)
            assert acme.get_event(event_id, **ns) == stored
        assert [e.id for e in acme.path("%2F", **ns)] == ["😀", "%2F"]


def test_oversized_requests_are_413_problems(live: LiveService) -> None:
    made = Tenants(limits=Limits(max_body=4096, max_import=8192))
    ns = "/v1/ns/acme%2Falice"
    big = {"id": "big", "content": "x" * 5000}
    response = made.post(f"{ns}/events", made.acme, json=big)
    assert (response.status_code, response.json()["code"]) == (413, "too_large")
    streamed = made.post(
        f"{ns}/events", made.acme, content=iter([b'{"id": "s", "content": "', b"y" * 5000, b'"}']),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    assert streamed.status_code == 413
    upload = made.post(f"{ns}/import", made.acme, content=b"z" * 9000)
    assert upload.status_code == 413
    with remote(live, made, made.acme) as acme:
        with pytest.raises(TooLarge):
            acme.add_event("big", content="x" * 5000, namespace="acme/alice")
        assert isinstance(TooLarge("x"), InvalidInput)
    batch = {"events": [{"id": f"e{i}"} for i in range(10_001)]}
    roomy = Tenants(limits=Limits(max_body=1 << 22))
    response = roomy.post(f"{ns}/events/batch", roomy.acme, json=batch)
    assert (response.status_code, response.json()["code"]) == (422, "invalid_input")
    assert "events" in response.json()["detail"]


def test_repeated_query_parameters_are_refused(tenants: Tenants) -> None:
    response = tenants.get("/v1/ns/acme%2Falice/visible?anchor=u1&anchor=u2", tenants.acme)
    assert response.status_code == 422 and "more than once" in response.json()["detail"]


# -- pagination ----------------------------------------------------------------------------
def test_lists_are_paged_and_the_client_reads_every_page(tenants: Tenants) -> None:
    ns = "/v1/ns/acme%2Falice"
    for i in range(25):
        tenants.post(f"{ns}/records", tenants.acme, json={"id": f"p{i}", "sources": ["u1"]})
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"anchor": "u1", "limit": 10}
        if cursor:
            params["cursor"] = cursor
        page = tenants.get(f"{ns}/visible", tenants.acme, params=params).json()
        assert len(page["items"]) <= 10
        seen.extend(r["id"] for r in page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    expected = [r.id for r in tenants.memory.visible("u1", namespace="acme/alice")]
    assert seen == expected and len(seen) == 26
    bad = tenants.get(f"{ns}/visible", tenants.acme, params={"anchor": "u1", "cursor": "zz"})
    assert bad.status_code == 422 and "cursor" in bad.json()["detail"]
    too_many = tenants.get(f"{ns}/audit", tenants.acme, params={"limit": 100_000})
    assert too_many.status_code == 422


# -- the document ---------------------------------------------------------------------------
def test_the_committed_openapi_document_is_the_apps() -> None:
    committed = (DOCS / "openapi.json").read_text(encoding="utf-8")
    assert committed == render(), (
        "docs/openapi.json is out of date: python -m branchmem.server.openapi docs/openapi.json"
    )


def test_every_error_code_of_the_library_has_a_status() -> None:
    import branchmem.errors
    import branchmem.importers.errors
    import branchmem.search.embedding

    classes = [
        cls
        for module in (branchmem.errors, branchmem.importers.errors, branchmem.search.embedding)
        for cls in vars(module).values()
        if isinstance(cls, type) and issubclass(cls, BranchmemError)
    ]
    assert len(classes) >= 8
    for cls in classes:
        assert cls.code in STATUS, cls


def test_an_import_plan_applies_through_the_client(
    tenants: Tenants, live: LiveService, tmp_path: Path
) -> None:
    from branchmem.importers import load

    export = tmp_path / "chat.jsonl"
    lines = [
        {"user_name": "u", "character_name": "c"},
        {"name": "u", "is_user": True, "mes": "I'm moving to Hangzhou", "send_date": 1},
        {"name": "c", "is_user": False, "mes": "Lovely", "send_date": 2},
    ]
    export.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    with remote(live, tenants, tenants.acme) as acme:
        summary = acme.import_(load(export), namespace="acme/alice")
        assert (summary.imported, summary.events_added) == (1, 2)
        heads = acme.heads(namespace="acme/alice")
        (head,) = (h for t, h in heads.items() if t != "u1")
        assert [e.content for e in acme.path(head, namespace="acme/alice")][-1] == "Lovely"
        again = acme.import_(load(export), namespace="acme/alice")
        assert (again.events_added, again.events_existing) == (0, 2)


def test_every_operation_of_the_table_is_a_route(tenants: Tenants) -> None:
    from branchmem.api.operations import PREFIX
    from branchmem.api.operations import operations as operations_of_table

    served = set(operations_of(tenants.app))
    for op in operations_of_table().values():
        assert (op.verb, PREFIX + op.path) in served, op.name


def test_a_method_returning_nothing_answers_204(tenants: Tenants) -> None:
    ns = "/v1/ns/acme%2Falice"
    response = tenants.post(f"{ns}/heads", tenants.acme, json={"event_id": "u1"})
    assert response.status_code == 204 and response.content == b""
    assert tenants.get(f"{ns}/heads/u1", tenants.acme).json() == {"head": "u1"}


def test_conversations_are_listed(tenants: Tenants, live: LiveService) -> None:
    with remote(live, tenants, tenants.acme) as acme:
        (found,) = acme.conversations(namespace="acme/alice")
        assert (found.tree, found.root, found.events) == ("u1", "u1", 1)
        assert acme.conversations(namespace="acme/alice") == tenants.memory.conversations(
            namespace="acme/alice"
        )
