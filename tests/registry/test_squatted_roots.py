"""On a real anvil: a batch root anyone can compute (a one-item batch's root is
keccak(keccak(digest)), and the digest of a public file is public), anchored first by a stranger
(docs/threat-model.md: a stranger who anchors first takes nothing and blocks nothing).

The registry keys roots by (submitter, root): our batch goes in under our key beside the stranger's
record, unchanged, and is never adopted from theirs. (The retired v1 and v2 keyed roots by the root
alone, and the journal re-made such a batch with a salt; that path went with them.)"""

from __future__ import annotations

import json
from pathlib import Path

from eth_account import Account

from anchor.anchoring.proofs import proof_from_journal
from anchor.anchoring.service import AnchorService
from anchor.batch.merkle import BatchTree
from anchor.chain.keys import Signer
from anchor.errors import ExitCode
from tests.conftest import Chain
from tests.journal_helpers import unique_submissions

STRANGER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"  # anvil's second account
OURS = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"  # anvil's first: the local chain's funded key


def test_a_stranger_who_anchors_our_root_first_neither_blocks_nor_owns_it_and_our_proof_names_us(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """The stranger anchors our batch's root first; our stamp ends with a
    proof naming our address, and `verify --expect-submitter OURS` exits 0. On the retired v2 the same
    stamp said "already anchored" and adopted the stranger's record (then --expect-submitter OURS exited 10)."""
    deployed = fresh_chain.cli("deploy", check=True).stdout
    assert "AnchorRegistry 4.0.0" in deployed
    result = tmp_path / "result.txt"
    result.write_text("accuracy 0.912\n")
    digest = bytes.fromhex(
        json.loads(fresh_chain.cli("hash", str(result), "--json", check=True).stdout)["manifest_digest"][2:]
    )
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


def test_a_squatted_root_in_a_batch_of_many_goes_in_under_our_key_and_every_item_proves_against_it(
    backend_chain: Chain,
) -> None:
    """The same in the journal, on both backends: the stranger's record of our batch's root is theirs,
    the effect anchors the same root under our key (nothing adopted, nothing re-made), and the proofs
    (written now, and rebuilt from the journal by any replica) name our transaction."""
    backend_chain.cli("deploy", check=True)
    service = AnchorService.open(backend_chain.settings)
    subs = unique_submissions(3)
    submitted = service.submit(subs)
    squatted = BatchTree.build([s.digest for s in submitted]).root
    stranger = Signer(Account.from_key(STRANGER_KEY), "stranger")
    theirs = service.registry.anchor_root(stranger, squatted)
    report = service.flush()
    assert report.confirmed and not report.adopted and not report.failed
    assert [r.submitter for r in service.registry.root_records(squatted)] == [stranger.address, OURS]
    for sub in submitted:
        proof = service.proof(sub.digest)  # from the batch's tree in the store
        assert proof is not None
        rebuilt = proof_from_journal(service.journal, service.chain_id, sub.digest, service.registry.code_hash)
        assert rebuilt is not None and rebuilt.dumps() == proof.dumps()  # what another replica serves
        assert proof.batch.root == "0x" + squatted.hex() and proof.anchor.tx_hash != theirs.tx_hash
        record = service.registry.root_record_of_tx(squatted, proof.anchor.tx_hash)
        assert record is not None and record.submitter == service.runner.signer.address
        siblings = [bytes.fromhex(p[2:]) for p in proof.batch.proof]
        assert service.registry.verify_inclusion(squatted, siblings, sub.digest, record.submitter)
    service.close()
