"""A colleague without --rpc-url gets a proof anchored on a public chain: told that
chain's name and what to pass, at once, exit 2; no local chain is started to find out."""

from __future__ import annotations

import os
from pathlib import Path

from anchor.batch.merkle import BatchTree, leaf_of
from anchor.errors import ExitCode
from anchor.manifest.filetree import hash_tree
from anchor.proof.file import BatchPath, ChainAnchor, ProofFile, write_proof
from tests.cli import run_anchor


def test_a_proof_of_base_sepolia_without_rpc_url_names_the_chain_and_the_option(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "metrics.json").write_text('{"accuracy": 0.93}\n')
    tree = hash_tree(results)
    digest = tree.digest
    batch = BatchTree.build([digest])
    proof = ProofFile(
        manifest=tree.identity(),
        files=tuple(tree.files_json()),
        manifest_digest="0x" + digest.hex(),
        batch=BatchPath(
            item="0x" + digest.hex(), leaf="0x" + leaf_of(digest).hex(), proof=(), root="0x" + batch.root.hex()
        ),
        anchor=ChainAnchor(
            chain_id=84532,
            registry="0x" + "12" * 20,
            code_hash="0x" + "34" * 32,
            tx_hash="0x" + "56" * 32,
            block_number=7,
        ),
    )
    write_proof(proof, tmp_path / "results.anchor.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    done = run_anchor(["verify", str(results)], {**env, "ANCHOR_DATA_DIR": str(tmp_path / "colleague")})
    assert done.returncode == ExitCode.BAD_INPUT, done.stdout + done.stderr
    assert "anchored on Base Sepolia (84532)" in done.stderr
    assert "--rpc-url https://sepolia.base.org" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "colleague" / "chain").exists()  # nothing started, nothing written for it
