"""Registered models and aliases: a version is promoted only on a proof, and `models:/NAME@alias`
verifies against the anchored run it came from.

Why: where a team promotes a model, MLflow's own docs use a registered model with an alias
(`@champion`), and a service loads `models:/NAME@champion`. Nothing in MLflow ties that version to a
run as it was reported. `promote` verifies the run's proof first (the one `verify_run`) and only then
registers the version of the run's logged model (or moves the alias), tagging the version with the
run's manifest digest, and anchors the promotion itself as a lineage record in the registry, the kind a
research search writes for each kept attempt: commit = the digest of the promotion record
(`promotion.json`: model, version, alias, run, the run's manifest digest, the logged model, the version
that held the alias before, and for a research search's champion its ledger head and trial count),
parent = the previous promotion's digest, diffHash = `PROMOTION_TAG`, metricHash = the run's manifest
digest. So anyone can check from the chain alone that the version behind `@champion` came from an
anchored run, and walk the history of `@champion` back through the parents (`anchor lookup DIGEST`,
the explorer's promotion page).

Who could lie: whoever writes the registry can move the alias to a version registered without a proof,
or edit the registered files, or the promotion record kept in the run. `verify_model` resolves the
alias, refuses a version without the tags `promote` writes (exit 3, named) or whose anchored promotion
is to another alias, verifies the run (every change named, exit 4), compares the version's own files
(the registered copy, read from where MLflow serves it) with the anchored model's, recomputes the
promotion record's digest and reads its lineage record (and, for a research champion, the ledger
head's checkpoint record) from the chain.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from anchor.errors import AnchorError, BadInput, NotAnchored, PolicyMismatch, Tampered
from anchor.mlflow.bridge import RunVerification, _settings, verify_run
from anchor.mlflow.reading import PROOF_FOLDER, client_for, scratch_dir, translated
from anchor.record import Value

if TYPE_CHECKING:
    from anchor.anchoring.stamper import Stamper
    from anchor.chain.registry import LineageRecord, Registry
    from anchor.library.verifier import Policy, Verifier
    from anchor.manifest.listed import ListedFile
    from anchor.settings.session import Settings

__all__ = ["ModelVerification", "Promoted", "SearchChampion", "promote", "promotion_record", "verify_model"]

TAG_RUN, TAG_DIGEST, TAG_MODEL = "anchor.run_id", "anchor.run_manifest_digest", "anchor.model_id"
TAG_TX, TAG_PROMOTION = "anchor.run_tx", "anchor.promotion_digest"
TAG_LEDGER_HEAD, TAG_TRIALS = "anchor.research.ledger_head", "anchor.research.trials"
TAG_COMMIT = "anchor.research.commit"
_URI = re.compile(r"^models:/(?P<name>[^/@]{1,256})(?:@(?P<alias>[A-Za-z0-9_-]{1,256})|/(?P<version>\d{1,12}))$")
HISTORY_BOUND = 256
"""Promotions walked back through their parents: past it, the history is said to go on."""
PROMOTION_FILE = "promotion.json"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SearchChampion(Value):
    """A research search's champion, as its ledger holds it (anchor.research): bound into the promotion
    record, so the registered version names the ledger head and the trial count behind it."""

    commit: str
    researcher: str
    trials: int
    """Attempts in the ledger (every researcher's): the trials the champion was selected from."""
    ledger_head: str
    ledger_length: int
    """Rows of the ledger at that head (attempts and traces): what its checkpoint record on chain holds."""
    contract_digest: str

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.commit,
            "researcher": self.researcher,
            "trials": self.trials,
            "ledger_head": self.ledger_head,
            "ledger_length": self.ledger_length,
            "contract_digest": self.contract_digest,
        }


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Promoted(Value):
    """What `promote` did: the version registered (or found), the alias set, the run it stands on, and
    the promotion's lineage record."""

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
    """The lineage record's block (None: relayed through a service, not mined yet)."""
    previous: str | None
    """The version that held the alias before (None: the alias is new)."""
    promoted_by: str = ""
    """The lineage record's researcher: the address that signed the promotion."""
    promotion_tx: str | None = None
    research: dict[str, object] | None = None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ModelVerification(Value):
    """The verdict on a registered version: its run's (`RunVerification`), its own files, and its
    promotion as the chain holds it."""

    uri: str
    model: str
    version: str
    run: RunVerification
    model_id: str
    files: int
    promotion_digest: str | None
    """The promotion record's digest, its lineage record read from the chain (None: no record)."""
    promotion_block: int | None = None
    previous: dict[str, object] | None = None
    """The version that held the alias before, as the promotion record names it."""
    promoted_by: str | None = None
    promotion_tx: str | None = None
    alias: str | None = None
    """The alias the promotion anchored (None: a version promoted without one)."""
    history: list[dict[str, object]] = field(default_factory=list)
    """The promotions before this one, newest first, each read from the chain through its parent."""
    research: dict[str, object] | None = None
    """A research champion's ledger head and trial count, the head's checkpoint record read from the chain."""

    def to_json(self) -> dict[str, object]:
        return {
            "uri": self.uri,
            "model": self.model,
            "version": self.version,
            "model_id": self.model_id,
            "files": self.files,
            "promotion_digest": self.promotion_digest,
            "promotion_block": self.promotion_block,
            "promotion_tx": self.promotion_tx,
            "promoted_by": self.promoted_by,
            "alias": self.alias,
            "previous": self.previous,
            "history": self.history,
            "research": self.research,
            "run": self.run.to_json(),
        }


