"""`research verify` past the hash chain: the commits and the evidence the ledger names, re-checked.

Why: a ledger entry is a claim about things outside it. Its commit must still exist in the repository
(losers too: refs/anchor/<researcher>/<seq> keep them through `git gc`) and produce the diff whose
hash the entry records; its run dir must hash to the evidence its attempt manifest binds, and the
metric re-read from the bound file must be the one ledgered. Each check raises `Tampered` naming the
seq; nothing is taken from the entry that can be recomputed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import blake3

from anchor.errors import BadInput, GitError, Tampered
from anchor.fence.git import Repo
from anchor.files import private_dir
from anchor.record import Value
from anchor.research.ledger import LedgerRow


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Audit(Value):
    commits: int
    """Entries whose commit was found and whose diff hashed to the ledgered one."""
    evidence: int
    """Entries whose run dir re-hashed to the bound evidence and whose metric was re-read."""
    legacy: int
    """Version 1 entries (before evidence was bound): their run dirs are not checked."""
    repos: dict[str, str]
    """The repository checked for each researcher."""


def repo_record(workdir: Path, researcher: str) -> Path:
    return workdir / "runs" / researcher / "repo.json"


def remember_repo(workdir: Path, researcher: str, repo: Path) -> None:
    """Where a researcher's search runs, so that `research verify` finds its commits without being told."""
    path = repo_record(workdir, researcher)
    private_dir(path.parent)
    path.write_text(json.dumps({"path": str(repo.resolve())}))


def audit(entries: list[LedgerRow], workdir: Path, repo: Path | None) -> Audit:
    """Check every entry's commit and evidence; `repo` overrides the repositories the searches recorded."""
    from anchor.research.contract import load_pinned
    from anchor.research.evidence import check, evidence_dir_of

    pinned = workdir / "contract.toml"
    terms = load_pinned(workdir, entries)
    repos: dict[str, Repo] = {}
    commits = evidence = legacy = 0
    for entry in entries:
        who = entry["researcher"]
        if who not in repos:
            repos[who] = _repo_of(workdir, who, repo)
        if terms is not None:
            _check_commit(repos[who], entry, terms.editable)
            commits += 1
        if entry.get("version", 1) < 2:
            legacy += 1
            continue
        if terms is None:
            raise BadInput(
                f"{pinned}: missing; the search's contract is needed to re-read its metrics",
                detail={"file": str(pinned)},
            )
        run_dir = evidence_dir_of(workdir, entry)
        check(entry, run_dir, terms.metric_source)
        evidence += 1
    return Audit(commits, evidence, legacy, {who: str(r.path) for who, r in repos.items()})


def _repo_of(workdir: Path, researcher: str, given: Path | None) -> Repo:
    if given is not None:
        return Repo(given.resolve())
    record = repo_record(workdir, researcher)
    try:
        path = Path(json.loads(record.read_text())["path"])
    except (OSError, ValueError, KeyError, TypeError):
        raise BadInput(
            f"no repository recorded for researcher {researcher!r} ({record}): give it with --repo",
            detail={"field": "repo", "researcher": researcher},
        ) from None
    return Repo(path)


def _check_commit(repo: Repo, entry: LedgerRow, editable: tuple[str, ...]) -> None:
    seq, commit, parent = entry["seq"], entry["commit"], entry["parent"]
    if not repo.has_commit(commit):
        raise Tampered(
            f"seq {seq}: commit {commit[:12]} is not in {repo.path} (collected, or another repository);"
            f" refs/anchor/*/{seq} should keep it",
            detail={"seq": seq, "commit": commit, "repo": str(repo.path)},
        )
    try:
        diff = b"" if parent == "0" * 40 else repo.diff(parent, commit, editable)
    except GitError:
        diff = None
    if diff is None or blake3.blake3(diff).hexdigest() != entry["diff_blake3"]:
        raise Tampered(
            f"seq {seq}: the diff of {parent[:12]}..{commit[:12]} is not the one ledgered (diff_blake3)",
            detail={"seq": seq, "commit": commit},
        )
