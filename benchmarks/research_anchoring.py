"""What anchoring during a search costs, on the embedded chain:

- checkpoint anchoring amortized per attempt (target <= 5 ms): the same search of ATTEMPTS attempts,
  ledger-only and with checkpoints (every 10 attempts and at every promotion, as `research run` does by
  default), alternated for --rounds rounds; the difference of the faster rounds divided by the
  attempts, and the time spent inside the checkpoint hook (what the search itself waits for);
- attempt finished -> its lineage record on chain, p95 over the kept attempts (target <= 1 s): from
  the moment the attempt's ledger entry is written to the moment a watcher polling the registry
  (every 20 ms, its own connection) first reads the record back; a third run, since the watcher's
  own polling would count against the first figure.

The peer of the first figure is the ledger-only search itself (ratio with/without). The score is a
noisy function of the parameters under which about a third of the attempts are promoted (each a
checkpoint): a busy search, the costly case. Raw samples
are written to benchmarks/results/research_anchoring.json.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from anchor.anchoring.stamper import KeyStamper
from anchor.chain.compiler import compile_registry
from anchor.chain.deployment import deploy
from anchor.chain.keys import load_signer
from anchor.chain.node import LocalChain
from anchor.chain.open import open_chain, open_registry
from anchor.fence.git import Repo
from anchor.manifest.onchain import commit_key
from anchor.research.checkpoints import Checkpoints
from anchor.research.contract import AttemptContract
from anchor.research.ledger import Ledger
from anchor.research.loop import Search, SearchLimits
from anchor.research.proposers import ParamSearch
from anchor.settings.session import Settings

# a score that grows with the parameters' sum, with +-10 % of fixed pseudo-random noise per change: about
# a third of the attempts are promoted, a checkpoint each, on top of one per 10 attempts (a busy search)
COMMAND = (
    "python3 -c \"import hashlib,json,sys; raw=open('params.json','rb').read(); p=json.loads(raw);"
    " n=int.from_bytes(hashlib.sha256(raw).digest()[:4],'big')/2**32;"
    " open(sys.argv[1]+'/metrics.jsonl','w').write(json.dumps({'score': sum(p.values())*(0.9+0.2*n)}))\" {run_dir}"
)


def search(root: Path, attempts: int, settings: Settings | None, watch: bool = False) -> dict[str, Any]:
    repo = root / "repo"
    repo.mkdir(parents=True)
    # a dozen parameters: enough unscored neighbours around every champion for a long search
    (repo / "params.json").write_text(json.dumps({f"p{i}": 1.0 + i for i in range(12)}))
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    terms = AttemptContract(
        task="bench", command=COMMAND, editable=("params.json",), metric="score", mode="max", attempt_timeout_minutes=1
    )
    ledger = Ledger(root / "work" / "ledger.jsonl")
    hook = None if settings is None else Checkpoints(KeyStamper(settings), ledger, every=10, every_s=300)
    watcher = Watcher(settings) if watch and settings is not None else None

    def on_entry(entry: dict[str, Any]) -> None:
        if watcher is not None and entry["kept"]:
            watcher.expect(entry["commit"])
        if hook is not None:
            start = time.perf_counter()
            hook(entry)
            in_hook.append(time.perf_counter() - start)

    in_hook: list[float] = []
    run = Search(
        Repo(repo),
        terms,
        "00" * 32,
        ledger,
        root / "work",
        ParamSearch("params.json", 3, "bench"),
        "bench",
        SearchLimits(attempts, 3600, attempts),
        on_entry=on_entry,
    )
    start = time.perf_counter()
    summary = run.run()
    wall = time.perf_counter() - start  # what the search itself took, checkpoints journaled on the way
    if hook is not None:
        hook.close()
    lags = [] if watcher is None else watcher.stop()
    return {
        "wall_s": wall,
        "measured": summary.measured,
        "kept": sum(e["kept"] for e in ledger.entries()),
        "checkpoints": 0 if hook is None else hook.anchored,
        "lags": lags,
        "in_hook_s": sum(in_hook),
    }


class Watcher(threading.Thread):
    """Polls the registry for the kept commits it was told about; records when each first appears."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(daemon=True)
        self.registry = open_registry(settings, open_chain(settings, start_local=False))
        self.who = load_signer(31337).address
        self.waiting: dict[str, float] = {}
        self.seen: list[tuple[str, float]] = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.start()

    def expect(self, commit: str) -> None:
        with self.lock:
            self.waiting[commit] = time.perf_counter()

    def run(self) -> None:
        while not self.done.is_set() or self.waiting:
            with self.lock:
                pending = dict(self.waiting)
            for commit, written in pending.items():
                if self.registry.lineage(commit_key(commit), self.who) is not None:
                    self.seen.append((commit, time.perf_counter() - written))
                    with self.lock:
                        del self.waiting[commit]
            time.sleep(0.02)

    def stop(self) -> list[tuple[str, float]]:
        self.done.set()
        self.join(timeout=30)
        return self.seen + [(c, float("inf")) for c in self.waiting]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of each search")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        settings = Settings(data_dir=Path(tmp) / "data", local_port=port)
        node = LocalChain(settings.data_dir, port)
        node.up()
        try:
            handle = open_chain(settings, start_local=False)
            deploy(
                handle.w3, 31337, load_signer(31337), compile_registry(settings.data_dir / "build"), settings.data_dir
            )
            # alternated, so that a drift in the machine's load hits both the same; the faster round of each
            plains, anchoreds = [], []
            for k in range(args.rounds):
                plains.append(search(Path(tmp) / f"plain{k}", args.attempts, None))
                anchoreds.append(search(Path(tmp) / f"anchored{k}", args.attempts, settings))
            plain = min(plains, key=lambda r: r["wall_s"])
            anchored = min(anchoreds, key=lambda r: r["wall_s"])
            watched = search(Path(tmp) / "watched", args.attempts, settings, watch=True)
        finally:
            node.down()
    per_attempt = (anchored["wall_s"] - plain["wall_s"]) / anchored["measured"] * 1000
    lags = sorted(lag for _, lag in watched["lags"])
    p95 = lags[min(len(lags) - 1, round(0.95 * (len(lags) - 1)))] if lags else float("nan")
    print(f"{'search':28}{'attempts':>9}{'kept':>6}{'checkpoints':>12}{'wall s':>9}")
    for name, r in (("ledger only (peer)", plain), ("with checkpoints", anchored)):
        print(f"{name:28}{r['measured']:9d}{r['kept']:6d}{r['checkpoints']:12d}{r['wall_s']:9.2f}")
    print(f"ratio with/without checkpoints: {anchored['wall_s'] / plain['wall_s']:.3f}x")
    print(
        f"checkpoint anchoring, amortized per attempt: {per_attempt:.1f} ms   (target <= 5 ms);"
        f" of it, in the hook (journaling): {anchored['in_hook_s'] / anchored['measured'] * 1000:.1f} ms"
    )
    median = statistics.median(lags) * 1000 if lags else float("nan")
    print(
        f"attempt -> lineage record read back from the registry, kept attempts: n={len(lags)}"
        f" median {median:.0f} ms, p95 {p95 * 1000:.0f} ms   (target p95 <= 1000 ms)"
    )
    out = Path(__file__).parent / "results" / "research_anchoring.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "plain_walls_s": [r["wall_s"] for r in plains],
                "anchored_walls_s": [r["wall_s"] for r in anchoreds],
                "plain": {k: v for k, v in plain.items() if k != "lags"},
                "anchored": {
                    **{k: v for k, v in anchored.items() if k != "lags"},
                    "lags_s": [lag for _, lag in watched["lags"]],
                },
            },
            indent=1,
        )
    )
    print(f"raw samples: {out}")


if __name__ == "__main__":
    main()
