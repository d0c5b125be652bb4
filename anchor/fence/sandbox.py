"""Run the code under measurement inside bubblewrap or gVisor: never root, no capability, no network,
the repository read-only except the editable files, a private /tmp, a process namespace of its own, a
seccomp policy from libseccomp, an allow-listed environment.

Why: the attempt is code an agent wrote. Unconfined it can read the signing key from its environment
or from `/proc/<harness>/environ`, read the keystore or the journal, rewrite the ledger or the
evaluator, or fetch answers over the network. In the sandbox:
- it runs in a user namespace of its own as an unprivileged user (uid/gid 65534) with every capability
  dropped and no way to make another user namespace (`--unshare-user --disable-userns --cap-drop ALL`),
  so CapEff is 0 even under a root harness and the read-only mounts it inherits are locked: a remount
  (`mount -o remount,bind,rw <repo>` made the repository writable) is refused, and the
  seccomp policy (anchor.fence.policy) refuses the mount family, namespaces and io_uring besides;
- the filesystem is an allow-list (anchor.fence.policy): the system's programs and libraries, a few
  /etc files, the harness's Python and PATH, the repository, read-only; fresh /tmp, /var/tmp and /run;
  no host socket is reachable (nor could one be made: AF_UNIX sockets are refused by seccomp); the
  data directory, the search's work dir and any keystore file are hidden (empty) where they would show;
  only the run dir and the editable files are writable (never the repository's .git);
- network, PID, IPC, UTS and cgroup namespaces are new (no interface but loopback, no host process
  visible), it is a session of its own (no terminal to push input into), and it dies with the harness;
- the environment is cleared and only PATH, the locale, TMPDIR=/tmp, HOME=<run dir>/home and
  PYTHONDONTWRITEBYTECODE are set (`allowed_environment`).
`runtime="gvisor"` runs the same command with the same mounts and the same policy under gVisor's runsc
(rootless, `--network=none`, no host Unix socket): the system calls are answered by gVisor's own kernel.
Without bubblewrap (or user namespaces, or libseccomp) a search refuses to run unless `--no-sandbox` is
given; the ledger entry of every attempt records how it ran (`sandbox`: "bubblewrap", "gvisor" or
"none"), under the ledger's hash chain.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from anchor.errors import ToolchainMissing
from anchor.fence.identity import ATTEMPT_USER, Identity, attempt_identity, give
from anchor.fence.policy import Mount
from anchor.record import Value
from anchor.settings.session import inherited

if TYPE_CHECKING:
    from anchor.fence.cgroups import Limits
    from anchor.settings.session import Settings

ALLOWED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def allowed_environment(run_dir: Path, private_tmp: bool = False, passed: tuple[str, ...] = ()) -> dict[str, str]:
    """The attempt's (or proposer's) whole environment: nothing of ours but PATH, the locale and the
    variables the contract names (`pass_env`, never Anchor's); its temporary files in the sandbox's
    private /tmp, or unconfined in the run dir (never the shared /tmp)."""
    home, tmp = run_dir / "home", run_dir / "tmp"
    if os.path.lexists(home) and (home.is_symlink() or not home.is_dir()):
        home.unlink()  # the last command's doing (a link, a file): the run dir is the harness's, HOME a folder
    home.mkdir(parents=True, exist_ok=True)
    if not private_tmp:
        tmp.mkdir(parents=True, exist_ok=True)
    env = inherited((*ALLOWED, *passed))
    tmpdir = "/tmp" if private_tmp else str(tmp)  # noqa: S108 - inside the sandbox /tmp is a private tmpfs
    return {**env, "HOME": str(home), "TMPDIR": tmpdir, "PYTHONDONTWRITEBYTECODE": "1"}


RUNTIMES = ("bubblewrap", "gvisor")
CHOICES = ("auto", *RUNTIMES)
"""What a user may ask for: "auto" (the default: gVisor where it runs here, else bubblewrap: `default_runtime`)."""
SANDBOX_UID = 65534
"""Who the command is inside: nobody, in a user namespace of its own (mapped to the harness's uid)."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Sandbox(Value):
    program: str
    """bwrap, or runsc for `runtime="gvisor"`."""
    repo: Path
    editable: tuple[str, ...]
    hidden: tuple[Path, ...]
    """Directories shown empty and files shown as /dev/null: the data dir, the work dir, keystores."""
    holdout: tuple[Path, ...] = ()
    """The contract's holdout data, hidden the same way (after the repository is shown, since it may
    lie inside it); `revealing()` is the sandbox of the holdout run, which sees it (read-only)."""
    shows_holdout: bool = False
    pass_env: tuple[str, ...] = ()
    """The contract's `pass_env`: set inside as they are outside."""
    read_only: tuple[Path, ...] = ()
    """Shown read-only even where the rest is hidden: the attempt's outputs, to its evaluator."""
    edits: bool = True
    """Whether the editable files are writable (False for the evaluator, which only reads)."""
    inputs: tuple[Path, ...] = ()
    """The contract's declared inputs outside the repository, shown read-only (the allow-listed root
    would hide them): the data the measurement reads, whose digests every record binds."""
    runtime: str = "bubblewrap"
    """The runtime found ("bubblewrap" or "gvisor"), never "auto": what every record names."""
    tmpfs_bytes: int = 1 << 30
    """Each private tmpfs's size: at most the command's memory bound (its pages are charged to it)."""
    identity: Identity | None = None
    """Who the runtime and the command are on the host (anchor.fence.identity): `anchor-attempt` under a
    root harness, None (the harness's own, unprivileged uid) otherwise. Never uid 0."""

    def revealing(self) -> Sandbox:
        return replace(self, shows_holdout=True)

    def evaluating(self, outputs: Path) -> Sandbox:
        """The evaluator's sandbox: the attempt's run dir read-only, the editable files read-only, its
        own directory the only writable one (the `run_dir` of `argv`)."""
        return replace(self, read_only=(outputs.resolve(),), edits=False)

    @classmethod
    def find(
        cls,
        repo: Path,
        editable: tuple[str, ...],
        hidden: tuple[Path, ...],
        holdout: tuple[Path, ...] = (),
        pass_env: tuple[str, ...] = (),
        inputs: tuple[Path, ...] = (),
        runtime: str = "auto",
        limits: Limits | None = None,
    ) -> Sandbox:
        """The sandbox, or `ToolchainMissing` when its runtime is absent or cannot make what it needs
        here (namespaces, a user namespace, the seccomp policy). `runtime` "auto" is `default_runtime()`;
        `limits` the attempts' (its private /tmp is no larger than their memory bound; the defaults when
        None)."""
        from anchor.errors import BadInput
        from anchor.fence.cgroups import Limits
        from anchor.fence.policy import TMP_BYTES, seccomp_program

        check_runtime(runtime)
        identity = attempt_identity()
        if runtime == "auto":
            runtime = default_runtime()
        if seccomp_program() is None:
            raise ToolchainMissing(
                "libseccomp is not installed: the sandbox's system-call policy cannot be built"
                " (hint: apt-get install libseccomp2 and `make install`,"
                " or run with --no-sandbox)"
            )
        program = _probe(runtime, identity)
        shown = tuple(p.resolve() for p in hidden if p.exists())
        hidden_holdout = tuple(p.resolve() for p in holdout if p.exists())
        outside = tuple(p.resolve() for p in inputs if p.exists() and not p.resolve().is_relative_to(repo.resolve()))
        for path in outside:  # bound after the hidden ones: an input there would show what they hide
            clash = next((h for h in shown if path.is_relative_to(h) or h.is_relative_to(path)), None)
            if clash is not None:
                raise BadInput(
                    f"inputs: {path} overlaps {clash}, which the sandbox hides from the code under"
                    " measurement (the data dir, the work dir, a keystore)",
                    detail={"field": "inputs", "path": str(path)},
                )
        for path in (*shown, *hidden_holdout):  # the editable files are copied for the command: never these
            for rel in editable:
                target = (repo / rel).resolve()
                # hidden inside an editable copy, or an editable inside what is hidden within the repository
                inside = target.is_relative_to(path) and path.is_relative_to(repo.resolve())
                if path == target or path.is_relative_to(target) or inside:
                    field = "holdout_data" if path in hidden_holdout else "editable"
                    raise BadInput(
                        f"{field}: {path} overlaps the editable {rel!r}, which the command writes a copy"
                        " of: what is hidden from it cannot lie there",
                        detail={"field": field, "path": str(path)},
                    )
        tmpfs = min(TMP_BYTES, (limits or Limits()).memory_bytes)
        return cls(
            program,
            repo.resolve(),
            editable,
            shown,
            hidden_holdout,
            pass_env=pass_env,
            inputs=outside,
            runtime=runtime,
            tmpfs_bytes=tmpfs,
            identity=identity,
        )

    def mounts(
        self,
        run_dir: Path,
        network: bool = False,
        copies: dict[str, Path] | None = None,
        bounded_dir: Path | None = None,
    ) -> list[Mount]:
        """What the command sees, in order (anchor.fence.policy.Mount): the allow-listed root, the
        hidden paths, the repository read-only, the inputs, the holdout (hidden or shown), the editable
        files, the read-only outputs, the run dir writable. The same list for both runtimes.

        The editable files are shown writable only as `copies` (editable path -> the harness's copy of
        it, anchor.fence.workspace): the command never writes the user's repository; what it leaves
        there is read back by the harness as hostile data. Without copies they are shown read-only.
        `bounded_dir` is what is shown at the run dir's path: a filesystem of its own whose size and
        inode count the kernel bounds (anchor.fence.quota), copied to the run dir once the command ends."""
        from anchor.fence.policy import Mount, runtime_mounts, system_mounts, tmpfs_mounts

        plan = [*system_mounts(network), *tmpfs_mounts(self.tmpfs_bytes), *runtime_mounts()]

        def hide(path: Path) -> Mount:
            return Mount("tmpfs", str(path), self.tmpfs_bytes) if path.is_dir() else Mount("null", str(path))

        # a hidden path that holds the repository is hidden before the repository is shown inside it; one
        # that lies inside the repository (a work dir, a keystore kept there) after, or the bind of the
        # repository would show it again
        inside = [path for path in self.hidden if path.is_relative_to(self.repo)]
        plan += [hide(path) for path in self.hidden if path not in inside]
        plan.append(Mount("ro", str(self.repo)))
        plan += [Mount("ro", str(path)) for path in self.inputs]  # declared data; never the holdout
        plan += [hide(path) for path in inside]
        for path in self.holdout:
            if self.shows_holdout:  # bound explicitly: it may lie where the rest is hidden (/tmp, the data dir)
                plan.append(Mount("ro", str(path)))
            else:
                plan.append(Mount("tmpfs", str(path), self.tmpfs_bytes) if path.is_dir() else Mount("null", str(path)))
        for rel in self.editable if self.edits else ():
            target, copy = self.repo / rel, (copies or {}).get(rel)
            if copy is not None and target.exists() and not _in_git_dir(self.repo, target):  # never .git
                plan.append(Mount("rw", str(target), source=str(copy)))
        plan += [Mount("ro", str(path)) for path in self.read_only]
        plan.append(Mount("rw", str(run_dir), source=str(bounded_dir or run_dir)))
        return plan

    def argv(
        self,
        command: str,
        run_dir: Path,
        network: bool = False,
        extra_env: dict[str, str] | None = None,
        processes: int = 512,
        copies: dict[str, Path] | None = None,
        bounded_dir: Path | None = None,
    ) -> list[str]:
        """The command line running `command` (a shell line) in the repository, sandboxed; `network`
        keeps the host's network (the proposer, when told to: an agent calling its model), never for
        an attempt. `processes` is the bound gVisor's kernel holds the command to (under bubblewrap the
        host's pids cgroup holds it: anchor.fence.cgroups).

        The whole line starts from the allow-listed environment (`env -i`): the runtime's own process,
        which is the sandbox's pid 1 under bubblewrap, holds nothing of the harness's environment for
        `/proc/1/environ` to show. Under a root harness it then drops to `self.identity` before any
        namespace is made (`launcher`)."""
        run_dir = run_dir.resolve()
        env = {**allowed_environment(run_dir, True, self.pass_env), **(extra_env or {})}
        plan = self.mounts(run_dir, network, copies, bounded_dir)
        staged: dict[str, str] = {}
        if self.identity is not None:  # every bind source is reached through the launcher's staging tree
            plan, staged = _staged(plan, self.identity)
        if self.runtime == "gvisor":
            inner = _runsc_argv(self.program, plan, command, self.repo, env, network, processes, self.identity)
        else:
            inner = _bwrap_argv(self.program, plan, command, self.repo, env, network)
        return ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in env.items()), *launcher(inner, staged, self.identity)]


