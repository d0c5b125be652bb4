"""The proof file: one self-contained JSON document chaining file bytes to a registry on a chain.

file bytes → (every file's entry, or one file's RFC 6962 audit path) → the tree root → the manifest
identity → its digest → OpenZeppelin batch leaf and sibling path → batch root → registry (chain id,
address, runtime code hash) → transaction and block. With this file and any RPC URL, a verifier
needs nothing else from us.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from anchor.errors import BadInput, Pending, ProofFormatError, did_you_mean_path
from anchor.files import atomic_write
from anchor.ingest.untrusted_json import parse_json
from anchor.manifest.listed import ListedFile
from anchor.proof.receipt import Receipt
from anchor.record import Record, RecordError, check

if TYPE_CHECKING:
    from collections.abc import Sequence

    from anchor.manifest.filetree import FileTreeManifest

PROOF_FORMAT = "anchor/proof"
PENDING_FORMAT = "anchor/pending"
MAX_SERVICES = 16
"""Receipts, further anchors and unreached services one proof file may name."""
PROOF_VERSION = 1
MAX_PROOF_BYTES = 256 * 1024 * 1024
MAX_PATH_HASHES = 64
"""A batch path or a file audit path longer than this would need a tree of more than 2^64 leaves."""
MAX_PROOF_FILES = 1_000_000
"""Listing entries in one proof file (docs/manifest.md, "Bounds")."""

HEX32 = r"^0x[0-9a-f]{64}$"


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class BatchPath(Record):
    """The OpenZeppelin StandardMerkleTree path from the manifest digest to the anchored root."""

    item: str = check(pattern=HEX32)
    leaf: str = check(pattern=HEX32)
    proof: tuple[str, ...] = check(max_length=MAX_PATH_HASHES)
    root: str = check(pattern=HEX32)


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class FileInclusion(Record):
    """One file's membership in the manifest's file tree: its entry and its audit path."""

    path: str
    size: int = check(ge=0)
    blake3: str = check(pattern=r"^[0-9a-f]{64}$")
    index: int = check(ge=0)
    tree_size: int = check(ge=1)
    audit_path: tuple[str, ...] = check(max_length=MAX_PATH_HASHES)


HEX = r"^0x([0-9a-f]{2})*$"


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class SealedState(Record):
    """The registry's record of the root as of a block after the anchoring one (docs/manifest.md, "The
    record as of a later block"): that block's header (RLP), and the `eth_getProof` proofs of the
    registry's account under the header's stateRoot and of the record's storage slot under the account's
    storageRoot. Offline, against a trusted hash of that block, it shows whether the record was retracted
    by then."""

    header: str = check(pattern=HEX, max_length=8_000)
    account_proof: tuple[str, ...] = check(max_length=64)
    storage_proof: tuple[str, ...] = check(max_length=64)


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Sealed(Record):
    """What verifies this anchor with no network (docs/manifest.md, "Sealed proofs"): the block header
    (RLP), the anchoring transaction's receipt (typed-receipt encoding) and the Merkle-Patricia proof of
    the receipt under the header's receiptsRoot, keyed by the RLP of its transaction index."""

    version: Literal[1] = 1
    header: str = check(pattern=HEX, max_length=8_000)
    receipt: str = check(pattern=HEX, max_length=200_000)
    index: int = check(ge=0, lt=1 << 32)
    proof: tuple[str, ...] = check(max_length=64)
    state: SealedState | None = None
    """The record as of a later block (`anchor seal` adds it, `anchor seal --refresh` moves it on)."""


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ChainAnchor(Record):
    """Where the root is anchored (and, once sealed, the chain's own evidence of it)."""

    chain_id: int = check(gt=0, lt=1 << 64)
    registry: str = check(pattern=r"^0x[0-9a-fA-F]{40}$")
    code_hash: str = check(pattern=HEX32)
    tx_hash: str = check(pattern=HEX32)
    block_number: int = check(ge=0, lt=1 << 63)
    """Bounded as a node's block number is: a wider one went to eth_getBlockByNumber, whose refusal was
    an internal error (exit 1, a 500) where the file's own field is at fault."""
    sealed: Sealed | None = None


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ServiceAnchor(Record):
    """A further anchor of the same manifest, got from another service (another batch, maybe another
    chain): one proof file holds every anchor it got (docs/calendar.md)."""

    service: str = check(max_length=2000)
    batch: BatchPath
    anchor: ChainAnchor


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ProofFile(Record):
    format: Literal["anchor/proof"] = "anchor/proof"
    version: Literal[1] = 1
    manifest: dict[str, object]
    """The canonical manifest JSON object; its fields depend on its `kind` (docs/manifest.md)."""
    annotations: dict[str, object] = check(default_factory=dict)
    """What the file says beside the manifest and binds to nothing (retractions it recorded, notes)."""
    files: tuple[ListedFile, ...] | None = check(default=None, max_length=MAX_PROOF_FILES)
    """The listing: every file's path, size and BLAKE3 (a whole-tree proof only)."""
    file: FileInclusion | None = None
    manifest_digest: str = check(pattern=HEX32)
    batch: BatchPath
    anchor: ChainAnchor
    service: str | None = check(default=None, max_length=2000)
    """The service (URL) that anchored `batch`/`anchor`, when it was stamped through one."""
    anchors: tuple[ServiceAnchor, ...] | None = check(default=None, max_length=MAX_SERVICES)
    receipts: tuple[Receipt, ...] | None = check(default=None, max_length=MAX_SERVICES)
    unreached: tuple[str, ...] | None = check(default=None, max_length=MAX_SERVICES)
    """Services that were down at stamp time: `anchor upgrade` submits to them again."""

    def all_anchors(self) -> list[ServiceAnchor]:
        """Every anchor this file holds, the first one first."""
        first = ServiceAnchor(service=self.service or "local key", batch=self.batch, anchor=self.anchor)
        return [first, *(self.anchors or ())]

    def with_anchor(self, chosen: ServiceAnchor) -> ProofFile:
        """This proof as a single-anchor proof of `chosen` (what the chain steps of verify check)."""
        return self.model_copy(
            update={"batch": chosen.batch, "anchor": chosen.anchor, "service": chosen.service, "anchors": None}
        )

    def _filetree(self) -> FileTreeManifest | None:
        """The full listing, when this proof carries one (a whole-tree proof)."""
        if self.files is None:
            return None
        identity = None
        if self.manifest.get("kind") == "filetree":  # its exclusion rules and links belong to the listing
            from anchor.manifest.decode import validate_identity

            identity = validate_identity(self.manifest, "proof manifest")
        from anchor.manifest.filetree import FileTreeManifest

        return FileTreeManifest.from_files_json(list(self.files), "files", identity)

    def dumps(self) -> str:
        return _dumps(self)


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class PendingProof(Record):
    """What `anchor stamp --service` writes at once: the manifest (and its listing, which never left
    this machine), and every service's signed receipt. `anchor upgrade` turns it into a `ProofFile`
    once a service's batch is mined; until then `verify` exits 14 (pending)."""

    format: Literal["anchor/pending"] = "anchor/pending"
    version: Literal[1] = 1
    manifest: dict[str, object]
    """The canonical manifest JSON object; its fields depend on its `kind` (docs/manifest.md)."""
    annotations: dict[str, object] = check(default_factory=dict)
    """What the file says beside the manifest and binds to nothing (retractions it recorded, notes)."""
    files: tuple[ListedFile, ...] | None = check(default=None, max_length=MAX_PROOF_FILES)
    """The listing: every file's path, size and BLAKE3 (a whole-tree proof only)."""
    manifest_digest: str = check(pattern=HEX32)
    receipts: tuple[Receipt, ...] = check(default=(), max_length=MAX_SERVICES)
    unreached: tuple[str, ...] | None = check(default=None, max_length=MAX_SERVICES)

    def anchored(self, by: ServiceAnchor) -> ProofFile:
        """This manifest, its listing and its receipts, with `by` as its (first) anchor."""
        return ProofFile(
            manifest=self.manifest,
            annotations=self.annotations,
            files=self.files,
            manifest_digest=self.manifest_digest,
            batch=by.batch,
            anchor=by.anchor,
            service=by.service,
            receipts=self.receipts or None,
            unreached=self.unreached,
        )

    def _filetree(self) -> FileTreeManifest | None:
        """The full listing, as `ProofFile.filetree` reads it."""
        return ProofFile._filetree(self)  # type: ignore[arg-type]

    def dumps(self) -> str:
        return _dumps(self)


