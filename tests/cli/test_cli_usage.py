"""A newcomer's first typos: every usage mistake is one line and a hint, exit 2, never a
traceback; `--version` and shell completion work. No chain needed."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest

from anchor import __version__
from anchor.errors import ExitCode
from tests.cli import ANCHOR_BIN, run_anchor, run_anchor_process
from tests.conftest import ROOT


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The installed script as a real child: this module checks exit codes and start-up as users see them."""
    return run_anchor_process(args, env)


def test_version_prints_the_version_and_exits_0() -> None:
    result = _run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"anchor {__version__}"


@pytest.mark.parametrize("args", [["-h"], ["verify", "-h"], ["research", "run", "-h"], ["mlflow", "stamp", "-h"]])
def test_dash_h_is_help_as_git_cosign_and_forge_take_it(args: list[str]) -> None:
    result = _run(*args)
    assert result.returncode == 0 and result.stdout.startswith(f"Usage: anchor {' '.join(args[:-1])}".rstrip())


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["verify"], "Missing argument"),
        (["verify", "--bogus"], "No such option '--bogus'"),
        (["--bogus"], "No such option '--bogus'"),
        (["journal", "flush", "--batch-size", "zero"], "Invalid value for '--batch-size'"),
        (["research", "run"], "Missing option '--repo'"),
        (["nonsense"], "No such command 'nonsense'"),
        # a path never stamped and no chain: the word is refused before either is looked at
        (["verify", "/nonexistent/x", "--min-finality", "bogus"], "'bogus': expected safe, finalized, or a number"),
        # an unset shell variable: Path("") is ".", and `stamp "$F"` stamped the whole working folder
        (["hash", ""], "an empty path (an unset shell variable?)"),
        (["stamp", ""], "an empty path (an unset shell variable?)"),
    ],
    ids=[
        "missing-argument",
        "unknown-option",
        "unknown-root-option",
        "bad-value",
        "missing-option",
        "no-command",
        "finality-word-first",
        "empty-path-hash",
        "empty-path-stamp",
    ],
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
    """click's completion: `eval "$(_ANCHOR_COMPLETE=bash_source anchor)"` in ~/.bashrc (docs/cli.md)."""
    env = {**os.environ, "_ANCHOR_COMPLETE": "bash_complete", "COMP_WORDS": "anchor ver", "COMP_CWORD": "1"}
    result = _run(env=env)
    assert result.returncode == 0 and result.stdout.split() == ["plain,verify"]
    script = _run(env={**os.environ, "_ANCHOR_COMPLETE": "bash_source"})
    assert script.returncode == 0 and "_anchor_completion" in script.stdout


def test_a_malformed_variable_is_named_not_a_traceback() -> None:
    env = {**os.environ, "ANCHOR_RPC_RETRIES": "many"}
    result = run_anchor(["--json", "--rpc-url", "http://127.0.0.1:9", "lookup", "0x" + "00" * 32], env)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert json.loads(result.stdout)["error"]["detail"] == {"variable": "ANCHOR_RPC_RETRIES"}


def _tree_of(root: Path, small: int, large: int) -> Path:
    for i in range(small):
        (root / f"d{i % 10}").mkdir(parents=True, exist_ok=True)
        (root / f"d{i % 10}" / f"f{i}.txt").write_bytes(os.urandom(64))
    (root / "big.bin").write_bytes(os.urandom(large))
    return root


def test_hashing_shows_files_bytes_and_throughput_on_a_terminal_and_nothing_in_a_pipe(tmp_path: Path) -> None:
    """The progress line goes to stderr when it is a terminal (here a pseudo-terminal), and only then:
    a pipe or --json gets the result alone, without escape codes."""
    tree = _tree_of(tmp_path / "tree", 600, 3 << 20)  # 600 files for the workers, one mapped file
    args = [ANCHOR_BIN, "--data-dir", str(tmp_path / "d"), "hash", str(tree)]
    leader, follower = pty.openpty()
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=follower) as child:
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed its side
                break
            if not chunk:
                break
            seen += chunk
        stdout = child.communicate()[0]
    os.close(leader)
    assert child.returncode == 0 and b"(601 files" in stdout
    screen = seen.decode("utf-8", "replace")
    assert "hashing 601/601 files" in screen and "MB" in screen and "/s" in screen
    piped = _run("--data-dir", str(tmp_path / "d"), "hash", str(tree))
    assert piped.returncode == 0 and piped.stderr == "" and "\x1b" not in piped.stdout


