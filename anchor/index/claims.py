"""What the chain does not hold, offered by someone else and compared with what it does.

The registry keeps a lineage record's metric and diff as hashes. A chain-only explorer shows a metric
value or a code.diff only when a published source supplies it and it hashes to the record on chain:
- `--claims LEDGER.jsonl`: a research ledger as its researcher published it. Its hash chain is checked
  first (an edited or reordered row refuses the whole file); then each attempt's metric is hashed by
  us, never taken from the row's `metric_hash`.
- `--repo DIR`: a clone of the repository the attempts were pushed to; an attempt's diff is
  `git diff --binary PARENT COMMIT`, shown only when its BLAKE3 is the record's diff hash.
A value that does not match is shown as not matching; it is never plotted or shown as the record's.
"""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from anchor.errors import BadInput, Tampered
from anchor.record import Value

MAX_DIFF_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ClaimedAttempt(Value):
    seq: int
    """Its row in the ledger."""
    trial: int
    """Its researcher's trial number in the search (anchor.research.report.trial_numbers), as every door says it."""
    commit: str
    """bytes32 hex with 0x, as the registry keys it."""
    researcher: str
    """The name the ledger gives (the chain knows an address)."""
    metric_name: str | None
    metric_mode: str | None
    metric_value: str | None
    metric_hash: str
    """Computed here from the claimed metric (zero hash without one)."""
    kept: bool
    status: str


def load_claims(path: Path) -> list[ClaimedAttempt]:
    """The attempts of a published ledger, in ledger order, after its hash chain is checked."""
    from anchor.manifest.attempt import ZERO_HASH, Metric
    from anchor.manifest.onchain import commit_key
    from anchor.research.ledger import Ledger, is_attempt
    from anchor.research.report import trial_numbers

    if not path.is_file():
        raise BadInput(
            f"--claims {path}: no such file (hint: a research ledger, e.g. research/ledger.jsonl)",
            detail={"field": "claims", "path": str(path)},
        )
    ledger = Ledger(path)
    try:
        ledger.verify()
    except Tampered as exc:
        raise Tampered(f"--claims: {exc.message}", detail={"field": "claims", **exc.detail}) from None
    out = []
    rows = [row for row in ledger.rows() if is_attempt(row)]
    trials = trial_numbers([row for row in rows if isinstance(row.get("researcher"), str)])
    for row in rows:
        try:
            metric = Metric.model_validate(row["metric"]) if row.get("metric") else None
            commit = "0x" + commit_key(str(row["commit"])).hex()
        except (ValueError, KeyError, BadInput):
            continue  # a row this reader cannot use shows nothing; the chain's record stands alone
        out.append(
            ClaimedAttempt(
                seq=int(row["seq"]),
                trial=trials.get(int(row["seq"]), 0),
                commit=commit,
                researcher=str(row.get("researcher", "")),
                metric_name=metric.name if metric else None,
                metric_mode=metric.mode if metric else None,
                metric_value=metric.value if metric else None,
                metric_hash="0x" + (metric.hash().hex() if metric else ZERO_HASH),
                kept=bool(row.get("kept")),
                status=str(row.get("status", "")),
            )
        )
    return out


def check_repo(path: Path) -> Path:
    if not (path / ".git").exists() and not (path / "HEAD").is_file():
        raise BadInput(
            f"--repo {path}: not a git repository (hint: a clone of the remote the attempts were pushed to)",
            detail={"field": "repo", "path": str(path)},
        )
    return path


_diffs: dict[tuple[str, str, str], bytes | None] = {}
"""(repo, parent, commit) -> the diff between the two commits (None: too big). Immutable, since both
are commit ids: computed once, whoever's records name the pair (500 sybil records of one commit made
500 `git diff` processes per view). At most _DIFFS_KEPT kept."""
_DIFFS_KEPT = 256
_diffs_lock = threading.Lock()


def verified_diff(repo: Path, parent: str, commit: str, diff_hash: str) -> tuple[str, bytes | None]:
    """("verified", diff) when the repo's diff hashes to `diff_hash`; ("absent"|"differs", None) otherwise."""
    import blake3

    if int(parent, 16) == 0:
        return "baseline", None
    key = (str(repo), parent, commit)
    with _diffs_lock:
        known = key in _diffs
        diff = _diffs.get(key)
    if not known:
        found = _git_diff(repo, parent, commit)
        if found is _ABSENT:  # the repository may not have them yet: asked again next time
            return "absent", None
        diff = found if isinstance(found, bytes) else None
        with _diffs_lock:
            if len(_diffs) >= _DIFFS_KEPT:
                _diffs.pop(next(iter(_diffs)))
            _diffs[key] = diff
    if diff is None:
        return "absent", None
    if "0x" + blake3.blake3(diff).hexdigest() != diff_hash:
        return "differs", None
    return "verified", diff


_ABSENT = object()


def _git_diff(repo: Path, parent: str, commit: str) -> object:
    """The diff's bytes, None when larger than MAX_DIFF_BYTES, or _ABSENT when git has no such commits."""

    from anchor.manifest.onchain import commit_of_key
    from anchor.settings.session import child_environment

    result = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "core.quotePath=true",
            "diff",
            "--binary",
            commit_of_key(parent),
            commit_of_key(commit),
        ],
        capture_output=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
        env=child_environment(),
    )
    if result.returncode != 0:
        return _ABSENT
    return None if len(result.stdout) > MAX_DIFF_BYTES else result.stdout
