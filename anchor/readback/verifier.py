"""What a verification returns (`Verification`) and what it must show beyond "anchored" (`Policy`).

Why apart from the checklist (anchor.readback.checklist) that makes them: these are the read-back
layer's data, what every door renders and every caller compares; the checklist's numbered steps build
a `Verification` or raise the typed error of the step that failed (`anchor.errors`). The words a
`Retracted` verdict says are here too: one rule for the online and offline reads and `anchor lookup`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, cast

from anchor.errors import (
    BadInput,
    NotFinal,
    PolicyMismatch,
    ProofFormatError,
    Retracted,
)
from anchor.manifest.onchain import parse_address, parse_hex32
from anchor.proof.file import PendingProof, ProofFile
from anchor.readback.verdict_json import AnchorRow, BundleRan, LaterStamp, PendingRow, Quorum
from anchor.record import Record, Value

if TYPE_CHECKING:
    from anchor.chain.registry import Retraction, RootRecord
    from anchor.proof.file import ChainAnchor
    from anchor.sealing.check import RecordState, SealedEvidence


VerdictStatus = Literal["verified", "verified_offline", "partly_pending", "superseded"]
"""What a returned verdict rests on, the first that holds: "superseded" (true of what the path held then:
its current proof names a later stamp, `superseded_by`), "partly_pending" (the anchors `require` asks
for are verified, other services' receipts are still pending: `pending`, `anchor.upgrade` later),
"verified_offline" (against the blocks you trust, with no network: `trusted` says what it cannot see),
"verified" (read live from the chain, nothing pending). A check that fails is never a status: it is
raised as its typed error, whose `code` says it (`pending`, `retracted`, `tampered`, …)."""


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
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


def _hex32(text: str, field: str) -> bytes:
    return parse_hex32(text, f"proof {field}", ProofFormatError)


PIN_FIELDS = ("mission_sha256", "data_snapshot_sha256", "image", "evaluator_policy_sha256")
"""What a resumed bundle must share with the bundle it continues: the dispatcher's rule (docs/missions.md)."""


BUNDLE_FIELDS = (
    "mission_sha256",
    "data_snapshot_sha256",
    "image",
    "evaluator_policy_sha256",
    "budget",
    "profile",
    "environment",
    "sandbox",
    "spent",
)


def bundle_fields(proof: ProofFile) -> BundleRan | None:
    """What a result bundle says ran (None for other kinds); read from the identity just verified."""
    if proof.manifest.get("kind") != "bundle":
        return None
    return cast("BundleRan", {name: proof.manifest[name] for name in BUNDLE_FIELDS if name in proof.manifest})


def files_in(proof: ProofFile | PendingProof) -> int:
    """How many files a proof binds, by its own listing: a bundle's files, 1 for a single-file proof, 0
    for a record that binds none (one rule: the explorer once said 0 where the API said 1)."""
    single = proof.file if isinstance(proof, ProofFile) else None
    return len(proof.files) if proof.files is not None else 1 if single is not None else 0


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


def standing_words(
    anchor: ChainAnchor, seen: SealedEvidence, state: RecordState | None, declared: dict[str, Any] | None
) -> str:
    """What an offline verdict rests on, in words, and what it says of a retraction after the anchoring
    block: not retracted as of the later block whose state the file carries (checked against its trusted
    hash), or that it could not see one."""
    from anchor.chain.presets import chain_name
    from anchor.sealing.check import sealed_block_number

    if state is None:
        unchecked = ""
        if anchor.sealed is not None and anchor.sealed.state is not None:
            later = sealed_block_number(anchor.sealed.state.header, "anchor.sealed.state.header")
            unchecked = (
                f"; the file also carries the registry's record as of block {later}, not checked: trust"
                f" the hash of block {later} as well to see whether it was retracted by then"
            )
        return seen.trusted + unchecked
    when = datetime.fromtimestamp(state.timestamp, UTC).isoformat(timespec="seconds")
    contradicted = (
        f"; the file's own annotations claim a retraction in block {declared.get('block_number')},"
        " which that state contradicts"
        if declared is not None
        else ""
    )
    blocks = (
        f"that block {seen.block_number} of {chain_name(anchor.chain_id)} is {seen.block_hash}: check it"
        if (seen.block_number, seen.block_hash) == (state.block_number, state.block_hash)
        else f"that block {seen.block_number} of {chain_name(anchor.chain_id)} is {seen.block_hash} and block"
        f" {state.block_number} is {state.block_hash}: check them"
    )
    return (
        f"{blocks} once on any explorer or node; not retracted as of"
        f" block {state.block_number} ({when}), the registry's record in that block's state shows (a retraction"
        f" written after it cannot be seen offline){contradicted}" + (f"; {seen.unbound}" if seen.unbound else "")
    )


def retracted_as_of(proof: ProofFile, submitter: str, state: RecordState, declared: dict[str, Any] | None) -> Retracted:
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
        detail={
            "root": proof.batch.root,
            "retracted_by": submitter,
            "retracted_at": when,
            "retracted_block": state.retracted_block,
            "as_of_block": state.block_number,
            "source": "state",
            "reason": reason if isinstance(reason, str) else None,
            "anchored_block": proof.anchor.block_number,
            **where_anchored(proof),
        },
    )


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
        detail={
            "root": proof.batch.root,
            "source": "file",
            "verified": False,
            "retracted_block": block,
            "reason": reason if isinstance(reason, str) else None,
            "retracted_by": declared.get("by"),
            **where_anchored(proof),
        },
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
        detail={"root": proof.batch.root, **said, "anchored_block": record.block_number, **where_anchored(proof)},
    )


