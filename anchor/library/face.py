"""`anchor.hash`, `anchor.stamp`, `anchor.upgrade`, `anchor.verify`, `anchor.prove`, `anchor.retract`,
`anchor.seal`: the module-level conveniences of `import anchor` (docs/python.md), each one line over
`Stamper.from_settings()` or `Verifier.from_settings()`. Here, not in anchor/__init__.py, so that
`import anchor` loads none of them until one is used."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from anchor.anchoring.client import Upgraded
    from anchor.anchoring.retraction import Retraction
    from anchor.anchoring.stamper import Stamped
    from anchor.library.verifier import Policy, Verification
    from anchor.proof.file import ProofFile
    from anchor.sealing.make import SealedProof
    from anchor.settings.session import Settings


def hash(path: str | Path, *, symlinks: str = "refuse") -> str:  # noqa: A001 - anchor.hash, as `anchor hash`
    """The manifest digest (0x…) of a file or directory, as `anchor hash PATH` prints it: no chain, no
    settings; the default excludes (.git/) apply as on the command line."""
    from anchor.manifest.exclude import Rules
    from anchor.manifest.filetree import hash_tree

    target = Path(path)
    return "0x" + hash_tree(target, Rules.for_root(target), symlinks).digest.hex()


def stamp(
    path: str | Path,
    *,
    out: str | Path | None = None,
    settings: Settings | None = None,
    services: list[str] | None = None,
    start_chain: bool = False,
    rehash: bool = False,
) -> Stamped:
    """Anchor `path` and write its proof (`<PATH>.anchor.json`, or `out`): through the services of
    `services` or ANCHOR_SERVICE_URLS (pending at once, `upgrade` later), else with the key here.
    Files unchanged since the last stamp of `path` are not read again unless `rehash`.
    `Stamper.from_settings(settings, services, start_chain=start_chain).stamp(path)`. On the embedded
    local chain, a chain that is not running is started only with `start_chain=True`, and stopped when
    this interpreter exits; without it, `anchor.errors.ChainUnreachable` says so."""
    from anchor.anchoring.stamper import Stamper

    with Stamper.from_settings(settings, services, start_chain=start_chain) as stamper:
        return stamper.stamp(Path(path), out=None if out is None else Path(out), rehash=rehash)


def upgrade(
    proof: str | Path, *, settings: Settings | None = None, services: list[str] | None = None, start_chain: bool = False
) -> Upgraded:
    """Complete a pending proof from its services' anchors, each checked against the chain first."""
    from anchor.anchoring.stamper import Stamper

    with Stamper.from_settings(settings, services, start_chain=start_chain) as stamper:
        return stamper.upgrade(Path(proof))


def verify(
    path: str | Path,
    *,
    proof: str | Path | None = None,
    policy: Policy | None = None,
    settings: Settings | None = None,
    spec: str | Path | None = None,
    require: str = "any",
    subjects_in: str | Path | None = None,
) -> Verification:
    """The verdict on `path` (`Verifier.from_settings(settings).verify(...)`): a `Verification`, whose
    `status` says what it rests on, or a typed error of anchor.errors (`Tampered`, `NotAnchored`,
    `Pending`, `Retracted`, `PolicyMismatch`, …). `policy` is what the verdict must show beyond
    "anchored" (who, by when, how final); `require` how many of a proof's anchors must verify (`any`,
    `all` or a number); `spec` the bundle spec a result bundle must match; `subjects_in` where an
    in-toto statements file's subjects are. Without `settings`, the data dir nearest to `path` comes
    first, as on the command line."""
    from anchor.library.verifier import Verifier
    from anchor.settings.session import Settings

    def given(value: str | Path | None) -> Path | None:
        return None if value is None else Path(value)

    return Verifier.from_settings(settings or Settings.load(near=Path(path))).verify(
        Path(path),
        proof=given(proof),
        policy=policy,
        spec=given(spec),
        require=require,
        subjects_in=given(subjects_in),
    )


def prove(file: str | Path, *, inside: str | Path, out: str | Path | None = None) -> ProofFile:
    """Write the self-contained proof of one `file` of an anchored directory `inside` (as `anchor prove
    FILE --in DIR`): checkable without the rest of the directory. Returns the proof written."""
    from anchor.anchoring.prove import write_file_proof

    return write_file_proof(Path(file), Path(inside), out=None if out is None else Path(out))[0]


def retract(
    target: str | Path, *, reason: str, settings: Settings | None = None, whole_batch: bool = False
) -> Retraction:
    """Withdraw what you anchored, on chain, without deleting it (as `anchor retract TARGET --reason`): a
    stamped path or its proof (the root, your key's record), or a full research commit (your lineage
    record). Every verdict on it is then `anchor.errors.Retracted` (exit 16), naming when, by whom, why.
    A root shared by other results of its batch is retracted only with `whole_batch=True`."""
    from anchor.anchoring.retraction import retract as retract_record
    from anchor.settings.session import Settings

    return retract_record(settings or Settings.load(), target, reason, whole_batch)


def seal(path: str | Path, *, settings: Settings | None = None, refresh: bool = False) -> SealedProof:
    """Write into the proof of `path` (or into the proof file given) each anchor's block header, receipt and
    receipt-trie proof, and the registry's record as of the latest block (its storage proof), read once
    from its chain, so that `Verifier.offline(...)` checks it with no network and says whether the record
    was retracted by then (as `anchor seal PATH`); `refresh=True` moves that record on to the latest
    block for anchors sealed before (`anchor seal --refresh`). Returns what was sealed and the blocks a
    verifier must trust."""
    from anchor.sealing.make import seal as seal_proof
    from anchor.settings.session import Settings

    return seal_proof(settings or Settings.load(), Path(path), refresh)