@pytest.mark.chain  # starts a local chain of its own
def test_out_names_every_output_and_the_old_proof_spelling_still_works_for_anchor(tmp_path: Path) -> None:
    """`--proof` is an input everywhere (verify, prove); an output is `--out`. `anchor anchor --proof`
    keeps working for one release, as the same output."""
    from tests.conftest import _start

    chain = _start(tmp_path / "data")
    try:
        for spelling in ("--out", "--proof"):
            target = tmp_path / f"results{spelling}"
            target.mkdir()
            (target / "a.txt").write_text(spelling)
            written = tmp_path / f"elsewhere{spelling}.json"
            assert chain.cli("anchor", str(target), spelling, str(written)).returncode == 0
            assert written.is_file() and not (tmp_path / f"results{spelling}.anchor.json").exists()
            assert chain.cli("verify", str(target), "--proof", str(written)).returncode == 0
    finally:
        chain.node.down()
    helped = run_anchor(["anchor", "--help"]).stdout
    assert "--out" in helped and "old spelling" in helped


def test_the_journal_verbs_live_under_journal_and_the_old_spellings_still_work(tmp_path: Path) -> None:
    """`anchor journal submit|flush|status` are the verbs; `anchor submit|flush|status` stay for one
    release, saying so on stderr; `anchor stamp` is the clearer name of `anchor anchor`."""
    env = {**os.environ, "ANCHOR_DATA_DIR": str(tmp_path / "d")}
    new, old = run_anchor(["journal", "status"], env), run_anchor(["status"], env)
    assert new.returncode == old.returncode == ExitCode.OK  # a read of a local file: no chain needed, the same answer
    assert new.stdout.startswith(f"no journal yet in data dir {tmp_path / 'd'} (chosen by ANCHOR_DATA_DIR)")
    assert "It is now `anchor journal status`" in old.stderr and "deprecated" not in new.stderr
    for verb in ("stamp", "anchor"):
        shown = run_anchor([verb, "--help"], env)
        assert shown.returncode == 0 and "--out" in shown.stdout
    assert not (tmp_path / "d").exists()  # a read made nothing


