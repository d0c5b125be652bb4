"""in-toto Statements v1 written from anchored results.

A statement is written only for something that verifies, and says what that verdict read. Reading
statements back is the read-back layer's (anchor.readback.statements, a proof form like any other):
nothing in a statement is taken on its word there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anchor.errors import BadInput, did_you_mean_path
from anchor.proof.file import ProofFile, load_proof
from anchor.readback.checklist import run
from anchor.readback.forms import by_first_anchor
from anchor.readback.statements import CHAIN_ANCHOR, SLSA_PROVENANCE, STATEMENT_TYPE, file_subjects, slsa_dependencies
from anchor.readback.verifier import Verification
from anchor.settings.session import Settings

BUNDLE_BUILD_TYPE = "https://anchor-provenance.invalid/result-bundle/v1"
RUNNER_ID = "https://anchor-provenance.invalid/runner/v1"


def statement_path(path: Path) -> Path:
    """Where `anchor attest PATH` writes by default: beside PATH, never inside it."""
    from anchor.proof.locate import beside

    return beside(path, ".intoto.jsonl")


def attest(target: str, settings: Settings, out: Path | None = None) -> tuple[list[dict[str, Any]], Verification]:
    """Statements for `target` (an anchored path, or a manifest digest whose proof this data dir keeps),
    after verifying it: a statement is never written for something that does not verify. `out`, where
    they will be written, is refused first if it lies inside the anchored folder (`check_output_path`)."""
    from anchor.proof.file import check_output_path, excluded_by

    path = Path(target)
    if out is not None:
        check_output_path(out, only_over_a_proof=False)  # statements: any existing file is refused when written
    if path.exists():
        from anchor.proof.locate import require_proof

        proof_path = require_proof(path)  # never stamped: not anchored, with how to stamp it, as verify says
        proof = load_proof(proof_path)
        if out is not None:
            check_output_path(out, proves=path, recorded=excluded_by(proof), only_over_a_proof=False)
        verdict = run(by_first_anchor(proof, str(proof_path)), settings, data=path, beside=proof_path.parent)
        subjects = file_subjects(proof, path)
    else:
        body = target.lower().removeprefix("0x")
        if len(body) != 64 or any(c not in "0123456789abcdef" for c in body):
            raise BadInput(
                f"{target}: no such file or directory{did_you_mean_path(target)}, and not a manifest digest"
                " (0x + 64 hex)",
                detail={"field": "target"},
            )
        from anchor.anchoring.proofs import store_finder

        found = store_finder(settings)(bytes.fromhex(body))
        if found is None:
            raise BadInput(
                f"{target}: no proof of this manifest in the proof store of {settings.data_dir}",
                detail={"field": "target"},
            )
        proof = found
        verdict = run(by_first_anchor(proof, "proof"), settings)
        subjects = file_subjects(proof, None)
    statements = []
    if proof.manifest.get("kind") == "bundle":
        statements.append(_statement(subjects, SLSA_PROVENANCE, _slsa(proof, verdict)))
    statements.append(_statement(subjects, CHAIN_ANCHOR, _chain_anchor(proof, verdict)))
    return statements, verdict


def _statement(subjects: list[dict[str, Any]], predicate_type: str, predicate: dict[str, Any]) -> dict[str, Any]:
    return {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": predicate_type, "predicate": predicate}


def _chain_anchor(proof: ProofFile, verdict: Verification) -> dict[str, Any]:
    return {
        "manifestDigest": proof.manifest_digest,
        "manifest": proof.manifest,
        "chainId": verdict.chain_id,
        "registry": verdict.registry,
        "batchRoot": proof.batch.root,
        "txHash": verdict.tx_hash,
        "blockNumber": verdict.anchored_block,
        "anchoredAt": verdict.anchored_at,
        "submitter": verdict.submitter,
        "proof": json.loads(proof.dumps()),
    }


def _slsa(proof: ProofFile, verdict: Verification) -> dict[str, Any]:
    """SLSA Provenance v1 for a result bundle: the mission, data snapshot, image and evaluator policy
    are the resolved dependencies, the runner the builder, the anchoring the run's metadata."""
    m = proof.manifest
    dependencies = slsa_dependencies(proof)
    external: dict[str, Any] = {"output": m["output"]}
    if "resume" in m:
        external["resume"] = m["resume"]
    internal = {k: m[k] for k in ("environment", "sandbox") if k in m}  # version 3: where it ran
    return {
        "buildDefinition": {
            "buildType": BUNDLE_BUILD_TYPE,
            "externalParameters": external,
            **({"internalParameters": internal} if internal else {}),
            "resolvedDependencies": dependencies,
        },
        "runDetails": {
            "builder": {"id": RUNNER_ID},
            "metadata": {"invocationId": proof.manifest_digest, "finishedOn": verdict.anchored_at},
        },
    }


def write_statements(statements: list[dict[str, Any]], out: Path) -> None:
    """JSON Lines, one statement per line; refuses to overwrite (`BadInput`)."""
    from anchor.files import atomic_write

    if out.exists():
        raise BadInput(f"{out}: exists; not overwritten (choose another --out, or remove it)", detail={"field": "out"})
    atomic_write(out, "".join(json.dumps(s, sort_keys=True) + "\n" for s in statements).encode("utf-8"))


__all__ = ["attest", "statement_path", "write_statements"]
