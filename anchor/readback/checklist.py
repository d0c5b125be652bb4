"""The verification checklist: every step numbered once, here, each a function raising its own typed error.

Why one module: a proof is verified by the same steps whatever its form (anchor.readback.forms) and
whichever door it came through (`anchor verify`, the API, the explorer, a statements file, a Python
caller), as sigstore-python verifies a signing certificate once for an artifact or a DSSE envelope.
Steps 1-4 check the proof, the data and the services' receipts; steps 5-10 run once per anchor, on
every read endpoint of its chain with a quorum agreeing (anchor.readback.quorum), or offline against a
trusted block hash; steps 11-14 run once. `STEPS` is the list docs/manifest.md ("The checklist") and the
browser's api/static/verify.js number by; a test holds them to it. An error a step raises carries its
number (`AnchorError.step`): what failed is named by the step, not guessed from the message.

    proof = forms.load(path)                                   # decoded once: a bad field is refused here
    verdict = run(proof, settings, data=path, require="any")   # or the typed error of the failing step
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, ParamSpec, TypeVar

from anchor.batch.merkle import leaf_of, process_proof
from anchor.errors import (
    AnchorError,
    BadInput,
    ChainUnreachable,
    DeploymentMismatch,
    NoQuorum,
    NotAnchored,
    NotDeployed,
    NotFinal,
    Pending,
    PolicyMismatch,
    ProofContradicted,
    ProofFormatError,
    Retracted,
    Tampered,
    UnknownRegistry,
)
from anchor.manifest.decode import tree_summary, validate_identity
from anchor.manifest.exclude import Rules
from anchor.manifest.filetree import FileEntry, check_relative_path, diff, hash_tree, root_from_audit_path
from anchor.manifest.identity import manifest_digest
from anchor.proof.file import PendingProof, ProofFile, ServiceAnchor, load_proof, pending_error
from anchor.proof.receipt import Receipt, check_receipt
from anchor.readback.forms import Proof
from anchor.readback.quorum import down_once, unanswered
from anchor.readback.verdict_json import AnchorRow, PendingRow, Quorum
from anchor.readback.verifier import (
    PIN_FIELDS,
    Policy,
    Verification,
    _hex32,
    asserts,
    bundle_fields,
    files_in,
    weakest,
    where_anchored,
)
from anchor.settings.session import Settings

if TYPE_CHECKING:
    from anchor.chain.open import ChainHandle
    from anchor.chain.registry import Registry, RootRecord
    from anchor.proof.file import ChainAnchor
    from anchor.sealing.check import SealedEvidence


class Step(NamedTuple):
    """One numbered step: what it checks, and the typed errors it refuses with (anchor.errors)."""

    number: int
    name: str
    checks: str
    errors: tuple[type[AnchorError], ...]


STEPS: tuple[Step, ...] = (
    Step(
        1,
        "consistent",
        "the proof recomputes: its manifest's digest, its listing's tree, a single file's"
        " audit path and each anchor's batch path to its root",
        (ProofFormatError,),
    ),
    Step(
        2,
        "data",
        "the data, when it is here, hashes to what the proof binds (and a bundle spec's inputs to"
        " what the bundle binds)",
        (Tampered, BadInput),
    ),
    Step(3, "statements", "a statements file's subjects and SLSA dependencies are what its proof binds", (Tampered,)),
    Step(
        4,
        "receipts",
        "every service receipt is for this manifest and signed by the key it names, the one"
        " its service publishes when it answers",
        (ProofFormatError,),
    ),
    Step(
        5,
        "chain",
        "the anchor's chain is reached: a quorum of read endpoints serving that chain; offline, a sealed anchor",
        (ChainUnreachable, NoQuorum, BadInput),
    ),
    Step(
        6,
        "registry",
        "the registry the anchor names is the one trusted for that chain (the canonical"
        " address, a deployment record, or --registry; offline the canonical one alone)",
        (UnknownRegistry,),
    ),
    Step(7, "code", "the code at the registry's address is the registry's", (DeploymentMismatch,)),
    Step(
        8,
        "anchor",
        "the anchor's block, and its sealed section, are the chain's (offline: the sealed"
        " header hashes to the trusted block hash and its receipt holds the registry's event)",
        (ProofContradicted, UnknownRegistry, BadInput),
    ),
    Step(
        9,
        "anchored",
        "the root is anchored by the transaction the anchor names, and the inclusion proof leads to it as the"
        " registry's `verifyInclusion` computes it (computed here, the registry's code pinned at step 7; not"
        " asked of the endpoint)",
        (NotAnchored, ProofFormatError),
    ),
    Step(
        10,
        "retraction",
        "the record is not retracted by its submitter (offline: as of the later block whose"
        " state the file carries, and by the file's own word)",
        (Retracted, Tampered),
    ),
    Step(11, "requirement", "enough distinct anchors hold (--require any, all or N)", (Pending, PolicyMismatch)),
    Step(
        12,
        "milestones",
        "a result bundle's milestones are those its anchored timing record binds",
        (Tampered, NotAnchored),
    ),
    Step(13, "pin", "a resumed bundle's pin is anchored and binds the same inputs", (NotAnchored, BadInput)),
    Step(
        14,
        "policy",
        "who anchored it, by when, and how final (--expect-submitter, --anchored-before, --min-finality)",
        (PolicyMismatch, NotFinal),
    ),
)

P = ParamSpec("P")
T = TypeVar("T")


def step(number: int, *, whole: bool = False) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Mark a function as step `number`: an `AnchorError` it raises carries the number, unless a step it
    ran inside already set its own (the innermost step is the one that failed). `whole`: whatever fails
    inside is this step's failure, a proof it leans on (a timing record, a resume pin) being read through
    steps of its own."""
    assert any(s.number == number for s in STEPS)

    def mark(function: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(function)
        def run(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return function(*args, **kwargs)
            except AnchorError as exc:
                if exc.step is None or whole:
                    exc.step = number
                raise

        return run

    return mark


# -- the run -------------------------------------------------------------------------------------------------


@down_once()  # one verdict asks an endpoint out of reach once, however many reads it makes
def run(
    proof: Proof,
    settings: Settings,
    *,
    data: Path | None = None,
    registries: tuple[str, ...] = (),
    quorum: int | None = None,
    require: str = "any",
    configured: tuple[str, ...] | None = None,
    beside: Path | None = None,
    find: Callable[[bytes], ProofFile | None] | None = None,
    policy: Policy | None = None,
    spec: Path | None = None,
) -> Verification:
    """The verdict on `proof`, every step in its order, whatever the form: the proof and the data (1-4),
    each anchor on its chain (5-10), then the requirement, the milestones, the pin and the policy (11-14).

    `data`: the files, when they are here (`spec`: the bundle spec whose inputs they were made from);
    `registries`: the addresses trusted besides the deployment records (`--registry`), each for the
    anchor naming it; `configured`: the service URLs given now (any
    other came from the file; None: the ones `settings` configures, read only for a proof stamped
    through services); `beside`: where a timing record's proof may lie; `find`: the proof store,
    for the timing record and resume pin a bundle names. A door renders this verdict or the typed error
    it raises; it adds no step and skips none."""
    subject = proof.subject
    root = consistent(subject)
    files = check_data(data, subject, proof.name) if data is not None else files_in(subject)
    if spec is not None:
        check_bundle_spec(subject, proof.name, spec)
    if proof.statements:
        statements_match(proof, data)
    if proof.form in ("single", "statements"):
        assert isinstance(subject, ProofFile) and root is not None
        registry = trusted(registries, subject.anchor.registry)
        verdict = agreed_on_chain(subject, root, settings, files, registry, quorum)
        if proof.statements:
            statement_claims_hold(proof, verdict)
        requirement_met(require, 1)
    else:
        if configured is None:
            from anchor.readback.services import configured_urls

            configured = configured_urls(settings)
        verdict = counted(proof, files, settings, registries, quorum, require, configured)
    if isinstance(subject, ProofFile):
        registry = trusted(registries, subject.anchor.registry)
        verdict = check_milestones(verdict, subject, beside or settings.proofs_dir, settings, registry, find, quorum)
        check_resume_pin(subject.manifest, settings, registry, quorum=quorum, find=find)
    if policy is not None:
        policy_holds(policy, verdict)
    return verdict


# -- steps 1-4: the proof and the data -----------------------------------------------------------------------


@step(1)
def consistent(proof: ProofFile | PendingProof) -> bytes | None:
    """The batch root a complete proof leads to (`check_proof_consistency`); a pending one has no batch
    path yet: its manifest and listing alone (None)."""
    if isinstance(proof, PendingProof):
        check_manifest_and_listing(proof)
        return None
    return check_proof_consistency(proof)


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


@step(2)
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
                    "anchored": _as_the_proof_says(proof),
                },
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
            ours = (
                changes.added
                and not (changes.changed or changes.removed or changes.renamed)
                and all(p.endswith((".anchor.json", ".intoto.jsonl")) for p in changes.added)
            )
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
                    "anchored": _as_the_proof_says(proof),
                },
            )
        files = len(expected.files)
    return files


