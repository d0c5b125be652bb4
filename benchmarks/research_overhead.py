"""Harness overhead per attempt: everything the loop does besides running the command (propose,
fence, commit, dedup, diff, metric read, ledger append with fsync, reset), measured with a command
that does almost nothing. The peer, in the same run: that command started bare with subprocess.

Target: median overhead <= 50 ms per attempt. The same search with every attempt
in the bubblewrap sandbox; the sandbox's cost is the difference in command time, and the overhead
(with the sandbox's start-up counted as overhead) should stay <= 120 ms; the same under gVisor
(`--sandbox-runtime gvisor`, runsc), goal <= 1.5 s. The git seal (.git compared before and after every
command) and the cgroups (pids and memory, made and removed per command) are inside these figures.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from anchor.fence.git import Repo
from anchor.research.contract import AttemptContract
from anchor.research.ledger import Ledger
from anchor.research.loop import Search, SearchLimits
from anchor.research.proposers import ParamSearch

ATTEMPTS = int(os.environ.get("BENCH_ATTEMPTS", "60"))
# a rising score: every attempt is kept, so the champion moves and proposals stay new (a constant score
# would leave the search re-proposing the same few changes from the baseline)
COMMAND = 'echo "{\\"score\\": $(date +%s%N)}" > {run_dir}/metrics.jsonl'


def main() -> None:
    plain = run(None)
    for runtime, goal in (("bubblewrap", 120), ("gvisor", 1500)):
        boxed = run(runtime)
        extra = boxed["command_ms"] - plain["command_ms"]
        print(f"{runtime} start-up per attempt {extra:7.1f} ms (command time in {runtime} minus unconfined)")
        print(
            f"overhead with {runtime}    {plain['overhead_ms'] + extra:7.1f} ms   (goal <= {goal} ms)"
            f"   ratio to the bare subprocess {boxed['wall_ms'] / plain['bare_ms']:5.1f}x"
        )


def run(runtime: str | None) -> dict[str, float]:
    from anchor.fence.sandbox import Sandbox

    print(f"--- attempts {f'in the {runtime} sandbox' if runtime else 'unconfined'}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo_path = root / "repo"
        repo_path.mkdir()
        (repo_path / "params.json").write_text(json.dumps({"x": 1.0, "y": 2.0, "z": 3}))
        env = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
        subprocess.run(["git", "init", "-q", str(repo_path)], check=True)
        subprocess.run(["git", "-C", str(repo_path), "add", "-A"], check=True)
        subprocess.run(["git", *env, "-C", str(repo_path), "commit", "-qm", "start"], check=True)
        contract = AttemptContract(
            task="overhead",
            command=COMMAND,
            editable=("params.json",),
            metric="score",
            mode="max",
            attempt_timeout_minutes=1,
        )
        stamps: list[float] = []
        search = Search(
            Repo(repo_path),
            contract,
            "00" * 32,
            Ledger(root / "work" / "ledger.jsonl"),
            root / "work",
            ParamSearch("params.json", 7, "bench"),
            "bench",
            SearchLimits(ATTEMPTS, 600, ATTEMPTS),
            on_entry=lambda entry: stamps.append(time.perf_counter()),
            sandbox=Sandbox.find(repo_path, ("params.json",), (root / "work",), runtime=runtime) if runtime else None,
        )
        summary = search.run()
        entries = search.mine()
        print(f"stopped: {summary.stopped_because}; rejected proposals: {summary.rejected}")
        walls = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
        overheads = [w - e["duration_ms"] / 1000 for w, e in zip(walls, entries[1:], strict=False)]
        run_dir = root / "bare"
        run_dir.mkdir()
        bare = []
        for _ in range(ATTEMPTS):
            start = time.perf_counter()
            subprocess.run(COMMAND.replace("{run_dir}", str(run_dir)), shell=True, check=True)  # noqa: S602
            bare.append(time.perf_counter() - start)
    wall, over, peer = statistics.median(walls), statistics.median(overheads), statistics.median(bare)
    print(f"attempts measured        {len(entries)} ({len(walls)} intervals)")
    print(f"median attempt wall time {wall * 1000:7.1f} ms")
    command_ms = statistics.median(e["duration_ms"] for e in entries[1:])
    print(f"median command time      {command_ms:7.1f} ms (as the runner saw it)")
    print(f"median harness overhead  {over * 1000:7.1f} ms   (target <= 50 ms)")
    print(f"bare subprocess peer     {peer * 1000:7.1f} ms   ratio attempt/bare {wall / peer:5.1f}x")
    return {"command_ms": float(command_ms), "overhead_ms": over * 1000, "wall_ms": wall * 1000, "bare_ms": peer * 1000}


if __name__ == "__main__":
    main()