def excluded_by(proof: ProofFile | PendingProof) -> tuple[str, ...]:
    """The exclusion rules a proof's manifest recorded when its folder was hashed (none when it has no
    such field): what a proof written inside that folder must be left out by."""
    recorded = proof.manifest.get("exclude")
    return tuple(str(rule) for rule in recorded) if isinstance(recorded, list | tuple) else ()


def _dumps(model: Record) -> str:
    """The written form of a proof, complete or pending: sorted keys, two-space indent, no nulls.

    Written by orjson: the standard library indents in pure Python (its C encoder has no indent), 0.71 s
    for the proof of 20,000 files against orjson's 0.06 s, and a stamp writes a proof at least once. The
    bytes are the standard library's (`json.dumps(indent=2, sort_keys=True, ensure_ascii=False)`) but for a
    float below 1e-4, which orjson writes without an exponent (`0.00001`, not `1e-05`): the same number
    to any JSON reader. An integer past 64 bits, which orjson refuses, falls back to the standard library."""
    import orjson

    data = model.model_dump(mode="json", exclude_none=True)
    try:
        indented = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
        return orjson.dumps(data, option=indented).decode()
    except TypeError:  # an integer past 64 bits: a field's value of a user's annotations, say
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load_proof(path: Path) -> ProofFile:
    """Read and validate a proof file. Raises `ProofFormatError` naming the file and the first bad field,
    and `Pending` (exit 14) for a pending proof no service has completed yet."""
    found = load_any(path)
    if isinstance(found, PendingProof):
        raise pending_error(found, str(path))
    return found


