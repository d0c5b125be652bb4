"""Verification routes: by manifest digest, by uploaded proof file, by uploaded file, by uploaded research claim."""

from __future__ import annotations

from typing import IO, Annotated, Any

import blake3
from fastapi import APIRouter, File, Path, Query, Request, Response, UploadFile
from starlette.concurrency import run_in_threadpool

from anchor.anchoring.prove import single_file_proof
from anchor.errors import BadInput, NotAnchored, TooLarge
from anchor.journal import reads
from anchor.library.verifier import Policy, Verification, Verifier
from anchor.manifest.onchain import parse_hex32
from anchor.proof.file import ProofFile, parse_proof
from anchor.readback.checklist import check_proof_consistency
from api.deps import ConfigDep, ReaderDep, SettingsDep, anchored_proof, in_journal
from api.offload import decode
from api.schemas import ErrorPublic, FileVerification, VerificationPublic

router = APIRouter(prefix="/v1/verify", tags=["verify"])
POLICY_PARAMETERS = [
    {
        "name": "expect_submitter",
        "in": "query",
        "required": False,
        "description": "refuse (412) unless this account anchored it",
        "schema": {"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$"},
    },
    {
        "name": "anchored_before",
        "in": "query",
        "required": False,
        "description": "refuse (412) unless anchored before this ISO 8601 date or time",
        "schema": {"type": "string", "maxLength": 64},
    },
    {
        "name": "min_finality",
        "in": "query",
        "required": False,
        "description": "refuse (425) until safe, finalized or N blocks deep",
        "schema": {"type": "string", "pattern": "^(safe|finalized|[0-9]{1,9})$"},
    },
]
"""The policy a verdict can be asked to meet, as `anchor verify`'s options of the same names. Read from the
query string by hand (`policy_of`), not declared as FastAPI parameters: three declared parameters cost
the hot verify route a third of its requests per second (benchmarks/api_bench.py: 6,261 -> 4,343)."""


def policy_of(request: Request) -> Policy | None:
    """The policy the query string asks for; None when it asks for none. A malformed value is 422."""
    query = request.query_params
    if not query:
        return None
    submitter = query.get("expect_submitter")  # read and refused by the Policy itself, as at every door
    before = query.get("anchored_before")
    if before is not None and len(before) > 64:
        raise BadInput("anchored_before: at most 64 characters", detail={"field": "anchored_before"})
    policy = Policy(submitter, before, query.get("min_finality"))
    return None if policy == Policy() else policy


Hex32 = Annotated[str, Path(pattern=r"^(0x)?[0-9a-fA-F]{64}$", examples=["0x" + "ab" * 32])]
CommitOrHex32 = Annotated[str, Path(pattern=r"^(0x)?([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$", examples=["c0" * 20])]
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorPublic} for code in (404, 409, 412, 413, 422, 425, 429, 502, 503)
}


def _hash_stream(stream: IO[bytes]) -> tuple[bytes, int]:
    hasher, size = blake3.blake3(), 0
    while chunk := stream.read(1 << 20):
        hasher.update(chunk)
        size += len(chunk)
    return hasher.digest(), size


INLINE_PROOF_BYTES = 64 * 1024
"""An uploaded proof this small (any single-file proof, a listing of a few hundred files) is decoded
at once in the pool: a few milliseconds at most, never queued behind someone's 13 MiB upload."""


def _decode_proof(raw: bytes) -> tuple[ProofFile, bytes]:
    """Decode an uploaded proof and recompute everything it states (in the decoder process)."""
    proof = parse_proof(raw, "proof")
    return proof, check_proof_consistency(proof)


def verdict_of(proof: ProofFile, settings: Any, app: Any, reader: Any, policy: Policy | None = None) -> Verification:
    """`Verifier.verify_proof`, the one verdict of every door, with the proofs this service holds (its
    store, else rebuilt from the journal replicas share) as where a bundle's timing record may come from."""
    return Verifier(settings, find=lambda d: anchored_proof(app, reader, d)).verify_proof(proof, policy)


async def cached_verdict(
    request: Request, settings: Any, reader: Any, digest: bytes, loaded: ProofFile | None = None
) -> bytes:
    """The verdict (JSON) on the anchored manifest `digest`, computed in the pool once per block and
    shared by `/v1/verify/{digest}` and the explorer's bundle page. `loaded`: the proof, when the
    caller has just read it (not read twice); used for the first computation only, so the reader's
    revalidation (which keeps `compute`) never holds a big proof in memory."""
    key = f"verify:{digest.hex()}"
    hit: bytes | None = reader.cached(key)
    if hit is not None:
        return hit
    given = [] if loaded is None else [loaded]

    def compute() -> bytes:
        proof = given.pop() if given else anchored_proof(request.app, reader, digest)
        if proof is None:
            raise NotAnchored(
                f"no anchor known for manifest 0x{digest.hex()}", detail={"manifest_digest": "0x" + digest.hex()}
            )
        return verdict_of(proof, settings, request.app, reader).model_dump_json().encode()

    found: bytes = await run_in_threadpool(reader.read, key, compute)
    return found


