"""Verification routes: by manifest digest, by uploaded proof file, by uploaded file."""

from __future__ import annotations

from typing import IO, Annotated, Any

import blake3
from fastapi import APIRouter, File, Path, Request, Response, UploadFile
from starlette.concurrency import run_in_threadpool

from anchor.anchoring.prove import single_file_proof
from anchor.errors import NotAnchored, TooLarge
from anchor.journal import reads
from anchor.manifest.onchain import parse_hex32
from anchor.proof.file import ProofFile, parse_proof
from anchor.verify.verifier import (
    Verification,
    check_milestones,
    check_proof_consistency,
    check_resume_pin,
    verify_proof_on_chain,
)
from api.deps import ConfigDep, ReaderDep, SettingsDep, anchored_proof, in_journal
from api.offload import decode
from api.schemas import ErrorPublic, FileVerification

router = APIRouter(prefix="/v1/verify", tags=["verify"])
Hex32 = Annotated[str, Path(pattern=r"^(0x)?[0-9a-fA-F]{64}$", examples=["0x" + "ab" * 32])]
CommitOrHex32 = Annotated[str, Path(pattern=r"^(0x)?([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$", examples=["c0" * 20])]
ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorPublic} for code in (404, 409, 413, 422, 429, 502, 503)}


def _hash_stream(stream: IO[bytes]) -> tuple[bytes, int]:
    hasher, size = blake3.blake3(), 0
    while chunk := stream.read(1 << 20):
        hasher.update(chunk)
        size += len(chunk)
    return hasher.digest(), size


def _decode_proof(raw: bytes) -> tuple[ProofFile, bytes]:
    """Decode an uploaded proof and recompute everything it states (in the decoder process)."""
    proof = parse_proof(raw, "proof")
    return proof, check_proof_consistency(proof)


def _verify(proof: ProofFile, settings: Any) -> Verification:
    root = check_proof_consistency(proof)
    files = len(proof.files) if proof.files is not None else 1 if proof.file is not None else 0
    return verify_proof_on_chain(proof, root, settings, files)


@router.get("/{manifest_digest}", operation_id="verify_by_digest", response_model=Verification, responses=ERRORS)
async def verify_by_digest(
    manifest_digest: Hex32, request: Request, settings: SettingsDep, reader: ReaderDep
) -> Response:
    """Is this manifest anchored? Answered from a live registry read (cached per block), with the block."""
    digest = parse_hex32(manifest_digest, "manifest_digest").hex()
    key = f"verify:{digest}"
    hit = reader.cached(key)
    if hit is None:

        def compute() -> bytes:
            proof = anchored_proof(request.app, reader, bytes.fromhex(digest))
            if proof is None:
                raise NotAnchored(
                    f"no anchor known for manifest 0x{digest}", detail={"manifest_digest": manifest_digest}
                )
            verdict = _verify(proof, settings)
            check_resume_pin(proof.manifest, settings)  # a resumed bundle's pin, as `anchor verify` checks it
            # a result bundle's milestones, checked against its anchored timing record (409 if edited)
            checked = check_milestones(
                verdict, proof, settings.proofs_dir, settings, find=lambda d: anchored_proof(request.app, reader, d)
            )
            return checked.model_dump_json().encode()

        hit = await run_in_threadpool(reader.read, key, compute)
    return Response(content=hit, media_type="application/json")


@router.post("/proof", operation_id="verify_proof", responses=ERRORS)
async def verify_proof(
    request: Request,
    settings: SettingsDep,
    config: ConfigDep,
    proof: Annotated[UploadFile, File(description="an anchor proof file")],
) -> Verification:
    """Check an uploaded proof file: every value recomputed, then the registry read live (bounded: at
    most `max_proof_bytes`, nesting, listing and path lengths as in docs/manifest.md)."""
    raw = await proof.read(config.max_proof_bytes + 1)
    if len(raw) > config.max_proof_bytes:
        raise TooLarge(f"proof files are limited to {config.max_proof_bytes} bytes here")

    client = request.client.host if request.client else None  # a public route: bounded per address
    parsed, root = await decode(request.app, _decode_proof, raw, client=client)
    files = len(parsed.files) if parsed.files is not None else 1 if parsed.file is not None else 0

    def checked() -> Verification:
        verdict = verify_proof_on_chain(parsed, root, settings, files)
        check_resume_pin(parsed.manifest, settings)  # the same refusal as `anchor verify` and the dispatcher
        return verdict

    return await run_in_threadpool(checked)


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
    verification = await run_in_threadpool(_verify, proof, settings)
    return FileVerification(
        blake3=digest.hex(), size=size, path=proof.file.path,
        proof=proof.model_dump(mode="json", exclude_none=True), verification=verification.model_dump(),
    )  # fmt: skip
