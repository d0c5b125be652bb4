"""anchor.toml: project and user files under options and variables, every value with its
source in `anchor config show`, and no secret ever read from a file."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from anchor.errors import ExitCode
from tests.cli import run_anchor


def _show(cwd: Path, home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    return run_anchor([*args, "config", "show", "--json"], {**base, "XDG_CONFIG_HOME": str(home), **env}, cwd=cwd)


def _settings(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout)["settings"])


def test_options_beat_variables_beat_the_project_file_beat_the_user_file(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    (project / "deep" / "er").mkdir(parents=True)
    (home / "anchor").mkdir(parents=True)
    (project / "anchor.toml").write_text('data_dir = "state"\nrpc_url = "http://project:8545"\n')
    (home / "anchor" / "anchor.toml").write_text('rpc_url = "http://user:8545"\nlocal_port = 19000\n')
    found = _settings(_show(project / "deep" / "er", home))
    assert found["data_dir"] == {"value": str(project / "state"), "source": str(project / "anchor.toml")}
    assert found["rpc_url"]["source"] == str(project / "anchor.toml")
    assert found["local_port"] == {"value": "19000", "source": str(home / "anchor" / "anchor.toml")}
    found = _settings(_show(project, home, ANCHOR_RPC_URL="http://env:8545"))
    assert found["rpc_url"] == {"value": "http://env:8545", "source": "ANCHOR_RPC_URL"}
    found = _settings(_show(project, home, "--rpc-url", "http://flag:8545", ANCHOR_RPC_URL="http://env:8545"))
    assert found["rpc_url"] == {"value": "http://flag:8545", "source": "--rpc-url"}


def test_a_config_file_never_holds_a_secret_or_an_unknown_setting(tmp_path: Path) -> None:
    for text, named in (
        ('private_key = "0x01"\n', "private_key"),
        ('rpc = "http://x"\n', "rpc"),
        ('keystore_password = "hunter2"\n', "keystore_password"),
        ('journal_url = "postgresql://u:hunter2@localhost/db"\n', "journal_url"),  # the docs said refused; it was read
        ('journal_url = "postgresql://u@localhost/db?sslpassword=hunter2"\n', "journal_url"),
        ('rpc_url = "https://rpc.example?token=hunter2"\n', "rpc_url"),
    ):
        (tmp_path / "anchor.toml").write_text(text)
        result = _show(tmp_path, tmp_path / "home")
        assert result.returncode == ExitCode.BAD_INPUT and "Traceback" not in result.stderr
        assert json.loads(result.stdout)["error"]["detail"]["field"] == named
        assert "hunter2" not in result.stdout + result.stderr
    (tmp_path / "anchor.toml").write_text('rpc_ulr = "http://x"\n')  # a typo gets the near name, as a variable's does
    assert "unknown setting 'rpc_ulr' (did you mean rpc_url?)" in _show(tmp_path, tmp_path / "home").stdout


def test_every_anchor_variable_the_code_reads_is_documented_in_one_table() -> None:
    """docs/configuration.md is the one place a user learns what ANCHOR_* does; a variable read in the
    code and missing there is a setting nobody can find."""
    import re

    from tests.conftest import ROOT

    used = {
        name
        for folder in ("anchor", "api")
        for source in (ROOT / folder).rglob("*.py")
        for name in re.findall(r"ANCHOR_[A-Z0-9_]+", source.read_text())
    }
    documented = set(re.findall(r"`(ANCHOR_[A-Z0-9_]+)`", (ROOT / "docs" / "configuration.md").read_text()))
    assert used and not used - documented


def _documented_variables() -> list[str]:
    import re

    from tests.conftest import ROOT

    text = (ROOT / "docs" / "configuration.md").read_text().split("## Every `ANCHOR_*` variable")[1]
    return re.findall(r"^\| `(ANCHOR_[A-Z0-9_]+)` \|", text.split("Given by the harness")[0], flags=re.M)


def test_the_variables_config_show_knows_are_the_documented_ones_and_all_the_code_reads() -> None:
    import re

    from anchor.settings.variables import GIVEN_TO_CHILDREN, VARIABLES
    from tests.conftest import ROOT

    assert len(VARIABLES) == len(set(VARIABLES)) >= 50
    assert sorted(VARIABLES) == sorted(_documented_variables())
    used = {
        name
        for folder in ("anchor", "api")
        for source in (ROOT / folder).rglob("*.py")
        for name in re.findall(r"ANCHOR_[A-Z0-9_]+", source.read_text())
    }
    assert used - set(VARIABLES) - set(GIVEN_TO_CHILDREN) == set()


def test_config_show_lists_every_variable_with_its_source_never_a_secrets_value_and_names_a_typo(
    tmp_path: Path,
) -> None:
    secret = "0x" + "ab" * 32
    typo = {"ANCHOR_RPC_ULR": "http://127.0.0.1:1", "ANCHOR_READ_RPCS": "https://rpc.example/v2/SECRETKEY"}
    result = _show(tmp_path, tmp_path / "home", ANCHOR_PRIVATE_KEY=secret, ANCHOR_LOG_WINDOW="500", **typo)
    assert result.returncode == 0, result.stderr
    variables = json.loads(result.stdout)["variables"]
    assert set(_documented_variables()) <= set(variables)
    assert variables["ANCHOR_LOG_WINDOW"] == {"set": True, "value": "500", "source": "environment"}
    assert variables["ANCHOR_DEBUG"] == {"set": False, "value": None, "source": "default"}
    assert variables["ANCHOR_PRIVATE_KEY"]["set"] is True
    assert "did you mean ANCHOR_RPC_URL?" in variables["ANCHOR_RPC_ULR"]["source"]
    assert secret not in result.stdout and "SECRETKEY" not in result.stdout
    text = run_anchor(["config", "show"], {**os.environ, "ANCHOR_PRIVATE_KEY": secret}, cwd=tmp_path)
    assert text.returncode == 0 and secret not in text.stdout
    assert all(re.search(rf"^  {name} ", text.stdout, flags=re.M) for name in _documented_variables())


def test_nothing_outside_anchor_settings_reads_an_anchor_variable_from_the_environment() -> None:
    """every `ANCHOR_*` variable is read in anchor/settings (typed, with its default:
    anchor.settings.model.Environment), so a setting cannot hide in the module that uses it. A read is any
    `os.environ`/`os.getenv` expression naming one, or the old per-module `env_number(` helper; a
    child's environment being *built* (`{**os.environ, "ANCHOR_DATA_DIR": …}`) is not a read."""
    import ast

    root = Path(__file__).resolve().parents[2]
    reads = []
    for path in sorted([*(root / "anchor").rglob("*.py"), *(root / "api").rglob("*.py")]):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("anchor/settings/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = ast.unparse(node.func) if isinstance(node, ast.Call) else ""
            named = isinstance(node, ast.Call) and any("ANCHOR_" in ast.unparse(arg) for arg in node.args)
            if called == "env_number" or called in ("os.getenv", "os.environ.get", "os.environ.pop") and named:
                reads.append(f"{rel}:{node.lineno}: {ast.unparse(node)[:80]}")
            if (
                isinstance(node, ast.Subscript)
                and ast.unparse(node.value) == "os.environ"
                and isinstance(node.ctx, ast.Load)
                and "ANCHOR_" in ast.unparse(node.slice)
            ):
                reads.append(f"{rel}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert reads == []


def test_a_data_dir_that_is_a_file_or_cannot_be_made_is_named_with_where_it_came_from_never_a_bug(
    tmp_path: Path,
) -> None:
    """`anchor --data-dir results.csv stamp x` said "unexpected NotADirectoryError; this is a bug in anchor"
    (exit 1), as did one under a file (`results.csv/.anchor`), and a data dir that cannot be made (under /proc)
    "unexpected FileNotFoundError" (`stamp`, `journal submit`, `snapshot add`). Each is the
    user's to fix: exit 2, naming the directory and where the setting came from; nothing is written."""
    (tmp_path / "x.txt").write_text("x")
    (tmp_path / "results.csv").write_text("a,b\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    by_option = run_anchor(["--data-dir", "results.csv", "stamp", "x.txt"], env, cwd=tmp_path)
    assert by_option.returncode == ExitCode.BAD_INPUT, by_option.stderr
    assert by_option.stderr.startswith(
        "error[bad_input]: data directory results.csv (from --data-dir): not a directory (a file is in the way)"
    ), by_option.stderr
    by_variable = run_anchor(["stamp", "x.txt"], env | {"ANCHOR_DATA_DIR": "results.csv"}, cwd=tmp_path)
    assert by_variable.returncode == ExitCode.BAD_INPUT and "(from ANCHOR_DATA_DIR)" in by_variable.stderr
    # a file further up the path: `exists()` says False under it, and verify/info/stamp met NotADirectoryError
    for words in (["stamp", "x.txt"], ["verify", "x.txt"], ["info"]):
        under = run_anchor(words, env | {"ANCHOR_DATA_DIR": "results.csv/.anchor"}, cwd=tmp_path)
        assert under.returncode == ExitCode.BAD_INPUT, under.stderr
        assert f"a file is in the way: {tmp_path / 'results.csv'} is a file" in under.stderr, under.stderr
    cannot = run_anchor(["--data-dir", "/proc/anchor-data", "snapshot", "add", "x.txt"], env, cwd=tmp_path)
    assert cannot.returncode == ExitCode.BAD_INPUT, cannot.stderr
    assert cannot.stderr.startswith("error[bad_input]: /proc/anchor-data: cannot be made"), cannot.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv", "x.txt"]


def test_config_show_shows_no_secret_in_a_query_a_url_or_a_mistyped_name(tmp_path: Path) -> None:
    """`config show` printed a journal URL's `?password=` (libpq reads it as readily as `user:pass@`), the
    tokens in ANCHOR_SERVICE_URLS and ANCHOR_EXPLORER_URL, and a mistyped secret's value (ANCHOR_PRIVATE_KY
    is no variable anchor knows, so it was shown as any unknown one)."""
    secrets = ["S3CRETPW2", "SSLPW", "SVCTOKEN", "EXPLTOKEN", "0xS3CRETPRIVKEY", "RPCKEY"]
    result = _show(
        tmp_path,
        tmp_path / "home",
        ANCHOR_JOURNAL_URL="postgresql://db.example/anchor?user=u&password=S3CRETPW2&sslpassword=SSLPW",
        ANCHOR_SERVICE_URLS="https://cal.example/?token=SVCTOKEN",
        ANCHOR_EXPLORER_URL="https://explorer.example/?token=EXPLTOKEN",
        ANCHOR_PRIVATE_KY="0xS3CRETPRIVKEY",
        ANCHOR_RPC_URL="https://rpc.example/v3/RPCKEY",
    )
    shown = result.stdout + result.stderr
    assert result.returncode == 0, result.stderr
    assert [s for s in secrets if s in shown] == []
    assert "did you mean ANCHOR_PRIVATE_KEY?" in shown
