"""The fence on maintained isolation, tried as a hostile attempt would, under a root harness
as CI and most containers run it. Each attack below succeeded against the hand-built fence: an attempt
held every capability (CapEff 000001fffeffffff), remounted its read-only repository writable and
planted an fsmonitor hook that the harness's next `git status` ran on the host as root; remounted the
pids hierarchy and left its process bound; made through io_uring the AF_UNIX socket seccomp refused to
socket(2); and held 2.7 GiB under a 1 GiB "bound". Every case runs under bubblewrap and under gVisor."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from anchor.fence.git import Repo
from anchor.fence.runner import Limits, run_command
from anchor.fence.sandbox import Sandbox
from anchor.research.ledger import Ledger
from anchor.research.loop import Search, SearchLimits
from tests.research.helpers import SCORE_IS_X, ScriptedProposer, contract, make_repo

pytestmark = pytest.mark.sandbox  # runs attempts as processes (bubblewrap, gVisor)

RUNTIMES = ["bubblewrap", "gvisor"]


def _box(repo: Path, runtime: str, editable: tuple[str, ...] = ("params.json",)) -> Sandbox:
    return Sandbox.find(repo, editable, (), runtime=runtime)


def _run(box: Sandbox | None, repo: Path, run_dir: Path, command: str, **limits: int) -> Any:
    return run_command(command, repo, run_dir, 120, 1, box, limits=Limits(**limits) if limits else None)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_attempt_holds_no_capability_and_cannot_remount_its_read_only_repository(
    tmp_path: Path, runtime: str
) -> None:
    repo = make_repo(tmp_path / "repo", {"params.json": "{}", "README.md": "r\n"})
    run_dir = tmp_path / "run"
    command = (
        f"grep CapEff /proc/self/status > {run_dir}/caps;"
        f" mount -o remount,bind,rw {repo} 2> {run_dir}/mount.err; echo $? > {run_dir}/mount.rc;"
        f" echo escaped >> {repo}/README.md 2> /dev/null; true"
    )
    result = _run(_box(repo, runtime), repo, run_dir, command)
    assert result.exit_code == 0
    assert (run_dir / "caps").read_text().split() == ["CapEff:", "0000000000000000"]
    assert int((run_dir / "mount.rc").read_text()) != 0, (run_dir / "mount.err").read_text()
    assert (repo / "README.md").read_text() == "r\n"


HOOK = "#!/bin/sh\ntouch {marker}\nexit 1\n"
PLANT = (
    "mount -o remount,bind,rw {repo} 2> /dev/null; mount -o remount,bind,rw {repo}/.git 2> /dev/null;"
    " printf '[core]\\n\\tfsmonitor = {repo}/.git/hooks/fsmonitor-watchman\\n' >> {repo}/.git/config 2> /dev/null;"
    " cp {repo}/hook.sh {repo}/.git/hooks/fsmonitor-watchman 2> /dev/null;"
    " chmod +x {repo}/.git/hooks/fsmonitor-watchman 2> /dev/null; "
)


@pytest.mark.parametrize("runtime", [*RUNTIMES, "unconfined"])
def test_a_planted_fsmonitor_hook_never_runs_on_the_host_and_a_changed_git_config_fails_the_attempt(
    tmp_path: Path, runtime: str
) -> None:
    """The attempt tries to remount the repository writable and make .git/config run its script at the
    harness's next `git status`. Sandboxed, the remount is refused and .git never changes. Unconfined
    (--no-sandbox), the write lands: the attempt fails naming what it changed, the change is undone
    before the harness runs git again, and the harness's git never runs a hook or fsmonitor anyway."""
    marker = tmp_path / "ran-on-the-host"
    repo_path = tmp_path / "repo"
    files = {"params.json": json.dumps({"x": 1}), "hook.sh": HOOK.format(marker=marker)}
    repo = Repo(make_repo(repo_path, files))
    config_before = (repo_path / ".git" / "config").read_bytes()
    command = PLANT.format(repo=repo_path) + SCORE_IS_X
    box = None if runtime == "unconfined" else _box(repo_path, runtime)
    ledger = Ledger(tmp_path / "work" / "ledger.jsonl")
    search = Search(
        repo,
        contract(command=command),
        "ab" * 32,
        ledger,
        tmp_path / "work",
        ScriptedProposer([2]),
        "r0",
        SearchLimits(max_attempts=2, budget_s=300, max_consecutive_failures=5),
        sandbox=box,
    )
    search.run()
    subprocess.run(["git", "-C", str(repo_path), "status"], capture_output=True, check=True)  # as a user would
    assert not marker.exists(), "the planted hook ran on the host"
    assert (repo_path / ".git" / "config").read_bytes() == config_before
    assert not (repo_path / ".git" / "hooks" / "fsmonitor-watchman").exists()
    entries = ledger.entries()
    if runtime == "unconfined":
        assert [e["status"] for e in entries] == ["failed"], entries
        assert entries[0]["git_changed"] == [".git/config", ".git/hooks/fsmonitor-watchman"]
    else:
        assert [e["status"] for e in entries] == ["completed", "completed"], entries
        assert all("git_changed" not in e for e in entries)


