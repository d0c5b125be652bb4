"""Authenticated write routes: submit a manifest, or a bundle archive, for anchoring.

The server computes every digest itself; a digest the client claims is compared with it and the
difference reported, never adopted. Submissions are journaled (idempotently: the same manifest twice
is one record, an `Idempotency-Key` reused for other content is a 409) and anchored in the next batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from fastapi import APIRouter, BackgroundTasks, File, Form, Header, Request, UploadFile
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from anchor.errors import BadInput, TooLarge
from anchor.ingest.archive import decode_archive
from anchor.ingest.untrusted_json import parse_json
from anchor.journal.submit import Payload, Submission
from anchor.manifest.bundle import check_annotations
from anchor.manifest.decode import tree_summary, validate_identity
from anchor.manifest.filetree import FileTreeManifest
from anchor.manifest.identity import manifest_digest
from anchor.settings.session import Settings
from api.deps import ClientDep, ConfigDep, ReaderDep, SettingsDep, require_token
from api.offload import decode
from api.routes.verify import ERRORS
from api.schemas import ManifestSubmission, Submitted

if TYPE_CHECKING:
    from anchor.anchoring.receipts import ReceiptSigner

router = APIRouter(prefix="/v1", tags=["submit"])
T = TypeVar("T")
WRITE_ERRORS: dict[int | str, dict[str, Any]] = {**ERRORS, 401: ERRORS[404]}
IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key", max_length=200)]
_MANIFEST_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": ManifestSubmission.model_json_schema()}},
    }
}


def _scoped(client: str, key: str | None) -> str | None:
    """Idempotency keys live in their client's namespace: no client can see or pre-claim another's."""
    return None if key is None else f"api:{client}:{key}"


def _manifest_body(raw: bytes) -> ManifestSubmission:
    """Decode the body ourselves: bounded depth (FastAPI's own JSON decoding has none), typed errors."""
    try:
        return ManifestSubmission.model_validate(parse_json(raw, "body"))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "body"
        raise BadInput(f"field '{field}': {first['msg']}", detail={"field": field}) from None


def _kick(app: Any, tasks: BackgroundTasks | None, settings: Settings) -> None:
    """The worker's one background flusher takes it from here (anchor.anchoring.flusher); an app run
    without its lifespan (no flusher) flushes in a background task instead."""
    flusher = getattr(app.state, "flusher", None)
    if flusher is not None:
        flusher.kick()
    elif tasks is not None:
        tasks.add_task(_flush, settings)


def _flush(settings: Settings) -> None:
    from anchor.anchoring.service import AnchorService

    service = AnchorService.open(settings)
    try:
        service.flush()
    finally:
        service.close()


def _claim(claimed: str | None, digest: bytes) -> bool | None:
    if claimed is None:
        return None
    body = claimed.lower().removeprefix("0x")
    if len(body) != 64:
        raise BadInput("claimed_digest: expected 64 hex digits", detail={"field": "claimed_digest"})
    return body == digest.hex()


IDEMPOTENCY_PARAMETER = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "a retry with the same key (and content) is answered as the first, never a second record;"
    " the same key for other content is 409",
    "schema": {"type": "string", "maxLength": 200},
}


def _idempotency_key(request: Request) -> str | None:
    key = request.headers.get("idempotency-key")
    if key is not None and len(key) > 200:
        raise BadInput("Idempotency-Key: at most 200 characters", detail={"field": "Idempotency-Key"})
    return key


@router.post(
    "/manifests",
    operation_id="submit_manifest",
    status_code=202,
    response_model=Submitted,
    responses=WRITE_ERRORS,
    openapi_extra={**_MANIFEST_BODY, "parameters": [IDEMPOTENCY_PARAMETER]},
)
async def submit_manifest(request: Request) -> Response:
    """Journal a manifest identity (with its file listing, which must rebuild the identity's tree);
    the answer carries the service's signed receipt (docs/calendar.md).

    The hottest write route takes no declared parameters or dependencies: the edge guard
    (api.limits.RequestGuard) has already checked the token, before the body, and left the client's
    id in the scope; FastAPI's dependency solving and response validation cost a third of a
    submission's server CPU (the calendar bench)."""
    app = request.app
    client = request.scope.get("anchor.client") or await require_token(request)
    idempotency_key = _idempotency_key(request)
    raw = await request.body()
    # a bare identity is decoded on the event loop, a short listing in a pool thread (accept_manifest):
    # bounded depth and size make both cheap; a large one goes to the decoder process (api.offload)
    body = None if len(raw) <= INLINE_DECODE_BYTES else await decode(app, _manifest_body, raw)

    def prepared() -> tuple[dict[str, Any], Payload, ManifestSubmission]:
        found = body or _manifest_body(raw)
        identity = validate_identity(found.manifest)
        check_annotations(found.annotations)  # what readers interpret is typed; the rest is display data
        payload: Payload = {"annotations": found.annotations} if found.annotations else {}
        if found.files is not None:
            tree = FileTreeManifest.from_files_json(found.files)
            if tree_summary(identity) != tree.summary():
                raise BadInput(
                    "files: the listing does not rebuild the manifest's files_root", detail={"field": "files"}
                )
            payload["files"] = tree.files_json()
        return identity, payload, found

    tasks = BackgroundTasks()
    done, found = await accept_manifest(
        request,
        client,
        prepared,
        idempotency_key,
        app.state.settings,
        app.state.reader,
        tasks,
        inline=len(raw) <= INLINE_PREPARE_BYTES,
    )
    answer = done.model_dump(mode="json")
    answer["claimed_digest_matches"] = _claim(found.claimed_digest, bytes.fromhex(done.manifest_digest[2:]))
    answer["files"] = len(found.files or [])
    return JSONResponse(status_code=202, content=answer, background=tasks)