def _as_the_proof_says(proof: Any) -> dict[str, object]:
    """Where the proof says its data was anchored, for a verdict that stops at the data (step 2, before
    any chain read): the file's word, said as such, so a tampered verdict still names the manifest, the
    chain, the registry and the block rather than only the files that differ."""
    said: dict[str, object] = {"manifest_digest": proof.manifest_digest}
    if getattr(proof, "anchor", None) is not None:  # a pending proof has none yet
        said |= where_anchored(proof) | {"block_number": proof.anchor.block_number, "tx_hash": proof.anchor.tx_hash}
    return said | {"source": "the proof file (the chain was not read)"}


@step(2)
def check_bundle_spec(proof: ProofFile | PendingProof, proof_path: str, spec_path: Path) -> None:
    """Re-hash the input files a bundle spec names (mission, snapshot, policy) and compare them, the
    image, the output name and the resume pin with the bundle identity the proof binds; raises
    `Tampered` naming each field and its file. The output tree is `check_data`'s: it is hashed once,
    there, not here again; and the proof is the one decoded once for both (`proof_path` names it)."""
    from anchor.manifest.bundle import bundle_inputs, read_bundle_spec

    spec = read_bundle_spec(spec_path)  # a mistyped spec path is named first (with what was meant)
    if proof.manifest.get("kind") != "bundle":
        raise BadInput(
            f"{proof_path}: --spec needs a result-bundle proof, this one is a {proof.manifest.get('kind')!r} proof",
            detail={"field": "spec"},
        )
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


@step(3)
def statement_claims_hold(proof: Proof, verdict: Verification) -> None:
    """The chain-anchor statement's restatement of the anchor is the verdict's (anchor.readback.statements)."""
    from anchor.readback.statements import check_chain_claims

    where = Path(proof.name.removesuffix(": predicate.proof"))
    check_chain_claims(proof.statements, verdict, where)


@step(3)
def statements_match(proof: Proof, data: Path | None) -> None:
    """The statements around a proof say what it binds (anchor.readback.statements.check_subjects)."""
    from anchor.readback.statements import check_subjects

    assert isinstance(proof.subject, ProofFile)
    listed = proof.subject.files is not None or proof.subject.file is not None
    where = Path(proof.name.removesuffix(": predicate.proof"))
    check_subjects(proof.statements, proof.subject, data if listed else None, where)


