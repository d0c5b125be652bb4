"""Checks made with public tools only (Foundry's cast), never with Anchor's own code."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.conftest import ROOT

CAST = str(ROOT / "node_modules" / ".bin" / "cast")


def _cast(*args: str) -> str:
    return subprocess.run([CAST, *args], capture_output=True, text=True, check=True).stdout.strip()


def cast_verify_inclusion(proof: dict[str, Any], rpc_url: str) -> bool:
    """The registry's own inclusion view, called with cast from a proof file's fields. A root is its
    submitter's: cast reads the submitter from the RootAnchored event in the receipt of the transaction
    the proof names (topics: event, root, submitter)."""
    registry, root = proof["anchor"]["registry"], proof["batch"]["root"]
    siblings = "[" + ",".join(proof["batch"]["proof"]) + "]"
    receipt = json.loads(_cast("receipt", proof["anchor"]["tx_hash"], "--json", "--rpc-url", rpc_url))
    topic = _cast("keccak", "RootAnchored(bytes32,address)")
    [submitter] = [
        "0x" + log["topics"][2][-40:]
        for log in receipt["logs"]
        if log["address"].lower() == registry.lower() and log["topics"][:2] == [topic, root.lower()]
    ]
    out = _cast(
        "call",
        registry,
        "verifyInclusion(address,bytes32,bytes32[],bytes32)(bool)",
        submitter,
        root,
        siblings,
        proof["manifest_digest"],
        "--rpc-url",
        rpc_url,
    )
    return out == "true"
