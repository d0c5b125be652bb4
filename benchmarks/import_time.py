"""Cold import time of every entry point, p95 over fresh interpreters: the CLI, the API app
and the journal service, against a bare interpreter and FastAPI's own import (the floor under the
API app) in the same run. Raw samples are written to
benchmarks/results/import_time.json. Budget (the runtime plan): p95 <= 200 ms for every entry point.

Run: python benchmarks/import_time.py [--runs 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ENTRY_POINTS = {
    "bare interpreter": "pass",
    "peer: FastAPI alone (import fastapi)": "import fastapi",
    "CLI (anchor.cli.app)": "import anchor.cli.app",
    "API app (api.app)": "import api.app",
    "journal service (anchor.anchoring.service)": "import anchor.anchoring.service",
}
BUDGET_MS = 200.0


def sample(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])
    return (time.perf_counter() - start) * 1000


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    samples: dict[str, list[float]] = {name: [] for name in ENTRY_POINTS}
    for _ in range(args.runs):  # interleaved, so every entry point sees the same machine
        for name, code in ENTRY_POINTS.items():
            samples[name].append(sample(code))
    base = statistics.median(samples["bare interpreter"])
    print(f"cold start, {args.runs} fresh interpreters each (ms; interpreter start-up included)")
    for name, values in samples.items():
        peer = name == "bare interpreter" or name.startswith("peer:")
        verdict = "" if peer else ("  within" if p95(values) <= BUDGET_MS else "  OVER") + " budget"
        print(
            f"  {name:42} median {statistics.median(values):7.1f}  p95 {p95(values):7.1f}"
            f"  ({statistics.median(values) / base:4.1f}x bare){verdict}"
        )
    out = Path(__file__).with_name("results") / "import_time.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"budget_ms": BUDGET_MS, "samples_ms": samples}, indent=1))
    print(f"  raw samples: {out}")


if __name__ == "__main__":
    main()
