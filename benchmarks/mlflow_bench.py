"""`anchor mlflow stamp` beside `mlflow artifacts download` of the same run, in one run.

A real `mlflow server` (SQLite backend store, local artifact destination, proxied artifacts over HTTP)
and the embedded local chain in a temporary folder; two runs: one with 1,000 small artifacts (1 KiB
each, in 10 folders), one with a single 1 GiB artifact. For each, `mlflow artifacts download -r RUN`
(MLflow's own CLI: the floor, since a stamp must read every byte) and `anchor mlflow stamp RUN` end to end
(a fresh run id each repetition, so that every stamp anchors: an unchanged run would be skipped).
Prints medians and the ratio stamp / download; goal: <= 1.3 x the download alone. Raw samples in
benchmarks/results/mlflow_bench.json. `SMALL=1` shrinks the big artifact to 64 MiB (a quick look).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"
BIN = Path(sys.executable).parent
RUNS = 3


def main() -> None:
    from tests.conftest import free_port
    from tests.mlflow_server import mlflow_server

    big = (64 << 20) if os.environ.get("SMALL") else (1 << 30)
    with tempfile.TemporaryDirectory(prefix="mlflow-bench-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANCHOR_", "MLFLOW_"))}
        env.update(ANCHOR_DATA_DIR=str(work / ".anchor"), ANCHOR_LOCAL_PORT=str(free_port()))
        subprocess.run([str(BIN / "anchor"), "chain", "up"], env=env, check=True, capture_output=True)
        try:
            with mlflow_server(work / "server") as server:
                env["MLFLOW_TRACKING_URI"] = server.url
                small = work / "small"
                for i in range(1_000):
                    (small / f"part-{i % 10}").mkdir(parents=True, exist_ok=True)
                    (small / f"part-{i % 10}" / f"shard-{i:04d}.bin").write_bytes(os.urandom(1024))
                large = work / "large"
                large.mkdir()
                with open(large / "model.bin", "wb") as out:
                    for _ in range(big >> 20):
                        out.write(os.urandom(1 << 20))
                report = {}
                for name, folder in (("1,000 x 1 KiB", small), (f"1 x {big >> 20} MiB", large)):
                    report[name] = _compare(server, folder, work, env)
                    shown = report[name]
                    print(
                        f"{name:>16}: download {shown['download_s']:.2f} s, stamp {shown['stamp_s']:.2f} s,"
                        f" ratio {shown['ratio']:.2f} (goal <= 1.3)",
                        flush=True,
                    )
        finally:
            subprocess.run([str(BIN / "anchor"), "chain", "down"], env=env, check=False, capture_output=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mlflow_bench.json").write_text(json.dumps(report, indent=1) + "\n")


def _compare(server: object, folder: Path, work: Path, env: dict[str, str]) -> dict[str, object]:
    client = server.client()  # type: ignore[attr-defined]
    experiment = client.create_experiment(f"bench-{time.monotonic_ns()}")
    downloads, stamps = [], []
    for _ in range(RUNS):
        run_id = client.create_run(experiment).info.run_id
        client.log_artifacts(run_id, str(folder))
        client.set_terminated(run_id)
        target = work / f"download-{run_id}"
        start = time.perf_counter()
        subprocess.run(
            [str(BIN / "mlflow"), "artifacts", "download", "-r", run_id, "-d", str(target)],
            env=env,
            check=True,
            capture_output=True,
        )
        downloads.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run([str(BIN / "anchor"), "mlflow", "stamp", run_id], env=env, check=True, capture_output=True)
        stamps.append(time.perf_counter() - start)
        subprocess.run(["rm", "-rf", str(target)], check=True)
    download, stamp = statistics.median(downloads), statistics.median(stamps)
    return {
        "download_s": download,
        "stamp_s": stamp,
        "ratio": stamp / download,
        "downloads": downloads,
        "stamps": stamps,
    }


if __name__ == "__main__":
    main()
