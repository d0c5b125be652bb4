"""The code under measurement against the harness: a hostile attempt, run by `anchor research
run` with a funded key in the environment and a keystore on disk, tries to take the key, read the
journal, reach the network and write outside its fence. Every try fails, the key's hex appears nowhere
the attempt could leave it, and the ledger says the attempt ran sandboxed."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
from eth_account import Account

from anchor.chain.node import rpc_call
from anchor.fence.sandbox import default_runtime
from tests.conftest import ANCHOR_BIN, Chain
from tests.research.helpers import make_repo

pytestmark = pytest.mark.sandbox  # runs attempts, proposers or evaluators as processes (bubblewrap)

CANARY = "0x" + "ca" * 32  # the signing key of this search (funded below): it really signs the anchoring

HOSTILE = r"""
import glob, json, os, socket, sys
run_dir, keystore, journal, port, outside = sys.argv[1:6]
tries = {}
tries["env"] = any("KEY" in name or "PASSWORD" in name for name in os.environ)
found = False
for path in glob.glob("/proc/*/environ"):  # the harness's environment, if its process were visible
    try:
        found |= b"ANCHOR_PRIVATE_KEY=" in open(path, "rb").read()
    except OSError:
        pass
tries["proc_environ"] = found
def readable(path):
    try:
        return len(open(path, "rb").read()) > 0
    except OSError:
        return False
tries["keystore"] = readable(keystore)
tries["journal"] = readable(journal)
def connects(host, port):
    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False
tries["socket_local_chain"] = connects("127.0.0.1", int(port))
tries["socket_internet"] = connects("1.1.1.1", 80)
def writes(path):
    try:
        with open(path, "a") as handle:
            handle.write("escaped\n")
        return True
    except OSError:
        return False
