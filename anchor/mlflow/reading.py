"""Reading a run from an MLflow tracking server into an `MlflowRunManifest` (anchor.manifest.mlflow_run).

Everything bound is read through MLflow's own client (`MlflowClient`): the run's info, params and tags,
each metric's full history (`get_metric_history`, not the latest values `run.data.metrics` shows), and
the artifacts, downloaded into a scratch directory file by file (MLflow streams each to disk; nothing
is held whole in memory) and hashed there as a file tree. The `anchor/` folder, where the bridge keeps
the proof, is not downloaded and not bound.

Who could lie here: the tracking server and whoever can write its store. Nothing they say is adopted:
the digests are computed here from the bytes and values read now, and a verifier compares them with
what was anchored (anchor.mlflow.changes names each difference).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import AnchorError, BadInput, ToolchainMissing, TrackingUnreachable
from anchor.record import Value
from anchor.settings.session import endpoint_of

if TYPE_CHECKING:
    from anchor.manifest.filetree import FileTreeManifest
    from anchor.manifest.hashing import Progress
    from anchor.manifest.mlflow_run import MlflowRunManifest

PROOF_FOLDER = "anchor"
"""The run's artifact folder the bridge writes to (the proof, superseded proofs); never bound."""
PROOF_ARTIFACT = f"{PROOF_FOLDER}/proof.anchor.json"
_COMMIT = re.compile(r"^([0-9a-f]{40}|[0-9a-f]{64})$")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,255}$")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RunRead(Value):
    """A run as read now: its manifest, its artifacts' tree (the listing per-file proofs come from), where
    the artifacts were downloaded (the caller's scratch directory), and what is shown but not bound."""

    manifest: MlflowRunManifest
    tree: FileTreeManifest
    artifacts: Path
    run_name: str | None
    tracking: str
    """The tracking server as shown: scheme://host:port (a credential in the URI is never shown)."""
    tags: dict[str, str]
    """Every tag of the run as read, MLflow's and Anchor's own included (the bridge's state lives there)."""
    lifecycle_stage: str = "active"
    """`active` or `deleted` (hidden from its experiment, still in the store): not bound, part of the verdict."""

    def annotations(self) -> dict[str, Any]:
        """Outside the digest: where the run was read from and its display name (both can change)."""
        shown = {"tracking_uri": self.tracking, **({"run_name": self.run_name} if self.run_name else {})}
        return {"mlflow": shown}


def client_for(tracking_uri: str | None) -> Any:
    """An `MlflowClient` for `tracking_uri` (None: MLflow's own configuration, MLFLOW_TRACKING_URI or
    `mlflow.set_tracking_uri`), after one quick request to an http(s) server, so that a server that is
    down is one line now, not MLflow's retries for minutes. `ToolchainMissing` without MLflow."""
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise ToolchainMissing(
            "MLflow is not installed: pip install 'anchor-provenance[mlflow]' (the MLflow client, mlflow-skinny)",
            detail={"tool": "mlflow"},
        ) from None
    from mlflow.exceptions import MlflowException

    if tracking_uri is not None and re.fullmatch(r"[A-Za-z0-9.-]+:\d+/?", tracking_uri):  # host:port, no scheme
        raise BadInput(
            f"tracking URI {tracking_uri!r}: a server is http://HOST:PORT (hint: --tracking-uri"
            f" http://{tracking_uri.rstrip('/')})",
            detail={"field": "tracking_uri"},
        )
    for scheme in ("sqlite:///", "file://"):  # a local store: MLflow's client would create a missing one
        if tracking_uri is not None and tracking_uri.startswith(scheme):
            where = Path(tracking_uri.removeprefix(scheme).split("?")[0])
            if not where.exists():
                raise BadInput(
                    f"tracking URI {tracking_uri}: no MLflow store at {where}; nothing was created",
                    detail={"field": "tracking_uri"},
                )
    try:
        client = MlflowClient(tracking_uri)
        uri = str(client.tracking_uri)
    except MlflowException as exc:
        shown = endpoint_of(str(tracking_uri))
        raise BadInput(
            f"tracking URI {shown}: MLflow cannot use it ({str(exc).splitlines()[0][:160]}); a server is"
            " http://HOST:PORT",
            detail={"field": "tracking_uri"},
        ) from None
    if uri.startswith(("http://", "https://")):
        _check_reachable(uri)
    return client