def test_verify_of_a_path_never_stamped_is_not_anchored_naming_where_it_looked(tmp_path: Path) -> None:
    """A file never proven, a folder never stamped: exit 3 with where the proof was looked for and how to
    make one, never "this is a bug" (`find_proof` used to call `with_name` on "/"); a path that does not
    exist is exit 2, "no such file or folder"."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.txt").write_text("never proven\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "data")
    missing = run_anchor(["verify", str(tmp_path / "missing")], env)  # a typo is no such path, exit 2
    assert missing.returncode == ExitCode.BAD_INPUT and "no such file or folder" in missing.stderr, missing.stderr
    for target in (tmp_path / "file.txt", tmp_path / "folder"):
        text = run_anchor(["verify", str(target)], env)
        assert text.returncode == ExitCode.NOT_ANCHORED, text.stderr
        assert f"error[not_anchored]: no proof for {target}" in text.stderr and "bug" not in text.stderr
        assert f"{target}.anchor.json" in text.stderr and f"`anchor stamp {target}`" in text.stderr
        as_json = run_anchor(["--json", "verify", str(target)], env)
        error = json.loads(as_json.stdout)["error"]
        assert as_json.returncode == ExitCode.NOT_ANCHORED and error["code"] == "not_anchored"
        assert error["detail"]["looked_in"][0] == f"{target}.anchor.json"
    assert not (tmp_path / "data").exists()  # a read-only verdict wrote nothing


@pytest.mark.parametrize(
    ("args", "meant"),
    [
        (
            ["research", "run", "--repo", "r", "--contract", "examples/research/contract.tom"],
            "examples/research/contract.toml",
        ),
        (["mission", "check", "examples/mission/misson.toml"], "examples/mission/mission.toml"),
        (["bundle", "examples/result-bundle/bundel.toml"], "examples/result-bundle/bundle.toml"),
        (["snapshot", "add", "examples/mission/price.csv"], "examples/mission/prices.csv"),
        (["hash", "examples/bundel"], "examples/bundle"),
        (["verify", "examples/bundle/outputs/metric.json"], "examples/bundle/outputs/metrics.json"),
        (["upgrade", "examples/bundel"], "examples/bundle"),
        (["upgrade", "examples/bundel.anchor.json"], "examples/bundle"),
        (["verify", "--from", "READM.md"], "README.md"),
    ],
    ids=["contract", "mission", "bundle-spec", "snapshot", "hash", "verify", "upgrade", "upgrade-proof", "verify-from"],
)
def test_a_mistyped_file_is_named_with_the_file_meant(args: list[str], meant: str, tmp_path: Path) -> None:
    """`--contract examples/research/contract.tom` said "no such attempt contract" and stopped there; every
    "no such ..." now names the closest existing path (anchor.errors.did_you_mean_path), exit 2."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "data")
    done = run_anchor(args, env, cwd=ROOT)
    assert done.returncode == ExitCode.BAD_INPUT and f"(did you mean {meant}?)" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "args",
    [["lookup", "0x" + "ab" * 20, "--researcher", "0x12"], ["verify", "examples/bundle", "--registry", "0x12"]],
    ids=["lookup-researcher", "verify-registry"],
)
def test_a_mistyped_address_is_refused_before_any_chain_is_opened(args: list[str], tmp_path: Path) -> None:
    """No chain runs here: `lookup --researcher 0x12` said "the local chain is not running" (exit 5) before
    it looked at the address. Every option that takes one goes through one parser
    (anchor.manifest.onchain.parse_address), ahead of any read."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "data")
    done = run_anchor(args, env, cwd=ROOT)
    assert done.returncode == ExitCode.BAD_INPUT, done.stderr
    assert f"{args[2]} '0x12': expected an address, 0x and 40 hex digits (2 given)" in done.stderr


def test_hash_says_in_words_what_it_did_with_links(tmp_path: Path) -> None:
    """It printed "1 link follow insideed"."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("a\n")
    (tree / "b.txt").symlink_to("a.txt")
    env = {**os.environ, "ANCHOR_DATA_DIR": str(tmp_path / "data")}
    followed = run_anchor(["hash", str(tree), "--symlinks", "follow-inside"], env, check=True).stdout
    recorded = run_anchor(["hash", str(tree), "--symlinks", "record"], env, check=True).stdout
    assert "1 link followed (inside the tree))" in followed and "insideed" not in followed
    assert "1 link recorded)" in recorded


def _commands() -> list[list[str]]:
    import click

    from anchor.cli.app import app

    found: list[list[str]] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        found.append(path)
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(click.Context(cmd)):
                sub = cmd.get_command(click.Context(cmd), name)
                assert sub is not None
                walk(sub, [*path, name])

    walk(app, [])
    return found


