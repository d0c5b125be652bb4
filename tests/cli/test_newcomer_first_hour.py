"""A newcomer's first hour: following the README, docs/calendar.md, docs/research.md
and the quickstart literally, with a typo or two. Each case is what the old code said (in the test's
docstring or comment) against what a user of cosign, ots or forge would expect."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from tests.cli import ANCHOR_BIN, run_anchor
from tests.conftest import Chain, deployed, free_port

pytestmark = pytest.mark.chain


def _folder(root: Path, name: str, files: dict[str, str]) -> Path:
    folder = root / name
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def test_a_mistyped_path_and_a_file_inside_a_stamped_folder_get_hints_that_lead_somewhere(
    deployed_chain: Chain, tmp_path: Path
) -> None:
    """Was: `verify exmaples/bundle` said "no proof ... stamp it with anchor stamp exmaples/bundle", and a
    file inside a stamped folder was told to be stamped (a second record of its own)."""
    bundle = _folder(tmp_path / "examples", "bundle", {"README.md": "r\n", "data/x.csv": "1\n"})
    deployed_chain.cli("stamp", str(bundle), check=True)
    env = deployed_chain.env()
    typo = run_anchor(["verify", "exmaples/bundle"], env, cwd=tmp_path)
    assert typo.returncode == ExitCode.BAD_INPUT, typo.stderr
    assert "exmaples/bundle: no such file or folder (did you mean examples/bundle?)" in typo.stderr
    assert "anchor stamp" not in typo.stderr
    inside = run_anchor(["verify", "examples/bundle/README.md"], env, cwd=tmp_path)
    assert inside.returncode == ExitCode.NOT_ANCHORED
    assert "`anchor prove examples/bundle/README.md --in examples/bundle`" in inside.stderr
    assert "anchor stamp" not in inside.stderr
    proved = run_anchor(["prove", "examples/bundle/README.md", "--in", "examples/bundle"], env, cwd=tmp_path)
    assert proved.returncode == ExitCode.OK, proved.stderr  # the hint, followed, works
    assert run_anchor(["verify", "examples/bundle/README.md"], env, cwd=tmp_path).returncode == ExitCode.OK
    never = _folder(tmp_path / "deep" / "er" / "still", "never", {"a": "1\n"})
    looked = json.loads(run_anchor(["--json", "verify", str(never)], env).stdout)["error"]["detail"]["looked_in"]
    assert looked == [f"{never}.anchor.json"]  # was: a candidate in every enclosing folder up to /


def test_another_folders_proof_is_named_as_such_not_as_renames(deployed_chain: Chain, tmp_path: Path) -> None:
    first = _folder(tmp_path, "first", {"a.txt": "1\n", "b.txt": "2\n", "c.txt": "3\n"})
    second = _folder(tmp_path, "second", {"x.txt": "1\n", "y.txt": "2\n"})
    deployed_chain.cli("stamp", str(first), check=True)
    wrong = deployed_chain.cli("verify", str(second), "--proof", str(tmp_path / "first.anchor.json"))
    assert wrong.returncode == ExitCode.TAMPERED
    assert "is for manifest 0x" in wrong.stderr and "not this folder's 0x" in wrong.stderr, wrong.stderr
    assert "renamed" not in wrong.stderr
    (first / "a.txt").write_text("edited\n")  # a real edit still lists what changed
    edited = deployed_chain.cli("verify", str(first))
    assert edited.returncode == ExitCode.TAMPERED and "a.txt" in edited.stderr
    assert "is for manifest" not in edited.stderr


def test_min_finality_safe_on_the_local_chain_says_later_never_comes(deployed_chain: Chain, tmp_path: Path) -> None:
    """Was: "not yet safe; try again later", and on a local chain that mines only when sent transactions
    anvil's safe head (head - 32) stays at block 0."""
    folder = _folder(tmp_path, "results", {"m.json": "{}\n"})
    deployed_chain.cli("stamp", str(folder), check=True)
    for tag in ("safe", "finalized"):
        said = deployed_chain.cli("verify", str(folder), "--min-finality", tag)
        assert said.returncode == ExitCode.NOT_FINAL, said.stderr
        assert "later may never come on its own" in said.stderr and "--min-finality 1" in said.stderr
        assert "try again later" not in said.stderr
    assert deployed_chain.cli("verify", str(folder), "--min-finality", "1").returncode == ExitCode.OK


