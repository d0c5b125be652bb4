"""Measured commits to a shared git remote: every attempt's ref (refs/anchor/<researcher>/<seq>),
pushed as the search goes, so that researchers on many hosts (a Kubernetes Indexed Job, a team's
machines) leave every measured commit, losers included, where the others and the auditors can fetch
it; `research verify --repo` against a clone of the remote finds every commit the ledger names.

A push that fails mid-search (the remote briefly out of reach) is reported and retried by the full
push at the end, which fails the run if it cannot complete: a search that says it pushed, did.
"""

from __future__ import annotations

import sys

from anchor.errors import GitError
from anchor.fence.git import Repo
from anchor.research.ledger import LedgerRow
from anchor.research.loop import ref_name


class RefPusher:
    def __init__(self, repo: Repo, remote: str, researcher: str) -> None:
        self.repo, self.remote, self.prefix = repo, remote, f"refs/anchor/{ref_name(researcher)}"
        self.pushed = 0
        self.failed = 0
        try:  # before the first attempt: a remote we cannot reach is a mistake to report now
            repo.git("ls-remote", "--quiet", remote, "HEAD")
        except GitError as exc:
            raise GitError(
                f"--push {remote}: the remote cannot be reached ({exc.message.splitlines()[0][-200:]})",
                detail={"field": "push", "remote": remote},
            ) from None

    def __call__(self, entry: LedgerRow) -> None:
        ref = f"{self.prefix}/{entry['seq']}"
        try:
            self.repo.git("push", "--quiet", self.remote, f"{ref}:{ref}")
            self.pushed += 1
        except GitError as exc:
            self.failed += 1
            sys.stderr.write(f"push: {ref} to {self.remote} failed; retried at the end ({exc.message[:200]})\n")

    def finish(self) -> None:
        """Push every ref of this researcher (what failed before, and anything else); raises `GitError`."""
        self.repo.git("push", "--quiet", self.remote, f"{self.prefix}/*:{self.prefix}/*")
