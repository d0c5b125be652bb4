"""An attempt is nobody on the host. Under a root harness (as CI and most containers run) bubblewrap had
mapped the attempt's "nobody" onto host uid 0: it passed every owner check, wrote the host-global
`fs/lease-break-time` and had `kernel/core_pattern` accept a write (a pipe there runs a program as full
root at the next crash anywhere); gVisor ran it as host uid 0 too, with six of its /proc/sys files
writable; `/proc/1/environ` (bwrap's own init) held the harness's whole environment, API keys and
database passwords among it; and `socket(AF_VSOCK)` reached past the network namespace to the
hypervisor. Each case runs a hostile command through the fence's entry, on every runtime installed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fence.helpers import READY, RUNTIMES, box, in_background, members_once, run
from tests.research.helpers import make_repo

pytestmark = pytest.mark.sandbox


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_every_process_of_a_running_attempt_is_a_non_zero_uid_as_the_host_sees_it(tmp_path: Path, runtime: str) -> None:
    assert os.geteuid() == 0, "the case that matters is a root harness, as CI runs it"
    repo = make_repo(tmp_path / "repo", {"params.json": "{}"})
    sandbox = box(repo, runtime)
    command = "sleep 30 & sleep 30 & touch {run}/ready; wait".format(run=tmp_path / "run")
    with in_background(lambda: run(sandbox, repo, tmp_path / "run", command)):
        members = members_once(READY.format(pid=os.getpid()))
        os.killpg(int(_group_of(tmp_path / "run")), 9)  # ours: the group the fence recorded for this command
    assert len(members) >= 3, members  # the runtime, the shell, the two sleeps
    as_root = {pid: ids for pid, ids in members.items() if 0 in ids["Uid"] or 0 in ids["Gid"]}
    assert as_root == {}, as_root
    assert {ids["Uid"][0] for ids in members.values()} == {sandbox.identity.uid if sandbox.identity else -1}


def _group_of(run_dir: Path) -> str:
    import json

    return str(json.loads((run_dir / "process.json").read_text())["pgid"])


CORE_PATTERN = Path("/proc/sys/kernel/core_pattern")
WRITE_EVERY_SYSCTL = r"""
import os, sys
written = []
for root, dirs, files in os.walk("/proc/sys"):
    for name in files:
        path = os.path.join(root, name)
        try:
            fd = os.open(path, os.O_WRONLY)
        except OSError:
            continue
        try:
            os.write(fd, open(path, "rb").read() or b"0")
            written.append(path)
        except OSError:
            written.append(path + " (opened)")
        finally:
            os.close(fd)
try:
    open("/proc/sys/kernel/core_pattern", "w").write("|" + sys.argv[1] + "/x.sh")
    written.append("core_pattern")
except OSError:
    pass
open(sys.argv[1] + "/written", "w").write("\n".join(written))
"""


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_no_proc_sys_file_can_be_written_or_even_opened_for_writing_inside_an_attempt(
    tmp_path: Path, runtime: str
) -> None:
    repo = make_repo(tmp_path / "repo", {"params.json": "{}", "w.py": WRITE_EVERY_SYSCTL})
    before = CORE_PATTERN.read_bytes()
    result = run(box(repo, runtime), repo, tmp_path / "run", f"python3 w.py {tmp_path / 'run'}")
    assert result.exit_code == 0, (tmp_path / "run" / "stderr.log").read_text()
    assert (tmp_path / "run" / "written").read_text() == ""
    assert CORE_PATTERN.read_bytes() == before


READ_EVERY_ENVIRON = r"""
import glob, sys
found = []
for path in glob.glob("/proc/*/environ"):
    try:
        data = open(path, "rb").read()
    except OSError:
        continue
    found += [path for secret in sys.argv[2:] if secret.encode() in data]
open(sys.argv[1] + "/found", "w").write("\n".join(found))
open(sys.argv[1] + "/pid1", "wb").write(open("/proc/1/environ", "rb").read())
"""


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_sandboxs_first_process_holds_none_of_the_harnesss_environment(
    tmp_path: Path, runtime: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "OPENAI_API_KEY": "sk-canary-1",
        "AWS_ACCESS_KEY_ID": "AKIACANARY2",
        "DATABASE_URL": "postgresql://u:canary-3@db/x",
        "ANCHOR_RPC_URL": "https://rpc/canary-4",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    repo = make_repo(tmp_path / "repo", {"params.json": "{}", "e.py": READ_EVERY_ENVIRON})
    command = f"python3 e.py {tmp_path / 'run'} sk-canary-1 AKIACANARY2 canary-3 canary-4"
    result = run(box(repo, runtime), repo, tmp_path / "run", command)
    assert result.exit_code == 0, (tmp_path / "run" / "stderr.log").read_text()
    assert (tmp_path / "run" / "found").read_text() == ""
    names = {line.split(b"=")[0].decode() for line in (tmp_path / "run" / "pid1").read_bytes().split(b"\0") if line}
    assert names <= {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "HOME", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "PWD"}


SOCKETS = r"""
import json, socket, sys
out = {}
for name in ("AF_VSOCK", "AF_NETLINK", "AF_PACKET", "AF_UNIX", "AF_INET", "AF_INET6"):
    try:
        socket.socket(getattr(socket, name), socket.SOCK_DGRAM).close()
        out[name] = "made"
    except OSError as exc:
        out[name] = exc.errno
open(sys.argv[1] + "/sockets.json", "w").write(json.dumps(out))
"""


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_no_socket_family_but_inet_and_inet6_can_be_made_vsock_and_netlink_among_them(
    tmp_path: Path, runtime: str
) -> None:
    import json

    repo = make_repo(tmp_path / "repo", {"params.json": "{}", "s.py": SOCKETS})
    result = run(box(repo, runtime), repo, tmp_path / "run", f"python3 s.py {tmp_path / 'run'}")
    assert result.exit_code == 0, (tmp_path / "run" / "stderr.log").read_text()
    made = json.loads((tmp_path / "run" / "sockets.json").read_text())
    assert {name for name, what in made.items() if what == "made"} == {"AF_INET", "AF_INET6"}, made


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_attempt_may_start_threads_on_every_runtime(tmp_path: Path, runtime: str) -> None:
    """The policy refuses clone with a namespace flag, and clone3 (whose flags it cannot see) where the
    runtime answers ENOSYS, so that glibc falls back to clone: a thread must still start. Under gVisor,
    whose Debian build answers EPERM to every refused call, pthread_create failed (numpy's OpenBLAS)."""
    repo = make_repo(tmp_path / "repo", {"params.json": "{}"})
    command = (
        f"python3 -c \"import threading; t = threading.Thread(target=print, args=('thread',));"
        f' t.start(); t.join()" > {tmp_path / "run"}/out'
    )
    result = run(box(repo, runtime), repo, tmp_path / "run", command)
    assert result.exit_code == 0, (tmp_path / "run" / "stderr.log").read_text()
    assert (tmp_path / "run" / "out").read_text() == "thread\n"