def test_typed_endpoints_and_addresses_are_refused_with_what_was_meant(deployed_chain: Chain, tmp_path: Path) -> None:
    """Was: `--rpc-url 127.0.0.1:18545` said "RPC URL ://None"; `--registry 0x1234` was taken as an
    address; `https://` to an http port was a bare ConnectionError."""
    folder = _folder(tmp_path, "results", {"m.json": "{}\n"})
    deployed_chain.cli("stamp", str(folder), check=True)
    env = deployed_chain.env()
    bare = run_anchor(["--rpc-url", "127.0.0.1:18545", "verify", str(folder)], env)
    assert bare.returncode == ExitCode.BAD_INPUT and "://None" not in bare.stderr
    assert "(did you mean http://127.0.0.1:18545?)" in bare.stderr
    short = run_anchor(["verify", str(folder), "--registry", "0x1234"], env)
    assert short.returncode == ExitCode.BAD_INPUT and "--registry '0x1234': expected an address" in short.stderr
    tls = run_anchor(
        ["--rpc-url", deployed_chain.node.rpc_url.replace("http://", "https://"), "verify", str(folder)],
        {**env, "ANCHOR_RPC_RETRIES": "0"},
    )
    assert tls.returncode == ExitCode.CHAIN_UNREACHABLE, tls.stderr
    assert "the TLS handshake failed" in tls.stderr and "is it an http:// endpoint?" in tls.stderr


def test_two_data_dirs_on_one_port_name_each_other(tmp_path: Path) -> None:
    """Was: "port 18545 ... is used by another process" (it was Anchor's own chain of the other data
    dir), and verify then suggested `anchor chain up`, which could not work."""
    port = str(free_port())
    first = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    first.update(ANCHOR_DATA_DIR=str(tmp_path / "demo"), ANCHOR_LOCAL_PORT=port)
    second = {**first, "ANCHOR_DATA_DIR": str(tmp_path / "tour")}
    run_anchor(["chain", "up"], first, check=True)
    try:
        up = run_anchor(["chain", "up"], second)
        assert up.returncode == ExitCode.BAD_INPUT, up.stderr
        assert f"used by the local chain of another data dir, {tmp_path / 'demo'}" in up.stderr
        assert f"ANCHOR_DATA_DIR={tmp_path / 'demo'} anchor chain down" in up.stderr
        read = run_anchor(["lookup", "0x" + "11" * 32], second)
        assert read.returncode == ExitCode.CHAIN_UNREACHABLE and "another data dir" in read.stderr
        assert "start it with `anchor chain up`" not in read.stderr
    finally:
        run_anchor(["chain", "down"], first, check=True)


def test_a_stop_rule_reads_as_a_target_and_a_mistyped_mission_gets_the_near_name(
    deployed_chain: Chain, tmp_path: Path
) -> None:
    """Was: "sharpe=13.93 meets the stop rule (max 1.5)", which reads as an upper bound; `mission run
    exmaple-1` had no did-you-mean."""
    from anchor.missions.runner import met_rule
    from tests.missions.test_mission_run import _dispatch

    result = tmp_path / "result"
    result.mkdir()
    (result / "metrics.json").write_text('{"sharpe": 13.93}')
    _, said = met_rule([{"metric": "sharpe", "mode": "max", "target": "1.5"}], result)
    assert said == "sharpe=13.93 meets the stop rule sharpe >= 1.5", said
    _dispatch(deployed_chain, tmp_path, "example-1", "true")
    typo = deployed_chain.cli("mission", "run", "exmaple-1")
    assert typo.returncode == ExitCode.NOT_ANCHORED and "did you mean 'example-1'?" in typo.stderr, typo.stderr