@step(4)
def check_receipts(receipts: tuple[Receipt, ...], digest: str) -> None:
    """Offline: each receipt is for this digest and its signature recovers to the signer it names."""
    for receipt in receipts:
        check_receipt(receipt, digest)


@step(4)
def services_asked(
    found: ProofFile | PendingProof, receipts: tuple[Receipt, ...], settings: Settings, in_file: list[ServiceAnchor]
) -> tuple[dict[str, dict[str, Any] | None], set[str], list[ServiceAnchor]]:
    """Each service the receipts name: who it is (its published receipt key must have signed the receipt,
    its funded account confirms its anchors), and its anchor when the file holds none from it (read on
    chain in steps 5-10, under the verifier's trust). Returns (what each published, who was silent, the
    anchors fetched). Offline, or down: the receipt stands on its own signature, its anchors unconfirmed."""
    from anchor.errors import ServiceError
    from anchor.readback.services import Service, fetch_anchor, service_info

    infos: dict[str, dict[str, Any] | None] = {}
    silent: set[str] = set()
    fetched: list[ServiceAnchor] = []
    for receipt in receipts:
        if settings.offline:  # no socket
            infos[receipt.url] = None
            silent.add(receipt.url)
            continue
        try:
            info = service_info(Service(receipt.url), retries=0)
        except (ServiceError, BadInput):
            infos[receipt.url] = None
            silent.add(receipt.url)
            continue
        history = info.get("receipt_signers")
        check_receipt(
            receipt,
            found.manifest_digest,
            str(info.get("receipt_signer")),
            history if isinstance(history, list) else None,
        )
        infos[receipt.url] = info
        if any(a.service == receipt.url for a in in_file):
            continue
        try:
            anchor = fetch_anchor(receipt, found, settings)
        except (ServiceError, BadInput):
            silent.add(receipt.url)
            continue
        if anchor is not None:
            fetched.append(anchor)
    return infos, silent, fetched


# -- steps 5-10: each anchor on its chain --------------------------------------------------------------------


def agreed_on_chain(
    proof: ProofFile, root: bytes, settings: Settings, files: int, registry: str | None, quorum: int | None
) -> Verification:
    """Steps 5-10 for the proof's anchor on every read endpoint of `settings`, a quorum agreeing (the
    weakest finality among the agreeing answers), with how it was agreed and, for a single-file proof,
    the file's path. A retired registry is refused first, once, whatever the endpoints (nothing to read)."""
    refuse_retired(proof)
    if settings.offline:  # the sealed section against a trusted block hash: no socket at all
        return sealed_verdict(proof, root, settings, files, registry)
    verdict, agreement = quorum_read(settings, lambda one: _on_one_endpoint(proof, root, one, files, registry), quorum)
    update: dict[str, Any] = {"quorum": agreement}
    if proof.file is not None:
        update["path_in_bundle"] = proof.file.path
    return verdict.model_copy(update=update)


@step(5)
def quorum_read(
    settings: Settings, read: Callable[[Settings], Verification], quorum: int | None
) -> tuple[Verification, Quorum | None]:
    """Steps 6-10 on each read endpoint; a quorum of them must agree (`NoQuorum` otherwise)."""
    from anchor.readback.quorum import read_agreed

    return read_agreed(settings, read, asserts, quorum, weakest)


def leaned_on(
    proof: ProofFile, settings: Settings, registry: str | None = None, quorum: int | None = None, files: int = 0
) -> Verification:
    """A proof a verdict leans on (a bundle's timing record, a resume pin, a ledger checkpoint, a
    service's anchor before it is written in): consistent, and on chain under the same quorum as any
    verdict. The one-endpoint read is private to `agreed_on_chain`: a lying endpoint listed first once
    made a verified bundle "not anchored" through a timing record read from that endpoint alone."""
    return agreed_on_chain(proof, check_proof_consistency(proof), settings, files, registry, quorum)


def check_service_anchor(
    found: ProofFile | PendingProof, anchor: ServiceAnchor, settings: Settings, registry: str
) -> Verification:
    """A service's anchor for our manifest, before it is written in (`anchor upgrade`): our manifest and
    listing with its batch path, consistent, and its root on `registry` on its chain, read live (a service
    that anchored something else is caught here)."""
    from anchor.readback.endpoints import settings_for_chain

    single = found.with_anchor(anchor) if isinstance(found, ProofFile) else found.anchored(anchor)
    chain = settings_for_chain(settings, anchor.anchor.chain_id, anchor.service)
    return leaned_on(single, chain, registry, files=files_in(single))


class ChainReads:
    """What one verify of many paths has read, kept between them (`reads_once(scope)`): the verdict of each
    (endpoint, chain, registry, transaction, root); each endpoint's handle (its connection and chain id)
    and each registry read on it (its code checked once, at the one block every read of the scope is made
    at); the endpoints out of reach; the proofs' real folders."""

    def __init__(self) -> None:
        self.verdicts: dict[tuple[Any, ...], Verification] = {}
        self.shared: dict[tuple[Any, ...], Any] = {}
        self.down: dict[str, Any] = {}
        self.folders: dict[tuple[Any, ...], Path] = {}
        self.registries: list[Registry] = []
        """Each registry read, pinned, in the order first read: what is read ahead (anchor.readback.ahead)."""


_SCOPE: ContextVar[ChainReads | None] = ContextVar("anchor_chain_reads", default=None)
"""The `ChainReads` of the `reads_once()` block being run, if any."""


