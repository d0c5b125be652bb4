"""HTTP/1.1 over a plain socket we hold: what `anchor.chain.rpc.KeptAlive` sends through for an
`http://` origin (a local node, a node or service on a private network).

Why not http.client: importing it imports ssl and email (for its header parser), 9 to 13 ms of every
`anchor verify` whose chain reads take a few. An `https://` origin still goes through http.client,
which needs ssl anyway.

What it accepts is a subset of what http.client accepts, and where both accept they agree on the
status, the headers and the body: tests/chain/test_wire.py feeds both the same generated and mutated
answers. The other side may be hostile (a lying RPC endpoint), so everything is bounded: a status,
header or chunk-size line of at most `MAX_LINE` bytes, at most `MAX_HEADERS` header lines, a body of
at most the caller's limit; a line folded over two, a length that is not decimal digits, two lengths
that differ, a transfer coding other than chunked, a chunk size that is not hex digits: `NotHttp`.
Every read waits at most until the exchange's deadline.
"""

from __future__ import annotations

import re
import socket
import time
from typing import Protocol

MAX_LINE = 65536
"""Longest status, header or chunk-size line (http.client's own bound)."""
MAX_HEADERS = 100
"""Most header lines in one answer (http.client's own bound)."""

_STATUS = re.compile(rb"HTTP/(1\.[01]) ([1-9][0-9][0-9])(?: [^\r\n]*)?\r?\n")
_HEADER = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([^\r\n]*?)[ \t]*\r?\n")
_CHUNK = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r?\n")
_UNSAFE = re.compile(r"[\x00-\x20\x7f]")
_UNSAFE_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


class NotHttp(ConnectionError):
    """The other side's bytes are not an HTTP/1.1 answer we accept: the exchange failed, as a reset would."""


class NoAnswer(ConnectionResetError):
    """The other side closed the connection before the first byte of an answer (an idle kept-alive
    connection the server dropped looks like this: the caller retries once on a fresh one)."""


class Headers(Protocol):
    """What callers read of an answer besides its status and body (http.client's answers have it too)."""

    def getheader(self, name: str, default: str) -> str: ...


class Answer:
    """An answer's status line and headers."""

    def __init__(self, status: int, version: bytes, headers: dict[str, list[str]]) -> None:
        self.status, self.version, self.headers = status, version, headers

    def getheader(self, name: str, default: str = "") -> str:
        """Every value of the header `name` joined by ", ", as http.client gives it; `default` if absent."""
        values = self.headers.get(name.lower())
        return ", ".join(values) if values else default

    def closes(self) -> bool:
        """The server will close the connection after this answer, so it is not reused: whenever
        http.client would say so (its words: "close" anywhere in Connection for HTTP/1.1; for 1.0 unless
        Keep-Alive is sent or named), and for a Connection header repeated, whatever it says."""
        said = self.headers.get("connection", [])
        if len(said) > 1:
            return True
        words = said[0].lower() if said else ""
        if self.version == b"1.0":
            return "keep-alive" not in words and not self.headers.get("keep-alive", [""])[0]
        return "close" in words