def _check_reachable(uri: str) -> None:
    import urllib.error
    import urllib.request
    from urllib.parse import urlsplit, urlunsplit

    shown = endpoint_of(uri)
    parts = urlsplit(uri)
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    health = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/") + "/health", "", ""))
    try:  # MLflow's server answers /health with "OK"; one try, a short timeout, no credential sent
        with urllib.request.urlopen(health, timeout=10) as answer:  # noqa: S310 - http(s) only
            answer.read(64)
    except urllib.error.HTTPError as exc:
        if exc.code >= 500:
            raise TrackingUnreachable(
                f"MLflow tracking server {shown}: answered {exc.code}; nothing was read or written",
                detail={"server": shown, "status": exc.code},
            ) from None
        # a 401/403/404 on /health: a proxy in front of the server; the client's own requests will say
    except (urllib.error.URLError, OSError) as exc:
        from anchor.chain.rpc import failure_words

        cause = getattr(exc, "reason", exc)  # URLError wraps the socket's error, or says it in words
        reason = failure_words(cause, 10, uri) if isinstance(cause, BaseException) else cause
        if reason == type(cause).__name__ and str(cause):
            reason = getattr(cause, "strerror", None) or str(cause)  # a resolver's or an OS's own words
        raise TrackingUnreachable(
            f"MLflow tracking server {shown}: unreachable ({reason}); start it, or check --tracking-uri /"
            " MLFLOW_TRACKING_URI",
            detail={"server": shown},
        ) from None


def translated(exc: Exception, client: Any, what: str) -> AnchorError:
    """An MLflow client failure as the typed error it is: a missing run is bad input (exit 2), anything
    else from the server is `TrackingUnreachable` (exit 5). MLflow's message is not repeated whole: it
    carries the request URL."""
    from mlflow.exceptions import MlflowException

    shown = endpoint_of(str(client.tracking_uri))
    if isinstance(exc, MlflowException) and exc.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
        return BadInput(
            f"{what}: not found at the MLflow tracking server {shown}", detail={"field": "run_id", "server": shown}
        )
    text = str(exc)
    status = re.search(r"\b(5\d\d)\b", text)
    why = f"answered {status.group(1)}" if status else "failed" if "Connection" not in text else "unreachable"
    return TrackingUnreachable(
        f"MLflow tracking server {shown}: {what}: {why}; nothing was written to the run", detail={"server": shown}
    )


def get_run(client: Any, run_id: str) -> Any:
    """The run, or `BadInput` naming a run id that is malformed or unknown."""
    if not _RUN_ID.match(run_id):
        raise BadInput(f"run id {run_id!r}: expected MLflow's run id (32 hex digits)", detail={"field": "run_id"})
    try:
        return client.get_run(run_id)
    except Exception as exc:  # noqa: BLE001 - MLflow raises MlflowException and requests' errors alike
        raise translated(exc, client, f"run {run_id}") from None


def files_below(lister: Any, owner: str, kind: str, folder: str | None, bound: int) -> list[tuple[str, int]]:
    """Every file `lister(folder)` finds below `folder` (path, size), recursively, the run's proof folder
    left out; `BadInput` naming the first one larger than `bound` (nothing downloaded yet). `owner`,
    `kind`: how a file is named (`artifact model/w.bin of run R`, `file model.pkl of logged model m-…`)."""
    found: list[tuple[str, int]] = []
    for info in lister(folder):
        if folder is None and kind == "artifact" and info.path == PROOF_FOLDER:
            continue
        if info.is_dir:
            found += files_below(lister, owner, kind, info.path, bound)
            continue
        size = int(info.file_size or 0)
        if size > bound:
            raise BadInput(
                f"{kind} {info.path} of {owner}: {size:,} bytes, past the bound of {bound:,}"
                " (ANCHOR_MLFLOW_MAX_ARTIFACT_BYTES); nothing was downloaded or written",
                detail={"field": "artifact", "artifact": info.path, "size": size, "bound": bound},
            )
        found.append((info.path, size))
    return found


def read_run(
    client: Any,
    run_id: str,
    scratch: Path,
    *,
    max_artifact_bytes: int,
    progress: Progress | None = None,
    run: Any = None,
) -> RunRead:
    """Read run `run_id` whole (record and artifacts) and build its manifest; artifacts go to `scratch`
    (an empty directory the caller owns and removes)."""
    from anchor.manifest.exclude import Rules
    from anchor.manifest.filetree import hash_tree
    from anchor.manifest.mlflow_run import MlflowRunManifest

    run = run or get_run(client, run_id)
    info, data = run.info, run.data
    try:
        histories = [
            (key, m.step, m.timestamp, m.value)
            for key in sorted(data.metrics)
            for m in client.get_metric_history(run_id, key)
        ]
        files = files_below(
            lambda folder: client.list_artifacts(run_id, folder), f"run {run_id}", "artifact", None, max_artifact_bytes
        )
        root = scratch / "artifacts"
        root.mkdir()
        tops = sorted({path.split("/", 1)[0] for path, _ in files})
        for top in tops:  # each top-level entry once: MLflow downloads a folder recursively
            client.download_artifacts(run_id, top, str(root))
    except AnchorError:
        raise
    except Exception as exc:  # noqa: BLE001 - MlflowException, requests' and OSError alike: typed below
        raise translated(exc, client, f"run {run_id}") from None
    check_downloaded(root, files, f"run {run_id}: its artifacts")
    tree = hash_tree(root, Rules([]), "refuse", progress)
    models = _logged_models(client, run, scratch / "models", max_artifact_bytes)
    commit = data.tags.get("mlflow.source.git.commit")
    manifest = MlflowRunManifest.of(
        run_id=info.run_id,
        experiment_id=str(info.experiment_id),
        status=info.status,
        start_time=int(info.start_time or 0),
        end_time=None if info.status in ("RUNNING", "SCHEDULED") or info.end_time is None else int(info.end_time),
        params=dict(data.params),
        metrics=histories,
        tags=dict(data.tags),
        source_commit=commit if commit and _COMMIT.match(commit) else None,
        artifacts=tree.summary(),
        logged_models=models,
    )
    return RunRead(
        manifest,
        tree,
        root,
        info.run_name or None,
        endpoint_of(str(client.tracking_uri)),
        dict(data.tags),
        str(info.lifecycle_stage or "active"),
    )