@contextmanager
def reads_once(scope: ChainReads | None = None) -> Iterator[None]:
    """Within the block, the chain is read once per thing a verdict needs: per endpoint one connection and
    one chain id; per registry one code check and one head, the block every root of the block is read at,
    and one read of the safe and finalized heads; per (endpoint, chain, registry, transaction, root) one
    receipt and one record. A verify call of 1,000 proofs made 11 JSON-RPC calls on 2 new connections per
    proof, the same receipt read 1,000 times for one batch, the same head and code 1,000 times for 1,000
    batches. The next proof of a root already read is checked locally: its Merkle path to that root (step
    1, which the registry's verifyInclusion computes the same way), then the verdict read for the root, at
    the same block, with its own digest and files.

    `scope`: what an earlier block of the same verify read. A caller that gives verdicts one at a time
    (a generator) enters the block once per verdict with one scope and never yields inside it: the block
    sets context variables, and two generators interleaved inside their blocks reset each other's,
    leaving one's reads (a root read before its retraction) to every later verify of the thread."""
    from anchor.proof.locate import folders_once

    scope = ChainReads() if scope is None else scope
    token = _SCOPE.set(scope)
    try:
        with down_once(scope.down), folders_once(scope.folders):  # an endpoint out of reach: asked once
            yield
    finally:
        _SCOPE.reset(token)


def _on_one_endpoint(
    proof: ProofFile, root: bytes, settings: Settings, files: int, registry: str | None = None
) -> Verification:
    """Steps 3–6: the trusted registry, its code, the root's existence and the inclusion, read live (once
    per root within `reads_once()`)."""
    scope = _SCOPE.get()
    reads = None if scope is None else scope.verdicts
    key = (
        settings.rpc_url,
        settings.read_rpcs,
        settings.data_dir,
        settings.local_port,
        proof.anchor.chain_id,
        proof.anchor.registry.lower(),
        registry,
        proof.anchor.tx_hash,
        proof.anchor.code_hash,  # what step 6 expects under --registry: an edited one is read on its own
        root,
        proof.anchor.block_number,
        proof.anchor.sealed,
    )
    if reads is not None and key in reads:
        return reads[key].model_copy(
            update={"manifest_digest": proof.manifest_digest, "files": files, "bundle": bundle_fields(proof)}
        )
    verdict = _read_one_endpoint(proof, root, settings, files, registry)
    if reads is not None:
        reads[key] = verdict
    return verdict


def _busy(settings: Settings) -> tuple[Any, ...]:
    """The key under which a verify of many remembers that an endpoint kept a path waiting."""
    return ("busy", settings.rpc_url, settings.read_rpcs, settings.data_dir, settings.local_port)


@contextmanager
def _silence_remembered(settings: Settings) -> Iterator[None]:
    """Within a verify of many (`reads_once(scope)`): when the endpoint of `settings` gives the block
    no answer (`unanswered`: its retries spent, or a busy local chain waited for) after W seconds, the
    paths after it are told the same at once for W seconds (`reached`), then asked again. Paying every
    wait again, a chain SIGSTOPped during a verify of 80 paths held it 51 s a path; remembered for the
    whole call instead, a chain started again midway was never read. An endpoint that answers, even to
    refuse one path's read (HTTP 400, an answer out of form), is not remembered: that is the path's."""
    started = time.monotonic()
    try:
        yield
    except ChainUnreachable as exc:
        scope, now = _SCOPE.get(), time.monotonic()
        if scope is not None and unanswered(exc):
            scope.shared[_busy(settings)] = (now + (now - started), exc)
        raise


def _read_one_endpoint(
    proof: ProofFile, root: bytes, settings: Settings, files: int, registry: str | None = None
) -> Verification:
    """Steps 5-10 on one read endpoint, live."""
    handle = reached(proof, settings)
    with _silence_remembered(settings):
        return _read_reached(proof, root, settings, files, registry, handle)


def _read_reached(
    proof: ProofFile, root: bytes, settings: Settings, files: int, registry: str | None, handle: ChainHandle
) -> Verification:
    """Steps 6-10 on the endpoint `handle` reached."""
    recorded_hash, trusted_by = trusted_registry(proof, settings, handle.chain_id, registry)
    chain_registry, read_at = registry_code(proof, handle, recorded_hash)
    record = anchor_on_chain(proof.anchor, root, chain_registry)
    read_at = chain_registry.checked_block()  # later than before when the root was mined after the scope began
    record = root_anchored(proof, root, chain_registry, record, read_at)
    not_retracted(proof, record, chain_registry)
    finality, safe, finalized = chain_registry.finality(record.block_number, read_at)
    tx_hash = record.tx_hash or chain_registry.root_tx(root, record.block_number) or proof.anchor.tx_hash
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
        bundle=bundle_fields(proof),
    )


