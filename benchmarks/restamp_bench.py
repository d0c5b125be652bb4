"""Re-stamp of a folder of many small files after one changed, beside a cold stamp of the same tree and
`git status` on it, in paired runs of one sitting.

A chain of its own (`anchor chain up` on a free port, a data dir in a temporary folder); a folder of
FILES files of 1 KiB, committed to git (`git add -A`), stamped once. Then RUNS times: change one file
and `anchor stamp DIR` (the stat cache: only the changed file is read); change another and `anchor stamp
--rehash DIR` (every file read: a cold stamp, with the same proof to write and the same superseded proof
to keep); `git status --porcelain` on the same tree. Prints medians (min-max) and the per-pair ratios.
Goals: re-stamp <= 0.2x the cold stamp and <= 3x `git status`. The CPU seconds of each command (its
workers' included) are printed too: on a shared machine, what the command costs whatever the load did.

    .venv/bin/python benchmarks/restamp_bench.py [FILES] [RUNS]
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deployed import ANCHOR, cli_chain

CPU: dict[str, list[float]] = {}
"""CPU seconds (user + system, the command's and its workers') of each command, by name: on a machine
shared with others, what the command itself costs, whatever the load did to its wall time."""


def once(argv: list[str], env: dict[str, str], cwd: Path, name: str = "") -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    CPU.setdefault(name, []).append(cpu)
    return wall


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    middle, low, high = (fmt.format(x) for x in (statistics.median(values), min(values), max(values)))
    return f"{middle} ({low}-{high})"


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with tempfile.TemporaryDirectory(prefix="restamp-bench-") as tmp, cli_chain(Path(tmp)) as (env, run):
        work = Path(tmp)
        tree = work / "tree"
        for n in range(files):
            folder = tree / f"d{n // 1000:03d}"
            if n % 1000 == 0:
                folder.mkdir(parents=True)
            (folder / f"f{n % 1000:04d}.bin").write_bytes(os.urandom(1024))
        git = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-C", str(tree)]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        run("stamp", "tree")  # the first stamp: the proof and the cache a re-stamp starts from
        samples: dict[str, list[float]] = {
            "anchor stamp (one changed)": [],
            "anchor stamp --rehash": [],
            "git status": [],
        }
        for k in range(runs):
            folder = tree / f"d{k % (files // 1000 or 1):03d}"
            with open(folder / f"f{2 * (k // 100):04d}.bin", "ab") as changed:
                changed.write(b"+")
            samples["anchor stamp (one changed)"].append(once([ANCHOR, "stamp", "tree"], env, work, "warm"))
            with open(folder / f"f{2 * (k // 100) + 1:04d}.bin", "ab") as changed:
                changed.write(b"+")
            samples["anchor stamp --rehash"].append(once([ANCHOR, "stamp", "--rehash", "tree"], env, work, "cold"))
            samples["git status"].append(once(["git", "-C", str(tree), "status", "--porcelain"], env, work, "git"))
    print(
        f"{files} files of 1 KiB, paired runs: {runs}, load average {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)"
    )
    for name, values in samples.items():
        print(f"{name:28s} median (min-max) s: {spread(values)}")
    warm, cold, git_status = samples.values()
    print(f"re-stamp / cold stamp, per pair: {spread([w / c for w, c in zip(warm, cold, strict=True)])} (goal <= 0.2)")
    print(
        f"re-stamp / git status, per pair: {spread([w / g for w, g in zip(warm, git_status, strict=True)])} (goal <= 3)"
    )
    print(
        f"CPU s, median (min-max): re-stamp {spread(CPU['warm'])}, cold {spread(CPU['cold'])},"
        f" git status {spread(CPU['git'])}; per pair re-stamp/cold"
        f" {spread([w / c for w, c in zip(CPU['warm'], CPU['cold'], strict=True)])}"
    )


if __name__ == "__main__":
    main()