def check_runtime(runtime: str) -> str:
    """`runtime`, or `BadInput` naming the near one (checked before a command writes anything)."""
    if runtime not in CHOICES:
        from anchor.errors import BadInput, did_you_mean

        hint = did_you_mean(runtime, CHOICES)
        raise BadInput(
            f"sandbox_runtime: {runtime!r} is neither auto, gvisor nor bubblewrap{hint}",
            detail={"field": "sandbox_runtime"},
        )
    return runtime


def _in_git_dir(repo: Path, target: Path) -> bool:
    return (repo / ".git") == target or target.is_relative_to(repo / ".git")


def _probe(runtime: str, identity: Identity | None) -> str:
    """The runtime's program, once it has shown it can run a command here as the sandbox will: as
    `identity` when the harness is root. Probed once per process."""
    hint = "run with --no-sandbox"
    if identity is not None:
        for tool in ("unshare", "setpriv", "mount"):
            if shutil.which(tool) is None:
                raise ToolchainMissing(
                    f"{tool} (util-linux) is not installed: a root harness needs it to drop to"
                    f" {ATTEMPT_USER} before the sandbox is made (hint: apt-get install"
                    f" util-linux mount, or {hint})"
                )
    if runtime == "gvisor":
        runsc = shutil.which("runsc")
        if runsc is None:
            raise ToolchainMissing(
                "gVisor (runsc) is not installed: install it (`make sandbox`, or apt-get install"
                f" runsc), use --sandbox-runtime bubblewrap, or {hint}"
            )
        reason = _probe_once(runtime, runsc, identity)
        if reason is not None:
            raise ToolchainMissing(
                f"gVisor (runsc) cannot run a sandbox here ({reason}): use --sandbox-runtime bubblewrap, or {hint}"
            )
        return runsc
    bwrap = shutil.which("bwrap")
    hint = f"install bubblewrap (`make sandbox`, or apt-get install bubblewrap), or {hint}"
    if bwrap is None:
        raise ToolchainMissing(f"bubblewrap (bwrap) is not installed: {hint}")
    reason = _probe_once(runtime, bwrap, identity)
    if reason is not None:
        if "namespace" in reason.lower() or "permitted" in reason.lower():
            raise ToolchainMissing(
                f"bubblewrap cannot make a user namespace here ({reason}): the sandbox never runs code as root or"
                " with a capability, and without a user namespace it could not drop them (hint: enable user"
                " namespaces, sysctl user.max_user_namespaces=15000 or kernel.unprivileged_userns_clone=1,"
                f" or {hint.split(', or ')[-1]})"
            )
        raise ToolchainMissing(f"bubblewrap cannot create a sandbox here ({reason}): {hint}")
    return bwrap


