"""Anchor a search: the contract before the first attempt (pre-registration), then every attempt as an
attempt manifest in batches, kept attempts also as direct lineage records, and the ledger head, whose
length proves how many trials stand behind the champion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anchor.errors import Tampered
from anchor.files import private_dir
from anchor.manifest.attempt import AttemptManifest
from anchor.manifest.filetree import hash_tree
from anchor.manifest.onchain import LEDGER_TAG, commit_key
from anchor.research.ledger import AnyLedger, is_attempt
from anchor.settings.session import Settings

ATTEMPT_FIELDS = (
    "kind", "version", "commit", "parent", "diff_blake3", "metric", "metric_hash", "kept", "status", "researcher",
    "contract_digest",
)  # fmt: skip
ATTEMPT_FIELDS_V2 = (*ATTEMPT_FIELDS, "evidence", "sandbox")
"""Version 2 adds these; a version 1 entry may carry `sandbox` beside the manifest, outside it."""
ATTEMPT_FIELDS_V3 = (*ATTEMPT_FIELDS_V2, "measured_by", "partial")
ATTEMPT_FIELDS_V4 = (*ATTEMPT_FIELDS_V3, "environment")


def contract_digest(contract_path: Path) -> str:
    """The contract's identity: the digest of its file-tree manifest (one file)."""
    return hash_tree(contract_path).digest.hex()


def preregister(settings: Settings, contract_path: Path, proof_out: Path, services: Any = None) -> str:
    """Anchor the contract before any attempt runs; returns its digest. With `services`, through them:
    the receipt (pending proof) is the pre-registration's evidence until the upgrade."""
    if services:
        from anchor.anchoring.client import stamp_through

        tree = hash_tree(contract_path)
        return stamp_through(tree.identity(), tree.files_json(), services, proof_out).digest[2:]
    from anchor.anchoring.stamp import anchor_path

    outcome = anchor_path(contract_path, settings, proof_out)
    return outcome.proof.manifest_digest[2:]


def attempt_of(entry: dict[str, Any]) -> AttemptManifest:
    """The attempt manifest a ledger entry stands for; its digest must be the one the entry recorded."""
    by_version = {2: ATTEMPT_FIELDS_V2, 3: ATTEMPT_FIELDS_V3, 4: ATTEMPT_FIELDS_V4}
    names = by_version.get(entry.get("version", 1), ATTEMPT_FIELDS)
    manifest = AttemptManifest.model_validate({k: entry[k] for k in names if k in entry})
    if manifest.digest.hex() != entry["attempt_digest"]:
        raise Tampered(
            f"ledger entry {entry['seq']}: attempt_digest does not match its fields", detail={"seq": entry["seq"]}
        )
    return manifest


def sign_record(
    researcher: Any, registry: Any, commit: bytes, parent: bytes, diff_hash: bytes, metric_hash: bytes, kept: bool
) -> Any:
    """The researcher's EIP-712 signature over one lineage record, valid for ANCHOR_SIGNATURE_TTL_S
    seconds (default 7 days: a record journaled now is still accepted by a flush next week)."""
    import time

    from anchor.chain.signed import LineageFields
    from anchor.settings.session import env_number

    ttl = int(env_number("ANCHOR_SIGNATURE_TTL_S", 7 * 24 * 3600))
    fields = LineageFields(researcher.address, commit, parent, diff_hash, metric_hash, kept, int(time.time()) + ttl)
    return researcher.sign_lineage(registry.chain_id, registry.address, fields)


def checkpoint_path(ledger: AnyLedger, length: int) -> Path:
    return ledger.workdir / "checkpoints" / f"{length:08d}.anchor.json"


def anchor_search(
    settings: Settings, ledger: AnyLedger, since: int = 0, service: Any = None, flush: bool = True
) -> dict[str, Any]:
    """Submit the attempts from seq `since` on and the ledger head, open lineage effects for their kept
    attempts, flush.

    Idempotent: the journal deduplicates by digest and by commit, so running it again (since 0) after a
    crash or a resumed search anchors only what is new. A checkpoint passes the length it anchored last
    time as `since`, so a long search does not hash, submit and sign its whole ledger at every one.
    With an open `service` it is used and left open; `flush=False` only journals (durably), leaving the
    chain to whoever flushes next (a checkpoint's background flusher, the end of the run).
    """
    from anchor.anchoring.service import AnchorService
    from anchor.chain.keys import load_researcher
    from anchor.journal.submit import Submission

    verified = ledger.verify()
    rows = ledger.rows()
    entries = [row for row in rows if is_attempt(row)]
    private_dir(checkpoint_path(ledger, 0).parent)
    new = [row for row in rows[since:] if is_attempt(row)]  # `since` counts rows: traces are in the head
    subs = [Submission(attempt_of(e).identity(), {"annotations": {"ledger_seq": e["seq"]}}) for e in new]
    head = {"kind": "ledger", "version": 1, "head": verified["head"], "length": verified["entries"]}
    # the head's proof is kept beside the ledger: `research verify` reads every one back from the chain
    subs.append(Submission(head, {}, proof_path=checkpoint_path(ledger, verified["entries"])))
    own = service is None
    service = AnchorService.open(settings) if own else service
    try:
        service.submit(subs)
        kept = [e for e in entries if e["kept"]]
        # one lineage record per commit: researchers cloned from one repository share its baseline commit;
        # the first measurement in ledger order is the on-chain record, every one stays an attempt manifest
        first_kept = {e["commit"]: e for e in reversed(kept)}
        # with a researcher key (ANCHOR_RESEARCHER_KEY) on registry v2, each record is signed by the
        # researcher and relayed: the signer, not whoever pays, is the record's researcher
        researcher = load_researcher() if service.registry.researcher_bound else None
        for e in (e for e in first_kept.values() if e["seq"] >= since):
            fields = (
                commit_key(e["commit"]), commit_key(e["parent"]), bytes.fromhex(e["diff_blake3"]),
                bytes.fromhex(e["metric_hash"]), True,
            )  # fmt: skip
            signed = None if researcher is None else sign_record(researcher, service.registry, *fields)
            service.runner.open_lineage(*fields, signed=signed)
        for fields in _checkpoint_records(rows, verified):  # found on chain even without the proof file
            signed = None if researcher is None else sign_record(researcher, service.registry, *fields)
            service.runner.open_lineage(*fields, signed=signed)
        if flush:
            service.flush()
    finally:
        if own:
            service.close()
    return {
        "attempts": len(entries),
        "kept": len(kept),
        "ledger_head": verified["head"],
        "ledger_length": verified["entries"],
    }


