"""Anchor: tamper-evident, on-chain-anchored provenance for automated research. The public API is
`__all__` (docs/python.md: `anchor.stamp`, `anchor.verify`, `Stamper`, `Verifier`, …), each name
imported when first used (PEP 562), so `import anchor` costs what it did before it had any."""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing would triple `import anchor`'s cost
if TYPE_CHECKING:
    from typing import Any

    from anchor import errors, mlflow
    from anchor.anchoring.client import UpgradeOutcome as Upgraded
    from anchor.anchoring.retraction import RetractOutcome as Retracted
    from anchor.anchoring.stamper import Stamped, Stamper
    from anchor.library.face import hash, prove, retract, seal, stamp, upgrade, verify
    from anchor.library.verifier import Policy, Verification, Verifier
    from anchor.settings.session import Settings

__all__ = [
    "Policy", "Retracted", "Settings", "Stamped", "Stamper", "Upgraded", "Verification", "Verifier", "__version__",
    "errors", "hash", "mlflow", "prove", "retract", "seal", "stamp", "upgrade", "verify",
]  # fmt: skip

_LAZY = {
    "hash": "anchor.library.face", "stamp": "anchor.library.face", "upgrade": "anchor.library.face",
    "verify": "anchor.library.face", "prove": "anchor.library.face", "retract": "anchor.library.face",
    "seal": "anchor.library.face",
    "Retracted": "anchor.anchoring.retraction:RetractOutcome",
    "Stamper": "anchor.anchoring.stamper", "Stamped": "anchor.anchoring.stamper",
    "Upgraded": "anchor.anchoring.client:UpgradeOutcome", "Settings": "anchor.settings.session",
    "Verifier": "anchor.library.verifier", "Policy": "anchor.library.verifier",
    "Verification": "anchor.library.verifier",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    import importlib

    if name in ("errors", "mlflow"):  # modules: anchor.mlflow needs the [mlflow] extra only when called
        return importlib.import_module(f"anchor.{name}")
    if name not in _LAZY:
        raise AttributeError(f"module 'anchor' has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value  # once: the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
