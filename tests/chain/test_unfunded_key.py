"""A key without funds jams nothing (the newcomer round's blocker), on an anvil with Base
Sepolia's chain id as a newcomer following the quickstart would meet it. Before: `anchor stamp` with a
fresh, unfunded key said `error[chain_unreachable]: the node refused the transaction: {'code': -32003,
...}` (a raw dict, no address), its signed transaction stayed "in flight" and was resent on every later
flush, so the next stamp of another folder with a funded key failed with the same error, `journal
retry` and `abandon` refused ("not failed"), and `anchor deploy` with the unfunded key was
`error[internal]: unexpected Web3RPCError; this is a bug in anchor`."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account

from anchor.errors import ExitCode
from tests.cli import run_anchor
from tests.conftest import anvil

pytestmark = pytest.mark.chain

DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"  # anvil's public dev account


def _folder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "metrics.json").write_text(f'{{"run": "{name}"}}\n')
    return folder


@contextmanager
def on_base_sepolia(tmp_path: Path, poor: Any) -> Iterator[tuple[str, dict[str, str], dict[str, str]]]:
    """An anvil with Base Sepolia's chain id, the registry deployed by a funded key: (its RPC URL, the
    funded environment, the same with `poor`'s unfunded key)."""
    with anvil(84532, 1) as rpc:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
        env.update(
            ANCHOR_DATA_DIR=str(tmp_path / "data"),
            ANCHOR_RPC_URL=rpc,
            ANCHOR_PRIVATE_KEY=DEV_KEY,
            ANCHOR_CONFIRMATIONS="1",
        )
        run_anchor(["deploy"], env, check=True)
        yield rpc, env, {**env, "ANCHOR_PRIVATE_KEY": poor.key.hex()}


def test_an_unfunded_key_is_named_parked_and_cleared_and_a_funded_stamp_goes_through_meanwhile(
    tmp_path: Path,
) -> None:
    poor = Account.create()
    with on_base_sepolia(tmp_path, poor) as (rpc, env, unfunded):
        refused = run_anchor(["stamp", str(_folder(tmp_path, "results2"))], unfunded)
        said = refused.stdout + refused.stderr
        assert refused.returncode == ExitCode.CONFLICT, said
        assert f"the account {poor.address} cannot pay" in said and "holds 0 ETH" in said and "may cost up to" in said
        assert "anchor journal retry" in said and "{'code'" not in said and "Traceback" not in said

        funded = run_anchor(["stamp", str(_folder(tmp_path, "results3"))], env)  # right after, the funded key
        assert funded.returncode == ExitCode.OK, funded.stdout + funded.stderr

        status = json.loads(run_anchor(["--json", "journal", "status"], env, check=True).stdout)
        [parked] = status["failed"]
        assert parked["sender"] == poor.address and "insufficient_funds" in parked["reason"], parked
        assert status["effects"]["failed"] == 1 and status["effects"]["confirmed"] >= 1
        shown = run_anchor(["journal", "status"], env, check=True).stdout
        assert f"signed by {poor.address}" in shown and "holds 0 ETH" in shown

        cleared = run_anchor(["journal", "abandon", str(parked["id"])], env)
        assert cleared.returncode == ExitCode.OK, cleared.stdout + cleared.stderr
        after = json.loads(run_anchor(["--json", "journal", "status"], env, check=True).stdout)
        assert after["effects"]["failed"] == 0 and after["effects"]["abandoned"] == 1
        again = run_anchor(["stamp", str(_folder(tmp_path, "results4"))], env)
        assert again.returncode == ExitCode.OK, again.stdout + again.stderr

        # where the registry already is, deploying sends nothing, so an unfunded key may "deploy" it
        recorded = run_anchor(["deploy"], {**unfunded, "ANCHOR_DATA_DIR": str(tmp_path / "other")})
        assert recorded.returncode == ExitCode.OK and "nothing sent" in recorded.stdout, recorded.stderr
    with anvil(84532, 1) as bare:  # a chain without the registry: the deployment costs gas it lacks
        deploy = run_anchor(["deploy"], {**unfunded, "ANCHOR_RPC_URL": bare, "ANCHOR_DATA_DIR": str(tmp_path / "o2")})
        said = deploy.stdout + deploy.stderr
        assert deploy.returncode == ExitCode.CONFLICT and f"the account {poor.address} cannot pay" in said, said
        assert "internal" not in said and "this is a bug" not in said


def test_funding_the_key_and_retrying_anchors_the_parked_effect_once(tmp_path: Path) -> None:
    from anchor.chain.node import rpc_call

    poor = Account.create()
    with on_base_sepolia(tmp_path, poor) as (rpc, env, unfunded):
        folder = _folder(tmp_path, "results2")
        assert run_anchor(["stamp", str(folder)], unfunded).returncode == ExitCode.CONFLICT
        [parked] = json.loads(run_anchor(["--json", "journal", "status"], env, check=True).stdout)["failed"]
        rpc_call(rpc, "anvil_setBalance", [poor.address, hex(10**18)])  # funded, as from a faucet
        run_anchor(["journal", "retry", str(parked["id"])], unfunded, check=True)
        run_anchor(["journal", "flush"], unfunded, check=True)
        status = json.loads(run_anchor(["--json", "journal", "status"], env, check=True).stdout)
        assert status["failed"] == [] and status["items"]["confirmed"] == 1, status
        verified = run_anchor(["verify", str(folder)], env)
        assert verified.returncode == ExitCode.OK and poor.address in verified.stdout, verified.stdout
        again = run_anchor(["stamp", str(folder)], unfunded)  # was: a bare "already anchored"
        assert again.returncode == ExitCode.OK and "already anchored, in block" in again.stdout, again.stdout
        assert (
            "by an earlier run (a journal retry, flush or stamp of the same bytes): nothing was sent now"
            in again.stdout
        )
