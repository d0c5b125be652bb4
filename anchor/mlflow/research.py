"""A research search in MLflow: every attempt of its ledger as a run, and its champion as a registered
version promoted on its proof, so a reader of the MLflow UI reaches the ledger and the chain.

Why: a team that tracks its models in MLflow sees a search's champion there, and nothing of how many
trials it was chosen from. `log_search` (`anchor research run --mlflow NAME`) logs one run per attempt
of the ledger (trial count = runs), each tagged with the ledger entry it stands for (`research.*`
tags: its commit, parent, researcher, ledger seq and attempt digest, which the research batches
anchored), gives the champion's run a logged model (the editable files at the champion commit, as the
contract names them) and the champion record, stamps that run, and promotes it to `NAME@champion`
with the ledger head and the trial count bound into the promotion record (anchor.mlflow.registry):
`anchor mlflow verify models:/NAME@champion` then reads the ledger head's checkpoint record from the
chain and reports the trial count behind the version.

Who could lie: the MLflow store can drop attempt runs or edit them; the attempt runs are views of the
ledger, whose every attempt is anchored already (`anchor research verify`), and the trial count the
promotion states is checked against the ledger head anchored on chain, not against the runs MLflow
lists. Only the champion's run is stamped (one transaction with the key here): the others are checked
through their attempt digests.

Idempotent: an attempt already logged (its attempt digest tagged on a run of the experiment) is not
logged again, so a resumed search logs only what is new, and a champion already promoted from the same
ledger head is not promoted again.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import AnchorError, BadInput
from anchor.mlflow.bridge import RunStamped, _settings, stamp_run
from anchor.mlflow.reading import client_for, scratch_dir, translated
from anchor.mlflow.registry import Promoted, SearchChampion, promote
from anchor.record import Value

if TYPE_CHECKING:
    from anchor.anchoring.stamper import Stamper
    from anchor.research.ledger import LedgerRow
    from anchor.settings.session import Settings

__all__ = ["SearchLogged", "log_search"]

TAG_DIGEST = "research.attempt_digest"
CHAMPION_MODEL_NAME = "champion"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SearchLogged(Value):
    """What `log_search` did: the experiment, the runs logged now and before, the champion's run, its
    stamp and its promotion."""

    experiment: str
    experiment_id: str
    logged: int
    """Attempt runs logged now."""
    already: int
    """Attempt runs logged before (a resumed search)."""
    trials: int
    champion_run: str
    stamped: RunStamped
    promoted: Promoted | None
    """None when this ledger head's champion was promoted before."""

    def to_json(self) -> dict[str, object]:
        promoted = self.promoted
        return {
            "experiment": self.experiment,
            "experiment_id": self.experiment_id,
            "logged": self.logged,
            "already": self.already,
            "trials": self.trials,
            "champion_run": self.champion_run,
            "champion_manifest_digest": self.stamped.digest,
            "promoted": None
            if promoted is None
            else {
                "model": promoted.model,
                "version": promoted.version,
                "alias": promoted.alias,
                "promotion_digest": promoted.promotion_digest,
                "promotion_block": promoted.promotion_block,
            },
        }


def log_search(
    workdir: Path,
    repo: Path,
    name: str,
    *,
    tracking_uri: str | None = None,
    alias: str = "champion",
    settings: Settings | None = None,
    stamper: Stamper | None = None,
    services: list[str] | None = None,
) -> SearchLogged:
    """Log the search in `workdir` (its ledger verified first) to MLflow experiment `name`, and promote
    its champion (the best researcher's last kept attempt) as `name@alias`. `repo`: the git repository
    the search ran in (the champion's files are read at its commit)."""
    from anchor.research.ledger import is_attempt, open_ledger

    settings = _settings(settings)
    ledger = open_ledger(workdir, settings.journal_url)
    head = ledger.verify()
    rows = ledger.rows()
    attempts = [row for row in rows if is_attempt(row)]
    if not attempts:
        raise BadInput(f"{workdir}: the search's ledger holds no attempt to log", detail={"field": "workdir"})
    champion = _champion(attempts)
    client = client_for(tracking_uri)
    try:
        experiment_id = _experiment(client, name)
        logged = _logged(client, experiment_id)
        new = 0
        trial_of: dict[str, int] = {}
        for trial, row in enumerate(attempts, 1):
            if row["attempt_digest"] not in logged:
                logged[row["attempt_digest"]] = _log_attempt(client, experiment_id, row, trial)
                new += 1
            trial_of[row["attempt_digest"]] = trial
        run_id = logged[champion["attempt_digest"]]
        done = _champion_run(client, experiment_id, run_id, champion, repo, workdir)
    except AnchorError:
        raise
    except Exception as exc:  # noqa: BLE001 - MLflow's and requests' errors alike, typed
        raise translated(exc, client, f"experiment {name}") from None
    stamped = stamp_run(run_id, tracking_uri=tracking_uri, settings=settings, stamper=stamper, services=services)
    research = SearchChampion(
        champion["commit"],
        champion["researcher"],
        len(attempts),
        head["head"],
        head["entries"],
        champion["contract_digest"],
    )
    promoted = None
    if not done:
        promoted = promote(
            name,
            run_id,
            alias=alias,
            tracking_uri=tracking_uri,
            settings=settings,
            stamper=stamper,
            services=services,
            research=research,
        )
        client.set_tag(run_id, "anchor.research.promoted_at_head", head["head"])
    return SearchLogged(name, experiment_id, new, len(attempts) - new, len(attempts), run_id, stamped, promoted)


