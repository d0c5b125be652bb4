"""in-toto Statements v1 from anchored results, and their verification.

Nothing in a statement is taken on its word when it is read back: the chain-anchor predicate carries
the proof file, which is verified like any proof (consistency, the files on disk, a live chain read);
every subject digest and every SLSA dependency digest must then equal what that proof binds.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from anchor.errors import BadInput, Tampered, did_you_mean_path
from anchor.proof.file import ProofFile, load_proof, parse_proof
from anchor.readback.verifier import Verification, verify_proof
from anchor.settings.session import Settings

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SLSA_PROVENANCE = "https://slsa.dev/provenance/v1"
CHAIN_ANCHOR = "https://anchor-provenance.invalid/chain-anchor/v1"
"""Our predicate (docs/attestations.md). The project has no public domain yet: `.invalid` says so."""
BUNDLE_BUILD_TYPE = "https://anchor-provenance.invalid/result-bundle/v1"
RUNNER_ID = "https://anchor-provenance.invalid/runner/v1"
MAX_STATEMENTS_BYTES = 64 * 1024 * 1024


def statement_path(path: Path) -> Path:
    """Where `anchor attest PATH` writes by default: beside PATH, never inside it."""
    from anchor.proof.locate import beside

    return beside(path, ".intoto.jsonl")


def attest(target: str, settings: Settings, out: Path | None = None) -> tuple[list[dict[str, Any]], Verification]:
    """Statements for `target` (an anchored path, or a manifest digest whose proof this data dir keeps),
    after verifying it: a statement is never written for something that does not verify. `out`, where
    they will be written, is refused first if it lies inside the anchored folder (`check_output_path`)."""
    from anchor.proof.file import check_output_path

    path = Path(target)
    if out is not None:
        check_output_path(out, only_over_a_proof=False)  # statements: any existing file is refused when written
    if path.exists():
        from anchor.proof.locate import require_proof

        proof_path = require_proof(path)  # never stamped: not anchored, with how to stamp it, as verify says
        proof = load_proof(proof_path)
        if out is not None:
            check_output_path(out, proves=path, recorded=proof.manifest.get("exclude") or (), only_over_a_proof=False)
        verdict = verify_proof(proof, settings, data=path, proof_name=str(proof_path), beside=proof_path.parent)
        subjects = _file_subjects(proof, path)
    else:
        body = target.lower().removeprefix("0x")
        if len(body) != 64 or any(c not in "0123456789abcdef" for c in body):
            raise BadInput(
                f"{target}: no such file or directory{did_you_mean_path(target)}, and not a manifest digest"
                " (0x + 64 hex)", detail={"field": "target"},
            )  # fmt: skip
        from anchor.anchoring.proofs import store_finder

        found = store_finder(settings)(bytes.fromhex(body))
        if found is None:
            raise BadInput(f"{target}: no proof of this manifest in the proof store of {settings.data_dir}",
                           detail={"field": "target"})  # fmt: skip
        proof = found
        verdict = verify_proof(proof, settings)
        subjects = _file_subjects(proof, None)
    statements = []
    if proof.manifest.get("kind") == "bundle":
        statements.append(_statement(subjects, SLSA_PROVENANCE, _slsa(proof, verdict)))
    statements.append(_statement(subjects, CHAIN_ANCHOR, _chain_anchor(proof, verdict)))
    return statements, verdict


def _statement(subjects: list[dict[str, Any]], predicate_type: str, predicate: dict[str, Any]) -> dict[str, Any]:
    return {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": predicate_type, "predicate": predicate}


def _file_subjects(proof: ProofFile, root: Path | None) -> list[dict[str, Any]]:
    """One subject per bound file (BLAKE3 from the verified proof, SHA-256 computed from the file on
    disk when it is here); an attempt's subjects are its commit and its code.diff."""
    manifest = proof.manifest
    if manifest.get("kind") == "attempt":
        return [
            {"name": "commit", "digest": {"gitCommit": manifest["commit"]}},
            {"name": "code.diff", "digest": {"blake3": manifest["diff_blake3"]}},
        ]
    if proof.file is not None:
        listing = [(proof.file.path, proof.file.blake3)]
        on_disk = {proof.file.path: root} if root is not None else {}
    else:
        tree = proof.filetree()
        if tree is None or not tree.files:
            return [{"name": "manifest", "digest": {"blake3": proof.manifest_digest[2:]}}]
        listing = [(entry.path, entry.blake3) for entry in tree.files]
        if root is not None and not root.is_dir():  # a file stamped on its own: its one entry is the file
            on_disk = {p: root for p, _ in listing}
        else:
            on_disk = {p: root / p for p, _ in listing} if root is not None else {}
    subjects = []
    for rel, b3 in listing:
        digest = {"blake3": b3}
        if rel in on_disk:
            digest["sha256"] = _sha256(on_disk[rel])
        subjects.append({"name": rel, "digest": digest})
    return subjects


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


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


