"""A small training run logged to MLflow, for the flow in docs/mlflow.md: two params, `val_acc` at three
steps and `model/` (two files) as artifacts, in the experiment `anchor-example`. Prints the run's id,
which `anchor mlflow stamp` and `anchor mlflow verify` take.

    MLFLOW_TRACKING_URI=http://127.0.0.1:5000 python examples/mlflow/train.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import mlflow


def main() -> None:
    mlflow.set_experiment("anchor-example")
    with mlflow.start_run() as run:
        mlflow.log_params({"lr": 0.01, "epochs": 3})
        for step, accuracy in enumerate((0.71, 0.78, 0.8125)):
            mlflow.log_metric("val_acc", accuracy, step=step)
        with tempfile.TemporaryDirectory() as tmp:
            model = Path(tmp) / "model"
            model.mkdir()
            (model / "weights.json").write_text(json.dumps({"w": [0.1, -0.2, 0.3]}) + "\n")
            (model / "README.txt").write_text("a toy model: three weights\n")
            mlflow.log_artifacts(str(model), artifact_path="model")
    print(run.info.run_id)  # noqa: T201 - the run id is what this script answers


if __name__ == "__main__":
    main()
