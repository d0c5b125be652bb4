"""A model's promotion is a lineage record on chain, against a real `mlflow server` over each backend
store (SQLite and PostgreSQL) and a real anvil: its commit the promotion record's digest, its parent
the promotion before it, its metric hash the manifest digest of the anchored run the version came
from. `anchor lookup` finds it and names the run; `verify models:/NAME@champion` walks the history of
the alias back through the parents; a promotion record edited in the store, an alias moved from another
alias's promotion, and a promotion anchored by a stranger's key are each named."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from tests.cli import run_anchor
from tests.conftest import STRANGER_KEY, Chain
from tests.mlflow_server import TrackingServer, train_model

pytestmark = pytest.mark.chain  # the service test starts a chain of its own (tests/calendar/test_calendar.py)

DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
STRANGER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
NO_PARENT = "0x" + "00" * 32


def _mlflow(chain: Chain, server: TrackingServer, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return run_anchor(["mlflow", *args], {**chain.env(), "MLFLOW_TRACKING_URI": server.url, **extra})


def _stamped_run(chain: Chain, server: TrackingServer, tmp_path: Path) -> tuple[str, str]:
    run_id, model_id = train_model(server, tmp_path, {**chain.env(), "MLFLOW_TRACKING_URI": server.url})
    stamped = _mlflow(chain, server, "stamp", run_id)
    assert stamped.returncode == 0, stamped.stdout + stamped.stderr
    return run_id, model_id


def _promote(chain: Chain, server: TrackingServer, model: str, run_id: str, alias: str, **extra: str) -> dict[str, str]:
    done = _mlflow(chain, server, "promote", model, "--run", run_id, "--alias", alias, "--json", **extra)
    assert done.returncode == 0, done.stdout + done.stderr
    said: dict[str, str] = json.loads(done.stdout)
    return said


def test_a_promotion_is_a_lineage_record_whose_parent_is_the_promotion_before_it(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    first_run, _ = _stamped_run(chain, server, tmp_path / "a")
    first = _promote(chain, server, "digits", first_run, "champion")
    run_digest = server.client().get_run(first_run).data.tags["anchor.manifest_digest"]

    found = run_anchor(["--json", "lookup", first["promotion_digest"]], chain.env())
    assert found.returncode == 0, found.stdout + found.stderr
    record = json.loads(found.stdout)
    assert record["kind"] == "lineage" and record["what"] == "model promotion"
    assert record["record"]["metric_hash"] == run_digest and record["record"]["parent"] == NO_PARENT
    assert record["record"]["researcher"] == DEPLOYER == first["promoted_by"]
    assert record["links"]["page"].endswith(f"/explorer/promotion/{first['promotion_digest']}")
    said = run_anchor(["lookup", first["promotion_digest"]], chain.env()).stdout
    assert f"lineage record of model promotion {first['promotion_digest']}" in said
    assert f"run manifest     {run_digest}" in said and "previous         none (the alias was new)" in said

    second_run, _ = _stamped_run(chain, server, tmp_path / "b")
    second = _promote(chain, server, "digits", second_run, "champion")
    assert second["previous"] == first["version"]
    parent = json.loads(run_anchor(["--json", "lookup", second["promotion_digest"]], chain.env()).stdout)
    assert parent["record"]["parent"] == first["promotion_digest"]  # the alias's history, on chain

    verified = _mlflow(chain, server, "verify", "models:/digits@champion", "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    verdict = json.loads(verified.stdout)
    assert verdict["version"] == second["version"] and verdict["alias"] == "champion"
    assert verdict["promoted_by"] == DEPLOYER and verdict["promotion_block"] == second["promotion_block"]
    assert [h["promotion_digest"] for h in verdict["history"]] == [first["promotion_digest"]]
    assert verdict["history"][0]["on_chain"] and verdict["history"][0]["run_manifest_digest"] == run_digest
    text = _mlflow(chain, server, "verify", "models:/digits@champion").stdout
    assert "  history     2 promotions on chain, newest first: this one, " + first["promotion_digest"][:18] in text

    # the promotion record kept in the run, edited in the artifact store: its digest is not the tag's
    (kept,) = server.artifacts.glob(
        f"*/{second_run}/artifacts/anchor/promotions/digits/{second['version']}/promotion.json"
    )
    original = kept.read_bytes()
    kept.write_bytes(original.replace(b'"alias":"champion"', b'"alias":"champion2"'))
    edited = _mlflow(chain, server, "verify", "models:/digits@champion")
    assert edited.returncode == ExitCode.TAMPERED, edited.stdout + edited.stderr
    assert "its promotion record is not this version's: it hashes to 0x" in edited.stderr
    kept.write_bytes(original)


def test_an_alias_moved_from_another_aliases_promotion_is_named(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    run_id, _ = _stamped_run(chain, server, tmp_path)
    staged = _promote(chain, server, "moved", run_id, "staging")
    server.client().set_registered_model_alias("moved", "champion", staged["version"])  # MLflow's own client
    moved = _mlflow(chain, server, "verify", "models:/moved@champion")
    assert moved.returncode == ExitCode.NOT_ANCHORED, moved.stdout + moved.stderr
    assert (
        f"its anchored promotion ({staged['promotion_digest']}) is to @staging, not @champion: the alias was"
        " moved to it without `anchor mlflow promote`"
    ) in moved.stderr
    assert _mlflow(chain, server, "verify", "models:/moved@staging").returncode == 0


def test_a_promotion_anchored_by_a_strangers_key_is_named_and_fails_an_expected_promoter(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    """Anyone can write a lineage record: whoever writes the registry promotes an anchored run with a key
    of their own. The verdict names the promoter; `--expect-submitter` holds the promotion to it too."""
    run_id, _ = _stamped_run(chain, server, tmp_path)
    theirs = _promote(chain, server, "stranger", run_id, "champion", ANCHOR_RESEARCHER_KEY=STRANGER_KEY)
    assert theirs["promoted_by"] == STRANGER
    named = _mlflow(chain, server, "verify", "models:/stranger@champion")
    assert (
        named.returncode == 0 and f"lineage record in block {theirs['promotion_block']} by {STRANGER}" in named.stdout
    )
    held = _mlflow(chain, server, "verify", "models:/stranger@champion", "--expect-submitter", DEPLOYER)
    assert held.returncode == ExitCode.POLICY, held.stdout + held.stderr
    assert f"its promotion was anchored by {STRANGER}, not by {DEPLOYER}" in held.stderr


def test_the_chain_only_index_lists_a_promotion_as_a_promotion_not_as_an_attempt(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    """The index (`anchor index`) follows every lineage record: a promotion's is its own
    kind, never one of the promoter's research attempts (its chart, its trial count)."""
    from anchor.chain.open import open_chain, open_registry
    from anchor.index.follow import Follower
    from anchor.index.store import IndexStore

    run_id, _ = _stamped_run(chain, server, tmp_path)
    done = _promote(chain, server, "indexed", run_id, "champion")
    handle = open_chain(chain.settings)
    registry = open_registry(chain.settings, handle)
    follower = Follower(
        handle.rpc, IndexStore(tmp_path / "index.sqlite", handle.chain_id, registry.address), registry.address
    )
    follower.sync()
    recent = {r["key"]: r["kind"] for r in follower.store.recent(1000)}
    assert recent[done["promotion_digest"]] == "promotion"
    assert done["promotion_digest"] not in {a["commit_id"] for a in follower.store.attempts(DEPLOYER)}