class Stream:
    """A connected socket with a read buffer; every read waits at most until `until` (monotonic)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.until = float("inf")

    def _fill(self) -> bool:
        left = self.until - time.monotonic()
        if left <= 0:
            raise TimeoutError("no whole answer before the exchange's deadline")
        self.sock.settimeout(left)
        data = self.sock.recv(1 << 16)
        self.buffer += data
        return bool(data)

    def line(self) -> bytes:
        """The next line, its end included; what is left before the end of the stream if it has none."""
        start = 0
        while (end := self.buffer.find(b"\n", start)) < 0:
            if len(self.buffer) > MAX_LINE:
                raise NotHttp(f"a line longer than {MAX_LINE} bytes")
            start = len(self.buffer)
            if not self._fill():
                end = len(self.buffer) - 1
                break
        if end >= MAX_LINE:
            raise NotHttp(f"a line longer than {MAX_LINE} bytes")
        out = bytes(self.buffer[: end + 1])
        del self.buffer[: end + 1]
        return out

    def take(self, count: int) -> bytes:
        """Up to `count` bytes; fewer only at the end of the stream."""
        while len(self.buffer) < count and self._fill():
            pass
        with memoryview(self.buffer) as view:  # one copy of the body, not a slice and then a copy of it
            out = bytes(view[:count])
        del self.buffer[:count]
        return out

    def close(self) -> None:
        self.sock.close()


def connect(host: str, port: int, until: float) -> Stream:
    """A connection to (`host`, `port`) made before `until`, Nagle off (a request is one write)."""
    address = host.encode("ascii") if host.isascii() else host.encode("idna")  # bytes skip the idna codec's import
    sock = socket.create_connection((address, port), max(0.001, until - time.monotonic()))  # type: ignore[arg-type]
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return Stream(sock)


def request_bytes(method: str, host: str, port: int, target: str, body: bytes | None, headers: dict[str, str]) -> bytes:
    """The request as http.client writes it: request line, Host (with the port only when it is not 80),
    `Accept-Encoding: identity`, the caller's headers, a Content-Length for a body (or for a POST without
    one). A control character or space in the target, or a line break in a header: ValueError."""
    if _UNSAFE.search(target) or not target.startswith("/"):
        raise ValueError(f"an HTTP target must be a path without spaces or control characters: {target!r}")
    name = f"[{host}]" if ":" in host else host
    lines = [f"{method} {target} HTTP/1.1", f"Host: {name}" if port == 80 else f"Host: {name}:{port}"]
    lines.append("Accept-Encoding: identity")
    for key, value in headers.items():
        if _UNSAFE.search(key) or ":" in key or _UNSAFE_VALUE.search(value):
            raise ValueError(f"an HTTP header must be one line: {key!r}")
        lines.append(f"{key}: {value}")
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body or b'')}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + (body or b"")


def read_answer(stream: Stream, limit: int) -> tuple[Answer, bytes, bool]:
    """(status line and headers, at most `limit` bytes of the body, whether the connection must be closed
    after it). An informational 100 before the answer is skipped, as http.client does."""
    while True:
        line = stream.line()
        if not line:
            raise NoAnswer("the server closed the connection without an HTTP answer")
        matched = _STATUS.fullmatch(line)
        if matched is None:
            raise NotHttp("the answer does not begin with an HTTP/1.x status line")
        answer = Answer(int(matched.group(2)), matched.group(1), _headers(stream))
        if answer.status != 100:
            break
    codings = answer.headers.get("transfer-encoding")
    lengths = answer.headers.get("content-length")
    closes = answer.closes()
    if codings is not None and [c.lower() for c in codings] != ["chunked"]:
        raise NotHttp(f"a transfer coding other than chunked: {', '.join(codings)[:100]}")
    if answer.status in (204, 304) or answer.status < 200:
        return answer, b"", closes
    if codings is not None:
        body, complete = _chunked(stream, limit)
        return answer, body, closes or not complete
    if lengths is not None:
        if len(set(lengths)) != 1 or not lengths[0].isascii() or not lengths[0].isdigit() or len(lengths[0]) > 18:
            raise NotHttp(f"a Content-Length that is not one decimal number: {', '.join(lengths)[:100]}")
        length = int(lengths[0])
        body = stream.take(min(length, limit + 1))
        if len(body) < min(length, limit + 1):
            raise NotHttp(f"the answer ended after {len(body)} of its {length} bytes")
        return answer, body[:limit], closes or length > limit
    body = stream.take(limit + 1)  # neither: the body ends where the connection does
    return answer, body[:limit], True


def _headers(stream: Stream) -> dict[str, list[str]]:
    headers: dict[str, list[str]] = {}
    for _ in range(MAX_HEADERS + 1):
        line = stream.line()
        if line in (b"\r\n", b"\n"):
            return headers
        matched = _HEADER.fullmatch(line)
        if matched is None:
            raise NotHttp("a header line that is not `name: value` on one line")
        headers.setdefault(matched.group(1).decode("ascii").lower(), []).append(matched.group(2).decode("latin-1"))
    raise NotHttp(f"more than {MAX_HEADERS} header lines")


def _chunked(stream: Stream, limit: int) -> tuple[bytes, bool]:
    """(at most `limit` bytes of a chunked body, whether it was read to its end). Held in one growing
    buffer: a list of tiny chunks cost ten times their bytes."""
    body = bytearray()
    while True:
        matched = _CHUNK.fullmatch(stream.line())
        if matched is None:
            raise NotHttp("a chunk size that is not hex digits on a line of its own")
        size = int(matched.group(1), 16)
        if size == 0:
            break
        wanted = min(size, limit + 1 - len(body))
        chunk = stream.take(wanted)
        if len(chunk) < wanted:
            raise NotHttp(f"a chunk that ended after {len(chunk)} of its {size} bytes")
        body += chunk
        if len(body) > limit:
            return bytes(body[:limit]), False
        if stream.take(2) != b"\r\n":  # exactly CRLF, as http.client reads it
            raise NotHttp("a chunk not followed by CRLF")
    _headers(stream)  # the trailer, read and dropped
    return bytes(body), True