@step(5)
def reached(proof: ProofFile, settings: Settings) -> ChainHandle:
    """The chain the proof names, reached; an RPC endpoint of another chain refused. Without an endpoint
    only this machine's local chain can be read: a proof of another chain is told so at once (and no
    local chain is started to find out)."""
    from anchor.chain.node import LOCAL_CHAIN_ID
    from anchor.chain.open import open_chain
    from anchor.chain.presets import chain_name, rpc_hint

    wanted = proof.anchor.chain_id
    scope = _SCOPE.get()
    shared = None if scope is None else scope.shared
    key = ("endpoint", settings.rpc_url, settings.read_rpcs, settings.data_dir, settings.local_port)
    if not settings.rpc_url and not settings.read_rpcs and wanted != LOCAL_CHAIN_ID:
        raise BadInput(
            f"the proof is anchored on {chain_name(wanted)}; without rpc_url only this machine's local chain"
            f" is read (hint: {rpc_hint(wanted)}, or ANCHOR_RPC_URL)",
            detail={"field": "rpc_url", "chain_id": wanted, "inputs": ["rpc_url"]},
        )
    busy = _busy(settings)
    if shared is not None and busy in shared and time.monotonic() < shared[busy][0]:
        raise shared[busy][1]  # waited for a path just before: said at once, not waited for again meanwhile
    with _silence_remembered(settings):
        handle = shared[key] if shared is not None and key in shared else open_chain(settings)
    if handle.chain_id != proof.anchor.chain_id:
        raise BadInput(
            f"the proof is for {chain_name(wanted)}, the RPC endpoint serves {chain_name(handle.chain_id)}"
            f" (hint: {rpc_hint(wanted)})",
            detail={"field": "anchor.chain_id", "inputs": ["rpc_url"]},
        )
    if shared is not None:
        shared[key] = handle
    return handle


@step(6)
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


@step(6)
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


@step(7)
def registry_code(proof: ProofFile, handle: ChainHandle, code_hash: str) -> tuple[Registry, int]:
    """The registry at the proof's address, its code checked (the recorded deployment's hash, and always
    the pinned runtime hash: anchor.chain.registry.check_code), and the block the verdict is read at: the
    chain's head when the code was checked, which the reads that follow see or pass."""
    from anchor.chain.registry import Registry

    scope = _SCOPE.get()
    shared = None if scope is None else scope.shared
    key = ("registry", handle.rpc_url, handle.chain_id, proof.anchor.registry.lower(), code_hash)
    if shared is not None and key in shared:
        kept: Registry = shared[key]
        return kept, kept.checked_block()
    chain_registry = Registry(handle.rpc, handle.chain_id, proof.anchor.registry, code_hash)
    read_at = chain_registry.checked_block()
    chain_registry.pin(read_at)  # every later read of the verdict (of the scope) at this block: one snapshot
    if scope is not None:
        scope.shared[key] = chain_registry
        scope.registries.append(chain_registry)
    return chain_registry, read_at


@step(8)
def anchor_on_chain(anchor: ChainAnchor, root: bytes, registry: Registry) -> RootRecord | None:
    """The registry's record of the root, as the transaction the anchor names wrote it (a root is one
    submitter's: never another's record of the same root), and every other field of the anchor a verdict
    reads checked against the chain (`check_anchor_on_chain`), before a missing record is told: even where
    the transaction it names is none, a sealed section shows which field was edited."""
    record = registry.root_record_of_tx(root, anchor.tx_hash)
    check_anchor_on_chain(anchor, root, registry, record)
    return record


