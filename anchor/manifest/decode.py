"""Decode an identity object read from a file or a request: re-validate it with its kind's model, refuse
anything not already canonical, and say which file tree it binds.

Above every kind's module (it imports them all); nothing in the manifest package imports it.
"""

from __future__ import annotations

from typing import Any

from anchor.errors import BadInput
from anchor.manifest.filetree import FORMAT_VERSION, check_links, is_hex64
from anchor.manifest.validation import validated


def kind_model(kind: str) -> Any:
    """The model of a model-backed kind, or None. Imported here, when an identity of that kind is
    decoded: a file proof's verify does not build the schemas of five models it never uses (the
    start-up budget)."""
    if kind == "bundle":
        from anchor.manifest.bundle import BundleManifest

        return BundleManifest
    if kind == "attempt":
        from anchor.manifest.attempt import AttemptManifest

        return AttemptManifest
    if kind == "champion":
        from anchor.manifest.champion import ChampionManifest

        return ChampionManifest
    if kind == "mission":
        from anchor.manifest.mission import Mission

        return Mission
    if kind == "timing":
        from anchor.manifest.timing import TimingRecord

        return TimingRecord
    if kind == "mlflow_run":
        from anchor.manifest.mlflow_run import MlflowRunManifest

        return MlflowRunManifest
    return None


def validate_identity(identity: object, source: str = "manifest") -> dict[str, Any]:
    """Re-validate an identity decoded from a file; raises `BadInput` naming the field."""
    if not isinstance(identity, dict):
        raise BadInput(f"{source}: must be an object", detail={"field": "manifest"})
    kind = identity.get("kind")
    if kind == "filetree":
        expected = {"kind", "version", "files_root", "file_count", "total_size"}
        if set(identity) - {"exclude", "symlinks"} != expected:
            raise BadInput(
                f"{source}: a filetree identity has exactly {sorted(expected)} and optional exclude, symlinks",
                detail={"field": "manifest"},
            )
        if "symlinks" in identity:
            check_links(identity["symlinks"], f"{source}.symlinks")
        if "exclude" in identity:
            from anchor.manifest.exclude import check_rules

            check_rules(identity["exclude"], f"{source}.exclude")
        if identity["version"] != FORMAT_VERSION:
            raise BadInput(
                f"{source}: unsupported version {identity['version']!r}", detail={"field": "manifest.version"}
            )
        if not is_hex64(identity["files_root"]):
            raise BadInput(f"{source}: files_root must be 64 hex digits", detail={"field": "manifest.files_root"})
        for field in ("file_count", "total_size"):
            value = identity[field]
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**53:
                raise BadInput(
                    f"{source}: {field} must be an integer in [0, 2^53)", detail={"field": f"manifest.{field}"}
                )
        return identity
    if kind == "ledger":
        expected = {"kind", "version", "head", "length"}
        if set(identity) != expected or identity["version"] != 1 or not is_hex64(identity["head"]):
            raise BadInput(
                f"{source}: a ledger identity is {sorted(expected)} with a 64-hex head", detail={"field": "manifest"}
            )
        if not isinstance(identity["length"], int) or isinstance(identity["length"], bool) or identity["length"] < 0:
            raise BadInput(f"{source}: length must be a non-negative integer", detail={"field": "manifest.length"})
        return identity
    model = kind_model(str(kind))
    if model is None:
        raise BadInput(f"{source}: unknown manifest kind {kind!r}", detail={"field": "manifest.kind"})
    normalized: dict[str, Any] = validated(model, identity, source).identity()
    if normalized != identity:
        raise BadInput(f"{source}: the manifest is not in canonical form", detail={"field": "manifest"})
    return normalized


def tree_summary(identity: dict[str, Any]) -> dict[str, Any] | None:
    """The file tree an identity binds ({files_root, file_count, total_size}), if any."""
    if identity.get("kind") == "filetree":
        return {k: identity[k] for k in ("files_root", "file_count", "total_size")}
    if identity.get("kind") == "bundle":
        output = identity["output"]
        return {k: output[k] for k in ("files_root", "file_count", "total_size")}
    if identity.get("kind") == "mlflow_run":  # its artifacts (anchor.manifest.mlflow_run)
        return dict(identity["artifacts"])
    return None
