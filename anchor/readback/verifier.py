"""Verify a file or directory against a proof file and a live chain read.

On failure every function here raises an `AnchorError`: `Tampered` (names the files),
`ProofFormatError` (the proof is inconsistent), `NotAnchored`, `UnknownRegistry` (the proof names a
registry other than the trusted one), `DeploymentMismatch` (the address does not hold our registry: no
answer is given), `ChainUnreachable`. It never writes anything.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from anchor.batch.merkle import leaf_of, process_proof
from anchor.chain.open import open_chain
from anchor.errors import (
    BadInput,
    NotAnchored,
    NotDeployed,
    NotFinal,
    PolicyMismatch,
    ProofFormatError,
    Retracted,
    Tampered,
    UnknownRegistry,
)
from anchor.manifest.decode import tree_summary, validate_identity
from anchor.manifest.exclude import Rules
from anchor.manifest.filetree import FileEntry, check_relative_path, diff, hash_tree, root_from_audit_path
from anchor.manifest.identity import manifest_digest
from anchor.manifest.onchain import parse_address, parse_hex32
from anchor.proof.file import PendingProof, ProofFile, load_proof
from anchor.readback.quorum import down_once
from anchor.readback.verdict_json import AnchorRow, BundleRan, LaterStamp, PendingRow, Quorum
from anchor.record import Record
from anchor.settings.session import Settings

if TYPE_CHECKING:
    from anchor.chain.registry import Registry, Retraction, RootRecord
    from anchor.proof.file import ChainAnchor
    from anchor.sealing.check import RecordState, SealedEvidence


VerdictStatus = Literal["verified", "verified_offline", "partly_pending", "superseded"]
"""What a returned verdict rests on, the first that holds: "superseded" (true of what the path held then:
its current proof names a later stamp, `superseded_by`), "partly_pending" (the anchors `require` asks
for are verified, other services' receipts are still pending: `pending`, `anchor.upgrade` later),
"verified_offline" (against the blocks you trust, with no network: `trusted` says what it cannot see),
"verified" (read live from the chain, nothing pending). A check that fails is never a status: it is
raised as its typed error, whose `code` says it (`pending`, `retracted`, `tampered`, …)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Verification(Record):
    """A successful verification, backed by a live chain read at `read_at_block` (or, offline, by the
    blocks trusted); `status` says which, and what is still open."""

    verified: Literal[True] = True
    status: VerdictStatus = "verified"
    """Derived from the fields below whenever a verdict is made or copied (a value given is replaced)."""
    manifest_digest: str
    root: str
    chain_id: int
    registry: str
    registry_trusted_by: str
    """Why this registry is believed: "deployment record" (ours for the chain) or "--registry"."""
    submitter: str
    """The account that anchored the root, as the registry recorded it."""
    anchored_at: str
    """The anchoring block's time, ISO 8601 UTC: the data existed at least since then."""
    tx_hash: str
    anchored_block: int
    read_at_block: int
    confirmations: int
    """Blocks on top of the anchoring block at `read_at_block` (1 = in the latest block)."""
    finality: str
    """"finalized" or "safe" when the chain's `finalized` / `safe` block has reached the anchoring
    block, else "N confirmations": how likely the record is to survive a reorg."""
    safe_block: int | None = None
    finalized_block: int | None = None
    """The chain's `safe` and `finalized` heads at the read (None where the node has no such tag)."""
    files: int
    path_in_bundle: str | None = None
    """For a single-file proof: the file's path inside the anchored bundle."""
    quorum: Quorum | None = None
    """With several read endpoints: the quorum, who agreed, and what each dissenter said."""
    trusted: str | None = None
    """Offline (`--offline`): what the verdict rests on, in words (a trusted block hash, and one of the later
    block whose state the proof carries), and what it cannot see (a retraction after the last of them)."""
    bundle: BundleRan | None = None
    """For a result bundle: what ran, as its verified identity binds it (mission, snapshot, image and
    policy SHA-256, and for version 2 its budget and resource profile)."""
    milestones: dict[str, str] | None = None
    """A result bundle's latency milestones, as its proof shows them."""
    milestones_anchored: bool | None = None
    """True: they are the ones its anchored timing record binds (checked on chain); False: the proof
    carries milestones but no timing record (written, not verified)."""
    service: str | None = None
    """The service (URL) whose anchor this verdict is about, when it was stamped through services."""
    anchors: list[AnchorRow] | None = None
    """With several anchors (docs/calendar.md): each one's chain, registry, submitter, time, or why not."""
    pending: list[PendingRow] | None = None
    """Receipts of services that have not anchored it yet (or whose anchor is not in the file yet)."""
    required: str | None = None
    """The anchors policy met (`--require any|all|N`)."""
    superseded_by: LaterStamp | None = None
    """The path's current proof file names a later stamp of other bytes (`Verifier.verify` of a path with
    an earlier proof): its `proof`, and the `manifest_digest` and `anchored_block` it states, as that file
    says them (a claim this verdict does not verify; verifying the path with its current proof does).
    The verdict is true of what the path held then, and says so."""

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "status", self._status())

    def model_copy(self, *, update: Mapping[str, object] | None = None) -> Verification:
        copied = super().model_copy(update=update)
        object.__setattr__(copied, "status", copied._status())
        return copied

    def _status(self) -> VerdictStatus:
        if self.superseded_by is not None:
            return "superseded"
        if self.pending:
            return "partly_pending"
        return "verified_offline" if self.trusted is not None else "verified"

    @property
    def ok(self) -> bool:
        """True only when nothing is left open (`status` "verified" or "verified_offline"): a proof whose
        path has moved on to a later stamp, or with receipts still pending, is verified but not ok.
        What fails is raised as its typed error (`anchor.errors`), never returned."""
        return self.status in ("verified", "verified_offline")

    def to_json(self) -> dict[str, object]:
        return self.model_dump()


