"""The plain-HTTP client (anchor.chain.wire) held to http.client, the parser it replaces: on answers
generated from HTTP's grammar both accept and agree on the status, the headers and the body; on
those answers mutated byte by byte, whatever ours accepts http.client accepts too, and they agree.
Hostile answers (endless lines, endless headers, a short body) are refused with `NotHttp`, the kind of
failure the retry loop handles, never a hang or an unbounded read."""

from __future__ import annotations

import http.client
import io
import socket
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anchor.chain import wire


class Trickle:
    """A socket whose `recv` hands out `data` in pieces of at most `piece` bytes (to cross every buffer
    boundary), and whose `makefile` gives http.client the same bytes."""

    def __init__(self, data: bytes, piece: int) -> None:
        self.data, self.piece, self.at = data, piece, 0

    def settimeout(self, _: float) -> None:
        pass

    def recv(self, size: int) -> bytes:
        out = self.data[self.at : self.at + min(size, self.piece)]
        self.at += len(out)
        return out

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self.data))


def ours(data: bytes, piece: int = 7, limit: int = 1 << 20) -> tuple[wire.Answer, bytes, bool]:
    return wire.read_answer(wire.Stream(Trickle(data, piece)), limit)  # type: ignore[arg-type]


def theirs(data: bytes) -> tuple[http.client.HTTPResponse, bytes]:
    response = http.client.HTTPResponse(Trickle(data, 1 << 20), method="POST")  # type: ignore[arg-type]
    response.begin()
    return response, response.read()


NAMES = st.sampled_from(["Content-Type", "Connection", "Retry-After", "Server", "X-Trace", "Keep-Alive", "Date"])
VALUES = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=20).map(lambda v: v.replace(":", ""))


@st.composite
def answers(draw: st.DrawFn) -> bytes:
    """One answer as HTTP's grammar allows it: an optional 100 Continue, a status line, headers, and a
    body framed by Content-Length, by chunks (with extensions and a trailer) or by the connection's end."""
    version = draw(st.sampled_from([b"1.1", b"1.0"]))
    status = draw(st.sampled_from([200, 201, 204, 301, 304, 400, 401, 429, 500, 503]))
    end = draw(st.sampled_from([b"\r\n", b"\n"]))
    body = draw(st.binary(max_size=300))
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    lines = [b"HTTP/" + version + b" " + str(status).encode() + draw(st.sampled_from([b" OK", b"", b" Not Found"]))]
    for name, value in draw(st.lists(st.tuples(NAMES, VALUES), max_size=6)):
        lines.append(name.encode() + b":" + draw(st.sampled_from([b" ", b"", b"\t "])) + value.encode())
    if status in (204, 304):
        framing, body = "none", b""
    if framing == "length":
        lines.append(b"Content-Length: " + str(len(body)).encode())
        framed = body
    elif framing == "chunked":
        lines.append(b"Transfer-Encoding: " + draw(st.sampled_from([b"chunked", b"Chunked"])))
        cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=4)))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True) if b > a]
        framed = b"".join(
            format(len(p), draw(st.sampled_from(["x", "X"]))).encode()
            + draw(st.sampled_from([b"", b";ext=1"]))
            + end
            + p
            + b"\r\n"
            for p in pieces
        )
        framed += b"0" + end + draw(st.sampled_from([b"", b"Trailer-Field: 1" + end])) + end
    else:
        framed = body
    head = draw(st.sampled_from([b"", b"HTTP/1.1 100 Continue" + end + end]))
    return head + end.join(lines) + end + end + framed


def agree(data: bytes, piece: int) -> None:
    answer, body, closes = ours(data, piece)
    response, their_body = theirs(data)
    assert answer.status == response.status
    assert body == their_body
    for name, values in answer.headers.items():
        assert [v.rstrip(" \t") for v in response.msg.get_all(name) or []] == values, name
    assert closes or not response.will_close, "http.client would close a connection ours keeps"


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answers(), st.integers(1, 64))
def test_on_answers_from_the_grammar_both_parsers_accept_and_agree(data: bytes, piece: int) -> None:
    agree(data, piece)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    answers(),
    st.lists(st.tuples(st.integers(0, 10_000), st.binary(max_size=3)), min_size=1, max_size=3),
    st.integers(1, 64),
)
def test_whatever_ours_accepts_of_a_mutated_answer_http_client_accepts_and_reads_alike(
    data: bytes, edits: list[tuple[int, bytes]], piece: int
) -> None:
    mutated = bytearray(data)
    for at, replacement in edits:
        at %= len(mutated) + 1
        mutated[at : at + len(replacement)] = replacement
    try:
        ours(bytes(mutated), piece)
    except wire.NotHttp:
        return
    except wire.NoAnswer:  # the bytes ended before a final answer: http.client finds none either
        with pytest.raises(http.client.HTTPException):
            theirs(bytes(mutated))
        return
    agree(bytes(mutated), piece)


