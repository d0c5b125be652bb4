"""`anchor attest`: in-toto Statements v1 for a result bundle (SLSA Provenance v1 and our
chain-anchor predicate) and for an attempt, validated with the in-toto-attestation package, and
`anchor verify` on the statements: OK, then tampered when a subject, a digest or a dependency changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from in_toto_attestation.predicates.provenance.v1 import provenance_pb2
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement

from anchor.errors import ExitCode
from tests.conftest import ROOT, Chain
from tests.research.helpers import SCORE_IS_X, make_repo


def _validated(path: Path) -> list[dict[str, Any]]:
    """Every line parsed into in-toto's Statement proto and validated; SLSA predicates into its proto."""
    statements = []
    for line in path.read_text().splitlines():
        proto = json_format.Parse(line, statement_pb2.Statement())  # unknown fields refused
        Statement.copy_from_pb(proto).validate()
        statement = json.loads(line)
        if statement["predicateType"] == "https://slsa.dev/provenance/v1":
            provenance = json_format.ParseDict(statement["predicate"], provenance_pb2.Provenance())
            assert provenance.build_definition.build_type and provenance.run_details.builder.id
        statements.append(statement)
    return statements


def _rewrite(path: Path, edit: Any) -> None:
    statements = [json.loads(line) for line in path.read_text().splitlines()]
    for statement in statements:
        edit(statement)
    path.write_text("".join(json.dumps(s) + "\n" for s in statements))


@pytest.fixture
def result_bundle(fresh_chain: Chain, tmp_path: Path) -> Path:
    target = tmp_path / "result-bundle"
    shutil.copytree(ROOT / "examples" / "result-bundle", target)
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("bundle", str(target / "bundle.toml"), "--anchor", check=True)
    return target


def test_a_result_bundle_gets_slsa_provenance_and_a_chain_anchor_that_verify(
    fresh_chain: Chain, result_bundle: Path
) -> None:
    outputs = result_bundle / "outputs"
    made = fresh_chain.cli("attest", str(outputs), check=True)
    written = result_bundle / "outputs.intoto.jsonl"
    assert str(written) in made.stdout
    slsa, anchor = _validated(written)
    assert [s["predicateType"] for s in (slsa, anchor)] == [
        "https://slsa.dev/provenance/v1",
        "https://anchor-provenance.invalid/chain-anchor/v1",
    ]
    names = {s["name"]: s["digest"] for s in anchor["subject"]}
    assert set(names) == {"metrics.json", "predictions.csv"} and all(
        {"blake3", "sha256"} == set(d) for d in names.values()
    )
    deps = {d["name"]: d["digest"]["sha256"] for d in slsa["predicate"]["buildDefinition"]["resolvedDependencies"]}
    manifest = anchor["predicate"]["manifest"]
    assert deps["mission"] == manifest["mission_sha256"] and deps["image"] == manifest["image"].split(":")[-1]
    assert fresh_chain.cli("verify", str(written)).returncode == ExitCode.OK

    original = written.read_text()
    # a subject that changes on disk
    metrics = outputs / "metrics.json"
    kept = metrics.read_bytes()
    metrics.write_bytes(kept.replace(b"0", b"1", 1))
    assert fresh_chain.cli("verify", str(written)).returncode == ExitCode.TAMPERED
    metrics.write_bytes(kept)
    # a subject digest edited in the statement
    _rewrite(written, lambda s: s["subject"][0]["digest"].update(sha256="00" * 32))
    edited = fresh_chain.cli("--json", "verify", str(written))
    assert edited.returncode == ExitCode.TAMPERED and "subjects" in json.loads(edited.stdout)["error"]["detail"]
    written.write_text(original)
    # a dependency edited in the SLSA predicate
    _rewrite(
        written,
        lambda s: [
            d["digest"].update(sha256="11" * 32)
            for d in s["predicate"].get("buildDefinition", {}).get("resolvedDependencies", [])
            if d["name"] == "data_snapshot"
        ],
    )
    dep = fresh_chain.cli("--json", "verify", str(written))
    assert dep.returncode == ExitCode.TAMPERED and json.loads(dep.stdout)["error"]["detail"] == {
        "dependency": "data_snapshot"
    }
    written.write_text(original)
    assert fresh_chain.cli("verify", str(written)).returncode == ExitCode.OK
    # an existing statement file is never overwritten
    again = fresh_chain.cli("attest", str(outputs))
    assert again.returncode == ExitCode.BAD_INPUT and written.read_text() == original


