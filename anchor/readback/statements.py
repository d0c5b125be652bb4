"""In-toto Statements v1 read back: the statements file `anchor attest` writes, decoded and compared.

Why here, below every door and beside the other proof forms: a statements file is one more way a proof
arrives. Its chain-anchor predicate carries the proof file, which the checklist verifies like any
other (anchor.readback.checklist); every subject digest and every SLSA dependency digest must then
equal what that proof binds. Writing statements (anchor.attest.statement) needs a verdict and the
proof store; reading them needs neither, so nothing here calls up into the layer that writes them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from anchor.errors import BadInput, Tampered, did_you_mean_path
from anchor.proof.file import ProofFile

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SLSA_PROVENANCE = "https://slsa.dev/provenance/v1"
CHAIN_ANCHOR = "https://anchor-provenance.invalid/chain-anchor/v1"
"""Our predicate (docs/attestations.md). The project has no public domain yet: `.invalid` says so."""
MAX_STATEMENTS_BYTES = 64 * 1024 * 1024


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
        shapes = (
            ("predicateType", isinstance(item["predicateType"], str), "a string"),
            ("predicate", isinstance(item["predicate"], dict), "an object"),
            (
                "subject",
                isinstance(subjects, list)
                and all(
                    isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("digest"), dict)
                    for s in subjects
                ),
                "a list of {name, digest} objects",
            ),
        )
        for field, fits, expected in shapes:
            if not fits:
                raise BadInput(
                    f"{path}:{number}: {field} is not {expected}",
                    detail={"file": str(path), "line": number, "field": field},
                )
        statements.append(item)
    if not statements:
        raise BadInput(f"{path}: no statements", detail={"file": str(path)})
    return statements


def file_subjects(proof: ProofFile, root: Path | None) -> list[dict[str, Any]]:
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
        tree = proof._filetree()
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


def slsa_dependencies(proof: ProofFile) -> list[dict[str, Any]]:
    """The resolved dependencies a bundle manifest binds: mission, data snapshot, image, evaluator policy."""
    m = proof.manifest
    out = [
        {"name": "mission", "digest": {"sha256": m["mission_sha256"]}},
        {"name": "data_snapshot", "digest": {"sha256": m["data_snapshot_sha256"]}},
    ]
    if "image" in m:  # a version 3 bundle run on a host claims no image: none is listed
        image_name, _, image_digest = str(m["image"]).partition("@")
        out.append(
            {
                "name": "image",
                "uri": f"docker://{image_name}",
                "digest": {"sha256": image_digest.removeprefix("sha256:")},
            }
        )
    out.append({"name": "evaluator_policy", "digest": {"sha256": m["evaluator_policy_sha256"]}})
    return out


def check_subjects(statements: tuple[dict[str, Any], ...], proof: ProofFile, root: Path | None, path: Path) -> None:
    """Every statement's subjects, and a provenance statement's resolved dependencies, are what `proof`
    binds (the files' SHA-256 computed from `root` when they are here); `Tampered` names what differs."""
    want = {s["name"]: s["digest"] for s in file_subjects(proof, root)}
    for statement in statements:
        subject = statement["subject"]
        listed = subject if isinstance(subject, list) else []
        named = [s for s in listed if isinstance(s, dict) and isinstance(s.get("name"), str)]
        got = {s["name"]: s.get("digest") for s in named}
        if not isinstance(subject, list) or len(got) != len(subject):  # one entry a reader could take two ways
            raise Tampered(
                f"{path}: the subjects of the {statement['predicateType']} statement are not one named entry per"
                " subject (an entry of no name, or a name twice)",
                detail={"field": "subject"},
            )
        if got != want:
            differ = sorted(str(n) for n in set(got) | set(want) if got.get(n) != want.get(n))
            raise Tampered(
                f"{path}: the subjects of the {statement['predicateType']} statement differ from what is anchored:"
                f" {', '.join(differ[:10])}",
                detail={"subjects": differ[:100]},
            )
        if statement["predicateType"] == SLSA_PROVENANCE:
            _check_slsa(statement["predicate"], proof, path)


CHAIN_CLAIMS = (
    ("chainId", "chain_id"),
    ("registry", "registry"),
    ("txHash", "tx_hash"),
    ("blockNumber", "anchored_block"),
    ("anchoredAt", "anchored_at"),
    ("submitter", "submitter"),
)
"""The chain-anchor predicate's fields that restate the verdict (`anchor attest` writes them from it),
with the verdict's field each must equal."""


def check_chain_claims(statements: tuple[dict[str, Any], ...], verdict: Any, path: Path) -> None:
    """What the chain-anchor predicate says of the anchor (its chain, registry, transaction, block, time
    and submitter) is what the verdict read: a reader of the statements after a passing verify takes
    these fields as checked, and an edited submitter or chain once passed. `Tampered` naming the field;
    a field left out claims nothing."""
    for statement in statements:
        if statement["predicateType"] != CHAIN_ANCHOR:
            continue
        predicate = statement["predicate"]
        for field, ours in CHAIN_CLAIMS:
            if field not in predicate:
                continue
            said, read = predicate[field], getattr(verdict, ours)
            same = said.lower() == read.lower() if isinstance(said, str) and isinstance(read, str) else said == read
            if not same or type(said) is not type(read):
                raise Tampered(
                    f"{path}: predicate.{field} says {said!r}, the chain {read!r}",
                    detail={"field": f"predicate.{field}"},
                )


def _check_slsa(predicate: Any, proof: ProofFile, path: Path) -> None:
    if proof.manifest.get("kind") != "bundle":
        raise Tampered(f"{path}: SLSA provenance for a {proof.manifest.get('kind')} manifest", detail={})
    want = {d["name"]: d["digest"] for d in slsa_dependencies(proof)}
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