def test_an_answer_longer_than_the_limit_is_cut_and_its_connection_not_reused() -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n5\r\nfghij\r\n0\r\n\r\n"
    sized = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcdefghij"
    for data in (chunked, sized):
        _, body, closes = ours(data, limit=7)
        assert (body, closes) == (b"abcdefg", True)
        _, body, closes = ours(data, limit=10)
        assert (body, closes) == (b"abcdefghij", False)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (b"HTTP/1.1 200 OK\r\n" + b"X: " + b"a" * 70_000 + b"\r\n\r\n", "longer than"),
        (b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * 101 + b"\r\n", "more than 100 header lines"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "ended after 3 of its 10 bytes"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "not one decimal number"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "not one decimal number"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "other than chunked"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nabcde\r\n0\r\n\r\n", "hex digits"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "ended after 2 of its 5 bytes"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\nab", "ended after 2 of its"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", "not one decimal number"),
        (b"HTTP/1.1 200 OK\r\nX: 1\r\n folded\r\n\r\n", "on one line"),
        (b"SSH-2.0-OpenSSH_9.2\r\n", "status line"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", "status line"),
    ],
)
def test_a_hostile_or_broken_answer_is_not_http_and_says_why(answer: bytes, said: str) -> None:
    with pytest.raises(wire.NotHttp, match=said):
        ours(answer)


def test_a_closed_connection_before_any_byte_is_no_answer_which_the_caller_retries_on_a_fresh_one() -> None:
    with pytest.raises(wire.NoAnswer):
        ours(b"")
    assert issubclass(wire.NoAnswer, ConnectionResetError) and issubclass(wire.NotHttp, ConnectionError)


def test_a_server_that_drips_its_answer_is_cut_at_the_exchanges_deadline() -> None:
    import time

    left, right = socket.socketpair()
    left.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nab")
    stream = wire.Stream(right)
    stream.until = time.monotonic() + 0.3
    try:
        with pytest.raises(TimeoutError):
            wire.read_answer(stream, 1 << 20)
    finally:
        left.close()
        right.close()


def test_a_request_is_written_as_http_client_writes_it_and_a_line_break_in_it_is_refused() -> None:
    sent = wire.request_bytes("POST", "127.0.0.1", 8545, "/", b"{}", {"Content-Type": "application/json"})
    assert sent == (
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1:8545\r\nAccept-Encoding: identity\r\n"
        b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    )
    assert wire.request_bytes("GET", "::1", 80, "/v1/info", None, {}).startswith(
        b"GET /v1/info HTTP/1.1\r\nHost: [::1]\r\n"
    )
    for target, headers in (("/a b", {}), ("/a\r\nX: 1", {}), ("/", {"X": "1\r\nY: 2"}), ("/", {"X\r\nY": "1"})):
        with pytest.raises(ValueError):
            wire.request_bytes("GET", "h", 80, target, None, headers)


def test_a_kept_alive_connection_carries_many_exchanges_with_a_real_server() -> None:
    """Against the standard library's own server: one connection, three answers, bodies intact."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from anchor.chain.rpc import KeptAlive

    peers: set[tuple[str, int]] = set()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            peers.add(self.client_address)
            body = self.rfile.read(int(self.headers["Content-Length"]))[::-1]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = KeptAlive("127.0.0.1", server.server_address[1], False, 5.0)
    try:
        for word in (b"abc", b"", b"x" * 100_000):
            status, _, content = client.exchange("POST", "/", word, {})
            assert (status, content) == (200, word[::-1])
        assert len(peers) == 1
    finally:
        client.drop()
        server.shutdown()
        server.server_close()
