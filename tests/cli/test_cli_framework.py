"""The command line as click builds it: each command imported only when it is named, a wrong value a
one-line usage error (exit 2), the root's chain options taken after the command too, `serve`'s mode
flags of earlier releases running the commands they became, and `serve`/`index` options made from the
service's own option models."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import run_anchor

SEALED = Path(__file__).parents[1] / "vectors" / "sealed"
GOLDEN = "2:0x1723685d556beb264e849a1430f6f1b2f57e276cc37f15fd773b42d1b28b7294"
OTHER_COMMANDS = {
    f"anchor.cli.{m}"
    for m in (
        "research_cmds",
        "mission_cmds",
        "mlflow_cmds",
        "deploy_cmds",
        "journal_cmds",
        "chain_cmds",
        "seal_cmds",
        "retract_cmds",
    )
}


PROBE = """
import atexit, json, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
from anchor.cli import main
main()
"""


def _imported(args: list[str], cwd: Path) -> tuple[int, set[str]]:
    """The exit code of `anchor ARGS` run as a child, and every module it had loaded when it ended."""
    env = {**os.environ, "ANCHOR_DATA_DIR": str(cwd / "d")}
    listed = cwd / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(listed), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )
    return done.returncode, set(json.loads(listed.read_text()))


def test_a_read_imports_its_own_command_and_no_other(tmp_path: Path) -> None:
    """`anchor verify FILE` and `anchor hash FILE` are what people run most: they load the module of
    their command and the library, not the research runtime, MLflow, the server or a validation library."""
    shutil.copytree(SEALED, tmp_path / "v")
    for args in (["hash", "work"], ["verify", "work", "--offline", "--trusted-blocks", "trusted-blocks.txt"]):
        code, modules = _imported(args, tmp_path / "v")
        assert code == 0, args
        assert "anchor.cli.data_cmds" in modules and not modules & OTHER_COMMANDS, args
        assert not modules & {"typer", "pydantic", "api.server", "rich"}, args


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["hash", "--symlinks", "bogus", "."], "Invalid value for '--symlinks': 'bogus' is not one of"),
        (["hash", ""], "an empty path (an unset shell variable?)"),
        (["journal", "flush", "--batch-size", "0"], "0 is not in the range 1<=x<=65536"),
        (["journal", "flush", "--batch-size", "x"], "'x' is not a valid integer"),
        (["index", "--confirmations", "10001"], "10001 is not in the range 1<=x<=10000"),
        (["verify", "x", "--min-finality", "soon"], "Invalid value for '--min-finality'"),
        (["verify"], "Missing argument 'PATH' (or --from FILE with one path a line)."),
        (["stamp", "x", "--no-such-option"], "No such option '--no-such-option'"),
        (["verfy", "x"], "No such command 'verfy'"),
    ],
)
def test_a_wrong_value_is_a_one_line_usage_error(tmp_path: Path, args: list[str], said: str) -> None:
    env = {**os.environ, "ANCHOR_DATA_DIR": str(tmp_path / "d")}
    done = run_anchor(args, env, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    usage, hint, _, error = done.stderr.splitlines()[-4:]
    assert usage.startswith("Usage: anchor ") and hint.startswith("Try 'anchor ") and hint.endswith("for help.")
    assert error.startswith("Error: ") and said in error, done.stderr
    as_json = run_anchor([*args, "--json"], env, cwd=tmp_path)
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["error"]["code"] == "usage"


@pytest.mark.parametrize(
    ("options", "code"),
    [
        (["--offline", "--trusted-blocks", "trusted-blocks.txt"], 0),
        (["--offline", f"--trusted-block={GOLDEN}", "--json"], 0),
        (["--json", "--offline", "--trusted-block", GOLDEN, "--trusted-block", "1:0x" + "ab" * 32], 0),
        (["--offline"], 2),
        (["--offline", "--trusted-block", "2:0x12"], 2),
        (["--offline", "--trusted-blocks", "nowhere.txt"], 2),
        (["--trusted-block", GOLDEN], 2),
        (["--offline", "--trusted-block"], 2),
    ],
)
def test_offline_verify_answers_each_trusted_block_line(tmp_path: Path, options: list[str], code: int) -> None:
    """The verdict for a sealed proof and each refusal (no trusted block, a malformed one, a missing
    checkpoint file, a trusted block without --offline, an option without its value): its exit code,
    one error line, no traceback."""
    shutil.copytree(SEALED, tmp_path / "v")
    done = run_anchor(
        ["verify", "work", *options], {**os.environ, "ANCHOR_DATA_DIR": str(tmp_path / "d")}, cwd=tmp_path / "v"
    )
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    if code == 0:
        assert "--json" in options or done.stdout.startswith("OK: work ")
    else:
        assert done.stdout == "" and done.stderr.strip().splitlines()[-1].startswith(("Error: ", "error[", "  "))


def test_the_root_options_are_taken_after_the_command_too(tmp_path: Path) -> None:
    """`anchor info --data-dir X`, as `anchor --data-dir X info`; an option of the command's own with
    the same name stays the command's (`serve --rpc-url`: the service's chain, given to its model)."""
    env = {**os.environ, "ANCHOR_DATA_DIR": str(tmp_path / "from-env")}
    before = run_anchor(["--json", "--data-dir", str(tmp_path / "given"), "info"], env, cwd=tmp_path)
    after = run_anchor(["info", "--data-dir", str(tmp_path / "given"), "--json"], env, cwd=tmp_path)
    assert before.returncode == after.returncode == 0, after.stderr
    assert json.loads(before.stdout)["data_dir"] == json.loads(after.stdout)["data_dir"]
    assert json.loads(after.stdout)["data_dir"]["path"] == str(tmp_path / "given")
    from anchor.cli.deploy_cmds import serve

    assert any("--rpc-url" in p.opts and p.expose_value for p in serve.params if hasattr(p, "opts"))


def test_the_mode_flags_of_serve_run_the_commands_they_became(tmp_path: Path) -> None:
    """`serve --index-only` is `anchor index` and `serve --render T` is `anchor render T`, for one
    release, each saying so in one line first."""
    env = {**os.environ, "ANCHOR_DATA_DIR": str(tmp_path / "d")}
    old = run_anchor(["serve", "--index-only", "--port", "99999"], env, cwd=tmp_path)
    new = run_anchor(["index", "--port", "99999"], env, cwd=tmp_path)
    assert old.stderr.splitlines()[0] == (
        "note: `anchor serve --index-only` is now `anchor index`; this spelling works until the next release"
    )
    assert (
        (old.returncode, old.stderr.splitlines()[1:])
        == (new.returncode, new.stderr.splitlines())
        == (2, ["error[bad_input]: --port 99999: expected a port number, 1 to 65535", "  field: --port"])
    )
    rendered = run_anchor(["serve", "--render=helm", "--image", "x"], env, cwd=tmp_path)
    direct = run_anchor(["render", "helm", "--image", "x"], env, cwd=tmp_path)
    assert rendered.stderr.splitlines()[0].startswith("note: `anchor serve --render` is now `anchor render`")
    assert (rendered.returncode, rendered.stderr.splitlines()[1:]) == (direct.returncode, direct.stderr.splitlines())
    assert direct.returncode == 2 and "helm" in direct.stderr


def test_serve_and_index_take_exactly_the_fields_of_their_option_models() -> None:
    """The service's options are declared once, as fields of api.server's models (their help in the
    field): a field added there is an option of the command, with nothing copied by hand."""
    from anchor.cli.deploy_cmds import index, serve
    from api.server import IndexOptions, ServeOptions

    for command, model in ((serve, ServeOptions), (index, IndexOptions)):
        fields = {f.name: dict(f.metadata)["help"] for f in dataclasses.fields(model)}
        own = {p.name: p.help for p in command.params if getattr(p, "expose_value", True) and p.name != "help"}
        assert own == fields, command.name
