"""`anchor.mlflow`: anchor the runs an MLflow tracking server holds, and verify them later (docs/mlflow.md).

    import anchor.mlflow
    anchor.mlflow.stamp_run(run_id)               # the run's record and artifacts, anchored; proof into the run
    anchor.mlflow.verify_run(run_id)              # a Verification, or Tampered naming what changed
    anchor.mlflow.stamp_experiment("digits-rf")   # every run, one failing never the end; and the roster
    anchor.mlflow.verify_experiment("digits-rf")  # every run, deleted ones apart, against the roster
    anchor.mlflow.promote("digits", run_id, alias="champion")   # verified first, then registered
    anchor.mlflow.verify_model("models:/digits@champion")       # the version, its run, its files, its promotion
    anchor.mlflow.log_search(workdir, repo, "digits")           # a research search: runs, champion promoted
    with anchor.mlflow.anchored_run(run_name="lr-0.01") as run:   # mlflow.start_run, stamped when it ends
        ...

Needs the optional extra `anchor-provenance[mlflow]` (MLflow's client); the rest of anchor does not.
The names here are the public ones; the modules inside are internal.
"""

from __future__ import annotations

from anchor.mlflow.bridge import (
    AnchoredRun,
    EarlierStamp,
    RunStamped,
    RunVerification,
    anchored_run,
    stamp_run,
    upgrade_run,
    verify_run,
)
from anchor.mlflow.experiment import (
    ExperimentStamped,
    ExperimentVerification,
    Roster,
    stamp_experiment,
    stamp_runs,
    verify_experiment,
)
from anchor.mlflow.registry import (
    ModelVerification,
    Promoted,
    SearchChampion,
    promote,
    verify_model,
)
from anchor.mlflow.research import SearchLogged, log_search

__all__ = [
    "AnchoredRun",
    "EarlierStamp",
    "ExperimentStamped",
    "ExperimentVerification",
    "ModelVerification",
    "Promoted",
    "Roster",
    "RunStamped",
    "RunVerification",
    "SearchChampion",
    "SearchLogged",
    "anchored_run",
    "log_search",
    "promote",
    "stamp_experiment",
    "stamp_run",
    "stamp_runs",
    "upgrade_run",
    "verify_experiment",
    "verify_model",
    "verify_run",
]
