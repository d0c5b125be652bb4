"""The peer of benchmarks/api_bench.py and hostile_bench.py: bare FastAPI routes with our path shapes."""

import json
from typing import Any

from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.responses import JSONResponse

app = FastAPI()
REGISTRY = "0x" + "a1" * 20


@app.get("/v1/verify/{manifest_digest}")
async def verify(manifest_digest: str) -> dict[str, object]:
    return {"verified": True, "manifest_digest": manifest_digest}


def _token(authorization: str = Header("")) -> None:
    if authorization != "Bearer peer-token":
        raise HTTPException(401, "a bearer token is required")


@app.post("/v1/manifests", dependencies=[Depends(_token)])
async def submit(body: list[Any]) -> dict[str, object]:
    """FastAPI's default shape for an authenticated write: the body is parsed before the dependency runs."""
    return {"items": len(body)}


# The peer of benchmarks/calendar_bench.py: what a submission must do at the least, on a bare
# route: check the token, parse the body, validate the identity and compute its digest as the service does,
# and sign the same EIP-712 receipt with libsecp256k1. No journal: nothing is kept.
_RECEIPT_KEY = None


@app.post("/v1/calendar-peer")
async def calendar_peer(request: Request) -> JSONResponse:
    import time

    from coincurve import PrivateKey

    from anchor.manifest.decode import validate_identity
    from anchor.manifest.identity import manifest_digest
    from anchor.proof.receipt import signing_hash

    global _RECEIPT_KEY  # noqa: PLW0603 - made once, as the service's signer is
    if request.headers.get("authorization") != "Bearer bench-token":
        raise HTTPException(401, "a bearer token is required")
    body = json.loads(await request.body())
    digest = "0x" + manifest_digest(validate_identity(body["manifest"])).hex()
    accepted_at = int(time.time())
    _RECEIPT_KEY = _RECEIPT_KEY or PrivateKey(bytes(range(1, 33)))
    raw = _RECEIPT_KEY.sign_recoverable(signing_hash(31337, REGISTRY, digest, accepted_at, "peer"), hasher=None)
    signature = "0x" + (raw[:64] + bytes([raw[64] + 27])).hex()
    return JSONResponse(
        {
            "state": "pending",
            "manifest_digest": digest,
            "receipt": {
                "service": "peer",
                "manifest_digest": digest,
                "chain_id": 31337,
                "registry": REGISTRY,
                "accepted_at": accepted_at,
                "signature": signature,
            },
        },
        status_code=202,
    )


# The durable floor of benchmarks/calendar_bench.py: the bare signing route above, and the receipt kept
# as the journal keeps it (SQLite, WAL, synchronous=FULL), one transaction per batch of waiting requests
# (a group commit: one writer thread takes every row queued while it committed the last batch). What a
# service that answers only after its receipt is on disk cannot beat, with nothing of ours in it.
_DURABLE: dict[str, Any] = {}


def _durable_writer(path: str) -> Any:
    import asyncio
    import queue
    import sqlite3
    import threading

    if "queue" in _DURABLE:
        return _DURABLE["queue"]
    rows: queue.Queue[tuple[tuple[str, int, str], asyncio.AbstractEventLoop, asyncio.Future[None]]] = queue.Queue()

    def write() -> None:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute("CREATE TABLE IF NOT EXISTS receipts (digest TEXT PRIMARY KEY, accepted_at INTEGER, sig TEXT)")
        while True:
            batch = [rows.get()]
            while not rows.empty():
                batch.append(rows.get_nowait())
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR REPLACE INTO receipts VALUES (?, ?, ?)", [row for row, _, _ in batch])
            db.execute("COMMIT")
            for _, loop, done in batch:
                loop.call_soon_threadsafe(done.set_result, None)

    threading.Thread(target=write, daemon=True).start()
    _DURABLE["queue"] = rows
    return rows


@app.post("/v1/calendar-durable")
async def calendar_durable(request: Request) -> JSONResponse:
    import asyncio
    import os

    answer = await calendar_peer(request)
    receipt = json.loads(answer.body)["receipt"]
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    path = os.environ.get("BENCH_DURABLE_DB", "/tmp/bench-durable.sqlite")  # noqa: S108 - a benchmark's scratch file
    _durable_writer(path).put(((receipt["manifest_digest"], receipt["accepted_at"], receipt["signature"]), loop, done))
    await done
    return answer