INLINE_DECODE_BYTES = 64 * 1024


async def accept_manifest(
    request: Request,
    client: str,
    prepare: Callable[[], tuple[dict[str, Any], Payload, T]],
    idempotency_key: str | None,
    settings: Settings,
    reader: Any,
    tasks: BackgroundTasks | None,
    inline: bool = False,
) -> tuple[Submitted, T]:
    """`prepare()` (identity, payload, and whatever the route wants back), journal the identity through
    the app's writer (anchor.journal.group: concurrent submissions share one commit), sign the receipt:
    what this service accepted (digest, chain, registry) and when it first did (a repeat gets the first
    time); then kick the flusher. `inline`: `prepare` is cheap (a bare identity, a few KiB at most), so
    it runs on the event loop and the request never takes a pool thread (a hop to the pool and back cost
    more than the work); otherwise it runs in the pool."""
    from api.deps import journal_writer, receipt_signer

    writer = journal_writer(request.app)
    registry = await reader.registry_async()
    signer: ReceiptSigner | None = getattr(request.app.state, "receipt_signer", None)
    if signer is None:  # loaded once, before journaling: a bad key is 422
        signer = await run_in_threadpool(receipt_signer, request.app, registry.chain_id)
    identity, payload, extra = prepare() if inline else await run_in_threadpool(prepare)
    sub = Submission(identity, payload, _scoped(client, idempotency_key), own_annotations=True)

    def signed(done: Any) -> Submitted:  # in the writer's thread, once the submission is durable
        digest = "0x" + done.digest.hex()  # what the journal computed from the identity it validated
        receipt = signer.sign(registry.chain_id, registry.address, digest, int(done.created_at))
        return Submitted(
            manifest_digest=digest,
            state=done.state,
            duplicate=done.duplicate,
            claimed_digest_matches=None,
            files=len(payload.get("files", ())),
            receipt=receipt.model_dump(mode="json", exclude={"url"}),
        )

    answer: Submitted = await asyncio.wrap_future(writer.enqueue(registry.chain_id, sub, signed))
    if request.app.state.config.flush_after_submit and not answer.duplicate:
        _kick(request.app, tasks, settings)
    return answer, extra


INLINE_PREPARE_BYTES = 4096
"""A body this small is decoded and checked on the event loop (about 0.1 ms); a larger one in the pool."""


@router.post("/bundles", operation_id="submit_bundle", status_code=202, responses=WRITE_ERRORS)
async def submit_bundle(
    request: Request,
    client: ClientDep,
    settings: SettingsDep,
    config: ConfigDep,
    reader: ReaderDep,
    tasks: BackgroundTasks,
    archive: Annotated[UploadFile, File(description="tar, tar.gz or zip of the bundle's files")],
    claimed_digest: Annotated[str | None, Form(description="compared with ours, never adopted")] = None,
    idempotency_key: IdempotencyKey = None,
) -> Submitted:
    """Journal a bundle archive: decoded under hard bounds, every file hashed here."""
    data = await archive.read(config.max_request_bytes + 1)
    if len(data) > config.max_request_bytes:
        raise TooLarge(f"archive larger than {config.max_request_bytes} bytes")
    tree = await decode(request.app, decode_archive, data, config.archive_limits)  # no journal lock held
    identity = tree.identity()
    payload: Payload = {"files": tree.files_json()}
    done, _ = await accept_manifest(
        request, client, lambda: (identity, payload, None), idempotency_key, settings, reader, tasks
    )
    return done.model_copy(update={"claimed_digest_matches": _claim(claimed_digest, manifest_digest(identity))})


@router.post("/lineage", operation_id="relay_lineage", status_code=202, responses=WRITE_ERRORS)
async def relay_lineage(
    request: Request,
    client: ClientDep,
    settings: SettingsDep,
    config: ConfigDep,
    reader: ReaderDep,
    tasks: BackgroundTasks,
) -> dict[str, Any]:
    """Journal a lineage record signed by its researcher (EIP-712, registry v2) and relay it: the
    service pays the gas and never holds the researcher's key. The signature is checked here first:
    one that does not recover to the named researcher, or is past its deadline, is refused (422)."""
    import time

    from anchor.chain.signed import SignedLineage, recover

    raw = parse_json(await request.body(), "body")
    if not isinstance(raw, dict):
        raise BadInput("body: expected a JSON object", detail={"field": "body"})
    signed = SignedLineage.from_json(raw)
    registry = await run_in_threadpool(reader.registry)
    signer = await run_in_threadpool(recover, registry.chain_id, registry.address, signed)  # CPU: off the loop
    if signer.lower() != signed.fields.researcher.lower():
        raise BadInput("signature: does not recover to the named researcher", detail={"field": "signature"})
    if signed.fields.deadline <= time.time():
        raise BadInput("deadline: already passed", detail={"field": "deadline"})
    effect = await run_in_threadpool(_journal_lineage, settings, signed)
    if config.flush_after_submit:
        _kick(request.app, tasks, settings)
    return {"effect": effect, "researcher": signed.fields.researcher, "commit": "0x" + signed.fields.commit.hex()}


def _journal_lineage(settings: Settings, signed: Any) -> int:
    from anchor.anchoring.service import AnchorService

    service = AnchorService.open(settings)
    try:
        f = signed.fields
        return service.runner.open_lineage(f.commit, f.parent, f.diff_hash, f.metric_hash, f.kept, signed=signed)
    finally:
        service.close()
