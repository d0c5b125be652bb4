"""The fence: how code we did not write (an attempt, a proposer, an evaluator, a mission's command) runs
on this host, and how the harness's own git stays out of its reach. Whoever audits the isolation reads
this folder; docs/threat-model.md lists every escape found so far and the test in tests/fence/ that
holds it.

One entry: `run_command(command, cwd, run_dir, timeout_s, grace_s, sandbox, ...)` -> `RunResult`, the
command's exit code and the limit it met. Beneath it, in the order a command meets them:
- `identity`: under a root harness the command (and its sandbox runtime) is the system user
  `anchor-attempt` on the host, never uid 0;
- `sandbox`: gVisor (runsc) where it runs here, else bubblewrap: namespaces of its own, an allow-listed
  filesystem read-only, /proc/sys read-only, an allow-listed environment from the first process on;
- `policy`: the seccomp policy, compiled by libseccomp, the same for both runtimes;
- `cgroups`: memory and processes bounded by the kernel, its kills counted whatever the exit code;
- `quota`: everything it may write on a tmpfs bounded in bytes and inodes;
- `workspace`: the editable files as copies, read back as hostile data;
- `git` and `guard`: the harness's git, which no tree can steer, and the research loop's git rules.
"""

from anchor.fence.cgroups import Limits
from anchor.fence.runner import RunResult, run_command
from anchor.fence.sandbox import Sandbox, default_runtime

__all__ = ["Limits", "RunResult", "Sandbox", "default_runtime", "run_command"]