def check_proof_consistency(proof: ProofFile) -> bytes:
    """Recompute everything the proof states from what it contains; return the batch root.

    The identity is re-validated for its kind and its digest recomputed; a listing must rebuild the
    identity's tree, a single-file audit path must lead to its root; the batch path must lead to
    `batch.root`. Raises `ProofFormatError` (or `BadInput`) naming the first field that disagrees.
    """
    digest, summary = check_manifest_and_listing(proof)
    if proof.batch.item != proof.manifest_digest:
        raise ProofFormatError(
            "proof: manifest_digest does not match its manifest", detail={"field": "manifest_digest"}
        )
    if proof.file is not None:
        inclusion = proof.file
        check_relative_path(inclusion.path)
        leaf = FileEntry(inclusion.path, inclusion.size, inclusion.blake3).leaf_hash()
        siblings = [_hex32(h, "file.audit_path") for h in inclusion.audit_path]
        reached = root_from_audit_path(leaf, inclusion.index, inclusion.tree_size, siblings)
        if summary is None or reached is None or reached.hex() != summary["files_root"]:
            raise ProofFormatError("proof: file.audit_path does not lead to the files root", detail={"field": "file"})
        if inclusion.tree_size != summary["file_count"]:
            raise ProofFormatError("proof: file.tree_size is not the manifest's file_count", detail={"field": "file"})
    if "0x" + leaf_of(digest).hex() != proof.batch.leaf:
        raise ProofFormatError(
            "proof: batch.leaf is not the leaf of the manifest digest", detail={"field": "batch.leaf"}
        )
    root = process_proof(digest, [_hex32(p[2:], "batch.proof") for p in proof.batch.proof])
    if "0x" + root.hex() != proof.batch.root:
        raise ProofFormatError("proof: batch.proof does not lead to batch.root", detail={"field": "batch.proof"})
    return root


def check_manifest_and_listing(proof: Any) -> tuple[bytes, dict[str, Any] | None]:
    """(digest, tree summary) of a proof's manifest, complete or pending: the identity re-validated for
    its kind, its digest the one the proof states, and its listing (if any) rebuilding its tree."""
    identity = validate_identity(proof.manifest, "proof manifest")
    digest = manifest_digest(identity)
    if "0x" + digest.hex() != proof.manifest_digest:
        raise ProofFormatError(
            "proof: manifest_digest does not match its manifest", detail={"field": "manifest_digest"}
        )
    summary = tree_summary(identity)
    tree = proof._filetree()
    if tree is not None and tree.summary() != summary:
        raise ProofFormatError("proof: files do not rebuild the manifest's file tree", detail={"field": "files"})
    return digest, summary


def _hex32(text: str, field: str) -> bytes:
    return parse_hex32(text, f"proof {field}", ProofFormatError)


PIN_FIELDS = ("mission_sha256", "data_snapshot_sha256", "image", "evaluator_policy_sha256")
"""What a resumed bundle must share with the bundle it continues: the dispatcher's rule (docs/missions.md)."""


def check_resume_pin(
    bundle: dict[str, Any], settings: Settings, registry: str | None = None, live: bool = True,
    quorum: int | None = None, find: Callable[[bytes], ProofFile | None] | None = None,
) -> None:  # fmt: skip
    """Refuse a resume pin the dispatcher would refuse: the pinned bundle must be anchored (its proof in
    the data dir's proof store, verified against a live read when `live`) and bind the same mission,
    snapshot, image and evaluator policy. `NotAnchored` (exit 3) or `BadInput` (exit 2) naming
    `resume.<field>`, as the dispatcher names them. `find`: the proof store (anchor.anchoring.proofs,
    above this layer); without it, only a per-item proof file of an older data dir is read."""
    pin = bundle.get("resume") if bundle.get("kind") == "bundle" else None
    if not isinstance(pin, dict):
        return
    digest = str(pin.get("digest", ""))
    well_formed = re.fullmatch("[0-9a-f]{64}", digest) is not None
    stored = settings.layout.proof(digest) if well_formed else None
    pinned = None
    if stored is not None and stored.is_file():
        pinned = load_proof(stored)
    elif well_formed and find is not None:
        pinned = find(bytes.fromhex(digest))
    if pinned is None:
        raise NotAnchored(
            f"resume.digest: the pinned bundle 0x{digest[:64]} is not anchored here (no proof of it in"
            f" the proof store of {settings.data_dir}); a resumed bundle is only as good as the bundle it continues",
            detail={"field": "resume.digest"},
        )
    if pinned.manifest_digest != "0x" + digest or pinned.manifest.get("kind") != "bundle":
        raise NotAnchored(f"resume.digest: {stored or 'the proof store'} holds no proof of bundle 0x{digest}",
                          detail={"field": "resume.digest"})  # fmt: skip
    for field in PIN_FIELDS:
        if pinned.manifest.get(field) != bundle.get(field):
            raise BadInput(
                f"resume: the pinned bundle's {field} is {pinned.manifest.get(field)},"
                f" this bundle's {bundle.get(field)}",
                detail={"field": f"resume.{field}"},
            )
    if live:  # under the same quorum as the bundle's own anchor: not the first endpoint's word alone
        leaned_on(pinned, settings, registry, quorum)


