"""What untrusted code sees of the host: an allow-list of paths, and a seccomp policy from libseccomp.

Why an allow-list: a network namespace does not isolate path-based Unix sockets. With the host's `/`
bound read-only, an attempt could connect to PostgreSQL's socket in /var/run/postgresql (and write the
journal), to /var/run/docker.sock, or to agents under /run/user; connect() needs no write permission
on the mount. So the sandbox's root is an empty, read-only tmpfs, and only what a program needs to run
is bound into it, read-only: the system's programs and libraries (/usr and its /bin, /lib links), the
few /etc files a libc and Python read, /sys, the harness's own Python and the PATH directories it runs
with. /tmp, /var/tmp and /run are fresh tmpfs, each no larger than the command's memory bound (their
pages are charged to its memory cgroup: anchor.fence.cgroups).

Why seccomp too: the repository, the run dir and the PATH directories are shown, and a
socket could sit in one of them (a listener in the repository's .git); and the kernel offers more ways
around a fence than we listed by hand (io_uring's IORING_OP_SOCKET made the AF_UNIX socket our
one-rule filter refused). `POLICY` is built with libseccomp (PyPI's pyseccomp, over the system's
libseccomp2) from the deny lists of Docker's default profile (moby/profiles/seccomp/default.json) and
Flatpak's (flatpak-run.c, setup_seccomp): the mount family, namespaces, io_uring, keyrings, bpf,
perf, ptrace and cross-process memory, userfaultfd, kernel modules and kexec, the clock, swap and
reboot, TIOCSTI, personality beyond the harmless values, clone with namespace flags, clone3 (ENOSYS, so
libc falls back to clone, whose flags the filter can see), and socket() of any family but AF_INET and
AF_INET6 (EACCES: AF_UNIX, AF_NETLINK, AF_PACKET, AF_VSOCK...). A system call
of another ABI (32-bit, x32) is refused as a whole. The same policy is rendered as OCI JSON for gVisor
(`oci_seccomp`), so both runtimes refuse the same calls.
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from anchor.record import Value
from anchor.settings.session import search_path

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys")
"""Bound read-only when present (/bin and /lib are links into /usr on merged-/usr systems)."""
ETC = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/alternatives",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/locale.alias",
    "/etc/python3",
    "/etc/matplotlibrc",
)
"""What a libc, Python and common libraries read from /etc; not /etc itself (shadow, secrets, sockets)."""
NETWORK_ETC = ("/etc/resolv.conf", "/etc/gai.conf")
"""Only for a proposer told to use the network (an agent calling its model)."""
TMP_BYTES = 1 << 30
"""Each fresh tmpfs (/tmp, /var/tmp, /run) holds at most 1 GiB, and never more than the command's memory
bound: it is RAM, charged to the command's memory cgroup."""

