"""Registered models and aliases: a version is promoted only on a proof, and `models:/NAME@alias`
verifies against the anchored run it came from.

Why: where a team promotes a model, MLflow's own docs use a registered model with an alias
(`@champion`), and a service loads `models:/NAME@champion`. Nothing in MLflow ties that version to a
run as it was reported. `promote` verifies the run's proof first (the one `verify_run`) and only then
registers the version of the run's logged model (or moves the alias), tagging the version with the
run's manifest digest and proof, and anchors the promotion itself: a record from the previous holder
of the alias to the new version, stamped as a file tree (`promotion.json`, kept in the run's `anchor/`
folder), so the history of `@champion` is on chain and `anchor lookup DIGEST` finds each step.

Who could lie: whoever writes the registry can move the alias to a version registered without a proof,
or edit the registered files. `verify_model` resolves the alias, refuses a version without the tags
`promote` writes (exit 3, named), verifies the run (every change named, exit 4), and compares the
version's own files (the registered copy, read from where MLflow serves it) with the anchored model's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from anchor.errors import AnchorError, BadInput, NotAnchored, Tampered
from anchor.mlflow.bridge import RunVerification, _settings, verify_run
from anchor.mlflow.reading import PROOF_FOLDER, client_for, scratch_dir, translated

if TYPE_CHECKING:
    from anchor.anchoring.stamper import Stamper
    from anchor.library.verifier import Policy, Verifier
    from anchor.manifest.listed import ListedFile
    from anchor.settings.session import Settings

__all__ = ["ModelVerification", "Promoted", "promote", "verify_model"]

TAG_RUN, TAG_DIGEST, TAG_MODEL = "anchor.run_id", "anchor.run_manifest_digest", "anchor.model_id"
TAG_TX, TAG_PROMOTION = "anchor.run_tx", "anchor.promotion_digest"
_URI = re.compile(r"^models:/(?P<name>[^/@]{1,256})(?:@(?P<alias>[A-Za-z0-9_-]{1,256})|/(?P<version>\d{1,12}))$")


@dataclass(frozen=True, slots=True)
class Promoted:
    """What `promote` did: the version registered (or found), the alias set, the run it stands on, and
    the promotion record anchored."""

    model: str
    version: str
    alias: str | None
    run_id: str
    model_id: str
    run_digest: str
    """The run's manifest digest, as verified before anything was written."""
    run_block: int | None
    promotion_digest: str
    promotion_block: int | None
    previous: str | None
    """The version that held the alias before (None: the alias is new)."""


@dataclass(frozen=True, slots=True)
class ModelVerification:
    """The verdict on a registered version: its run's (`RunVerification`) and its own files."""

    uri: str
    model: str
    version: str
    run: RunVerification
    model_id: str
    files: int
    promotion_digest: str | None
    """The promotion record's digest, its proof verified and its fields this version's (None: no record)."""
    promotion_block: int | None = None
    previous: dict[str, object] | None = None
    """The version that held the alias before, as the promotion record names it."""

    def to_json(self) -> dict[str, object]:
        return {"uri": self.uri, "model": self.model, "version": self.version, "model_id": self.model_id,
                "files": self.files, "promotion_digest": self.promotion_digest,
                "promotion_block": self.promotion_block, "previous": self.previous,
                "run": self.run.to_json()}  # fmt: skip


class _AnchoredModel(TypedDict):
    """A logged model as the run's identity binds it (anchor.manifest.mlflow_run.LoggedModel)."""

    model_id: str
    name: str
    source_run_id: NotRequired[str | None]
    files: list[ListedFile]


def _anchored_models(run: RunVerification) -> list[_AnchoredModel]:
    """The logged models of a verified run: its identity was validated, field by field, when its proof was
    (anchor.manifest.mlflow_run), so its entries have this shape."""
    return cast("list[_AnchoredModel]", run.manifest.get("logged_models") or [])


def _mlflow_error(exc: Exception, code: str) -> bool:
    return getattr(exc, "error_code", None) == code


