"""The built-in explorer pages, rendered from a real demo run and read by headless Chromium:
DOM assertions on what a person sees, and a screenshot of each page."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.api_server import serving_api
from tests.cli import run_anchor
from tests.conftest import ROOT, DemoRun, touches

pytestmark = pytest.mark.browser  # pages are read by headless Chromium

CHROMIUM_FLAGS = [
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


def chromium() -> str:
    path = shutil.which("chromium")
    assert path, "headless Chromium is missing: `make test` installs it (apt-get install chromium)"
    return path


class Nodes(HTMLParser):
    """Collects (tag, attributes) of every element and the page text."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.cells: dict[str, list[str]] = {}
        """The text of every table cell, by the cell's class."""
        self._cell: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))
        if tag == "td":
            self._cell = dict(attrs).get("class") or ""
            self.cells.setdefault(self._cell, []).append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self.cells[self._cell][-1] += data


@pytest.fixture(scope="module")
@touches("chain")
def site(demo_run: DemoRun, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The API over the session's demo data dir (conftest.demo_run), its chain started for the module."""
    env = demo_run.env
    run_anchor(["chain", "up"], env, check=True)
    report = json.loads(run_anchor(["--json", "research", "report"], env, check=True).stdout)
    proof = json.loads((demo_run.data / "bundle.anchor.json").read_text())
    try:
        with serving_api(env) as url:
            yield {
                "url": url,
                "champion": report["researchers"]["r0"]["champion"],
                "proof": proof,
                "dir": tmp_path_factory.mktemp("explorer"),
                "proof_file": demo_run.data / "bundle.anchor.json",
                "proof_submitter": json.loads(
                    run_anchor(
                        [
                            "--json",
                            "verify",
                            str(ROOT / "examples" / "bundle"),
                            "--proof",
                            str(demo_run.data / "bundle.anchor.json"),
                        ],
                        env,
                    ).stdout
                ).get("submitter"),
            }
    finally:
        run_anchor(["chain", "down"], env)


def render(url: str, screenshot: Path, script_ms: int = 0) -> Nodes:
    """The DOM and a screenshot of `url`; `script_ms` of virtual time lets a script-built page finish."""
    browser = chromium()
    flags = [*CHROMIUM_FLAGS, *([f"--virtual-time-budget={script_ms}"] if script_ms else [])]
    dom = subprocess.run([browser, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=60)
    assert dom.returncode == 0 and dom.stdout.strip(), dom.stderr[-2000:]
    subprocess.run(
        [browser, *flags, "--window-size=1200,800", f"--screenshot={screenshot}", url],
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 10_000
    nodes = Nodes()
    nodes.feed(dom.stdout)
    return nodes


def test_the_home_page_shows_a_number_of_records_for_every_batch(site: dict[str, Any]) -> None:
    """The first page anyone sees: every "Latest batches" row counts its records (it used to show
    "<built-in method items of dict object at 0x…>")."""
    page = render(f"{site['url']}/explorer/", site["dir"] / "home.png")
    counts = page.cells.get("records", [])
    assert len(counts) >= 5 and "built-in method" not in "".join(page.text)
    assert all(c.strip().isdigit() and int(c) >= 1 for c in counts), counts


def test_every_page_says_when_and_by_whom_and_the_home_page_finds_what_was_anchored(site: dict[str, Any]) -> None:
    """the explorer showed block numbers only and no submitter on the home and bundle pages,
    though `verify` and the API had both; the home page could not be searched by what was anchored."""
    import re

    home = render(f"{site['url']}/explorer/", site["dir"] / "home-times.png")
    times, who = home.cells.get("when", []), home.cells.get("hash", [])
    assert times and all(re.fullmatch(r"20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC", t) for t in times), times
    submitter = site["proof_submitter"]
    assert any(f"{submitter} (this service)" in cell for cell in who), who
    assert any(tag == "form" and attrs.get("action") == "/explorer/search" for tag, attrs in home.elements)
    digest = site["proof"]["manifest_digest"]
    bundle = " ".join(render(f"{site['url']}/explorer/bundle/{digest}", site["dir"] / "bundle-times.png").text)
    assert re.search(r"anchored at\s+20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC", bundle) and submitter in bundle
    root = site["proof"]["batch"]["root"]
    for query, expect in (
        (digest, f"/explorer/bundle/{digest}"),
        (submitter, "/explorer/batch/0x"),
        ("README.md", "/explorer/bundle/0x"),
        (root, f"/explorer/batch/{root}"),
    ):
        found = render(f"{site['url']}/explorer/search?q={query}", site["dir"] / "search.png")
        links = [attrs.get("href", "") for tag, attrs in found.elements if tag == "a"]
        assert any(link.startswith(expect) for link in links), (query, links)
    champion = site["champion"]
    found = render(f"{site['url']}/explorer/search?q={champion[:10]}", site["dir"] / "search-commit.png")
    assert f"/explorer/attempt/{champion}" in [attrs.get("href", "") for tag, attrs in found.elements if tag == "a"]
    attempt = " ".join(render(f"{site['url']}/explorer/attempt/{champion}", site["dir"] / "attempt-time.png").text)
    assert re.search(r"anchored at\s+20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC by 0x", attempt), attempt[:2000]
    nothing = " ".join(render(f"{site['url']}/explorer/search?q=no-such-name", site["dir"] / "none.png").text)
    assert "Nothing anchored here matches no-such-name" in nothing


def test_lineage_page_highlights_the_champion_chain(site: dict[str, Any]) -> None:
    page = render(f"{site['url']}/explorer/lineage/{site['champion']}", site["dir"] / "lineage.png")
    nodes = [attrs for tag, attrs in page.elements if tag == "li" and "node" in attrs.get("class", "")]
    champions = [n["data-commit"] for n in nodes if "champion" in n["class"].split()]
    current = [n["data-commit"] for n in nodes if "current" in n["class"].split()]
    assert len(nodes) == 12 and current == [site["champion"]]
    assert champions[-1] == site["champion"] and len(champions) >= 2  # baseline ... champion
    assert "✓ on chain" in "".join(page.text)
    import re

    trials = [int(n) for n in re.findall(r"trial #(\d+)", " ".join(page.text))]
    assert sorted(trials) == list(range(1, 13)), trials  # trials, not ledger rows (#1, #3, #5 ... before)
    # the commit as the CLI prints it (12 digits) finds the same page: it was a 422 asking for 40
    short = render(f"{site['url']}/explorer/lineage/{site['champion'][:12]}", site["dir"] / "lineage-short.png")
    assert [a for t, a in short.elements if t == "li" and "current" in a.get("class", "")][0]["data-commit"] == (
        site["champion"]
    )


def test_attempt_page_shows_the_lineage_record_read_on_chain(site: dict[str, Any]) -> None:
    page = render(f"{site['url']}/explorer/attempt/{site['champion']}", site["dir"] / "attempt.png")
    text = " ".join(page.text)
    assert site["champion"] in text and "kept: became the champion" in text
    assert "lineage record on chain" in text and "read live from local development chain (31337) at block" in text
    # its code.diff, shown (escaped) because it still hashes to the diff digest its ledger row binds
    assert [tag for tag, attrs in page.elements if tag == "pre" and attrs.get("class") == "diff"] == ["pre"]
    assert "params.json" in text and "measured by" in text
    assert "environment" in text and "CPython 3." in text and "lock (installed distributions)" in text  # version 4


def test_a_researchers_kept_attempts_are_listed_for_the_team(site: dict[str, Any]) -> None:
    with urllib.request.urlopen(f"{site['url']}/v1/research/r0/attempts?kept=true") as answer:  # noqa: S310
        kept = json.loads(answer.read())
    assert kept["total"] >= 2 and all(a["kept"] for a in kept["attempts"])
    assert all(a["environment"]["interpreter"].startswith("CPython 3.") for a in kept["attempts"])
    assert kept["attempts"][-1]["commit"] == site["champion"]
    lineage = render(f"{site['url']}/explorer/lineage/{site['champion']}", site["dir"] / "lineage-table.png")
    rows = [attrs for tag, attrs in lineage.elements if tag == "table" and attrs.get("class") == "researchers"]
    assert rows and "r0" in lineage.text


def test_bundle_page_lists_files_with_proofs_and_the_batch_page_its_records(site: dict[str, Any]) -> None:
    digest, root = site["proof"]["manifest_digest"], site["proof"]["batch"]["root"]
    bundle = render(f"{site['url']}/explorer/bundle/{digest}", site["dir"] / "bundle.png")
    proof_links = [a["href"] for tag, a in bundle.elements if tag == "a" and "/proof?path=" in a.get("href", "")]
    assert len(proof_links) == 4 and "outputs/metrics.json" in " ".join(bundle.text)
    with urllib.request.urlopen(site["url"] + proof_links[2]) as answer:  # noqa: S310 - loopback
        single = json.loads(answer.read())
    assert single["file"]["tree_size"] == 4 and single["manifest_digest"] == digest
    batch = render(f"{site['url']}/explorer/batch/{root}", site["dir"] / "batch.png")
    assert digest in " ".join(batch.text)


def test_no_explorer_page_is_wider_than_a_laptop_window(site: dict[str, Any]) -> None:
    """At 1200 pixels the home page's table ran past the window: its last column (the block) was off
    screen, and the screenshots, taken without scrollbars, never showed it. Every page now fits: a hash
    wraps inside its cell before the table outgrows the page."""
    from tests.cdp import chromium_page

    digest, root = site["proof"]["manifest_digest"], site["proof"]["batch"]["root"]
    champion = site["champion"]
    pages = [
        "/explorer/",
        f"/explorer/batch/{root}",
        f"/explorer/bundle/{digest}",
        f"/explorer/attempt/{champion}",
        f"/explorer/lineage/{champion}",
        f"/explorer/search?q={root[:10]}",
    ]
    with chromium_page(chromium(), CHROMIUM_FLAGS) as page:
        for path in pages:
            taken, window = page.width_at(site["url"] + path)
            assert taken <= window, (path, taken, window)


def test_the_api_docs_render_offline_from_bundled_assets(site: dict[str, Any]) -> None:
    """/docs is Swagger UI from assets the service itself serves: this machine has no internet, so a
    page that loaded its script from a CDN would show no operation at all."""
    html = urllib.request.urlopen(f"{site['url']}/docs", timeout=10).read().decode()  # noqa: S310 - loopback
    assert "/docs-assets/swagger-ui-bundle.js" in html and "cdn." not in html
    page = render(f"{site['url']}/docs", site["dir"] / "docs.png", script_ms=5000)
    text = " ".join(page.text)
    assert "Verify By Digest" in text and "Submit Bundle" in text and "Anchor verification API" in text


def test_the_full_service_verifies_the_demo_bundle_in_the_browser(site: dict[str, Any]) -> None:
    """/verify on `anchor serve` trusts the deployment record's registry and reads the local chain."""
    from tests.cdp import chromium_page

    bundle = ROOT / "examples" / "bundle"
    with chromium_page(chromium(), CHROMIUM_FLAGS) as page:
        page.goto(site["url"] + "/verify", ready="!!document.getElementById('check')")
        page.set_files("#files", sorted(p for p in bundle.rglob("*") if p.is_file()))
        page.set_files("#proof", [site["proof_file"]])
        page.evaluate("document.getElementById('check').click()")
        status = page.wait_for("document.getElementById('verdict').dataset.status")
        text = page.evaluate("document.getElementById('verdict').textContent")
        assert status == "verified" and "outputs/metrics.json" in text and site["proof"]["batch"]["root"] in text
