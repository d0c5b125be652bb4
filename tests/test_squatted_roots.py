"""Issue 30 on a real anvil: a batch root anyone can compute (a one-item batch's root is
keccak(keccak(digest)), and the digest of a public file is public), anchored first by a stranger
(docs/threat-model.md: a stranger who anchors first takes nothing and blocks nothing).

Registry v3 (what `anchor deploy` deploys) keys roots by (submitter, root): our batch goes in under our
key beside the stranger's record, unchanged. Registries v1 and v2 key roots by root alone, so the
stranger's record is not ours and must never be adopted: the batch is re-made with a salt."""

from __future__ import annotations

import json
from pathlib import Path

from eth_account import Account

from anchor.anchoring.proofs import proof_from_journal
from anchor.anchoring.service import AnchorService
from anchor.batch.merkle import BatchTree, process_proof
from anchor.chain.keys import Signer
from anchor.errors import ExitCode
from anchor.proof.file import load_proof
from tests.conftest import Chain
from tests.journal_helpers import unique_submissions

STRANGER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"  # anvil's second account
OURS = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"  # anvil's first: the local chain's funded key


def _deploy_v2(chain: Chain) -> None:
    """A registry v2, as a data dir deployed before v3 keeps using it (`anchor deploy` says "already
    deployed" for a live recorded registry; only `--force` deploys v3)."""
    from anchor.chain.compiler import shipped_registry
    from anchor.chain.deployment import deploy
    from anchor.chain.keys import load_signer
    from anchor.chain.open import open_chain

    handle = open_chain(chain.settings, start_local=False)
    deploy(handle.w3, handle.chain_id, load_signer(handle.chain_id), shipped_registry("2.0.0"), chain.data_dir)
    assert "AnchorRegistryV2 2.0.0" in chain.cli("deploy", check=True).stdout


def test_on_v3_a_stranger_who_anchors_our_root_first_neither_blocks_nor_owns_it_and_our_proof_names_us(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """The acceptance of issue 30: the stranger anchors our batch's root first; our stamp ends with a
    proof naming our address, and `verify --expect-submitter OURS` exits 0. On v2 the same stamp said
    "already anchored" and adopted the stranger's record (then --expect-submitter OURS exited 10)."""
    deployed = fresh_chain.cli("deploy", check=True).stdout
    assert "AnchorRegistryV3 3.0.0" in deployed
    result = tmp_path / "result.txt"
    result.write_text("accuracy 0.912\n")
    digest = bytes.fromhex(json.loads(fresh_chain.cli("hash", str(result), "--json", check=True).stdout)
                           ["manifest_digest"][2:])  # fmt: skip
    squatted = BatchTree.build([digest]).root
    service = AnchorService.open(fresh_chain.settings)
    stranger = Signer(Account.from_key(STRANGER_KEY), "stranger")
    theirs = service.registry.anchor_root(stranger, squatted)
    service.close()

    stamped = fresh_chain.cli("stamp", str(result))
    said = stamped.stdout + stamped.stderr
    assert stamped.returncode == 0, said
    assert "already anchored" not in said and "salt" not in said
    proof = json.loads((tmp_path / "result.txt.anchor.json").read_text())
    assert proof["batch"]["root"] == "0x" + squatted.hex() and proof["anchor"]["tx_hash"] != theirs.tx_hash
    verified = fresh_chain.cli("verify", str(result), "--expect-submitter", OURS)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"by          {OURS}" in verified.stdout
    refused = fresh_chain.cli("verify", str(result), "--expect-submitter", stranger.address)
    assert refused.returncode == ExitCode.POLICY
    # the same root, two records: each submitter's own, neither blocked
    service = AnchorService.open(fresh_chain.settings)
    records = service.registry.root_records(squatted)
    service.close()
    assert [r.submitter for r in records] == [stranger.address, OURS]


def test_on_v2_a_stranger_who_anchors_our_batch_root_first_is_not_adopted_and_stamp_anchors_a_salted_batch(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    _deploy_v2(fresh_chain)
    result = tmp_path / "result.txt"
    result.write_text("accuracy 0.912\n")
    digest = bytes.fromhex(json.loads(fresh_chain.cli("hash", str(result), "--json", check=True).stdout)
                           ["manifest_digest"][2:])  # fmt: skip
    squatted = BatchTree.build([digest]).root  # what our one-item batch would anchor
    service = AnchorService.open(fresh_chain.settings)
    stranger = Signer(Account.from_key(STRANGER_KEY), "stranger")
    service.registry.anchor_root(stranger, squatted)
    service.close()

    stamped = fresh_chain.cli("stamp", str(result))
    said = stamped.stdout + stamped.stderr
    assert stamped.returncode == 0, said
    assert "already anchored" not in said
    assert f"a stranger ({stranger.address}) anchored this batch's root first" in said and "salt" in said

    proof = json.loads((tmp_path / "result.txt.anchor.json").read_text())
    root = bytes.fromhex(proof["batch"]["root"][2:])
    assert root != squatted
    assert process_proof(digest, [bytes.fromhex(p[2:]) for p in proof["batch"]["proof"]]) == root
    verified = fresh_chain.cli("verify", str(result), "--expect-submitter", OURS)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"by          {OURS}" in verified.stdout
    theirs = fresh_chain.cli("verify", str(result), "--expect-submitter", stranger.address)
    assert theirs.returncode == ExitCode.POLICY


def test_on_v2_a_squatted_root_in_a_batch_of_many_is_resalted_and_every_item_proves_against_our_root(
    backend_chain: Chain,
) -> None:
    """The same in the journal, on both backends: the effect keeps its items, gets a salt and a new
    root, and the proofs (written now, and rebuilt from the journal by any replica) lead to it."""
    _deploy_v2(backend_chain)
    service = AnchorService.open(backend_chain.settings)
    subs = unique_submissions(3)
    submitted = service.submit(subs)
    squatted = BatchTree.build([s.digest for s in submitted]).root
    stranger = Signer(Account.from_key(STRANGER_KEY), "stranger")
    service.registry.anchor_root(stranger, squatted)
    report = service.flush()
    assert report.resalted and not report.adopted and not report.failed
    assert service.registry.root_record(squatted).submitter == stranger.address  # theirs stays theirs
    for sub in submitted:
        proof = load_proof(backend_chain.settings.proofs_dir / f"{sub.digest.hex()}.json")
        rebuilt = proof_from_journal(service.journal, service.chain_id, sub.digest, service.registry.code_hash)
        assert rebuilt is not None and rebuilt.dumps() == proof.dumps()  # what another replica serves
        root = bytes.fromhex(proof.batch.root[2:])
        assert root != squatted
        record = service.registry.root_record(root)
        assert record is not None and record.submitter == service.runner.signer.address
        assert service.registry.verify_inclusion(root, [bytes.fromhex(p[2:]) for p in proof.batch.proof], sub.digest)
    service.close()