def promotion_record(
    model: str,
    version: str,
    alias: str | None,
    run_id: str,
    run_digest: str,
    model_id: str,
    previous: dict[str, Any] | None,
    research: SearchChampion | None,
) -> dict[str, Any]:
    """The promotion record as `promote` writes it (its digest is the lineage record's commit)."""
    return {
        "kind": "anchor.mlflow.promotion",
        "version": 2,
        "model": model,
        "model_version": version,
        "alias": alias,
        "run_id": run_id,
        "run_manifest_digest": run_digest,
        "model_id": model_id,
        "previous": previous,
        "research": None if research is None else research.to_json(),
    }


def record_digest(folder: Path) -> str:
    """The digest of a promotion record: its folder (one file, promotion.json) as a file tree, as
    `anchor lookup FOLDER` computes it."""
    from anchor.manifest.exclude import Rules
    from anchor.manifest.filetree import hash_tree

    return "0x" + hash_tree(folder, Rules([]), "refuse").digest.hex()


def lineage_fields(digest: str, previous: str | None, run_digest: str) -> tuple[bytes, bytes, bytes, bytes, bool]:
    """(commit, parent, diffHash, metricHash, kept) of a promotion's lineage record."""
    from anchor.manifest.onchain import PROMOTION_TAG, parse_hex32

    parent = bytes(32) if previous is None else parse_hex32(previous, "previous promotion")
    return parse_hex32(digest, "promotion"), parent, PROMOTION_TAG, parse_hex32(run_digest, "run digest"), True


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
    model: str,
    run_id: str,
    *,
    alias: str | None = None,
    model_id: str | None = None,
    tracking_uri: str | None = None,
    settings: Settings | None = None,
    verifier: Verifier | None = None,
    stamper: Stamper | None = None,
    services: list[str] | None = None,
    policy: Policy | None = None,
    research: SearchChampion | None = None,
) -> Promoted:
    """Verify run `run_id` (raises the typed error of the first check that fails: nothing is written),
    then register its logged model (`model_id`, or its only one) as a version of `model`, tag the version
    with the run's manifest digest, anchor the promotion as a lineage record (its parent the promotion
    that held `alias` before) and set `alias` on it. `research`: the search whose champion the run is
    (`anchor research run --mlflow`), bound into the record and tagged on the version."""
    from anchor.anchoring.stamper import Stamper

    settings = _settings(settings)
    if not re.fullmatch(r"[^/@]{1,256}", model):
        raise BadInput(f"model name {model!r}: 1-256 characters, no '/' or '@'", detail={"field": "model"})
    if alias is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", alias):
        raise BadInput(f"alias {alias!r}: letters, digits, '_' and '-'", detail={"field": "alias"})
    verdict = verify_run(run_id, tracking_uri=tracking_uri, verifier=verifier, settings=settings, policy=policy)
    models = [m["model_id"] for m in _anchored_models(verdict)]
    if model_id is None and len(models) != 1:
        raise BadInput(
            f"run {run_id} has {len(models)} logged models anchored ({', '.join(models) or 'none'}):"
            " name one (--model-id)",
            detail={"field": "model_id"},
        )
    chosen = model_id or models[0]
    if chosen not in models:
        raise BadInput(
            f"logged model {chosen}: not among run {run_id}'s anchored models ({', '.join(models)})",
            detail={"field": "model_id"},
        )
    client = client_for(tracking_uri)
    digest = verdict.verification.manifest_digest
    own = stamper or Stamper.from_settings(settings, services)
    own._check_for_search()  # through services, no researcher key to sign the promotion: refused before any write
    try:
        previous = None
        if alias is not None:
            try:
                previous = client.get_model_version_by_alias(model, alias)
            except Exception as exc:  # noqa: BLE001 - no such model or alias yet
                if not _mlflow_error(exc, "RESOURCE_DOES_NOT_EXIST") and not _mlflow_error(
                    exc, "INVALID_PARAMETER_VALUE"
                ):
                    raise
        try:
            client.create_registered_model(model)
        except Exception as exc:  # noqa: BLE001
            if not _mlflow_error(exc, "RESOURCE_ALREADY_EXISTS"):
                raise
        tags = {TAG_RUN: run_id, TAG_DIGEST: digest, TAG_MODEL: chosen, TAG_TX: verdict.verification.tx_hash}
        if research is not None:
            tags |= {
                TAG_LEDGER_HEAD: research.ledger_head,
                TAG_TRIALS: str(research.trials),
                TAG_COMMIT: research.commit,
            }
        version = client.create_model_version(
            model, source=f"models:/{chosen}", run_id=run_id, tags=tags, model_id=chosen
        )
        number = str(version.version)
        before = None
        if previous is not None:
            before = {
                "model_version": str(previous.version),
                "promotion_digest": (previous.tags or {}).get(TAG_PROMOTION),
            }
        record = promotion_record(model, number, alias, run_id, digest, chosen, before, research)
        with scratch_dir() as tmp:
            tree = Path(tmp) / "promotion"
            tree.mkdir()
            (tree / PROMOTION_FILE).write_text(json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")
            promotion = record_digest(tree)
            client.log_artifact(run_id, str(tree / PROMOTION_FILE), f"{PROOF_FOLDER}/promotions/{model}/{number}")
            kept = settings.layout.mlflow_promotion(promotion)
            if settings.data_dir.is_dir():  # the explorer of this data dir shows the record (its digest checked)
                from anchor.files import atomic_write

                kept.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(kept, (tree / PROMOTION_FILE).read_bytes())
        parent = None if before is None else before["promotion_digest"]
        written = own._record_lineage(lineage_fields(promotion, parent, digest))
        client.set_model_version_tag(model, number, TAG_PROMOTION, promotion)
        if alias is not None:
            client.set_registered_model_alias(model, alias, number)
    except AnchorError:
        raise
    except Exception as exc:  # noqa: BLE001 - MLflow's and requests' errors alike, typed
        raise translated(exc, client, f"registered model {model}") from None
    finally:
        if stamper is None:
            own.close()
    return Promoted(
        model,
        number,
        alias,
        run_id,
        chosen,
        digest,
        verdict.verification.anchored_block,
        promotion,
        written.block,
        None if previous is None else str(previous.version),
        written.researcher,
        written.tx_hash,
        record["research"],
    )


def verify_model(
    uri: str,
    *,
    tracking_uri: str | None = None,
    policy: Policy | None = None,
    verifier: Verifier | None = None,
    settings: Settings | None = None,
    require: str = "any",
) -> ModelVerification:
    """The verdict on `models:/NAME@ALIAS` or `models:/NAME/VERSION`: the version resolved, refused when
    it carries no proof (`NotAnchored`: registered without `promote`), its run verified (`verify_run`),
    the version's digest tag compared with the run's proof, and the version's own files with the
    anchored logged model's, every difference named (`Tampered`)."""
    from anchor.mlflow.changes import file_changes

    found = _URI.match(uri)
    if found is None:
        raise BadInput(f"{uri!r}: expected models:/NAME@ALIAS or models:/NAME/VERSION", detail={"field": "model"})
    name, alias, number = found["name"], found["alias"], found["version"]
    settings = _settings(settings or (verifier.settings if verifier is not None else None))  # the chain it reads
    client = client_for(tracking_uri)
    try:
        version = client.get_model_version_by_alias(name, alias) if alias else client.get_model_version(name, number)
    except Exception as exc:  # noqa: BLE001
        raise translated(exc, client, uri) from None
    shown = f"{uri} (version {version.version})" if alias else uri
    tags = dict(version.tags or {})
    if TAG_DIGEST not in tags or TAG_RUN not in tags:
        raise NotAnchored(
            f"{shown}: registered without `anchor mlflow promote`: the version carries no proof"
            f" (run {version.run_id or 'none'}, source {version.source}); promote a verified run"
            " instead",
            detail={"model": name, "version": str(version.version)},
        )
    run = verify_run(
        tags[TAG_RUN], tracking_uri=tracking_uri, policy=policy, verifier=verifier, settings=settings, require=require
    )
    if run.verification.manifest_digest != tags[TAG_DIGEST]:
        raise Tampered(
            f"{shown}: its tag names proof {tags[TAG_DIGEST]}, the run's proof is {run.verification.manifest_digest}",
            detail={"model": name, "version": str(version.version)},
        )
    anchored = {m["model_id"]: m for m in _anchored_models(run)}
    model_id = tags.get(TAG_MODEL) or str(version.model_id or "")
    if model_id not in anchored:
        raise Tampered(
            f"{shown}: logged model {model_id or 'none'} is not among run {run.run_id}'s anchored models",
            detail={"model": name, "version": str(version.version)},
        )
    files = _version_files(client, name, str(version.version))
    expected = anchored[model_id]["files"]
    changes = file_changes(f"registered version {version.version}: ", expected, files)
    if changes:
        raise Tampered(
            f"{shown}: its files differ from logged model {model_id} as run {run.run_id} anchored it"
            f" ({len(changes)} change{'s' if len(changes) != 1 else ''})",
            detail={"model": name, "version": str(version.version), "changes": changes},
        )
    promotion = _verified_promotion(client, run.run_id, name, str(version.version), tags, settings, policy)
    if alias is not None and promotion.get("alias") != alias:
        said = f"to @{promotion['alias']}" if promotion.get("alias") else "without an alias"
        raise NotAnchored(
            f"{shown}: its anchored promotion ({promotion['promotion_digest']}) is {said}, not"
            f" @{alias}: the alias was moved to it without `anchor mlflow promote`",
            detail={"model": name, "version": str(version.version), "alias": alias},
        )
    return ModelVerification(uri, name, str(version.version), run, model_id, len(files), **promotion)


def _verified_promotion(
    client: Any,
    run_id: str,
    name: str,
    version: str,
    tags: dict[str, str],
    settings: Settings,
    policy: Policy | None,
) -> dict[str, Any]:
    """The promotion record the version's tag names, read from its run, its digest recomputed here and
    its fields held to this version; its lineage record read from the chain (by the expected submitter,
    when the policy names one), the promotions before it walked through their parents, and a research
    champion's ledger head found on chain. Raises `NotAnchored` (no record, or not on chain yet),
    `Tampered` (a record that is not this version's) or `PolicyMismatch`."""
    from anchor.chain.open import open_chain, open_registry

    digest = tags.get(TAG_PROMOTION)
    where = f"{PROOF_FOLDER}/promotions/{name}/{version}"
    if digest is None:
        raise NotAnchored(
            f"models:/{name}/{version}: registered by `anchor mlflow promote`, but its promotion was"
            " never anchored (no tag anchor.promotion_digest): promote the run again",
            detail={"model": name, "version": version},
        )
    with scratch_dir() as tmp:
        tree = Path(tmp) / "promotion"
        tree.mkdir()
        try:
            names = {Path(info.path).name for info in client.list_artifacts(run_id, where)}
            if PROMOTION_FILE not in names:
                raise Tampered(
                    f"models:/{name}/{version}: its promotion record {digest} is not in run {run_id} ({where})",
                    detail={"model": name, "version": version},
                )
            client.download_artifacts(run_id, f"{where}/{PROMOTION_FILE}", str(tree))
        except AnchorError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise translated(exc, client, f"run {run_id}: the promotion of {name} version {version}") from None
        found = record_digest(tree)
        record = json.loads((tree / PROMOTION_FILE).read_bytes()[:1_000_000])
    said = {"model": name, "model_version": version, "run_id": run_id, "run_manifest_digest": tags.get(TAG_DIGEST)}
    wrong = [f"{k} {record.get(k)!r} (the version says {v!r})" for k, v in said.items() if record.get(k) != v]
    if found != digest.lower() or wrong or not isinstance(record, dict):
        raise Tampered(
            f"models:/{name}/{version}: its promotion record is not this version's: "
            + (", ".join(wrong) or f"it hashes to {found}, the tag names {digest}"),
            detail={"model": name, "version": version},
        )
    previous = record.get("previous") if isinstance(record.get("previous"), dict) else None
    registry = open_registry(settings, open_chain(settings))
    expected = policy.expect_submitter if policy is not None else None
    fields = lineage_fields(
        digest, None if previous is None else previous.get("promotion_digest"), record["run_manifest_digest"]
    )
    mine = _promotion_on_chain(registry, fields, f"models:/{name}/{version}", expected)
    history = promotion_history(registry, fields[1])
    research = record.get("research")
    if isinstance(research, dict):
        # the version's tags are what the MLflow UI shows: each must say what the anchored record binds
        bound = {
            TAG_LEDGER_HEAD: research.get("ledger_head"),
            TAG_TRIALS: str(research.get("trials")),
            TAG_COMMIT: research.get("commit"),
        }
        off = [f"{k} {tags.get(k)!r} (anchored: {v!r})" for k, v in bound.items() if tags.get(k) != v]
        if off:
            raise Tampered(
                f"models:/{name}/{version}: its tags are not its anchored promotion's: {', '.join(off)}",
                detail={"model": name, "version": version, "changes": off},
            )
        research = {**research, **_ledger_head_on_chain(registry, research, f"models:/{name}/{version}")}
    return {
        "promotion_digest": digest,
        "promotion_block": mine.block_number,
        "previous": previous,
        "promoted_by": mine.researcher,
        "promotion_tx": mine.tx_hash,
        "alias": record.get("alias"),
        "history": history,
        "research": research if isinstance(research, dict) else None,
    }


def _promotion_on_chain(
    registry: Registry, fields: tuple[bytes, bytes, bytes, bytes, bool], shown: str, expected: str | None
) -> LineageRecord:
    """The earliest lineage record of the promotion whose fields are these (by `expected` when given).
    A record of the same digest with other fields is someone else's claim: it never counts."""
    records = [r for r in registry.lineages(fields[0]) if _fields_of(r) == fields]
    if expected is not None:
        theirs = [r.researcher for r in records]
        records = [r for r in records if r.researcher.lower() == expected.lower()]
        if not records and theirs:
            raise PolicyMismatch(
                f"{shown}: its promotion was anchored by {', '.join(theirs)}, not by {expected}",
                detail={"promoted_by": theirs, "expected": expected},
            )
    if not records:
        raise NotAnchored(
            f"{shown}: its promotion 0x{fields[0].hex()} is not on chain (relayed through a service"
            " and not mined yet, or never sent): `anchor lookup` it later",
            detail={"promotion_digest": "0x" + fields[0].hex()},
        )
    if records[0].retracted_block:
        from anchor.errors import Retracted

        raise Retracted(
            f"{shown}: its promotion was retracted in block {records[0].retracted_block} by {records[0].researcher}",
            detail={"promotion_digest": "0x" + fields[0].hex()},
        )
    return min(records, key=lambda r: r.block_number)


def _fields_of(record: LineageRecord) -> tuple[bytes, bytes, bytes, bytes, bool]:
    return (
        bytes.fromhex(record.commit[2:]),
        bytes.fromhex(record.parent[2:]),
        bytes.fromhex(record.diff_hash[2:]),
        bytes.fromhex(record.metric_hash[2:]),
        record.kept,
    )


def promotion_history(registry: Registry, parent: bytes) -> list[dict[str, Any]]:
    """The promotions before one, newest first, each the lineage record of its parent's digest (a
    promotion record, by its tag), walked until a promotion with no parent, or one not on chain."""
    from anchor.manifest.onchain import PROMOTION_TAG

    history: list[dict[str, Any]] = []
    while any(parent) and len(history) < HISTORY_BOUND:
        found = [r for r in registry.lineages(parent) if r.diff_hash == "0x" + PROMOTION_TAG.hex()]
        if not found:
            history.append({"promotion_digest": "0x" + parent.hex(), "on_chain": False})
            break
        record = min(found, key=lambda r: r.block_number)
        history.append(
            {
                "promotion_digest": record.commit,
                "on_chain": True,
                "block": record.block_number,
                "promoted_by": record.researcher,
                "run_manifest_digest": record.metric_hash,
                "tx": record.tx_hash,
            }
        )
        parent = bytes.fromhex(record.parent[2:])
    return history


def _ledger_head_on_chain(registry: Registry, research: dict[str, Any], shown: str) -> dict[str, Any]:
    """A research champion's ledger head, as its checkpoint lineage record on chain holds it (commit = the
    head, parent = the contract digest, metricHash ending in the ledger's length): the trial count behind
    the champion read from the chain, not from the tags."""
    from anchor.manifest.onchain import LEDGER_TAG, parse_hex32

    head = parse_hex32(str(research.get("ledger_head")), "ledger_head")
    contract = "0x" + str(research.get("contract_digest", "")).lower().removeprefix("0x")
    found = [
        r
        for r in registry.lineages(head)
        if r.diff_hash == "0x" + LEDGER_TAG.hex()
        and r.parent == contract
        and int(r.metric_hash[-16:], 16) == int(research.get("ledger_length", -1))
    ]
    if not found:
        raise NotAnchored(
            f"{shown}: the ledger head {head.hex()[:16]}… its research champion names (length"
            f" {research.get('ledger_length')}) has no checkpoint record on chain",
            detail={"ledger_head": head.hex()},
        )
    record = min(found, key=lambda r: r.block_number)
    return {
        "ledger_on_chain": {
            "block": record.block_number,
            "researcher": record.researcher,
            "tx": record.tx_hash,
            "length": int(record.metric_hash[-16:], 16),
        }
    }


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
        listed = files_below(
            store.list_artifacts, f"registered model {name} version {version}", "file", None, max_artifact_bytes()
        )
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


def read_promotion(registry: Registry, digest: bytes, kept: Path | None = None) -> dict[str, Any]:
    """A promotion as the chain holds it, for a reader with no MLflow at hand (the explorer's promotion
    page): its lineage record, the promotions before it (through the parents) and after it (records
    whose parent it is), and, where `kept` holds its record (`promote` keeps one in its data dir), what
    it promoted: shown only if the record hashes to `digest` and names the run the chain names.
    Raises `NotAnchored` when no promotion record of `digest` is on chain."""
    from anchor.manifest.onchain import PROMOTION_TAG

    tag = "0x" + PROMOTION_TAG.hex()
    found = [r for r in registry.lineages(digest) if r.diff_hash == tag]
    if not found:
        raise NotAnchored(
            f"no model promotion 0x{digest.hex()} on chain", detail={"promotion_digest": "0x" + digest.hex()}
        )
    body, problem = None, None
    if kept is not None and kept.is_file():
        with scratch_dir() as tmp:
            tree = Path(tmp) / "promotion"
            tree.mkdir()
            (tree / PROMOTION_FILE).write_bytes(kept.read_bytes()[:1_000_000])
            try:
                body = json.loads((tree / PROMOTION_FILE).read_bytes())
            except ValueError:
                body = None
            if record_digest(tree) != "0x" + digest.hex() or not isinstance(body, dict):
                body, problem = None, "the record kept here does not hash to this digest: not shown"
    if body is not None:  # the record that counts is the one `verify_model` takes: its fields the body's
        previous = body.get("previous") if isinstance(body.get("previous"), dict) else None
        fields = lineage_fields(
            "0x" + digest.hex(),
            None if previous is None else previous.get("promotion_digest"),
            str(body.get("run_manifest_digest")),
        )
        matching = [r for r in found if _fields_of(r) == fields]
        if matching:
            found = matching
        else:
            body, problem = None, "the record kept here names another run or parent than the chain does: not shown"
    record = min(found, key=lambda r: r.block_number)
    later = [r for r in registry.lineages_by_parent(digest) if r.diff_hash == tag]
    research = body.get("research") if body is not None else None
    if isinstance(research, dict):
        try:
            research = {**research, **_ledger_head_on_chain(registry, research, "the promotion")}
        except AnchorError as exc:
            research = {**research, "ledger_problem": exc.message}
    return {
        "digest": record.commit,
        "record": record,
        "others": [r for r in found if r is not record],
        "history": promotion_history(registry, bytes.fromhex(record.parent[2:])),
        "later": [{"promotion_digest": r.commit, "block": r.block_number, "promoted_by": r.researcher} for r in later],
        "promotion": body,
        "problem": problem,
        "research": research if isinstance(research, dict) else None,
    }
