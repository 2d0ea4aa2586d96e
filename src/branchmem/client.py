"""``branchmem.Client``: the ``Memory`` API over HTTP, same names, same return types.

    mem = Memory.open("memory.db")                                   # embedded
    mem = Client("http://127.0.0.1:8765", api_key="bm_...")          # the service

Values come back as the same frozen dataclasses (``Record``, ``Event``, ``Explanation``,
``Hit``, ``Context``, ``AuditEntry`` ...), and a refused call raises the same
``branchmem.errors`` class the embedded call would, chosen by the problem's ``code``.

``url`` may list several workers: a request that could not reach one goes to the next. A
request that may have reached the server is retried only when repeating it cannot change
the outcome (reads, and writes that are no-ops when repeated: adding an identical event or
record). ``mode`` sets the decision mode of every view this client asks for, as
``Memory(mode)`` does.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

import httpx

from .audit import AuditEntry
from .errors import (
    BranchmemError,
    ConflictError,
    CycleError,
    ErasedError,
    Forbidden,
    InvalidInput,
    NotFoundError,
    SchemaVersionError,
    ServiceError,
    StorageError,
    TooLarge,
    Unauthorized,
    Unavailable,
)
from .model import MODES, Delivery, Event, Explanation, Hit, Record, RepairItem, StaleDelivery
from .search.context import Context
from .validation import check_id

if TYPE_CHECKING:
    from .importers import ImportPlan, ImportSummary, ProgressCallback

DEFAULT_NAMESPACE: Final = "default"
PAGE: Final = 1000


def _error_classes() -> dict[str, type[BranchmemError]]:
    from .importers.errors import ImportFormatError
    from .search.embedding import EmbedderUnavailable

    classes: list[type[BranchmemError]] = [
        BranchmemError, InvalidInput, NotFoundError, ConflictError, CycleError, ErasedError,
        StorageError, SchemaVersionError, ImportFormatError, EmbedderUnavailable,
        ServiceError, Unauthorized, Forbidden, TooLarge, Unavailable,
    ]  # fmt: skip
    found = {cls.code: cls for cls in classes}
    found["malformed"] = InvalidInput
    found["not_implemented"] = ServiceError
    return found


def _segment(value: str) -> str:
    """A path segment that survives URL normalisation: '.' and '..' are encoded too."""
    encoded = quote(value, safe="")
    return encoded.replace(".", "%2E") if set(value) == {"."} else encoded


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _record(data: Mapping[str, Any]) -> Record:
    sources = data["sources"]
    return Record(
        id=data["id"],
        revision=int(data["revision"]),
        kind=data["kind"],
        content=data["content"],
        sources=None if sources is None else tuple(sources),
        key=data.get("key"),
        scope=data.get("scope"),
        meta=dict(data.get("meta") or {}),
        seq=int(data.get("seq", 0)),
        namespace=data.get("namespace", DEFAULT_NAMESPACE),
    )


def _event(data: Mapping[str, Any]) -> Event:
    return Event(**data)


def _items(pairs: Iterable[Sequence[Any]]) -> tuple[tuple[str, int], ...]:
    return tuple((str(i), int(r)) for i, r in pairs)


class Client:
    """A remote ``Memory``. Thread-safe (one pooled HTTP client); close it when done."""

    def __init__(
        self,
        url: str | Sequence[str],
        api_key: str | None = None,
        *,
        mode: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        urls = [url] if isinstance(url, str) else list(url)
        if not urls or not all(isinstance(u, str) and u for u in urls):
            raise InvalidInput(f"a service URL is required, got {url!r}")
        if mode is not None and mode not in MODES:
            raise InvalidInput(f"mode must be one of {MODES} or None, got {mode!r}")
        self.urls = [u.rstrip("/") for u in urls]
        self.mode = mode
        self.retries = retries
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(headers=headers, timeout=timeout, transport=transport)
        self._next = itertools.cycle(range(len(self.urls)))
        self._preferred = 0
        self.failovers = 0  # requests answered by another worker than the one first tried
        self._lock = threading.Lock()
        self._errors = _error_classes()

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport ---------------------------------------------------------------------
    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        repeatable: bool = False,
    ) -> Any:
        """Send to the preferred worker, failing over to the others; decode or raise."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        if body is not None:
            try:
                content = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            except (TypeError, ValueError) as error:
                raise InvalidInput(f"request is not JSON-serialisable ({error})") from error
            except UnicodeEncodeError as error:
                raise InvalidInput(f"request holds text that cannot be stored ({error})") from error
            headers = {"Content-Type": "application/json", **(headers or {})}
        repeatable = repeatable or method == "GET"
        last: Exception | None = None
        attempts = max(1, self.retries) * len(self.urls)
        for attempt in range(attempts):
            with self._lock:
                index = self._preferred if attempt == 0 else next(self._next)
            try:
                response = self._http.request(
                    method, self.urls[index] + path, params=query, content=content,
                    headers=headers,
                )  # fmt: skip
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                last = error  # never reached the server: safe to send elsewhere
            except httpx.TransportError as error:
                if not repeatable:
                    raise Unavailable(
                        f"{method} {path}: the connection to {self.urls[index]} failed after "
                        f"the request was sent ({error}); it may or may not have been applied"
                    ) from error
                last = error
            else:
                if response.status_code in (502, 503, 504) and repeatable:
                    last = self._problem(response)
                    continue
                with self._lock:
                    if attempt > 0:
                        self.failovers += 1
                    self._preferred = index
                return self._decode(response)
        raise Unavailable(f"{method} {path}: no worker answered ({last})") from last

    def _problem(self, response: httpx.Response) -> BranchmemError:
        try:
            data = response.json()
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        code = str(data.get("code") or "internal")
        detail = str(data.get("detail") or f"HTTP {response.status_code}")
        return self._errors.get(code, ServiceError)(detail)

    def _decode(self, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise self._problem(response)
        return response.json()

    def _ns(self, namespace: str) -> str:
        return f"/v1/ns/{_segment(check_id(namespace, 'namespace'))}"

    def _id(self, value: object, what: str) -> str:
        return _segment(check_id(value, what))

    def _pages(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[Any]:
        query = dict(params or {})
        query["limit"] = PAGE
        while True:
            data = self._request("GET", path, params=query)
            yield from data["items"]
            if not data.get("next_cursor"):
                return
            query["cursor"] = data["next_cursor"]

    def _mode(self, mode: str | None) -> str | None:
        return self.mode if mode is None else mode

    # -- events ------------------------------------------------------------------------
    def add_event(
        self,
        id: str,
        parent: str | None = None,
        *,
        tree: str | None = None,
        role: str = "user",
        content: str = "",
        meta: Mapping[str, Any] | None = None,
        ts: float | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Event:
        body = {
            "id": id, "parent": parent, "tree": tree, "role": role, "content": content,
            "meta": self._meta(meta), "ts": ts,
        }  # fmt: skip
        data = self._request("POST", self._ns(namespace) + "/events", body=body, repeatable=True)
        return _event(data)

    def add_events(
        self, events: Iterable[Mapping[str, Any] | Event], *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[Event]:
        specs: list[Any] = []
        for item in events:
            if isinstance(item, Event):
                specs.append(
                    {"id": item.id, "parent": item.parent, "tree": item.tree, "role": item.role,
                     "content": item.content, "meta": item.meta, "ts": item.ts}
                )  # fmt: skip
            elif isinstance(item, Mapping):
                specs.append(dict(item))
            else:
                specs.append(item)
        data = self._request(
            "POST", self._ns(namespace) + "/events/batch", body={"events": specs}, repeatable=True
        )
        return [_event(e) for e in data]

    def get_event(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> Event:
        return _event(
            self._request("GET", f"{self._ns(namespace)}/events/{self._id(id, 'event id')}")
        )

    def path(self, anchor: str, *, namespace: str = DEFAULT_NAMESPACE) -> list[Event]:
        where = f"{self._ns(namespace)}/events/{self._id(anchor, 'event id')}/path"
        return [_event(e) for e in self._pages(where)]

    def set_head(self, event_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        self._request(
            "POST", self._ns(namespace) + "/heads", body={"event": event_id}, repeatable=True
        )

    def head(self, tree: str, *, namespace: str = DEFAULT_NAMESPACE) -> str | None:
        data = self._request("GET", f"{self._ns(namespace)}/heads/{self._id(tree, 'tree')}")
        return data["head"]  # type: ignore[no-any-return]

    def heads(self, *, namespace: str = DEFAULT_NAMESPACE) -> dict[str, str]:
        return dict(self._request("GET", self._ns(namespace) + "/heads")["heads"])

    def import_(
        self,
        plan: ImportPlan,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        progress: ProgressCallback | None = None,
    ) -> ImportSummary:
        """Apply an import plan through this client: one ``add_events`` per conversation."""
        return plan.apply(self, namespace=namespace, progress=progress)  # type: ignore[arg-type]

    def import_file(
        self,
        path: str,
        *,
        format: str = "auto",
        namespace: str = DEFAULT_NAMESPACE,
    ) -> ImportSummary:
        """Upload an export file; the server parses and applies it (``branchmem import``)."""
        from pathlib import Path

        from .importers import ImportSummary

        source = Path(path)
        data = self._request(
            "POST",
            self._ns(namespace) + "/import",
            params={"format": format, "filename": source.name},
            content=source.read_bytes(),
            headers={"Content-Type": "application/octet-stream"},
        )
        data["source"] = str(source)
        return ImportSummary(**data)

    # -- records -----------------------------------------------------------------------
    def add_record(
        self,
        id: str,
        *,
        sources: Iterable[str] | None,
        content: str = "",
        kind: str = "fact",
        key: str | None = None,
        scope: str | None = None,
        meta: Mapping[str, Any] | None = None,
        supersedes: Iterable[str] = (),
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record:
        if isinstance(supersedes, str):
            raise InvalidInput("supersedes must be a list of record ids")
        body = {
            "id": id, "sources": self._sources(sources, id), "content": content, "kind": kind,
            "key": key, "scope": scope, "meta": self._meta(meta), "supersedes": list(supersedes),
        }  # fmt: skip
        repeatable = not body["supersedes"]
        data = self._request(
            "POST", self._ns(namespace) + "/records", body=body, repeatable=repeatable
        )
        return _record(data)

    @staticmethod
    def _sources(sources: object, what: object) -> Any:
        if sources is None:
            return None
        if isinstance(sources, str):
            raise InvalidInput(f"record {what!r}: sources must be a list of ids, not a string")
        if isinstance(sources, Iterable):
            return list(sources)
        return sources

    @staticmethod
    def _meta(meta: object) -> Any:
        return dict(meta) if isinstance(meta, Mapping) else meta

    def get_record(
        self, id: str, *, revision: int | None = None, namespace: str = DEFAULT_NAMESPACE
    ) -> Record:
        where = f"{self._ns(namespace)}/records/{self._id(id, 'record id')}"
        return _record(self._request("GET", where, params={"revision": revision}))

    def revise(
        self,
        id: str,
        *,
        content: str,
        sources: Iterable[str] | None,
        meta: Mapping[str, Any] | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record:
        where = f"{self._ns(namespace)}/records/{self._id(id, 'record id')}/revisions"
        body = {"content": content, "sources": self._sources(sources, id), "meta": self._meta(meta)}
        return _record(self._request("POST", where, body=body))

    # -- invalidation and corrections ---------------------------------------------------
    def supersede(self, new_id: str, old_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        body = {"new_id": new_id, "old_id": old_id}
        self._request("POST", self._ns(namespace) + "/supersede", body=body)

    def retract(
        self,
        id: str,
        *,
        sources: Iterable[str] | None,
        targets: Iterable[str] = (),
        key: str | None = None,
        key_scope: str | None = None,
        scope: str = "branch",
        reason: str = "",
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record:
        if isinstance(targets, str):
            raise InvalidInput("targets must be a list of record ids")
        body = {
            "id": id, "sources": self._sources(sources, id), "targets": list(targets),
            "key": key, "key_scope": key_scope, "scope": scope, "reason": reason,
        }  # fmt: skip
        return _record(self._request("POST", self._ns(namespace) + "/retractions", body=body))

    def _item(self, namespace: str, item_id: str, action: str) -> str:
        return f"{self._ns(namespace)}/items/{self._id(item_id, 'id')}/{action}"

    def withdraw(self, id: str, *, reason: str = "", namespace: str = DEFAULT_NAMESPACE) -> None:
        self._request(
            "POST", self._item(namespace, id, "withdraw"), body={"reason": reason},
            repeatable=True,
        )  # fmt: skip

    def restore(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        self._request("POST", self._item(namespace, id, "restore"), body={}, repeatable=True)

    def erase(self, id: str, *, reason: str = "", namespace: str = DEFAULT_NAMESPACE) -> set[str]:
        data = self._request("POST", self._item(namespace, id, "erase"), body={"reason": reason})
        return set(data["erased"])

    def dependents(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> set[str]:
        return set(self._pages(self._item(namespace, id, "dependents")))

    # -- views -------------------------------------------------------------------------
    def visible(
        self,
        anchor: str | None,
        *,
        kind: str | None = None,
        key: str | None = None,
        scope: str | None = None,
        cross_tree: bool = False,
        mode: str | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Record]:
        params = {
            "anchor": anchor, "kind": kind, "key": key, "scope": scope,
            "cross_tree": _flag(cross_tree), "mode": self._mode(mode),
            "include_superseded": _flag(include_superseded),
            "include_stale": _flag(include_stale),
        }  # fmt: skip
        return [_record(r) for r in self._pages(self._ns(namespace) + "/visible", params)]

    def explain(
        self,
        record_id: str,
        anchor: str | None,
        *,
        cross_tree: bool = False,
        mode: str | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Explanation:
        where = f"{self._ns(namespace)}/records/{self._id(record_id, 'record id')}/explain"
        params = {
            "anchor": anchor, "cross_tree": _flag(cross_tree), "mode": self._mode(mode),
            "include_superseded": _flag(include_superseded),
            "include_stale": _flag(include_stale),
        }  # fmt: skip
        return Explanation(**self._request("GET", where, params=params))

    def explanations(
        self,
        anchor: str | None,
        *,
        cross_tree: bool = False,
        mode: str | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Explanation]:
        """``explain`` for every record of the namespace at once (what ``/ui`` shows)."""
        params = {
            "anchor": anchor, "cross_tree": _flag(cross_tree), "mode": self._mode(mode),
            "include_superseded": _flag(include_superseded),
            "include_stale": _flag(include_stale),
        }  # fmt: skip
        views = self._pages(self._ns(namespace) + "/explanations", params)
        return [Explanation(**view["explanation"]) for view in views]

    def is_visible(self, record_id: str, anchor: str | None, **options: Any) -> bool:
        return self.explain(record_id, anchor, **options).visible

    def current(
        self,
        key: str,
        anchor: str | None,
        *,
        scope: str | None = None,
        cross_tree: bool = False,
        mode: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record | None:
        check_id(key, "key")
        params = {
            "key": key, "anchor": anchor, "scope": scope, "cross_tree": _flag(cross_tree),
            "mode": self._mode(mode),
        }  # fmt: skip
        data = self._request("GET", self._ns(namespace) + "/current", params=params)
        return None if data is None else _record(data)

    def stale(
        self,
        anchor: str | None,
        *,
        cross_tree: bool = False,
        mode: str | None = None,
        include_superseded: bool = False,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Record]:
        params = {
            "anchor": anchor, "cross_tree": _flag(cross_tree), "mode": self._mode(mode),
            "include_superseded": _flag(include_superseded),
        }  # fmt: skip
        return [_record(r) for r in self._pages(self._ns(namespace) + "/stale", params)]

    # -- retrieval and deliveries -------------------------------------------------------
    def search(
        self,
        query: str,
        anchor: str | None,
        *,
        k: int = 10,
        kind: str | None = None,
        key: str | None = None,
        scope: str | None = None,
        cross_tree: bool = False,
        mode: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Hit]:
        if not isinstance(query, str):
            raise InvalidInput(f"query must be a string, got {type(query).__name__}")
        params = {
            "query": query, "anchor": anchor, "k": k, "kind": kind, "key": key, "scope": scope,
            "cross_tree": _flag(cross_tree), "mode": self._mode(mode),
        }  # fmt: skip
        data = self._request("GET", self._ns(namespace) + "/search", params=params)
        return [
            Hit(record=_record(h["record"]), score=float(h["score"]), why=h["why"]) for h in data
        ]

    def context(
        self,
        anchor: str | None,
        *,
        query: str | None = None,
        budget: int | None = None,
        session: str | None = None,
        cross_tree: bool = False,
        mode: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Context:
        body = {
            "anchor": anchor, "query": query, "budget": budget, "session": session,
            "cross_tree": cross_tree, "mode": self._mode(mode),
        }  # fmt: skip
        data = self._request("POST", self._ns(namespace) + "/context", body=body)
        return Context(
            text=data["text"], items=_items(data["items"]), anchor=data["anchor"],
            tokens=int(data["tokens"]), events=tuple(data["events"]),
        )  # fmt: skip

    def deliveries(self, session: str, *, namespace: str = DEFAULT_NAMESPACE) -> list[Delivery]:
        check_id(session, "session")
        found = self._pages(self._ns(namespace) + "/deliveries", {"session": session})
        return [
            Delivery(d["session"], int(d["seq"]), d["anchor"], float(d["time"]), _items(d["items"]))
            for d in found
        ]

    def stale_deliveries(
        self, session: str, anchor: str | None = None, *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[StaleDelivery]:
        check_id(session, "session")
        params = {"session": session, "anchor": anchor}
        return [
            StaleDelivery(**d)
            for d in self._pages(self._ns(namespace) + "/stale-deliveries", params)
        ]

    def repair_queue(self, *, namespace: str = DEFAULT_NAMESPACE) -> list[RepairItem]:
        return [RepairItem(**item) for item in self._pages(self._ns(namespace) + "/repair-queue")]

    # -- reporting ---------------------------------------------------------------------
    def report(self, *, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        """The serving worker's decision counts and the store's gauges."""
        return dict(self._request("GET", self._ns(namespace) + "/report"))

    def audit(
        self,
        *,
        id: str | None = None,
        op: str | None = None,
        since: float | None = None,
        until: float | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[AuditEntry]:
        params = {"id": id, "op": op, "since": since, "until": until}
        return [
            AuditEntry(**{**e, "ids": tuple(e["ids"])})
            for e in self._pages(self._ns(namespace) + "/audit", params)
        ]

    def history(
        self, record_id: str, *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[dict[str, Any]]:
        where = f"{self._ns(namespace)}/records/{self._id(record_id, 'record id')}/history"
        return list(self._pages(where))
