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
    return JSONResponse({"state": "pending", "manifest_digest": digest, "receipt": {
        "service": "peer", "manifest_digest": digest, "chain_id": 31337, "registry": REGISTRY,
        "accepted_at": accepted_at, "signature": signature}}, status_code=202)  # fmt: skip