def test_journal_flush_prints_no_blank_first_line_and_serve_says_where_its_pages_are(
    deployed_chain: Chain, tmp_path: Path
) -> None:
    deployed_chain.cli("journal", "submit", str(_folder(tmp_path, "r", {"a": "1\n"})), check=True)
    flushed = subprocess.run(
        [str(ANCHOR_BIN), "journal", "flush"], env=deployed_chain.env(), capture_output=True, text=True, timeout=120
    )
    assert flushed.returncode == ExitCode.OK and flushed.stdout.startswith("confirmed "), repr(flushed.stdout)
    from tests.api_server import anchor_serve

    log = tmp_path / "serve.log"
    import urllib.request

    with anchor_serve([], deployed_chain.env(), log) as url:
        urllib.request.urlopen(f"{url}/health", timeout=10).read()  # noqa: S310 - loopback
    err = log.read_text()
    assert f"the explorer at {url}/explorer/" in err and f"{url}/verify" in err and f"{url}/docs" in err, err
    assert "GET /health" not in err  # no line per request unless asked (a tenth of each request)
    logged = tmp_path / "serve-logged.log"
    with anchor_serve(["--access-log"], deployed_chain.env(), logged) as url:
        urllib.request.urlopen(f"{url}/health", timeout=10).read()  # noqa: S310 - loopback
    assert "GET /health" in logged.read_text()


def test_upgrade_without_rpc_url_names_the_services_chain_and_a_silent_service_is_said_so(tmp_path: Path) -> None:
    """Was: `anchor upgrade results/` as docs/calendar.md wrote it said "the local chain is not
    running; start it with `anchor chain up`", and doing so failed too; `verify` of a pending proof
    while the service was down said only "pending"."""
    from tests.calendar.test_calendar import _client, _results, local_service

    client = _client(tmp_path)
    with local_service(tmp_path) as service:
        results = _results(tmp_path)
        run_anchor(["stamp", str(results), "--service", service.url], client, check=True)
        service.flush()
        bare = run_anchor(["upgrade", str(results)], client)
        assert bare.returncode == ExitCode.PENDING, bare.stdout + bare.stderr
        assert "the service's chain: give --rpc-url, a URL of that chain" in bare.stdout
        assert "anchor chain up" not in bare.stdout + bare.stderr
        service.replica.stop()
        down = run_anchor(["verify", str(results)], client)
        assert down.returncode == ExitCode.PENDING
        assert "not reachable now: it could not be asked for its anchor" in down.stderr, down.stderr


def test_the_calendar_docs_token_recipe_makes_a_hash_the_service_accepts(tmp_path: Path) -> None:
    """docs/calendar.md's first lines, run as written: `echo` would add a newline and every request
    would get 401; `printf %s` gives the hash the service compares."""
    import hashlib
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "calendar.md").read_text()
    block = re.search(r"```sh\n(.*?)```", doc, flags=re.S).group(1)  # type: ignore[union-attr]
    recipe = "\n".join(line for line in block.splitlines() if line.startswith("export "))[:2000]
    assert "printf %s" in recipe and "echo" not in recipe
    if shutil.which("openssl") is None:
        recipe = recipe.replace("$(openssl rand -hex 32)", "0123456789abcdef" * 4)
    made = subprocess.run(
        ["bash", "-c", recipe + '\nprintf "%s\\n%s" "$TOKEN" "$ANCHOR_API_TOKENS"'],
        capture_output=True,
        text=True,
        check=True,
    )
    token, hashed = made.stdout.splitlines()
    assert hashed == "sha256:" + hashlib.sha256(token.encode()).hexdigest() + "/submit"
    with deployed(tmp_path / "svc") as chain:
        from tests.calendar.test_calendar import Replica  # the service, with the documented hash

        replica = Replica(0, chain.data_dir, {**chain.env(), "ANCHOR_API_TOKENS": hashed, "ANCHOR_API_FLUSH": "0"})
        replica.start()
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
            env.update(ANCHOR_DATA_DIR=str(tmp_path / "client"), ANCHOR_SERVICE_TOKEN=token)
            folder = _folder(tmp_path, "results", {"m.json": "{}\n"})
            stamped = run_anchor(["stamp", str(folder), "--service", replica.url], env)
            assert stamped.returncode == ExitCode.OK, stamped.stdout + stamped.stderr
        finally:
            replica.stop()
