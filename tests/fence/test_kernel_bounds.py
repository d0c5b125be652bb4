"""A bound the kernel counted is never a completed attempt. On cgroup v1 (these machines), an attempt
whose three children took 500 MiB each under a 1 GiB bound had one child killed by the OOM killer; the
parent went on, exited 0, and the ledger said `completed`. Under a 1 MiB run-dir quota, counted by
walking regular files, an attempt left 80 MiB on the host as 20,000 empty directories and wrote 300 MiB
into a file it had unlinked, and ended `exit 0, limit=None`. Each case runs on every runtime here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fence.helpers import RUNTIMES, box, run
from tests.research.helpers import make_repo

pytestmark = pytest.mark.sandbox

CHILDREN = r"""
import subprocess, sys
code = "import time; x = b'x' * ({mib} << 20); time.sleep(3)"
children = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(3)]
codes = [child.wait() for child in children]
open(sys.argv[1] + "/codes", "w").write(" ".join(map(str, codes)))
open(sys.argv[1] + "/metrics.jsonl", "w").write('{{"score": 1}}\n')
"""


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_child_killed_by_the_oom_killer_ends_the_attempt_naming_memory_though_its_parent_exits_0(
    tmp_path: Path, runtime: str
) -> None:
    bound = 384 << 20
    repo = make_repo(tmp_path / "repo", {"params.json": "{}", "c.py": CHILDREN.format(mib=160)})
    result = run(box(repo, runtime), repo, tmp_path / "run", f"python3 c.py {tmp_path / 'run'}", memory_bytes=bound)
    assert result.limit == {"name": "memory", "bound": bound}, (result, (tmp_path / "run" / "stderr.log").read_text())
    assert result.exit_code != 0


FLOOD = r"""
import os, sys
made = 0
for i in range(20000):
    try:
        os.mkdir(os.path.join(sys.argv[1], f"d{i}"))
        made += 1
    except OSError:
        pass
print(made)
"""
UNLINKED = r"""
import os, sys, time
path = os.path.join(sys.argv[1], "hidden")
fd = os.open(path, os.O_WRONLY | os.O_CREAT)
os.unlink(path)
written, chunk = 0, b"x" * (1 << 20)
for _ in range(300):
    try:
        written += os.write(fd, chunk)
    except OSError:
        break
try:
    print(written, flush=True)
except OSError:  # the log shares the bound: an attempt that wants exit 0 says nothing rather than fail
    sys.stdout = open(os.devnull, "w")
time.sleep(1)
"""


@pytest.mark.parametrize("attack", ["20,000 empty directories", "a 300 MiB unlinked file"])
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_run_dirs_quota_is_the_kernels_and_counts_what_is_not_a_regular_file(
    tmp_path: Path, runtime: str, attack: str
) -> None:
    script = FLOOD if attack.startswith("20,000") else UNLINKED
    repo = make_repo(tmp_path / "repo", {"params.json": "{}", "a.py": script})
    run_dir = tmp_path / "run"
    result = run(box(repo, runtime), repo, run_dir, f"python3 a.py {run_dir}", run_dir_bytes=1 << 20)
    assert result.quota == "kernel"
    assert result.limit is not None and result.limit["name"] == ("inodes" if attack.startswith("20,000") else "disk")
    assert result.exit_code != 0
    wrote = (run_dir / "stdout.log").read_text().split()
    on_disk = sum(os.lstat(os.path.join(r, n)).st_blocks * 512 for r, ds, fs in os.walk(run_dir) for n in (*ds, *fs))
    assert on_disk < 2 << 20, on_disk  # what reached the host's disk, directories' blocks included
    if wrote and not attack.startswith("20,000"):
        assert int(wrote[0]) <= 1 << 20  # the write past the bound failed
