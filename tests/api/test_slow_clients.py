"""Slow clients against `anchor serve` itself: half-sent headers and half-sent
bodies held connections open for as long as the client liked, and enough of them refused everyone.
The header deadline, the connection cap (oldest header-waiting connection closed first) and the body
deadline are the service's own (api/protocol.py, api/limits.py), not a proxy's."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api_server import wait_for_health
from tests.cli import ANCHOR_BIN
from tests.conftest import Chain, free_port

pytestmark = pytest.mark.chain


@contextlib.contextmanager
def served(chain: Chain, **extra: str) -> Iterator[str]:
    """`anchor serve` in a process group of its own; stopped by that group."""
    port = free_port()
    env = {**chain.env(), "ANCHOR_API_FLUSH": "0", **extra}
    log = open(chain.data_dir / f"serve-{port}.log", "wb")  # noqa: SIM115 - the child owns it
    server = subprocess.Popen(
        [str(ANCHOR_BIN), "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def _slow(port: int, data: bytes) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn.sendall(data)
    return conn


def _closed(conn: socket.socket, within_s: float) -> bytes | None:
    """What the server sent before closing, or None if it kept the connection open that long."""
    conn.settimeout(within_s)
    data = b""
    try:
        while chunk := conn.recv(4096):
            data += chunk
    except TimeoutError:
        return None
    return data


def test_slow_headers_are_cut_off_and_a_flood_of_them_does_not_lock_out_health(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    fresh_chain.cli("deploy", check=True)
    limits = {"ANCHOR_API_HEADER_TIMEOUT_S": "2", "ANCHOR_API_MAX_CONNECTIONS": "64", "ANCHOR_API_BODY_TIMEOUT_S": "2"}
    with served(fresh_chain, **limits) as url:
        port = int(url.rsplit(":", 1)[1])
        flood = [_slow(port, b"GET /health HTTP/1.1\r\nHost: x\r\n") for _ in range(300)]  # never finished
        started = time.monotonic()
        with urllib.request.urlopen(f"{url}/health", timeout=10) as answer:  # noqa: S310 - loopback
            assert answer.status == 200
        assert time.monotonic() - started < 10
        first = flood[0]
        assert _closed(first, 5.0) is not None  # cut off: by the cap or by the 2 s deadline
        for conn in flood:
            conn.close()

        head = b"POST /v1/verify/proof HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        body = _slow(port, head + b"Content-Length: 1000\r\n\r\n--b\r\n")  # 1,000 bytes promised, 5 sent
        said = _closed(body, 10.0)
        assert said is not None and said.startswith(b"HTTP/1.1 408"), said
        body.close()


def test_a_flood_of_half_sent_bodies_does_not_lock_out_health(fresh_chain: Chain) -> None:
    """Headers complete, a body promised and never sent: such connections were not evicted by the cap
    (only header-waiting ones were), so the cap's worth of them refused every new connection until
    the body deadline (30 s). Past the cap, the request whose body has waited longest without a byte
    is answered 408 and closed to make room."""
    fresh_chain.cli("deploy", check=True)
    limits = {"ANCHOR_API_MAX_CONNECTIONS": "64", "ANCHOR_API_BODY_TIMEOUT_S": "120"}
    with served(fresh_chain, **limits) as url:
        port = int(url.rsplit(":", 1)[1])
        head = b"POST /v1/verify/proof HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        flood = [_slow(port, head + b"Content-Length: 1000\r\n\r\n--b\r\n") for _ in range(300)]
        for _ in range(3):  # well inside the 120 s body deadline: only the cap can make room
            with urllib.request.urlopen(f"{url}/health", timeout=10) as answer:  # noqa: S310 - loopback
                assert answer.status == 200
        said = _closed(flood[0], 5.0)
        assert said is not None and (said == b"" or said.startswith(b"HTTP/1.1 408")), said
        for conn in flood:
            conn.close()