def pending_error(pending: PendingProof, name: str) -> Pending:
    """The verdict on a proof that is still pending: where, since when, signed by whom."""
    from datetime import UTC, datetime

    said = (
        "; ".join(
            f"pending at {r.url} since {datetime.fromtimestamp(r.accepted_at, UTC).isoformat(timespec='seconds')},"
            f" receipt signed by {r.signer}"
            for r in pending.receipts
        )
        or "no service has accepted it yet"
    )
    return Pending(
        f"{name}: not anchored yet: {said}; complete it with `anchor upgrade {name}` after the service's next batch",
        detail={
            "file": name,
            "services": [r.url for r in pending.receipts],
            "manifest_digest": pending.manifest_digest,
        },
    )


def load_any(path: Path) -> ProofFile | PendingProof:
    """A proof file, complete or pending (`ProofFormatError` naming the file and field). Read as a file
    anyone could have replaced: a regular file, not through a link, never waited on (a FIFO at the
    proof's path once blocked `anchor upgrade` for good; `UnsafePath` now)."""
    from anchor.files import read_regular

    try:
        data = read_regular(path, MAX_PROOF_BYTES)
        if len(data) > MAX_PROOF_BYTES:
            raise ProofFormatError(f"{path}: larger than {MAX_PROOF_BYTES} bytes", detail={"file": str(path)})
    except FileNotFoundError:
        raise BadInput(f"{path}: no such proof file{did_you_mean_path(path)}", detail={"file": str(path)}) from None
    except OSError as exc:
        raise ProofFormatError(f"{path}: not a JSON proof file ({exc})", detail={"file": str(path)}) from None
    return parse_any(data, str(path))


def parse_proof(data: bytes, name: str) -> ProofFile:
    """Decode a complete proof file's bytes; a pending one is `Pending` (exit 14)."""
    found = parse_any(data, name)
    if isinstance(found, PendingProof):
        raise pending_error(found, name)
    return found


def parse_any(data: bytes, name: str) -> ProofFile | PendingProof:
    """Decode a proof file's bytes (bounded depth, bounded sizes); `name` is used in every error."""
    try:
        raw = parse_json(data, name, error=ProofFormatError)
    except BadInput as exc:
        raise ProofFormatError(f"{name}: not a JSON proof file ({exc.message})", detail={"file": name}) from None
    return decoded_proof(raw, name)