def where_anchored(proof: ProofFile) -> dict[str, object]:
    """What a verdict that is not OK still says of where the record is: the data's manifest digest, the
    chain and the registry (a retracted verdict named when and by whom, and left out where)."""
    from anchor.chain.presets import chain_name

    return {
        "manifest_digest": proof.manifest_digest,
        "chain": chain_name(proof.anchor.chain_id),
        "chain_id": proof.anchor.chain_id,
        "registry": proof.anchor.registry,
    }


def retraction_fields(retraction: Retraction, proof: ProofFile | None) -> dict[str, Any]:
    """A retraction as every reader says it (the `Retracted` verdict, `anchor lookup`): by whom, when, in
    which block and tx, the reason's digest, and its text when `proof` keeps one hashing to it."""
    return {
        "retracted_by": retraction.by,
        "retracted_at": datetime.fromtimestamp(retraction.timestamp, UTC).isoformat(timespec="seconds"),
        "retracted_block": retraction.block_number,
        "reason_digest": retraction.reason,
        "reason": None if proof is None else reason_text(proof, retraction.reason),
        "tx_hash": retraction.tx_hash,
    }


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


FINALITY_ORDER = ("safe", "finalized")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Policy(Value):
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
            self.min_finality in FINALITY_ORDER
            or ((self.min_finality.isascii() and self.min_finality.isdigit()) and len(self.min_finality) <= 9)
        ):
            raise BadInput(
                f"min_finality {self.min_finality!r}: expected safe, finalized, or a number of confirmations",
                detail={"field": "min_finality"},
            )

    def check(self, verdict: Verification) -> None:
        check_policy(verdict, self.expect_submitter, self.anchored_before)
        check_finality(verdict, self.min_finality)


def check_finality(verdict: Verification, required: str | None) -> None:
    """`--min-finality`: `safe`, `finalized`, or a number of confirmations. Raises `NotFinal` when the
    anchoring block is not there yet (run again later), `BadInput` for anything else."""
    if required is None:
        return
    if required.isascii() and required.isdigit():
        if verdict.finality == "finalized" or verdict.confirmations >= int(required):
            return
    elif required in FINALITY_ORDER:
        reached = verdict.finality if verdict.finality in FINALITY_ORDER else None
        if reached is not None and FINALITY_ORDER.index(reached) >= FINALITY_ORDER.index(required):
            return
        head = verdict.safe_block if required == "safe" else verdict.finalized_block
        if head is None:
            raise NotFinal(
                f"the chain's node does not report a {required} block: cannot show {required}",
                detail={"required": required},
            )
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
        raise BadInput(
            f"min_finality {required!r}: expected safe, finalized or a number of confirmations",
            detail={"field": "min_finality"},
        )
    raise NotFinal(
        f"anchored in block {verdict.anchored_block}, {verdict.finality} at block {verdict.read_at_block}:"
        f" not yet {required + ' confirmations' if required.isascii() and required.isdigit() else required};"
        " try again later",
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