def _pids_root() -> Path:
    """The mount point of the pids hierarchy (v1) or of the unified one (v2)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        pre, _, post = line.partition(" - ")
        fstype, options = post.split()[0], post.split()[2].split(",")
        if (fstype == "cgroup" and "pids" in options) or fstype == "cgroup2":
            point = Path(pre.split()[4])
            if fstype == "cgroup" or "pids" in (point / "cgroup.controllers").read_text().split():
                return point
    raise AssertionError("no pids cgroup hierarchy on this machine: attempts would have no process bound")


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_attempt_cannot_remount_the_cgroup_tree_and_leave_its_process_bound(tmp_path: Path, runtime: str) -> None:
    root = _pids_root()
    repo = make_repo(tmp_path / "repo", {"params.json": "{}"})
    run_dir = tmp_path / "run"
    command = (  # the hierarchy bound elsewhere and that bind made writable: what worked with CAP_SYS_ADMIN
        f"before=$(cat /proc/self/cgroup); mount -o remount,rw {root} 2> /dev/null; mkdir -p /tmp/c;"
        f" mount --bind {root} /tmp/c 2> /dev/null; mount -o remount,bind,rw /tmp/c 2> /dev/null;"
        f" for top in {root} /tmp/c; do echo $$ > $top/cgroup.procs 2> /dev/null; done;"
        f' [ "$before" = "$(cat /proc/self/cgroup)" ] || cat /proc/self/cgroup > {run_dir}/escape; true'
    )
    result = _run(_box(repo, runtime), repo, run_dir, command, processes=32)
    assert result.exit_code == 0
    assert not (run_dir / "escape").exists(), "the attempt moved itself into the root pids cgroup"


URING = r"""
import ctypes, json, mmap, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
path, out = sys.argv[1], sys.argv[2]
def done(what):
    open(out, "w").write(json.dumps(what))
    sys.exit(0)
params = ctypes.create_string_buffer(120)
ring = libc.syscall(425, 4, params)  # io_uring_setup: the same number on every architecture
if ring < 0:
    done({"setup": os.strerror(ctypes.get_errno())})
sq_entries, cq_entries = struct.unpack_from("II", params, 0)
sq_head, sq_tail, sq_mask, _, _, _, sq_array = struct.unpack_from("7I", params, 40)
cq_head, cq_tail, cq_mask, _, _, cqes = struct.unpack_from("6I", params, 80)
sq = mmap.mmap(ring, sq_array + sq_entries * 4, offset=0)
cq = mmap.mmap(ring, cqes + cq_entries * 16, offset=0x8000000)
sqes = mmap.mmap(ring, sq_entries * 64, offset=0x10000000)
# IORING_OP_SOCKET (45): fd = domain, off = type, len = protocol
sqes[0:64] = struct.pack("=BBHiQQII", 45, 0, 0, socket.AF_UNIX, socket.SOCK_STREAM, 0, 0, 0).ljust(64, b"\0")
tail = struct.unpack_from("I", sq, sq_tail)[0]
struct.pack_into("I", sq, sq_array + (tail & struct.unpack_from("I", sq, sq_mask)[0]) * 4, 0)
struct.pack_into("I", sq, sq_tail, tail + 1)
if libc.syscall(426, ring, 1, 1, 1, None, 0) < 0:  # io_uring_enter, IORING_ENTER_GETEVENTS
    done({"enter": os.strerror(ctypes.get_errno())})