def test_every_help_page_names_values_as_a_cli_does_and_reflows_its_sentences() -> None:
    """No page shows a Python type (`<bool>` after a flag, `<list[str]>`, `<path>`, `{path}` in the usage
    line, as typer 0.29 printed them) or breaks a sentence where its docstring's line ended."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    pages = {" ".join(path): run_anchor([*path, "--help"], env, check=True).stdout for path in _commands()}
    assert len(pages) >= 40
    for name, text in pages.items():
        for python_type in ("<bool>", "<list[", "<path>", "<str>", "<int>", "{path}", "{key}"):
            assert python_type not in text, f"anchor {name} --help shows {python_type}"
    root = " ".join(pages[""].split())
    assert "uses the embedded local chain, an anvil on 127.0.0.1 whose state" in root  # one sentence, one line
    assert "Usage: anchor hash [OPTIONS] PATH" in pages["hash"]
    assert "13  a mission's command failed" in pages[""]  # a \b block keeps its lines


def test_a_read_only_audit_of_a_mistyped_work_dir_is_not_anchored_and_creates_nothing(tmp_path: Path) -> None:
    """`research verify --workdir <typo>` printed "OK … 0 entries", exited 0 and created the directory;
    `report` said "0 trials". Now each is exit 3 naming where it looked and the searches the data dir
    knows, and nothing is created."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "data")
    real = tmp_path / "data" / "research"
    real.mkdir(parents=True)
    (real / "ledger.jsonl").write_text("")
    typo = tmp_path / "reserch"
    for command in (["research", "verify"], ["research", "report"], ["lineage", "abc1234"]):
        result = run_anchor([*command, "--workdir", str(typo)], env)
        assert result.returncode == ExitCode.NOT_ANCHORED, (command, result.stderr)
        assert f"no research ledger in {typo}" in result.stderr and str(real) in result.stderr
        assert "Traceback" not in result.stderr
    assert not typo.exists()


def test_global_options_are_taken_after_the_subcommand_too_unless_it_has_its_own(tmp_path: Path) -> None:
    """`anchor verify PATH --rpc-url URL` said "No such option: --rpc-url": people type the global
    options where the subcommand's are. They are moved in front of it, except where the subcommand has
    an option of that name (`index --rpc-url`: the chain it serves)."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}, "ANCHOR_RPC_RETRIES": "0"}
    shown = json.loads(
        run_anchor(["config", "show", "--data-dir", str(tmp_path / "d"), "--json"], env, check=True).stdout
    )
    assert shown["settings"]["data_dir"] == {"source": "--data-dir", "value": str(tmp_path / "d")}
    reached = run_anchor(["lookup", "0x" + "00" * 32, "--rpc-url", "http://127.0.0.1:9"], env)
    assert reached.returncode == ExitCode.CHAIN_UNREACHABLE and "http://127.0.0.1:9" in reached.stderr
    served = run_anchor(["index", "--rpc-url"], env)  # index's own option: its own error
    assert served.returncode == ExitCode.BAD_INPUT and "'--rpc-url' requires an argument" in served.stderr


@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_serve_refuses_a_port_no_socket_can_take_before_it_starts(tmp_path: Path, port: str) -> None:
    """`anchor serve --port 99999` said "serving http://127.0.0.1:99999" and listened on 34463 (the port
    wrapped modulo 65536). The options are the library's (api.server.ServeOptions): refused there."""
    from anchor.errors import BadInput
    from api.server import ServeOptions

    with pytest.raises(BadInput, match="expected a port number, 1 to 65535"):
        ServeOptions(port=int(port))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}, "ANCHOR_DATA_DIR": str(tmp_path)}
    result = run_anchor(["serve", "--port", port], env)
    assert result.returncode == ExitCode.BAD_INPUT and "serving" not in result.stdout + result.stderr, result.stderr


@pytest.mark.parametrize("command", ["upgrade", "attest"])
def test_upgrade_of_a_folder_never_stamped_says_where_it_looked_and_how_to_stamp_it(
    command: str, tmp_path: Path
) -> None:
    """`anchor upgrade results` of a folder never stamped said "BAD_INPUT  results.anchor.json: no such proof
    file" (exit 2, as if the folder were mistyped), where `verify` and `seal` say where they looked and
    how to stamp it (exit 3); `attest results` the same, with a near name for the proof. Every command
    finds a path's proof through anchor.proof.locate."""
    (tmp_path / "results").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "d")
    result = run_anchor([command, "results"], env, cwd=tmp_path)
    assert result.returncode == ExitCode.NOT_ANCHORED, result.stderr
    assert "stamp it with `anchor stamp results`" in result.stderr and "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]  # nothing written, no data dir made