tries["write_readme"] = writes("README.md")
tries["write_outside"] = writes(outside)  # a path on the host, outside every fence
open(os.path.join(run_dir, "tries.json"), "w").write(json.dumps(tries))
open(os.path.join(run_dir, "metrics.jsonl"), "w").write(json.dumps({"score": 1}) + "\n")
"""


def test_a_hostile_attempt_cannot_take_the_key_read_the_journal_reach_the_network_or_escape(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    fresh_chain.cli("deploy", check=True)
    rpc_call(fresh_chain.node.rpc_url, "anvil_setBalance", [Account.from_key(CANARY).address, hex(10**20)])
    repo = make_repo(
        tmp_path / "repo", {"params.json": json.dumps({"x": 1}), "README.md": "r\n", "hostile.py": HOSTILE}
    )
    keystore = tmp_path / "keystore.json"
    keystore.write_text(json.dumps(Account.encrypt(CANARY, "pw", iterations=2)))
    outside = Path.home() / f".anchor-sandbox-escape-{os.getpid()}"
    fresh_chain.cli("journal", "status", check=True)  # opens (creates) the journal
    journal = fresh_chain.data_dir / "journal.sqlite"
    assert journal.is_file()
    command = f"python3 hostile.py {{run_dir}} {keystore} {journal} {fresh_chain.port} {outside}"
    contract = tmp_path / "contract.toml"
    contract.write_text(
        f'task = "t"\ncommand = "{command}"\neditable = ["params.json"]\nmetric = "score"\nmode = "max"\n'
        "attempt_timeout_minutes = 1\ngrace_seconds = 1\n"
    )
    env = {
        **fresh_chain.env(),
        "ANCHOR_PRIVATE_KEY": CANARY,
        "ANCHOR_KEYSTORE_PASSWORD": "pw",
        "ANCHOR_RESEARCHER_KEYSTORE": str(keystore),
        "ANCHOR_RESEARCHER_KEYSTORE_PASSWORD": "pw",
    }
    try:
        run = subprocess.run(
            [
                str(ANCHOR_BIN),
                "research",
                "run",
                "--repo",
                str(repo),
                "--contract",
                str(contract),
                "--max-attempts",
                "1",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr
        [tries_file] = list((fresh_chain.data_dir / "research" / "runs").rglob("tries.json"))
        tries = json.loads(tries_file.read_text())
        assert tries == dict.fromkeys(tries, False) and len(tries) == 8, tries
        assert not outside.exists()
        assert (repo / "README.md").read_text() == "r\n"
        rows = [json.loads(x) for x in (fresh_chain.data_dir / "research" / "ledger.jsonl").read_text().splitlines()]
        ledger = [row for row in rows if "event" not in row]  # the attempts, without their traces
        assert ledger[0]["sandbox"] == default_runtime() and ledger[0]["status"] == "completed"
        # the canary really signed (it paid for the anchoring) and appears nowhere the attempt could reach
        address = Account.from_key(CANARY).address
        assert int(str(rpc_call(fresh_chain.node.rpc_url, "eth_getTransactionCount", [address, "latest"])), 16) > 0
        hex_key = CANARY[2:]
        for path in fresh_chain.data_dir.rglob("*"):
            if path.is_file() and path.name not in ("state.json",):
                assert hex_key.encode() not in path.read_bytes(), path
        assert hex_key not in run.stdout + run.stderr
    finally:
        if outside.exists():
            outside.unlink()


SCORE = "import json, sys; open(sys.argv[1] + '/metrics.jsonl', 'w').write(json.dumps({'score': 1}))"
BUMP = "import json, os; json.dump({'x': int(os.environ['ANCHOR_ATTEMPT']) + 2}, open('params.json', 'w'))"


@pytest.mark.parametrize("network", [False, True], ids=["fenced", "with --proposer-network"])
def test_a_hostile_proposer_is_fenced_like_an_attempt_and_reaches_the_network_only_when_told(
    tmp_path: Path, network: bool
) -> None:
    """The proposer (an agent) runs in the same sandbox as the attempts: no key in its environment or in
    /proc, no keystore, no journal, no write outside the editable files; the network (for an agent's
    model API) only with --proposer-network, which the second case shows does open."""
    import socket

    repo = make_repo(
        tmp_path / "repo",
        {
            "params.json": json.dumps({"x": 1}),
            "README.md": "r\n",
            "hostile.py": HOSTILE,
            "bump.py": BUMP,
            "score.py": SCORE,
        },
    )
    data = tmp_path / "data"
    journal = data / "journal.sqlite"
    journal.parent.mkdir(parents=True)
    journal.write_bytes(b"SQLite format 3\0 pretend")
    keystore = tmp_path / "keystore.json"
    keystore.write_text(json.dumps(Account.encrypt(CANARY, "pw", iterations=2)))
    outside = Path.home() / f".anchor-proposer-escape-{os.getpid()}"
    listener = socket.create_server(("127.0.0.1", 0))  # stands in for the local chain, on the host
    port = listener.getsockname()[1]
    propose = f'python3 hostile.py "$HOME" {keystore} {journal} {port} {outside}; python3 bump.py'
    contract = tmp_path / "contract.toml"
    contract.write_text(
        'task = "t"\ncommand = "python3 score.py {run_dir}"\neditable = ["params.json"]\nmetric = "score"\n'
        'mode = "max"\nattempt_timeout_minutes = 1\ngrace_seconds = 1\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env.update(
        ANCHOR_DATA_DIR=str(data),
        ANCHOR_PRIVATE_KEY=CANARY,
        ANCHOR_KEYSTORE_PASSWORD="pw",
        ANCHOR_RESEARCHER_KEYSTORE=str(keystore),
        ANCHOR_RESEARCHER_KEYSTORE_PASSWORD="pw",
    )
    argv = [
        str(ANCHOR_BIN),
        "--json",
        "research",
        "run",
        "--repo",
        str(repo),
        "--contract",
        str(contract),
        "--max-attempts",
        "2",
        "--no-anchor",
        "--propose",
        propose,
    ]
    try:
        run = subprocess.run(
            [*argv, *(["--proposer-network"] if network else [])], env=env, capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["researchers"][0]["rejected"] == 0  # the bump went through the fence
        tries = json.loads((data / "research" / "runs" / "r0" / "proposer" / "home" / "tries.json").read_text())
        assert tries.pop("socket_local_chain") is network
        internet = tries.pop("socket_internet")  # with the network shared: whatever the host can reach
        assert internet is False or network
        assert tries == dict.fromkeys(tries, False) and len(tries) == 6, tries
        assert not outside.exists() and (repo / "README.md").read_text() == "r\n"
    finally:
        listener.close()
        if outside.exists():
            outside.unlink()


@pytest.mark.parametrize("sandboxed", [False, True], ids=["unconfined", "bubblewrap"])
def test_the_contract_names_what_else_reaches_the_attempt_and_never_an_anchor_secret(
    tmp_path: Path, sandboxed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from anchor.errors import BadInput
    from anchor.fence.runner import run_command
    from anchor.fence.sandbox import Sandbox
    from anchor.research.contract import load_contract

    monkeypatch.setenv("MY_DATASET", "/srv/data")
    monkeypatch.setenv("NOT_NAMED", "x")
    monkeypatch.setenv("ANCHOR_PRIVATE_KEY", CANARY)
    repo = make_repo(tmp_path / "repo", {"params.json": "{}"})
    box = Sandbox.find(repo, ("params.json",), (), pass_env=("MY_DATASET",)) if sandboxed else None
    run_dir = tmp_path / "run"
    run_command(f"env > {run_dir}/env.txt", repo, run_dir, 30, 1, box, ("MY_DATASET",))
    seen = dict(line.split("=", 1) for line in (run_dir / "env.txt").read_text().splitlines() if "=" in line)
    assert seen["MY_DATASET"] == "/srv/data" and "NOT_NAMED" not in seen
    assert not any(k.startswith("ANCHOR_") for k in seen) and CANARY[2:] not in str(seen)
    contract = tmp_path / "c.toml"
    contract.write_text(
        'task = "t"\ncommand = "c"\neditable = ["p"]\nmetric = "m"\nmode = "max"\n'
        'attempt_timeout_minutes = 1\npass_env = ["ANCHOR_PRIVATE_KEY"]\n'
    )
    with pytest.raises(BadInput, match="pass_env") as info:
        load_contract(contract)
    assert "never reach the code under measurement" in info.value.message


REACH = r"""
import json, os, socket, sys
out = {}
for path in sys.argv[2:]:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(2)
        s.connect(path)
        s.sendall(b"from the attempt")
        out[path] = "connected"
    except OSError as exc:
        out[path] = exc.errno