def check_milestones(
    verdict: Verification,
    proof: ProofFile,
    beside: Path,
    settings: Settings,
    registry: str | None = None,
    find: Callable[[bytes], ProofFile | None] | None = None,
    quorum: int | None = None,
) -> Verification:
    """Compare the milestones a bundle proof shows with its anchored timing record (docs/manifest.md,
    "Timing record"); `Tampered` names every milestone that differs. `find`: where else a timing
    proof may come from when no file holds it (a service replica rebuilds it from the shared journal);
    whatever it returns is checked exactly as a file's would be. The timing record's anchor is read
    under the same quorum as the bundle's (read from the first endpoint alone, one lying endpoint
    listed first made a verified bundle "not anchored")."""
    shown = proof.annotations.get("milestones")
    if proof.manifest.get("kind") != "bundle" or not isinstance(shown, dict):
        return verdict
    link = proof.annotations.get("timing")
    if not isinstance(link, dict):
        return verdict.model_copy(update={"milestones": shown, "milestones_anchored": False})
    from anchor.manifest.bundle import TIMING_PROOF_NAME

    digest = str(link.get("digest", "")).lower().removeprefix("0x")
    named = str(link.get("proof", ""))  # display data: used only as a bare name beside the bundle's proof
    candidates = [*([beside / named] if TIMING_PROOF_NAME.match(named) else []), settings.layout.proof(digest)]
    found = next((c for c in candidates if c.name and c.is_file()), None)
    well_formed = re.fullmatch("[0-9a-f]{64}", digest) is not None
    rebuilt = find(bytes.fromhex(digest)) if found is None and find is not None and well_formed else None
    if found is None and rebuilt is None:
        raise NotAnchored(
            f"the bundle's timing record 0x{digest} has no proof here ({candidates[0]})",
            detail={"field": "annotations.timing", "timing": "0x" + digest},
        )
    timing = load_proof(found) if found is not None else rebuilt
    assert timing is not None
    where = found or f"the journal's proof of 0x{digest}"
    if timing.manifest_digest.removeprefix("0x") != digest or timing.manifest.get("kind") != "timing":
        raise Tampered(f"{where}: not the timing record the bundle names", detail={"field": "annotations.timing"})
    if timing.manifest.get("bundle") != proof.manifest_digest.removeprefix("0x"):
        raise Tampered(f"{where}: times another bundle", detail={"field": "annotations.timing"})
    anchored = timing.manifest.get("milestones") or {}
    if not isinstance(anchored, dict):  # validated when the record was anchored: a dict of names to times
        raise Tampered(f"{where}: its milestones are not a record of times", detail={"field": "annotations.timing"})
    differ = sorted(n for n in set(shown) | set(anchored) if shown.get(n) != anchored.get(n))
    if differ:
        raise Tampered(
            "milestones differ from the anchored timing record: "
            + ", ".join(f"{n} (proof says {shown.get(n)}, anchored {anchored.get(n)})" for n in differ),
            detail={"milestones": differ},
        )
    timed = leaned_on(timing, settings, registry, quorum)
    if timed.submitter.lower() != verdict.submitter.lower():  # the registry is open: anyone may anchor a record
        raise Tampered(
            f"the timing record was anchored by {timed.submitter}, the bundle by {verdict.submitter}",
            detail={"field": "annotations.timing", "submitter": timed.submitter},
        )
    return verdict.model_copy(update={"milestones": shown, "milestones_anchored": True})


def agreed_on_chain(
    proof: ProofFile, root: bytes, settings: Settings, files: int, registry: str | None, quorum: int | None
) -> Verification:
    """Steps 3-6 on every read endpoint of `settings`, a quorum agreeing (the weakest finality among the
    agreeing answers), with how it was agreed and, for a single-file proof, the file's path. A retired
    registry is refused first, once, whatever the endpoints (`refuse_retired`: nothing to read)."""
    refuse_retired(proof)
    if settings.offline:  # the sealed section against a trusted block hash: no socket at all
        return sealed_verdict(proof, root, settings, files, registry)
    from anchor.readback.quorum import read_agreed

    verdict, agreement = read_agreed(
        settings, lambda one: _on_one_endpoint(proof, root, one, files=files, registry=registry), asserts, quorum,
        weakest,
    )  # fmt: skip
    update: dict[str, Any] = {"quorum": agreement}
    if proof.file is not None:
        update["path_in_bundle"] = proof.file.path
    return verdict.model_copy(update=update)


def sealed_verdict(proof: ProofFile, root: bytes, settings: Settings, files: int, registry: str | None) -> Verification:
    """Steps 3-6 offline (`--offline`): the proof's sealed anchor against the block hash the verifier
    trusts (anchor.sealing.check), in place of a live read; `trusted` says in words what it rests on."""
    from anchor.sealing.check import check_sealed, later_state

    bundle = bundle_fields(proof)
    seen = check_sealed(proof.anchor, root, settings, registry)
    state = later_state(proof.anchor, root, seen, settings)
    declared = file_retraction(proof)
    if state is not None and state.retracted_block:
        raise retracted_as_of(proof, seen.submitter, state, declared)
    declared_at = declared.get("block_number") if declared is not None else None
    if declared is not None and (state is None or not isinstance(declared_at, int) or declared_at > state.block_number):
        raise retracted_by_file(proof, declared)  # the file's own word against it, which nothing here denies
    return Verification(
        manifest_digest=proof.manifest_digest, root=proof.batch.root, chain_id=proof.anchor.chain_id,
        registry=proof.anchor.registry,
        registry_trusted_by="canonical address, offline: its address certifies its code",
        submitter=seen.submitter, anchored_at=datetime.fromtimestamp(seen.timestamp, UTC).isoformat(timespec="seconds"),
        tx_hash=proof.anchor.tx_hash, anchored_block=seen.block_number, read_at_block=seen.block_number,
        confirmations=1, finality="trusted block (offline)", files=files, bundle=bundle,
        trusted=standing_words(proof.anchor, seen, state, declared),
        path_in_bundle=proof.file.path if proof.file is not None else None,
    )  # fmt: skip


def standing_words(
    anchor: ChainAnchor, seen: SealedEvidence, state: RecordState | None, declared: dict[str, Any] | None
) -> str:  # fmt: skip
    """What an offline verdict rests on, in words, and what it says of a retraction after the anchoring
    block: not retracted as of the later block whose state the file carries (checked against its trusted
    hash), or that it could not see one."""
    from anchor.chain.presets import chain_name
    from anchor.sealing.check import sealed_block_number

    if state is None:
        unchecked = ""
        if anchor.sealed is not None and anchor.sealed.state is not None:
            later = sealed_block_number(anchor.sealed.state.header, "anchor.sealed.state.header")
            unchecked = (f"; the file also carries the registry's record as of block {later}, not checked: trust"
                         f" the hash of block {later} as well to see whether it was retracted by then")  # fmt: skip
        return seen.trusted + unchecked
    when = datetime.fromtimestamp(state.timestamp, UTC).isoformat(timespec="seconds")
    contradicted = (f"; the file's own annotations claim a retraction in block {declared.get('block_number')},"
                    " which that state contradicts" if declared is not None else "")  # fmt: skip
    return (
        f"that block {seen.block_number} of {chain_name(anchor.chain_id)} is {seen.block_hash} and block"
        f" {state.block_number} is {state.block_hash}: check them once on any explorer or node; not retracted as of"
        f" block {state.block_number} ({when}), the registry's record in that block's state shows (a retraction"
        f" written after it cannot be seen offline){contradicted}"
    )


