"""The proof file: what a holder keeps to check a manifest against the chain (docs/manifest.md section 7).

The format and nothing else: no chain, no journal. Verification lives in `anchor.readback`.

A documented public submodule (docs/python.md): the records of `__all__` are the proof file's shape as
`anchor.stamp`, `anchor.prove` and `anchor.Stamped` hand it to a script, and `load` reads one. Its
modules and every other name are internal. The names are imported when first used (PEP 562): the
format's modules import this package, so it imports none of them up front."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from anchor.manifest.listed import ListedFile
    from anchor.proof.file import (
        BatchPath,
        ChainAnchor,
        FileInclusion,
        PendingProof,
        ProofFile,
        Sealed,
        SealedState,
        ServiceAnchor,
    )
    from anchor.proof.file import load_any as load
    from anchor.proof.receipt import Receipt

__all__ = [
    "BatchPath",
    "ChainAnchor",
    "FileInclusion",
    "ListedFile",
    "PendingProof",
    "ProofFile",
    "Receipt",
    "Sealed",
    "SealedState",
    "ServiceAnchor",
    "load",
]

_FROM = {
    "Receipt": "anchor.proof.receipt:Receipt",
    "load": "anchor.proof.file:load_any",
    "ListedFile": "anchor.manifest.listed:ListedFile",
}


def __getattr__(name: str) -> object:
    import importlib

    if name not in __all__:
        raise AttributeError(f"module 'anchor.proof' has no attribute {name!r}")
    module, _, attribute = _FROM.get(name, f"anchor.proof.file:{name}").partition(":")
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
