"""One retry policy for every HTTP exchange we start: the JSON-RPC client (`Rpc.post`) and
the anchoring-service client (`readback.services.call`) both go through `anchor.chain.rpc.send`. A
real HTTP server on loopback answers from a script, so each test sees what a provider that throttles,
fails or refuses does to both clients."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from anchor.chain.rpc import Rpc
from anchor.errors import ChainUnreachable, ServiceError
from anchor.readback.services import Service, call
from anchor.settings.model import Environment


@contextlib.contextmanager
def scripted(answers: list[tuple[int, dict[str, str]]]) -> Iterator[tuple[str, list[str]]]:
    """A server answering each request with the next (status, headers) of `answers`, the last one for
    ever after; yields its URL and the paths it was asked for."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            asked.append(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            status, headers = answers[min(len(asked) - 1, len(answers) - 1)]
            body = b'{"jsonrpc":"2.0","id":1,"result":"0x7a69"}' if status == 200 else b"{}"
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def _quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANCHOR_RPC_BACKOFF_S", "0.01")
    monkeypatch.setenv("ANCHOR_RPC_RETRIES", "3")


def _chain_id(url: str) -> int:
    return Rpc(url, Environment.load()).chain_id()  # the fixture set its retries in the environment


def _service(url: str) -> int:
    return call(Service(url, None), "GET", "/v1/service", retries=3)[0]


@pytest.mark.parametrize("client", [_chain_id, _service], ids=["rpc", "service"])
def test_both_clients_wait_out_a_throttle_and_a_server_error_and_get_the_answer(client: object) -> None:
    with scripted([(503, {}), (429, {"Retry-After": "0"}), (200, {})]) as (url, asked):
        answer = client(url)  # type: ignore[operator]
    assert answer in (0x7A69, 200) and len(asked) == 3


@pytest.mark.parametrize(
    ("client", "error"), [(_chain_id, ChainUnreachable), (_service, ServiceError)], ids=["rpc", "service"]
)
def test_both_clients_give_up_after_the_same_retries_naming_the_last_failure(client: object, error: type) -> None:
    with scripted([(502, {})]) as (url, asked), pytest.raises(error, match=r"failed 4 times \(HTTP 502\)"):
        client(url)  # type: ignore[operator]
    assert len(asked) == 4  # the first try and three retries, for both


@pytest.mark.parametrize(
    ("client", "error"), [(_chain_id, ChainUnreachable), (_service, ServiceError)], ids=["rpc", "service"]
)
def test_neither_client_retries_a_refused_credential(client: object, error: type) -> None:
    with scripted([(401, {}), (200, {})]) as (url, asked), pytest.raises(error, match="HTTP 401 \\(unauthorized\\)"):
        client(url)  # type: ignore[operator]
    assert len(asked) == 1


def test_a_revert_is_never_taken_for_throttling_whatever_digits_its_data_holds() -> None:
    """A custom error's arguments are hex: `WrongSigner(0x…4291…)` held "429" about one run in ten of
    tests/registry/test_registry_chain.py, and the revert was retried as a throttle, then 'throttled 5 times'. A
    provider's "slow down" is words (or 429 standing alone); a revert is never one."""
    from anchor.chain.rpc import throttled

    assert throttled("project ID request rate exceeded") and throttled(
        "daily request count exceeded, request rate limited"
    )
    assert throttled("429 Too Many Requests") and throttled(
        "Your app has exceeded its compute units per second capacity"
    )
    assert not throttled("execution reverted: custom error 0x3f4b1e4c000000000000000000000000a4291b2c")
    assert not throttled("execution reverted: rate limited by the contract")  # a contract's reason is no provider's
    assert not throttled("invalid argument 0: hex string 0x4291 has odd length")
    assert not throttled("query returned more than 10000 results")