def promote(
    model: str, run_id: str, *, alias: str | None = None, model_id: str | None = None,
    tracking_uri: str | None = None, settings: Settings | None = None, verifier: Verifier | None = None,
    stamper: Stamper | None = None, services: list[str] | None = None, policy: Policy | None = None,
) -> Promoted:  # fmt: skip
    """Verify run `run_id` (raises the typed error of the first check that fails: nothing is written),
    then register its logged model (`model_id`, or its only one) as a version of `model`, tag the version
    with the run's manifest digest and proof, anchor the promotion record and set `alias` on it."""
    from anchor.anchoring.stamper import Stamper
    from anchor.manifest.exclude import Rules
    from anchor.proof.file import ProofFile

    settings = _settings(settings)
    if not re.fullmatch(r"[^/@]{1,256}", model):
        raise BadInput(f"model name {model!r}: 1-256 characters, no '/' or '@'", detail={"field": "model"})
    if alias is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", alias):
        raise BadInput(f"alias {alias!r}: letters, digits, '_' and '-'", detail={"field": "alias"})
    verdict = verify_run(run_id, tracking_uri=tracking_uri, verifier=verifier, settings=settings, policy=policy)
    models = [m["model_id"] for m in _anchored_models(verdict)]
    if model_id is None and len(models) != 1:
        raise BadInput(f"run {run_id} has {len(models)} logged models anchored ({', '.join(models) or 'none'}):"
                       " name one (--model-id)", detail={"field": "model_id"})  # fmt: skip
    chosen = model_id or models[0]
    if chosen not in models:
        raise BadInput(f"logged model {chosen}: not among run {run_id}'s anchored models ({', '.join(models)})",
                       detail={"field": "model_id"})  # fmt: skip
    client = client_for(tracking_uri)
    digest = verdict.verification.manifest_digest
    try:
        previous = None
        if alias is not None:
            try:
                previous = client.get_model_version_by_alias(model, alias)
            except Exception as exc:  # noqa: BLE001 - no such model or alias yet
                if not _mlflow_error(exc, "RESOURCE_DOES_NOT_EXIST") and not _mlflow_error(
                        exc, "INVALID_PARAMETER_VALUE"):  # fmt: skip
                    raise
        try:
            client.create_registered_model(model)
        except Exception as exc:  # noqa: BLE001
            if not _mlflow_error(exc, "RESOURCE_ALREADY_EXISTS"):
                raise
        tags = {TAG_RUN: run_id, TAG_DIGEST: digest, TAG_MODEL: chosen,
                TAG_TX: verdict.verification.tx_hash}  # fmt: skip
        version = client.create_model_version(model, source=f"models:/{chosen}", run_id=run_id, tags=tags,
                                              model_id=chosen)  # fmt: skip
        number = str(version.version)
        record = {"kind": "anchor.mlflow.promotion", "version": 1, "model": model, "model_version": number,
                  "alias": alias, "run_id": run_id, "run_manifest_digest": digest, "model_id": chosen,
                  "previous": None if previous is None else {
                      "model_version": str(previous.version),
                      "promotion_digest": (previous.tags or {}).get(TAG_PROMOTION)}}  # fmt: skip
        with scratch_dir() as tmp:
            tree = Path(tmp) / "promotion"
            tree.mkdir()
            (tree / "promotion.json").write_text(json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")
            out = Path(tmp) / "promotion.anchor.json"
            own = stamper or Stamper.from_settings(settings, services)
            try:
                stamped = own._stamp(tree, out=out, rules=Rules([]))
            finally:
                if stamper is None:
                    own.close()
            where = f"{PROOF_FOLDER}/promotions/{model}/{number}"
            client.log_artifact(run_id, str(tree / "promotion.json"), where)
            client.log_artifact(run_id, str(out), where)
        promotion = stamped.proof.manifest_digest
        client.set_model_version_tag(model, number, TAG_PROMOTION, promotion)
        if alias is not None:
            client.set_registered_model_alias(model, alias, number)
    except AnchorError:
        raise
    except Exception as exc:  # noqa: BLE001 - MLflow's and requests' errors alike, typed
        raise translated(exc, client, f"registered model {model}") from None
    block = stamped.proof.anchor.block_number if isinstance(stamped.proof, ProofFile) else None
    return Promoted(model, number, alias, run_id, chosen, digest, verdict.verification.anchored_block, promotion,
                    block, None if previous is None else str(previous.version))  # fmt: skip


def verify_model(
    uri: str, *, tracking_uri: str | None = None, policy: Policy | None = None, verifier: Verifier | None = None,
    settings: Settings | None = None, require: str = "any",
) -> ModelVerification:  # fmt: skip
    """The verdict on `models:/NAME@ALIAS` or `models:/NAME/VERSION`: the version resolved, refused when
    it carries no proof (`NotAnchored`: registered without `promote`), its run verified (`verify_run`),
    the version's digest tag compared with the run's proof, and the version's own files with the
    anchored logged model's, every difference named (`Tampered`)."""
    from anchor.mlflow.changes import file_changes

    found = _URI.match(uri)
    if found is None:
        raise BadInput(f"{uri!r}: expected models:/NAME@ALIAS or models:/NAME/VERSION", detail={"field": "model"})
    name, alias, number = found["name"], found["alias"], found["version"]
    settings = _settings(settings)
    client = client_for(tracking_uri)
    try:
        version = client.get_model_version_by_alias(name, alias) if alias else client.get_model_version(name, number)
    except Exception as exc:  # noqa: BLE001
        raise translated(exc, client, uri) from None
    shown = f"{uri} (version {version.version})" if alias else uri
    tags = dict(version.tags or {})
    if TAG_DIGEST not in tags or TAG_RUN not in tags:
        raise NotAnchored(f"{shown}: registered without `anchor mlflow promote`: the version carries no proof"
                          f" (run {version.run_id or 'none'}, source {version.source}); promote a verified run"
                          " instead", detail={"model": name, "version": str(version.version)})  # fmt: skip
    run = verify_run(tags[TAG_RUN], tracking_uri=tracking_uri, policy=policy, verifier=verifier, settings=settings,
                     require=require)  # fmt: skip
    if run.verification.manifest_digest != tags[TAG_DIGEST]:
        raise Tampered(
            f"{shown}: its tag names proof {tags[TAG_DIGEST]}, the run's proof is {run.verification.manifest_digest}",
            detail={"model": name, "version": str(version.version)},
        )
    anchored = {m["model_id"]: m for m in _anchored_models(run)}
    model_id = tags.get(TAG_MODEL) or str(version.model_id or "")
    if model_id not in anchored:
        raise Tampered(f"{shown}: logged model {model_id or 'none'} is not among run {run.run_id}'s anchored"
                       " models", detail={"model": name, "version": str(version.version)})  # fmt: skip
    files = _version_files(client, name, str(version.version))
    expected = anchored[model_id]["files"]
    changes = file_changes(f"registered version {version.version}: ", expected, files)
    if changes:
        raise Tampered(f"{shown}: its files differ from logged model {model_id} as run {run.run_id} anchored it"
                       f" ({len(changes)} change{'s' if len(changes) != 1 else ''})",
                       detail={"model": name, "version": str(version.version), "changes": changes})  # fmt: skip
    promotion = _verified_promotion(client, run.run_id, name, str(version.version), tags, verifier, settings)
    return ModelVerification(uri, name, str(version.version), run, model_id, len(files), *promotion)


def _verified_promotion(
    client: Any, run_id: str, name: str, version: str, tags: dict[str, str], verifier: Verifier | None,
    settings: Settings,
) -> tuple[str | None, int | None, dict[str, Any] | None]:  # fmt: skip
    """The promotion record the version's tag names, read from its run, verified as a file tree (its
    anchor on chain) and held to this version: (digest, block, previous), or Nones without a record."""
    from anchor.library.verifier import Verifier

    digest = tags.get(TAG_PROMOTION)
    if digest is None:
        return None, None, None
    where = f"{PROOF_FOLDER}/promotions/{name}/{version}"
    with scratch_dir() as tmp:
        tree, proof = Path(tmp) / "tree", Path(tmp) / "proof"
        try:
            names = {Path(info.path).name for info in client.list_artifacts(run_id, where)}
            if not {"promotion.json", "promotion.anchor.json"} <= names:
                raise Tampered(f"models:/{name}/{version}: its promotion record {digest} is not in run {run_id}"
                               f" ({where})", detail={"model": name, "version": version})  # fmt: skip
            tree.mkdir()
            proof.mkdir()
            client.download_artifacts(run_id, f"{where}/promotion.json", str(tree))
            client.download_artifacts(run_id, f"{where}/promotion.anchor.json", str(proof))
        except AnchorError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise translated(exc, client, f"run {run_id}: the promotion of {name} version {version}") from None
        verdict = (verifier or Verifier.from_settings(settings)).verify(tree, proof=proof / "promotion.anchor.json")
        record = json.loads((tree / "promotion.json").read_bytes()[:1_000_000])
    said = {"model": name, "model_version": version, "run_id": run_id, "run_manifest_digest": tags.get(TAG_DIGEST)}
    wrong = [f"{k} {record.get(k)!r} (the version says {v!r})" for k, v in said.items() if record.get(k) != v]
    if verdict.manifest_digest != digest or wrong:
        raise Tampered(f"models:/{name}/{version}: its promotion record is not this version's: "
                       + (", ".join(wrong) or f"it anchors {verdict.manifest_digest}, the tag names {digest}"),
                       detail={"model": name, "version": version})  # fmt: skip
    previous = record.get("previous")
    return digest, verdict.anchored_block, previous if isinstance(previous, dict) else None


def _version_files(client: Any, name: str, version: str) -> list[ListedFile]:
    """The registered version's files as MLflow serves them (its download location), hashed here."""
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    from anchor.manifest.exclude import Rules
    from anchor.manifest.filetree import hash_tree
    from anchor.mlflow.bridge import max_artifact_bytes
    from anchor.mlflow.reading import check_downloaded, files_below

    try:
        location = client.get_model_version_download_uri(name, version)
        store: Any = get_artifact_repository(str(location), tracking_uri=str(client.tracking_uri))
        listed = files_below(store.list_artifacts, f"registered model {name} version {version}", "file", None,
                             max_artifact_bytes())  # fmt: skip
        with scratch_dir() as tmp:
            root = Path(tmp)
            for path, _ in listed:
                store.download_artifacts(path, str(root))
            check_downloaded(root, listed, f"registered model {name} version {version}: its files")
            return hash_tree(root, Rules([]), "refuse").files_json()
    except AnchorError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise translated(exc, client, f"registered model {name} version {version}") from None