def decoded_proof(raw: object, name: str) -> ProofFile | PendingProof:
    """A proof already decoded from bounded JSON (a file's, or a service's answer), typed: complete or
    pending by its `format`; `ProofFormatError` naming `name` and the first bad field."""
    path = name
    if isinstance(raw, dict) and raw.get("format") == PROOF_FORMAT and raw.get("version") != PROOF_VERSION:
        raise ProofFormatError(
            f"{path}: unsupported proof version {raw.get('version')!r}", detail={"file": path, "field": "version"}
        )
    model: type[ProofFile] | type[PendingProof] = ProofFile
    if isinstance(raw, dict) and raw.get("format") == PENDING_FORMAT:
        model = PendingProof
    try:
        proof = model.model_validate(raw)
    except RecordError as exc:
        raise ProofFormatError(
            f"{path}: field '{exc.field}': {exc.msg}", detail={"file": path, "field": exc.field}
        ) from None
    if proof.annotations:  # bounded as a submission's are (docs/manifest.md, Bounds): 1 MiB read as OK at every door
        from anchor.ingest.untrusted_json import MAX_ANNOTATION_BYTES, check_encodable

        try:
            check_encodable(proof.annotations, "annotations", max_bytes=MAX_ANNOTATION_BYTES)
        except BadInput as exc:
            raise ProofFormatError(f"{path}: {exc.message}", detail={"file": path, "field": "annotations"}) from None
    return proof


