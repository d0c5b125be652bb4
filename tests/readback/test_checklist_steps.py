"""One test per numbered step of the verification checklist (anchor.readback.checklist.STEPS): each
breaks exactly that step of an otherwise good proof, on a real anvil chain, and expects exactly that
step's typed error carrying that step's number. Named as solmate names its reverts (`test_RevertIf_...`):
what makes the verifier refuse. A step added to the checklist without its test here fails the last test."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from anchor.errors import (
    AnchorError,
    BadInput,
    DeploymentMismatch,
    NotAnchored,
    PolicyMismatch,
    ProofContradicted,
    ProofFormatError,
    Retracted,
    Tampered,
    UnknownRegistry,
)
from anchor.library.verifier import Verifier
from anchor.readback.checklist import STEPS
from anchor.readback.verifier import Policy
from tests.conftest import ROOT, Chain, result_bundle_spec

ANOTHER_ACCOUNT = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
"""anvil's second account: an address with no code, and not the submitter of anything here."""


@dataclass
class Stamped:
    """A folder stamped on the session's chain, and a way to verify it with its proof edited."""

    chain: Chain
    data: Path
    proof: Path

    def edited(self, tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
        """A copy of the proof beside the test's own files, with `edit` applied to its JSON."""
        document = json.loads(self.proof.read_text())
        edit(document)
        target = tmp_path / "edited.anchor.json"
        target.write_text(json.dumps(document))
        return target


@pytest.fixture
def stamped(deployed_chain: Chain, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stamped]:
    """A folder stamped for a step to break (the registry is write-once: its content is unique to the test)."""
    where = tmp_path_factory.mktemp("steps")
    data = where / "data"
    data.mkdir()
    (data / "metrics.json").write_text(json.dumps({"accuracy": 0.91, "run": str(where)}))
    (data / "notes.txt").write_text("the steps of the checklist\n")
    deployed_chain.cli("stamp", str(data), check=True)
    yield Stamped(deployed_chain, data, where / "data.anchor.json")


def refused(step: int, error: type[AnchorError], verify: Callable[[], object]) -> AnchorError:
    """`verify` raises exactly `error` (not a subclass, not another step's), carrying `step`."""
    assert error in STEPS[step - 1].errors, f"step {step} does not list {error.__name__}"
    with pytest.raises(AnchorError) as caught:
        verify()
    got = caught.value
    assert (type(got), got.step) == (error, step), f"{type(got).__name__} at step {got.step}: {got.message}"
    return got


def test_an_unbroken_proof_passes_every_step(stamped: Stamped) -> None:
    """The baseline each test below breaks once: the same proof verifies."""
    verdict = Verifier(stamped.chain.settings).verify(stamped.data, proof=stamped.proof)
    assert verdict.files == 2


def test_RevertIf_the_batch_path_does_not_lead_to_its_root(stamped: Stamped, tmp_path: Path) -> None:
    def edit(proof: dict[str, Any]) -> None:
        proof["batch"]["leaf"] = "0x" + "ab" * 32

    edited = stamped.edited(tmp_path, edit)
    error = refused(1, ProofFormatError, lambda: Verifier(stamped.chain.settings).verify(stamped.data, proof=edited))
    assert error.detail["field"] == "batch.leaf"


def test_RevertIf_a_file_changed_since_it_was_stamped(stamped: Stamped, tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(stamped.data, copy)
    (copy / "notes.txt").write_text("edited\n")
    error = refused(2, Tampered, lambda: Verifier(stamped.chain.settings).verify(copy, proof=stamped.proof))
    assert error.detail["changed"] == ["notes.txt"]


def test_RevertIf_a_statement_names_a_subject_its_proof_does_not_bind(stamped: Stamped, tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(stamped.data, copy)
    shutil.copy(stamped.proof, tmp_path / "data.anchor.json")
    stamped.chain.cli("attest", str(copy), check=True)
    statements = tmp_path / "data.intoto.jsonl"
    lines = [json.loads(line) for line in statements.read_text().splitlines()]
    lines[0]["subject"][0]["digest"]["sha256"] = "00" * 32
    statements.write_text("".join(json.dumps(line) + "\n" for line in lines))
    error = refused(3, Tampered, lambda: Verifier(stamped.chain.settings).verify(statements))
    assert error.detail["subjects"] == [lines[0]["subject"][0]["name"]]


def test_RevertIf_a_service_receipt_is_for_another_manifest(stamped: Stamped, tmp_path: Path) -> None:
    def edit(proof: dict[str, Any]) -> None:
        proof["receipts"] = [
            {
                "url": "http://127.0.0.1:9",
                "service": "a calendar",
                "signer": ANOTHER_ACCOUNT,
                "manifest_digest": "0x" + "00" * 32,
                "chain_id": proof["anchor"]["chain_id"],
                "registry": proof["anchor"]["registry"],
                "accepted_at": 1_700_000_000,
                "signature": "0x" + "11" * 65,
            }
        ]

    edited = stamped.edited(tmp_path, edit)
    error = refused(4, ProofFormatError, lambda: Verifier(stamped.chain.settings).verify(stamped.data, proof=edited))
    assert error.detail["field"] == "receipts.manifest_digest"


def test_RevertIf_the_anchor_names_a_chain_no_endpoint_serves(stamped: Stamped, tmp_path: Path) -> None:
    def edit(proof: dict[str, Any]) -> None:
        proof["anchor"]["chain_id"] = 8453

    edited = stamped.edited(tmp_path, edit)
    error = refused(5, BadInput, lambda: Verifier(stamped.chain.settings).verify(stamped.data, proof=edited))
    assert error.detail["field"] == "rpc_url"


def test_RevertIf_the_anchor_names_a_registry_nobody_trusts(stamped: Stamped, tmp_path: Path) -> None:
    def edit(proof: dict[str, Any]) -> None:
        proof["anchor"]["registry"] = ANOTHER_ACCOUNT

    edited = stamped.edited(tmp_path, edit)
    error = refused(6, UnknownRegistry, lambda: Verifier(stamped.chain.settings).verify(stamped.data, proof=edited))
    assert error.detail["proof_registry"] == ANOTHER_ACCOUNT


def test_RevertIf_the_trusted_address_holds_other_code(stamped: Stamped, tmp_path: Path) -> None:
    def edit(proof: dict[str, Any]) -> None:
        proof["anchor"]["registry"] = ANOTHER_ACCOUNT

    edited = stamped.edited(tmp_path, edit)
    verifier = Verifier(stamped.chain.settings, registries=[ANOTHER_ACCOUNT])  # trusted by name: its code is read
    refused(7, DeploymentMismatch, lambda: verifier.verify(stamped.data, proof=edited))


def test_RevertIf_the_anchor_states_another_block_than_the_chain(stamped: Stamped, tmp_path: Path) -> None:
    def edit(proof: dict[str, Any]) -> None:
        proof["anchor"]["block_number"] += 1

    edited = stamped.edited(tmp_path, edit)
    error = refused(8, ProofContradicted, lambda: Verifier(stamped.chain.settings).verify(stamped.data, proof=edited))
    assert error.detail["field"] == "anchor.block_number"


def test_RevertIf_the_named_transaction_anchored_no_such_root(stamped: Stamped, tmp_path: Path) -> None:
    def edit(proof: dict[str, Any]) -> None:
        proof["anchor"]["tx_hash"] = "0x" + "cd" * 32

    edited = stamped.edited(tmp_path, edit)
    error = refused(9, NotAnchored, lambda: Verifier(stamped.chain.settings).verify(stamped.data, proof=edited))
    assert error.detail["tx_hash"] == "0x" + "cd" * 32


def test_RevertIf_the_submitter_retracted_the_root(deployed_chain: Chain, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "withdrawn.txt").write_text(f"a result later withdrawn {tmp_path}\n")
    deployed_chain.cli("stamp", str(data), check=True)
    deployed_chain.cli("retract", str(tmp_path / "data.anchor.json"), "--reason", "a leaked split", check=True)
    error = refused(10, Retracted, lambda: Verifier(deployed_chain.settings).verify(data))
    assert error.detail["reason"] == "a leaked split"


def test_RevertIf_more_anchors_are_required_than_the_proof_holds(stamped: Stamped) -> None:
    verifier = Verifier(stamped.chain.settings)
    error = refused(11, PolicyMismatch, lambda: verifier.verify(stamped.data, proof=stamped.proof, require="2"))
    assert error.detail == {"field": "require", "anchors": 1, "needed": 2}


def test_RevertIf_the_milestones_shown_are_not_the_anchored_ones(
    deployed_chain: Chain, bundle: Path, tmp_path: Path
) -> None:
    deployed_chain.cli("bundle", str(result_bundle_spec(tmp_path)), "--anchor", check=True)
    proof_path = tmp_path / "bundle.anchor.json"
    proof = json.loads(proof_path.read_text())
    proof["annotations"]["milestones"]["completed"] = "2026-11-30T03:01:00Z"  # outside the digest: shown only
    proof_path.write_text(json.dumps(proof))
    error = refused(12, Tampered, lambda: Verifier(deployed_chain.settings).verify(bundle))
    assert error.detail["milestones"] == ["completed"]


def test_RevertIf_a_resumed_bundle_pins_one_never_anchored(deployed_chain: Chain, tmp_path: Path) -> None:
    from anchor.anchoring.stamp import anchor_bundle
    from anchor.manifest.bundle import load_bundle_spec

    target = tmp_path / "resumed"
    shutil.copytree(ROOT / "examples" / "result-bundle", target)
    (target / "outputs" / "run.txt").write_text(f"resumed {tmp_path}")
    spec = target / "bundle.toml"
    never = "77" * 32
    spec.write_text(spec.read_text().split("[milestones]")[0] + f'\n[resume]\nbundle = "part-1"\ndigest = "{never}"\n')
    manifest, tree, out = load_bundle_spec(spec)
    anchor_bundle(manifest, tree, deployed_chain.settings, out.with_name("outputs.anchor.json"))  # no pin check
    error = refused(13, NotAnchored, lambda: Verifier(deployed_chain.settings).verify(out))
    assert error.detail["field"] == "resume.digest"


def test_RevertIf_someone_else_anchored_it(stamped: Stamped) -> None:
    policy = Policy(expect_submitter=ANOTHER_ACCOUNT)
    verifier = Verifier(stamped.chain.settings)
    error = refused(14, PolicyMismatch, lambda: verifier.verify(stamped.data, proof=stamped.proof, policy=policy))
    assert error.detail["expected"] == ANOTHER_ACCOUNT


def test_every_numbered_step_has_its_revert_test() -> None:
    """One `test_RevertIf_` here per step of STEPS, each breaking the step its `refused` names."""
    import ast

    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    broken = set()
    for function in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_RevertIf_")):
        calls = [c for c in ast.walk(function) if isinstance(c, ast.Call) and getattr(c.func, "id", "") == "refused"]
        assert len(calls) == 1, f"{function.name} breaks {len(calls)} steps, not one"
        first = calls[0].args[0]
        assert isinstance(first, ast.Constant)
        broken.add(first.value)
    assert broken == {s.number for s in STEPS}, sys.modules[__name__].__doc__
