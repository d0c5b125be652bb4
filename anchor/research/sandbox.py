"""Run the code under measurement inside bubblewrap or gVisor: never root, no capability, no network,
the repository read-only except the editable files, a private /tmp, a process namespace of its own, a
seccomp policy from libseccomp, an allow-listed environment.

Why: the attempt is code an agent wrote. Unconfined it can read the signing key from its environment
or from `/proc/<harness>/environ`, read the keystore or the journal, rewrite the ledger or the
evaluator, or fetch answers over the network. In the sandbox:
- it runs in a user namespace of its own as an unprivileged user (uid/gid 65534) with every capability
  dropped and no way to make another user namespace (`--unshare-user --disable-userns --cap-drop ALL`),
  so CapEff is 0 even under a root harness and the read-only mounts it inherits are locked: a remount
  (issue 41: `mount -o remount,bind,rw <repo>` made the repository writable) is refused, and the
  seccomp policy (anchor.research.fence) refuses the mount family, namespaces and io_uring besides;
- the filesystem is an allow-list (anchor.research.fence): the system's programs and libraries, a few
  /etc files, the harness's Python and PATH, the repository, read-only; fresh /tmp, /var/tmp and /run;
  no host socket is reachable (nor could one be made: AF_UNIX sockets are refused by seccomp); the
  data directory, the search's work dir and any keystore file are hidden (empty) where they would show;
  only the run dir and the editable files are writable (never the repository's .git);
- network, PID, IPC, UTS and cgroup namespaces are new (no interface but loopback, no host process
  visible), it is a session of its own (no terminal to push input into), and it dies with the harness;
- the environment is cleared and only PATH, the locale, TMPDIR=/tmp, HOME=<run dir>/home and
  PYTHONDONTWRITEBYTECODE are set (`allowed_env`).
`runtime="gvisor"` runs the same command with the same mounts and the same policy under gVisor's runsc
(rootless, `--network=none`, no host Unix socket): the system calls are answered by gVisor's own kernel.
Without bubblewrap (or user namespaces, or libseccomp) a search refuses to run unless `--no-sandbox` is
given; the ledger entry of every attempt records how it ran (`sandbox`: "bubblewrap", "gvisor" or
"none"), under the ledger's hash chain.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from anchor.errors import ToolchainMissing

if TYPE_CHECKING:
    from anchor.research.fence import Mount
    from anchor.settings.session import Settings

ALLOWED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def allowed_env(run_dir: Path, private_tmp: bool = False, passed: tuple[str, ...] = ()) -> dict[str, str]:
    """The attempt's (or proposer's) whole environment: nothing of ours but PATH, the locale and the
    variables the contract names (`pass_env`, never Anchor's); its temporary files in the sandbox's
    private /tmp, or unconfined in the run dir (never the shared /tmp)."""
    home, tmp = run_dir / "home", run_dir / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    if not private_tmp:
        tmp.mkdir(parents=True, exist_ok=True)
    env = {k: os.environ[k] for k in (*ALLOWED, *passed) if k in os.environ}
    tmpdir = "/tmp" if private_tmp else str(tmp)  # noqa: S108 - inside the sandbox /tmp is a private tmpfs
    return {**env, "HOME": str(home), "TMPDIR": tmpdir, "PYTHONDONTWRITEBYTECODE": "1"}


RUNTIMES = ("bubblewrap", "gvisor")
SANDBOX_UID = 65534
"""Who the command is inside: nobody, in a user namespace of its own (mapped to the harness's uid)."""


@dataclass(frozen=True, slots=True)
class Sandbox:
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
    tmpfs_bytes: int = 1 << 30
    """Each private tmpfs's size: at most the command's memory bound (its pages are charged to it)."""

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
        runtime: str = "bubblewrap",
    ) -> Sandbox:
        """The sandbox, or `ToolchainMissing` when its runtime is absent or cannot make what it needs
        here (namespaces, a user namespace, the seccomp policy)."""
        from anchor.errors import BadInput
        from anchor.research.cgroups import Limits
        from anchor.research.fence import TMP_BYTES, seccomp_program

        check_runtime(runtime)
        if seccomp_program() is None:
            raise ToolchainMissing("libseccomp is not installed: the sandbox's system-call policy cannot be built"
                                   " (hint: apt-get install libseccomp2 and `make install`,"
                                   " or run with --no-sandbox)")  # fmt: skip
        program = _probe(runtime)
        shown = tuple(p.resolve() for p in hidden if p.exists())
        hidden_holdout = tuple(p.resolve() for p in holdout if p.exists())
        outside = tuple(p.resolve() for p in inputs if p.exists() and not p.resolve().is_relative_to(repo.resolve()))
        for path in outside:  # bound after the hidden ones: an input there would show what they hide
            clash = next((h for h in shown if path.is_relative_to(h) or h.is_relative_to(path)), None)
            if clash is not None:
                raise BadInput(f"inputs: {path} overlaps {clash}, which the sandbox hides from the code under"
                               " measurement (the data dir, the work dir, a keystore)",
                               detail={"field": "inputs", "path": str(path)})  # fmt: skip
        tmpfs = min(TMP_BYTES, Limits.from_env().memory_bytes)
        return cls(program, repo.resolve(), editable, shown, hidden_holdout, pass_env=pass_env, inputs=outside,
                   runtime=runtime, tmpfs_bytes=tmpfs)  # fmt: skip

    def mounts(self, run_dir: Path, network: bool = False) -> list[Mount]:
        """What the command sees, in order (anchor.research.fence.Mount): the allow-listed root, the
        hidden paths, the repository read-only, the inputs, the holdout (hidden or shown), the editable
        files, the read-only outputs, the run dir writable. The same list for both runtimes."""
        from anchor.research.fence import Mount, runtime_mounts, system_mounts, tmpfs_mounts

        plan = [*system_mounts(network), *tmpfs_mounts(self.tmpfs_bytes), *runtime_mounts()]
        for path in self.hidden:  # mounted before the binds below, which may lie inside them
            plan.append(Mount("tmpfs", str(path), self.tmpfs_bytes) if path.is_dir() else Mount("null", str(path)))
        plan.append(Mount("ro", str(self.repo)))
        plan += [Mount("ro", str(path)) for path in self.inputs]  # declared data; never the holdout
        for path in self.holdout:
            if self.shows_holdout:  # bound explicitly: it may lie where the rest is hidden (/tmp, the data dir)
                plan.append(Mount("ro", str(path)))
            else:
                plan.append(Mount("tmpfs", str(path), self.tmpfs_bytes) if path.is_dir() else Mount("null", str(path)))
        for rel in self.editable if self.edits else ():
            target = self.repo / rel
            if target.exists() and not _in_git_dir(self.repo, target):  # .git is never shown writable
                plan.append(Mount("rw", str(target)))
        plan += [Mount("ro", str(path)) for path in self.read_only]
        plan.append(Mount("rw", str(run_dir)))
        return plan

    def argv(
        self, command: str, run_dir: Path, network: bool = False, extra_env: dict[str, str] | None = None,
        processes: int = 512,
    ) -> list[str]:  # fmt: skip
        """The command line running `command` (a shell line) in the repository, sandboxed; `network`
        keeps the host's network (the proposer, when told to: an agent calling its model), never for
        an attempt. `processes` is the bound gVisor's kernel holds the command to (under bubblewrap the
        host's pids cgroup holds it: anchor.research.cgroups)."""
        run_dir = run_dir.resolve()
        env = {**allowed_env(run_dir, True, self.pass_env), **(extra_env or {})}
        plan = self.mounts(run_dir, network)
        if self.runtime == "gvisor":
            return _runsc_argv(self.program, plan, command, self.repo, env, network, processes)
        return _bwrap_argv(self.program, plan, command, self.repo, env, network)


def check_runtime(runtime: str) -> str:
    """`runtime`, or `BadInput` naming the near one (checked before a command writes anything)."""
    if runtime not in RUNTIMES:
        from anchor.errors import BadInput, did_you_mean

        hint = did_you_mean(runtime, RUNTIMES)
        raise BadInput(f"sandbox_runtime: {runtime!r} is neither bubblewrap nor gvisor{hint}",
                       detail={"field": "sandbox_runtime"})  # fmt: skip
    return runtime


def _in_git_dir(repo: Path, target: Path) -> bool:
    return (repo / ".git") == target or target.is_relative_to(repo / ".git")


def _probe(runtime: str) -> str:
    """The runtime's program, once it has shown it can run a command here as the sandbox will."""
    hint = "run with --no-sandbox"
    if runtime == "gvisor":
        runsc = shutil.which("runsc")
        if runsc is None:
            raise ToolchainMissing("gVisor (runsc) is not installed: install it (`make sandbox`, or apt-get install"
                                   f" runsc), use --sandbox-runtime bubblewrap, or {hint}")  # fmt: skip
        return runsc
    bwrap = shutil.which("bwrap")
    hint = f"install bubblewrap (`make sandbox`, or apt-get install bubblewrap), or {hint}"
    if bwrap is None:
        raise ToolchainMissing(f"bubblewrap (bwrap) is not installed: {hint}")
    probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-all", *_USER, "true"], capture_output=True)
    if probe.returncode != 0:
        reason = probe.stderr.decode("utf-8", "replace").strip()[:200]
        if "namespace" in reason.lower() or "permitted" in reason.lower():
            raise ToolchainMissing(
                f"bubblewrap cannot make a user namespace here ({reason}): the sandbox never runs code as root or"
                " with a capability, and without a user namespace it could not drop them (hint: enable user"
                " namespaces, sysctl user.max_user_namespaces=15000 or kernel.unprivileged_userns_clone=1,"
                f" or {hint.split(', or ')[-1]})")  # fmt: skip
        raise ToolchainMissing(f"bubblewrap cannot create a sandbox here ({reason}): {hint}")
    return bwrap


_USER = ["--unshare-user", "--disable-userns", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
         "--cap-drop", "ALL"]  # fmt: skip
"""Never root inside: a user namespace of its own, as nobody, no capability, no nested user namespace."""


def _bwrap_argv(
    bwrap: str, plan: list[Mount], command: str, repo: Path, env: dict[str, str], network: bool
) -> list[str]:
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-all", *_USER, "--tmpfs", "/",
            "--dev", "/dev", "--proc", "/proc"]  # fmt: skip
    if network:
        args.append("--share-net")
    for mount in plan:
        if mount.kind == "tmpfs":
            args += ["--size", str(mount.size), "--tmpfs", mount.target]
        elif mount.kind == "null":
            args += ["--ro-bind", "/dev/null", mount.target]
        else:
            flag = {"ro": "--ro-bind", "ro-try": "--ro-bind-try", "rw": "--bind"}[mount.kind]
            args += [flag, mount.target, mount.target]
    # last: the root tmpfs itself read-only (the directories made for the mounts above included)
    args += ["--remount-ro", "/", "--chdir", str(repo), "--clearenv"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    from anchor.research.fence import with_filter

    return with_filter([*args, "/bin/sh", "-c", command])


def _runsc_argv(
    runsc: str, plan: list[Mount], command: str, repo: Path, env: dict[str, str], network: bool, processes: int
) -> list[str]:
    """runsc's command line for an OCI bundle written for this one command (a private directory holding
    config.json and an empty root), removed by the shell that waits on runsc."""
    import json
    import tempfile

    from anchor.research.fence import oci_seccomp

    bundle = Path(tempfile.mkdtemp(prefix="anchor-gvisor-"))
    (bundle / "root").mkdir()
    mounts: list[dict[str, object]] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
    ]
    for mount in plan:
        if mount.kind == "ro-try" and not os.path.exists(mount.target):
            continue
        if mount.kind == "tmpfs":
            mounts.append({"destination": mount.target, "type": "tmpfs", "source": "tmpfs",
                           "options": ["nosuid", "nodev", f"size={mount.size}"]})  # fmt: skip
        else:
            source = "/dev/null" if mount.kind == "null" else mount.target
            options = ["rbind", "rw" if mount.kind == "rw" else "ro"]
            mounts.append({"destination": mount.target, "type": "bind", "source": source, "options": options})
    namespaces = [{"type": kind} for kind in ("pid", "ipc", "uts", "mount", *(() if network else ("network",)))]
    config = {
        "ociVersion": "1.0.0",
        # uid 0 of gVisor's own kernel, with no capability: rootless runsc maps only the harness's uid, so
        # the files the harness owns (the run dir, the editable files) are writable as that user alone
        "process": {"terminal": False, "user": {"uid": 0, "gid": 0},
                    "args": ["/bin/sh", "-c", command], "env": [f"{k}={v}" for k, v in env.items()],
                    "cwd": str(repo), "capabilities": {}, "noNewPrivileges": True,
                    "rlimits": [{"type": "RLIMIT_NPROC", "hard": processes, "soft": processes}]},
        "root": {"path": "root", "readonly": True},
        "hostname": "sandbox",
        "mounts": mounts,
        "linux": {"namespaces": namespaces, "seccomp": oci_seccomp()},
    }  # fmt: skip
    (bundle / "config.json").write_text(json.dumps(config))
    name = bundle.name.removeprefix("anchor-gvisor-")
    flags = ["--rootless", "--ignore-cgroups", "--oci-seccomp", "--host-uds=none", f"--root={bundle / 'state'}",
             "--network=" + ("host" if network else "none")]  # fmt: skip
    script = '"$@"; code=$?; rm -rf "$0"; exit $code'
    return ["/bin/sh", "-c", script, str(bundle), runsc, *flags, "run", "--bundle", str(bundle), name]


def refuse_unconfined(settings: Settings) -> None:
    """`--no-sandbox` with a key in reach is refused (issue 28): unconfined code runs as this user, so
    it can read a secret out of our /proc/<pid>/environ (or a keystore file) however carefully its own
    environment was cleaned. Checked: every ANCHOR_* secret variable (anchor.settings.session.is_secret)
    and a configured keystore. Other secrets of the shell are the caller's to keep out."""
    from anchor.errors import BadInput
    from anchor.settings.env import env

    held = env().held_secrets()
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
