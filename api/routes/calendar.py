"""The service as a calendar (docs/calendar.md): who it is, the complete proof once a batch is mined,
and, with `anchor serve --calendar`, stamping for anyone without a token.

- `GET /v1/service`: the receipt key's address, the funded account that submits, chain and registry.
- `GET /v1/proofs/{digest}`: 200 with the complete proof; 202 while it waits for a batch; 404 unknown.
- `POST /v1/calendar`: a manifest identity only (no listing, no annotations), unauthenticated; each
  client (by address) gets a token bucket and the whole queue is bounded: 429 with Retry-After.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from anchor.errors import BadInput, NotAnchored, RateLimited
from anchor.ingest.untrusted_json import parse_json
from anchor.journal.status import item_state, pending_items
from anchor.manifest.decode import validate_identity
from anchor.manifest.onchain import parse_hex32
from api.deps import ReaderDep, SettingsDep, anchored_proof, in_journal, receipt_signer
from api.routes.submit import accept_manifest
from api.routes.verify import ERRORS

router = APIRouter(prefix="/v1", tags=["calendar"])
CALENDAR_MAX_BODY = 16 * 1024
"""A calendar submission is one identity (a few hundred bytes); its listing never leaves the client."""


@router.get("/service", operation_id="service_identity", responses=ERRORS)
async def service_identity(request: Request, reader: ReaderDep, settings: SettingsDep) -> dict[str, Any]:
    """Who signs this service's receipts and who pays for its anchors: a client checks every receipt
    against `receipt_signer`, and a verifier finds `submitter` as the registry's recorded submitter."""
    registry = await run_in_threadpool(reader.registry)
    signer = await run_in_threadpool(receipt_signer, request.app, registry.chain_id)
    config = request.app.state.config
    return {
        "name": signer.name,
        "receipt_signer": signer.address,
        "receipt_signers": list(signer.history),
        "submitter": request.app.state.funded_address,
        "chain_id": registry.chain_id,
        "registry": registry.address,
        "calendar": config.calendar,
        "flush_interval_s": config.flush_interval_s,
        "receipt": {"eip712_domain": "Anchor receipt", "version": "1", "docs": "docs/calendar.md"},
    }


@router.get("/proofs/{digest}", operation_id="get_proof", responses=ERRORS)
async def get_proof(
    request: Request,
    digest: str,
    reader: ReaderDep,
    sealed: Annotated[
        bool,
        Query(
            description="Also the anchor's sealed section (header, receipt, trie proof,"
            " and the record as of the latest block): verifiable offline,"
            " `anchor verify --offline`."
        ),
    ] = False,
) -> Response:
    """The complete proof of a manifest this service anchored (the identity, the batch path and the
    anchor; never the listing, which stays with the client). 202 while it waits for its batch. With
    `sealed=1`, the anchor carries its sealed section, read from the chain (cached per block)."""
    wanted = parse_hex32(digest, "digest")
    registry = await run_in_threadpool(reader.registry)
    proof = await run_in_threadpool(anchored_proof, request.app, reader, wanted)
    if proof is not None:
        if sealed and proof.anchor.sealed is None:
            from anchor.sealing.make import seal_anchor, seal_state

            anchor, root = proof.anchor, bytes.fromhex(proof.batch.root[2:])

            def seal() -> Any:  # as `anchor seal` writes it: with the record as of the latest block
                section, block_hash = seal_anchor(registry.rpc, anchor)
                state, _, _ = seal_state(registry.rpc, anchor.model_copy(update={"sealed": section}), root, block_hash)
                return section.model_copy(update={"state": state})

            section = await run_in_threadpool(reader.read, f"sealed:{wanted.hex()}", seal)
            proof = proof.model_copy(update={"anchor": proof.anchor.model_copy(update={"sealed": section})})
        body = proof.model_dump(mode="json", exclude_none=True, exclude={"files"})
        return JSONResponse(body)
    state = await in_journal(request.app, lambda journal: item_state(journal, registry.chain_id, wanted))
    if state is None:
        raise NotAnchored(f"manifest 0x{wanted.hex()} was never submitted here", detail={"manifest_digest": digest})
    return JSONResponse(status_code=202, content={"manifest_digest": "0x" + wanted.hex(), "state": state})


