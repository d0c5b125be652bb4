"""The settings model: each `ANCHOR_*` variable read once at the edge, typed, from the environment over
a `.env` file over its default; a bad value named by its variable; secrets never shown."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from anchor.errors import BadInput, ExitCode
from anchor.settings.model import Environment, Secret, read_dotenv
from anchor.settings.session import Settings
from tests.cli import run_anchor

ROOT = Path(__file__).resolve().parents[2]


def _clean(**values: str) -> dict[str, str]:
    """Our environment without any `ANCHOR_*` variable, and `values`."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}, **values}


def test_the_environment_beats_a_dotenv_file_which_beats_the_default(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("# a comment\nexport ANCHOR_RPC_RETRIES=7\nANCHOR_LEASE_S='12.5'\nOTHER_TOOL=x\n")
    loaded = Environment.load({"ANCHOR_RPC_RETRIES": "2"}, dotenv)
    assert loaded.rpc_retries == 2 and loaded.source("ANCHOR_RPC_RETRIES") == "environment"
    assert loaded.lease_s == 12.5 and loaded.source("ANCHOR_LEASE_S") == str(dotenv.resolve())
    assert loaded.rpc_timeout_s == 10.0 and loaded.source("ANCHOR_RPC_TIMEOUT_S") == "default"
    assert loaded.raw("OTHER_TOOL") is None  # another tool's line in the same file is its own business


def test_config_show_names_a_dotenv_file_as_the_source_of_its_values(tmp_path: Path) -> None:
    """The order, first match wins: an option, the environment, a `.env` file, an anchor.toml, the default."""
    dotenv = (tmp_path / ".env").resolve()
    dotenv.write_text("ANCHOR_LOG_WINDOW=500\nANCHOR_RPC_URL=http://dotenv:8545\nANCHOR_LOCAL_PORT=19001\n")
    (tmp_path / "anchor.toml").write_text('rpc_url = "http://file:8545"\nlocal_port = 19002\nkeystore = "k.json"\n')
    env = _clean(XDG_CONFIG_HOME=str(tmp_path / "home"), ANCHOR_RPC_URL="http://env:8545", ANCHOR_ENV_FILE=".env")
    result = run_anchor(["config", "show", "--json"], env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["settings"]["local_port"] == {"value": "19001", "source": f"ANCHOR_LOCAL_PORT in {dotenv}"}
    assert shown["settings"]["keystore"]["source"] == str((tmp_path / "anchor.toml").resolve())
    flag = run_anchor(["--rpc-url", "http://flag:8545", "config", "show", "--json"], env, cwd=tmp_path)
    assert json.loads(flag.stdout)["settings"]["rpc_url"] == {"value": "http://flag:8545", "source": "--rpc-url"}
    assert shown["variables"]["ANCHOR_LOG_WINDOW"] == {
        "set": True,
        "value": "500",
        "source": str((tmp_path / ".env").resolve()),
    }
    assert shown["settings"]["rpc_url"] == {"value": "http://env:8545", "source": "ANCHOR_RPC_URL"}


def test_a_bad_value_is_refused_naming_its_variable_and_only_where_it_is_used() -> None:
    settings = Environment({"ANCHOR_CALENDAR_RATE": "fast", "ANCHOR_RPC_RETRIES": "-1"})
    assert settings.rpc_timeout_s == 10.0  # a typo elsewhere says nothing to a command that does not use it
    with pytest.raises(BadInput, match="ANCHOR_CALENDAR_RATE='fast': expected a number") as info:
        _ = settings.calendar_rate
    assert info.value.detail == {"variable": "ANCHOR_CALENDAR_RATE"}
    with pytest.raises(BadInput, match="must not be negative"):
        _ = settings.rpc_retries
    for not_a_url in ("notaurl", "ftp://x", "http://"):  # it became the base of every explorer link
        with pytest.raises(BadInput, match="ANCHOR_EXPLORER_URL=.*expected an http"):
            _ = Environment({"ANCHOR_EXPLORER_URL": not_a_url}).explorer_url


def test_a_bad_value_in_a_dotenv_file_is_exit_2_naming_the_variable_never_a_traceback(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("ANCHOR_RPC_RETRIES=many\n")
    result = run_anchor(
        ["--json", "--rpc-url", "http://127.0.0.1:9", "lookup", "0x" + "00" * 32],
        _clean(ANCHOR_ENV_FILE=".env"),
        cwd=tmp_path,
    )
    assert result.returncode == ExitCode.BAD_INPUT and "Traceback" not in result.stderr
    assert json.loads(result.stdout)["error"]["detail"] == {"variable": "ANCHOR_RPC_RETRIES"}


def test_a_dotenv_line_of_ours_that_is_not_an_assignment_is_refused_with_its_file_and_line(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("ANCHOR_DEBUG=1\nANCHOR_RPC_URL http://127.0.0.1:8545\n")
    with pytest.raises(BadInput, match=r"\.env:2: expected NAME=value"):
        read_dotenv(tmp_path / ".env")
    result = run_anchor(["--json", "config", "show"], _clean(ANCHOR_ENV_FILE=".env"), cwd=tmp_path)
    assert result.returncode == ExitCode.BAD_INPUT and "Traceback" not in result.stderr


def test_another_tools_dotenv_lines_are_not_read_and_a_typo_of_ours_is_said_once(tmp_path: Path) -> None:
    """A `.env` shared with other tools: their lines (a multi-line quoted PEM among them) once stopped every
    anchor command with "expected NAME=value"; they are not read. A name of ours that no setting has is
    ignored, as before, but said on stderr with the nearest name, so the typo does not pass unseen."""
    (tmp_path / ".env").write_text(
        'PRIVATE_PEM="-----BEGIN KEY-----\nMIIB...\n-----END KEY-----"\nDATABASE_URL=x y z\n'
        "ANCHOR_RPC_ULR=http://127.0.0.1:9\nANCHOR_RPC_RETRIES=2\n"
    )
    assert read_dotenv(tmp_path / ".env") == {"ANCHOR_RPC_ULR": "http://127.0.0.1:9", "ANCHOR_RPC_RETRIES": "2"}
    result = run_anchor(["--json", "config", "show"], _clean(ANCHOR_ENV_FILE=".env"), cwd=tmp_path)
    assert result.returncode == ExitCode.OK, result.stderr
    assert "ANCHOR_RPC_ULR is no setting of anchor's, ignored (did you mean ANCHOR_RPC_URL?)" in result.stderr


@pytest.mark.parametrize(
    ("variable", "raw", "expected"),
    [
        ("ANCHOR_API_FLUSH", "0", False),
        ("ANCHOR_API_FLUSH", "", True),
        ("ANCHOR_API_FLUSH", "yes", True),
        ("ANCHOR_CALENDAR", "1", True),
        ("ANCHOR_CALENDAR", "true", False),
        ("ANCHOR_DEBUG", "1", True),
        ("ANCHOR_API_BODY_TIMEOUT_S", "0", 30.0),
        ("ANCHOR_API_BODY_TIMEOUT_S", "2.5", 2.5),
        ("ANCHOR_EXPLORER_URL", "http://x:1//", "http://x:1"),
        ("ANCHOR_READ_RPCS", " a, ,b ", ("a", "b")),
        ("ANCHOR_CONFIRMATIONS", "", None),
        ("ANCHOR_CONFIRMATIONS", "0", 0),
        ("ANCHOR_LOG_WINDOW", "0", 0),
        ("ANCHOR_SERVICE_NAME", "  svc ", "svc"),
        ("ANCHOR_IMAGE", "", ""),
        ("ANCHOR_LEDGER_NAME", "", None),
        ("ANCHOR_ATTEMPT_PROCESSES", "64", 64),
        ("ANCHOR_PROJECT_ROOT", "/src", Path("/src")),
        ("ANCHOR_LOCAL_PORT", "18545", 18545),
        ("ANCHOR_DATA_DIR", "d", Path("d")),
    ],
)
def test_each_variable_reads_as_it_did_before_the_model(variable: str, raw: str, expected: object) -> None:
    """The values that worked before settings were one model mean what they meant (an empty value is
    unset, ANCHOR_API_FLUSH is on unless `0`, ANCHOR_CALENDAR only at `1`, a body timeout of 0 is the
    default)."""
    field = next(f for f in Environment._fields() if f.variable == variable)
    assert Environment({variable: raw})._value(field) == expected


def test_an_empty_keystore_password_is_a_password_not_unset() -> None:
    password = Environment({"ANCHOR_KEYSTORE_PASSWORD": ""}).keystore_password
    assert password is not None and password.get_secret_value() == ""


def test_settings_are_read_once_at_the_door_and_handed_down(tmp_path: Path) -> None:
    given = Environment({"ANCHOR_RPC_RETRIES": "9", "ANCHOR_DATA_DIR": str(tmp_path / "d")})
    settings = Settings.load(env=given)
    assert settings.env is given and settings.data_dir == (tmp_path / "d").resolve()
    from anchor.chain.rpc import Rpc

    assert Rpc("http://127.0.0.1:9", settings.env).retries == 9  # what reads the chain gets it passed


def test_a_secret_never_shows_in_a_repr_a_string_or_the_settings() -> None:
    key = "0x" + "ab" * 32
    held = Environment(
        {
            "ANCHOR_PRIVATE_KEY": key,
            "ANCHOR_JOURNAL_URL": "postgresql://u:hunter2@db/a",
            "ANCHOR_SERVICE_TOKEN": "tok-123",
        }
    )
    settings = Settings.load(env=held)
    shown = [
        repr(held),
        str(held),
        repr(settings),
        str(held.private_key),
        repr(held.private_key),
        f"{held.service_token}",
    ]
    assert all(key not in text and "hunter2" not in text and "tok-123" not in text for text in shown)
    assert isinstance(held.private_key, Secret) and held.private_key.get_secret_value() == key
    assert held.held_secrets() == ["ANCHOR_JOURNAL_URL", "ANCHOR_PRIVATE_KEY", "ANCHOR_SERVICE_TOKEN"]


def test_a_dotenv_file_holding_a_secret_is_hidden_from_sandboxed_code_as_a_keystore_is(tmp_path: Path) -> None:
    """Who could lie: the code under measurement reads the repository it runs in; a `.env` there with
    ANCHOR_PRIVATE_KEY would hand it the key, however clean its environment."""
    dotenv = tmp_path / ".env"
    dotenv.write_text("ANCHOR_PRIVATE_KEY=0x" + "cd" * 32 + "\n")
    loaded = Environment.load({"ANCHOR_KEYSTORE": "/k/store.json"}, dotenv)
    assert loaded.secret_files == (Path("/k/store.json"), dotenv.resolve())
    assert "ANCHOR_PRIVATE_KEY" in loaded.held_secrets()  # `--no-sandbox` is refused while it is held
    dotenv.write_text("ANCHOR_LOG_WINDOW=10\n")
    assert Environment.load({}, dotenv).secret_files == ()


def _reads_of_the_environment(path: Path) -> list[str]:
    """Every read of the process environment in a module: `os.environ` (but its `setdefault`, which
    configures a library in this process), `os.getenv`, `getenv`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    writes = {
        id(node.func.value)
        for node in ast.walk(tree)  # type: ignore[attr-defined]
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "os.environ.setdefault"
    }
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute | ast.Name)
        and id(node) not in writes
        and ast.unparse(node) in ("os.environ", "os.getenv", "getenv", "environ", "os.environb")
    ]


def test_nothing_below_the_doors_reads_the_process_environment() -> None:
    """The settings model is read once at a door and passed down: a read anywhere else is a setting
    nobody can list, document or pass on explicitly (anchor/settings reads it, for the model and for
    the environments of the processes we start)."""
    reads = [
        read
        for folder in ("anchor", "api")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not path.relative_to(ROOT).as_posix().startswith("anchor/settings/")
        for read in _reads_of_the_environment(path)
    ]
    assert reads == []


def test_a_dotenv_that_came_with_the_folder_is_not_read_unless_the_environment_names_it(tmp_path: Path) -> None:
    """A `.env` in the working directory is anyone's who handed over the folder (a cloned repository, a
    results folder): read by default, it named the toolchain whose anvil `anchor stamp` ran, and the key
    that signed the user's anchors (whose owner could then retract them). Nothing of it is read unless
    ANCHOR_ENV_FILE names it; that it was passed over is said once."""
    planted = {
        "ANCHOR_PROJECT_ROOT": str(tmp_path / "evil"),
        "ANCHOR_PRIVATE_KEY": "0x" + "59" * 32,
        "ANCHOR_RPC_URL": "http://127.0.0.1:9",
    }
    (tmp_path / ".env").write_text("".join(f"{k}={v}\n" for k, v in planted.items()))
    shown = run_anchor(["--json", "config", "show"], _clean(), cwd=tmp_path)
    assert shown.returncode == ExitCode.OK, shown.stderr
    variables = json.loads(shown.stdout)["variables"]
    assert all(variables[name]["set"] is False for name in planted), {n: variables[n] for n in planted}
    assert "note: ./.env sets ANCHOR_* variables and is not read" in shown.stderr
    named = run_anchor(["--json", "config", "show"], _clean(ANCHOR_ENV_FILE=".env"), cwd=tmp_path)
    assert all(json.loads(named.stdout)["variables"][name]["set"] for name in planted)
    missing = run_anchor(["config", "show"], _clean(ANCHOR_ENV_FILE="nowhere.env"), cwd=tmp_path)
    assert missing.returncode == ExitCode.BAD_INPUT and "ANCHOR_ENV_FILE='nowhere.env': no such file" in missing.stderr
