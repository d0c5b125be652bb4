from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from anchor.errors import NotAnchored
from anchor.manifest.onchain import parse_hex32
from anchor.proof_file import load_proof
from anchor.verify.verifier import Verification, check_proof_consistency, verify_proof_on_chain
from api.deps import SettingsDep
from api.schemas import ErrorPublic

router = APIRouter(prefix="/v1/verify", tags=["verify"])


@router.get(
    "/{manifest_digest}",
    operation_id="verify_by_digest",
    responses={404: {"model": ErrorPublic}, 422: {"model": ErrorPublic}, 502: {"model": ErrorPublic}},
)
async def verify_by_digest(manifest_digest: str, settings: SettingsDep) -> Verification:
    """Is this manifest digest anchored? Answered from a live chain read, never from our files alone."""
    digest = parse_hex32(manifest_digest, "manifest_digest")
    stored = settings.proofs_dir / f"{digest.hex()}.json"
    if not stored.is_file():
        raise NotAnchored(f"no anchor known for manifest 0x{digest.hex()}", detail={"manifest_digest": manifest_digest})
    proof = load_proof(stored)
    root = check_proof_consistency(proof)
    files = len(proof.files) if proof.files is not None else 1 if proof.file is not None else 0
    return await run_in_threadpool(verify_proof_on_chain, proof, root, settings, files)
