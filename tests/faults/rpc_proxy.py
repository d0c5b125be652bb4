"""An HTTP JSON-RPC proxy on 127.0.0.1 whose faults the test controls: 5xx answers, stalls, refusals,
and the habits of hosted providers: `eth_getLogs` capped at a block range (the JSON-RPC error Infura
and Alchemy send), throttling at random (HTTP 429, or Infura's JSON-RPC rate-limit error), and lies
(an `eth_call`, `eth_getBlockByNumber`, receipt or `eth_getLogs` result rewritten)."""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _block(tag: str) -> int:
    """A block parameter as a number; a tag (latest, pending) counts as the far future, as a capped
    provider treats `fromBlock: 0, toBlock: latest`."""
    return int(tag, 16) if tag.startswith("0x") else 1 << 40


class FaultyProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.mode = "ok"  # ok | 503 | stall | 401 | 403
        self.methods: set[str] | None = None  # None: every method
        self.fail_next = 0  # with mode ok: answer 503 to this many requests first
        self.faults = 0
        self.log_range_cap: int | None = None  # eth_getLogs spanning more blocks gets a JSON-RPC error
        self.unsupported: set[str] = set()  # methods this node does not have (JSON-RPC -32601, as geth says it)
        self.throttle = 0.0  # this fraction of requests (seeded, reproducible) gets HTTP 429
        self.throttle_as = "http"  # or "jsonrpc": HTTP 200 with Infura's rate-limit error (code -32005)
        self.throttle_next = 0  # throttle this many (targeted) requests first, whatever `throttle` says
        self.random = random.Random(0x429)
        self.lie: Callable[[dict[str, Any], Any], Any] | None = None  # (request, true result) -> result sent
        self.lie_block: Callable[[dict[str, Any], Any], Any] | None = None  # the same, for eth_getBlockByNumber
        self.lie_receipt: Callable[[dict[str, Any], Any], Any] | None = None  # for eth_getTransactionReceipt
        self.lie_logs: Callable[[dict[str, Any], Any], Any] | None = None  # for eth_getLogs
        self.calls: Counter[str] = Counter()  # every request, by method (each call of a batch counted)
        self.posts = 0  # HTTP requests: a JSON-RPC batch is one
        self.batches = True  # False: a batch is answered as a provider that takes none answers it
        self.mangle_batch: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = (
            None  # a batch's answers, rewritten
        )
        self.served: Counter[str] = Counter()  # requests answered from upstream (not faulted)
        self.server: ThreadingHTTPServer | None = None
        self.port = 0
        self.start()

    def lies_about(self, request: dict[str, Any]) -> Callable[[dict[str, Any], Any], Any] | None:
        """The lie set for the request's method, if any."""
        return {
            "eth_call": self.lie,
            "eth_getBlockByNumber": self.lie_block,
            "eth_getLogs": self.lie_logs,
            "eth_getTransactionReceipt": self.lie_receipt,
        }.get(str(request.get("method")))

    def lied(self, request: dict[str, Any], answered: Any) -> Any:
        """`answered`, the upstream's answer to `request`, with its result rewritten by the lie set for
        the request's method, if any."""
        lie = self.lies_about(request)
        if lie is not None and isinstance(answered, dict) and "result" in answered:
            answered["result"] = lie(request, answered["result"])
        return answered

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_OPTIONS(self) -> None:  # noqa: N802 - a browser's CORS preflight, answered as anvil does
                self.send_response(204)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Access-Control-Allow-Methods", "POST")
                self.send_header("Access-Control-Allow-Headers", "content-type")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                proxy.posts += 1
                if body.startswith(b"["):
                    self._batch(json.loads(body))
                    return
                request_json = json.loads(body) if body.startswith(b"{") else {}
                method = request_json.get("method")
                proxy.calls[str(method)] += 1
                targeted = proxy.methods is None or method in proxy.methods
                if targeted and (proxy.throttle_next > 0 or proxy.throttle and proxy.random.random() < proxy.throttle):
                    proxy.throttle_next = max(0, proxy.throttle_next - 1)
                    proxy.faults += 1
                    if proxy.throttle_as == "jsonrpc":
                        self._json(
                            {
                                "jsonrpc": "2.0",
                                "id": request_json.get("id"),
                                "error": {
                                    "code": -32005,
                                    "message": "project ID request rate exceeded",
                                },
                            }
                        )
                        return
                    self.send_response(429)
                    self.send_header("Retry-After", "0")
                    self.end_headers()
                    return
                if method in proxy.unsupported:
                    self._json(
                        {
                            "jsonrpc": "2.0",
                            "id": request_json.get("id"),
                            "error": {
                                "code": -32601,
                                "message": f"the method {method} does not exist/is not available",
                            },
                        }
                    )
                    return
                if method == "eth_getLogs" and proxy.log_range_cap is not None:
                    query = request_json["params"][0]
                    span = _block(query.get("toBlock", "latest")) - _block(query.get("fromBlock", "0x0")) + 1
                    if span > proxy.log_range_cap:
                        proxy.faults += 1
                        self._json(
                            {
                                "jsonrpc": "2.0",
                                "id": request_json.get("id"),
                                "error": {
                                    "code": -32005,
                                    "message": f"query exceeds max block range {proxy.log_range_cap}",
                                },
                            }
                        )
                        return
                if targeted and proxy.mode in ("401", "403"):  # an expired key, a wrong project id
                    proxy.faults += 1
                    self.send_response(int(proxy.mode))
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": "invalid project id"}')
                    return
                if targeted and (proxy.mode == "503" or proxy.fail_next > 0):
                    proxy.fail_next = max(0, proxy.fail_next - 1)
                    proxy.faults += 1
                    self.send_response(503)
                    self.end_headers()
                    return
                if targeted and proxy.mode == "stall":
                    proxy.faults += 1
                    time.sleep(3)
                proxy.served[str(method)] += 1
                request = urllib.request.Request(proxy.upstream, body, {"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback upstream
                    data = answer.read()
                if proxy.lies_about(request_json):
                    data = json.dumps(proxy.lied(request_json, json.loads(data))).encode()
                self._send(data)

            def _batch(self, requests: list[dict[str, Any]]) -> None:
                """A batch: refused (as by a provider that takes none) while any fault is set, since the
                faults are per request; else each call counted, answered upstream and lied about alone."""
                faulty = proxy.mode != "ok" or proxy.fail_next or proxy.throttle or proxy.throttle_next
                if not proxy.batches or faulty or proxy.unsupported or proxy.log_range_cap is not None:
                    self._json({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no batches"}})
                    return
                for request_json in requests:
                    proxy.calls[str(request_json.get("method"))] += 1
                    proxy.served[str(request_json.get("method"))] += 1
                upstream = urllib.request.Request(
                    proxy.upstream, json.dumps(requests).encode(), {"Content-Type": "application/json"}
                )
                with urllib.request.urlopen(upstream, timeout=30) as answer:  # noqa: S310 - loopback upstream
                    answers = json.loads(answer.read())
                asked = {r.get("id"): r for r in requests}
                answers = [proxy.lied(asked.get(a.get("id"), {}), a) for a in answers]
                self._json(proxy.mangle_batch(answers) if proxy.mangle_batch else answers)

            def _json(self, value: object) -> None:
                self._send(json.dumps(value).encode())

            def _send(self, data: bytes) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Access-Control-Allow-Origin", "*")  # a page may read it, as it reads anvil
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