def _slsa_dependencies(proof: ProofFile) -> list[dict[str, Any]]:
    """The resolved dependencies a bundle manifest binds: mission, data snapshot, image, evaluator policy."""
    m = proof.manifest
    out = [
        {"name": "mission", "digest": {"sha256": m["mission_sha256"]}},
        {"name": "data_snapshot", "digest": {"sha256": m["data_snapshot_sha256"]}},
    ]
    if "image" in m:  # a version 3 bundle run on a host claims no image: none is listed
        image_name, _, image_digest = str(m["image"]).partition("@")
        out.append({"name": "image", "uri": f"docker://{image_name}",
                    "digest": {"sha256": image_digest.removeprefix("sha256:")}})  # fmt: skip
    out.append({"name": "evaluator_policy", "digest": {"sha256": m["evaluator_policy_sha256"]}})
    return out


def _slsa(proof: ProofFile, verdict: Verification) -> dict[str, Any]:
    """SLSA Provenance v1 for a result bundle: the mission, data snapshot, image and evaluator policy
    are the resolved dependencies, the runner the builder, the anchoring the run's metadata."""
    m = proof.manifest
    dependencies = _slsa_dependencies(proof)
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


def read_statements(path: Path) -> list[dict[str, Any]]:
    """Decode a JSON Lines file of statements (or one statement); `BadInput` naming the line."""
    from anchor.ingest.untrusted_json import parse_json

    try:
        if path.stat().st_size > MAX_STATEMENTS_BYTES:
            raise BadInput(f"{path}: larger than {MAX_STATEMENTS_BYTES} bytes", detail={"file": str(path)})
        lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    except FileNotFoundError:
        raise BadInput(f"{path}: no such statement file{did_you_mean_path(path)}", detail={"file": str(path)}) from None
    statements = []
    for number, line in enumerate(lines, start=1):
        item = parse_json(line, f"{path}:{number}")
        if not isinstance(item, dict) or item.get("_type") != STATEMENT_TYPE:
            raise BadInput(f"{path}:{number}: not an in-toto Statement v1", detail={"file": str(path), "line": number})
        for field in ("subject", "predicateType", "predicate"):
            if field not in item:
                raise BadInput(f"{path}:{number}: no {field}", detail={"file": str(path), "field": field})
        # typed here, once, so what reads them next (the predicate's proof, the subjects compared by
        # name) meets only what it expects: a null predicate or a subject named by a number was a
        # TypeError, exit 1 "internal error", where the file is at fault
        subjects = item["subject"]
        shapes = (("predicateType", isinstance(item["predicateType"], str), "a string"),
                  ("predicate", isinstance(item["predicate"], dict), "an object"),
                  ("subject", isinstance(subjects, list) and all(
                      isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("digest"), dict)
                      for s in subjects), "a list of {name, digest} objects"))  # fmt: skip
        for field, fits, expected in shapes:
            if not fits:
                raise BadInput(f"{path}:{number}: {field} is not {expected}",
                               detail={"file": str(path), "line": number, "field": field})  # fmt: skip
        statements.append(item)
    if not statements:
        raise BadInput(f"{path}: no statements", detail={"file": str(path)})
    return statements


