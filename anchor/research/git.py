"""The few git operations the loop needs, through the git CLI (the real thing, no library)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from anchor.errors import BadInput, GitError, did_you_mean_path
from anchor.settings.session import child_env

# Attempt commits are the harness's, not a person's: a fixed identity unless the environment sets one.
_IDENTITY = {
    name: os.environ.get(name, value)
    for name, value in (
        ("GIT_AUTHOR_NAME", "anchor-research"),
        ("GIT_AUTHOR_EMAIL", "research@anchor.invalid"),
        ("GIT_COMMITTER_NAME", "anchor-research"),
        ("GIT_COMMITTER_EMAIL", "research@anchor.invalid"),
    )
}


SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false")
"""Every git the harness runs: no hook, no fsmonitor program, whatever the repository's config says
(issue 41: an attempt that made `.git/config` name `core.fsmonitor = <script>` had the harness's next
`git status` run it on the host, unconfined). `anchor.research.guard.check_git_config` refuses, before a
search starts, a config that names any other program."""


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.exists():
            raise BadInput(f"{path}: no such directory{did_you_mean_path(path)}", detail={"field": "repo"})
        if not (path / ".git").exists():
            raise BadInput(f"{path}: not a git repository (no .git)", detail={"field": "repo"})

    def git(self, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
        result = subprocess.run(
            ["git", *SAFE, "-C", str(self.path), *args],
            capture_output=True,
            text=True,
            env=child_env({**(env or {}), "GIT_TERMINAL_PROMPT": "0"}),
        )
        if check and result.returncode != 0:
            raise GitError(
                f"git {' '.join(args)} failed: {result.stderr.strip()[:500]}", detail={"repo": str(self.path)}
            )
        return result.stdout

    def git_bytes(self, *args: str) -> bytes | None:
        """A git command's raw output (a blob), or None when it fails (no such path at that commit)."""
        result = subprocess.run(["git", *SAFE, "-C", str(self.path), *args], capture_output=True,
                                env=child_env({"GIT_TERMINAL_PROMPT": "0"}))  # fmt: skip
        return result.stdout if result.returncode == 0 else None

    def has_commit(self, commit: str) -> bool:
        found = subprocess.run(
            ["git", *SAFE, "-C", str(self.path), "cat-file", "-e", "--end-of-options", f"{commit}^{{commit}}"],
            capture_output=True,
            env=child_env({"GIT_TERMINAL_PROMPT": "0"}),
        )
        return found.returncode == 0

    def set_ref(self, name: str, commit: str) -> None:
        """Point ref `name` (refs/...) at `commit`. In a plain repository (a .git directory, loose refs)
        the ref file is written directly, atomically, as git writes it; a git process per attempt cost
        more than the rest of the bookkeeping. Anything else (a worktree, reftable) asks git."""
        git_dir = self.path / ".git"
        if git_dir.is_dir() and "refstorage" not in (git_dir / "config").read_text().lower():
            target = git_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            lock = target.with_name(target.name + ".lock")  # git's own lock protocol for a loose ref
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                pass  # someone holds it (or a crash left it): let git say what is wrong
            else:
                with os.fdopen(fd, "w") as handle:
                    handle.write(commit + "\n")
                lock.replace(target)
                return
        self.git("update-ref", name, commit)

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def parent_of(self, commit: str) -> str | None:
        out = self.git("rev-parse", "--verify", "--quiet", f"{commit}^", check=False).strip()
        return out or None

    def dirty(self) -> list[str]:
        """Every path with a change against HEAD: modified, staged, deleted or untracked."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all")
        paths = []
        entries = out.split("\0")
        i = 0
        while i < len(entries):
            entry = entries[i]
            if len(entry) > 3:
                paths.append(entry[3:])
                if entry[0] in "RC":  # a rename carries its old name in the next field
                    i += 1
            i += 1
        return sorted(paths)

    def commit_paths(self, paths: tuple[str, ...], message: str, when: str) -> str:
        """Commit exactly `paths` with a fixed date, so the same change from the same parent is the same
        commit (dedup by commit then also catches a proposal made twice)."""
        self.git("add", "--", *paths)
        stamp = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, **_IDENTITY}
        self.git("commit", "--quiet", "--no-verify", "-m", message, "--", *paths, env=stamp)
        return self.head()

    def untracked(self) -> set[str]:
        """Untracked files git does not ignore (what `git clean -fd` would have deleted)."""
        out = self.git("ls-files", "-z", "--others", "--exclude-standard")
        return {path for path in out.split("\0") if path}

    def reset_to(self, commit: str, keep: set[str]) -> list[str]:
        """Move to `commit`, undoing tracked changes, and delete the untracked files that are not in
        `keep` — the ones an attempt created. Never `git clean`: that deleted a user's untracked
        notes on a re-run. Returns what was deleted; empty directories left behind are removed too."""
        self.git("reset", "--quiet", "--hard", commit)
        created = sorted(self.untracked() - keep)
        root = self.path.resolve()
        for rel in created:
            target = self.path / rel
            target.unlink(missing_ok=True)
            parent = target.parent
            while parent.resolve() != root and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
        return created

    def diff(self, parent: str, commit: str, paths: tuple[str, ...]) -> bytes:
        plain = ("--no-ext-diff", "--no-textconv", "--binary")  # no driver of the repository's runs
        result = subprocess.run(
            ["git", *SAFE, "-C", str(self.path), "diff", *plain, "--end-of-options", parent, commit, "--", *paths],
            capture_output=True,
        )
        if result.returncode != 0:
            raise GitError(f"git diff {parent[:12]} {commit[:12]} failed", detail={"repo": str(self.path)})
        return result.stdout