def check_downloaded(root: Path, files: list[tuple[str, int]], what: str) -> None:
    """`TrackingUnreachable` unless `root` holds exactly the files listed: the store changed between
    listing and download (a file hashed that was never listed would be bound unseen)."""
    downloaded = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    if downloaded != sorted(path for path, _ in files):  # the store changed between listing and download
        raise TrackingUnreachable(f"{what} changed while they were read; read it again", detail={"what": what})


def _logged_models(client: Any, run: Any, scratch: Path, bound: int) -> list[dict[str, Any]]:
    """MLflow 3's logged models of the run, each with its files hashed: those MLflow says the run
    produced (`source_run_id`) and those the run logged as its outputs. MLflow keeps them outside the
    run's artifact root (`models:/m-…`), so a run read for its artifacts alone holds no model."""
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    from anchor.manifest.exclude import Rules
    from anchor.manifest.filetree import hash_tree

    run_id, experiment_id = run.info.run_id, str(run.info.experiment_id)
    try:
        found = {m.model_id: m for m in _search_models(client, experiment_id, run_id)}
        outputs = getattr(getattr(run, "outputs", None), "model_outputs", None) or []
        for output in outputs:
            if output.model_id not in found:
                found[output.model_id] = client.get_logged_model(output.model_id)
        models = []
        for model_id in sorted(found, key=lambda m: m.encode("utf-8")):
            model = found[model_id]
            files = files_below(
                lambda folder, m=model_id: client.list_logged_model_artifacts(m, folder),
                f"logged model {model_id}",
                "file",
                None,
                bound,
            )
            root = scratch / model_id
            root.mkdir(parents=True)
            # file by file from the model's own location: a `models:/` URI would be resolved through
            # MLflow's default tracking URI, not this client's, and adds a file of MLflow's own
            store: Any = get_artifact_repository(str(model.artifact_location), tracking_uri=str(client.tracking_uri))
            for path, _ in files:
                store.download_artifacts(path, str(root))
            check_downloaded(root, files, f"logged model {model_id}: its files")
            listing = hash_tree(root, Rules([]), "refuse").files_json()
            models.append(
                {
                    "model_id": model_id,
                    "name": model.name,
                    "source_run_id": model.source_run_id,
                    "files": [{k: entry[k] for k in ("path", "size", "blake3")} for entry in listing],
                }
            )
    except AnchorError:
        raise
    except Exception as exc:  # noqa: BLE001 - MlflowException, requests' and OSError alike: typed below
        raise translated(exc, client, f"run {run_id}: its logged models") from None
    return models


def _search_models(client: Any, experiment_id: str, run_id: str) -> list[Any]:
    models: list[Any] = []
    token = None
    while True:
        page = client.search_logged_models(
            [experiment_id], filter_string=f"source_run_id = '{run_id}'", max_results=100, page_token=token
        )
        models += list(page)
        token = page.token
        if not token:
            return models


def runs_of(client: Any, experiment: str) -> tuple[str, list[tuple[str, str]]]:
    """The experiment named `experiment` (its id) and every run it holds, deleted ones too, oldest first:
    (run id, lifecycle stage) each; or `BadInput`. A deleted run is still a trial."""
    from mlflow.entities import ViewType

    try:
        found = client.get_experiment_by_name(experiment)
        if found is None:
            raise BadInput(
                f"experiment {experiment!r}: not found at the MLflow tracking server"
                f" {endpoint_of(str(client.tracking_uri))}{_near_experiment(client, experiment)}",
                detail={"field": "experiment"},
            )
        runs: list[tuple[str, str]] = []
        token = None
        while True:
            page = client.search_runs(
                [found.experiment_id],
                run_view_type=ViewType.ALL,
                max_results=1000,
                page_token=token,
                order_by=["attributes.start_time ASC"],
            )
            runs += [(r.info.run_id, str(r.info.lifecycle_stage)) for r in page]
            token = page.token
            if not token:
                return str(found.experiment_id), runs
    except AnchorError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise translated(exc, client, f"experiment {experiment!r}") from None


def _near_experiment(client: Any, experiment: str) -> str:
    """` (did you mean NAME?)` for the server's closest experiment name, or nothing."""
    from anchor.errors import did_you_mean

    return did_you_mean(experiment, [e.name for e in client.search_experiments(max_results=1000)])


def scratch_dir() -> Any:
    """A private scratch directory for one run's artifacts (removed with everything in it on exit)."""
    import tempfile

    return tempfile.TemporaryDirectory(prefix="anchor-mlflow-")
