"""The data dir is found as git finds `.git`: `--data-dir`, ANCHOR_DATA_DIR, the project's anchor.toml,
the nearest `.anchor/` walking up (from a path being verified, then from the working directory), the
user's anchor.toml, then the per-user default ($XDG_DATA_HOME/anchor). `anchor info` says which one is
in use and the rule that chose it.

A data dir relative to the working directory once made a stamp in `outside/` and a verify of
`outside/results` from its parent read two different chains; the second one's advice led to an empty
chain."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from anchor.errors import ExitCode
from tests.cli import run_anchor
from tests.conftest import free_port


def _env(**extra: str) -> dict[str, str]:
    """Our environment without any ANCHOR_* variable (the conftest gives XDG_DATA_HOME a dir of the test's own)."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}, **extra}


def _info(cwd: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = run_anchor(["info", *args, "--json"], env or _env(), cwd=cwd)
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout)["data_dir"])


def test_the_nearest_dot_anchor_above_the_working_directory_is_the_data_dir_and_info_names_the_rule(
    tmp_path: Path,
) -> None:
    (tmp_path / "project" / ".anchor").mkdir(parents=True)
    deep = tmp_path / "project" / "src" / "models"
    deep.mkdir(parents=True)
    found = _info(deep)
    assert found["path"] == str(tmp_path / "project" / ".anchor") and found["exists"] is True
    assert found["rule"] == "the nearest .anchor/ above the working directory"
    said = run_anchor(["info"], _env(), cwd=deep)
    assert said.returncode == 0, said.stderr
    assert said.stdout.splitlines()[:2] == [
        f"data dir  {tmp_path / 'project' / '.anchor'}",
        "  chosen by the nearest .anchor/ above the working directory",
    ]


def test_with_no_dot_anchor_anywhere_above_the_per_user_data_dir_is_used_and_not_made_by_a_read(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    xdg = tmp_path / "xdg"
    found = _info(work, env=_env(XDG_DATA_HOME=str(xdg)))
    assert found == {
        "path": str(xdg / "anchor"),
        "exists": False,
        "order": found["order"],
        "rule": "the per-user default: no .anchor/ above the working directory",
    }
    home = tmp_path / "home"
    without = {k: v for k, v in _env(HOME=str(home)).items() if k != "XDG_DATA_HOME"}
    assert _info(work, env=without)["path"] == str(home / ".local" / "share" / "anchor")
    relative = _env(HOME=str(home), XDG_DATA_HOME="relative/dir")  # the XDG spec: a relative one is ignored
    assert _info(work, env=relative)["path"] == str(home / ".local" / "share" / "anchor")
    said = run_anchor(["info"], _env(XDG_DATA_HOME=str(xdg)), cwd=work)
    assert "(not made yet: the first write makes it)" in said.stdout.splitlines()[0]
    assert "none yet (the first stamp starts it" in said.stdout
    assert not xdg.exists() and sorted(work.iterdir()) == []


def test_the_order_is_option_variable_project_file_nearest_dot_anchor_user_file_per_user_default(
    tmp_path: Path,
) -> None:
    project, config = tmp_path / "project", tmp_path / "config"
    (project / ".anchor").mkdir(parents=True)
    (config / "anchor").mkdir(parents=True)
    (config / "anchor" / "anchor.toml").write_text('data_dir = "from-user-file"\n')
    env = _env(XDG_CONFIG_HOME=str(config))
    assert _info(project, env=env)["rule"] == "the nearest .anchor/ above the working directory"
    assert _info(tmp_path, env=env) == {
        "path": str(config / "anchor" / "from-user-file"),
        "exists": False,
        "rule": str(config / "anchor" / "anchor.toml"),
        "order": _info(tmp_path, env=env)["order"],
    }
    (project / "anchor.toml").write_text('data_dir = "from-project-file"\n')
    assert _info(project, env=env)["path"] == str(project / "from-project-file")
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "from-variable")
    assert _info(project, env=env) | {"order": ""} == {
        "path": str(tmp_path / "from-variable"),
        "exists": False,
        "rule": "ANCHOR_DATA_DIR",
        "order": "",
    }
    by_option = run_anchor(["--data-dir", "opt", "info", "--json"], env, cwd=project)
    assert json.loads(by_option.stdout)["data_dir"]["path"] == str(project / "opt")
    assert json.loads(by_option.stdout)["data_dir"]["rule"] == "--data-dir"


def test_a_verified_paths_nearest_dot_anchor_comes_before_the_working_directorys(tmp_path: Path) -> None:
    """`anchor verify outside/results` from outside's parent reads the data dir that stamped it, even
    when the parent (or a folder above it) has a data dir of its own."""
    (tmp_path / "outside" / ".anchor").mkdir(parents=True)
    (tmp_path / "outside" / "results").mkdir()
    found = _info(tmp_path, "outside/results")
    assert found["path"] == str(tmp_path / "outside" / ".anchor")
    assert found["rule"] == "the nearest .anchor/ above outside/results"
    (tmp_path / ".anchor").mkdir()
    assert _info(tmp_path, "outside/results")["path"] == str(tmp_path / "outside" / ".anchor")
    assert _info(tmp_path)["path"] == str(tmp_path / ".anchor")  # a command with no path: the working directory's