def check_anchor_on_chain(anchor: ChainAnchor, root: bytes, registry: Registry, record: RootRecord | None) -> None:
    """What the proof's anchor states beyond its transaction, against the chain the verifier reads
    anyway. Its `block_number` must be the block of the registry's record; a sealed section must hold
    for the hash the chain has at that block (`check_sealed_against`, the offline check with the chain's
    word in place of a trusted hash), be of the transaction the anchor names (the block's transaction at
    the sealed index), and show the record's submitter and time; the record's later state it may carry
    must hold for the chain's hash of that later block (`check_state_against`). `Tampered` names the
    field: read online, an edited sealed section once verified, and recipients then refused the same file
    offline."""
    from anchor.chain.presets import chain_name

    if record is not None and record.block_number != anchor.block_number:
        raise ProofContradicted(
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
        raise ProofContradicted(
            f"anchor.block_number: {chain_name(anchor.chain_id)} has no block {anchor.block_number}",
            detail={"field": "anchor.block_number", "proof": anchor.block_number},
        )
    seen = check_sealed_against(anchor, root, str(block.get("hash", "")), registry.address, "the chain's hash")
    held = list(block.get("transactions") or [])
    at = held[sealed.index] if sealed.index < len(held) else None
    at_hash = str(at.get("hash") if isinstance(at, dict) else at).lower()
    if at_hash != anchor.tx_hash.lower():
        raise ProofContradicted(
            f"anchor.tx_hash: {anchor.tx_hash} is not the transaction of the sealed receipt (block"
            f" {anchor.block_number} holds {at_hash if at is not None else 'none'} at index {sealed.index})",
            detail={"field": "anchor.tx_hash", "proof": anchor.tx_hash},
        )
    if record is not None and (seen.submitter.lower(), seen.timestamp) != (record.submitter.lower(), record.timestamp):
        raise ProofContradicted(
            f"anchor.sealed.receipt: shows root anchored by {seen.submitter} at {seen.timestamp}, the registry's"
            f" record by {record.submitter} at {record.timestamp}",
            detail={"field": "anchor.sealed.receipt"},
        )
    if sealed.state is not None:  # the record as of a later block: that block's state, as the chain has it
        from anchor.sealing.check import check_state_against, sealed_block_number

        later = sealed_block_number(sealed.state.header, "anchor.sealed.state.header")
        state_block = registry.rpc.get_block(later) or {}
        check_state_against(
            anchor,
            root,
            seen.submitter,
            seen.timestamp,
            str(state_block.get("hash", "none")),
            registry.code_hash,
            "the chain's hash",
        )


@step(9)
def root_anchored(
    proof: ProofFile, root: bytes, registry: Registry, record: RootRecord | None, read_at: int
) -> RootRecord:
    """The record exists: with the path to `root` recomputed at step 1, what the registry's
    `verifyInclusion(submitter, root, path, digest)` answers, computed here instead of asked.

    The registry's answer is `record exists && processProof(path, leaf(digest)) == root`, and its code is
    the pinned code (step 7): the endpoint can add nothing to the second half, which step 1 computed with
    the same leaf and the same sorted-pair hashing (anchor.batch.merkle, held to the contract by the
    forge vectors and to OpenZeppelin's tool). Asking it anyway cost one JSON-RPC call per root, a third
    of a verify of many batches. `cast call … verifyInclusion` still gives any reader the same answer."""
    if record is None:
        by = f" by the transaction the proof names ({proof.anchor.tx_hash}; the registry keys a root by its submitter)"
        raise NotAnchored(
            f"root {proof.batch.root} is not anchored on chain {registry.chain_id}{by} (read at block {read_at})",
            detail={"root": proof.batch.root, "tx_hash": proof.anchor.tx_hash, "read_at_block": read_at},
        )
    digest = _hex32(proof.manifest_digest[2:], "manifest_digest")
    if process_proof(digest, [_hex32(p[2:], "batch.proof") for p in proof.batch.proof]) != root:
        raise ProofFormatError("batch.proof does not lead to the anchored root", detail={"field": "batch.proof"})
    return record


@step(10)
def not_retracted(proof: ProofFile, record: RootRecord, registry: Registry) -> None:
    """A record its submitter retracted stands on chain, and its claim is withdrawn."""
    retraction = registry.root_retraction(record)
    if retraction is not None:
        from anchor.readback.verifier import retracted

        raise retracted(proof, record, retraction)


def sealed_verdict(proof: ProofFile, root: bytes, settings: Settings, files: int, registry: str | None) -> Verification:
    """Steps 5-10 offline (`--offline`): the proof's sealed anchor against the block hash the verifier
    trusts (anchor.sealing.check), in place of a live read; `trusted` says in words what it rests on."""
    from anchor.readback.verifier import standing_words

    seen = sealed_offline(proof.anchor, root, settings, registry)
    state, declared = retraction_offline(proof, root, seen, settings)
    trusted_words = standing_words(proof.anchor, seen, state, declared)
    shown_as_of = state.block_number if state is not None else seen.block_number
    later = sorted(b for c, b, _ in settings.trusted_blocks if c in (None, proof.anchor.chain_id) and b > shown_as_of)
    if later:  # trusted, but of a block the file carries no state of: not silently passed over
        trusted_words += (
            f"; you trust block {later[-1]} as well, but the file shows the record only as of block {shown_as_of}:"
            f" whether it was retracted by block {later[-1]} is not shown (`anchor seal --refresh` where the chain"
            " is reachable carries it on)"
        )
    return Verification(
        manifest_digest=proof.manifest_digest,
        root=proof.batch.root,
        chain_id=proof.anchor.chain_id,
        registry=proof.anchor.registry,
        registry_trusted_by="canonical address, offline: its address certifies its code",
        submitter=seen.submitter,
        anchored_at=datetime.fromtimestamp(seen.timestamp, UTC).isoformat(timespec="seconds"),
        tx_hash=proof.anchor.tx_hash,
        anchored_block=seen.block_number,
        read_at_block=seen.block_number,
        confirmations=1,
        finality="trusted block (offline)",
        files=files,
        bundle=bundle_fields(proof),
        trusted=trusted_words,
        path_in_bundle=proof.file.path if proof.file is not None else None,
    )


def sealed_offline(anchor: ChainAnchor, root: bytes, settings: Settings, registry: str | None) -> SealedEvidence:
    """Steps 5, 6 and 8 offline: the anchor is sealed (the only chain there is with no socket), names the
    canonical registry (its address certifies its code, so step 7 holds by derivation), and its sealed
    section holds under the hash the verifier trusts for its block (the event shows the root anchored:
    step 9 with it)."""
    from anchor.sealing.check import check_canonical, check_sealed_present, check_sealed_trusted

    step(5)(check_sealed_present)(anchor)
    step(6)(check_canonical)(anchor, registry)
    return step(8)(check_sealed_trusted)(anchor, root, settings)


@step(10)
def retraction_offline(
    proof: ProofFile, root: bytes, seen: SealedEvidence, settings: Settings
) -> tuple[Any, dict[str, Any] | None]:
    """Offline: the registry's record as of a later trusted block, when the file carries it, shows no
    retraction, and the file's own `annotations.retractions` declare none it does not contradict."""
    from anchor.readback.verifier import file_retraction, retracted_as_of, retracted_by_file
    from anchor.sealing.check import later_state

    state = later_state(proof.anchor, root, seen, settings)
    declared = file_retraction(proof)
    if state is not None and state.retracted_block:
        raise retracted_as_of(proof, seen.submitter, state, declared)
    declared_at = declared.get("block_number") if declared is not None else None
    if declared is not None and (state is None or not isinstance(declared_at, int) or declared_at > state.block_number):
        raise retracted_by_file(proof, declared)  # the file's own word against it, which nothing here denies
    return state, declared


# -- steps 11-14: once -----------------------------------------------------------------------------------------


def required_count(require: str, total: int) -> int:
    """How many anchors `--require` asks for: any (1), all (every service named), or N."""
    if require == "any":
        return 1
    if require == "all":
        return max(1, total)
    if (require.isascii() and require.isdigit()) and int(require) >= 1:
        return int(require)
    raise BadInput(
        f"require {require!r}: expected any, all, or a number of anchors (1, 2, ...)", detail={"field": "require"}
    )


@step(11)
def requirement_met(require: str, total: int) -> None:
    """`PolicyMismatch` (exit 10, 412) when `--require N` asks for more anchors than the proof can ever
    hold (`total`: verified, failed and pending together): no upgrade will bring the rest, so it is not
    `Pending`, and never a silent OK (a key-here proof, one anchor, passed `--require 2` unremarked)."""
    needed = required_count(require, total)
    if (
        require.isascii() and require.isdigit()
    ) and needed > total:  # a number asked for: `any` and `all` are met by what there is
        raise PolicyMismatch(
            f"require {require}: the proof holds {total} anchor{'' if total == 1 else 's'}, {needed} needed"
            " (each service stamped through gives one: stamp through more services to meet it)",
            detail={"field": "require", "anchors": total, "needed": needed},
        )


def trusted(registries: tuple[str, ...], claimed: str) -> str | None:
    """The registry to trust for an anchor: the one given that it names, else (several given, none its
    own) the first, which `trusted_registry` then refuses by name; none given: the deployment record."""
    for named in registries:
        if named.lower() == claimed.lower():
            return named
    return registries[0] if registries else None


def counted(
    proof: Proof,
    files: int,
    settings: Settings,
    registries: tuple[str, ...],
    quorum: int | None,
    require: str,
    configured: tuple[str, ...],
) -> Verification:
    """A proof stamped through services (receipts, several anchors, or pending): steps 4-10 for every anchor
    the file holds or its services now give, then step 11 over them, one counting rule (docs/calendar.md).

    `--require` counts distinct anchors, distinct (chain id, registry, transaction, root); a copy of an
    anchor under another name is listed "same transaction as ..." and counts once. An anchor counts for
    a service (for `all`) only when the file holds that service's receipt for this manifest and the
    anchor's on-chain submitter is the account the service publishes (`/v1/service`); otherwise its
    service label is free text in an unsigned file: it counts as an anchor of its submitter only. A
    receipt proves acceptance only, so it never makes a verdict pass: an anchor does."""
    found = proof.subject
    receipts = tuple(found.receipts or ())  # as the file lists them: the first that fails is named first
    check_receipts(receipts, found.manifest_digest)
    in_file = found.all_anchors() if isinstance(found, ProofFile) else []
    infos, silent, fetched = services_asked(found, receipts, settings, in_file)
    rows: list[AnchorRow] = []
    verified: list[Verification] = []
    failures: list[AnchorError] = []
    seen: dict[tuple[int, str, str, str], str] = {}
    confirmed: set[str] = set()
    held = {r.url for r in receipts}
    for anchor in [*in_file, *fetched]:
        single = found.with_anchor(anchor) if isinstance(found, ProofFile) else found.anchored(anchor)
        row: AnchorRow = {
            "service": anchor.service,
            "chain_id": anchor.anchor.chain_id,
            "registry": anchor.anchor.registry,
            "in_file": anchor not in fetched,
            "from_file": anchor.service not in configured,
        }
        try:
            verdict = one_anchor(single, anchor, files, settings, registries, quorum)
        except AnchorError as exc:
            failures.append(exc)
            rows.append({**row, "ok": False, "error": exc.to_dict()})
            continue
        row.update(
            {
                "ok": True,
                "chain_id": verdict.chain_id,
                "registry": verdict.registry,
                "submitter": verdict.submitter,
                "anchored_at": verdict.anchored_at,
                "block": verdict.anchored_block,
                "finality": verdict.finality,
                "tx_hash": verdict.tx_hash,
            }
        )
        key = (verdict.chain_id, verdict.registry.lower(), verdict.tx_hash.lower(), verdict.root.lower())
        if key in seen:  # a copy of one anchor under another name counts once
            rows.append({**row, "duplicate_of": seen[key], "confirmed": False})
            continue
        seen[key] = anchor.service
        # a service's anchor only when the file holds its receipt and the chain names its account; offline
        # no service can be asked: it counts as its own when its receipt (signature checked) names the chain
        # and registry the sealed anchor shows, and the row says so
        sure = anchor.service in held and _publishes(infos.get(anchor.service), verdict)
        # offline no service can be asked whose account it is: a receipt that names the chain and registry
        # the sealed anchor shows counts towards `--require all`, but its signer is the file's word (anyone
        # can sign a receipt naming any URL), so the anchor is not said to be that service's
        claimed = (
            not sure
            and settings.offline
            and anchor.service in held
            and _receipt_names(receipts, anchor.service, verdict)
        )
        if claimed:
            row["confirmed_by"] = (
                "unconfirmed offline: its receipt names this chain and registry; whose account anchored it, only"
                " the service can say"
            )
        if sure or claimed:
            confirmed.add(anchor.service)
        rows.append({**row, "confirmed": sure})
        verified.append(verdict.model_copy(update={"service": anchor.service if sure else None}))
    return requirement_counted(proof, require, rows, verified, failures, confirmed, silent, configured)


def one_anchor(
    proof: ProofFile,
    anchor: ServiceAnchor,
    files: int,
    settings: Settings,
    registries: tuple[str, ...],
    quorum: int | None,
) -> Verification:
    """Steps 1 and 5-10 for one anchor of the file (its batch path, then its chain), read from the
    endpoints serving its chain."""
    from anchor.readback.endpoints import settings_for_chain

    chain_settings = settings_for_chain(
        settings, anchor.anchor.chain_id, None if anchor.service == "local key" else anchor.service
    )
    named = trusted(registries, anchor.anchor.registry)
    verdict = agreed_on_chain(proof, consistent(proof) or b"", chain_settings, files, named, quorum)
    return verdict.model_copy(update={"service": anchor.service})


@step(11)
def requirement_counted(
    proof: Proof,
    require: str,
    rows: list[AnchorRow],
    verified: list[Verification],
    failures: list[AnchorError],
    confirmed: set[str],
    silent: set[str],
    configured: tuple[str, ...],
) -> Verification:
    """The requirement, counted over distinct anchors; `all`: every service the file names, confirmed.
    Short of it: the first failed anchor's own error (its step kept), else `Pending` naming each service."""
    found, proof_name = proof.subject, proof.name
    receipts = tuple(found.receipts or ())  # as the file lists them: the first that fails is named first
    # every service the file names: its receipts', those down at stamp time, and its anchors' own names
    # (two names typed into a file with no receipt met `all` with one anchor, counted once)
    in_file = found.all_anchors() if isinstance(found, ProofFile) else []
    anchored_as = [a.service for a in in_file if a.service != "local key"]  # the key here is no service
    named = list(dict.fromkeys([*(r.url for r in receipts), *(found.unreached or ()), *anchored_as]))
    pending = [
        {**_pending_row(r), "from_file": r.url not in configured, "answered": r.url not in silent}
        for r in receipts
        if r.url not in confirmed
    ]
    pending += [
        {"service": url, "state": "unreached", "from_file": url not in configured}
        for url in found.unreached or ()
        if url not in confirmed
    ]
    total = len(verified) + len(failures) + len(pending)
    needed = required_count(require, total)
    if require == "all":
        met = bool(verified) and not failures and all(url in confirmed for url in named)
        needed = max(len(named), len(verified) + len(failures), 1)
    else:
        met = len(verified) >= needed
    if met:
        first = next((v for v in verified if v.service is not None), verified[0])
        return first.model_copy(update={"anchors": rows, "pending": pending or None, "required": require})
    said = f"require {require}: {len(verified)} of {total} anchors verified, {needed} needed"
    if not failures:
        requirement_met(require, total)
    if failures:
        first_failure = failures[0]
        again = type(first_failure)(
            f"{first_failure.message} ({said})", detail={**first_failure.detail, "anchors": rows, "pending": pending}
        )
        again.step = first_failure.step
        raise again
    waiting = ", ".join(str(p["service"]) + (" (named by the file)" if p["from_file"] else "") for p in pending)
    unconfirmed = [url for url in named if url not in confirmed and all(p["service"] != url for p in pending)]
    if unconfirmed:  # named by an anchor in the file, with no receipt or published account that says so
        waiting = ", ".join(
            [*([waiting] if waiting else []), *(f"{url} (named by the file, not confirmed)" for url in unconfirmed)]
        )
    if not verified and isinstance(found, PendingProof):
        error = pending_error(found, proof_name)
        said_where = (
            "; ".join(
                f"pending at {p['service']}"
                + (" (named by the file)" if p["from_file"] else "")
                + (
                    f" since {p['since']}, receipt signed by {p['signer']}"
                    if p["state"] == "pending"
                    else ", down at stamp time"
                )
                + ("" if p.get("answered", True) else " (not reachable now: it could not be asked for its anchor)")
                for p in pending
            )
            or "no service has accepted it yet"
        )
        raise Pending(
            f"{proof_name}: not anchored yet: {said_where}; complete it with `anchor upgrade {proof_name}`"
            " after the service's next batch",
            detail={**error.detail, "anchors": rows, "pending": pending},
        )
    raise Pending(
        f"{proof_name}: {said}; the others are pending: {waiting or 'none named'} (run `anchor upgrade {proof_name}`)",
        detail={"anchors": rows, "pending": pending},
    )


def _publishes(info: dict[str, Any] | None, verdict: Verification) -> bool:
    """Whether the service's own /v1/service names the account, chain and registry the chain shows."""
    if info is None:
        return False
    submitter, registry = info.get("submitter"), info.get("registry")
    return (
        isinstance(submitter, str)
        and submitter.lower() == verdict.submitter.lower()
        and info.get("chain_id") == verdict.chain_id
        and isinstance(registry, str)
        and registry.lower() == verdict.registry.lower()
    )


def _receipt_names(receipts: tuple[Receipt, ...], service: str, verdict: Verification) -> bool:
    """Whether `service`'s receipt in the file names the chain and registry the verdict read."""
    return any(
        r.url == service and r.chain_id == verdict.chain_id and r.registry.lower() == verdict.registry.lower()
        for r in receipts
    )


def _pending_row(receipt: Receipt) -> PendingRow:
    when = datetime.fromtimestamp(receipt.accepted_at, UTC).isoformat(timespec="seconds")
    return {
        "service": receipt.url,
        "state": "pending",
        "since": when,
        "signer": receipt.signer,
        "chain_id": receipt.chain_id,
        "registry": receipt.registry,
    }


@step(12, whole=True)
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


@step(13, whole=True)
def check_resume_pin(
    bundle: dict[str, Any],
    settings: Settings,
    registry: str | None = None,
    live: bool = True,
    quorum: int | None = None,
    find: Callable[[bytes], ProofFile | None] | None = None,
) -> None:
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
        raise NotAnchored(
            f"resume.digest: {stored or 'the proof store'} holds no proof of bundle 0x{digest}",
            detail={"field": "resume.digest"},
        )
    for field in PIN_FIELDS:
        if pinned.manifest.get(field) != bundle.get(field):
            raise BadInput(
                f"resume: the pinned bundle's {field} is {pinned.manifest.get(field)},"
                f" this bundle's {bundle.get(field)}",
                detail={"field": f"resume.{field}"},
            )
    if live:  # under the same quorum as the bundle's own anchor: not the first endpoint's word alone
        leaned_on(pinned, settings, registry, quorum)


@step(14)
def policy_holds(policy: Policy, verdict: Verification) -> None:
    """What the verdict must show beyond "anchored" (`Policy.check`): the last step, at every door."""
    policy.check(verdict)