def test_prove_in_a_mistyped_or_never_stamped_folder_names_the_folder_not_a_proof_file(tmp_path: Path) -> None:
    """`anchor prove F --in examples/bundl` said "examples/bundl.anchor.json: no such proof file (did you
    mean examples/bundle.anchor.json?)": a file the user never typed. A folder never stamped got the same
    exit 2, where `verify` and `upgrade` say it is not anchored and how to stamp it (exit 3)."""
    import anchor
    from anchor.errors import BadInput

    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "m.json").write_text("{}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "d")
    typo = run_anchor(["prove", "results/m.json", "--in", "result"], env, cwd=tmp_path)
    assert typo.returncode == ExitCode.BAD_INPUT, typo.stderr
    assert typo.stderr.startswith("error[bad_input]: --in 'result': no such folder (did you mean results?)")
    never = run_anchor(["prove", "results/m.json", "--in", "results"], env, cwd=tmp_path)
    assert never.returncode == ExitCode.NOT_ANCHORED, never.stderr
    assert "stamp it with `anchor stamp results`" in never.stderr
    with pytest.raises(BadInput) as refused:  # the library names its own input
        anchor.prove(tmp_path / "results" / "m.json", inside=tmp_path / "result")
    assert refused.value.detail["field"] == "inside" and refused.value.message.startswith("inside ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]  # nothing written, no data dir made


def test_a_mistyped_lookup_or_attest_key_names_the_file_meant_before_any_chain_is_opened(tmp_path: Path) -> None:
    """`anchor lookup results.jsn` opened the chain first and then said "key: expected 32 bytes as 64 hex
    digits" (or, with no chain running, that it was not running); `attest` gave no hint either."""
    (tmp_path / "results.json").write_text("{}")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")},
        "ANCHOR_DATA_DIR": str(tmp_path / "d"),
    }
    typo = str(tmp_path / "results.jsn")
    for command in (["lookup", typo], ["attest", typo]):
        result = run_anchor(command, env)
        assert result.returncode == ExitCode.BAD_INPUT, result.stderr
        assert f"(did you mean {tmp_path / 'results.json'}?)" in result.stderr, result.stderr
    assert not (tmp_path / "d" / "chain").exists()  # no local chain was started to find out


@pytest.mark.parametrize(
    ("editable", "said"),
    [
        ("param.json", "editable 'param.json': no such file in the repository (did you mean params.json?)"),
        ("README.md", "editable 'README.md': no numeric parameter to search"),
    ],
    ids=["mistyped", "no-numbers"],
)
def test_a_search_whose_first_editable_the_built_in_proposer_cannot_tune_is_refused_before_anything_is_written(
    editable: str, said: str, tmp_path: Path
) -> None:
    """`editable = ["param.json"]` (for params.json) pre-registered the contract, anchored the baseline,
    then stopped at the first proposal with `error[internal]: unexpected FileNotFoundError`. The built-in
    proposer tunes the first editable file: one it cannot read or tune is refused first (exit 2)."""
    from tests.research.helpers import make_repo

    score = "import json, sys\nopen(sys.argv[1] + '/metrics.jsonl', 'w').write(json.dumps({'score': 1}) + '\\n')\n"
    repo = make_repo(tmp_path / "repo", {"params.json": '{"x": 1}', "README.md": "a search\n", "score.py": score})
    spec = tmp_path / "contract.toml"
    spec.write_text(
        'task = "t"\ncommand = "python3 score.py {run_dir}"\nmetric = "score"\nmode = "max"\n'
        f'editable = ["{editable}"]\nattempt_timeout_minutes = 1\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "data")
    done = run_anchor(
        ["research", "run", "--repo", str(repo), "--contract", str(spec), "--max-attempts", "3", "--no-anchor"], env
    )
    assert done.returncode == ExitCode.BAD_INPUT and said in done.stderr, done.stderr
    assert not (tmp_path / "data" / "research").exists()  # refused before anything was written


@pytest.mark.parametrize(
    ("args", "source", "edit", "said"),
    [
        (
            ["research", "run", "--repo", "repo", "--contract"],
            "examples/research/contract.toml",
            ("metric_source", "metric_sorce"),
            "field 'metric_sorce': not a field (did you mean metric_source?)",
        ),
        (
            ["mission", "check"],
            "examples/mission/mission.toml",
            ("hypothesis =", "hypothesys ="),
            "field 'hypothesys': not a field (did you mean hypothesis?)",
        ),
        (
            ["bundle"],
            "examples/result-bundle/bundle.toml",
            ("output =", "outptu ="),
            "unknown field 'outptu' (did you mean output?)",
        ),
    ],
    ids=["contract", "mission", "bundle-spec"],
)
def test_a_mistyped_key_in_a_contract_mission_or_bundle_spec_names_the_key_meant(
    args: list[str], source: str, edit: tuple[str, str], said: str, tmp_path: Path
) -> None:
    """`metric_sorce = ...` in a contract said "Extra inputs are not permitted" (pydantic's words, no hint);
    every file a user writes by hand now names the key meant, exit 2."""
    spec = tmp_path / "examples" / source.removeprefix("examples/")
    spec.parent.mkdir(parents=True)
    for sibling in (ROOT / source).parent.iterdir():  # the spec's relative paths still resolve
        if sibling.is_file():
            (spec.parent / sibling.name).write_bytes(sibling.read_bytes())
    spec.write_text((ROOT / source).read_text().replace(*edit, 1))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "data")
    done = run_anchor([*args, str(spec)], env, cwd=tmp_path)
    assert done.returncode == ExitCode.BAD_INPUT and said in done.stderr, done.stderr


@pytest.mark.sandbox  # the baseline runs in bubblewrap
def test_a_proposer_command_is_told_of_an_editable_the_repository_lacks(tmp_path: Path) -> None:
    """With `--propose CMD` (a coding agent), an editable the repository lacks may be meant to be created,
    so it is not refused; but `param.json` for params.json wasted every attempt in silence (the agent
    wrote a file the command never reads). The search now says so before it starts, with the near name."""
    from tests.research.helpers import make_repo

    score = "import json, sys\nopen(sys.argv[1] + '/metrics.jsonl', 'w').write(json.dumps({'score': 1}) + '\\n')\n"
    repo = make_repo(tmp_path / "repo", {"params.json": '{"x": 1}', "score.py": score})
    spec = tmp_path / "contract.toml"
    spec.write_text(
        'task = "t"\ncommand = "python3 score.py {run_dir}"\nmetric = "score"\nmode = "max"\n'
        'editable = ["param.json"]\nattempt_timeout_minutes = 1\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "data")
    done = run_anchor_process(
        [
            "research",
            "run",
            "--repo",
            str(repo),
            "--contract",
            str(spec),
            "--propose",
            "true",
            "--max-attempts",
            "1",
            "--no-anchor",
        ],
        env,
    )
    assert done.returncode == 0, done.stderr
    assert "editable 'param.json' is not in the repository (did you mean params.json?)" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["hash", "{tree}"],  # through typer (--data-dir is given): it turns a broken pipe into exit 1 itself
        ["hash", "{tree}", "--json"],
        ["verify", "{tree}", "--json"],  # an error's JSON, on stdout
        ["fast:hash", "{tree}"],  # the fast path: no typer
        ["config", "show"],
        ["--help"],  # rich's own handling: exit 1 after putting /dev/null in stdout's place
    ],
)
def test_a_reader_that_goes_away_early_is_no_bug_report_and_no_internal_error(args: list[str], tmp_path: Path) -> None:
    """`anchor … | head -1`, `| grep -q OK`: the reader closes the pipe and the next write fails. That
    is no bug in anchor (it said `error[internal]: unexpected BrokenPipeError; this is a bug`, exit 1,
    the code of an internal error): it ends quietly as a Unix tool killed by SIGPIPE does, 141."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("a\n")
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    words = [a.format(tree=tree).removeprefix("fast:") for a in args]
    fast = args[0].startswith("fast:")
    argv = [str(ANCHOR_BIN), *([] if fast else ["--data-dir", str(tmp_path / "d")]), *words]
    try:
        child = subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    finally:
        os.close(write)
    assert (child.returncode, child.stderr) == (ExitCode.READER_GONE, "")


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["bundle", "examples/result-bundle/bundle.toml", "--service", "http://127.0.0.1:1"], "--service"),
        (["research", "report", "--format", "markdwn"], "--format"),
        (["research", "run", "--repo", "nowhere", "--contract", "examples/research/contract.toml"], "--repo"),
        (
            [
                "mission",
                "submit",
                "--mission",
                "examples/mission/mission.toml",
                "--snapshot",
                "https://d.example/s.csv",
                "--snapshot-sha256",
                "ab" * 32,
                "--image",
                "r.example/i@sha256:" + "cd" * 32,
                "--output",
                "o",
                "--profile",
                "small",
            ],
            "--mission-digest",
        ),  # the API's `mission.digest`
    ],
    ids=["bundle-service", "report-format", "run-repo", "submit-mission-digest"],
)
def test_a_refusal_names_its_field_as_the_command_line_spells_it(args: list[str], flag: str, tmp_path: Path) -> None:
    """`bundle SPEC --service URL` without --anchor said "--service anchors: give --anchor with it" and,
    under it, "field: service": two names for one input; `research run --repo nowhere` said "field: repo".
    The field line names the option the command has for it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "data")
    done = run_anchor(args, env, cwd=ROOT)
    assert done.returncode == ExitCode.BAD_INPUT, done.stderr
    assert f"\n  field: {flag}\n" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["stamp", "{tree}", "--out", "/proc/anchor-proof.json"],
        ["prove", "{tree}/a.txt", "--in", "{tree}", "--out", "/proc/anchor-proof.json"],
        ["attest", "{tree}", "--out", "/proc/anchor-statement.jsonl"],
        ["stamp", "{tree}", "--out", "/proc/no-such-folder/p.json"],
    ],
    ids=["stamp", "prove", "attest", "stamp-missing-parent"],
)
def test_an_output_path_nothing_can_be_written_at_is_refused_before_anything_is_read_or_sent(
    args: list[str], tmp_path: Path
) -> None:
    """`stamp DIR --out /proc/x.json` (as root, where `os.access` says every place is writable) anchored,
    then said "unexpected FileNotFoundError; this is a bug in anchor" when it came to write the proof;
    `prove` and `attest` the same. The place is tried before anything is hashed or sent: exit 2, naming
    the output as the command spells it. No chain runs here, and none is needed to refuse it."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("a\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "d")
    done = run_anchor([a.format(tree=tree) for a in args], env, cwd=tmp_path)
    assert done.returncode == ExitCode.BAD_INPUT, done.stderr
    assert "cannot be written there" in done.stderr and "\n  field: --out\n" in done.stderr, done.stderr
    assert not (tmp_path / "d").exists()  # nothing made, no chain started


@pytest.mark.parametrize(
    ("command", "what"),
    [
        (["mission", "check"], "mission file"),
        (["bundle"], "bundle spec"),
        (["research", "run", "--repo", ".", "--contract"], "attempt contract"),
    ],
    ids=["mission", "bundle-spec", "contract"],
)
def test_a_document_that_is_a_folder_or_not_text_is_said_in_words(
    command: list[str], what: str, tmp_path: Path
) -> None:
    """`anchor mission check examples` said "unexpected IsADirectoryError; this is a bug in anchor"; a
    bundle spec or a contract that was a folder said "([Errno 21] Is a directory: 'examples')", and a
    binary file "('utf-8' codec can't decode byte 0xe5 in position 0: …)", and a FIFO hung. One reader
    says each in words."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "binary").write_bytes(b"\xe5\x00\xff")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "d")
    folder = run_anchor([*command, "folder"], env, cwd=tmp_path)
    binary = run_anchor([*command, "binary"], env, cwd=tmp_path)
    assert (folder.returncode, binary.returncode) == (ExitCode.BAD_INPUT, ExitCode.BAD_INPUT), folder.stderr
    assert f"folder: a folder, not a {what}" in folder.stderr.splitlines()[0], folder.stderr
    assert f"binary: not a {what}: not UTF-8 text (byte 0)" in binary.stderr.splitlines()[0], binary.stderr
    os.mkfifo(tmp_path / "fifo")  # read, it would wait for a writer for ever (`bundle FIFO` hung)
    fifo = run_anchor([*command, "fifo"], env, cwd=tmp_path)
    assert (
        fifo.returncode == ExitCode.BAD_INPUT
        and f"not a regular file (a FIFO, a socket or a device), not a {what}" in fifo.stderr
    ), fifo.stderr