def test_a_promotion_through_a_service_is_signed_by_the_researcher_and_pending_until_its_batch(
    server: TrackingServer, tmp_path: Path
) -> None:
    """No funded key here: the promotion's record is signed with the researcher's own key and relayed
    by the service; without that key nothing is registered."""
    from tests.calendar.test_calendar import _client, local_service

    with local_service(tmp_path) as service:
        client = {**_client(tmp_path), "MLFLOW_TRACKING_URI": server.url}
        on = ["--rpc-url", service.rpc]
        run_id, _ = train_model(server, tmp_path / "train", client)
        assert run_anchor(["mlflow", "stamp", run_id, "--service", service.url], client).returncode == 0
        service.flush()
        assert run_anchor(["mlflow", "upgrade", run_id, *on], client).returncode == 0
        promote = ["mlflow", "promote", "served", "--run", run_id, "--alias", "champion", "--service", service.url, *on]
        keyless = run_anchor(promote, client)
        assert keyless.returncode == ExitCode.BAD_INPUT and "ANCHOR_RESEARCHER_KEY" in keyless.stderr, keyless.stderr
        assert server.client().search_registered_models(filter_string="name = 'served'") == []  # nothing written

        signed = run_anchor([*promote, "--json"], {**client, "ANCHOR_RESEARCHER_KEY": STRANGER_KEY})
        assert signed.returncode == 0, signed.stdout + signed.stderr
        said = json.loads(signed.stdout)
        assert said["promoted_by"] == STRANGER and said["promotion_block"] is None  # relayed, not mined yet
        early = run_anchor(["mlflow", "verify", "models:/served@champion", *on], client)
        assert early.returncode == ExitCode.NOT_ANCHORED and "is not on chain" in early.stderr, early.stderr
        service.flush()
        verified = run_anchor(["mlflow", "verify", "models:/served@champion", "--json", *on], client)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert json.loads(verified.stdout)["promoted_by"] == STRANGER