def retracted_as_of(
    proof: ProofFile, submitter: str, state: RecordState, declared: dict[str, Any] | None
) -> Retracted:  # fmt: skip
    """The offline verdict on a record whose later state (checked against a trusted hash) shows it retracted:
    when and in which block, as the chain's state says; the reason's text only as the file gives it (the
    digest is in the retraction's event, which a state proof does not carry)."""
    when = datetime.fromtimestamp(state.retracted_at, UTC).isoformat(timespec="seconds")
    reason = declared.get("reason") if declared is not None else None
    said = f'; the file gives the reason (unverified): "{reason}"' if isinstance(reason, str) else ""
    return Retracted(
        f"retracted: root {proof.batch.root} was retracted by its submitter {submitter} at {when} (block"
        f" {state.retracted_block}), as the registry's record shows in block {state.block_number}, whose hash is"
        f" trusted{said}",
        detail={"root": proof.batch.root, "retracted_by": submitter, "retracted_at": when,
                "retracted_block": state.retracted_block, "as_of_block": state.block_number, "source": "state",
                "reason": reason if isinstance(reason, str) else None, "anchored_block": proof.anchor.block_number},
    )  # fmt: skip


def file_retraction(proof: ProofFile) -> dict[str, Any] | None:
    """The latest retraction of this proof's anchor that the file itself records (`annotations.retractions`,
    written by `anchor retract`), as written: the file's word, unverified. An entry naming another chain or
    registry is another anchor's; anything else there that is not a readable entry still declares one
    (an empty dict): a file that says it was withdrawn is not read as one that says nothing."""
    entries = proof.annotations.get("retractions") if isinstance(proof.annotations, dict) else None
    if entries is None:
        return None
    if not isinstance(entries, list):
        return {}
    for entry in reversed(entries):
        if not isinstance(entry, dict):
            return {}
        chain, named = entry.get("chain_id", proof.anchor.chain_id), str(entry.get("registry") or proof.anchor.registry)
        if chain == proof.anchor.chain_id and named.lower() == proof.anchor.registry.lower():
            return entry
    return None


def retracted_by_file(proof: ProofFile, declared: dict[str, Any]) -> Retracted:
    """The offline verdict on a file that records its own retraction, which the trusted anchoring block
    cannot confirm or deny: retracted (exit 16, as the chain's word would be), said to be the file's word."""
    block, reason = declared.get("block_number"), declared.get("reason")
    at = f" in block {block}" if isinstance(block, int) else ""
    why = f': "{reason}"' if isinstance(reason, str) else ""
    return Retracted(
        f"retracted by its own file (unverified): its annotations.retractions say root {proof.batch.root} was"
        f" retracted by its submitter{at}{why}; offline, the anchoring block cannot show whether it was (hint:"
        " verify it online, or `anchor seal --refresh PATH` while the chain is reachable, to carry the"
        " registry's record as of a later block)",
        detail={"root": proof.batch.root, "source": "file", "verified": False, "retracted_block": block,
                "reason": reason if isinstance(reason, str) else None, "retracted_by": declared.get("by")},
    )  # fmt: skip


def leaned_on(
    proof: ProofFile, settings: Settings, registry: str | None = None, quorum: int | None = None, files: int = 0
) -> Verification:
    """A proof a verdict leans on (a bundle's timing record, a resume pin, a ledger checkpoint, a
    service's anchor before it is written in): consistent, and on chain under the same quorum as any
    verdict. The one-endpoint read is private to `agreed_on_chain`: a lying endpoint listed first once
    made a verified bundle "not anchored" through a timing record read from that endpoint alone."""
    return agreed_on_chain(proof, check_proof_consistency(proof), settings, files, registry, quorum)


def files_in(proof: ProofFile) -> int:
    """How many files a proof binds, by its own listing: a bundle's files, 1 for a single-file proof, 0
    for a record that binds none (one rule: the explorer once said 0 where the API said 1)."""
    return len(proof.files) if proof.files is not None else 1 if proof.file is not None else 0


@down_once()  # one verdict asks an endpoint out of reach once, however many reads it makes
def verify_proof(
    proof: ProofFile,
    settings: Settings,
    *,
    data: Path | None = None,
    proof_name: str = "proof",
    registry: str | None = None,
    quorum: int | None = None,
    beside: Path | None = None,
    find: Callable[[bytes], ProofFile | None] | None = None,
) -> Verification:
    """The verdict on a single-anchor proof, whatever door it came through: `anchor verify` (with the
    data here: `data`), an attestation, the API's three verify routes and the explorer (without it).

    1. the proof is consistent (every digest and the Merkle path recomputed: `check_proof_consistency`);
    2. the data, when here, hashes to what the proof binds (`check_data`); else the proof's own count;
    3-6. the chain, read live under the trusted registry on every read endpoint, a quorum agreeing
       (`agreed_on_chain`, `anchor.readback.quorum`);
    7. a result bundle's milestones equal its anchored timing record (`check_milestones`; the timing
       proof beside the bundle's proof, in the data dir's store, or from `find`);
    8. a resumed bundle's pin is anchored and binds the same inputs (`check_resume_pin`).
    A door renders this verdict or the typed error it raises; it adds no step and skips none."""
    root = check_proof_consistency(proof)
    files = check_data(data, proof, proof_name) if data is not None else files_in(proof)
    verdict = agreed_on_chain(proof, root, settings, files, registry, quorum)
    verdict = check_milestones(verdict, proof, beside or settings.proofs_dir, settings, registry, find, quorum)
    check_resume_pin(proof.manifest, settings, registry, quorum=quorum, find=find)
    return verdict


