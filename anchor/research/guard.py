"""The git guard: the three rules that make an attempt's measurement mean something.

1. Commit before measure: nothing in the editable may be uncommitted when an attempt is measured.
2. The fence: nothing outside the editable allowlist may be dirty, ever.
3. Dedup by commit: a commit already scored for this researcher is never measured again.
Each violation is a `GuardError` naming the paths or the commit.
"""

from __future__ import annotations

from anchor.errors import GuardError
from anchor.research.git import Repo


def _inside(path: str, editable: tuple[str, ...]) -> bool:
    return any(path == e or path.startswith(e.rstrip("/") + "/") for e in editable)


def check_fence(repo: Repo, editable: tuple[str, ...]) -> list[str]:
    """Refuse when anything outside the editable allowlist is dirty; returns the dirty editable paths."""
    dirty = repo.dirty()
    outside = [p for p in dirty if not _inside(p, editable)]
    if outside:
        raise GuardError(f"outside the editable fence, changed: {', '.join(outside[:10])}", detail={"paths": outside})
    return dirty


def check_committed(repo: Repo, editable: tuple[str, ...]) -> None:
    dirty = check_fence(repo, editable)
    if dirty:
        raise GuardError(
            f"uncommitted changes in the editable: {', '.join(dirty)}; commit before measure", detail={"paths": dirty}
        )


def check_unscored(commit: str, scored: set[str], researcher: str) -> None:
    if commit in scored:
        raise GuardError(f"commit {commit} was already scored for {researcher}", detail={"commit": commit})
