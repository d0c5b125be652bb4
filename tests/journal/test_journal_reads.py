"""The journal behind its typed read API (anchor.journal.reads): no SQL against its tables anywhere
else, and every read of one chain only, so a data directory used on two chains never mixes them."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import blake3
import pytest
from fastapi.testclient import TestClient

from anchor.errors import ExitCode
from api.app import create_app
from api.config import ApiConfig
from tests.conftest import ROOT, anvil, deployed

JOURNAL_TABLES = ("items", "effects", "txs", "files", "proof_paths")
SQL_ON_JOURNAL = re.compile(rf"\b(FROM|JOIN|INTO|UPDATE)\s+({'|'.join(JOURNAL_TABLES)})\b")
DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"  # anvil's first dev account


def test_no_sql_against_the_journals_tables_outside_the_journal_package() -> None:
    scanned, found = 0, []
    for package in (ROOT / "anchor", ROOT / "api"):
        for path in sorted(package.rglob("*.py")):
            if path.is_relative_to(ROOT / "anchor" / "journal"):
                continue
            scanned += 1
            text = path.read_text(encoding="utf-8")
            found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in SQL_ON_JOURNAL.finditer(text)]
    assert scanned > 100
    assert found == [], "SQL against the journal outside anchor/journal (add a function to anchor/journal/reads.py)"
    assert SQL_ON_JOURNAL.search('db.execute("SELECT digest FROM items WHERE chain_id = ?")')  # the scan bites


@pytest.mark.chain
def test_one_data_dir_on_two_chains_every_route_shows_only_its_own_chain(tmp_path: Path) -> None:
    """Chain A (the local chain) and chain B (an anvil of chain 31338) anchor into one data directory's
    journal; the API serving A finds nothing of B's under any key, and everything of A's."""
    with deployed(tmp_path / "data") as chain, anvil(31338, 1) as rpc_b:
        env_b = {**chain.env(), "ANCHOR_RPC_URL": rpc_b, "ANCHOR_PRIVATE_KEY": DEV_KEY}
        from tests.cli import run_anchor

        run_anchor(("deploy",), env_b, check=True)
        stamped: dict[str, dict[str, str]] = {}
        for name, env in (("a", chain.env()), ("b", env_b)):
            target = tmp_path / f"result-{name}.txt"
            target.write_text(f"result of chain {name}\n")
            out = json.loads(run_anchor(("stamp", str(target), "--json"), env, check=True).stdout)
            proof = out["proof"]
            stamped[name] = {
                "digest": proof["manifest_digest"],
                "root": proof["batch"]["root"],
                "tx": proof["anchor"]["tx_hash"],
                "blake3": "0x" + blake3.blake3(target.read_bytes()).hexdigest(),
                "path": str(target),
            }
            assert proof["anchor"]["chain_id"] == (31337 if name == "a" else 31338)
        assert run_anchor(("verify", stamped["b"]["path"]), env_b).returncode == ExitCode.OK

        token = "a-long-random-token-for-tests"
        config = ApiConfig(token_hashes=frozenset({hashlib.sha256(token.encode()).hexdigest()}))
        with TestClient(create_app(chain.settings, config)) as client:
            assert client.get("/ready").json()["chain_id"] == 31337
            a, b = stamped["a"], stamped["b"]
            for key in ("digest", "root", "tx", "blake3"):
                assert client.get(f"/v1/search/{a[key]}").json()["count"] >= 1, key  # A's own: found
                assert client.get(f"/v1/search/{b[key]}").json()["count"] == 0, key  # B's: not on this chain
            assert client.get(f"/v1/batches/{a['root']}").status_code == 200
            assert client.get(f"/v1/batches/{b['root']}").status_code == 404
            assert client.get(f"/explorer/batch/{a['root']}").status_code == 200
            assert client.get(f"/explorer/batch/{b['root']}").status_code == 404
            home = client.get("/explorer/").text
            assert a["root"] in home and b["root"] not in home
            assert client.get(f"/v1/verify/{a['digest']}").json()["verified"] is True
            assert client.get(f"/v1/verify/{b['digest']}").status_code == 404
            for name, status in (("a", 200), ("b", 404)):
                upload = {"file": ("r.txt", Path(stamped[name]["path"]).read_bytes())}
                assert client.post("/v1/verify/file", files=upload).status_code == status, name