def test_an_attempt_gets_a_chain_anchor_statement_over_its_commit_and_diff(fresh_chain: Chain, tmp_path: Path) -> None:
    fresh_chain.cli("deploy", check=True)
    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1.0, "y": 3}), "README.md": "r\n"})
    contract = tmp_path / "contract.toml"
    contract.write_text(
        f'task = "t"\ncommand = "{SCORE_IS_X.replace(chr(34), chr(92) + chr(34))}"\neditable = ["params.json"]\n'
        'metric = "score"\nmode = "max"\nattempt_timeout_minutes = 1\n'
    )
    fresh_chain.cli(
        "research", "run", "--repo", str(repo), "--contract", str(contract), "--max-attempts", "3", check=True
    )
    ledger = fresh_chain.data_dir / "research" / "ledger.jsonl"
    attempt = [e for e in map(json.loads, ledger.read_text().splitlines()) if "event" not in e][1]
    out = tmp_path / "attempt.intoto.jsonl"
    fresh_chain.cli("attest", "0x" + attempt["attempt_digest"], "--out", str(out), check=True)
    [statement] = _validated(out)
    assert statement["subject"] == [
        {"name": "commit", "digest": {"gitCommit": attempt["commit"]}},
        {"name": "code.diff", "digest": {"blake3": attempt["diff_blake3"]}},
    ]
    assert statement["predicate"]["manifest"]["kind"] == "attempt"
    assert fresh_chain.cli("verify", str(out)).returncode == ExitCode.OK
    _rewrite(out, lambda s: s["subject"][0]["digest"].update(gitCommit="ab" * 20))
    assert fresh_chain.cli("verify", str(out)).returncode == ExitCode.TAMPERED
    unknown = fresh_chain.cli("attest", "0x" + "cd" * 32)
    assert unknown.returncode == ExitCode.BAD_INPUT and "no proof of this manifest" in unknown.stderr


def test_a_single_stamped_file_gets_a_chain_anchor_statement_that_verifies(
    deployed_chain: Chain, tmp_path: Path
) -> None:
    """`anchor attest results.csv` of a file stamped on its own said "unexpected NotADirectoryError; this is
    a bug in anchor": its one subject's SHA-256 was read at `results.csv/results.csv`."""
    import hashlib

    data = tmp_path / "results.csv"
    data.write_text("epoch,loss\n1,0.5\n")
    deployed_chain.cli("stamp", str(data), check=True)
    deployed_chain.cli("attest", str(data), check=True)
    [statement] = _validated(tmp_path / "results.csv.intoto.jsonl")
    [subject] = statement["subject"]
    assert subject["name"] == "results.csv"
    assert subject["digest"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert deployed_chain.cli("verify", str(tmp_path / "results.csv.intoto.jsonl")).returncode == ExitCode.OK


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("submitter", "0x000000000000000000000000000000000000dEaD"),
        ("chainId", 8453),
        ("registry", "0x" + "11" * 20),
        ("txHash", "0x" + "ee" * 32),
        ("blockNumber", 1),
        ("anchoredAt", "2020-01-01T00:00:00+00:00"),
    ],
)
def test_the_chain_anchor_predicates_restatement_of_the_anchor_is_held_to_the_chain(
    deployed_chain: Chain, tmp_path: Path, field: str, value: object
) -> None:
    """The chain-anchor predicate restates who anchored what, where and when; a tool that reads it after a
    passing `anchor verify` takes it as checked. An edited submitter, chain, registry, transaction, block
    or time once verified: each is `tampered` now, naming the field."""
    data = tmp_path / "results.csv"
    data.write_text("epoch,loss\n1,0.5\n")
    deployed_chain.cli("stamp", str(data), check=True)
    deployed_chain.cli("attest", str(data), check=True)
    written = tmp_path / "results.csv.intoto.jsonl"
    statement = json.loads(written.read_text())
    statement["predicate"][field] = value
    written.write_text(json.dumps(statement) + "\n")
    said = deployed_chain.cli("verify", str(written), "--json")
    assert said.returncode == ExitCode.TAMPERED, said.stdout
    assert json.loads(said.stdout)["error"]["detail"]["field"] == f"predicate.{field}"
