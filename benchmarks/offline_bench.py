"""Offline verify of a sealed proof beside online verify of the same file and a bare interpreter, in
paired runs of one sitting: `python -c pass`, `anchor verify FILE`, `anchor verify FILE --offline
--trusted-block N:HASH`, then again, RUNS times, so load on a shared machine falls on all three alike.

A chain of its own (anvil on a free port, a data dir in a temporary folder), one file stamped and
sealed. Prints each command's median and min-max, and the per-pair ratios offline/online and
offline/bare (median, min-max). Goals: offline <= 0.8x online, <= 8x bare.

    .venv/bin/python benchmarks/offline_bench.py [RUNS]
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

from deployed import ANCHOR, cli_chain

ROOT = Path(__file__).resolve().parents[1]


def once(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def spread(values: list[float], unit: float = 1000.0, fmt: str = "{:.0f}") -> str:
    middle, low, high = (fmt.format(x * unit) for x in (statistics.median(values), min(values), max(values)))
    return f"{middle} ({low}-{high})"


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "anchor")], check=True)
    with tempfile.TemporaryDirectory(prefix="offline-bench-") as tmp, cli_chain(Path(tmp)) as (env, run):
        work = Path(tmp)
        (work / "result.txt").write_text("accuracy 0.913\n")
        run("stamp", "result.txt")
        block = json.loads(run("seal", "result.txt", "--json").stdout)["sealed"][0]["blocks"][0]
        trusted = f"{block['block']}:{block['hash']}"
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "anchor verify FILE": [ANCHOR, "verify", "result.txt"],
            "anchor verify FILE --offline": [ANCHOR, "verify", "result.txt", "--offline", "--trusted-block", trusted],
        }
        for argv in commands.values():  # warm the page cache and the bytecode
            once(argv, env, work)
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, argv in commands.items():
                samples[name].append(once(argv, env, work))
    print(f"paired runs: {runs}, load average {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    for name, values in samples.items():
        print(f"{name:32s} median (min-max) ms: {spread(values)}")
    bare, online, offline = (samples[n] for n in commands)
    vs_online = [off / on for off, on in zip(offline, online, strict=True)]
    vs_bare = [off / b for off, b in zip(offline, bare, strict=True)]
    print(f"offline / online, per pair: {spread(vs_online, 1, '{:.2f}')}  (goal <= 0.8)")
    print(f"offline / bare,   per pair: {spread(vs_bare, 1, '{:.1f}')}  (goal <= 8)")


if __name__ == "__main__":
    main()