@lru_cache(maxsize=8)
def _probe_once(runtime: str, program: str, identity: Identity | None) -> str | None:
    """None when `program` ran `true` in a sandbox of its kind here, else why not (its stderr's start)."""
    if runtime == "gvisor":
        return _probe_runsc(program, identity)
    argv = launcher([program, "--ro-bind", "/", "/", "--unshare-all", *_USER, "true"], {}, identity)
    probe = subprocess.run(["/usr/bin/env", "-i", *argv], capture_output=True)
    return None if probe.returncode == 0 else probe.stderr.decode("utf-8", "replace").strip()[:200] or "failed"


def _probe_runsc(runsc: str, identity: Identity | None) -> str | None:
    plan = [Mount("ro-try", path) for path in ("/usr", "/bin", "/lib", "/lib64")]
    argv = _runsc_argv(runsc, plan, "true", Path("/"), {"PATH": "/usr/bin:/bin"}, False, 16, identity)
    try:
        probe = subprocess.run(["/usr/bin/env", "-i", *launcher(argv, {}, identity)], capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "it did not finish within 60 s"
    return None if probe.returncode == 0 else probe.stderr.decode("utf-8", "replace").strip()[-200:] or "failed"


def default_runtime() -> str:
    """gVisor where runsc is installed and runs a sandbox here, bubblewrap otherwise: gVisor answers the
    command's system calls with a kernel of its own, so a hole in the host's kernel is not the
    command's to use. The choice is recorded in every attempt's ledger entry (`sandbox`)."""
    runsc = shutil.which("runsc")
    if runsc is None:
        return "bubblewrap"
    try:
        identity = attempt_identity()
    except ToolchainMissing:
        return "bubblewrap"  # Sandbox.find says why, for the runtime it is asked for
    return "gvisor" if _probe_once("gvisor", runsc, identity) is None else "bubblewrap"


_USER = [
    "--unshare-user",
    "--disable-userns",
    "--uid",
    str(SANDBOX_UID),
    "--gid",
    str(SANDBOX_UID),
    "--cap-drop",
    "ALL",
]
"""Never root inside: a user namespace of its own, as nobody, no capability, no nested user namespace."""

STAGE_ROOT = Path("/run/anchor-fence")
"""Where a root harness's launcher mounts, in a mount namespace of its own, the tree through which the
dropped identity reaches what it is shown (`_staged`); the run dirs' bounded filesystems live beside it
(anchor.fence.quota). Root's, mode 0711: others may pass through to what is mounted below, never list."""

_LAUNCH = r"""set -eu
stage=$1 uid=$2 gid=$3 filter=$4 count=$5 mount=$6 setpriv=$7
shift 7
command_path=$PATH
PATH=/usr/sbin:/usr/bin:/sbin:/bin  # what root runs here (mkdir, rm) is the system's, not from the command's PATH
if [ "$count" -gt 0 ]; then
  "$mount" -t tmpfs -o mode=0755,size=1m,nosuid,nodev anchor-fence "$stage"
  i=0
  while [ "$i" -lt "$count" ]; do
    if [ -d "$1" ]; then mkdir "$stage/$i"; else : > "$stage/$i"; fi
    "$mount" --rbind -- "$1" "$stage/$i"
    i=$((i + 1))
    shift
  done
fi
if [ -n "$filter" ]; then exec 3<"$filter"; rm -f -- "$filter"; fi
PATH=$command_path
if [ -n "$uid" ]; then
  exec "$setpriv" --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --bounding-set=-all -- "$@"
fi
exec "$@"
"""
"""The launcher, a POSIX shell script: as root, in a private mount namespace, bind each source the
sandbox shows under a tmpfs only this namespace has (so a root-only ancestor, such as /root of a
pyenv or pytest's 0700 temporary root, is no obstacle and no host permission is loosened); open the
seccomp policy as descriptor 3; then drop every privilege to the attempt's identity and exec the
runtime. Nothing of root runs past the exec."""


def launcher(inner: list[str], staged: dict[str, str], identity: Identity | None) -> list[str]:
    """`inner` (a runtime's command line) started by the launcher: `staged` (staging path -> source,
    in order) bound first, the seccomp file `inner` names as `--seccomp 3` opened, then dropped to
    `identity`. Without an identity (a harness that is not root) nothing is staged or dropped."""
    filter_path = ""
    if "--seccomp" in inner:
        at = inner.index("--seccomp")
        filter_path, inner = inner[at + 1], [*inner[:at], "--seccomp", "3", *inner[at + 2 :]]
    uid, gid = ("", "") if identity is None else (str(identity.uid), str(identity.gid))
    # the tools by path: the launcher's PATH is already the command's, not the harness's
    tools = [shutil.which(tool) or f"/usr/bin/{tool}" for tool in ("mount", "setpriv")]
    args = [
        "/bin/sh",
        "-c",
        _LAUNCH,
        "anchor-fence",
        str(STAGE_ROOT / "stage"),
        uid,
        gid,
        filter_path,
        str(len(staged)),
        *tools,
        *staged.values(),
        *inner,
    ]
    if staged:
        stage_root()
        unshare = shutil.which("unshare") or "/usr/bin/unshare"
        return [unshare, "--mount", "--propagation", "private", "--", *args]
    return args


def stage_root() -> None:
    """Make STAGE_ROOT (root's, 0711) and its `stage` mount point, refusing anything else found there."""
    import stat

    for path, mode in ((STAGE_ROOT, 0o711), (STAGE_ROOT / "stage", 0o700)):
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, mode)
        found = os.lstat(path)
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != 0:
            raise ToolchainMissing(
                f"{path} is not a directory of root's: the sandbox's staging tree cannot be"
                " made there (hint: remove it)"
            )
        os.chmod(path, mode)


