"""`anchor --help` start-up time against its peers, in one run: a bare interpreter and `import web3`.

Prints medians over N runs and the ratios. Target: `anchor --help` under 0.5 s.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = 15
ANCHOR = str(Path(sys.executable).with_name("anchor"))


def median_seconds(argv: list[str]) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    bare = median_seconds([sys.executable, "-c", "pass"])
    web3 = median_seconds([sys.executable, "-c", "import web3"])
    ours = median_seconds([ANCHOR, "--help"])
    print(f"python -c pass      {bare * 1000:7.1f} ms")
    print(f"python -c 'import web3' {web3 * 1000:7.1f} ms")
    print(f"anchor --help       {ours * 1000:7.1f} ms  (target < 500 ms)")
    print(f"ratio anchor/bare   {ours / bare:5.2f}x")
    print(f"ratio anchor/web3   {ours / web3:5.2f}x")


if __name__ == "__main__":
    main()