def check_data(path: Path, proof: Any, proof_name: str) -> int:
    """Step 2: recompute the data on disk and name every file that differs from what the proof binds
    (a complete or a pending proof); returns how many files were compared."""
    single = getattr(proof, "file", None)
    if single is not None:
        on_disk = hash_tree(path)
        if len(on_disk.files) != 1:
            raise BadInput(f"{path}: a single-file proof verifies one file, not a directory", detail={"field": "path"})
        entry = on_disk.files[0]
        if (entry.size, entry.blake3) != (single.size, single.blake3):
            raise Tampered(
                f"{path}: differs from the anchored {single.path}",
                detail={
                    "changed": [single.path],
                    "added": [],
                    "removed": [],
                    "sizes": {single.path: [single.size, entry.size]},
                },  # fmt: skip
            )
        files = 1
    else:
        expected = proof._filetree()
        if expected is None:
            raise BadInput(f"{proof_name}: this proof binds no files to compare with {path}", detail={"field": "files"})
        recorded = proof.manifest.get("exclude")  # bound to the digest: these rules and no others
        # links are at least recorded (never followed unless the proof says so), so a link that appeared
        # since is named as added rather than ending the walk
        policy = expected.link_policy if expected.links else "record"
        on_disk = hash_tree(path, Rules(recorded) if recorded else None, policy)
        changes = diff(expected, on_disk)
        # not an edit but another folder's proof: most of the paths on either side are not on the other
        shared = len({e.path for e in expected.files} & {e.path for e in on_disk.files})
        if changes and 2 * shared < min(len(expected.files), len(on_disk.files)):
            from anchor.manifest.identity import manifest_digest

            theirs = "0x" + manifest_digest(on_disk.identity()).hex()
            raise Tampered(
                f"{proof_name} is for manifest {proof.manifest_digest} ({len(expected.files)} files), not this"
                f" folder's {theirs} ({len(on_disk.files)} files): {shared} of their paths in common"
                f" (hint: pass the proof of {path}, or verify the folder {proof_name} was made for)",
                detail={"proof_manifest": proof.manifest_digest, "path_manifest": theirs},
            )
        if changes:
            named = changes.named()
            before = {entry.path: entry.size for entry in expected.files}
            after = {entry.path: entry.size for entry in on_disk.files}
            ours = changes.added and not (changes.changed or changes.removed or changes.renamed) and all(
                p.endswith((".anchor.json", ".intoto.jsonl")) for p in changes.added
            )  # fmt: skip
            raise Tampered(
                f"{path}: does not match the anchored manifest: {', '.join(named[:10])}"
                + (f" and {len(named) - 10} more" if len(named) > 10 else "")
                + (
                    " (only proof or statement files were added since: written into the folder after it was"
                    " anchored, by a stamp of a folder inside it, say; the anchored files themselves are"
                    " unchanged)"
                    if ours
                    else ""
                ),
                detail={
                    "changed": list(changes.changed),
                    "added": list(changes.added),
                    "removed": list(changes.removed),
                    "renamed": [list(pair) for pair in changes.renamed],
                    "sizes": {p: [before.get(p), after.get(p)] for p in named[:1000]},
                    "links": {
                        p: [dict(expected.links).get(p), dict(on_disk.links).get(p)]
                        for p in named[:1000]
                        if p in dict(expected.links) or p in dict(on_disk.links)
                    },
                },
            )
        files = len(expected.files)
    return files


def weakest(verdicts: list[Verification]) -> Verification:
    """Of verdicts that agree on what is anchored, the one that claims the least finality: a verdict
    is as final as the least final of the endpoints that back it."""
    rank = {"finalized": 2, "safe": 1}
    return min(verdicts, key=lambda v: (rank.get(v.finality, 0), v.confirmations))


def asserts(verdict: Verification) -> dict[str, object]:
    """What a verdict claims about the chain, as endpoints must agree on it: not how far each has
    synced (read block, confirmations, finality), which honestly differs between them."""
    keep = ("manifest_digest", "root", "chain_id", "registry", "submitter", "anchored_at", "tx_hash", "anchored_block")
    return {k: getattr(verdict, k) for k in keep}


def trusted_registry(proof: ProofFile, settings: Settings, chain_id: int, named: str | None) -> tuple[str, str]:
    """(code hash to expect, why trusted) for the proof's registry, or `UnknownRegistry`.

    Anyone can deploy a byte-identical copy of the registry and anchor any root there, so a proof's own
    `anchor.registry` is a claim, compared and never adopted: it must equal the address named with
    `--registry`, or the canonical address (CREATE2 of the committed init code through the deterministic
    deployment proxy: only this code can be there, and the caller checks its hash), or else the
    deployment recorded for this chain in the data directory."""
    from anchor.chain.canonical import canonical_address, canonical_code_hash, is_canonical
    from anchor.chain.deployment import load_deployment

    claimed = proof.anchor.registry.lower()
    if named is not None:
        if named.lower() != claimed:
            raise UnknownRegistry(
                f"not our registry: the proof names {proof.anchor.registry}, you trust {named}",
                detail={"proof_registry": proof.anchor.registry, "trusted": named},
            )
        return proof.anchor.code_hash, "--registry"
    if is_canonical(claimed):
        return canonical_code_hash(), CANONICAL_TRUST
    try:
        deployment = load_deployment(settings.data_dir, chain_id)
    except NotDeployed:
        raise UnknownRegistry(
            f"not the canonical registry: the proof names {proof.anchor.registry}, the registry is at"
            f" {canonical_address()} on every chain, and no other is known for chain {chain_id} here"
            f" (hint: to trust the one the proof names, registries {proof.anchor.registry})",
            detail={
                "proof_registry": proof.anchor.registry,
                "chain_id": chain_id,
                "canonical": canonical_address(),
                "inputs": ["registries"],
            },
        ) from None
    if deployment.address.lower() != claimed:
        raise UnknownRegistry(
            f"not our registry: the proof names {proof.anchor.registry}, the registry recorded for chain"
            f" {chain_id} is {deployment.address} (hint: registries, to trust another one by name)",
            detail={"proof_registry": proof.anchor.registry, "trusted": deployment.address, "inputs": ["registries"]},
        )
    return deployment.code_hash, "deployment record"


CANONICAL_TRUST = "canonical address: the same on every chain, derived from the registry's code, code hash checked"
"""Why a verdict trusts the canonical registry: nothing handed over, only derivation and a code hash."""


