"""Anchor a search: the contract before the first attempt (pre-registration), then every attempt as an
attempt manifest in batches, kept attempts also as direct lineage records, and the ledger head, whose
length proves how many trials stand behind the champion."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import Tampered
from anchor.files import private_dir
from anchor.manifest.attempt import AttemptManifest
from anchor.manifest.filetree import hash_tree
from anchor.manifest.onchain import LEDGER_TAG, commit_key
from anchor.research.ledger import AnyLedger, LedgerRow, is_attempt

if TYPE_CHECKING:
    from anchor.anchoring.stamper import Stamper

ATTEMPT_FIELDS = (
    "kind",
    "version",
    "commit",
    "parent",
    "diff_blake3",
    "metric",
    "metric_hash",
    "kept",
    "status",
    "researcher",
    "contract_digest",
)
ATTEMPT_FIELDS_V2 = (*ATTEMPT_FIELDS, "evidence", "sandbox")
"""Version 2 adds these; a version 1 entry may carry `sandbox` beside the manifest, outside it."""
ATTEMPT_FIELDS_V3 = (*ATTEMPT_FIELDS_V2, "measured_by", "partial")
ATTEMPT_FIELDS_V4 = (*ATTEMPT_FIELDS_V3, "environment")
ATTEMPT_FIELDS_V5 = (*ATTEMPT_FIELDS_V4, "keep_rule")


def contract_digest(contract_path: Path) -> str:
    """The contract's identity: the digest of its file-tree manifest (one file)."""
    return hash_tree(contract_path).digest.hex()


def preregister(stamper: Stamper, contract_path: Path, proof_out: Path) -> str:
    """Anchor the contract before any attempt runs; returns its digest. Through services, the receipt
    (a pending proof) is the pre-registration's evidence until the upgrade."""
    return stamper.stamp(contract_path, out=proof_out).digest[2:]


def attempt_of(entry: LedgerRow) -> AttemptManifest:
    """The attempt manifest a ledger entry stands for; its digest must be the one the entry recorded."""
    by_version = {2: ATTEMPT_FIELDS_V2, 3: ATTEMPT_FIELDS_V3, 4: ATTEMPT_FIELDS_V4, 5: ATTEMPT_FIELDS_V5}
    names = by_version.get(entry.get("version", 1), ATTEMPT_FIELDS)
    fields: Mapping[str, object] = entry
    manifest = AttemptManifest.model_validate({k: fields[k] for k in names if k in fields})
    if manifest.digest.hex() != entry["attempt_digest"]:
        raise Tampered(
            f"ledger entry {entry['seq']}: attempt_digest does not match its fields", detail={"seq": entry["seq"]}
        )
    return manifest


def checkpoint_path(ledger: AnyLedger, length: int) -> Path:
    return ledger.workdir / "checkpoints" / f"{length:08d}.anchor.json"


def anchor_search(stamper: Stamper, ledger: AnyLedger, since: int = 0, flush: bool = True) -> dict[str, Any]:
    """Anchor the attempts from seq `since` on, the ledger head and the kept attempts' lineage records.

    Idempotent: the journal (or a service) deduplicates by digest and by commit, so running it again
    (since 0) after a crash or a resumed search anchors only what is new. A checkpoint passes the length
    it anchored last time as `since`, so a long search does not hash, submit and sign its whole ledger
    at every one. `flush=False` only journals (durably), where there is a journal, leaving the chain to
    whoever flushes next (a checkpoint's background flusher, the end of the run). The Stamper decides
    how: with the key here, records signed by the researcher's key when the registry binds researchers;
    through services, every record signed by the researcher's own key and relayed.
    """
    verified = ledger.verify()
    rows = ledger.rows()
    entries = [row for row in rows if is_attempt(row)]
    private_dir(checkpoint_path(ledger, 0).parent)
    new = [row for row in rows[since:] if is_attempt(row)]  # `since` counts rows: traces are in the head
    attempts = [(attempt_of(e).identity(), int(e["seq"])) for e in new]
    head = {"kind": "ledger", "version": 1, "head": verified["head"], "length": verified["entries"]}
    kept = [e for e in entries if e["kept"]]
    # one lineage record per commit: researchers cloned from one repository share its baseline commit;
    # the first measurement in ledger order is the on-chain record, every one stays an attempt manifest
    first_kept = {e["commit"]: e for e in reversed(kept)}
    lineage = [
        (
            commit_key(e["commit"]),
            commit_key(e["parent"]),
            bytes.fromhex(e["diff_blake3"]),
            bytes.fromhex(e["metric_hash"]),
            True,
        )
        for e in first_kept.values()
        if e["seq"] >= since
    ]
    lineage += _checkpoint_records(rows, verified)  # found on chain even without the proof file
    said = stamper._record_search(attempts, head, checkpoint_path(ledger, verified["entries"]), lineage, flush)
    return {
        "attempts": len(entries),
        "kept": len(kept),
        "ledger_head": verified["head"],
        "ledger_length": verified["entries"],
        **said,
    }


def checkpoint_record(
    head: str, length: int, contract_digest: str, genesis: str
) -> tuple[bytes, bytes, bytes, bytes, bool]:
    """(commit, parent, diffHash, metricHash, kept) of the lineage record of one ledger head; `genesis`
    is the digest of the ledger's first row."""
    which = bytes.fromhex(genesis)[:24] + length.to_bytes(8, "big")
    return bytes.fromhex(head), bytes.fromhex(contract_digest), LEDGER_TAG, which, False


def _checkpoint_records(
    rows: list[LedgerRow], verified: dict[str, Any]
) -> list[tuple[bytes, bytes, bytes, bytes, bool]]:
    """The ledger head's own lineage record (anchor.research.checkpoints), once the ledger has an
    attempt to name its contract."""
    contract = next((e["contract_digest"] for e in rows if is_attempt(e) and "contract_digest" in e), None)
    if contract is None:
        return []
    return [checkpoint_record(verified["head"], verified["entries"], contract, rows[0]["digest"])]


def anchor_champions(stamper: Stamper, workdir: Path) -> list[Path]:
    """Anchor every champion record (anchor.research.final) that has no proof beside it yet; returns the
    proofs written. Run after `anchor_search`, so the ledger head each record names is on chain too."""
    import json

    from anchor.manifest.decode import validate_identity

    pending = []
    for path in sorted(workdir.glob("runs/*/champion-*.json")):
        if path.name.endswith(".anchor.json"):
            continue
        proof = path.with_name(path.name.removesuffix(".json") + ".anchor.json")
        if not proof.exists():
            pending.append((validate_identity(json.loads(path.read_text())["manifest"], str(path)), proof))
    return stamper._stamp_records(pending)