def anchor_search_through(ledger: AnyLedger, services: Any, since: int = 0) -> dict[str, Any]:
    """`anchor_search` with no key and no journal here: every attempt's identity and the ledger head
    go to the services (the head's pending proof beside the ledger, as a checkpoint), and each kept
    attempt's lineage record is signed with the researcher's own key (ANCHOR_RESEARCHER_KEY) and
    relayed by each service, which pays and never sees the key: the record is the researcher's."""
    from anchor.anchoring.client import relay_lineage, stamp_through, submit_everywhere
    from anchor.chain.keys import load_researcher
    from anchor.errors import BadInput

    researcher = load_researcher()
    if researcher is None:
        raise BadInput(
            "research run --service: set ANCHOR_RESEARCHER_KEY (or ANCHOR_RESEARCHER_KEYSTORE): each kept attempt's"
            " record is signed by the researcher and relayed by the service (no funded key is needed here)",
            detail={"field": "ANCHOR_RESEARCHER_KEY"},
        )
    verified = ledger.verify()
    rows = ledger.rows()
    entries = [row for row in rows if is_attempt(row)]
    private_dir(checkpoint_path(ledger, 0).parent)
    for entry in (row for row in rows[since:] if is_attempt(row)):
        _, failed = submit_everywhere(services, attempt_of(entry).identity(), {"ledger_seq": entry["seq"]})
        if len(failed) == len(services):
            from anchor.errors import ServiceError

            raise ServiceError("no service took the attempts: " + "; ".join(f"{u}: {w}" for u, w in failed.items()),
                               detail={"services": failed})  # fmt: skip
    head = {"kind": "ledger", "version": 1, "head": verified["head"], "length": verified["entries"]}
    stamp_through(head, None, services, checkpoint_path(ledger, verified["entries"]))
    kept = [e for e in entries if e["kept"]]
    first_kept = {e["commit"]: e for e in reversed(kept)}
    for e in (e for e in first_kept.values() if e["seq"] >= since):
        fields = (commit_key(e["commit"]), commit_key(e["parent"]), bytes.fromhex(e["diff_blake3"]),
                  bytes.fromhex(e["metric_hash"]), True)  # fmt: skip
        for service in services:
            relay_lineage(service, researcher, fields)
    for fields in _checkpoint_records(rows, verified):
        for service in services:
            relay_lineage(service, researcher, fields)
    return {"attempts": len(entries), "kept": len(kept), "ledger_head": verified["head"],
            "ledger_length": verified["entries"], "researcher": researcher.address,
            "services": [s.url for s in services]}  # fmt: skip


def checkpoint_record(
    head: str, length: int, contract_digest: str, genesis: str
) -> tuple[bytes, bytes, bytes, bytes, bool]:
    """(commit, parent, diffHash, metricHash, kept) of the lineage record of one ledger head; `genesis`
    is the digest of the ledger's first row."""
    which = bytes.fromhex(genesis)[:24] + length.to_bytes(8, "big")
    return bytes.fromhex(head), bytes.fromhex(contract_digest), LEDGER_TAG, which, False


def _checkpoint_records(
    rows: list[dict[str, Any]], verified: dict[str, Any]
) -> list[tuple[bytes, bytes, bytes, bytes, bool]]:
    """The ledger head's own lineage record (anchor.research.checkpoints), once the ledger has an
    attempt to name its contract."""
    contract = next((e["contract_digest"] for e in rows if is_attempt(e) and "contract_digest" in e), None)
    if contract is None:
        return []
    return [checkpoint_record(verified["head"], verified["entries"], contract, rows[0]["digest"])]


def anchor_champions(settings: Settings, workdir: Path, services: Any = None) -> list[Path]:
    """Anchor every champion record (anchor.research.final) that has no proof beside it yet; returns the
    proofs written. Run after `anchor_search`, so the ledger head each record names is on chain too."""
    import json

    from anchor.anchoring.service import AnchorService
    from anchor.journal.submit import Submission
    from anchor.manifest.decode import validate_identity

    pending = []
    for path in sorted(workdir.glob("runs/*/champion-*.json")):
        if path.name.endswith(".anchor.json"):
            continue
        proof = path.with_name(path.name.removesuffix(".json") + ".anchor.json")
        if not proof.exists():
            identity = validate_identity(json.loads(path.read_text())["manifest"], str(path))
            pending.append(Submission(identity, {}, proof_path=proof))
    if pending and services:
        from anchor.anchoring.client import stamp_through

        for sub in pending:
            assert sub.proof_path is not None
            stamp_through(sub.identity, None, services, sub.proof_path)
    elif pending:
        service = AnchorService.open(settings)
        try:
            service.submit(pending)
            service.flush()
        finally:
            service.close()
    return [s.proof_path for s in pending if s.proof_path is not None]
