"""`make demo`'s script on a fresh data directory, twice: verified results, then nothing anchored again."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli import run_anchor
from tests.conftest import DemoRun, run_demo


def _head(env: dict[str, str]) -> int:
    def cli(*args: str) -> str:
        return run_anchor(args, env, check=True).stdout

    cli("chain", "up")
    block = json.loads(cli("chain", "status", "--json"))["chain"]["block_number"]
    cli("chain", "down")
    return int(block)


def test_demo_verifies_everything_and_a_second_run_anchors_nothing_new(demo_run: DemoRun) -> None:
    first = demo_run.stdout  # the session's one run of the demo (conftest.demo_run), on a fresh data dir
    assert "examples/bundle: anchored" in first and "OK: " in first
    assert "champion" in first and "⛓" in first and "lineage record of commit " in first  # read back
    from anchor.fence.sandbox import default_runtime

    ran = default_runtime()  # gVisor where runsc runs here (CI installs it), else bubblewrap
    assert f"mission 'demo-momentum' ran ({ran})" in first  # a mission end to end, after the search
    assert "milestones  anchored: its timing record, checked on chain" in first
    head = _head(demo_run.env)
    second = run_demo(demo_run.env)
    assert "examples/bundle: already anchored" in second
    assert "r0: measured 0" in second
    assert "milestones  anchored: its timing record, checked on chain" in second  # verified, not run again
    assert _head(demo_run.env) == head  # no new block: nothing was anchored twice


def test_the_demo_report_gives_its_champion_a_sample_size_an_interval_and_the_adjustment_method(
    demo_run: DemoRun,
) -> None:
    """examples/research declares its 150 validation rows: the champion record (version 3) carries n, a
    Wilson interval that contains the figure, and the team's trial count; the report prints them, the
    replications' spread and how the selection adjustment was made, or why none could be."""
    env = demo_run.env
    report = run_anchor(["--json", "research", "report"], env, check=True).stdout
    r0 = json.loads(report)["researchers"]["r0"]
    final, honest = r0["final"], r0["uncertainty"]
    assert final["version"] == 3 and final["team_trials"] == final["trials"] == r0["attempts"]  # one researcher
    # version 3: the holdout too, with the 1,500 rows the contract declares and a Wilson interval
    assert (final["holdout_examples"], final["holdout_interval"]["method"]) == (1500, "wilson")
    assert float(final["holdout_interval"]["low"]) < float(final["holdout"]) < float(final["holdout_interval"]["high"])
    assert (final["examples"], final["examples_source"], final["interval"]["method"]) == (150, "contract", "wilson")
    assert float(final["interval"]["low"]) < float(final["metric"]) < float(final["interval"]["high"])
    assert honest["from"] == "from the champion record" and honest["interval"] == final["interval"]
    text = run_anchor(["research", "report"], env, check=True).stdout
    assert "n=150 examples (declared in the contract; one example = 0.006667); 95% interval [" in text
    assert "± " in text or "no variance observed in" in text
    assert "(replication stdev x E[max of N standard normals]" in text or "no selection adjustment possible" in text


def test_the_report_pastes_as_a_markdown_or_latex_table_with_a_methods_sentence(demo_run: DemoRun) -> None:
    """Nothing was paste-ready once. The table's figures are the report's own (JSON), never
    recomputed by the renderer; a typo in --format is one line with the near name."""
    env = demo_run.env
    r0 = json.loads(run_anchor(["--json", "research", "report"], env, check=True).stdout)["researchers"]["r0"]
    markdown = run_anchor(["research", "report", "--format", "markdown"], env, check=True).stdout
    interval = r0["uncertainty"]["interval"]
    assert "| figure | value |" in markdown and f"| trials | {r0['attempts']} measured" in markdown
    ci = f"95% CI [{interval['low']}, {interval['high']}] (wilson)"
    assert f"{r0['champion_metric']['value']}; n=150; {ci}" in markdown
    assert "was pre-registered before the search" in markdown and "not counted" in markdown
    latex = run_anchor(["research", "report", "--format", "latex"], env, check=True).stdout
    assert "\\begin{tabular}{ll}" in latex and "\\end{tabular}" in latex and "figure & value \\\\" in latex
    assert "_" not in latex.replace("\\_", "")  # every underscore escaped
    typo = run_anchor(["research", "report", "--format", "markdwn"], env)
    assert typo.returncode == 2 and "did you mean markdown?" in typo.stderr


