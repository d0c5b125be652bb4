"""A real MLflow tracking server for the bridge's tests: `mlflow server` with a SQLite backend
store and a local artifact destination, on a free port, in a process group of its own, stopped through
that group (never by name). Runs are logged to it with MLflow's own client."""

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


@dataclass(frozen=True)
class TrackingServer:
    url: str
    store: Path
    """The SQLite backend store (the runs' params, metrics, tags)."""
    artifacts: Path
    """The artifact destination: <experiment id>/<run id>/artifacts/… on disk."""

    def client(self) -> Any:
        from mlflow.tracking import MlflowClient

        return MlflowClient(self.url)

    def artifact_file(self, run_id: str, path: str) -> Path:
        found = list(self.artifacts.glob(f"*/{run_id}/artifacts/{path}"))
        assert len(found) == 1, found
        return found[0]


@contextmanager
def mlflow_server(where: Path) -> Iterator[TrackingServer]:
    where.mkdir(parents=True, exist_ok=True)
    port = free_port()
    store, artifacts = where / "mlflow.sqlite", where / "artifacts"
    log = open(where / "server.log", "wb")  # noqa: SIM115 - the child owns it
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{store}",
         "--artifacts-destination", str(artifacts), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        cwd=where, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={k: v for k, v in os.environ.items() if not k.startswith(("ANCHOR_", "MLFLOW_"))},
    )  # fmt: skip
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