head = struct.unpack_from("I", cq, cq_head)[0]
res = struct.unpack_from("=Qi", cq, cqes + (head & struct.unpack_from("I", cq, cq_mask)[0]) * 16)[1]
if res < 0:
    done({"socket": os.strerror(-res)})
try:
    socket.socket(fileno=res).connect(path)
except OSError as exc:
    done({"connect": exc.strerror})
done({"connected": True})
"""


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_io_uring_cannot_make_the_unix_socket_seccomp_refuses_to_socket(tmp_path: Path, runtime: str) -> None:
    """A listener in the repository's .git (shown with the repository). socket(AF_UNIX) is refused, and
    io_uring's IORING_OP_SOCKET made one anyway: io_uring itself is now refused, and nothing connects."""
    repo = make_repo(tmp_path / "repo", {"params.json": "{}", "uring.py": URING})
    run_dir = tmp_path / "run"
    planted = repo / ".git" / "planted.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(planted))
    listener.listen()
    listener.settimeout(0.2)
    try:
        result = _run(_box(repo, runtime), repo, run_dir, f"python3 uring.py {planted} {run_dir}/uring.json")
        with pytest.raises(socket.timeout):
            listener.accept()  # nothing ever arrived
    finally:
        listener.close()
    assert result.exit_code == 0, (run_dir / "stderr.log").read_text()
    seen = json.loads((run_dir / "uring.json").read_text())
    assert "connected" not in seen, seen
    if runtime == "bubblewrap":
        assert seen == {"setup": os.strerror(1)}  # EPERM, from the policy


HUNGRY = r"""
import subprocess, sys
with open("/tmp/fill", "wb") as out:  # the sandbox's private tmpfs: RAM
    for _ in range(600):
        out.write(b"\1" * (1 << 20))
child = "import time; x = b'\1' * (700 << 20); time.sleep(8)"
kids = [subprocess.Popen([sys.executable, "-c", child]) for _ in range(3)]
codes = [kid.wait() for kid in kids]
print(codes)
sys.exit(0 if codes == [0, 0, 0] else 1)
"""


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_three_children_and_the_tmpfs_together_meet_one_memory_bound(tmp_path: Path, runtime: str) -> None:
    """3 x 700 MiB children and 600 MiB written to /tmp under a 1 GiB bound: under RLIMIT_AS each child
    fitted and the tmpfs was outside, so the attempt was measured. One memory cgroup holds them all."""
    repo = make_repo(tmp_path / "repo", {"params.json": "{}", "hungry.py": HUNGRY})
    run_dir = tmp_path / "run"
    result = _run(_box(repo, runtime), repo, run_dir, "python3 hungry.py", memory_bytes=1 << 30)
    assert result.exit_code != 0, (run_dir / "stdout.log").read_text()
    assert result.limit == {"name": "memory", "bound": 1 << 30}


def test_a_repository_whose_git_config_names_a_program_is_refused_before_the_search_starts(tmp_path: Path) -> None:
    from anchor.errors import GuardError
    from anchor.fence.guard import check_git_config

    repo = Repo(make_repo(tmp_path / "repo", {"params.json": "{}"}))
    check_git_config(repo)  # a plain clone passes
    repo.git("config", "core.fsmonitor", "false")
    check_git_config(repo)  # switched off is fine
    repo.git("config", "core.fsmonitor", str(tmp_path / "watch.sh"))
    repo.git("config", "filter.lfs.smudge", "evil %f")
    repo.git("config", "alias.st", "!sh -c 'touch x'")
    with pytest.raises(GuardError) as refused:
        check_git_config(repo)
    assert refused.value.detail["keys"] == ["alias.st", "core.fsmonitor", "filter.lfs.smudge"]
    assert "git config --local --unset" in refused.value.message


