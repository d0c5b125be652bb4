"""The local chain restarted without its state: stale proofs say so, reconciliation anchors again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from tests.conftest import Chain
from tests.journal_helpers import assert_exactly_once


def test_a_chain_reset_is_detected_and_everything_is_anchored_again(
    fresh_chain: Chain, bundle: Path, tmp_path: Path
) -> None:
    fresh_chain.cli("deploy", check=True)
    first = json.loads(fresh_chain.cli("anchor", str(bundle), "--json", check=True).stdout)
    proof = bundle.with_name("bundle.anchor.json")
    stale = tmp_path / "stale.anchor.json"
    shutil.copy(proof, stale)
    written_before = proof.stat().st_mtime_ns

    fresh_chain.cli("chain", "down", check=True)
    (fresh_chain.data_dir / "chain" / "state.json").unlink()  # the chain forgets everything
    fresh_chain.cli("chain", "up", check=True)

    gone = fresh_chain.cli("verify", str(bundle), "--proof", str(stale))
    assert gone.returncode == ExitCode.DEPLOYMENT_MISMATCH and "was the chain reset?" in gone.stderr
    fresh_chain.cli("deploy", check=True)  # a new registry where the old one was
    missing = fresh_chain.cli("verify", str(bundle), "--proof", str(stale))
    assert missing.returncode == ExitCode.NOT_ANCHORED, missing.stderr
    assert f"root {first['proof']['batch']['root']} is not anchored" in missing.stderr

    flushed = json.loads(fresh_chain.cli("journal", "flush", "--json", check=True).stdout)
    assert flushed["chain_reset"] is True and flushed["reanchored"] + flushed["confirmed_effects"] >= 1
    # anchored again on the new chain: the root its new registry did not hold above is there now (verify
    # below). Not by block hash: the signed bytes, the tx hash and, when both chains mine it within the
    # same second, the whole block can be identical on a fresh deterministic anvil. The proof was rewritten.
    assert proof.stat().st_mtime_ns > written_before
    assert json.loads(proof.read_text())["batch"]["root"] == first["proof"]["batch"]["root"]
    assert fresh_chain.cli("verify", str(bundle)).returncode == ExitCode.OK
    assert_exactly_once(fresh_chain.node.rpc_url, fresh_chain.data_dir, 1)


def test_a_reset_within_the_second_of_the_first_start_is_detected_by_the_lost_blocks(
    fresh_chain: Chain, bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """anvil's genesis is a function of its start time: a chain restarted without its state in the same
    second has the same genesis hash, and the reset went unseen (a flake of the test above, whose CLI
    calls run in-process and fast). The head below our highest confirmed anchor says it all the same."""
    from anchor.chain import transactions

    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("anchor", str(bundle), check=True)
    genesis = transactions.block_hash(_rpc(fresh_chain), 0)
    fresh_chain.cli("chain", "down", check=True)
    (fresh_chain.data_dir / "chain" / "state.json").unlink()
    fresh_chain.cli("chain", "up", check=True)
    real = transactions.block_hash
    monkeypatch.setattr(transactions, "block_hash", lambda rpc, n: genesis if n == 0 else real(rpc, n))
    fresh_chain.cli("deploy", check=True)
    flushed = json.loads(fresh_chain.cli("journal", "flush", "--json", check=True).stdout)
    assert flushed["chain_reset"] is True and flushed["reanchored"] + flushed["confirmed_effects"] >= 1
    assert fresh_chain.cli("verify", str(bundle)).returncode == ExitCode.OK


def _rpc(chain: Chain):  # type: ignore[no-untyped-def]
    from anchor.chain.connection import reach

    return reach(chain.node.rpc_url)[0]