def holds_it_sealed(path: Path, proof: ProofFile) -> bool:
    """Whether `path` already holds this proof's anchor (same manifest, chain, registry, transaction and
    block) with a sealed section: the same record, made checkable offline by `anchor seal`. A re-stamp
    of unchanged data must leave such a file alone; writing the store's copy over it once dropped the
    seal, with no copy kept (the digest is the same, so nothing went to the history)."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_PROOF_BYTES:
            return False
        found = json.loads(path.read_bytes())
        held = found["anchor"]
        same = (
            found["manifest_digest"] == proof.manifest_digest
            and held["chain_id"] == proof.anchor.chain_id
            and str(held["registry"]).lower() == proof.anchor.registry.lower()
            and str(held["tx_hash"]).lower() == proof.anchor.tx_hash.lower()
            and held["block_number"] == proof.anchor.block_number
        )
        return bool(same and isinstance(held.get("sealed"), dict))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def write_proof(proof: ProofFile | PendingProof, path: Path) -> None:
    """Write atomically and durably, never through a symlink (`anchor.files.atomic_write`)."""
    atomic_write(path, proof.dumps().encode("utf-8"))


def check_output_path(
    path: Path,
    proves: Path | None = None,
    recorded: Sequence[str] = (),
    *,
    only_over_a_proof: bool = True,
    given: bool = True,
) -> None:
    """Refuse an output path we could not write, before anything is sent to the chain; one that holds a
    file of the user's that is no proof (`stamp f --out notes.txt` replaced the notes, unasked: only a
    proof is replaced, and a re-stamp keeps the one it supersedes); and one inside the folder it proves
    (`proves`) that the manifest's `recorded` exclusion rules do not leave out: written there, it is a
    file the anchor never bound, and every `anchor verify` of the folder names it as added (`anchor
    stamp DIR --out DIR/p.anchor.json` paid for a proof that could never verify). A rule counts only as
    recorded: one that excluded nothing when the folder was hashed is not recorded, and does not apply
    when it is verified. `only_over_a_proof=False`: a writer of something else that refuses any existing
    file itself (`attest`). `given=False`: the path is the default one, not an `--out` the user gave, and
    the refusal says so (it named `--out` to a user who had typed none)."""
    named = f"out {str(path)!r}" if given else f"{path} (where the proof goes by default)"
    where: dict[str, object] = {"field": "out"} if given else {"path": str(path)}
    instead = "choose another out, or remove it" if given else "give the proof another place with --out, or move it"
    if proves is not None and proves.is_dir():
        try:
            inside = path.resolve().relative_to(proves.resolve()).as_posix()
        except ValueError:
            inside = None
        from anchor.manifest.exclude import Rules

        if inside is not None and not Rules(recorded).excludes(inside, False):
            raise BadInput(
                f"{path}: inside {proves}, the folder it proves: every `anchor verify {proves}` would name it as"
                " added (hint: write it beside the folder, the default)",
                detail={"field": "out", "inside": str(proves)},
            )
    if path.is_dir():
        raise BadInput(f"{named}: a directory, not a file to write the output to ({instead})", detail=where)
    if path.is_symlink():  # written through, it would replace whatever it points to
        from anchor.errors import UnsafePath

        raise UnsafePath(f"{named}: a symbolic link; refusing to write through it", detail={**where, "path": str(path)})
    if only_over_a_proof and path.exists() and not _holds_a_proof(path):
        refused = f"{named}: exists and is not a proof; not overwritten ({instead})"
        raise BadInput(refused, detail={**where, "inputs": ["out"]})
    _try_writing_beside(path)


ProofHead = tuple[bool, object, object, object]
"""What a stamp needs of the file it is about to replace: whether it is a proof file, complete or pending
(`format`), and its `manifest_digest`, `anchor.chain_id` and `anchor.block_number` as found (unchecked:
whoever names a file after them checks their types)."""

_HEADS_SEEN: dict[tuple[str, int, int, int, int, int], ProofHead] = {}
"""`proof_head`'s answers in this process, by path and fstat: a stamp asks of the same file up to four
times (the output, the output inside the folder, the anchoring, the keeping of what it supersedes), and
the proof of a folder of 100,000 files is 15 MB of JSON."""


def _holds_a_proof(path: Path) -> bool:
    return proof_head(path)[0]


def proof_head(path: Path) -> ProofHead:
    """`ProofHead` of the file at `path`, read bounded as anyone's file is and decoded once per size,
    mtime, ctime, inode and device: the question is only whether it is ours to replace, and what to
    name the copy kept of it. A file whose JSON carries no `format` is a proof only if it loads as one."""
    try:
        st = path.stat()
        seen = (str(path.absolute()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    except OSError:
        seen = None
    if seen is not None and seen in _HEADS_SEEN:
        return _HEADS_SEEN[seen]
    head = _read_head(path)
    if seen is not None:
        _HEADS_SEEN[seen] = head
    return head


def _read_head(path: Path) -> ProofHead:
    from anchor.errors import AnchorError
    from anchor.files import read_regular

    nothing: ProofHead = (False, None, None, None)
    try:
        data = read_regular(path, MAX_PROOF_BYTES)
        found = decode_json(data) if len(data) <= MAX_PROOF_BYTES else None
    except (OSError, ValueError, RecursionError, AnchorError):
        return nothing
    if not isinstance(found, dict):
        return nothing
    anchor = found.get("anchor")
    chain, block = (anchor.get("chain_id"), anchor.get("block_number")) if isinstance(anchor, dict) else (None, None)
    if "format" in found:
        return found["format"] in (PROOF_FORMAT, PENDING_FORMAT), found.get("manifest_digest"), chain, block
    try:
        load_any(path)
    except AnchorError:
        return nothing
    return True, found.get("manifest_digest"), chain, block


def decode_json(data: str | bytes) -> Any:
    """JSON by orjson, a third of the standard library's time on a proof of 15 MB; what orjson refuses and
    the standard library reads (NaN, nesting past 1,024) by the standard library. One difference stays:
    orjson reads an integer past 64 bits as a float (2**64 + 1 as 1.8446744073709552e+19). Looking for
    one in the text cost as much as the decoding, so a caller whose data may hold one (what a user
    annotated) asks `past_64_bits` of that part and decodes it again with the standard library."""
    import orjson

    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def past_64_bits(value: object) -> bool:
    """Whether `value`, as `decode_json` read it, holds a float of 2**64 or more: an integer orjson could
    not read exactly, or a float the text wrote that large; either way `json.loads` decides."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, float) and abs(node) >= 2.0**64:
            return True
    return False


def _try_writing_beside(path: Path) -> None:
    """Make and remove a file where `path` would be written (or a folder in its nearest existing ancestor,
    when its own folder is still to be made): the only honest answer to "can it be written there?".
    `os.access` says yes to root everywhere, /proc included, and a stamp then anchored and failed to write
    its proof."""
    import tempfile

    parent = path.parent if str(path.parent) else Path(".")
    existing = next((p for p in (parent, *parent.parents) if p.exists()), Path("/"))
    try:
        if existing == parent:
            fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=parent)
            os.close(fd)
            os.unlink(probe)
        else:
            os.rmdir(tempfile.mkdtemp(prefix=".anchor-probe.", dir=existing))
    except OSError as exc:
        from anchor.files import storage_error

        raise storage_error(exc, path) or BadInput(
            f"out {str(path)!r}: cannot be written there ({exc.strerror})", detail={"field": "out"}
        ) from None
