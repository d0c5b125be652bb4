"""The few git operations the loop needs, through the git CLI (the real thing, no library)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

from anchor.errors import BadInput, GitError, did_you_mean_path
from anchor.settings.session import child_environment, inherited

# Attempt commits are the harness's, not a person's: a fixed identity unless the environment sets one.
_IDENTITY = {
    name: inherited((name,)).get(name, value)
    for name, value in (
        ("GIT_AUTHOR_NAME", "anchor-research"),
        ("GIT_AUTHOR_EMAIL", "research@anchor.invalid"),
        ("GIT_COMMITTER_NAME", "anchor-research"),
        ("GIT_COMMITTER_EMAIL", "research@anchor.invalid"),
    )
}


SAFE = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "submodule.recurse=false",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "core.attributesFile=/dev/null",
    "-c",
    "diff.external=",
    "-c",
    "core.sshCommand=false",
)
"""Every git the harness runs: no hook, no fsmonitor program, no submodule recursed into, no `ext::` transport,
no external diff, whatever a configuration says (an attempt that made `.git/config` name
`core.fsmonitor = <script>` had the harness's next `git status` run it on the host, unconfined; a
nested repository's own `filter.x.clean`, reached through a gitlink, ran the same way).
`anchor.fence.guard.check_git_config` refuses, before a search starts, a config that names any other
program, and no system or user configuration is read at all (`GIT_ENV`)."""

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
}
"""Only the repository's own config, which the guard checked: /etc/gitconfig and ~/.gitconfig could name
a program too, and are not the search's to vouch for."""


def _child(extra: dict[str, str] | None = None) -> dict[str, str]:
    return child_environment({**GIT_ENV, **(extra or {})})


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
            encoding="utf-8",
            errors="surrogateescape",  # a name that is not UTF-8 is a path all the same, never a crash
            env=_child(env),
        )
        if check and result.returncode != 0:
            raise GitError(
                f"git {' '.join(args)} failed: {result.stderr.strip()[:500]}", detail={"repo": str(self.path)}
            )
        return result.stdout

    def git_bytes(self, *args: str) -> bytes | None:
        """A git command's raw output (a blob), or None when it fails (no such path at that commit)."""
        result = subprocess.run(["git", *SAFE, "-C", str(self.path), *args], capture_output=True, env=_child())
        return result.stdout if result.returncode == 0 else None

    def has_commit(self, commit: str) -> bool:
        found = subprocess.run(
            ["git", *SAFE, "-C", str(self.path), "cat-file", "-e", "--end-of-options", f"{commit}^{{commit}}"],
            capture_output=True,
            env=_child(),
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
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=all")
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
        """Untracked entries git does not ignore (what `git clean -fd` would have deleted): every file,
        and every directory git lists as one entry (a nested repository, a directory holding nothing
        git would track, an empty one), with a trailing `/`."""
        files = self.git("ls-files", "-z", "--others", "--exclude-standard")
        dirs = self.git("ls-files", "-z", "--others", "--exclude-standard", "--directory")
        return {path for path in files.split("\0") if path} | {path for path in dirs.split("\0") if path.endswith("/")}

    def reset_to(self, commit: str, keep: set[str]) -> list[str]:
        """Move to `commit`, undoing tracked changes, and delete the untracked entries that are not in
        `keep` — the ones an attempt created: files, and whole directories (a nested repository, a
        read-only tree, thousands of empty directories) that held nothing of the user's. Never `git
        clean`: that deleted a user's untracked notes on a re-run. Idempotent, so a reset cut short (a
        SIGKILL) is finished by the next one. Returns what was deleted."""
        self.git("reset", "--quiet", "--hard", "--no-recurse-submodules", commit)
        created = sorted(self.untracked() - keep)
        kept_files = {path for path in keep if not path.endswith("/")}
        root = self.path.resolve()
        for rel in created:
            target = self.path / rel.rstrip("/")
            if rel.endswith("/"):
                if any(kept.startswith(rel) for kept in kept_files):
                    continue  # the user's untracked folder: only the files the attempt added in it go
                remove_tree(target)
            elif target.is_dir() and not target.is_symlink():
                remove_tree(target)
            else:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
            parent = target.parent
            while parent.resolve() != root and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
        return created

    def diff(self, parent: str, commit: str, paths: tuple[str, ...]) -> bytes:
        plain = ("--no-ext-diff", "--no-textconv", "--binary", "--ignore-submodules=all")  # no driver runs
        result = subprocess.run(
            ["git", *SAFE, "-C", str(self.path), "diff", *plain, "--end-of-options", parent, commit, "--", *paths],
            capture_output=True,
            env=_child(),
        )
        if result.returncode != 0:
            raise GitError(f"git diff {parent[:12]} {commit[:12]} failed", detail={"repo": str(self.path)})
        return result.stdout


def remove_tree(path: Path) -> None:
    """Remove a directory tree an attempt left, whatever it did to it: read-only directories are made
    writable first (by their owner, the harness's: nothing is followed), and nothing outside it is
    touched."""
    import shutil
    import stat

    def retry(function: object, failed: str, _exc: object) -> None:
        parent = os.path.dirname(failed)
        with contextlib.suppress(OSError):
            os.chmod(parent, stat.S_IRWXU)
            if not os.path.islink(failed) and os.path.isdir(failed):
                os.chmod(failed, stat.S_IRWXU)
                shutil.rmtree(failed, onerror=retry)
            else:
                os.unlink(failed)

    if not os.path.lexists(path):
        return
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return
    with contextlib.suppress(OSError):
        os.chmod(path, stat.S_IRWXU)
    try:
        shutil.rmtree(path, onerror=retry)
    except RecursionError:  # deeper than this Python's rmtree recurses: coreutils' rm walks any depth
        subprocess.run(["chmod", "-R", "u+rwx", "--", str(path)], capture_output=True)
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], capture_output=True)
