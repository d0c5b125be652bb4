"""Private keys never reach output, files or errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from anchor.chain.keys import load_signer
from anchor.chain.node import rpc_call
from anchor.errors import BadInput, ExitCode
from anchor.settings.model import Environment
from tests.conftest import Chain


def _files_text(root: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


def test_a_funded_env_key_signs_but_appears_nowhere(
    fresh_chain: Chain, bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eth_account import Account

    account = Account.create()
    key_hex = account.key.hex().removeprefix("0x")
    rpc_call(fresh_chain.node.rpc_url, "anvil_setBalance", [account.address, hex(10**20)])
    env = {**fresh_chain.env(), "ANCHOR_PRIVATE_KEY": "0x" + key_hex}
    import subprocess

    from tests.conftest import ANCHOR_BIN

    outputs = []
    for args in (["deploy"], ["anchor", str(bundle)], ["verify", str(bundle)], ["--json", "lookup", str(bundle)]):
        result = subprocess.run([str(ANCHOR_BIN), *args], env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == ExitCode.OK, result.stderr
        outputs.append(result.stdout + result.stderr)
    assert account.address.lower() in _files_text(fresh_chain.data_dir).lower()  # it really signed
    haystack = "".join(outputs) + _files_text(fresh_chain.data_dir) + _files_text(bundle.parent)
    assert key_hex not in haystack.lower()


def test_malformed_key_error_does_not_echo_it() -> None:
    secret = "0x" + "ab" * 31  # one byte short
    with pytest.raises(BadInput) as info:
        load_signer(1, None, Environment({"ANCHOR_PRIVATE_KEY": secret}))
    assert "ab" * 31 not in str(info.value) + info.value.diagnostics()
    # raised `from None`: a traceback never shows the underlying error, whose text could echo the key
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_signer_repr_shows_only_the_address() -> None:
    key = os.urandom(32).hex()
    signer = load_signer(1, None, Environment({"ANCHOR_PRIVATE_KEY": key}))
    assert key not in repr(signer) and signer.address in repr(signer)


def test_a_real_chain_without_a_key_is_refused() -> None:
    with pytest.raises(BadInput, match="no signing key for chain 8453"):
        load_signer(8453, None, Environment())


def test_no_secret_reaches_the_environment_of_a_process_we_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code under measurement, the proposer and git run without our keys, passwords or tokens."""
    from anchor.fence.runner import run_command
    from anchor.research.proposers import CommandProposer

    secrets = {
        "ANCHOR_PRIVATE_KEY": "0x" + "11" * 32,
        "ANCHOR_RESEARCHER_KEY": "0x" + "22" * 32,
        "ANCHOR_KEYSTORE_PASSWORD": "hunter2",
        "ANCHOR_API_TOKENS": "sha256:" + "33" * 32,
        "GITHUB_TOKEN": "ghp_x",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS_SETTING", "kept")
    monkeypatch.setenv("NAMED_SETTING", "passed")
    CommandProposer("env > proposer.env", (), pass_env=("NAMED_SETTING",)).propose(tmp_path, 0)
    run_command("env > attempt.env", tmp_path, tmp_path / "run", 60, 1, None, ("NAMED_SETTING",))
    for dump in ("proposer.env", "attempt.env"):
        text = (tmp_path / dump).read_text()
        assert not [name for name, value in secrets.items() if name in text or value in text], dump
        # both get an allow-list (PATH, locale, HOME and TMPDIR of their own) and what the contract
        # names in pass_env, nothing else of ours
        assert "NAMED_SETTING=passed" in text and "HARMLESS_SETTING" not in text, dump


@pytest.mark.chain
def test_the_local_chain_we_leave_running_holds_none_of_our_secrets(tmp_path: Path) -> None:
    """anvil outlives the command that starts it, and its /proc/<pid>/environ is readable by its user: it
    once held the signing key and the keystore password the command was given."""
    import json

    from tests.cli import run_anchor
    from tests.conftest import free_port

    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env |= {
        "ANCHOR_DATA_DIR": str(tmp_path / "data"),
        "ANCHOR_LOCAL_PORT": str(free_port()),
        "ANCHOR_PRIVATE_KEY": "0x" + "59" * 32,
        "ANCHOR_KEYSTORE_PASSWORD": "hunter2",
    }
    assert run_anchor(["chain", "up"], env).returncode == ExitCode.OK
    try:
        status = json.loads(run_anchor(["--json", "chain", "status"], env).stdout)
        pid = status["chain"]["pid"]
        held = Path(f"/proc/{pid}/environ").read_bytes()
        assert b"ANCHOR_PRIVATE_KEY" not in held and b"hunter2" not in held and b"59" * 32 not in held
    finally:
        assert run_anchor(["chain", "down"], env).returncode == ExitCode.OK
