"""Where proofs live, in one place: the writer (`stamp`, `prove`) and every reader (`verify`, `lookup`,
`attest`) ask here, so a proof written is a proof found.

- `<PATH>.anchor.json` beside PATH (as sigstore writes `<file>.sigstore.json`);
- a file's proof from `anchor prove`: `<DIR>.proofs/<path in DIR>.anchor.json`, beside the anchored
  folder and never inside it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any


def default_proof_path(path: Path) -> Path:
    """`<path>.anchor.json` beside the data, as sigstore writes `<file>.sigstore.json`."""
    return beside(path, ".anchor.json")


def beside(path: Path, suffix: str) -> Path:
    """`<path><suffix>` beside `path`. A folder named from inside it (`anchor stamp .`, `verify ..`) is
    named by what it is: `cd results && anchor stamp .` writes results.anchor.json beside results, never
    inside it (`.` had no name to add a suffix to: every command said "unexpected ValueError")."""
    if path.name in ("", ".", ".."):
        path = Path(os.path.abspath(path))  # lexically, as the shell's `cd ..` would: no link followed
        if not path.name:
            from anchor.errors import BadInput

            raise BadInput(
                f"{path}: the root of the filesystem has no folder beside it to hold what is written of it",
                detail={"path": str(path)},
            )
    return path.with_name(path.name + suffix)


def timing_proof_path(proof_out: Path) -> Path:
    """Where a result bundle's timing record is proven: `<name>.timing.anchor.json` beside the bundle's
    `<name>.anchor.json` (docs/manifest.md, "Timing record")."""
    return proof_out.with_name(proof_out.name.removesuffix(".anchor.json") + ".timing.anchor.json")


def proofs_beside(folder: Path) -> Path:
    """`<DIR>.proofs/`: where the per-file proofs of `folder` live, beside it and never inside it."""
    base = folder.resolve()
    return base.with_name(base.name + ".proofs")


def file_proof_path(file: Path, bundle_dir: Path) -> Path:
    """Where `anchor prove` writes a file's proof by default: `<DIR>.proofs/<path in DIR>.anchor.json`,
    beside the anchored directory and never inside it (a proof written into DIR would make the next
    `anchor verify DIR` report a file the tool added itself as tampering)."""
    rel = Path(os.path.relpath(file.resolve(), bundle_dir.resolve()))
    return proofs_beside(bundle_dir) / rel.with_name(rel.name + ".anchor.json")


def anchored_around(out: Path) -> Path | None:
    """The nearest folder above `out` with a proof of its own (`<DIR>.anchor.json`) whose recorded rules
    do not leave `out` out: a file written there changes that anchored folder, and its next `anchor
    verify` names it as added (stamping `results/run1` writes `results/run1.anchor.json` into an anchored
    `results/`). None when there is none; an unreadable proof there is passed over."""
    from anchor.errors import AnchorError
    from anchor.manifest.exclude import Rules
    from anchor.proof.file import excluded_by, load_any

    target = out.resolve()
    for folder in target.parents:
        if folder == folder.parent:  # the filesystem's root: no name to put a proof beside
            break
        proof = default_proof_path(folder)
        if not proof.is_file():
            continue
        try:
            recorded = excluded_by(load_any(proof))
        except AnchorError:
            continue
        if not Rules(recorded).excludes(target.relative_to(folder).as_posix(), False):
            return folder
    return None


def find_proof(path: Path) -> Path:
    """The proof `verify PATH` uses without --proof: `<PATH>.anchor.json` if it exists, else a file
    proof `anchor prove` left beside an enclosing directory (`<DIR>.proofs/...`), else the first."""
    first = default_proof_path(path)
    if first.exists():
        return first
    for candidate in _proofs_beside_folders(path):
        if candidate.is_file():
            return candidate
    return first


def proof_of(target: Path) -> Path:
    """What `upgrade` and `seal` take: a proof file named directly, or a stamped path whose proof is
    found as `verify` finds it, with its hints (`require_proof`)."""
    if target.name.endswith(".anchor.json") and target.exists():
        return target
    return require_proof(target, "name that proof file instead of the path")


def require_proof(path: Path, give_proof: str = "give it with --proof FILE") -> Path:
    """`find_proof`, or the verdict a newcomer can act on: `BadInput` (exit 2) for a path that does not
    exist (a typo, with the near name), `NotAnchored` (exit 3) for one without a proof, saying where it
    looked, how to find the proof of a moved or renamed one (`give_proof`, `anchor lookup`) and, last,
    how to stamp it; for a file inside a stamped folder, how to prove that file from the
    folder's proof (`anchor prove`), never to stamp it again as a record of its own."""
    from anchor.errors import BadInput, NotAnchored, did_you_mean_path

    found = find_proof(path)
    if found.exists():  # whatever is there, the reader judges (a FIFO is "not a regular file", at once)
        return found
    if not path.exists() and not path.is_symlink():
        subject = path.with_name(path.name.removesuffix(".anchor.json"))  # a proof named: hint at its subject
        hint = (did_you_mean_path(subject) if subject != path else "") or did_you_mean_path(path)
        raise BadInput(f"{path}: no such file or folder{hint}", detail={"path": str(path)})
    stamped = next(
        (
            folder
            for folder in list(path.resolve().parents)[:16]
            if folder.name and default_proof_path(folder).is_file()
        ),
        None,
    )
    if stamped is not None:
        shown = os.path.relpath(stamped) if not path.is_absolute() else str(stamped)
        raise NotAnchored(
            f"no proof of its own for {path}: it is inside {shown}, which is stamped"
            f" ({default_proof_path(Path(shown))}); prove this file from it with `anchor prove {path} --in {shown}`,"
            " then verify it",
            detail={"path": str(path), "stamped_folder": str(stamped)},
        )
    data = path.with_name(path.name.removesuffix(".anchor.json"))
    if path.name.endswith(".anchor.json") and data.name and (data.exists() or data.is_symlink()):
        raise BadInput(  # a proof file named as the data: its own proof was looked for, then stamping it suggested
            f"{path}: a proof file, not the data it proves: verify the data (`anchor verify {data}`), or give"
            f" this file as its proof (`anchor verify DATA --proof {path}`)",
            detail={"path": str(path)},
        )
    places = [found, *(p for p in _proofs_beside_folders(path) if _first_part_exists(p, path))]
    raise NotAnchored(  # a verifier is told first how to find an existing anchor, a new one is the last resort
        f"no proof for {path} (looked for {places[0]}"
        + (f" and in {len(places) - 1} .proofs/ folder(s) beside its enclosing folders" if places[1:] else "")
        + f"); stamped under another name (moved, renamed)? {give_proof}, or find its record by its content"
        f" with `anchor lookup {path}`; never stamped: stamp it with `anchor stamp {path}`",
        detail={"path": str(path), "looked_in": [str(p) for p in places]},
    )


