"""A newcomer's first typos (issue 17): every usage mistake is one line and a hint, exit 2, never a
traceback; `--version` and shell completion work. No chain needed."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from anchor import __version__
from tests.conftest import ANCHOR_BIN


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ANCHOR_BIN), *args], capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL
    )


def test_version_prints_the_version_and_exits_0() -> None:
    result = _run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"anchor {__version__}"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["verify"], "Missing argument"),
        (["verify", "--bogus"], "No such option: --bogus"),
        (["--bogus"], "No such option: --bogus"),
        (["flush", "--batch-size", "zero"], "Invalid value for '--batch-size'"),
        (["research", "run"], "Missing option '--repo'"),
        (["nonsense"], "No such command 'nonsense'"),
    ],
    ids=["missing-argument", "unknown-option", "unknown-root-option", "bad-value", "missing-option", "no-command"],
)
def test_a_usage_error_is_a_usage_line_a_hint_and_exit_2(args: list[str], says: str) -> None:
    result = _run(*args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and says in result.stderr
    assert result.stderr.startswith("Usage: anchor") and "--help' for help." in result.stderr


def test_a_usage_error_under_json_is_one_json_error_object() -> None:
    result = _run("--json", "verify", "--bogus")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    error = json.loads(result.stdout)
    assert error["ok"] is False and error["error"]["code"] == "usage" and "--bogus" in error["error"]["message"]


def test_shell_completion_completes_commands() -> None:
    env = {**os.environ, "_ANCHOR_COMPLETE": "complete_bash", "COMP_WORDS": "anchor ver", "COMP_CWORD": "1"}
    result = _run(env=env)
    assert result.returncode == 0 and result.stdout.split() == ["verify"]
    script = _run("--show-completion", "bash")
    assert script.returncode == 0 and "_anchor_completion" in script.stdout


def test_a_malformed_variable_is_named_not_a_traceback() -> None:
    env = {**os.environ, "ANCHOR_RPC_RETRIES": "many"}
    result = _run("--json", "--rpc-url", "http://127.0.0.1:9", "lookup", "0x" + "00" * 32, env=env)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert json.loads(result.stdout)["error"]["detail"] == {"variable": "ANCHOR_RPC_RETRIES"}
