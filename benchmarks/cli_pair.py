"""The command line of this tree against another's (`--other DIR`, a checkout of main, say), in one
sitting: `anchor verify FILE` (also with an option, `--require any`, its default), `anchor verify FILE
--offline`, `anchor hash FILE` and `anchor --help`, the two trees alternated run by run so that a change
in the machine's load hits both alike.

Prints, for each command and tree, the median CPU time of the child (user + system: what a loaded
machine does not inflate, unlike the wall clock) and the median wall time, then this tree's ratio to
the other's. Both run with this interpreter and its packages; the other tree's `anchor` comes first on
PYTHONPATH. A chain of its own (anvil on a free port, a data dir in a temporary folder), one file
stamped and sealed.

    .venv/bin/python benchmarks/cli_pair.py --other /path/to/main [--runs 31]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ANCHOR = str(Path(sys.executable).with_name("anchor"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of `argv` as a child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--other", type=Path, required=True, help="a source tree whose anchor/ to compare with")
    parser.add_argument("--runs", type=int, default=31)
    args = parser.parse_args()
    trees = {"this": ROOT, "other": args.other.resolve()}
    for tree in trees.values():  # as an installed package is: compiled
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "anchor"), str(tree / "api")], check=True)
    with tempfile.TemporaryDirectory(prefix="cli-pair-") as tmp:
        work = Path(tmp)
        base = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_") and k != "PYTHONPATH"}
        base.update(ANCHOR_DATA_DIR=str(work / ".anchor"), ANCHOR_LOCAL_PORT=str(free_port()))
        envs = {"this": base, "other": {**base, "PYTHONPATH": str(trees["other"])}}
        (work / "one.txt").write_text("0.93\n")
        (work / "sealed.txt").write_text("0.94\n")

        def cli(*words: str) -> str:
            done = subprocess.run([ANCHOR, *words], env=base, cwd=work, capture_output=True, text=True, check=True)
            return done.stdout + done.stderr

        cli("stamp", "one.txt")
        said = cli("stamp", "sealed.txt", "--seal")
        trusted = re.search(r"--trusted-block (\d+:0x[0-9a-f]{64})", said)
        assert trusted is not None, said
        commands = {
            "verify FILE": ["verify", "one.txt"],
            "verify FILE --require any": ["verify", "one.txt", "--require", "any"],
            "verify FILE --offline": ["verify", "sealed.txt", "--offline", "--trusted-block", trusted.group(1)],
            "hash FILE": ["hash", "one.txt"],
            "--help": ["--help"],
        }
        samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
        try:
            for _ in range(args.runs):
                for name, words in commands.items():
                    for tree in trees:
                        samples.setdefault((name, tree), []).append(once([ANCHOR, *words], envs[tree], work))
        finally:
            cli("chain", "down")
    print(f"{args.runs} runs each, alternated; this tree {ROOT}, the other {trees['other']}")
    for name in commands:
        row = {}
        for tree in trees:
            cpu, wall = zip(*samples[(name, tree)], strict=True)
            row[tree] = (statistics.median(cpu), statistics.median(wall))
            print(f"anchor {name:24s} {tree:5s}  cpu {row[tree][0] * 1000:7.1f} ms  wall {row[tree][1] * 1000:7.1f} ms")
        print(
            f"anchor {name:24s} this/other: cpu {row['this'][0] / row['other'][0]:.2f}x,"
            f" wall {row['this'][1] / row['other'][1]:.2f}x"
        )


if __name__ == "__main__":
    main()
