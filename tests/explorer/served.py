"""The demo's data dir served for the explorer's tests: its chain started, the API up, the report read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.api_server import serving_api
from tests.cli import run_anchor
from tests.conftest import DemoRun


@contextmanager
def serving_the_demo(demo_run: DemoRun) -> Iterator[dict[str, Any]]:
    """url, env, the research report and its champion; the demo's chain stopped again afterwards."""
    env = demo_run.env
    run_anchor(["chain", "up"], env, check=True)
    report = json.loads(run_anchor(["--json", "research", "report"], env, check=True).stdout)
    try:
        with serving_api(env) as url:
            yield {"url": url, "env": env, "report": report, "champion": report["researchers"]["r0"]["champion"]}
    finally:
        run_anchor(["chain", "down"], env)
