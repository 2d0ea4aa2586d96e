"""Kept-alive HTTP/1.1 connections for ``Client``: the transport of a plain ``http://``
worker reached without a proxy.

What an agent's turn pays for: httpx spends ~0.5 ms of CPU on a call and the standard
library's ``http.client`` ~0.2 ms, most of it in the e-mail parser it reads headers with.
A worker's answer needs three headers read (its length, its framing, whether the connection
stays open), so a connection here writes the request in one piece and reads the answer by
its ``Content-Length`` (or its chunks, or to the end of the connection), as RFC 9112 says,
in 0.08-0.10 ms. Anything else (TLS, a proxy from the environment, a given ``transport``) goes
through httpx.
"""

from __future__ import annotations

import select
import socket
import threading
import urllib.request
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

from .errors import InvalidInput

MAX_HEAD: Final = 64 * 1024  # a status line and headers past this are not a worker's
_NO_BODY: Final = (204, 304)
_READ: Final = 64 * 1024  # one read of the socket; a large body is read in larger steps
_LARGE_READ: Final = 1024 * 1024


class Failed(Exception):
    """One attempt at one worker failed in the transport; ``error`` says how."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class Unsent(Failed):
    """The request never reached a server (no connection): safe to send to another."""


class Broken(Failed):
    """The connection failed once the request was on its way: it may have been applied."""


class ProtocolError(OSError):
    """The answer is not HTTP/1.1 as a worker writes it (the connection is closed)."""


def _header_text(name: str, value: str) -> str:
    """A header line; a value that would end the header early (CR, LF, NUL) is refused
    before anything is sent, as ``http.client`` refuses it."""
    if any(c in value or c in name for c in "\r\n\0") or not name or ":" in name:
        raise InvalidInput(f"header {name!r} holds a character HTTP cannot carry: {value!r}")
    return f"{name}: {value}\r\n"


class Connection:
    """One HTTP/1.1 connection to one worker, used by one caller at a time."""

    __slots__ = ("_buffer", "address", "host", "path", "sock", "timeout")

    def __init__(self, base: str, timeout: float) -> None:
        parts = urlsplit(base)
        self.address = (parts.hostname or "", parts.port or 80)
        self.host = parts.netloc  # brackets and port as given: what ``Host`` carries
        self.path = parts.path
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self._buffer = b""

    def connect(self) -> None:
        """Open the connection; an ``OSError`` means nothing was sent."""
        sock = socket.create_connection(self.address, timeout=self.timeout)
        # a request is one write and the answer is awaited: never hold a segment back
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock, self._buffer = sock, b""

    def idle_and_open(self) -> bool:
        """Nothing waits to be read: an idle connection with something to read was closed
        by the server (or holds garbage), and sending on it would fail after the request
        left."""
        return self.sock is not None and not select.select([self.sock], [], [], 0)[0]

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self._buffer = b""

    def head(
        self, method: str, target: str, body: bytes | None, headers: Mapping[str, str]
    ) -> bytes:
        """The request line and headers; ``target`` is the path below the worker's URL and
        its query, already quoted."""
        where = self.path + target
        if not (where.isascii() and where.isprintable()) or " " in where:
            raise InvalidInput(f"request target {where!r} holds a space or a control")
        text = [
            f"{method} {where} HTTP/1.1\r\n",
            f"Host: {self.host}\r\n",
            "Accept-Encoding: identity\r\n",
        ]
        text += [_header_text(name, value) for name, value in headers.items()]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            text.append(f"Content-Length: {len(body or b'')}\r\n")
        text.append("\r\n")
        return "".join(text).encode("latin-1")

    def exchange(self, request: bytes, method: str) -> tuple[int, bytes, bool]:
        """Send a whole request and read its answer: ``(status, body, kept)``, ``kept``
        False when the connection may not carry another request (it is then closed)."""
        assert self.sock is not None
        self.sock.sendall(request)
        while True:
            status, fields, version = self._read_head()
            if status >= 200 or status == 101:
                break  # an interim answer (100 Continue) is followed by the real one
        framing = fields.get("transfer-encoding", "").lower()
        connection = fields.get("connection", "").lower()
        kept = "close" not in connection and (version == "1.1" or "keep-alive" in connection)
        kept = kept and status != 101  # what follows a switch is not HTTP/1.1 any more
        if method == "HEAD" or status in _NO_BODY or status < 200:
            body = b""
        elif framing:
            if framing.rsplit(",", 1)[-1].strip() != "chunked":
                raise ProtocolError(f"a body framed by {framing!r}")
            body = self._read_chunks()
        elif "content-length" in fields:
            length = fields["content-length"]
            if not length.isdigit():
                raise ProtocolError(f"Content-Length {length!r}")
            body = self._read_exactly(int(length))
        else:  # neither: the body runs to the end of the connection
            body, kept = self._read_to_end(), False
        if self._buffer:  # bytes past the answer: nothing asked for them, so never reuse
            kept = False
        if not kept:
            self.close()
        return status, body, kept

    # -- reading -----------------------------------------------------------------------
    def _recv(self, size: int) -> bytes:
        assert self.sock is not None
        data = self.sock.recv(size)
        if not data:
            raise ProtocolError("the server closed the connection")
        return data

    def _fill(self) -> None:
        self._buffer += self._recv(_READ)

    def _read_head(self) -> tuple[int, dict[str, str], str]:
        while (end := self._buffer.find(b"\r\n\r\n")) < 0:
            if len(self._buffer) > MAX_HEAD:
                raise ProtocolError(f"no end of the headers in {MAX_HEAD} bytes")
            self._fill()
        head, self._buffer = self._buffer[:end], self._buffer[end + 4 :]
        line, *lines = head.decode("latin-1").split("\r\n")
        version, _, rest = line.partition(" ")
        code = rest[:3]
        if version not in ("HTTP/1.1", "HTTP/1.0") or not code.isdigit():
            raise ProtocolError(f"not an HTTP/1.x status line: {line[:80]!r}")
        fields: dict[str, str] = {}
        for text in lines:
            name, colon, value = text.partition(":")
            if not colon:
                raise ProtocolError(f"not a header line: {text[:80]!r}")
            name = name.strip().lower()
            value = value.strip()
            fields[name] = f"{fields[name]}, {value}" if name in fields else value
        return int(code), fields, version[5:]

    def _read_exactly(self, length: int) -> bytes:
        if len(self._buffer) < length:  # a large body: gathered, then joined once
            parts, have = [self._buffer], len(self._buffer)
            while have < length:
                data = self._recv(max(_READ, min(length - have, _LARGE_READ)))
                parts.append(data)
                have += len(data)
            self._buffer = b"".join(parts)
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        return body

    def _read_line(self) -> bytes:
        while (end := self._buffer.find(b"\r\n")) < 0:
            if len(self._buffer) > MAX_HEAD:
                raise ProtocolError("a chunk line without its end")
            self._fill()
        line, self._buffer = self._buffer[:end], self._buffer[end + 2 :]
        return line

    def _read_chunks(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size = self._read_line().split(b";", 1)[0].strip()
            try:
                length = int(size, 16)
            except ValueError:
                raise ProtocolError(f"chunk size {size[:20]!r}") from None
            if length == 0:
                while self._read_line():  # trailer fields, to the empty line
                    pass
                return b"".join(parts)
            parts.append(self._read_exactly(length))
            if self._read_exactly(2) != b"\r\n":
                raise ProtocolError("a chunk without its CRLF")

    def _read_to_end(self) -> bytes:
        assert self.sock is not None
        parts = [self._buffer]
        while data := self.sock.recv(_READ):
            parts.append(data)
        self._buffer = b""
        return b"".join(parts)


class Connections:
    """Kept-alive connections to the workers, a few per worker, shared by the threads of a
    ``Client`` (each connection by one at a time)."""

    def __init__(self, timeout: float, headers: Mapping[str, str]) -> None:
        self.timeout = timeout
        self.headers = dict(headers)
        self._idle: dict[str, list[Connection]] = {}
        self._lock = threading.Lock()
        self._closed = False

    @staticmethod
    def serves(url: str) -> bool:
        """Whether ``url`` is one this class speaks to the way httpx would."""
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname or parts.username or parts.password:
            return False
        proxies = urllib.request.getproxies()
        return "http" not in proxies and "all" not in proxies

    def send(
        self, base: str, method: str, target: str, body: bytes | None, headers: Mapping[str, str]
    ) -> tuple[int, bytes]:
        """``(status, body)`` of one request to ``base`` (a worker's URL) + ``target``."""
        connection = self._take(base)
        try:
            request = connection.head(method, target, body, {**self.headers, **headers})
        except InvalidInput:
            self._give(base, connection)
            raise
        if body:
            request += body
        if connection.sock is None:
            try:
                connection.connect()
            except OSError as error:  # refused, unreachable, timed out: nothing was sent
                connection.close()
                raise Unsent(error) from error
        try:
            status, content, kept = connection.exchange(request, method)
        except OSError as error:  # a ProtocolError is one
            connection.close()
            raise Broken(error) from error
        if kept:
            self._give(base, connection)
        return status, content

    def _take(self, base: str) -> Connection:
        while True:
            with self._lock:
                idle = self._idle.get(base)
                connection = idle.pop() if idle else None
            if connection is None:
                return Connection(base, self.timeout)
            if connection.idle_and_open():
                return connection
            connection.close()

    def _give(self, base: str, connection: Connection) -> None:
        with self._lock:
            if not self._closed:
                self._idle.setdefault(base, []).append(connection)
                return
        connection.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()
