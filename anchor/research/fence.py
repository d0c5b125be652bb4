"""What untrusted code sees of the host: an allow-list of paths, and no AF_UNIX socket at all.

Why an allow-list: a network namespace does not isolate path-based Unix sockets. With the host's `/`
bound read-only, an attempt could connect to PostgreSQL's socket in /var/run/postgresql (and write the
journal), to /var/run/docker.sock, or to agents under /run/user; connect() needs no write permission
on the mount. So the sandbox's root is bubblewrap's own empty tmpfs, and only what a program needs
to run is bound into it, read-only: the system's programs and libraries (/usr and its /bin, /lib
links), the few /etc files a libc and Python read, /sys, the harness's own Python and the PATH
directories it runs with. /tmp, /var/tmp and /run are fresh tmpfs of bounded size.

Why seccomp too: the repository, the run dir and the PATH directories are shown, and a socket could
sit in one of them (a listener in the repository's .git). The filter refuses socket(AF_UNIX, ...) with
EACCES, and every system call of a foreign architecture (32-bit socketcall would bypass the check);
socketpair, which makes anonymous pairs, stays allowed. On a machine whose architecture the filter
does not know, the allow-list stands alone (`filter_program` returns None).
"""

from __future__ import annotations

import errno
import os
import platform
import struct
import sys
import tempfile
from pathlib import Path

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys")
"""Bound read-only when present (/bin and /lib are links into /usr on merged-/usr systems)."""
ETC = (
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group",
    "/etc/nsswitch.conf", "/etc/localtime", "/etc/timezone", "/etc/hosts", "/etc/host.conf",
    "/etc/ssl", "/etc/ca-certificates", "/etc/alternatives", "/etc/mime.types", "/etc/os-release",
    "/etc/locale.alias", "/etc/python3", "/etc/matplotlibrc",
)  # fmt: skip
"""What a libc, Python and common libraries read from /etc; not /etc itself (shadow, secrets, sockets)."""
NETWORK_ETC = ("/etc/resolv.conf", "/etc/gai.conf")
"""Only for a proposer told to use the network (an agent calling its model)."""
TMP_BYTES = 1 << 30
"""Each fresh tmpfs (/tmp, /var/tmp, /run) holds at most 1 GiB: it is RAM."""

# classic BPF, as the kernel's seccomp takes it (linux/filter.h, linux/seccomp.h, linux/audit.h)
_LD_W_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_ARCH = {  # machine: (AUDIT_ARCH_*, the socket(2) system call number)
    "x86_64": (0xC000003E, 41),
    "aarch64": (0xC00000B7, 198),
}
_X32_BIT = 0x40000000


def system_binds(network: bool = False) -> list[str]:
    """bwrap arguments binding the allow-listed system paths (a missing one is skipped)."""
    args: list[str] = []
    for path in (*SYSTEM, *ETC, *(NETWORK_ETC if network else ())):
        args += ["--ro-bind-try", path, path]
    return args


def runtime_binds() -> list[str]:
    """The harness's own Python (its virtualenv and the interpreter it was made from) and the PATH
    directories, so `python3` and the tools on PATH resolve inside as they do outside. A `shims`
    directory (pyenv's layout) brings its parent, where the shims find the interpreters."""
    wanted: list[Path] = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent]
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry and os.path.isabs(entry):
            path = Path(entry)
            wanted.append(path.parent if path.name == "shims" else path)
    seen: list[str] = []
    for path in wanted:
        for shown in {str(path), str(path.resolve())}:  # a link's own path and where it leads
            if shown not in seen and shown != "/" and not any(shown.startswith(s + "/") for s in SYSTEM):
                seen.append(shown)
    args: list[str] = []
    for shown in sorted(seen, key=len):  # parents first: a later, deeper bind lands inside them
        args += ["--ro-bind-try", shown, shown]
    return args


def fresh_tmpfs() -> list[str]:
    args: list[str] = []
    for path in ("/tmp", "/var/tmp", "/run"):  # noqa: S108 - fresh and private inside the sandbox
        args += ["--size", str(TMP_BYTES), "--tmpfs", path]
    return args


def filter_program(machine: str | None = None) -> bytes | None:
    """The seccomp filter refusing AF_UNIX sockets, as bytes of `struct sock_filter`; None for an
    architecture it does not know."""
    known = _ARCH.get(machine or platform.machine())
    if known is None:
        return None
    arch, socket_nr = known
    deny, refuse_unix = _ERRNO | errno.EPERM, _ERRNO | errno.EACCES
    program = [
        (_LD_W_ABS, 0, 0, 4),  # 0: the architecture
        (_JEQ, 1, 0, arch),  # 1: ours -> 3
        (_RET, 0, 0, deny),  # 2: a foreign ABI: refused
        (_LD_W_ABS, 0, 0, 0),  # 3: the system call number
        (_JGE, 0, 1, _X32_BIT),  # 4: x32 -> 5, else -> 6
        (_RET, 0, 0, deny),  # 5
        (_JEQ, 0, 3, socket_nr),  # 6: socket -> 7, else -> 10
        (_LD_W_ABS, 0, 0, 16),  # 7: its first argument (the family), low 32 bits
        (_JEQ, 0, 1, 1),  # 8: AF_UNIX -> 9, else -> 10
        (_RET, 0, 0, refuse_unix),  # 9
        (_RET, 0, 0, _ALLOW),  # 10
    ]
    return b"".join(struct.pack("=HBBI", *op) for op in program)


def with_filter(argv: list[str]) -> list[str]:
    """`argv` (bwrap's) with the seccomp filter loaded: written to a private temporary file, opened as
    descriptor 3 by a shell that removes the file and execs bwrap with `--seccomp 3`."""
    program = filter_program()
    if program is None:
        return argv
    fd, path = tempfile.mkstemp(prefix="anchor-seccomp-", suffix=".bpf")
    with os.fdopen(fd, "wb") as out:
        out.write(program)
    script = 'exec 3<"$1" && rm -f "$1" && shift && exec "$@"'
    return ["/bin/sh", "-c", script, "sh", path, argv[0], "--seccomp", "3", *argv[1:]]
