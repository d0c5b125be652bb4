"""Run the code under measurement inside bubblewrap: no network, the repository read-only except the
editable files, a private /tmp, a process namespace of its own, an allow-listed environment.

Why: the attempt is code an agent wrote. Unconfined it can read the signing key from its environment
or from `/proc/<harness>/environ`, read the keystore or the journal, rewrite the ledger or the
evaluator, or fetch answers over the network. In the sandbox:
- the filesystem is an allow-list (anchor.research.fence): the system's programs and libraries, a few
  /etc files, the harness's Python and PATH, the repository, read-only; fresh /tmp, /var/tmp and /run;
  no host socket is reachable (nor could one be made: AF_UNIX sockets are refused by seccomp); the
  data directory, the search's work dir and any keystore file are hidden (empty) where they would show;
  only the run dir and the editable files are writable;
- network, PID, IPC and UTS namespaces are new (no interface but loopback, no host process visible);
- the environment is cleared and only PATH, the locale, TMPDIR=/tmp, HOME=<run dir>/home and
  PYTHONDONTWRITEBYTECODE are set (`allowed_env`).
Without bubblewrap a search refuses to run unless `--no-sandbox` is given; the ledger entry of every
attempt records how it ran (`sandbox`: "bubblewrap" or "none"), under the ledger's hash chain.
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


@dataclass(frozen=True, slots=True)
class Sandbox:
    bwrap: str
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
    ) -> Sandbox:
        """The sandbox, or `ToolchainMissing` when bubblewrap is absent or cannot create namespaces."""
        bwrap = shutil.which("bwrap")
        hint = "install bubblewrap (`make sandbox`, or apt-get install bubblewrap), or run with --no-sandbox"
        if bwrap is None:
            raise ToolchainMissing(f"bubblewrap (bwrap) is not installed: {hint}")
        probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-all", "true"], capture_output=True)
        if probe.returncode != 0:
            reason = probe.stderr.decode("utf-8", "replace").strip()[:200]
            raise ToolchainMissing(f"bubblewrap cannot create a sandbox here ({reason}): {hint}")
        shown = tuple(p.resolve() for p in hidden if p.exists())
        hidden_holdout = tuple(p.resolve() for p in holdout if p.exists())
        outside = tuple(p.resolve() for p in inputs if p.exists() and not p.resolve().is_relative_to(repo.resolve()))
        for path in outside:  # bound after the hidden ones: an input there would show what they hide
            clash = next((h for h in shown if path.is_relative_to(h) or h.is_relative_to(path)), None)
            if clash is not None:
                from anchor.errors import BadInput

                raise BadInput(f"inputs: {path} overlaps {clash}, which the sandbox hides from the code under"
                               " measurement (the data dir, the work dir, a keystore)",
                               detail={"field": "inputs", "path": str(path)})  # fmt: skip
        return cls(bwrap, repo.resolve(), editable, shown, hidden_holdout, pass_env=pass_env, inputs=outside)

    def argv(
        self, command: str, run_dir: Path, network: bool = False, extra_env: dict[str, str] | None = None
    ) -> list[str]:
        """bwrap's command line for `command` (a shell line) run in the repository; `network` keeps the
        host's network (the proposer, when told to: an agent calling its model), never for an attempt."""
        from anchor.research.fence import fresh_tmpfs, runtime_binds, system_binds, with_filter

        run_dir = run_dir.resolve()
        # an allow-listed root (anchor.research.fence): no host socket, no /etc secrets, no other home
        args = [self.bwrap, "--die-with-parent", "--unshare-all", "--tmpfs", "/", *system_binds(network),
                "--dev", "/dev", "--proc", "/proc", *fresh_tmpfs(), *runtime_binds()]  # fmt: skip
        if network:
            args.append("--share-net")
        for path in self.hidden:  # mounted before the binds below, which may lie inside them
            args += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
        args += ["--ro-bind", str(self.repo), str(self.repo)]
        for path in self.inputs:  # declared data, read-only; never the holdout (hidden below if it overlaps)
            args += ["--ro-bind", str(path), str(path)]
        for path in self.holdout:
            if self.shows_holdout:  # bound explicitly: it may lie where the rest is hidden (/tmp, the data dir)
                args += ["--ro-bind", str(path), str(path)]
            else:
                args += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
        for rel in self.editable if self.edits else ():
            target = self.repo / rel
            if target.exists():
                args += ["--bind", str(target), str(target)]
        for path in self.read_only:
            args += ["--ro-bind", str(path), str(path)]
        args += ["--bind", str(run_dir), str(run_dir)]
        # last: the root tmpfs itself read-only (the directories made for the mounts above included)
        args += ["--remount-ro", "/", "--chdir", str(self.repo), "--clearenv"]
        for name, value in {**allowed_env(run_dir, True, self.pass_env), **(extra_env or {})}.items():
            args += ["--setenv", name, value]
        return with_filter([*args, "/bin/sh", "-c", command])


def refuse_unconfined(settings: Settings) -> None:
    """`--no-sandbox` with a key in reach is refused (issue 28): unconfined code runs as this user, so
    it can read a secret out of our /proc/<pid>/environ (or a keystore file) however carefully its own
    environment was cleaned. Checked: every ANCHOR_* secret variable (anchor.settings.session.is_secret)
    and a configured keystore. Other secrets of the shell are the caller's to keep out."""
    from anchor.errors import BadInput
    from anchor.settings.session import is_secret

    held = sorted(k for k, v in os.environ.items() if v and k.startswith("ANCHOR_") and is_secret(k))
    held += [name for name in ("ANCHOR_KEYSTORE", "ANCHOR_RESEARCHER_KEYSTORE") if os.environ.get(name)]
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
