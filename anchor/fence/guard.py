"""The git guard: the rules that make an attempt's measurement mean something, and keep the harness's
own git from being steered by what an attempt leaves behind.

1. Commit before measure: nothing in the editable may be uncommitted when an attempt is measured.
2. The fence: nothing outside the editable allowlist may be dirty, ever.
3. Dedup by commit: a commit already scored for this researcher is never measured again.
4. The repository's git state is the harness's: a search whose `.git/config` names a program
   git would run (`check_git_config`) is refused before it starts, and `.git/config`, the hooks, the
   refs and HEAD are compared before and after every command run in the repository (`GitSeal`): a
   change fails that command by name and is undone before git runs again.
Each violation is a `GuardError` naming the paths or the commit.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from anchor.errors import GuardError
from anchor.fence.git import Repo
from anchor.record import Value

PROGRAM_KEYS = (
    "core.fsmonitor",
    "core.hookspath",
    "core.sshcommand",
    "core.pager",
    "core.editor",
    "core.askpass",
    "core.gitproxy",
    "core.alternaterefscommand",
    "sequence.editor",
    "diff.external",
    "credential.helper",
    "credential.*.helper",
    "gpg.program",
    "gpg.*.program",
    "uploadpack.packobjectshook",
    "web.browser",
    "include.path",
    "includeif.*.path",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "diff.*.textconv",
    "diff.*.command",
    "merge.*.driver",
    "difftool.*.cmd",
    "mergetool.*.cmd",
    "remote.*.uploadpack",
    "remote.*.receivepack",
    "browser.*.cmd",
    "man.*.cmd",
    "pager.*",
    "ssh.variant",
    "sendemail.*cmd",
    "sendemail.sendmailcmd",
)
"""Configuration keys (git-config(1)) whose value is a program git runs, or a file of more config."""


def check_git_config(repo: Repo) -> None:
    """Refuse a repository whose own config (`.git/config`) names a program git could run: the harness
    runs git on the host, outside every sandbox, and a hook there is code we did not choose."""
    out = repo.git("config", "--local", "--list", "--null", check=False)
    named = []
    for entry in filter(None, out.split("\0")):
        key, _, value = entry.partition("\n")
        key = key.lower()
        if key == "core.fsmonitor" and value.strip().lower() in ("", "false", "0", "no", "off"):
            continue
        if key.startswith("alias.") and not value.lstrip().startswith("!"):
            continue
        if any(fnmatch.fnmatchcase(key, pattern) for pattern in PROGRAM_KEYS) or key.startswith("alias."):
            named.append(key)
    if named:
        raise GuardError(
            f"{repo.path}/.git/config names a program git would run ({', '.join(sorted(set(named)))}): the harness"
            " runs git on this host, unconfined, so a search refuses such a repository (hint: remove the"
            " keys with `git config --local --unset KEY`, or search a fresh clone)",
            detail={"field": "repo", "keys": sorted(set(named))},
        )


WATCHED = ("config", "config.worktree", "HEAD", "packed-refs", "hooks", "refs", "info", "commondir")
"""What of .git a command could use to steer the harness's later git: its config, hooks, refs and HEAD.
refs/anchor/ is left out: the harnesses of a team write it (one ref per ledger entry) while another's
attempt runs, and no ref there is anything git runs or checks out."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class GitSeal(Value):
    """The bytes of `WATCHED` under a repository's .git, taken before a command runs in it."""

    git_dir: Path
    files: dict[str, bytes]

    @classmethod
    def take(cls, repo: Path) -> GitSeal | None:
        git_dir = repo / ".git"
        if not git_dir.is_dir() or git_dir.is_symlink():
            return None
        return cls(git_dir, _read_watched(git_dir))

    def broken(self) -> list[str]:
        """What changed since `take` (".git/config", ".git/hooks/pre-commit", ...), each change undone:
        a changed or removed file written back, a new one (or a link, a FIFO) removed."""
        now = _read_watched(self.git_dir)
        changed = sorted(name for name in {*self.files, *now} if self.files.get(name) != now.get(name))
        for name in changed:
            target = self.git_dir / name
            with contextlib.suppress(OSError):
                if target.is_dir() and not target.is_symlink():
                    import shutil

                    shutil.rmtree(target)
                else:
                    target.unlink(missing_ok=True)
            if name in self.files:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(self.files[name])
        return [f".git/{name}" for name in changed]


def _read_watched(git_dir: Path) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for name in WATCHED:
        top = git_dir / name
        paths = (
            [top]
            if not top.is_dir() or top.is_symlink()
            else [
                Path(root) / leaf
                for root, dirs, files in os.walk(top)
                for leaf in (*files, *(d for d in dirs if os.path.islink(os.path.join(root, d))))
            ]
        )
        for path in paths:
            if path.is_relative_to(git_dir / "refs" / "anchor"):
                continue
            if path.is_symlink() or (path.exists() and not path.is_file()):
                found[str(path.relative_to(git_dir))] = b"\0not a regular file"
            elif path.is_file():
                with contextlib.suppress(OSError):
                    found[str(path.relative_to(git_dir))] = path.read_bytes()
    return found


def _inside(path: str, editable: tuple[str, ...]) -> bool:
    return any(path == e or path.startswith(e.rstrip("/") + "/") for e in editable)


def check_fence(repo: Repo, editable: tuple[str, ...]) -> list[str]:
    """Refuse when anything outside the editable allowlist is dirty; returns the dirty editable paths."""
    dirty = repo.dirty()
    outside = [p for p in dirty if not _inside(p, editable)]
    if outside:
        raise GuardError(f"outside the editable fence, changed: {', '.join(outside[:10])}", detail={"paths": outside})
    return dirty


def check_changes_something(repo: Repo, dirty: list[str]) -> None:
    """Refuse a proposal whose every change leaves the content the same: byte-identical, or
    the same parsed values for a JSON or TOML editable (params.json pretty-printed again). Measuring it
    would count a trial that tried nothing, and inflate the trial count every adjustment divides by."""
    same = []
    for path in dirty:
        before = repo.git_bytes("show", f"HEAD:{path}")
        target = repo.path / path
        if before is None or not target.is_file() or target.is_symlink():
            return  # added or removed: a change
        after = target.read_bytes()
        if after != before and not _same_values(path, before, after):
            return
        same.append(path)
    if same:
        raise GuardError(
            f"no change: {', '.join(same)} {'holds' if len(same) == 1 else 'hold'} the same values as the"
            " champion (only reformatted): not a trial, never measured",
            detail={"paths": same, "reason": "no change"},
        )


def _same_values(path: str, before: bytes, after: bytes) -> bool:
    """Whether two versions of a JSON or TOML file parse to the same values (other files: never)."""
    import json
    import tomllib

    try:
        if path.endswith(".json"):
            return bool(json.loads(before) == json.loads(after))
        if path.endswith(".toml"):
            return bool(tomllib.loads(before.decode()) == tomllib.loads(after.decode()))
    except (ValueError, UnicodeDecodeError):
        return False
    return False


def check_committed(repo: Repo, editable: tuple[str, ...]) -> None:
    dirty = check_fence(repo, editable)
    if dirty:
        raise GuardError(
            f"uncommitted changes in the editable: {', '.join(dirty)}; commit before measure", detail={"paths": dirty}
        )


def check_unscored(commit: str, scored: set[str], researcher: str) -> None:
    if commit in scored:
        raise GuardError(f"commit {commit} was already scored for {researcher}", detail={"commit": commit})
