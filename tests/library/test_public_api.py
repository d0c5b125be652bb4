"""`import anchor` is the library: a training script stamps and verifies with top-level names
only, with a key here or through a service, and the names docs/python.md lists are the ones there are."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, deployed

DOC = ROOT / "docs" / "python.md"


def _script_block() -> str:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)[0]


def test_the_public_names_are_the_documented_ones_and_each_resolves() -> None:
    import anchor

    documented = set(re.findall(r"\| `anchor\.(\w+)", DOC.read_text(encoding="utf-8")))
    public = set(anchor.__all__) - {"__version__"}
    assert public == documented, (public - documented, documented - public)
    for name in public:
        assert getattr(anchor, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'stmap'"):
        anchor.stmap  # noqa: B018 - a typo is an AttributeError naming it, as for any module
    assert (ROOT / "anchor" / "py.typed").is_file()
    # anchor.mlflow: each of its functions documented, and nothing documented that it lacks
    bridged = set(re.findall(r"\| `anchor\.mlflow\.(\w+)", DOC.read_text(encoding="utf-8")))
    assert bridged == {n for n in anchor.mlflow.__all__ if n[0].islower()}, bridged


def test_the_errors_docs_python_lists_are_the_hierarchys_with_their_codes_and_exit_codes() -> None:
    import anchor

    rows = re.findall(r"\| `anchor\.(?:errors\.)?(\w+)` \| `(\w+)` \| (\d+) \|", DOC.read_text(encoding="utf-8"))
    assert len(rows) >= 8
    for name, code, exit_code in rows:
        error = getattr(anchor.errors, name)
        assert issubclass(error, anchor.errors.AnchorError) and (error.code, int(error.exit_code)) == (
            code,
            int(exit_code),
        ), name


def test_a_verifier_refuses_a_registry_that_is_not_an_address_whatever_the_door(tmp_path: Path) -> None:
    """`--registry 0x1234` was refused by `anchor verify` alone: `anchor mlflow verify` and a script took it,
    and every verdict then said "not our registry". The Verifier checks it, so every door does."""
    import anchor
    from anchor.errors import BadInput

    with pytest.raises(BadInput, match="expected an address") as refused:
        anchor.Verifier(anchor.Settings(data_dir=tmp_path), registries=["0x1234"])
    assert refused.value.detail == {"field": "registries"}
    assert anchor.Verifier(anchor.Settings(data_dir=tmp_path), registries=["0x" + "ab" * 20]).registries
    # the one parser of an address as typed, for every option that takes one
    from anchor.manifest.onchain import parse_address

    typos = (("researcher", "0x12"), ("researcher_addresses", "0xzz" + "0" * 38), ("registry", "ab" * 20))
    for field, typed in typos:
        with pytest.raises(BadInput, match=f"^{field} .*: expected an address, 0x and 40 hex digits") as refused:
            parse_address(typed, field)
        assert refused.value.detail == {"field": field}
    assert parse_address(" 0x" + "AB" * 20 + "\n", "registry") == "0x" + "AB" * 20


def test_a_policy_it_cannot_read_is_refused_when_it_is_made_at_every_door() -> None:
    """A mistyped `--expect-submitter 0xabc` was `policy_mismatch` (exit 10), said after a full verify as if
    someone else had anchored the data; a mistyped date was told only after the chain was read."""
    import anchor

    for given, field in (
        ({"expect_submitter": "0xabc"}, "expect_submitter"),
        ({"anchored_before": "2026-13-01"}, "anchored_before"),
        ({"min_finality": "safee"}, "min_finality"),
    ):
        with pytest.raises(anchor.errors.BadInput) as refused:
            anchor.Policy(**given)
        assert refused.value.detail["field"] == field
    assert anchor.Policy(expect_submitter="0x" + "ab" * 20, anchored_before="2026-12-01", min_finality="12")


def test_a_refused_input_is_named_as_each_door_spells_it(tmp_path: Path) -> None:
    """The library named its inputs as the CLI spells them: `anchor.Policy(expect_submitter="0xabc")` said
    "--expect-submitter '0xabc': …" to a script, and the API said it of its query parameter
    `expect_submitter`. A refusal now opens with the library's name of the input (`detail["field"]`), and
    the CLI alone says it as its option, in text and in `--json` alike."""
    from fastapi.testclient import TestClient

    import anchor
    from api.app import create_app

    with pytest.raises(anchor.errors.BadInput) as refused:
        anchor.Policy(expect_submitter="0xabc")
    assert refused.value.message.startswith("expect_submitter '0xabc': expected an address")
    with pytest.raises(anchor.errors.BadInput) as refused:
        anchor.verify(tmp_path, require="al", settings=anchor.Settings(data_dir=tmp_path))
    assert refused.value.message.startswith("require 'al': expected any, all")
    with pytest.raises(anchor.errors.BadInput) as refused:
        anchor.Stamper.from_settings(anchor.Settings(data_dir=tmp_path), services=["calendar.example"])
    assert refused.value.message.startswith("services 'calendar.example': expected an http(s) URL")

    digest = "0x" + "ab" * 32
    with TestClient(create_app(anchor.Settings(data_dir=tmp_path))) as client:
        answer = client.get(f"/v1/verify/{digest}", params={"min_finality": "finalised"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["message"].startswith("min_finality 'finalised': expected safe, finalized")

    cli = [sys.executable, "-m", "anchor", "--data-dir", str(tmp_path)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    for args, said in (
        (["verify", str(tmp_path), "--require", "al"], "--require 'al': expected any, all"),
        (
            ["stamp", str(tmp_path), "--service", "calendar.example"],
            "--service 'calendar.example': expected an http(s) URL",
        ),
    ):
        text = subprocess.run([*cli, *args], capture_output=True, text=True, env=env, check=False)
        assert text.returncode == 2 and text.stderr.startswith(f"error[bad_input]: {said}"), text.stderr
        as_json = subprocess.run([*cli, *args, "--json"], capture_output=True, text=True, env=env, check=False)
        error = json.loads(as_json.stdout)["error"]
        assert error["message"].startswith(said) and error["detail"]["field"] in ("require", "services"), error


def test_an_offline_verifier_refuses_a_finality_policy_before_reading_anything(tmp_path: Path) -> None:
    """Offline, the trusted block is the finality: `--min-finality` was refused by `anchor verify --offline`
    alone, and a script's `Policy(min_finality=...)` on `Verifier.offline` was checked against nothing."""
    import anchor
    from anchor.errors import BadInput

    verifier = anchor.Verifier.offline(["5:0x" + "ab" * 32], data_dir=tmp_path)
    with pytest.raises(BadInput, match="no meaning offline") as refused:
        verifier.verify(tmp_path / "never-stamped", policy=anchor.Policy(min_finality="safe"))
    assert refused.value.detail == {"field": "min_finality"}


