"""What a researcher reads and diffs: the report's figures at one precision, a proposal's diff only the
number it changed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from anchor.research.final import final_line
from anchor.research.proposers import ParamSearch


def test_the_holdout_is_printed_to_six_digits_like_the_figures_beside_it() -> None:
    """`holdout 0.9033333333333333` stood unrounded beside 6-digit figures; the JSON keeps the exact one."""
    final = {
        "metric_name": "acc",
        "commit": "a" * 40,
        "metric": "0.91",
        "trials": 3,
        "replications": [],
        "holdout": "0.9033333333333333",
        "holdout_words": None,
    }
    assert final_line(final).endswith("holdout 0.903333")
    assert final_line({**final, "holdout": "failed"}).endswith("holdout failed")


def test_a_one_line_json_file_is_tuned_on_one_line_and_its_diff_is_that_line(tmp_path: Path) -> None:
    """ParamSearch pretty-printed a one-line params.json, so every proposal's diff was the whole file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "params.json").write_text('{"lr": 0.01, "epochs": 3}\n')
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    ParamSearch("params.json", seed=7, researcher="r0").propose(repo, 1)
    text = (repo / "params.json").read_text()
    assert text.count("\n") == 1 and list(json.loads(text)) == ["lr", "epochs"], text
    assert json.loads(text) != {"lr": 0.01, "epochs": 3}  # a number did change
    laid_out = repo / "laid-out.json"
    laid_out.write_text('{\n  "epochs": 3,\n  "lr": 0.01\n}\n')
    ParamSearch("laid-out.json", seed=7, researcher="r0").propose(repo, 1)
    assert laid_out.read_text().count("\n") == 4  # a file laid out over lines keeps its layout
