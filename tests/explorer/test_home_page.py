"""The explorer's home page, as headless Chromium shows it after the demo: each anchored record said as
what it is (a file tree and its name, a research attempt and its trial, a champion, a result bundle…)
with its commit, time and submitter, and links to its page and to the research lineage page.

It showed nine 64-hex roots with counts: nothing said what any of them was, and nothing led to the
lineage page. The screenshot is kept beside the test's artifacts (and `make screenshots` writes
docs/screenshots/home.png)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cdp import chromium_page
from tests.conftest import DemoRun
from tests.explorer.served import serving_the_demo
from tests.explorer.test_explorer_pages import CHROMIUM_FLAGS, chromium

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(demo_run: DemoRun) -> Iterator[dict[str, Any]]:
    with serving_the_demo(demo_run) as served:
        yield served


ROWS = """[...document.querySelectorAll('table.anchored tr.record')].map(tr => ({
  kind: tr.querySelector('td.kind').textContent, name: tr.querySelector('td.name').innerText,
  commit: tr.querySelector('td.commit').textContent, at: tr.querySelector('td.at').textContent,
  by: tr.querySelector('td.by span') ? tr.querySelector('td.by span').title : '',
  links: [...tr.querySelectorAll('a')].map(a => a.getAttribute('href'))}))"""


def test_the_home_page_says_what_each_record_is_and_leads_to_the_lineage(
    site: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    shot = tmp_path_factory.mktemp("home") / "home.png"
    with chromium_page(chromium(), CHROMIUM_FLAGS) as page:
        page.goto(site["url"] + "/explorer/")
        rows = page.evaluate(ROWS)
        lineage_links = page.evaluate("[...document.querySelectorAll('a.lineage')].map(a => a.getAttribute('href'))")
        page.screenshot(shot, height=1400)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    kinds = {r["kind"] for r in rows}
    # the demo anchors a bundle's file tree, a search's contract, attempts, ledger checkpoints, a champion,
    # a mission's result bundle and its timing record: each said in words, none a bare digest
    assert {
        "file tree",
        "research attempt",
        "research ledger checkpoint",
        "champion record",
        "result bundle",
        "timing record",
    } <= kinds, kinds
    assert all(r["name"].strip() and not re.fullmatch(r"0x[0-9a-f]{16}…", r["name"].split("\n")[0]) for r in rows)
    names = {r["name"].split("\n")[0] for r in rows if r["kind"] == "file tree"}
    assert "bundle" in names, names  # stamped as examples/bundle, its proof bundle.anchor.json
    attempts = [r for r in rows if r["kind"] == "research attempt"]
    trials = sorted(int(m.group(1)) for r in attempts if (m := re.search(r"r0, trial #(\d+)", r["name"])))
    assert trials == list(range(1, len(attempts) + 1)) and len(attempts) >= 5, [r["name"] for r in attempts]
    assert all(re.fullmatch(r"[0-9a-f]{12}", r["commit"]) for r in attempts)
    assert all(f"/explorer/lineage/{r['links'][0].rsplit('/', 1)[1]}" in r["links"] for r in attempts)
    assert all(re.fullmatch(r"20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC", r["at"]) for r in rows), [r["at"] for r in rows]
    assert all(re.fullmatch(r"0x[0-9a-fA-F]{40}", r["by"]) for r in rows)
    checkpoints = [r for r in rows if r["kind"] == "research ledger checkpoint"]  # each leads to its search
    assert checkpoints and all(f"/explorer/lineage/{site['champion']}" in r["links"] for r in checkpoints)
    assert all(r["name"].startswith("ledger of search ") for r in checkpoints), [r["name"] for r in checkpoints]
    champion = [r for r in rows if r["kind"] == "champion record"]
    assert champion and champion[0]["commit"] == site["champion"][:12]
    # the lineage page, the best one, is reached from the home page: the search's row leads to its champion's
    assert f"/explorer/lineage/{site['champion']}" in lineage_links
    with chromium_page(chromium(), CHROMIUM_FLAGS) as page:
        page.goto(site["url"] + f"/explorer/lineage/{site['champion']}")
        assert page.evaluate("document.querySelectorAll('li.node').length") == len(attempts)