try:  # the journal on PostgreSQL over its Unix socket, and a shell outside through COPY ... TO PROGRAM
    import psycopg
    with psycopg.connect(sys.argv[1], connect_timeout=3) as db:
        db.execute("COPY (SELECT 1) TO PROGRAM 'touch /var/tmp/anchor-escaped'")
    out["postgres"] = "connected"
except Exception as exc:  # noqa: BLE001
    out["postgres"] = type(exc).__name__
print(json.dumps(out))
"""


def _listener(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    os.chmod(path, 0o777)  # anyone may connect: what stops the attempt is the fence, not the socket's mode
    server.listen()
    server.settimeout(0.2)
    return server


@pytest.mark.postgres
def test_no_host_unix_socket_is_reachable_from_an_attempt_not_even_postgres_in_var_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A network namespace does not isolate path-based Unix sockets: with the host's / bound read-only an
    attempt reached PostgreSQL in /var/run (and wrote the journal), Docker's socket, agents under /run.
    Listeners outside (/var/run, /var/tmp, /run) and inside the repository's .git: the attempt connects
    to none, each listener receives nothing, and a real PostgreSQL server in /var/run is not reached.
    With the seccomp policy off, the allow-list alone hides the host's sockets; the one inside the
    repository is why the policy is there."""
    from anchor.fence import policy as fence
    from anchor.fence.sandbox import Sandbox
    from tests.postgres import postgres_server

    repo = make_repo(tmp_path / "repo", {"reach.py": REACH})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    tag = f"anchor-fence-{os.getpid()}"
    outside = [
        Path("/var/run") / f"{tag}-pg" / ".s.PGSQL.5432",  # /var/run is /run: a directory each
        Path("/var/tmp") / tag / "agent.sock",  # noqa: S108
        Path("/run") / f"{tag}-docker" / "docker.sock",
    ]
    inside = repo / ".git" / "planted.sock"
    listeners = [_listener(p) for p in (*outside, inside)]
    escaped = Path("/var/tmp/anchor-escaped")  # noqa: S108
    try:
        with postgres_server(under=Path("/var/run")) as url:
            box = Sandbox.find(repo, (), (), runtime="bubblewrap")  # the filter swapped below is bwrap's

            def reach(env: dict[str, str] | None = None) -> dict[str, object]:
                argv = box.argv(f"python3 reach.py '{url}' " + " ".join(str(p) for p in (*outside, inside)), run_dir)
                done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
                assert done.returncode == 0, done.stderr
                return dict(json.loads(done.stdout))

            fenced = reach()
            for server in listeners:
                with pytest.raises(socket.timeout):
                    server.accept()  # nothing ever arrived
            monkeypatch.setattr(fence, "seccomp_file", _allow_everything)  # the allow-list alone
            allow_list_only = reach()
    finally:
        for server, path in zip(listeners, (*outside, inside), strict=True):
            server.close()
            path.unlink(missing_ok=True)
            if path.parent.name.startswith(tag):
                path.parent.rmdir()
    assert all(fenced[str(p)] == errno.EACCES for p in (*outside, inside)), fenced  # socket() itself refused
    assert fenced["postgres"] == "OperationalError" and not escaped.exists()
    assert all(allow_list_only[str(p)] == errno.ENOENT for p in outside), allow_list_only  # not there at all
    assert allow_list_only["postgres"] == "OperationalError"
    assert allow_list_only[str(inside)] == "connected"  # shown with the repository: the filter's job


def _allow_everything() -> str:
    """A seccomp program that refuses nothing, compiled by libseccomp, where the policy's would be."""
    import tempfile

    import pyseccomp

    fd, path = tempfile.mkstemp(prefix="allow-all-", suffix=".bpf")
    with os.fdopen(fd, "wb") as out:
        pyseccomp.SyscallFilter(pyseccomp.ALLOW).export_bpf(out)
    return path