def test_lookup_takes_a_twelve_digit_commit_prefix_and_prints_the_commit_as_git_does(demo_run: DemoRun) -> None:
    """As the chain-only explorer does: 7+ hex digits name a commit when one record's commit starts so;
    the answer shows the 40-hex id, not the bytes32 it is stored in (24 zeros of padding)."""
    env = demo_run.env
    report = json.loads(run_anchor(["--json", "research", "report"], env, check=True).stdout)
    champion = report["researchers"]["r0"]["champion"]
    run_anchor(["chain", "up"], env, check=True)
    try:
        text = run_anchor(["lookup", champion[:12]], env, check=True).stdout
        ambiguous = run_anchor(["lookup", "0000000"], env)
    finally:
        run_anchor(["chain", "down"], env, check=True)
    assert text.splitlines()[0] == f"lineage record of commit {champion}"
    assert "0" * 24 not in text and "kept             yes" in text
    assert ambiguous.returncode == 3  # no commit starts so: not anchored, said as such


def test_an_edited_champion_record_is_named_by_verify_and_never_reported_as_the_searchs(
    demo_run: DemoRun, tmp_path: Path
) -> None:
    """Editing the champion record's holdout value in the work dir: `research report` printed the new
    number and `research verify` exited 0 (a proof file beside it was taken as "anchored"). The record
    is now compared with what its proof anchored."""
    env = demo_run.copy(tmp_path / "demo")
    [record] = sorted((tmp_path / "demo" / "research" / "runs" / "r0").glob("champion-*-[0-9]*[0-9].json"))
    before = run_anchor(["--json", "research", "report"], env, check=True).stdout
    assert json.loads(before)["researchers"]["r0"]["final"]["anchored"] is True
    data = json.loads(record.read_text())
    data["manifest"]["holdout"]["metric"]["value"] = "0.999"
    record.write_text(json.dumps(data))
    run_anchor(["chain", "up"], env, check=True)
    try:
        audit = run_anchor(["--json", "research", "verify"], env)
        report = run_anchor(["research", "report"], env, check=True).stdout
    finally:
        run_anchor(["chain", "down"], env, check=True)
    assert audit.returncode == 4 and json.loads(audit.stdout)["error"]["detail"]["field"] == "champion_record"
    assert "0.999" not in report and "was edited after it was anchored" in report


def _research_verify_refuses(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`research verify --json` with the demo's chain up for it; asserts it named a tampering (exit 4)."""
    run_anchor(["chain", "up"], env, check=True)
    try:
        audit = run_anchor(["--json", "research", "verify"], env)
    finally:
        run_anchor(["chain", "down"], env, check=True)
    assert audit.returncode == 4, audit.stdout + audit.stderr
    return audit


def test_a_champion_record_claiming_more_team_trials_than_the_ledger_holds_is_named_by_verify(
    demo_run: DemoRun, tmp_path: Path
) -> None:
    """A version 2 record's team count is recounted from the ledger (and its n and interval from the
    champion's bound run dir), so a record written without anchoring, or re-anchored by whoever holds
    the key, cannot inflate "selected from N of the team's trials" to look better searched."""
    env = demo_run.copy(tmp_path / "demo")
    [record] = sorted((tmp_path / "demo" / "research" / "runs" / "r0").glob("champion-*-[0-9]*[0-9].json"))
    record.with_name(record.name.removesuffix(".json") + ".anchor.json").unlink()  # no proof: "not anchored"
    data = json.loads(record.read_text())
    data["manifest"]["team_trials"] = data["manifest"]["ledger_length"]  # within what a decoder can check
    record.write_text(json.dumps(data))
    audit = _research_verify_refuses(env)
    assert json.loads(audit.stdout)["error"]["detail"]["field"] == "team_trials"


def test_an_edited_replication_run_is_named_by_verify(demo_run: DemoRun, tmp_path: Path) -> None:
    """A champion's replication run dir with its metrics file edited after the record was made (the
    record and its proof untouched): `research verify` re-hashes every final run against the evidence
    the record binds and names the run (exit 4); before, it exited 0."""
    env = demo_run.copy(tmp_path / "demo")
    [final] = sorted((tmp_path / "demo" / "research" / "runs" / "r0").glob("*.final-*"))
    metrics = final / "replication-1" / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    row = json.loads(lines[-1])
    row["val_accuracy"] = 0.999
    metrics.write_text("\n".join([*lines[:-1], json.dumps(row)]) + "\n")
    audit = _research_verify_refuses(env)
    error = json.loads(audit.stdout)["error"]
    assert error["detail"]["field"] == "final_run" and "replication-1 of champion" in error["message"], error