def test_verify_each_gives_every_path_its_verdict_or_its_error_in_turn(tmp_path: Path) -> None:
    """`Verifier.verify_each` (what `anchor verify A B C` renders): a failure is that path's typed error,
    yielded in its place, and the next path is still verified."""
    import anchor
    from anchor.errors import BadInput

    (tmp_path / "here").write_text("never stamped\n")
    verifier = anchor.Verifier(anchor.Settings(data_dir=tmp_path / "data"))
    got = list(verifier.verify_each([tmp_path / "missing", tmp_path / "here"]))
    assert [path.name for path, _ in got] == ["missing", "here"]
    assert isinstance(got[0][1], BadInput) and isinstance(got[1][1], anchor.errors.NotAnchored)


def test_import_anchor_imports_nothing_of_the_package_until_a_name_is_used() -> None:
    probe = "import sys, anchor; print(sorted(m for m in sys.modules if m.startswith('anchor.') or m == 'typing'))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.replace("'", '"')) == []


@pytest.mark.chain
def test_a_training_script_stamps_verifies_and_sees_a_tampered_file_with_top_level_names_only(tmp_path: Path) -> None:
    """docs/python.md's script, run as written in a fresh interpreter, on the local chain."""
    with deployed(tmp_path / "data") as chain:
        work = tmp_path / "job"
        work.mkdir()
        script = work / "train.py"
        script.write_text(_script_block())
        assert "from anchor." not in script.read_text() and "import anchor." not in script.read_text()
        ran = subprocess.run(
            [sys.executable, str(script)], cwd=work, env=chain.env(), capture_output=True, text=True, timeout=300
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        lines = ran.stdout.splitlines()
        assert lines[0].startswith("anchored 0x") and lines[0].endswith(" results.anchor.json"), lines
        verified = re.fullmatch(r"verified: (0x[0-9a-fA-F]{40}) (\S+) block (\d+)", lines[1])
        assert verified, lines
        assert verified.group(1) == "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"  # the local chain's dev account
        assert lines[2].startswith("tampered: ") and "metrics.json" in lines[2], lines
        # the verdict the library gave is the CLI's (one library, two doors)
        (work / "results" / "metrics.json").write_text(json.dumps({"accuracy": 0.93}) + "\n")
        cli = json.loads(chain.cli("verify", str(work / "results"), "--json").stdout)
        assert cli["verified"] is True and cli["submitter"] == verified.group(1)
        assert cli["anchored_at"] == verified.group(2) and cli["anchored_block"] == int(verified.group(3))


@pytest.mark.chain
def test_a_proof_that_holds_fewer_anchors_than_required_never_verifies(tmp_path: Path) -> None:
    """`--require 2` of a proof stamped with a key here (one anchor): it said OK, the requirement dropped
    without a word. The proof can never meet it, so it is a policy mismatch (exit 10), at both doors."""
    import anchor

    with deployed(tmp_path / "data") as chain:
        results = tmp_path / "results"
        results.mkdir()
        (results / "metrics.json").write_text('{"accuracy": 0.93}\n')
        chain.cli("stamp", str(results), check=True)
        verifier = anchor.Verifier(chain.settings)
        assert verifier.verify(results, require="1").verified and verifier.verify(results, require="all").verified
        with pytest.raises(anchor.errors.PolicyMismatch, match="the proof holds 1 anchor, 2 needed"):
            verifier.verify(results, require="2")
        cli = chain.cli("verify", str(results), "--require", "2", "--json")
        assert cli.returncode == 10 and json.loads(cli.stdout)["error"]["detail"]["field"] == "require"


@pytest.mark.chain
def test_through_a_service_the_library_stamps_pending_upgrades_and_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No key here: ANCHOR_SERVICE_URLS and the token are all the client has. Pending (a typed error
    while the service holds it), then upgraded after its flush, then verified naming its account."""
    import anchor
    from tests.calendar.test_calendar import TOKEN, _clean_env, local_service

    for name in [n for n in __import__("os").environ if n.startswith("ANCHOR_")]:
        monkeypatch.delenv(name)
    results = tmp_path / "results"
    results.mkdir()
    (results / "metrics.json").write_text('{"accuracy": 0.93}\n')
    assert _clean_env() is not None
    with local_service(tmp_path) as service:
        monkeypatch.setenv("ANCHOR_DATA_DIR", str(tmp_path / "client"))
        monkeypatch.setenv("ANCHOR_SERVICE_URLS", service.url)
        monkeypatch.setenv("ANCHOR_SERVICE_TOKEN", TOKEN)
        monkeypatch.setenv("ANCHOR_RPC_URL", service.rpc)
        stamped = anchor.stamp(results)
        assert stamped.state == "pending" and not stamped.anchored
        assert [r.url for r in stamped.receipts] == [service.url]
        assert not (tmp_path / "client" / "chain").exists()  # no local chain was started for the client
        verifier = anchor.Verifier.from_settings(registries=[service.registry])
        with pytest.raises(anchor.errors.Pending):
            verifier.verify(results, require="all")
        early = anchor.upgrade(results)
        assert not early.complete and early.still_pending == (service.url,)
        service.flush()
        done = anchor.upgrade(stamped.proof_path)
        assert done.complete and [a.service for a in done.added] == [service.url]
        verdict = verifier.verify(results)
        assert verdict.submitter == "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266" and verdict.service == service.url
        with pytest.raises(anchor.errors.PolicyMismatch, match="the proof holds 1 anchor, 2 needed"):
            verifier.verify(results, require="2")  # one service: a second anchor can never come
        assert verdict.anchored_at and verdict.chain_id == 31337
        with pytest.raises(anchor.errors.PolicyMismatch):  # the policy is the verdict's last step
            verifier.verify(results, policy=anchor.Policy(expect_submitter="0x" + "12" * 20))
        (results / "metrics.json").write_text('{"accuracy": 0.99}\n')
        with pytest.raises(anchor.errors.Tampered, match="metrics.json"):
            verifier.verify(results)