_CLONE_NAMESPACES = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET: clone with any of them is refused."""
_AF_INET, _AF_INET6 = 2, 10
"""The only socket families allowed: the sandbox's network namespace is empty, so they reach nothing but
its own loopback. Every other family is refused: AF_UNIX (a host socket on a shown path), AF_NETLINK,
AF_PACKET, AF_VSOCK (the hypervisor's side of a VM host, outside every network namespace) and the rest."""
_LT, _GT, _EQ = 2, 6, 4
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
_PER_LINUX = 0
_MASKED_EQ, _NE = 7, 1
_LOW32 = 0xFFFFFFFF

DENIED = (
    # the mount family: a new mount, a remount, a detached tree, the new mount API
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "move_mount",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "open_tree",
    "mount_setattr",
    "chroot",
    # namespaces: no new one, no entering another
    "unshare",
    "setns",
    # io_uring: its opcodes (IORING_OP_SOCKET, OPENAT...) are not system calls a filter sees
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # kernel keyrings, eBPF, perf, another process's memory, userfaultfd
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "userfaultfd",
    "pidfd_getfd",
    "kcmp",
    # the kernel itself: modules, kexec, reboot, swap, accounting, quotas, the clock, raw I/O ports
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "stime",
    "iopl",
    "ioperm",
    "syslog",
    "vhangup",
    "nfsservctl",
    "lookup_dcookie",
    "get_kernel_syms",
    "query_module",
    "uselib",
    "_sysctl",
    "ustat",
    "sysfs",
    # file handles bypass the mount namespace (the "shocker" escape)
    "open_by_handle_at",
    "name_to_handle_at",
    "sethostname",
    "setdomainname",
)
"""Refused with EPERM, whatever their arguments."""

Rule = tuple[str, int, tuple[tuple[int, int, int, int], ...]]


def policy_rules() -> list[Rule]:
    """The policy as data: (system call, errno, conditions), each condition (argument index, op, mask
    or value, value) in libseccomp's terms: op 7 is MASKED_EQ (`arg & mask == value`), 1 NE, 2 LT, 4 EQ, 6 GT. A
    call matching every condition of one rule is refused with that errno; rules for one call are
    alternatives. Rendered for bwrap by `seccomp_program` and for gVisor by `oci_seccomp`."""
    rules: list[Rule] = [(name, errno.EPERM, ()) for name in DENIED]
    rules.append(("clone3", errno.ENOSYS, ()))  # libc falls back to clone, whose flags are visible
    rules += [("clone", errno.EPERM, ((0, _MASKED_EQ, flag, flag),)) for flag in _CLONE_NAMESPACES]
    # every family but AF_INET and AF_INET6, compared on all 64 bits (a family with high bits set, which
    # the kernel would truncate, is above AF_INET6 and refused)
    refused = [(0, _LT, _AF_INET, 0)] + [(0, _EQ, family, 0) for family in range(_AF_INET + 1, _AF_INET6)]
    rules += [("socket", errno.EACCES, (condition,)) for condition in (*refused, (0, _GT, _AF_INET6, 0))]
    rules += [("ioctl", errno.EPERM, ((1, _MASKED_EQ, _LOW32, request),)) for request in (_TIOCSTI, _TIOCLINUX)]
    rules.append(("personality", errno.EINVAL, ((0, _NE, _PER_LINUX, 0),)))  # Flatpak: no faked uname
    return rules


@lru_cache(maxsize=1)
def seccomp_program() -> bytes | None:
    """The policy compiled by libseccomp into classic BPF for this machine's architecture (the bytes
    bwrap's --seccomp reads); None where libseccomp is not installed (`Sandbox.find` refuses then)."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError):  # the module, or libseccomp.so.2 beneath it
        return None
    policy = seccomp.SyscallFilter(seccomp.ALLOW)
    policy.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.ERRNO(errno.EPERM))  # another ABI: refused whole
    for name, code, conditions in policy_rules():
        try:
            if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) < 0:
                continue  # not a system call of this architecture: nothing to refuse
        except (OSError, ValueError):
            continue
        args = [seccomp.Arg(index, op, a, b) for index, op, a, b in conditions]
        policy.add_rule(seccomp.ERRNO(code), name, *args)
    with tempfile.TemporaryFile() as out:
        policy.export_bpf(out)
        out.seek(0)
        return out.read()


def oci_seccomp() -> dict[str, object]:
    """The same policy as an OCI runtime-spec `linux.seccomp` section (what gVisor's --oci-seccomp
    loads inside its sandbox), but for clone3. The runsc Debian ships answers every refused call with
    EPERM whatever `errnoRet` says, and glibc falls back from clone3 to clone only on ENOSYS: every
    thread a program started failed (numpy's OpenBLAS, Python's threading). A namespace clone3 could
    make is one of gVisor's own kernel, under no capability: no way out of gVisor."""
    ops = {
        _MASKED_EQ: "SCMP_CMP_MASKED_EQ",
        _NE: "SCMP_CMP_NE",
        _LT: "SCMP_CMP_LT",
        _GT: "SCMP_CMP_GT",
        _EQ: "SCMP_CMP_EQ",
    }
    syscalls: list[dict[str, object]] = []
    for name, code, conditions in policy_rules():
        if name == "clone3":
            continue
        rule: dict[str, object] = {"names": [name], "action": "SCMP_ACT_ERRNO", "errnoRet": code}
        if conditions:
            rule["args"] = [{"index": i, "value": a, "valueTwo": b, "op": ops[op]} for i, op, a, b in conditions]
        syscalls.append(rule)
    return {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": syscalls}


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Mount(Value):
    """One entry of what the sandbox shows, in order (a later entry may land inside an earlier one),
    rendered as bwrap arguments or as OCI mounts for gVisor (anchor.fence.sandbox)."""

    kind: str
    """"ro" (bound read-only), "ro-try" (the same, skipped when absent), "rw" (bound writable), "tmpfs"
    (a fresh one of `size` bytes: a directory hidden or made private) or "null" (a file hidden: shown as
    /dev/null)."""
    target: str
    size: int = 0
    source: str = ""
    """What is shown at `target`, when it is not `target` itself: the harness's copy of an editable
    file, the run dir's bounded filesystem, a place in the launcher's staging tree."""


def system_mounts(network: bool = False) -> list[Mount]:
    """The allow-listed system paths (a missing one is skipped)."""
    return [Mount("ro-try", path) for path in (*SYSTEM, *ETC, *(NETWORK_ETC if network else ()))]


def runtime_mounts() -> list[Mount]:
    """The harness's own Python (its virtualenv and the interpreter it was made from) and the PATH
    directories, so `python3` and the tools on PATH resolve inside as they do outside. A `shims`
    directory (pyenv's layout) brings its parent, where the shims find the interpreters."""
    wanted: list[Path] = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent]
    for entry in search_path("").split(os.pathsep):
        if entry and os.path.isabs(entry):
            path = Path(entry)
            wanted.append(path.parent if path.name == "shims" else path)
    seen: list[str] = []
    for path in wanted:
        for shown in {str(path), str(path.resolve())}:  # a link's own path and where it leads
            if shown not in seen and shown != "/" and not any(shown.startswith(s + "/") for s in SYSTEM):
                seen.append(shown)
    # parents first; a path inside one already shown is shown by it (the same files: one bind, not two)
    kept: list[str] = []
    for shown in sorted(seen, key=len):
        if not any(shown.startswith(parent + "/") for parent in kept):
            kept.append(shown)
    return [Mount("ro-try", shown) for shown in kept]


def tmpfs_mounts(size: int) -> list[Mount]:
    """Fresh /tmp, /var/tmp and /run, each at most `size` bytes (min(TMP_BYTES, the memory bound))."""
    return [Mount("tmpfs", path, size) for path in ("/tmp", "/var/tmp", "/run")]  # noqa: S108 - private


def seccomp_file() -> str:
    """The compiled policy written to a private temporary file (the launcher opens it as descriptor 3
    for bwrap's `--seccomp 3`, then removes it)."""
    program = seccomp_program()
    if program is None:
        from anchor.errors import ToolchainMissing

        raise ToolchainMissing(
            "libseccomp is not installed: the sandbox's system-call policy cannot be built"
            " (hint: apt-get install libseccomp2, then `make install`)"
        )
    fd, path = tempfile.mkstemp(prefix="anchor-seccomp-", suffix=".bpf")
    with os.fdopen(fd, "wb") as out:
        out.write(program)
    return path
