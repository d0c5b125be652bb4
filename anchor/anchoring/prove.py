"""Cut a self-contained proof for one file out of a whole-tree proof.

The file proof keeps the manifest identity, batch path and chain anchor, and replaces the full
listing by the file's entry and its RFC 6962 audit path, so it verifies without the rest of the
bundle. Creating it needs no chain: everything it proves was already anchored.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from anchor.errors import BadInput, Tampered
from anchor.manifest.filetree import audit_path, hash_tree
from anchor.proof.file import FileInclusion, ProofFile, load_proof
from anchor.readback.checklist import check_proof_consistency


def prove_file(file: Path, bundle_dir: Path, bundle_proof: Path) -> ProofFile:
    """The proof of `file` (inside `bundle_dir`) from the bundle's proof. Raises `Tampered` if the file
    differs from what was anchored, `BadInput` if it is not in the anchored tree.
    """
    proof = load_proof(bundle_proof)
    check_proof_consistency(proof)
    tree = proof._filetree()
    if tree is None:
        raise BadInput(f"{bundle_proof}: not a whole-tree proof (it lists no files)", detail={"field": "files"})
    try:
        relative = Path(os.path.relpath(file.resolve(), bundle_dir.resolve()))
    except ValueError:
        relative = Path("..")
    if relative.parts[:1] == ("..",) or relative.is_absolute():
        raise BadInput(f"{file}: not inside {bundle_dir}", detail={"field": "file"})
    rel = unicodedata.normalize("NFC", relative.as_posix())
    _, entry = tree.entry(rel)
    on_disk = hash_tree(file).files[0]
    if (on_disk.size, on_disk.blake3) != (entry.size, entry.blake3):
        raise Tampered(f"{rel}: differs from the anchored file; refusing to prove it", detail={"changed": [rel]})
    return single_file_proof(proof, entry.path)


def write_file_proof(
    file: Path, bundle_dir: Path, bundle_proof: Path | None = None, out: Path | None = None
) -> tuple[ProofFile, Path]:
    """`anchor prove FILE --in DIR` (and `anchor.prove`): the proof of `file` from the proof of `bundle_dir`
    (default: DIR.anchor.json beside it), written to `out` or to DIR.proofs/<FILE in DIR>.anchor.json,
    never inside the anchored directory and never over a link. A given `out` is checked before anything is
    hashed; returns (the proof, where it was written)."""
    from anchor.files import folder_beside
    from anchor.proof.file import check_output_path, excluded_by, write_proof
    from anchor.proof.locate import file_proof_path

    if out is not None:
        check_output_path(out)
    proof = prove_file(file, bundle_dir, bundle_proof or _proof_of_folder(bundle_dir))  # refuses first
    if out is not None:  # not inside the folder, unless its recorded rules leave it out
        check_output_path(out, proves=bundle_dir, recorded=excluded_by(proof))
    target = out or file_proof_path(file, bundle_dir)
    if out is None:
        folder_beside(target.parent)
        check_output_path(target)
    write_proof(proof, target)
    return proof, target


def _proof_of_folder(bundle_dir: Path) -> Path:
    """`<DIR>.anchor.json`, or what a newcomer can act on: a mistyped folder named as the input it was
    given as (`inside`, `--in`) with the near name, exit 2; a folder never stamped is not anchored (exit 3),
    with how to stamp it, as `verify` says it."""
    from anchor.errors import NotAnchored, did_you_mean_path
    from anchor.proof.locate import default_proof_path

    found = default_proof_path(bundle_dir)
    if found.exists() or found.is_symlink():  # whatever is there, the reader judges
        return found
    if not bundle_dir.is_dir():
        said = "not a folder" if bundle_dir.exists() else f"no such folder{did_you_mean_path(bundle_dir)}"
        raise BadInput(f"inside {str(bundle_dir)!r}: {said}", detail={"field": "inside"})
    raise NotAnchored(
        f"no proof for {bundle_dir} (looked for {found}); stamp it with `anchor stamp {bundle_dir}`,"
        " then prove its files",
        detail={"path": str(bundle_dir), "looked_in": [str(found)]},
    )


def single_file_proof(proof: ProofFile, path: str) -> ProofFile:
    """The proof of the file at `path` of a whole-tree proof: its entry and RFC 6962 audit path in place
    of the listing. Raises `BadInput` if the proof lists no files or not that path."""
    tree = proof._filetree()
    if tree is None:
        raise BadInput("not a whole-tree proof (it lists no files)", detail={"field": "files"})
    index, entry = tree.entry(path)
    leaves = tree.leaves()
    inclusion = FileInclusion(
        path=entry.path,
        size=entry.size,
        blake3=entry.blake3,
        index=index,
        tree_size=len(leaves),
        audit_path=tuple(sibling.hex() for sibling in audit_path(leaves, index)),
    )
    return proof.model_copy(update={"files": None, "file": inclusion})