def _staged(plan: list[Mount], identity: Identity | None = None) -> tuple[list[Mount], dict[str, str]]:
    """The plan with every bind source the identity cannot reach (a root-only ancestor: a pyenv under
    /root, pytest's 0700 temporary root) replaced by its place in the launcher's staging tree, and that
    tree (staging path -> source). A source that does not exist is left out (an `ro-try`), or kept for
    the runtime to refuse (`ro`, `rw`)."""
    from anchor.fence.policy import ETC, SYSTEM

    stage = STAGE_ROOT / "stage"
    staged: dict[str, str] = {}
    out: list[Mount] = []
    for mount in plan:
        source = mount.source or mount.target
        public = source in ETC or any(source == s or source.startswith(s + "/") for s in SYSTEM)
        if mount.kind in ("tmpfs", "null") or public:
            out.append(mount)
            continue
        if not os.path.exists(source):
            if mount.kind != "ro-try":
                out.append(mount)
            continue
        if identity is not None and reachable(source, identity):
            out.append(mount)  # the runtime reaches it as the identity: nothing to stage
            continue
        at = str(stage / str(len(staged)))
        staged[at] = source
        out.append(replace(mount, kind="ro" if mount.kind == "ro-try" else mount.kind, source=at))
    return out, staged


def reachable(path: str, identity: Identity) -> bool:
    """Whether `identity` may pass through every directory above `path` and read it (list it, for a
    directory), by the mode bits and owners the host has now."""
    import stat

    def allows(found: os.stat_result, bits: int) -> bool:
        shift = 6 if found.st_uid == identity.uid else 3 if found.st_gid == identity.gid else 0
        return (found.st_mode >> shift) & bits == bits

    try:
        target = os.stat(path)
        parts = Path(path).parents
        if not all(allows(os.stat(parent), 1) for parent in parts):
            return False
    except OSError:
        return False
    return allows(target, 5 if stat.S_ISDIR(target.st_mode) else 4)


