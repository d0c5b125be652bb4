"""A research search in MLflow (`anchor research run --mlflow NAME`), against a real `mlflow server`
over each backend store, a real anvil and a real git repository of examples/research: one run per
attempt of the ledger, the champion registered as NAME@champion with its proof and lineage, and the
trial count behind it read from the chain by `anchor mlflow verify models:/NAME@champion`."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from anchor.research.ledger import is_attempt, open_ledger
from tests.api_server import serving_api
from tests.cli import run_anchor
from tests.conftest import ROOT, Chain
from tests.mlflow_server import TrackingServer
from tests.research.helpers import make_repo

pytestmark = pytest.mark.sandbox  # runs research attempts as processes (bubblewrap)

EXAMPLE = ROOT / "examples" / "research"


def _search(chain: Chain, server: TrackingServer, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    repo = tmp_path / "repo"
    if not repo.exists():
        make_repo(repo, {n: (EXAMPLE / n).read_text() for n in ("train.py", "params.json", "data.csv")})
    return run_anchor(
        [
            "research",
            "run",
            "--repo",
            str(repo),
            "--contract",
            str(EXAMPLE / "contract.toml"),
            "--workdir",
            str(tmp_path / "work"),
            "--max-attempts",
            "4",
            *extra,
        ],
        {**chain.env(), "MLFLOW_TRACKING_URI": server.url},
    )


def test_a_search_leaves_a_run_per_trial_and_a_champion_whose_trial_count_the_chain_gives(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    searched = _search(chain, server, tmp_path, "--mlflow", "example-search", "--json")
    assert searched.returncode == 0, searched.stdout + searched.stderr
    ledger = open_ledger(tmp_path / "work")
    rows = ledger.rows()
    attempts = [row for row in rows if is_attempt(row)]
    head = ledger.verify()["head"]
    said = json.loads(searched.stdout)["mlflow"]  # stdout is the command's JSON alone, MLflow's own lines kept out
    assert said["trials"] == said["logged"] == len(attempts) and said["promoted"]["alias"] == "champion"

    client = server.client()
    experiment = client.get_experiment_by_name("example-search")
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.data.tags["research.attempt_digest"] for r in runs) == sorted(a["attempt_digest"] for a in attempts)
    version = client.get_model_version_by_alias("example-search", "champion")
    assert version.tags["anchor.research.ledger_head"] == head
    assert version.tags["anchor.research.trials"] == str(len(attempts))
    champion = next(r for r in runs if r.info.run_id == version.run_id)
    kept = [a for a in attempts if a["kept"]]
    assert champion.data.tags["research.commit"] == kept[-1]["commit"]  # the last kept attempt

    verified = run_anchor(
        ["mlflow", "verify", "models:/example-search@champion", "--json"],
        {**chain.env(), "MLFLOW_TRACKING_URI": server.url},
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    research = json.loads(verified.stdout)["research"]
    assert research["trials"] == len(attempts) and research["ledger_head"] == head
    assert research["ledger_on_chain"]["length"] == len(rows)  # the ledger head's checkpoint record, on chain
    text = run_anchor(
        ["mlflow", "verify", "models:/example-search@champion"], {**chain.env(), "MLFLOW_TRACKING_URI": server.url}
    ).stdout
    assert f"  research    champion {kept[-1]['commit'][:12]} of {len(attempts)} trials (r0); ledger head" in text

    # the explorer's promotion page names the search behind the version, its lineage a link away
    with serving_api(chain.env()) as url:
        page = urllib.request.urlopen(f"{url}/explorer/promotion/{version.tags['anchor.promotion_digest']}").read()  # noqa: S310
    html = page.decode()
    assert f"<td class='hash trials'>{len(attempts)}</td>" in html
    assert f"href='/explorer/lineage/{kept[-1]['commit']}'" in html and "<span class='ok'>✓</span> block" in html

    # the trial count the MLflow UI shows, raised on the version: the anchored record says otherwise
    client.set_model_version_tag("example-search", version.version, "anchor.research.trials", "1")
    raised = run_anchor(
        ["mlflow", "verify", "models:/example-search@champion"], {**chain.env(), "MLFLOW_TRACKING_URI": server.url}
    )
    assert raised.returncode == ExitCode.TAMPERED, raised.stdout + raised.stderr
    assert f"anchor.research.trials '1' (anchored: '{len(attempts)}')" in raised.stderr


def test_a_search_to_log_in_mlflow_is_refused_before_it_runs_when_it_cannot_be(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    unanchored = _search(chain, server, tmp_path, "--mlflow", "x", "--no-anchor")
    assert unanchored.returncode == ExitCode.BAD_INPUT and "--mlflow with --no-anchor" in unanchored.stderr
    nowhere = run_anchor(
        [
            "research",
            "run",
            "--repo",
            str(tmp_path / "repo"),
            "--contract",
            str(EXAMPLE / "contract.toml"),
            "--workdir",
            str(tmp_path / "work"),
            "--mlflow",
            "x",
        ],
        chain.env(),
    )
    assert nowhere.returncode == ExitCode.BAD_INPUT and "no MLflow tracking server" in nowhere.stderr
    assert not (tmp_path / "work").exists()  # refused before anything was written
