"""The examples the README and docs/ tell a newcomer to run, run here as written: a code block that
stops working, or names a command or option that does not exist, fails a test."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, anvil, free_port
from tests.newcomer import block_after, run_block, workspace

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def sh_blocks(doc: Path) -> list[str]:
    """The ```sh code blocks of `doc`, in order."""
    return re.findall(r"```sh\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.chain  # an anvil of its own, as Base Sepolia (84532) with 2 s blocks
def test_the_base_sepolia_quickstart_runs_as_written_and_says_what_it_waits_for(tmp_path: Path) -> None:
    """docs/quickstart-base-sepolia.md, steps 1-6, against an anvil with Base Sepolia's chain id
    and 2 s blocks; only the RPC URL and the faucet differ (the faucet is anvil_setBalance). The
    registry is at the address the doc prints (the canonical one, the same on every chain), and the
    colleague verifies with the RPC URL alone, then sees the retraction. Step 1 once failed as written
    (its heredoc was Python's stdin, so `input()` met EOF and no keystore was made)."""
    from anchor.chain.node import rpc_call

    doc = ROOT / "docs" / "quickstart-base-sepolia.md"
    key, balance, deploy, code_check, stamp, verify, _cast, retract = sh_blocks(doc)
    work, env = workspace(tmp_path)
    (work / "results").mkdir()
    (work / "results" / "metrics.json").write_text('{"accuracy": 0.93}\n')
    with anvil(84532, 2) as url:
        public = "https://sepolia.base.org"
        made = run_block(key.replace(public, url) + "\nenv -0 > step1.env\n", work, env, stdin="correct horse\n")
        assert (work / "researcher.keystore.json").stat().st_mode & 0o777 == 0o600
        address = re.search(r"fund this address: (0x[0-9a-fA-F]{40})", made.stdout).group(1)  # type: ignore[union-attr]
        rpc_call(url, "anvil_setBalance", [address, hex(10**18)])  # the faucet
        exported = dict(line.split("=", 1) for line in (work / "step1.env").read_text().split("\0") if "=" in line)
        env.update({k: exported[k] for k in ("ANCHOR_KEYSTORE", "ANCHOR_KEYSTORE_PASSWORD", "ANCHOR_RPC_URL")})
        assert env["ANCHOR_RPC_URL"] == url and "PRIVATE_KEY" not in " ".join(exported)
        funded = run_block(balance, work, env)  # step 2: the faucet's ETH arrived
        assert f"{address} holds 1.000000 ETH on Base Sepolia (84532)" in funded.stdout, funded.stdout + funded.stderr

        deployed = run_block(deploy, work, env)
        assert "on Base Sepolia (84532)" in deployed.stdout
        registry = re.search(r"registry deployed at (0x[0-9a-fA-F]{40})", deployed.stdout).group(1)  # type: ignore[union-attr]
        assert registry in deploy  # the documented address is the one it lands at: the canonical one
        code = run_block(code_check.replace(public, url), work, env)
        assert code.stdout.strip() == re.search(r"# (0x[0-9a-f]{64})", code_check).group(1)  # type: ignore[union-attr]
        stamped = run_block(stamp, work, env)
        assert "results: anchored" in stamped.stdout and (work / "results.anchor.json").is_file()
        waits = [line for line in stamped.stderr.splitlines() if "waiting for 5 confirmations" in line]
        assert waits and waits[-1].endswith("(4/5)"), stamped.stderr  # it said what it waited for
        (tmp_path / "stamp-progress.txt").write_text(stamped.stderr)

        colleague = {**env, "HOME": str(tmp_path / "colleague")}  # no key, no data dir of the writer's
        del colleague["ANCHOR_KEYSTORE"], colleague["ANCHOR_KEYSTORE_PASSWORD"]
        colleague["ANCHOR_DATA_DIR"] = str(tmp_path / "colleague" / ".anchor")
        assert "--registry" not in verify  # nothing handed over: the RPC URL alone
        checked = run_block(verify.replace(public, url), work, colleague)
        assert "OK: results (1 file) is anchored" in checked.stdout
        assert f"by          {address}" in checked.stdout and "(trusted by canonical address" in checked.stdout
        writer, reader = retract.split("\nanchor verify", 1)
        run_block(writer, work, env)
        withdrawn = run_block("anchor verify" + reader, work, colleague)
        assert "error[retracted]" in withdrawn.stderr and "exit 16" in withdrawn.stdout
        assert '"the metric was computed on the training split"' in withdrawn.stderr


def _anchor_invocations(text: str) -> list[list[str]]:
    """Every `anchor …` the text shows: in code blocks (comments dropped, `\\` continuations joined, each
    command of a `&&`/`;`/`|`/`$(` chain) and in `inline code`."""
    import shlex

    found: list[list[str]] = []
    chunks = [b.replace("\\\n", " ") for b in re.findall(r"```(?:sh)?\n(.*?)```", text, flags=re.S)]
    lines = [line.split(" #")[0] for chunk in chunks for line in chunk.splitlines() if not line.startswith("#")]
    lines += re.findall(r"(?<!`)`(anchor [^`]+)`", text)
    for line in lines:
        for part in re.split(r"&&|\|\||;|\||\$\(|\)", line):
            try:
                words = shlex.split(part.strip())
            except ValueError:
                continue
            if words and words[0] == "anchor" and len(words) > 1:
                found.append(words[1:])
    return found


