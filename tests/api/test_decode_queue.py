"""The queue in front of the decoder process is bounded: past its size, or past
a client address's share, a public upload is answered 429 with Retry-After at once, never queued
behind everyone else's decoding."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from anchor.errors import RateLimited
from anchor.settings.model import Environment


def _slow(seconds: float) -> str:
    time.sleep(seconds)
    return "decoded"


def test_past_the_queue_or_a_clients_share_the_answer_is_429_at_once() -> None:
    from api.config import ApiConfig
    from api.offload import decode

    config = ApiConfig.from_environment(
        Environment({"ANCHOR_API_DECODE_QUEUE": "2", "ANCHOR_API_DECODE_PER_CLIENT": "1"})
    )
    app: Any = SimpleNamespace(state=SimpleNamespace(config=config))  # no decoder process: the thread pool decodes

    async def run() -> list[object]:
        first = asyncio.create_task(decode(app, _slow, 0.5, client="10.0.0.1"))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        same_client = await asyncio.gather(decode(app, _slow, 0.5, client="10.0.0.1"), return_exceptions=True)
        refused_in = time.monotonic() - started
        other = asyncio.create_task(decode(app, _slow, 0.5, client="10.0.0.2"))
        await asyncio.sleep(0.05)
        full = await asyncio.gather(decode(app, _slow, 0.5, client="10.0.0.3"), return_exceptions=True)
        done = [await first, await other]
        after = await decode(app, _slow, 0.0, client="10.0.0.1")  # the queue drained: accepted again
        assert refused_in < 0.2  # refused at once, not after waiting for the decoder
        return [*same_client, *full, *done, after]

    same_client, full, first, other, after = asyncio.run(run())
    assert isinstance(same_client, RateLimited) and "this address" in same_client.message
    assert isinstance(full, RateLimited) and "queue is full" in full.message
    assert (first, other, after) == ("decoded", "decoded", "decoded")
    assert app.state.decoding["total"] == 0 and not app.state.decoding["by"]


def test_a_full_queue_answers_429_with_retry_after_on_the_public_proof_route(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.config import ApiConfig

    """A big upload is refused at once when the decoder's queue is full; a small one (an honest proof)
    is not queued behind the big ones: it is decoded at once in the pool (here: 422, not a proof), and
    only its own address's bound applies to it."""
    from api.routes.verify import INLINE_PROOF_BYTES

    monkeypatch.setenv("ANCHOR_DATA_DIR", str(tmp_path))
    big = b" " * INLINE_PROOF_BYTES + b"{}"
    with TestClient(create_app(config=ApiConfig(decode_queue=0))) as client:
        answer = client.post("/v1/verify/proof", files={"proof": ("p.json", big)})
        small = client.post("/v1/verify/proof", files={"proof": ("p.json", b"{}")})
    assert answer.status_code == 429 and answer.headers["Retry-After"] == "2"
    assert answer.json()["code"] == "too_many_requests"
    assert small.status_code == 422, small.json()
    with TestClient(create_app(config=ApiConfig(decode_queue=0, decode_per_client=0))) as client:
        small = client.post("/v1/verify/proof", files={"proof": ("p.json", b"{}")})
    assert small.status_code == 429, small.json()