class Backlog:
    """The calendar's queue length, without a journal read per request: what the journal said at the
    last read plus what this process accepted since. Read again once a second (other workers and
    replicas accept too), and before any refusal that a read has not backed: a count that reached the
    bound through this process's own acceptances is read first (a flush may have emptied the queue),
    and a read that said "full" backs refusals for `recheck_s` at most. So one worker never goes past
    the bound, never refuses on its own count alone, and refuses a flood with a read every `recheck_s`;
    several workers may pass the bound by what the others accepted within a second. Why: the count per
    request and its hop to the thread pool were 16% of a loaded calendar's samples."""

    def __init__(self, every_s: float = 1.0, recheck_s: float = 0.05) -> None:
        self.every_s, self.recheck_s = every_s, recheck_s
        self.value, self.read_at = 0, -math.inf
        self.since_read = 0
        """Acceptances of this process since the last read: a count they make is not the journal's word."""

    async def full(self, app: Any, chain_id: int, bound: int) -> int | None:
        """The queue's length when it is at `bound` or over (refuse); None when there is room."""
        since = time.monotonic() - self.read_at
        if since >= self.every_s or (self.value >= bound and (self.since_read or since >= self.recheck_s)):
            self.read_at, self.since_read = time.monotonic(), 0  # before the await: no second read meanwhile
            self.value = await in_journal(app, lambda journal: pending_items(journal, chain_id))
        return self.value if self.value >= bound else None

    def accepted(self) -> None:
        self.value += 1
        self.since_read += 1


class Buckets:
    """Per-client token buckets (`rate` a second, up to `burst`), bounded in number: when full, the
    oldest client's bucket is dropped (a new client starts full, which an attacker rotating addresses
    already gets; the queue bound is what stops a flood of them)."""

    def __init__(self, rate: float, burst: float, clients: int = 65536) -> None:
        self.rate, self.burst, self.clients = rate, burst, clients
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, client: str) -> float:
        """0 when allowed; else the seconds until a token is there."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.pop(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if len(self._buckets) >= self.clients:
                self._buckets.pop(next(iter(self._buckets)))
            if tokens >= 1:
                self._buckets[client] = (tokens - 1, now)
                return 0.0
            self._buckets[client] = (tokens, now)
            return (1 - tokens) / self.rate


def _too_many(message: str, wait_s: float) -> RateLimited:
    """429 with Retry-After (the one error handler sets the header from `retry_after_s`)."""
    return RateLimited(message, detail={"retry_after_s": max(1, math.ceil(wait_s))})


@router.post("/calendar", operation_id="calendar_submit", status_code=202, responses=ERRORS)
async def calendar_submit(request: Request) -> Response:
    """Stamp without a token (`anchor serve --calendar`): `{"manifest": identity}`; the answer carries
    the signed receipt. Rate-limited per client address; 429 with Retry-After when the client or the
    queue is over its bound. Takes only the request: served directly (api.limits.DirectRoutes)."""
    config, settings, reader = request.app.state.config, request.app.state.settings, request.app.state.reader
    if not config.calendar:
        raise NotAnchored(
            "this service is not a public calendar (anchor serve --calendar)", detail={"route": "calendar"}
        )
    client = request.client.host if request.client else "unknown"
    wait = request.app.state.calendar_buckets.take(client)
    if wait:
        raise _too_many(f"rate limit: {config.calendar_rate:g} submissions a second per client", wait)
    raw = await request.body()
    if len(raw) > CALENDAR_MAX_BODY:
        raise BadInput(
            f"body: a calendar takes one manifest identity ({CALENDAR_MAX_BODY} bytes at most)",
            detail={"field": "body"},
        )
    body = parse_json(raw, "body")
    if not isinstance(body, dict) or set(body) != {"manifest"} or not isinstance(body["manifest"], dict):
        raise BadInput('body: expected {"manifest": {...}} and nothing else', detail={"field": "body"})
    chain_id = (await reader.registry_async()).chain_id
    backlog = request.app.state.calendar_backlog
    full = await backlog.full(request.app, chain_id, config.calendar_queue)
    if full is not None:
        raise _too_many(f"the queue holds {full} items waiting for a batch", config.flush_interval_s or 1.0)
    manifest = body["manifest"]
    done, _ = await accept_manifest(
        request, "calendar", lambda: (validate_identity(manifest), {}, None), None, settings, reader, None, inline=True
    )  # the body is CALENDAR_MAX_BODY bytes at most
    backlog.accepted()
    return JSONResponse(status_code=202, content=done.model_dump(mode="json"))