def _check(words: list[str], root: object) -> str | None:
    """None if `anchor WORDS` names a real command and only options it has (the root's options before
    the first command word, as the parser takes them, and `--rpc-url`/`--data-dir` after it, which every
    command takes too: anchor.cli.commands.AnchorCommand); else what is wrong."""
    import click

    command, path = root, ["anchor"]
    for word in words:
        if word.startswith("--"):
            name = word.split("=")[0]
            known = {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}  # type: ignore[attr-defined]
            if name not in known:
                return f"{' '.join(path)}: no option {name}"
        elif isinstance(command, click.Group) and re.fullmatch(r"[a-z][a-z-]*", word):
            sub = command.get_command(click.Context(command), word)
            if sub is None:
                return f"{' '.join(path)}: no command {word!r}"
            command = sub
            path.append(word)
    return None


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_documented_command_and_option_exists(doc: Path) -> None:
    """A newcomer types what the docs show: a renamed command or a dropped option fails here first."""
    from anchor.cli.app import app

    wrong = [
        f"`anchor {' '.join(words)}`: {why}"
        for words in _anchor_invocations(doc.read_text(encoding="utf-8"))
        if (why := _check(words, app)) is not None
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.chain
@pytest.mark.sandbox  # the mission and the research attempts run in bubblewrap
def test_the_readme_tour_and_the_missions_example_run_as_written_in_a_fresh_checkout(tmp_path: Path) -> None:
    """README.md's tour, then docs/missions.md's example, every line in order, in a directory shaped
    like a fresh clone (its examples and its .venv), with nothing of ours in the environment but a free
    port for the embedded chain. The tour's mission once could not run (`run.py` did not exist)."""
    import shutil

    tour = block_after(ROOT / "README.md", "## A short tour of the CLI")
    missions = block_after(ROOT / "docs" / "missions.md", "## An example to run")
    work, env = workspace(tmp_path)
    shutil.copytree(ROOT / "examples", work / "examples")
    env["ANCHOR_LOCAL_PORT"] = str(free_port())
    try:
        ran = run_block(tour, work, env)
        example = run_block(missions, work, env)  # after the tour stopped the chain: `mission run` starts it
    finally:
        subprocess.run(
            ["bash", "-c", ". .venv/bin/activate && anchor chain down"],
            cwd=work,
            env=env,
            check=False,
            capture_output=True,
        )
    out = ran.stdout
    assert "examples/bundle: anchored" in out and "OK: examples/bundle (" in out
    assert "OK: examples/result-bundle/outputs (" in out
    from anchor.fence.sandbox import default_runtime

    assert f"mission 'tour-1' ran ({default_runtime()})" in out and "mission 'tour-1': done" in out
    assert "OK: .anchor/missions/tour-1/result (1 file) is anchored" in out
    assert "OK: .anchor/claim.anchor.tar: the report above is re-derived from the claim alone" in out
    assert json.loads((work / ".anchor" / "missions" / "tour-1" / "result" / "metrics.json").read_text())["days"] == 7
    assert "local chain stopped" in out.splitlines()[-4]
    assert "started the local chain at" in example.stderr and "stop it with `anchor chain down`" in example.stderr
    assert "OK: .anchor/missions/example-1/result (1 file) is anchored" in example.stdout
    assert re.search(r"^tour-1 +done .*\n^example-1 +done", example.stdout, flags=re.M)


@pytest.mark.chain  # an anvil of its own that mines nothing
def test_stamp_on_a_chain_that_mines_no_block_says_what_it_waits_for_and_what_to_do(tmp_path: Path) -> None:
    """It once waited in silence (killed after 60 s): now the transaction is named as sent, and when
    no block comes for ANCHOR_QUIET_BLOCKS_S it says so with what to do; stopped here by its group."""
    from anchor.chain.compiler import compile_registry
    from anchor.chain.connection import connect
    from anchor.chain.deployment import deploy
    from anchor.chain.keys import load_signer
    from anchor.chain.node import rpc_call
    from anchor.settings.model import Environment
    from tests.cli import ANCHOR_BIN

    work, env = workspace(tmp_path)
    (work / "results").mkdir()
    (work / "results" / "a.txt").write_text("a\n")
    dev_key = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"  # anvil's first dev account
    with anvil(84532, None) as url:
        env.update(
            ANCHOR_RPC_URL=url,
            ANCHOR_PRIVATE_KEY=dev_key,
            ANCHOR_DATA_DIR=str(work / ".anchor"),
            ANCHOR_QUIET_BLOCKS_S="3",
        )
        w3, chain_id = connect(url)
        rpc_call(url, "evm_setAutomine", [True])  # the registry first, then no more blocks
        signer = load_signer(chain_id, env=Environment({"ANCHOR_PRIVATE_KEY": dev_key}))
        deploy(w3, chain_id, signer, compile_registry(), work / ".anchor")
        rpc_call(url, "evm_setAutomine", [False])
        stamp = subprocess.Popen(
            [str(ANCHOR_BIN), "stamp", "results"],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        lines: list[str] = []
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any("no new block" in line for line in lines):
                line = stamp.stderr.readline()  # type: ignore[union-attr]
                if not line:
                    break
                lines.append(line.rstrip())
        finally:
            os.killpg(stamp.pid, signal.SIGTERM)
            stamp.wait()
    assert any(re.match(r"tx 0x[0-9a-f]{64} sent; block \d+: waiting for it to be mined", line) for line in lines), (
        lines
    )
    hint = next(line for line in lines if "no new block" in line)
    assert "is the chain producing blocks?" in hint and "anchor journal flush" in hint