def verify_statements(
    path: Path, base: Path | None, settings: Settings, registries: tuple[str, ...] = (), quorum: int | None = None
) -> Verification:
    """Verify statements written by `attest`: the chain-anchor predicate's proof against the chain and
    the files (under `base`, by default the path the statements were written beside), then every
    subject and SLSA dependency against that proof. `Tampered` names what differs. `registries` and
    `quorum` as for any proof (`--registry`, `--quorum`): never dropped for a statement."""
    from anchor.readback.anchors import trusted

    statements = read_statements(path)
    anchors = [s for s in statements if s["predicateType"] == CHAIN_ANCHOR]
    if len(anchors) != 1:
        raise BadInput(
            f"{path}: expected one {CHAIN_ANCHOR} statement, found {len(anchors)}", detail={"file": str(path)}
        )
    anchor = anchors[0]
    proof = parse_proof(json.dumps(anchor["predicate"].get("proof")).encode(), f"{path}: predicate.proof")
    for field, bound in (("manifestDigest", proof.manifest_digest), ("batchRoot", proof.batch.root),
                         ("manifest", proof.manifest)):  # fmt: skip
        if anchor["predicate"].get(field) != bound:
            raise Tampered(f"{path}: predicate.{field} is not what its proof binds", detail={"field": field})
    root = base if base is not None else path.with_name(path.name.removesuffix(".intoto.jsonl"))
    registry = trusted(registries, proof.anchor.registry)
    if proof.files is not None or proof.file is not None:
        verdict = verify_proof(proof, settings, data=root, proof_name=f"{path}: predicate.proof", registry=registry,
                               quorum=quorum, beside=path.parent)  # fmt: skip
        expected = _file_subjects(proof, root)
    else:
        verdict = verify_proof(proof, settings, registry=registry, quorum=quorum, beside=path.parent)
        expected = _file_subjects(proof, None)
    want = {s["name"]: s["digest"] for s in expected}
    for statement in statements:
        got = (
            {s.get("name"): s.get("digest") for s in statement["subject"]}
            if isinstance(statement["subject"], list)
            else {}
        )
        if got != want:
            differ = sorted(n for n in set(got) | set(want) if got.get(n) != want.get(n))
            raise Tampered(
                f"{path}: the subjects of the {statement['predicateType']} statement differ from what is anchored:"
                f" {', '.join(str(n) for n in differ[:10])}",
                detail={"subjects": [str(n) for n in differ[:100]]},
            )
        if statement["predicateType"] == SLSA_PROVENANCE:
            _check_slsa(statement["predicate"], proof, path)
    return verdict


def _check_slsa(predicate: Any, proof: ProofFile, path: Path) -> None:
    if proof.manifest.get("kind") != "bundle":
        raise Tampered(f"{path}: SLSA provenance for a {proof.manifest.get('kind')} manifest", detail={})
    want = {d["name"]: d["digest"] for d in _slsa_dependencies(proof)}
    try:
        got = {d["name"]: d["digest"] for d in predicate["buildDefinition"]["resolvedDependencies"]}
    except (KeyError, TypeError):
        raise Tampered(f"{path}: the SLSA predicate has no resolved dependencies", detail={}) from None
    for name in sorted(set(want) | set(got)):
        if got.get(name) != want.get(name):
            raise Tampered(
                f"{path}: the SLSA dependency {name!r} is not the one the bundle manifest binds",
                detail={"dependency": name},
            )


def write_statements(statements: list[dict[str, Any]], out: Path) -> None:
    """JSON Lines, one statement per line; refuses to overwrite (`BadInput`)."""
    from anchor.files import atomic_write

    if out.exists():
        raise BadInput(f"{out}: exists; not overwritten (choose another --out, or remove it)", detail={"field": "out"})
    atomic_write(out, "".join(json.dumps(s, sort_keys=True) + "\n" for s in statements).encode("utf-8"))


__all__ = ["attest", "load_proof", "read_statements", "statement_path", "verify_statements", "write_statements"]
