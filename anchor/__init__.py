"""Anchor: tamper-evident, on-chain-anchored provenance for automated research.

The public Python API is the names in `__all__`, documented in docs/python.md; every other module is
internal and may change between releases. In a training script:

    import anchor

    stamped = anchor.stamp("results/")          # a key here, or the services of ANCHOR_SERVICE_URLS
    verdict = anchor.verify("results/")         # raises anchor.errors.Tampered if a byte changed
    print(verdict.submitter, verdict.anchored_at)

Data flows manifest (pure hashing, `anchor.manifest`) → batch (`anchor.batch`) → chain
(`anchor.chain`) → read-back (`anchor.readback`), with `Stamper` and `Verifier` the one face of it
that the CLI, the API and every integration call.

Why lazy (PEP 562): `import anchor` is what every `anchor` command and every script pays first; the
names below are imported when first used, so `import anchor` costs what it did before it had any.
"""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing would triple `import anchor`'s cost
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from anchor import errors
    from anchor.anchoring.client import UpgradeOutcome as Upgraded
    from anchor.anchoring.stamper import Stamped, Stamper
    from anchor.library.verifier import Policy, Verification, Verifier
    from anchor.proof.file import ProofFile
    from anchor.settings.session import Settings

__all__ = [
    "Policy", "Settings", "Stamped", "Stamper", "Upgraded", "Verification", "Verifier", "__version__", "errors",
    "hash", "prove", "stamp", "upgrade", "verify",
]  # fmt: skip

_LAZY = {
    "Stamper": "anchor.anchoring.stamper", "Stamped": "anchor.anchoring.stamper",
    "Upgraded": "anchor.anchoring.client:UpgradeOutcome", "Settings": "anchor.settings.session",
    "Verifier": "anchor.library.verifier", "Policy": "anchor.library.verifier",
    "Verification": "anchor.library.verifier",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    import importlib

    if name == "errors":
        return importlib.import_module("anchor.errors")
    if name not in _LAZY:
        raise AttributeError(f"module 'anchor' has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value  # once: the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


def hash(path: str | Path, *, symlinks: str = "refuse") -> str:  # noqa: A001 - anchor.hash, as `anchor hash`
    """The manifest digest (0x…) of a file or directory, as `anchor hash PATH` prints it: no chain, no
    settings; the default excludes (.git/) apply as on the command line."""
    from pathlib import Path

    from anchor.manifest.exclude import Rules
    from anchor.manifest.filetree import hash_tree

    target = Path(path)
    return "0x" + hash_tree(target, Rules.for_root(target), symlinks).digest.hex()


def stamp(path: str | Path, *, out: str | Path | None = None, settings: Settings | None = None,
          services: list[str] | None = None) -> Stamped:  # fmt: skip
    """Anchor `path` and write its proof (`<PATH>.anchor.json`, or `out`): through the services of
    `services` or ANCHOR_SERVICE_URLS (pending at once, `upgrade` later), else with the key here.
    `Stamper.from_settings(settings, services).stamp(path)`."""
    from pathlib import Path

    from anchor.anchoring.stamper import Stamper

    with Stamper.from_settings(settings, services) as stamper:
        return stamper.stamp(Path(path), out=None if out is None else Path(out))


def upgrade(proof: str | Path, *, settings: Settings | None = None, services: list[str] | None = None) -> Upgraded:
    """Complete a pending proof from its services' anchors, each checked against the chain first."""
    from pathlib import Path

    from anchor.anchoring.stamper import Stamper
    from anchor.proof.locate import default_proof_path

    given = Path(proof)
    target = given if given.name.endswith(".anchor.json") else default_proof_path(given)
    with Stamper.from_settings(settings, services) as stamper:
        return stamper.upgrade(target)


def verify(path: str | Path, *, proof: str | Path | None = None, policy: Policy | None = None,
           settings: Settings | None = None, **options: Any) -> Verification:  # fmt: skip
    """The verdict on `path` (`Verifier.from_settings(settings).verify(...)`): a `Verification`, or a
    typed error of anchor.errors (`Tampered`, `NotAnchored`, `Pending`, `PolicyMismatch`, …)."""
    from pathlib import Path

    from anchor.library.verifier import Verifier

    return Verifier.from_settings(settings).verify(
        Path(path), proof=None if proof is None else Path(proof), policy=policy, **options
    )


def prove(file: str | Path, *, inside: str | Path, out: str | Path | None = None) -> ProofFile:
    """Write the self-contained proof of one `file` of an anchored directory `inside` (as `anchor prove
    FILE --in DIR`): checkable without the rest of the directory. Returns the proof written."""
    from pathlib import Path

    from anchor.anchoring.prove import prove_file
    from anchor.proof.file import check_output_path, write_proof
    from anchor.proof.locate import default_proof_path, file_proof_path

    folder, one = Path(inside), Path(file)
    written = prove_file(one, folder, default_proof_path(folder))
    target = Path(out) if out is not None else file_proof_path(one, folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    check_output_path(target)
    write_proof(written, target)
    return written