def refuse_retired(proof: ProofFile) -> None:
    """A proof naming a registry version retired before any public deployment (1.0.0 to 3.0.0) is told
    so in one line, before any chain is read."""
    from anchor.chain.artifact import retired_version

    retired = retired_version(proof.anchor.code_hash)
    if retired is not None:
        raise UnknownRegistry(
            f"the proof's registry {proof.anchor.registry} is AnchorRegistry {retired}, a version retired before"
            " any public deployment: it is no longer verified (hint: stamp the files again, `anchor stamp PATH`,"
            " to anchor them on the one registry)",
            detail={"proof_registry": proof.anchor.registry, "retired_version": retired},
        )


def retracted(proof: ProofFile, record: RootRecord, retraction: Retraction) -> Retracted:
    """The `Retracted` verdict (exit 16, HTTP 410) on a proof whose record its submitter retracted: when,
    by whom, the reason's digest, and the reason's text if the proof file keeps one that hashes to it."""
    said = retraction_fields(retraction, proof)
    text = said["reason"]
    return Retracted(
        f"retracted: root {proof.batch.root} was retracted by its submitter {retraction.by} at"
        f" {said['retracted_at']} (block {retraction.block_number})"
        + (f': "{text}"' if text is not None else f", reason digest {retraction.reason}"),
        detail={"root": proof.batch.root, **said, "anchored_block": record.block_number},
    )


def retraction_fields(retraction: Retraction, proof: ProofFile | None) -> dict[str, Any]:
    """A retraction as every reader says it (the `Retracted` verdict, `anchor lookup`): by whom, when, in
    which block and tx, the reason's digest, and its text when `proof` keeps one hashing to it."""
    return {
        "retracted_by": retraction.by,
        "retracted_at": datetime.fromtimestamp(retraction.timestamp, UTC).isoformat(timespec="seconds"),
        "retracted_block": retraction.block_number, "reason_digest": retraction.reason,
        "reason": None if proof is None else reason_text(proof, retraction.reason), "tx_hash": retraction.tx_hash,
    }  # fmt: skip


def reason_text(proof: ProofFile, digest: str) -> str | None:
    """The retraction reason the proof file's history keeps, if its keccak256 is the on-chain digest (the
    file is anyone's to edit: a text that does not hash to the digest is not shown)."""
    from anchor.manifest.keccak import keccak256

    retractions = proof.annotations.get("retractions")
    for entry in retractions if isinstance(retractions, list) else []:
        text = entry.get("reason") if isinstance(entry, dict) else None
        if isinstance(text, str) and "0x" + keccak256(text.encode()).hex() == digest.lower():
            return text
    return None


_READS: ContextVar[dict[tuple[Any, ...], Verification] | None] = ContextVar("anchor_chain_reads", default=None)
"""Within `reads_once()`: each (endpoint, chain, registry, transaction, root) verdict already read."""


@contextmanager
def reads_once() -> Iterator[None]:
    """Within the block, the chain is read once per (endpoint, chain, registry, transaction, root): a verify
    call of 1,000 proofs of one batch made 11 JSON-RPC calls on 2 new connections per proof, the same
    receipt read 1,000 times. The next proof of a root already read is checked locally: its
    Merkle path to that root (step 1, which the registry's verifyInclusion computes the same way), then
    the verdict read for the root, at the same block, with its own digest and files."""
    token = _READS.set({})
    try:
        with down_once():  # and an endpoint out of reach is asked once, not once a proof
            yield
    finally:
        _READS.reset(token)


def _on_one_endpoint(
    proof: ProofFile, root: bytes, settings: Settings, files: int, registry: str | None = None
) -> Verification:
    """Steps 3–6: the trusted registry, its code, the root's existence and the inclusion, read live (once
    per root within `reads_once()`)."""
    reads = _READS.get()
    key = (settings.rpc_url, settings.read_rpcs, settings.data_dir, settings.local_port, proof.anchor.chain_id,
           proof.anchor.registry.lower(), registry, proof.anchor.tx_hash, root, proof.anchor.block_number,
           proof.anchor.sealed)  # fmt: skip
    if reads is not None and key in reads:
        return reads[key].model_copy(update={"manifest_digest": proof.manifest_digest, "files": files,
                                             "bundle": bundle_fields(proof)})  # fmt: skip
    verdict = _read_one_endpoint(proof, root, settings, files, registry)
    if reads is not None:
        reads[key] = verdict
    return verdict