def _search_setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A repository, its contract and an environment with no key of any kind: (repo, contract, env)."""
    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1})})
    spec = tmp_path / "contract.toml"
    spec.write_text(
        f'task = "t"\ncommand = {json.dumps(SCORE_IS_X)}\neditable = ["params.json"]\nmetric = "score"\n'
        'mode = "max"\nattempt_timeout_minutes = 1\ngrace_seconds = 1\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "data")
    return repo, spec, env


def test_research_run_in_gvisor_records_the_runtime_and_refuses_a_repository_that_names_a_program(
    tmp_path: Path,
) -> None:
    """The CLI's doors: `--sandbox-runtime gvisor` reaches every attempt (the ledger says so), a mistyped
    runtime is one line with the near name (exit 2), and a repository whose .git/config names a program is
    refused before anything is written (exit 7, the key named)."""
    from anchor.errors import ExitCode
    from tests.cli import run_anchor

    repo, spec, env = _search_setup(tmp_path)
    argv = [
        "--json",
        "research",
        "run",
        "--repo",
        str(repo),
        "--contract",
        str(spec),
        "--max-attempts",
        "2",
        "--no-anchor",
    ]
    typo = run_anchor([*argv, "--sandbox-runtime", "gvisr"], env)
    assert typo.returncode == ExitCode.BAD_INPUT and "did you mean gvisor?" in typo.stdout + typo.stderr
    ran = run_anchor([*argv, "--sandbox-runtime", "gvisor"], env)
    assert ran.returncode == ExitCode.OK, ran.stdout + ran.stderr
    rows = [json.loads(line) for line in (tmp_path / "data" / "research" / "ledger.jsonl").read_text().splitlines()]
    attempts = [row for row in rows if "event" not in row]
    assert len(attempts) == 2 and {row["sandbox"] for row in attempts} == {"gvisor"}
    Repo(repo).git("config", "core.fsmonitor", str(tmp_path / "watch.sh"))
    before = sorted(p.name for p in (tmp_path / "data" / "research").iterdir())
    refused = run_anchor([*argv, "--workdir", str(tmp_path / "other")], env)
    assert refused.returncode == ExitCode.CONFLICT, refused.stdout + refused.stderr
    assert "core.fsmonitor" in refused.stdout and not (tmp_path / "other").exists()
    assert sorted(p.name for p in (tmp_path / "data" / "research").iterdir()) == before


def test_a_root_harness_that_cannot_drop_to_the_attempt_user_refuses_to_run_and_says_why(tmp_path: Path) -> None:
    """Root of a user namespace of our own that maps uid 0 alone (and where no further one may be made,
    user.max_user_namespaces = 0): the harness cannot become anchor-attempt, and the sandbox never runs
    the attempt as root, so the search stops before any attempt, and before it writes anything, with
    exit 8, naming the user namespace and --no-sandbox."""
    from anchor.errors import ExitCode
    from tests.cli import ANCHOR_BIN

    repo, spec, env = _search_setup(tmp_path)
    script = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    run = subprocess.run(
        [
            "unshare",
            "--user",
            "--map-root-user",
            "sh",
            "-c",
            script,
            "sh",
            str(ANCHOR_BIN),
            "research",
            "run",
            "--repo",
            str(repo),
            "--contract",
            str(spec),
            "--max-attempts",
            "1",
            "--no-anchor",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == ExitCode.TOOLCHAIN, run.stdout + run.stderr
    assert "user namespace" in run.stderr and "--no-sandbox" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "data" / "research").exists()  # refused before anything was written
