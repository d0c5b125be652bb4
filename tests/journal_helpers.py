"""Shared helpers for the journal and fault tests: unique manifests and on-chain counting."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from eth_hash.auto import keccak

from anchor.batch.merkle import BatchTree
from anchor.chain.deployment import load_deployment
from anchor.chain.node import rpc_call
from anchor.journal.backends import open_journal
from anchor.journal.submit import Submission

ROOT_TOPIC = "0x" + keccak(b"RootAnchored(bytes32,address)").hex()


def unique_submissions(n: int, tag: str = "") -> list[Submission]:
    """n distinct filetree identities (no files on disk needed: the identity is what is anchored)."""
    subs = []
    for _ in range(n):
        root = os.urandom(32).hex()
        identity = {"kind": "filetree", "version": 1, "files_root": root, "file_count": 1, "total_size": len(tag)}
        subs.append(Submission(identity, {"annotations": {"tag": tag}} if tag else {}))
    return subs


def roots_on_chain(rpc_url: str, data_dir: Path) -> list[str]:
    """Every RootAnchored event of the recorded registry, in order: the on-chain count."""
    address = load_deployment(data_dir, 31337).address
    logs = rpc_call(rpc_url, "eth_getLogs", [{"address": address, "fromBlock": "0x0", "topics": [ROOT_TOPIC]}])
    assert isinstance(logs, list)
    return [log["topics"][1] for log in logs]


def journal_batches(data_dir: Path, journal_url: str | None = None) -> dict[str, list[bytes]]:
    """root hex -> item digests, for every root effect in the journal."""
    journal = open_journal(data_dir, journal_url)
    try:
        out: dict[str, list[bytes]] = {}
        for effect in journal.db.execute("SELECT id, key FROM effects WHERE kind = 'root'").fetchall():
            digests = journal.db.execute("SELECT digest FROM items WHERE effect_id = ? ORDER BY id", (effect["id"],))
            out["0x" + bytes(effect["key"]).hex()] = [bytes(r["digest"]) for r in digests]
        return out
    finally:
        journal.close()


def assert_exactly_once(
    rpc_url: str, data_dir: Path, expected_items: int, journal_url: str | None = None
) -> dict[str, Any]:
    """Every journaled item confirmed, in exactly one batch, whose root is on chain exactly once, and
    no root on chain that the journal does not explain."""
    journal = open_journal(data_dir, journal_url)
    try:
        states = dict(journal.db.execute("SELECT state, count(*) FROM items GROUP BY state").fetchall())
    finally:
        journal.close()
    assert states == ({"confirmed": expected_items} if expected_items else {}), states
    batches = journal_batches(data_dir, journal_url)
    on_chain = roots_on_chain(rpc_url, data_dir)
    assert len(on_chain) == len(set(on_chain)), "a root was anchored twice"
    assert set(on_chain) == set(batches), "roots on chain and batches in the journal differ"
    all_items = [d for digests in batches.values() for d in digests]
    assert len(all_items) == len(set(all_items)) == expected_items, "an item is in two batches or missing"
    for root, digests in batches.items():
        assert "0x" + BatchTree.build(digests).root.hex() == root
    return {"roots": len(on_chain), "items": len(all_items)}


def journal_value(data_dir: Path, sql: str, journal_url: str | None = None) -> Any:
    """The first column of the first row of `sql` on the journal of `data_dir` (or at `journal_url`)."""
    journal = open_journal(data_dir, journal_url)
    try:
        return journal.db.execute(sql).fetchone()[0]
    finally:
        journal.close()