def _bwrap_argv(
    bwrap: str, plan: list[Mount], command: str, repo: Path, env: dict[str, str], network: bool
) -> list[str]:
    """bwrap's command line, its seccomp policy named as `--seccomp FILE` (the launcher opens it)."""
    args = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-all",
        *_USER,
        "--tmpfs",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        # the host's kernel settings are never the command's to write, whoever it maps to
        "--ro-bind",
        "/proc/sys",
        "/proc/sys",
        "--ro-bind-try",
        "/proc/sysrq-trigger",
        "/proc/sysrq-trigger",
    ]
    if network:
        args.append("--share-net")
    for mount in plan:
        if mount.kind == "tmpfs":
            args += ["--size", str(mount.size), "--tmpfs", mount.target]
        elif mount.kind == "null":
            args += ["--ro-bind", "/dev/null", mount.target]
        else:
            flag = {"ro": "--ro-bind", "ro-try": "--ro-bind-try", "rw": "--bind"}[mount.kind]
            args += [flag, mount.source or mount.target, mount.target]
    # last: the root tmpfs itself read-only (the directories made for the mounts above included)
    args += ["--remount-ro", "/", "--chdir", str(repo), "--clearenv"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    from anchor.fence.policy import seccomp_file

    return [*args[:1], "--seccomp", seccomp_file(), *args[1:], "/bin/sh", "-c", command]


def _runsc_argv(
    runsc: str,
    plan: list[Mount],
    command: str,
    repo: Path,
    env: dict[str, str],
    network: bool,
    processes: int,
    identity: Identity | None,
) -> list[str]:
    """runsc's command line for an OCI bundle written for this one command (a private directory holding
    config.json and an empty root, the identity's when the harness is root), removed by the shell that
    waits on runsc."""
    import json
    import tempfile

    from anchor.fence.policy import oci_seccomp

    bundle = Path(tempfile.mkdtemp(prefix="anchor-gvisor-"))
    (bundle / "root").mkdir()
    mounts: list[dict[str, object]] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        # runsc does not apply the OCI spec's readonlyPaths: gVisor's own /proc/sys is hidden, read-only
        {
            "destination": "/proc/sys",
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["ro", "nosuid", "nodev", "noexec", "size=4k"],
        },
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
    ]
    for mount in plan:
        if mount.kind == "ro-try" and not os.path.exists(mount.source or mount.target):
            continue
        if mount.kind == "tmpfs":
            mounts.append(
                {
                    "destination": mount.target,
                    "type": "tmpfs",
                    "source": "tmpfs",
                    "options": ["nosuid", "nodev", f"size={mount.size}"],
                }
            )
        else:
            source = "/dev/null" if mount.kind == "null" else (mount.source or mount.target)
            options = ["rbind", "rw" if mount.kind == "rw" else "ro"]
            mounts.append({"destination": mount.target, "type": "bind", "source": source, "options": options})
    namespaces = [{"type": kind} for kind in ("pid", "ipc", "uts", "mount", *(() if network else ("network",)))]
    config = {
        "ociVersion": "1.0.0",
        # uid 0 of gVisor's own kernel, with no capability: rootless runsc maps only its own host uid
        # (the attempt's identity under a root harness), so only what that uid may write is writable
        "process": {
            "terminal": False,
            "user": {"uid": 0, "gid": 0},
            "args": ["/bin/sh", "-c", command],
            "env": [f"{k}={v}" for k, v in env.items()],
            "cwd": str(repo),
            "capabilities": {},
            "noNewPrivileges": True,
            "rlimits": [{"type": "RLIMIT_NPROC", "hard": processes, "soft": processes}],
        },
        "root": {"path": "root", "readonly": True},
        "hostname": "sandbox",
        "mounts": mounts,
        "linux": {"namespaces": namespaces, "seccomp": oci_seccomp()},
    }
    (bundle / "config.json").write_text(json.dumps(config))
    for made in (bundle, bundle / "root", bundle / "config.json"):
        give(made, identity)
    name = bundle.name.removeprefix("anchor-gvisor-")
    flags = [
        "--rootless",
        "--ignore-cgroups",
        "--oci-seccomp",
        "--host-uds=none",
        f"--root={bundle / 'state'}",
        "--network=" + ("host" if network else "none"),
    ]
    script = '"$@"; code=$?; rm -rf "$0"; exit $code'
    return ["/bin/sh", "-c", script, str(bundle), runsc, *flags, "run", "--bundle", str(bundle), name]


def refuse_unconfined(settings: Settings) -> None:
    """`--no-sandbox` with a key in reach is refused: unconfined code runs as this user, so
    it can read a secret out of our /proc/<pid>/environ (or a keystore file) however carefully its own
    environment was cleaned. Checked: every ANCHOR_* secret variable (anchor.settings.session.is_secret)
    and a configured keystore. Other secrets of the shell are the caller's to keep out."""
    from anchor.errors import BadInput

    held = settings.env.held_secrets()
    if settings.keystore and "ANCHOR_KEYSTORE" not in held:
        held.append("ANCHOR_KEYSTORE")
    if held:
        them = "it" if len(held) == 1 else "them"
        raise BadInput(
            f"--no-sandbox: refused while {', '.join(held)} {'is' if len(held) == 1 else 'are'} set: unconfined code"
            f" runs as this user and could read {them} (from /proc/{os.getpid()}/environ or the keystore file)"
            f" (hint: drop --no-sandbox and install bubblewrap with `make sandbox`,"
            f" or unset {them} for an unconfined run)",
            detail={"field": "no_sandbox", "variables": held},
        )