@pytest.mark.parametrize("command", ["stamp", "prove"])
def test_an_output_that_names_a_file_of_the_users_that_is_no_proof_is_never_overwritten(
    command: str, tmp_path: Path
) -> None:
    """`anchor stamp f.txt --out notes.txt` replaced the user's notes with a proof, unasked (`prove` the
    same); only a proof may be replaced (a re-stamp keeps the one it supersedes in its history). Refused
    before anything is hashed or sent: no chain runs here."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.txt").write_text("data")
    (tmp_path / "notes.txt").write_text("my notes")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "data")
    args = ["stamp", "d"] if command == "stamp" else ["prove", "d/f.txt", "--in", "d"]
    done = run_anchor([*args, "--out", "notes.txt"], env, cwd=tmp_path)
    assert done.returncode == ExitCode.BAD_INPUT, done.stderr
    assert "--out 'notes.txt': exists and is not a proof; not overwritten" in done.stderr, done.stderr
    assert (tmp_path / "notes.txt").read_text() == "my notes"
    # a JSON file of the user's is no proof either: what a file says it is (`format`) decides
    (tmp_path / "notes.json").write_text('{"format": "my/notes", "text": "mine"}')
    done = run_anchor([*args, "--out", "notes.json"], env, cwd=tmp_path)
    assert done.returncode == ExitCode.BAD_INPUT and "exists and is not a proof" in done.stderr, done.stderr
    assert (tmp_path / "notes.json").read_text() == '{"format": "my/notes", "text": "mine"}'


@pytest.mark.parametrize("where", ["a port another server holds", "a host that does not resolve"])
def test_serve_where_it_cannot_listen_is_exit_2_naming_the_option_and_records_no_url(
    tmp_path: Path, where: str
) -> None:
    """uvicorn said "address already in use" in a log line and exited 3 (`not anchored` in our table),
    after `serve` had printed that it was serving and recorded its URL, which `anchor lookup` then
    linked to: refused first, naming --port or --host, nothing recorded."""
    import socket

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}, "ANCHOR_DATA_DIR": str(tmp_path)}
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = str(held.getsockname()[1])
        args = ["--port", port] if where.startswith("a port") else ["--host", "999.1.1.1", "--port", port]
        result = _run("serve", *args, env=env)
    assert result.returncode == ExitCode.BAD_INPUT, result.stderr
    assert ("field: --port" if where.startswith("a port") else "field: --host") in result.stderr
    assert "serving" not in result.stderr and not (tmp_path / "service.json").exists()


def test_serve_refuses_a_public_url_that_is_not_http_naming_it(tmp_path: Path) -> None:
    """The public URL is recorded for `anchor lookup`'s links and said in the pages: `javascript:alert(1)`
    was taken as given."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}, "ANCHOR_DATA_DIR": str(tmp_path)}
    result = _run("serve", "--public-url", "javascript:alert(1)", env=env)
    assert result.returncode == ExitCode.BAD_INPUT and "field: --public-url" in result.stderr, result.stderr
    assert not (tmp_path / "service.json").exists()