@router.get(
    "/{manifest_digest}",
    operation_id="verify_by_digest",
    response_model=VerificationPublic,
    responses=ERRORS,
    openapi_extra={"parameters": POLICY_PARAMETERS},
)
async def verify_by_digest(
    manifest_digest: Hex32, request: Request, settings: SettingsDep, reader: ReaderDep
) -> Response:
    """Is this manifest anchored? Answered from a live registry read (cached per block), with the block;
    with `expect_submitter`, `anchored_before`, `min_finality` it must also meet them, as `anchor verify`
    checks its options of the same names."""
    policy = policy_of(request)  # a malformed policy is 422 before any read
    hit = await cached_verdict(request, settings, reader, parse_hex32(manifest_digest, "manifest_digest"))
    if policy is not None:  # the verdict is cached per block; the policy is this request's, applied last
        policy.check(Verification.model_validate_json(hit))
    return Response(content=hit, media_type="application/json")


@router.post(
    "/proof",
    operation_id="verify_proof",
    response_model=VerificationPublic,
    responses=ERRORS,
    openapi_extra={"parameters": POLICY_PARAMETERS},
)
async def verify_proof(
    request: Request,
    settings: SettingsDep,
    config: ConfigDep,
    reader: ReaderDep,
    proof: Annotated[UploadFile, File(description="an anchor proof file")],
) -> Verification:
    """Check an uploaded proof file: every value recomputed, then the registry read live (bounded: at
    most `max_proof_bytes`, nesting, listing and path lengths as in docs/manifest.md)."""
    raw = await proof.read(config.max_proof_bytes + 1)
    if len(raw) > config.max_proof_bytes:
        raise TooLarge(f"proof files are limited to {config.max_proof_bytes} bytes here")

    client = request.client.host if request.client else None  # a public route: bounded per address
    # bounded; a big one in the decoder process, a small one at once in the pool
    parsed, _ = await decode(request.app, _decode_proof, raw, client=client, inline=len(raw) <= INLINE_PROOF_BYTES)
    return await run_in_threadpool(verdict_of, parsed, settings, request.app, reader, policy_of(request))


@router.post("/file", operation_id="verify_file", responses=ERRORS)
async def verify_file(
    request: Request,
    settings: SettingsDep,
    reader: ReaderDep,
    file: Annotated[UploadFile, File(description="the exact file to look for")],
) -> FileVerification:
    """Is this exact file inside an anchored bundle? The server hashes it and returns its proof."""
    digest, size = await run_in_threadpool(_hash_stream, file.file)
    hits = await in_journal(
        request.app, lambda journal: reads.files_with_blake3(journal, reader.chain_id(), digest, confirmed=True)
    )
    if not hits:
        raise NotAnchored(
            f"no anchored bundle contains a file with BLAKE3 {digest.hex()}", detail={"blake3": digest.hex()}
        )
    hit = hits[0]
    whole = await run_in_threadpool(anchored_proof, request.app, reader, hit.digest)
    if whole is None:
        raise NotAnchored(f"no proof of manifest 0x{hit.digest.hex()} here", detail={"blake3": digest.hex()})
    proof = single_file_proof(whole, hit.path)
    assert proof.file is not None
    if proof.file.size != size:
        raise NotAnchored("the anchored file with that hash has another size", detail={"blake3": digest.hex()})
    verification = await run_in_threadpool(verdict_of, proof, settings, request.app, reader)
    return FileVerification(
        blake3=digest.hex(),
        size=size,
        path=proof.file.path,
        proof=proof.model_dump(mode="json", exclude_none=True),
        verification=verification.model_dump(),
    )


def _check_upload(settings: Any, raw: bytes, offline: bool, trusted_block: tuple[str, ...]) -> dict[str, Any]:
    """`check_claim` of an uploaded claim, written to a scratch file of ours; a refusal calls it "claim"."""
    import tempfile
    from pathlib import Path as FilePath

    from anchor.research.claim import check_claim

    with tempfile.TemporaryDirectory(prefix="anchor-claim-upload-") as scratch:
        path = FilePath(scratch) / "claim.tar"
        path.write_bytes(raw)
        verdict = check_claim(settings, path, offline=offline, trusted_block=trusted_block, name="claim")
        return verdict.to_json() | {"lines": verdict.lines}


@router.post("/claim", operation_id="verify_claim", responses=ERRORS)
async def verify_claim(
    request: Request,
    settings: SettingsDep,
    config: ConfigDep,
    claim: Annotated[UploadFile, File(description="a research claim, the .tar `anchor research export` wrote")],
    offline: Annotated[bool, Query(description="no network: the claim's sealed proofs against trusted_block")] = False,
    trusted_block: Annotated[
        list[str] | None, Query(description="with offline: N:HASH, a block hash you trust (the claim's last)")
    ] = None,
) -> dict[str, Any]:
    """Re-derive an uploaded research claim as `anchor research check` does (the library's
    `check_claim`): its report, trial count, champion and lineage, or the part that was edited (409).
    Bounded per client address as an uploaded proof's decoding is (a bootstrap over 10,000 items takes
    seconds of CPU)."""
    if trusted_block and not offline:
        raise BadInput("trusted_block goes with offline=true", detail={"field": "offline"})
    raw = await claim.read(config.max_request_bytes + 1)
    if len(raw) > config.max_request_bytes:
        raise TooLarge(f"claims are limited to {config.max_request_bytes} bytes here")
    client = request.client.host if request.client else None
    return await decode(
        request.app, _check_upload, settings, raw, offline, tuple(trusted_block or ()), client=client, inline=True
    )