def _read_one_endpoint(
    proof: ProofFile, root: bytes, settings: Settings, files: int, registry: str | None = None
) -> Verification:
    # 3. Reach the chain the proof names; refuse an RPC endpoint of another chain. Without an endpoint
    #    only this machine's local chain can be read: a proof of another chain is told so at once (and
    #    no local chain is started to find out).
    from anchor.chain.node import LOCAL_CHAIN_ID
    from anchor.chain.presets import chain_name, rpc_hint
    from anchor.chain.registry import Registry

    wanted = proof.anchor.chain_id
    if not settings.rpc_url and not settings.read_rpcs and wanted != LOCAL_CHAIN_ID:
        raise BadInput(
            f"the proof is anchored on {chain_name(wanted)}; without rpc_url only this machine's local chain"
            f" is read (hint: {rpc_hint(wanted)}, or ANCHOR_RPC_URL)",
            detail={"field": "rpc_url", "chain_id": wanted, "inputs": ["rpc_url"]},
        )
    handle = open_chain(settings)
    if handle.chain_id != proof.anchor.chain_id:
        raise BadInput(
            f"the proof is for {chain_name(wanted)}, the RPC endpoint serves {chain_name(handle.chain_id)}"
            f" (hint: {rpc_hint(wanted)})",
            detail={"field": "anchor.chain_id", "inputs": ["rpc_url"]},
        )
    # 4. The registry the proof names must be the trusted one for this chain.
    recorded_hash, trusted_by = trusted_registry(proof, settings, handle.chain_id, registry)
    bundle = bundle_fields(proof)
    digest = _hex32(proof.manifest_digest[2:], "manifest_digest")
    siblings = [_hex32(p[2:], "batch.proof") for p in proof.batch.proof]
    # 5. The code at the address must be our registry: the recorded deployment's hash, and always the
    #    pinned runtime hash (checked inside Registry).
    chain_registry = Registry(handle.rpc, handle.chain_id, proof.anchor.registry, recorded_hash)

    # 6. The root must be anchored and the registry itself must accept the inclusion proof. A root is
    #    one submitter's: the one whose transaction the proof names (its receipt, read on chain), never
    #    another's record of the same root.
    record = chain_registry.root_record_of_tx(root, proof.anchor.tx_hash)
    read_at = chain_registry.checked_block()
    # 6b. Every other field of the anchor a verdict reads (its block, and a sealed section's header,
    #     receipt and trie proof) is the chain's, or the proof is tampered, named by the field: even where
    #     the transaction it names is none, a sealed section shows which field was edited.
    check_anchor_on_chain(proof.anchor, root, chain_registry, record)
    if record is None:
        by = f" by the transaction the proof names ({proof.anchor.tx_hash}; the registry keys a root by its submitter)"
        raise NotAnchored(
            f"root {proof.batch.root} is not anchored on chain {handle.chain_id}{by} (read at block {read_at})",
            detail={"root": proof.batch.root, "tx_hash": proof.anchor.tx_hash, "read_at_block": read_at},
        )
    if not chain_registry.verify_inclusion(root, siblings, digest, record.submitter):
        raise ProofFormatError("the registry rejects the inclusion proof", detail={"field": "batch.proof"})
    # 7. A record its submitter retracted stands on chain, and its claim is withdrawn.
    retraction = chain_registry.root_retraction(record)
    finality, safe, finalized = chain_registry.finality(record.block_number, read_at)
    tx_hash = record.tx_hash or chain_registry.root_tx(root, record.block_number) or proof.anchor.tx_hash
    if retraction is not None:
        raise retracted(proof, record, retraction)
    return Verification(
        manifest_digest=proof.manifest_digest,
        root=proof.batch.root,
        chain_id=handle.chain_id,
        registry=chain_registry.address,
        registry_trusted_by=trusted_by,
        submitter=record.submitter,
        anchored_at=datetime.fromtimestamp(record.timestamp, UTC).isoformat(timespec="seconds"),
        tx_hash=tx_hash,
        anchored_block=record.block_number,
        read_at_block=read_at,
        confirmations=read_at - record.block_number + 1,
        finality=finality,
        safe_block=safe,
        finalized_block=finalized,
        files=files,
        bundle=bundle,
    )


def check_anchor_on_chain(anchor: ChainAnchor, root: bytes, registry: Registry, record: RootRecord | None) -> None:
    """Step 6b: what the proof's anchor states beyond its transaction, against the chain the verifier reads
    anyway. Its `block_number` must be the block of the registry's record; a sealed section must hold
    for the hash the chain has at that block (`check_sealed_against`, the offline check with the chain's
    word in place of a trusted hash), be of the transaction the anchor names (the block's transaction at
    the sealed index), and show the record's submitter and time; the record's later state it may carry
    must hold for the chain's hash of that later block (`check_state_against`). `Tampered` names the
    field: read online, an edited sealed section once verified, and recipients then refused the same file
    offline."""
    from anchor.chain.presets import chain_name

    if record is not None and record.block_number != anchor.block_number:
        raise Tampered(
            f"anchor.block_number: the proof says block {anchor.block_number}, the registry's record of the root"
            f" is in block {record.block_number}",
            detail={"field": "anchor.block_number", "proof": anchor.block_number, "chain": record.block_number},
        )
    sealed = anchor.sealed
    if sealed is None:
        return
    from anchor.sealing.check import check_sealed_against

    block = registry.rpc.get_block(anchor.block_number)
    if block is None:
        raise Tampered(
            f"anchor.block_number: {chain_name(anchor.chain_id)} has no block {anchor.block_number}",
            detail={"field": "anchor.block_number", "proof": anchor.block_number},
        )
    seen = check_sealed_against(anchor, root, str(block.get("hash", "")), registry.address, "the chain's hash")
    held = list(block.get("transactions") or [])
    at = held[sealed.index] if sealed.index < len(held) else None
    at_hash = str(at.get("hash") if isinstance(at, dict) else at).lower()
    if at_hash != anchor.tx_hash.lower():
        raise Tampered(
            f"anchor.tx_hash: {anchor.tx_hash} is not the transaction of the sealed receipt (block"
            f" {anchor.block_number} holds {at_hash if at is not None else 'none'} at index {sealed.index})",
            detail={"field": "anchor.tx_hash", "proof": anchor.tx_hash},
        )
    if record is not None and (seen.submitter.lower(), seen.timestamp) != (record.submitter.lower(), record.timestamp):
        raise Tampered(
            f"anchor.sealed.receipt: shows root anchored by {seen.submitter} at {seen.timestamp}, the registry's"
            f" record by {record.submitter} at {record.timestamp}",
            detail={"field": "anchor.sealed.receipt"},
        )
    if sealed.state is not None:  # the record as of a later block: that block's state, as the chain has it
        from anchor.sealing.check import check_state_against, sealed_block_number

        later = sealed_block_number(sealed.state.header, "anchor.sealed.state.header")
        state_block = registry.rpc.get_block(later) or {}
        check_state_against(anchor, root, seen.submitter, seen.timestamp, str(state_block.get("hash", "none")),
                            registry.code_hash, "the chain's hash")  # fmt: skip


BUNDLE_FIELDS = (
    "mission_sha256", "data_snapshot_sha256", "image", "evaluator_policy_sha256", "budget", "profile", "environment",
    "sandbox", "spent",
)  # fmt: skip


def bundle_fields(proof: ProofFile) -> BundleRan | None:
    """What a result bundle says ran (None for other kinds); read from the identity just verified."""
    if proof.manifest.get("kind") != "bundle":
        return None
    return cast("BundleRan", {name: proof.manifest[name] for name in BUNDLE_FIELDS if name in proof.manifest})


FINALITY_ORDER = ("safe", "finalized")


