"""The explorer's promotion page, read by headless Chromium: a model version promoted twice with
`anchor mlflow promote` (a real `mlflow server`, a real anvil), the service over the data dir that
promoted it. The page links the model version, its run, the run's proof and the alias's history on
chain, and a reader follows the history back from the newest promotion to the first."""

from __future__ import annotations

import json
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api_server import serving_api
from tests.cli import run_anchor
from tests.conftest import Chain
from tests.mlflow_server import TrackingServer, mlflow_server, train_model

pytestmark = pytest.mark.browser

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrackingServer]:
    """One backend store is enough for a page (the conftest's server runs over both)."""
    with mlflow_server(tmp_path_factory.mktemp("mlflow")) as served:
        yield served


def _promoted(chain: Chain, server: TrackingServer, tmp_path: Path) -> tuple[str, dict[str, str]]:
    env = {**chain.env(), "MLFLOW_TRACKING_URI": server.url}
    run_id, _ = train_model(server, tmp_path, env)
    assert run_anchor(["mlflow", "stamp", run_id], env).returncode == 0
    done = run_anchor(["mlflow", "promote", "digits", "--run", run_id, "--alias", "champion", "--json"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    return run_id, json.loads(done.stdout)


def _text(page: object, selector: str) -> str:
    value = page.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || ''")  # type: ignore[attr-defined]
    return str(value)


def test_the_promotion_page_links_the_version_its_run_its_proof_and_the_history_of_the_alias(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    from tests.cdp import chromium_page

    first_run, first = _promoted(chain, server, tmp_path / "a")
    second_run, second = _promoted(chain, server, tmp_path / "b")
    run_digest = server.client().get_run(second_run).data.tags["anchor.manifest_digest"]
    browser = shutil.which("chromium")
    assert browser, "headless Chromium is missing: `make test` installs it (apt-get install chromium)"
    with serving_api(chain.env()) as url, chromium_page(browser, FLAGS) as page:
        newest = f"{url}/explorer/promotion/{second['promotion_digest']}"
        page.goto(newest, ready="!!document.querySelector('td.version')")
        assert f"digits version {second['version']} @champion" in _text(page, "td.version")
        assert _text(page, "td.run") == second_run
        assert _text(page, "td.runproof") == run_digest
        assert page.evaluate("document.querySelector('td.runproof a').getAttribute('href')") == (
            f"/explorer/bundle/{run_digest}"
        )
        assert _text(page, "td.by") == second["promoted_by"]
        assert f"block {second['promotion_block']}" in _text(page, "td.block")
        assert f"version {first['version']}" in _text(page, "table.promotion")  # held the alias before
        page.screenshot(tmp_path / "promotion.png")
        # the run's own page says what "verified" covers: the stamp on chain, not the run as the server holds it
        with urllib.request.urlopen(f"{url}/explorer/bundle/{run_digest}") as answer:  # noqa: S310 - loopback
            run_page = answer.read().decode()
        assert f"anchor mlflow verify {second_run}</code> compares its params, metrics and artifacts" in run_page
        assert (tmp_path / "promotion.png").stat().st_size > 10_000

        # the history, read from the chain: the previous promotion is a link a reader follows back
        before = page.evaluate("document.querySelector('li.before a').getAttribute('href')")
        assert before == f"/explorer/promotion/{first['promotion_digest']}"
        # one answer at both doors: the page and `anchor mlflow verify models:/…` read the same records
        verdict = json.loads(
            run_anchor(
                ["mlflow", "verify", "models:/digits@champion", "--json"],
                {**chain.env(), "MLFLOW_TRACKING_URI": server.url},
            ).stdout
        )
        assert (verdict["promotion_digest"], verdict["promoted_by"], verdict["run"]["manifest_digest"]) == (
            _text(page, "td.digest"),
            _text(page, "td.by"),
            _text(page, "td.runproof"),
        )
        assert [f"/explorer/promotion/{h['promotion_digest']}" for h in verdict["history"]] == [before]
        page.evaluate("document.querySelector('li.before a').click()")
        page.wait_for(f"location.pathname === {json.dumps(before)} && !!document.querySelector('td.run')")
        assert _text(page, "td.run") == first_run
        assert page.evaluate("document.querySelector('li.later a').getAttribute('href')") == (
            f"/explorer/promotion/{second['promotion_digest']}"
        )
        assert not page.evaluate("!!document.querySelector('li.before')")  # the first promotion of the alias

        # a digest that is no promotion on chain: a page that says so, never a 500
        missing = page.evaluate(f"fetch('{url}/explorer/promotion/0x{'ab' * 32}').then(r => r.status)")
        assert missing == 404


def test_a_promotion_record_kept_here_that_does_not_hash_to_its_digest_is_not_shown(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    """The data dir's copy of the record is a file anyone with the disk can edit: the page shows what
    it promoted only if the record hashes to the digest on chain."""
    _, done = _promoted(chain, server, tmp_path)
    kept = chain.data_dir / "mlflow" / "promotions" / f"{done['promotion_digest'][2:]}.json"
    kept.write_bytes(kept.read_bytes().replace(b'"model":"digits"', b'"model":"forged"'))
    with serving_api(chain.env()) as url:
        html = urllib.request.urlopen(f"{url}/explorer/promotion/{done['promotion_digest']}", timeout=30).read()  # noqa: S310
    html = html.decode()
    assert "does not hash to this digest: not shown" in html and "forged" not in html
    assert done["promoted_by"] in html
