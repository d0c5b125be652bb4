"""A server on 127.0.0.1 that hands each connection to a test's own code: how tests pose as a hostile
RPC endpoint or service at the byte level, below any HTTP library that would tidy what they send."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def loopback(handle: Callable[[socket.socket, threading.Event], None]) -> Iterator[str]:
    """Yields the server's URL; each connection, one at a time, goes to `handle(connection, stop)`
    (`stop` is set when the block ends: a handler that waits should wait on it). A handler's OSError
    ends that connection only. The server stops, and its thread ends, when the block ends."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    handle(conn, stop)
                except OSError:
                    continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=10)
        server.close()