@dataclass(frozen=True, slots=True)
class Policy:
    """What a verdict must show beyond "anchored", the same wherever it is asked (`anchor verify`'s
    options, the API's query parameters): who anchored it, by when, and how final it must be. Applied
    to a verdict `verify_proof` gave; raises `PolicyMismatch` (exit 10, 412), `NotFinal` (exit 11, 425)
    or `BadInput` for a requirement it cannot read."""

    expect_submitter: str | None = None
    anchored_before: str | None = None
    min_finality: str | None = None

    def __post_init__(self) -> None:
        """A requirement that cannot be read is refused when the policy is made, before any proof or chain
        is read, at every door alike: a mistyped `--expect-submitter 0xabc` was `policy_mismatch` (exit 10),
        as if someone else had anchored the data, and a mistyped date was told only after a full verify."""
        if self.expect_submitter is not None:
            parse_address(self.expect_submitter, "expect_submitter")
        if self.anchored_before is not None:
            _before(self.anchored_before)
        if self.min_finality is not None and not (
            self.min_finality in FINALITY_ORDER or (self.min_finality.isdigit() and len(self.min_finality) <= 9)
        ):
            raise BadInput(f"min_finality {self.min_finality!r}: expected safe, finalized, or a number of"
                           " confirmations", detail={"field": "min_finality"})  # fmt: skip

    def check(self, verdict: Verification) -> None:
        check_policy(verdict, self.expect_submitter, self.anchored_before)
        check_finality(verdict, self.min_finality)


def check_finality(verdict: Verification, required: str | None) -> None:
    """`--min-finality`: `safe`, `finalized`, or a number of confirmations. Raises `NotFinal` when the
    anchoring block is not there yet (run again later), `BadInput` for anything else."""
    if required is None:
        return
    if required.isdigit():
        if verdict.finality == "finalized" or verdict.confirmations >= int(required):
            return
    elif required in FINALITY_ORDER:
        reached = verdict.finality if verdict.finality in FINALITY_ORDER else None
        if reached is not None and FINALITY_ORDER.index(reached) >= FINALITY_ORDER.index(required):
            return
        head = verdict.safe_block if required == "safe" else verdict.finalized_block
        if head is None:
            raise NotFinal(f"the chain's node does not report a {required} block: cannot show {required}",
                           detail={"required": required})  # fmt: skip
        from anchor.chain.node import LOCAL_CHAIN_ID

        if verdict.chain_id == LOCAL_CHAIN_ID or (head == 0 and verdict.read_at_block > 0):
            depth = 32 if required == "safe" else 64  # anvil: safe = head - 32, finalized = head - 64
            raise NotFinal(
                f"anchored in block {verdict.anchored_block}: not yet {required}; the chain's {required} head is at"
                f" block {head} (its head at block {verdict.read_at_block}), and a local development chain marks"
                f" a block {required} only {depth} blocks below its head and, unless started with a block time"
                " (anvil --block-time), mines only when it is sent transactions, so later may never come on its own"
                " (hint: ask for confirmations instead,"
                f" min_finality {max(1, verdict.confirmations)})",
                detail={
                    "required": required,
                    "finality": verdict.finality,
                    "anchored_block": verdict.anchored_block,
                    "inputs": ["min_finality"],
                },
            )
    else:
        raise BadInput(f"min_finality {required!r}: expected safe, finalized or a number of confirmations",
                       detail={"field": "min_finality"})  # fmt: skip
    raise NotFinal(
        f"anchored in block {verdict.anchored_block}, {verdict.finality} at block {verdict.read_at_block}:"
        f" not yet {required if not required.isdigit() else required + ' confirmations'}; try again later",
        detail={"required": required, "finality": verdict.finality, "anchored_block": verdict.anchored_block},
    )


def check_policy(verdict: Verification, expect_submitter: str | None, anchored_before: str | None) -> None:
    """What the verifier requires beyond "anchored": who anchored it, and by when. Raises
    `PolicyMismatch` (or `BadInput` for an unreadable date); run after a successful verification."""
    if expect_submitter is not None and expect_submitter.lower() != verdict.submitter.lower():
        raise PolicyMismatch(
            f"anchored by {verdict.submitter}, not by the expected {expect_submitter}",
            detail={"submitter": verdict.submitter, "expected": expect_submitter},
        )
    if anchored_before is not None:
        limit = _before(anchored_before)
        if datetime.fromisoformat(verdict.anchored_at) >= limit:
            raise PolicyMismatch(
                f"anchored at {verdict.anchored_at}, not before {limit.isoformat()}",
                detail={"anchored_at": verdict.anchored_at, "required_before": limit.isoformat()},
            )


def _before(anchored_before: str) -> datetime:
    """`--anchored-before` as a time, UTC unless it says otherwise; `BadInput` when it is none."""
    try:
        limit = datetime.fromisoformat(anchored_before)
    except ValueError:
        raise BadInput(
            f"anchored_before {anchored_before!r}: not an ISO 8601 date or time (e.g. 2026-12-01)",
            detail={"field": "anchored_before"},
        ) from None
    return limit if limit.tzinfo else limit.replace(tzinfo=UTC)


def check_bundle_spec(proof: ProofFile | PendingProof, proof_path: Path, spec_path: Path) -> None:
    """Re-hash the input files a bundle spec names (mission, snapshot, policy) and compare them, the
    image, the output name and the resume pin with the bundle identity the proof binds; raises
    `Tampered` naming each field and its file. The output tree is `verify_path`'s to check: it is
    hashed once, there, not here again; and the proof is the one loaded once for both (`proof_path`
    names it)."""
    from anchor.manifest.bundle import bundle_inputs, read_bundle_spec

    spec = read_bundle_spec(spec_path)  # a mistyped spec path is named first (with what was meant)
    if proof.manifest.get("kind") != "bundle":
        raise BadInput(f"{proof_path}: --spec needs a result-bundle proof, this one is a "
                       f"{proof.manifest.get('kind')!r} proof", detail={"field": "spec"})  # fmt: skip
    anchored = proof.manifest
    output = anchored.get("output")
    rebuilt = bundle_inputs(spec, spec_path.parent) | {"resume": spec.get("resume")}
    changed = [
        f"{field} ({spec[field.removesuffix('_sha256')]})" if field.removesuffix("_sha256") in spec else field
        for field, value in rebuilt.items()
        if value != anchored.get(field)
    ]
    if not isinstance(output, dict) or spec.get("output_name") != output.get("name"):
        changed.append("output.name")
    if changed:
        raise Tampered(
            f"{spec_path}: differs from the anchored bundle: {', '.join(changed)}",
            detail={"changed": changed, "added": [], "removed": []},
        )