def _champion(attempts: list[LedgerRow]) -> LedgerRow:
    """The search's champion: each researcher's last kept attempt, the best of them by the contract's
    mode (the metric rows carry it)."""
    last: dict[str, LedgerRow] = {}
    for row in attempts:
        if row["kept"]:
            last[row["researcher"]] = row
    if not last:
        raise BadInput("the search kept no attempt: there is no champion to register", detail={"field": "champion"})
    rows = list(last.values())
    first = rows[0].get("metric")
    best = max if first is None or first["mode"] == "max" else min
    return best(rows, key=lambda r: float(m["value"]) if (m := r.get("metric")) is not None else 0.0)


def _experiment(client: Any, name: str) -> str:
    found = client.get_experiment_by_name(name)
    return str(found.experiment_id) if found is not None else str(client.create_experiment(name))


def _logged(client: Any, experiment_id: str) -> dict[str, str]:
    """attempt digest -> run id, for the attempts of this experiment's runs (every lifecycle stage)."""
    from mlflow.entities import ViewType

    found: dict[str, str] = {}
    token = None
    while True:
        page = client.search_runs([experiment_id], run_view_type=ViewType.ALL, max_results=1000, page_token=token)
        for run in page:
            digest = run.data.tags.get(TAG_DIGEST)
            if digest:
                found.setdefault(digest, str(run.info.run_id))
        token = page.token
        if not token:
            return found


def _log_attempt(client: Any, experiment_id: str, row: LedgerRow, trial: int) -> str:
    """One attempt as a finished run: its ledger entry's ids as tags (bound by a stamp), its metric."""
    tags = {
        TAG_DIGEST: row["attempt_digest"],
        "research.commit": row["commit"],
        "research.parent": row["parent"],
        "research.researcher": row["researcher"],
        "research.ledger_seq": str(row["seq"]),
        "research.trial": str(trial),
        "research.status": row["status"],
        "research.kept": str(bool(row["kept"])).lower(),
        "research.contract_digest": row["contract_digest"],
        "mlflow.runName": f"{row['researcher']} trial {trial}",
    }
    run = client.create_run(experiment_id, tags=tags)
    run_id = str(run.info.run_id)
    metric = row.get("metric")
    if metric:
        client.log_metric(run_id, str(metric["name"]), float(metric["value"]), step=0)
    client.set_terminated(run_id, "FINISHED" if row["status"] == "completed" else "FAILED")
    return run_id


def _champion_run(client: Any, experiment_id: str, run_id: str, champion: LedgerRow, repo: Path, workdir: Path) -> bool:
    """Give the champion's run its logged model (the editable files at the champion commit) and the
    champion record as artifacts, once; True when it had them already (promoted before)."""
    run = client.get_run(run_id)
    if run.data.tags.get("anchor.research.model_id"):
        return bool(run.data.tags.get("anchor.research.promoted_at_head"))
    from anchor.research.contract import load_contract

    terms, _ = load_contract(workdir / "contract.toml") if (workdir / "contract.toml").is_file() else (None, None)
    editable = list(terms.editable) if terms is not None else []
    client.update_run(run_id, status="RUNNING")  # artifacts and a model go to a run that is open
    with scratch_dir() as tmp:
        files = Path(tmp) / "model"
        files.mkdir()
        from anchor.settings.session import child_environment

        for path in editable:
            shown = subprocess.run(
                ["git", "-C", str(repo), "show", f"{champion['commit']}:{path}"],
                capture_output=True,
                check=False,
                env=child_environment(),
            )
            if shown.returncode == 0:
                target = files / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(shown.stdout)
        if not any(files.rglob("*")):
            raise BadInput(
                f"the champion {champion['commit'][:12]}: none of the contract's editable files"
                f" ({', '.join(editable) or 'none'}) is in {repo} at that commit",
                detail={"field": "repo"},
            )
        model = client.create_logged_model(experiment_id, name=CHAMPION_MODEL_NAME, source_run_id=run_id)
        client.log_model_artifacts(model.model_id, str(files))
        client.finalize_logged_model(model.model_id, "READY")
        records = sorted((workdir / "runs" / champion["researcher"]).glob(f"champion-{champion['commit'][:12]}-*"))
        for record in records:
            client.log_artifact(run_id, str(record), "research")
    client.set_tag(run_id, "anchor.research.model_id", model.model_id)
    client.set_terminated(run_id, "FINISHED")
    return False
