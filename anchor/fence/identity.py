"""Who untrusted code is on this host: never uid 0.

Why: a user namespace maps the sandbox's "nobody" onto the uid that started the sandbox. Started by a
root harness (CI, most containers), that is host uid 0: with every capability dropped it still passed
each check made of a file's owner, and a write to the host-global `/proc/sys/kernel/core_pattern`
would have run the attempt's program as full root at the next crash anywhere on the machine. So a
root harness drops to the system user `anchor-attempt` (`make sandbox` makes it) before any namespace
is made: the sandbox runtime itself, and everything it starts, is that uid on the host. A harness that
is not root runs the runtime as itself, an unprivileged uid already.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass

from anchor.errors import ToolchainMissing
from anchor.fence.walk import walk
from anchor.record import Value

ATTEMPT_USER = "anchor-attempt"
MAKE_IT = (
    "useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin " + ATTEMPT_USER
)
"""The command `make sandbox` runs (as root) when the user is missing."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Identity(Value):
    """The host uid and gid a sandboxed command runs as when the harness is root."""

    uid: int
    gid: int


def attempt_identity() -> Identity | None:
    """The identity to drop to before the sandbox is made: `anchor-attempt`'s when the harness is root,
    None when it is not (the runtime then runs as the harness's own, unprivileged uid).
    `ToolchainMissing` when a root harness has no such user, or the user is root in disguise."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(ATTEMPT_USER)
    except KeyError:
        raise ToolchainMissing(
            f"the system user {ATTEMPT_USER} does not exist: as root the sandbox runs untrusted code as that"
            f" unprivileged user, never as uid 0 (hint: `make sandbox`, or as root: {MAKE_IT})"
        ) from None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise ToolchainMissing(
            f"the system user {ATTEMPT_USER} has uid {entry.pw_uid} and gid {entry.pw_gid}: untrusted code is"
            f" never run as uid or gid 0 (hint: userdel {ATTEMPT_USER}, then {MAKE_IT})"
        )
    if not (_mapped(entry.pw_uid, "/proc/self/uid_map") and _mapped(entry.pw_gid, "/proc/self/gid_map")):
        raise ToolchainMissing(
            f"this harness is root of a user namespace that does not map {ATTEMPT_USER} (uid {entry.pw_uid}): it"
            " cannot drop to that user, and the sandbox never runs untrusted code as root (hint: run the search"
            " as an unprivileged user, whom the sandbox then maps to, or outside this user namespace, or with"
            " --no-sandbox)"
        )
    return Identity(entry.pw_uid, entry.pw_gid)


def _mapped(inside: int, map_file: str) -> bool:
    """Whether id `inside` exists in this process's user namespace (a line of its uid_map or gid_map
    covers it); True where the file cannot be read (no user namespaces at all)."""
    try:
        lines = open(map_file).read().split("\n")  # noqa: SIM115, PTH123 - a tiny proc file
    except OSError:
        return True
    for line in lines:
        fields = line.split()
        if len(fields) == 3 and int(fields[0]) <= inside < int(fields[0]) + int(fields[2]):
            return True
    return False


def give(path: os.PathLike[str] | str, identity: Identity | None) -> None:
    """Make `path` (a directory or file the harness just made for the command) the command's to write:
    owned by the attempt's identity. Nothing of the user's is ever given away: only what the fence made."""
    if identity is not None:
        os.chown(path, identity.uid, identity.gid, follow_symlinks=False)


def give_tree(path: os.PathLike[str] | str, identity: Identity | None) -> None:
    """`give` a directory the harness made and everything in it (no link followed)."""
    if identity is None:
        return
    give(path, identity)
    for root, dirs, files in walk(path):
        for name in (*dirs, *files):
            give(os.path.join(root, name), identity)
