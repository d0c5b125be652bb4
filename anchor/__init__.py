"""Anchor: tamper-evident, on-chain-anchored provenance for automated research.

The public API is `__all__` and the `__all__` of the three documented submodules, `anchor.errors`,
`anchor.proof` and `anchor.mlflow` (docs/python.md). Each name is one object wherever it is reached
(`anchor.Retracted is anchor.errors.Retracted`). Every other module, and every name outside those
lists, is internal and may change in any release. Names are imported when first used (PEP 562), so
`import anchor` costs what it did before it had any."""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing would triple `import anchor`'s cost
if TYPE_CHECKING:
    from anchor import errors, mlflow, proof
    from anchor.anchoring.client import Upgraded
    from anchor.anchoring.retraction import Retraction
    from anchor.anchoring.stamper import Stamped, Stamper
    from anchor.errors import (
        AnchorError,
        BadInput,
        ChainUnreachable,
        NotAnchored,
        NotFinal,
        Pending,
        PolicyMismatch,
        ProofFormatError,
        Retracted,
        Tampered,
        UnknownRegistry,
    )
    from anchor.layout import DataDir
    from anchor.library.face import hash, prove, retract, seal, stamp, upgrade, verify
    from anchor.library.verifier import Policy, VerdictStatus, Verification, Verifier
    from anchor.proof.file import PendingProof, ProofFile
    from anchor.proof.receipt import Receipt
    from anchor.readback.verdict_json import AnchorRow, BundleRan, LaterStamp, PendingRow, Quorum
    from anchor.sealing.make import SealedProof
    from anchor.settings.model import Environment
    from anchor.settings.session import Settings

__all__ = [
    # what a script calls
    "hash",
    "prove",
    "retract",
    "seal",
    "stamp",
    "upgrade",
    "verify",
    # what it makes and what it gets back
    "DataDir",
    "Environment",
    "PendingProof",
    "Policy",
    "ProofFile",
    "Receipt",
    "Retraction",
    "SealedProof",
    "Settings",
    "Stamped",
    "Stamper",
    "Upgraded",
    "VerdictStatus",
    "Verification",
    "Verifier",
    # the parts of a verdict (`Verification`'s JSON fields)
    "AnchorRow",
    "BundleRan",
    "LaterStamp",
    "PendingRow",
    "Quorum",
    # the errors a verdict raises (each is anchor.errors' own class; the rest of the hierarchy is there)
    "AnchorError",
    "BadInput",
    "ChainUnreachable",
    "NotAnchored",
    "NotFinal",
    "Pending",
    "PolicyMismatch",
    "ProofFormatError",
    "Retracted",
    "Tampered",
    "UnknownRegistry",
    # the documented submodules, and the version
    "errors",
    "mlflow",
    "proof",
    "__version__",
]

_LAZY = {
    "hash": "anchor.library.face",
    "stamp": "anchor.library.face",
    "upgrade": "anchor.library.face",
    "verify": "anchor.library.face",
    "prove": "anchor.library.face",
    "retract": "anchor.library.face",
    "seal": "anchor.library.face",
    "Retraction": "anchor.anchoring.retraction",
    "SealedProof": "anchor.sealing.make",
    "Stamper": "anchor.anchoring.stamper",
    "Stamped": "anchor.anchoring.stamper",
    "Upgraded": "anchor.anchoring.client",
    "Settings": "anchor.settings.session",
    "Verifier": "anchor.library.verifier",
    "Policy": "anchor.library.verifier",
    "Verification": "anchor.library.verifier",
    "VerdictStatus": "anchor.library.verifier",
    "DataDir": "anchor.layout",
    "Environment": "anchor.settings.model",
    **dict.fromkeys(("AnchorRow", "BundleRan", "LaterStamp", "PendingRow", "Quorum"), "anchor.readback.verdict_json"),
    "ProofFile": "anchor.proof.file",
    "PendingProof": "anchor.proof.file",
    "Receipt": "anchor.proof.receipt",
    **dict.fromkeys(
        (
            "AnchorError",
            "BadInput",
            "ChainUnreachable",
            "NotAnchored",
            "NotFinal",
            "Pending",
            "PolicyMismatch",
            "ProofFormatError",
            "Retracted",
            "Tampered",
            "UnknownRegistry",
        ),
        "anchor.errors",
    ),
}


def __getattr__(name: str) -> object:
    import importlib

    if name in ("errors", "mlflow", "proof"):  # modules: anchor.mlflow needs the [mlflow] extra only when called
        return importlib.import_module(f"anchor.{name}")
    if name not in _LAZY:
        raise AttributeError(f"module 'anchor' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # once: the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