@pytest.mark.chain  # two local chains of their own, one after the other
def test_stamp_in_a_folder_then_verify_it_from_the_parent_with_no_flag(tmp_path: Path) -> None:
    """The scenario that failed: with an old layout (`outside/.anchor`, made by an earlier version in
    the folder stamped from), and with no data dir anywhere (the per-user one)."""
    for layout in ("outside/.anchor", "per-user"):
        case = tmp_path / layout.split("/")[0]
        outside = case / "outside"
        (outside / "myresults").mkdir(parents=True)
        (outside / "myresults" / "metrics.json").write_text('{"accuracy": 0.91}\n')
        if layout != "per-user":
            (outside / ".anchor").mkdir()
        env = _env(ANCHOR_LOCAL_PORT=str(free_port()), XDG_DATA_HOME=str(case / "xdg"))
        try:
            stamped = run_anchor(["stamp", "myresults"], env, cwd=outside)
            assert stamped.returncode == 0, stamped.stderr
            checked = run_anchor(["verify", "outside/myresults"], env, cwd=case)
            assert checked.returncode == 0, checked.stderr
            assert "OK: outside/myresults (1 file) is anchored" in checked.stdout
            checked_fast = run_anchor(["verify", "outside/myresults", "--json"], env, cwd=case)
            assert json.loads(checked_fast.stdout)["ok"] is True
            used = _info(case, "outside/myresults", env=env)["path"]
            assert used == str(outside / ".anchor" if layout != "per-user" else case / "xdg" / "anchor")
        finally:
            down = run_anchor(["chain", "down"], env, cwd=outside)
            assert down.returncode == ExitCode.OK, down.stderr


@pytest.mark.chain
def test_a_stamp_from_another_directory_uses_the_data_dir_its_verify_and_info_name(tmp_path: Path) -> None:
    """`anchor stamp /abs/proj/results` run from elsewhere anchored on the working directory's (here the
    per-user) data dir and chain, while `anchor info PATH` and `anchor verify PATH` named the project's
    `.anchor/`: the stamp's own verify said "not anchored". A stamp of PATH takes the data dir nearest to
    PATH first, as verify does."""
    project = tmp_path / "proj"
    (project / "results").mkdir(parents=True)
    (project / "results" / "metrics.json").write_text('{"accuracy": 0.91}\n')
    (project / ".anchor").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = _env(ANCHOR_LOCAL_PORT=str(free_port()), XDG_DATA_HOME=str(tmp_path / "xdg"))
    try:
        assert _info(elsewhere, str(project / "results"), env=env)["path"] == str(project / ".anchor")
        stamped = run_anchor(["stamp", str(project / "results")], env, cwd=elsewhere)
        assert stamped.returncode == 0, stamped.stderr
        assert (project / ".anchor" / "journal.sqlite").is_file() and not (tmp_path / "xdg" / "anchor").exists()
        for cwd in (elsewhere, project):
            checked = run_anchor(["verify", str(project / "results")], env, cwd=cwd)
            assert checked.returncode == 0, (cwd, checked.stderr)
    finally:
        down = run_anchor(["chain", "down"], env, cwd=project)
        assert down.returncode == ExitCode.OK, down.stderr


def test_a_dot_anchor_that_comes_with_a_verified_path_is_no_trust_root_on_a_chain_named_by_url(tmp_path: Path) -> None:
    """A downloaded result with a `.anchor/` beside it recording a lookalike registry for Base: the path's
    data dir locates the local chain only; with an RPC URL the verifier's data dir is the user's own."""
    planted = tmp_path / "download" / ".anchor"
    (planted / "deployments").mkdir(parents=True)
    (planted / "deployments" / "8453.json").write_text('{"address": "0x' + "66" * 20 + '"}')
    (tmp_path / "download" / "results").mkdir()
    by_url = _info(tmp_path, "download/results", env=_env(ANCHOR_RPC_URL="http://127.0.0.1:9"))
    assert by_url["path"] != str(planted) and by_url["rule"].startswith("the per-user default")
    read_rpcs = _env(ANCHOR_READ_RPCS="http://127.0.0.1:9,http://127.0.0.1:10")
    assert _info(tmp_path, "download/results", env=read_rpcs)["path"] != str(planted)
    assert _info(tmp_path, "download/results")["path"] == str(planted)  # the local chain it was stamped on


def test_another_users_dot_anchor_above_is_passed_over_as_git_passes_over_another_users_git(tmp_path: Path) -> None:
    """A `/tmp/.anchor` another local user made would otherwise hold our journal, chain and registry."""
    theirs = tmp_path / ".anchor"
    theirs.mkdir()
    os.chown(theirs, 4242, 4242)
    (tmp_path / "mine").mkdir()
    found = _info(tmp_path / "mine")
    assert found["path"] != str(theirs) and found["rule"].startswith("the per-user default"), found
    (tmp_path / "mine" / ".anchor").mkdir()
    assert _info(tmp_path / "mine")["path"] == str(tmp_path / "mine" / ".anchor")