def _first_part_exists(candidate: Path, path: Path) -> bool:
    """Whether the `<DIR>.proofs/` folder of a candidate exists (only those are worth naming)."""
    here = path.resolve()
    for ancestor in list(here.parents)[:16]:
        proofs = ancestor.with_name(ancestor.name + ".proofs")
        if ancestor.name and candidate.is_relative_to(proofs):
            return proofs.is_dir()
    return False


def _proofs_beside_folders(path: Path) -> list[Path]:
    """Where `anchor prove` leaves a file's proof: `<DIR>.proofs/<path in DIR>.anchor.json` for each of
    up to 16 enclosing folders (the filesystem root has no name, so nothing can sit beside it)."""
    here = path.resolve()
    places = []
    for ancestor in list(here.parents)[:16]:
        if not ancestor.name:
            continue
        candidate = ancestor.with_name(ancestor.name + ".proofs") / here.relative_to(ancestor)
        places.append(candidate.with_name(candidate.name + ".anchor.json"))
    return places


def history_dir(proof_path: Path) -> Path:
    """Where a proof goes when a later stamp of the same path supersedes it: `<PATH>.anchor-history/`
    beside it (its files end in .anchor.json, so a folder stamp leaves them out like any proof)."""
    return proof_path.with_name(proof_path.name.removesuffix(".anchor.json") + ".anchor-history")


