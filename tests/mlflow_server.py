"""A real MLflow tracking server for the bridge's tests: `mlflow server` with a SQLite or a PostgreSQL
backend store (MLflow's two database tiers; `BACKENDS` parametrises a module's server over both) and a
local artifact destination, on a free port, in a process group of its own, stopped through that group
(never by name). Runs are logged to it with MLflow's own client; `TrackingServer.sql` edits its
database directly, as whoever can write the store would."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import free_port

BACKENDS = ("sqlite", "postgresql")
"""The backend stores a module's `server` fixture is parametrised over (the PostgreSQL half is marked
`postgres` by tests/conftest.py, from the parameter)."""


@dataclass(frozen=True)
class TrackingServer:
    url: str
    store: str
    """The backend store's URI (the runs' params, metrics, tags): sqlite:///… or postgresql+psycopg://…"""
    artifacts: Path
    """The artifact destination: <experiment id>/<run id>/artifacts/… on disk."""

    def sql(self, statement: str, *params: str) -> None:
        """Run one statement on the backend store's database (`?` placeholders), committed."""
        if self.store.startswith("sqlite:///"):
            import sqlite3

            with sqlite3.connect(self.store.removeprefix("sqlite:///")) as db:
                db.execute(statement, params)
            return
        import psycopg

        with psycopg.connect(self.store.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as db:
            db.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type] - a test's own statement

    def client(self) -> Any:
        from mlflow.tracking import MlflowClient

        return MlflowClient(self.url)

    def artifact_file(self, run_id: str, path: str) -> Path:
        found = list(self.artifacts.glob(f"*/{run_id}/artifacts/{path}"))
        assert len(found) == 1, found
        return found[0]


@contextmanager
def mlflow_server(where: Path, database: str | None = None) -> Iterator[TrackingServer]:
    """`database`: a postgresql:// URL (tests/postgres.py) for MLflow's PostgreSQL backend store; None:
    a SQLite file in `where`."""
    where.mkdir(parents=True, exist_ok=True)
    port = free_port()
    store = (
        f"sqlite:///{where / 'mlflow.sqlite'}"
        if database is None
        else database.replace("postgresql://", "postgresql+psycopg://", 1)
    )
    artifacts = where / "artifacts"
    log = open(where / "server.log", "wb")  # noqa: SIM115 - the child owns it
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            store,
            "--artifacts-destination",
            str(artifacts),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=where,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={k: v for k, v in os.environ.items() if not k.startswith(("ANCHOR_", "MLFLOW_"))},
    )
    log.close()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{url}/health", timeout=2)  # noqa: S310 - loopback
                break
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("mlflow server did not come up:\n" + (where / "server.log").read_text()[-3000:])
            time.sleep(0.2)
        yield TrackingServer(url, store, artifacts)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)  # the group started here: uvicorn and its job runner
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def log_run(server: TrackingServer, tmp: Path, experiment: str = "anchor-tests", *, finish: bool = True) -> str:
    """A run as a researcher logs it: params, val_acc at 3 steps, two artifacts in a folder, a user tag
    and a source commit; finished unless `finish` is False. Returns its run id."""
    client = server.client()
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    run = client.create_run(experiment_id, tags={"team": "vision", "mlflow.source.git.commit": "ab" * 20})
    run_id = str(run.info.run_id)
    client.log_param(run_id, "lr", "0.01")
    client.log_param(run_id, "batch-size", "32")
    for step, value in enumerate((0.61, 0.74, 0.8125)):
        client.log_metric(run_id, "val_acc", value, step=step)
    folder = tmp / f"out-{run_id}" / "model"
    folder.mkdir(parents=True)
    (folder / "weights.bin").write_bytes(bytes(range(256)) * 64)
    (folder / "config.json").write_text('{"layers": 3}\n')
    client.log_artifacts(run_id, str(folder), "model")
    if finish:
        client.set_terminated(run_id)
    return run_id


@contextmanager
def backend_server(backend: str, where: Path, request: Any) -> Iterator[TrackingServer]:
    """A server over `backend` (one of BACKENDS): PostgreSQL takes a fresh database of the session's
    server (tests/conftest.py `postgres_server_url`)."""
    database = None
    if backend == "postgresql":
        import uuid

        from tests.postgres import fresh_database

        database = fresh_database(request.getfixturevalue("postgres_server_url"), "m_" + uuid.uuid4().hex[:16])
    with mlflow_server(where, database) as served:
        yield served


MODEL_SCRIPT = """
import sys, mlflow
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
mlflow.set_tracking_uri(sys.argv[1])
mlflow.set_experiment("digits-rf")
X, y = load_digits(return_X_y=True)
with mlflow.start_run() as run:
    model = RandomForestClassifier(n_estimators=4, random_state=0).fit(X[:300], y[:300])
    mlflow.log_param("n_estimators", 4)
    mlflow.log_metric("val_acc", model.score(X[300:600], y[300:600]))
    info = mlflow.sklearn.log_model(model, name="model", pip_requirements=["scikit-learn"],
                                   serialization_format="cloudpickle")
print("RESULT", run.info.run_id, info.model_id)
"""


def train_model(server: TrackingServer, tmp_path: Path, env: dict[str, str]) -> tuple[str, str]:
    """A scikit-learn run logged the MLflow 3 way (`log_model(name=…)`), by a training script of its own:
    its run id and logged model id. `env`: the script's environment (ANCHOR_* dropped)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "train.py"
    script.write_text(MODEL_SCRIPT)
    ran = subprocess.run(
        [sys.executable, str(script), server.url],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in env.items() if not k.startswith("ANCHOR_")},
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    run_id, model_id = next(line.split()[1:] for line in ran.stdout.splitlines() if line.startswith("RESULT "))
    return run_id, model_id
