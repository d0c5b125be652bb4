"""One numbering of trials at every door: `trial #4` is a researcher's fourth attempt of the search in
`anchor lineage` (text and JSON), the REST API's `trial`, the explorer's lineage and attempt pages and
the report's trial count. The CLI printed the ledger seq (`#9`: the ledger also holds each attempt's
`started` row) where the explorer said `trial #4` of the same attempt."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from anchor.research.report import trial_numbers
from tests.cli import run_anchor
from tests.conftest import DemoRun
from tests.explorer.served import serving_the_demo


def test_trials_are_numbered_per_researcher_and_skip_every_row_that_is_no_attempt() -> None:
    rows = [
        {"seq": 0, "event": "started", "researcher": "a", "commit": "c1"},
        {"seq": 1, "researcher": "a", "commit": "c1"},
        {"seq": 2, "event": "rejected", "researcher": "b", "commit": "c2"},
        {"seq": 3, "event": "started", "researcher": "b", "commit": "c3"},
        {"seq": 4, "researcher": "b", "commit": "c3"},
        {"seq": 5, "researcher": "a", "commit": "c4"},
        {"seq": 6, "researcher": "a", "commit": "c4"},  # an interrupted attempt measured again: a trial too
    ]
    assert trial_numbers(rows) == {1: 1, 4: 1, 5: 2, 6: 3}


@pytest.fixture(scope="module")
def search(demo_run: DemoRun) -> Iterator[dict[str, Any]]:
    with serving_the_demo(demo_run) as served:
        yield served


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:  # noqa: S310 - loopback
        return str(answer.read().decode())


def test_the_cli_the_api_the_explorer_and_the_report_number_every_trial_alike(search: dict[str, Any]) -> None:
    env, champion = search["env"], search["champion"]
    data = json.loads(run_anchor(["--json", "lineage", champion], env, check=True).stdout)
    by_cli = {t["commit"]: t["trial"] for t in data["trials"]}
    text = run_anchor(["lineage", champion], env, check=True).stdout
    by_cli_text = {m.group(1): int(m.group(2)) for m in re.finditer(r"([0-9a-f]{12}) trial #(\d+)", text)}
    api = json.loads(_get(f"{search['url']}/v1/research/r0/attempts?limit=500"))
    by_api = {a["commit"]: a["trial"] for a in api["attempts"]}
    lineage = _get(f"{search['url']}/explorer/lineage/{champion}")
    by_page = {
        m.group(1): int(m.group(2))
        for m in re.finditer(
            r"data-commit='([0-9a-f]{40})'><span class='box'><a [^>]*>[0-9a-f]{12}</a> trial #(\d+)", lineage
        )
    }
    trials = search["report"]["researchers"]["r0"]["attempts"]
    assert len(by_cli) == trials and sorted(by_cli.values()) == list(range(1, trials + 1))
    assert by_api == by_page == by_cli, (by_api, by_page, by_cli)
    assert by_cli_text == {c[:12]: n for c, n in by_cli.items()}
    # ledger seqs differ from trials past the first: the numbering checked here is not the seq by chance
    assert any(a["seq"] != a["trial"] for a in api["attempts"])
    page = _get(f"{search['url']}/explorer/attempt/{champion}")
    assert f"#{by_cli[champion]} of r0 in this search" in page and data["trial"] == by_cli[champion]
