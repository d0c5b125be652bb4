"""An HTTP JSON-RPC proxy on 127.0.0.1 whose faults the test controls: 5xx answers, stalls, refusals."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FaultyProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.mode = "ok"  # ok | 503 | stall
        self.methods: set[str] | None = None  # None: every method
        self.fail_next = 0  # with mode ok: answer 503 to this many requests first
        self.faults = 0
        self.server: ThreadingHTTPServer | None = None
        self.port = 0
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                method = json.loads(body).get("method") if body.startswith(b"{") else None
                targeted = proxy.methods is None or method in proxy.methods
                if targeted and (proxy.mode == "503" or proxy.fail_next > 0):
                    proxy.fail_next = max(0, proxy.fail_next - 1)
                    proxy.faults += 1
                    self.send_response(503)
                    self.end_headers()
                    return
                if targeted and proxy.mode == "stall":
                    proxy.faults += 1
                    time.sleep(3)
                request = urllib.request.Request(proxy.upstream, body, {"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback upstream
                    data = answer.read()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Close the listening socket: connections are refused until `start()`."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