def current_proof_of(path: Path, proof_path: Path) -> Path:
    """The proof the latest stamp left for what `proof_path` proves: for a file proof from `anchor
    prove` (`<DIR>.proofs/…`), its folder's `<DIR>.anchor.json`; otherwise `<PATH>.anchor.json`."""
    here = proof_path.resolve() if proof_path.is_symlink() else _real_folder(proof_path.parent) / proof_path.name
    for ancestor in here.parents:
        if ancestor.name.endswith(".proofs") and len(ancestor.name) > len(".proofs"):
            return ancestor.with_name(ancestor.name.removesuffix(".proofs") + ".anchor.json")
    return default_proof_path(path)


_FOLDERS: ContextVar[dict[tuple[Any, ...], Path] | None] = ContextVar("anchor_real_folders", default=None)


@contextmanager
def folders_once(memory: dict[tuple[Any, ...], Path]) -> Iterator[None]:
    """Within the block (one verify of many paths: anchor.readback.checklist.reads_once), a proof's folder
    is resolved once while it stays the same folder; outside it, every time."""
    token = _FOLDERS.set(memory)
    try:
        yield
    finally:
        _FOLDERS.reset(token)


def _real_folder(folder: Path) -> Path:
    """A folder's real path, resolved once per folder within `folders_once` as it is now (its device and
    inode, and the working directory a relative one starts from): a verify of 1,000 proofs in one folder
    resolved it 1,000 times, an lstat per component each. Not kept past the call: a long-lived process
    would keep a path whose folders were renamed around the same inode."""
    memory = _FOLDERS.get()
    if memory is None:
        return folder.resolve()
    try:
        st = os.stat(folder)
    except OSError:
        return folder.resolve()
    key = (str(folder), os.getcwd(), st.st_dev, st.st_ino)
    if key not in memory:
        memory[key] = folder.resolve()
    return memory[key]


def later_stamp(path: Path, proof_path: Path, digest: str) -> tuple[Path, str, int] | None:
    """(proof, the digest and block it states) when the current proof of `path` (`current_proof_of`) is
    of other bytes than `digest`, the one `proof_path` proves: the verdict on an earlier anchor is true
    of then, and says so (`Verification.superseded_by`). What that file states is not verified here."""
    from anchor.errors import BadInput
    from anchor.proof.file import load_proof

    current = current_proof_of(path, proof_path)
    if current == proof_path or not current.is_file() or current.resolve() == proof_path.resolve():
        return None  # the same path is the same file, resolved or not: two realpaths less per proof
    try:
        latest = load_proof(current)
    except BadInput:
        return None
    if latest.manifest_digest == digest or latest.file is not None:
        return None
    return current, latest.manifest_digest, latest.anchor.block_number


CLAIM_MOST_BYTES = 1 << 20
"""A proof file larger than this is a folder's, whose own checks outlast its reads: no claim is read."""


def claimed_anchor(path: Path) -> tuple[int, str, str, bytes] | None:
    """(chain id, registry, transaction, batch root) that the proof `verify PATH` would use claims to be
    anchored at, read cheaply and checked for nothing else; None for a proof that is not there, not a
    regular file, larger than `CLAIM_MOST_BYTES`, or not of that form. A guess at which reads a verdict
    will make (anchor.readback.ahead), never a verdict: the checklist reads the file again and judges it."""
    import re

    from anchor.files import read_regular
    from anchor.proof.file import decode_json

    try:
        data = read_regular(find_proof(path), CLAIM_MOST_BYTES)
        if len(data) > CLAIM_MOST_BYTES:
            return None
        proof = decode_json(data)
        anchor, root = proof["anchor"], bytes.fromhex(proof["batch"]["root"][2:])
        chain_id, registry, tx_hash = anchor["chain_id"], str(anchor["registry"]), str(anchor["tx_hash"])
    except Exception:  # noqa: BLE001 - see above: whatever fails here, the checklist says it
        return None
    if type(chain_id) is not int or len(root) != 32 or re.fullmatch(r"0x[0-9a-fA-F]{64}", tx_hash) is None:
        return None  # a call of a transaction hash that is not one could fail a whole batch
    return chain_id, registry, tx_hash, root
