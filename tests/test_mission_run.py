"""`anchor mission run` (issue 11, the highest seam): an immutable mission in, through the dispatcher,
against a verified read-only snapshot; a version 2 result bundle out that binds the same mission,
snapshot, image and policy, anchored with its six milestones (measured by the runner), and verified
with `anchor verify`, with `cast` and on the explorer page."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from anchor.errors import ExitCode
from anchor.research.environment import host_identity
from tests.conftest import Chain
from tests.public_tools import cast_verify_inclusion

IMAGE = "ghcr.io/example/runner@sha256:" + "ab" * 32
MILESTONES = ["submitted", "scheduled", "image_ready", "snapshot_ready", "evaluator_started", "completed"]


@pytest.fixture
def chain(fresh_chain: Chain) -> Chain:
    fresh_chain.cli("deploy", check=True)
    return fresh_chain


def _dispatch(chain: Chain, tmp_path: Path, output: str, command: str, minutes: int = 5) -> dict[str, Any]:
    snapshot = tmp_path / "prices.csv"
    if not snapshot.exists():
        snapshot.write_text("day,close\n1,100\n2,101\n3,99\n")
    mission = tmp_path / f"{output}.toml"
    mission.write_text(
        f'hypothesis = "The snapshot has three days."\ncommand = {json.dumps(command)}\n'
        f'evaluator_policy_sha256 = "{"44" * 32}"\n[covers]\nsymbol = "SPY"\n'
        f"[budget]\nminutes = {minutes}\nattempts = 1\n"
    )
    added = json.loads(chain.cli("--json", "snapshot", "add", str(snapshot), check=True).stdout)
    key = added["snapshot"].removeprefix("sha256:")
    digest = json.loads(chain.cli("--json", "mission", "check", str(mission), check=True).stdout)["digest"]
    chain.cli(
        "mission", "submit", "--mission", str(mission), "--mission-digest", digest, "--snapshot", str(snapshot),
        "--snapshot-sha256", key, "--image", IMAGE, "--output", output, "--profile", "small", check=True,
    )  # fmt: skip
    checked = json.loads(chain.cli("--json", "mission", "check", str(mission), check=True).stdout)
    return {"snapshot": key, "mission_sha256": checked["sha256"]}


def test_a_mission_in_a_bundle_out_bound_anchored_and_verified_three_ways(chain: Chain, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.config import ApiConfig

    command = 'wc -l < {snapshot} > {result}/lines.txt && ls -A "$ANCHOR_DATA_DIR" > {result}/seen.txt; true'
    sent = _dispatch(chain, tmp_path, "spy-lines", command.replace("$ANCHOR_DATA_DIR", str(chain.data_dir)))
    ran = chain.cli("--json", "mission", "run", "spy-lines")
    assert ran.returncode == ExitCode.OK, ran.stdout + ran.stderr
    done = json.loads(ran.stdout)
    manifest = done["manifest"]
    assert manifest["version"] == 3 and manifest["mission_sha256"] == sent["mission_sha256"]
    # it ran on this host: the bundle binds the host and claims no image (IMAGE was only dispatched)
    assert manifest["data_snapshot_sha256"] == sent["snapshot"] and "image" not in manifest
    assert manifest["environment"]["host"] == host_identity() and manifest["sandbox"] == "bubblewrap"
    assert manifest["environment"]["interpreter"].startswith("CPython 3.")
    assert manifest["evaluator_policy_sha256"] == "44" * 32
    assert manifest["budget"] == {"minutes": 5, "attempts": 1} and manifest["profile"]["name"] == "small"
    times = [datetime.fromisoformat(done["milestones"][name]) for name in MILESTONES]  # all six, by the runner
    assert times == sorted(times) and len(done["milestones"]) == 6
    result = Path(done["result"])
    assert (result / "lines.txt").read_text().strip() == "4"
    seen = (result / "seen.txt").read_text().split()
    assert done["sandbox"] == "bubblewrap" and "journal.sqlite" not in seen  # the data dir is hidden inside

    verified = chain.cli("--json", "verify", str(result))
    assert verified.returncode == ExitCode.OK, verified.stdout
    verdict = json.loads(verified.stdout)
    assert verdict["verified"] is True and verdict["milestones_anchored"] is True
    assert set(verdict["milestones"]) == set(MILESTONES)
    text = chain.cli("verify", str(result), check=True).stdout
    assert f"mission     sha256 {sent['mission_sha256']}" in text and IMAGE not in text
    assert f"executor    host {host_identity()[:16]}… (ran on a host: no image ran, none is claimed)" in text
    assert "sandbox     bubblewrap" in text
    assert "budget      5 min, 1 attempt" in text and "profile     small (1 CPU, 2Gi)" in text
    shown = [line.split()[0] for line in text.splitlines() if line.startswith("    ") and line.split()[0] in MILESTONES]
    assert shown == MILESTONES  # listed in the order they happened

    proof = json.loads(Path(done["proof"]).read_text())
    assert proof["annotations"]["dispatched_image"] == IMAGE  # display only: not in the identity
    assert cast_verify_inclusion(proof, chain.node.rpc_url)  # cast alone agrees
    with TestClient(create_app(chain.settings, ApiConfig(token_hashes=frozenset()))) as client:
        page = client.get(f"/explorer/bundle/{done['manifest_digest']}")
        over_http = client.get(f"/v1/verify/{done['manifest_digest']}").json()
    assert over_http["verified"] is True and over_http["milestones_anchored"] is True
    assert over_http["bundle"] == {
        k: manifest[k]
        for k in ("mission_sha256", "data_snapshot_sha256", "evaluator_policy_sha256", "budget", "profile",
                  "environment", "sandbox")
    }  # fmt: skip
    assert "executor" in page.text and "no image is claimed" in page.text and IMAGE not in page.text
    assert set(over_http["milestones"]) == set(MILESTONES)
    assert page.status_code == 200 and sent["snapshot"] in page.text and "snapshot_ready" in page.text
    assert page.text.count("<circle ") == 6

    # a replica that did not flush this batch has no proof files: it rebuilds both from the journal
    for name in (done["manifest_digest"][2:], proof["annotations"]["timing"]["digest"][2:]):
        (chain.data_dir / "proofs" / f"{name}.json").unlink()
    with TestClient(create_app(chain.settings, ApiConfig(token_hashes=frozenset()))) as client:
        rebuilt_page = client.get(f"/explorer/bundle/{done['manifest_digest']}")
        rebuilt = client.get(f"/v1/verify/{done['manifest_digest']}").json()
        one_file = client.get(f"/explorer/bundle/{done['manifest_digest']}/proof", params={"path": "lines.txt"})
    assert rebuilt_page.status_code == 200 and rebuilt_page.text.count("<circle ") == 6
    assert rebuilt["milestones_anchored"] is True and rebuilt["bundle"] == over_http["bundle"]
    assert one_file.status_code == 200 and one_file.json()["file"]["path"] == "lines.txt"

    again = chain.cli("--json", "mission", "run", "spy-lines")  # one run per output identity
    assert again.returncode == ExitCode.CONFLICT and done["manifest_digest"][2:] in again.stdout

    edited = dict(proof)
    edited["annotations"] = {**proof["annotations"], "milestones": {**done["milestones"],
                             "evaluator_started": done["milestones"]["submitted"]}}  # fmt: skip
    Path(done["proof"]).write_text(json.dumps(edited))
    tampered = chain.cli("--json", "verify", str(result))
    assert tampered.returncode == ExitCode.TAMPERED
    assert json.loads(tampered.stdout)["error"]["detail"]["milestones"] == ["evaluator_started"]


def test_a_failing_mission_anchors_nothing_and_may_run_again(chain: Chain, tmp_path: Path) -> None:
    _dispatch(
        chain,
        tmp_path,
        "flaky",
        "test -e {result}/../retry || { touch {result}/../retry; exit 3; }; echo ok > {result}/ok",
    )
    failed = chain.cli("--json", "mission", "run", "flaky")
    assert failed.returncode == ExitCode.MISSION_FAILED, failed.stdout + failed.stderr
    error = json.loads(failed.stdout)["error"]
    assert error["code"] == "mission_failed" and error["detail"]["exit_code"] == 3
    status = json.loads(chain.cli("--json", "journal", "status", check=True).stdout)
    assert status["items"].get("confirmed", 0) == 0  # nothing anchored
    rerun = chain.cli("--json", "mission", "run", "flaky")
    assert rerun.returncode == ExitCode.OK, rerun.stdout + rerun.stderr
    result = Path(json.loads(rerun.stdout)["result"])
    assert (result / "ok").read_text() == "ok\n"
    assert [p.name for p in result.parent.glob("result.failed-*")]  # the failed run's directory is kept


def test_a_mission_that_outruns_its_budget_is_stopped_and_an_unknown_output_is_refused(
    chain: Chain, tmp_path: Path
) -> None:
    unknown = chain.cli("--json", "mission", "run", "never-dispatched")
    assert unknown.returncode == ExitCode.NOT_ANCHORED and "anchor mission submit" in unknown.stdout
    _dispatch(chain, tmp_path, "slow", "echo $$ > {result}/../pid; exec sleep 600", minutes=1)
    slow = chain.cli("--json", "mission", "run", "slow", "--no-sandbox")  # unconfined: $$ is a host PID
    assert slow.returncode == ExitCode.MISSION_FAILED, slow.stdout + slow.stderr
    error = json.loads(slow.stdout)["error"]
    assert error["detail"]["timed_out"] is True and "budget of 1 min" in error["message"]
    pid = int((chain.data_dir / "missions" / "slow" / "pid").read_text())
    assert not Path(f"/proc/{pid}").exists()  # stopped with its process group, by the PID we started


def test_a_runner_stopped_with_sigterm_stops_its_command_and_the_mission_reads_as_interrupted(
    chain: Chain, tmp_path: Path
) -> None:
    """SIGTERM (a pod being stopped, `kill PID`) ended the runner and left its command running, in a
    session of its own that nothing owned. The runner now stops the command's group first."""
    import signal
    import subprocess
    import time

    from tests.conftest import ANCHOR_BIN

    _dispatch(chain, tmp_path, "term", "echo $$ > {result}/../pid; exec sleep 600")
    pid_file = chain.data_dir / "missions" / "term" / "pid"
    runner = subprocess.Popen([str(ANCHOR_BIN), "mission", "run", "term", "--no-sandbox"], env=chain.env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.is_file() and pid_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.1)
        command = int(pid_file.read_text())
        assert Path(f"/proc/{command}").exists()
        runner.send_signal(signal.SIGTERM)  # the runner we started, by its PID
        assert runner.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    for _ in range(50):  # reaped by the runner before it exited; /proc may lag a moment
        if not Path(f"/proc/{command}").exists():
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{command}").exists()
    status = json.loads(chain.cli("--json", "mission", "status", "term", check=True).stdout)
    assert status["state"] == "interrupted"


def test_a_resumed_mission_starts_from_its_pinned_bundle_only_while_that_result_is_unchanged(
    chain: Chain, tmp_path: Path
) -> None:
    """--resume-bundle/--resume-digest: the runner hands the pinned bundle's result directory to the
    command (MISSION_RESUME, read-only) and records the pin in the new bundle; a pinned result edited
    since it was anchored is refused before anything runs."""
    command = (
        'if [ -n "${MISSION_RESUME:-}" ]; then cat "$MISSION_RESUME/step"; fi > {result}/before;'
        " echo 1 >> {result}/step"
    )
    _dispatch(chain, tmp_path, "part-1", command)
    first = json.loads(chain.cli("--json", "mission", "run", "part-1", check=True).stdout)
    pin = first["manifest_digest"]
    mission = tmp_path / "part-1.toml"
    digest = json.loads(chain.cli("--json", "mission", "check", str(mission), check=True).stdout)["digest"]
    snapshot = tmp_path / "prices.csv"
    key = json.loads(chain.cli("--json", "snapshot", "add", str(snapshot), check=True).stdout)["snapshot"][7:]
    for output in ("part-2", "part-3"):
        chain.cli(
            "mission", "submit", "--mission", str(mission), "--mission-digest", digest, "--snapshot", str(snapshot),
            "--snapshot-sha256", key, "--image", IMAGE, "--output", output, "--resume-bundle", "part-1",
            "--resume-digest", pin, check=True,
        )  # fmt: skip
    second = json.loads(chain.cli("--json", "mission", "run", "part-2", check=True).stdout)
    assert second["manifest"]["resume"] == {"bundle": "part-1", "digest": pin[2:]}
    assert (Path(second["result"]) / "before").read_text() == "1\n"  # it saw part-1's result
    (Path(first["result"]) / "step").write_text("1\n1\n1\n")  # part-1's result edited after anchoring
    refused = chain.cli("--json", "mission", "run", "part-3")
    assert refused.returncode == ExitCode.TAMPERED, refused.stdout + refused.stderr
    assert json.loads(refused.stdout)["error"]["detail"]["field"] == "resume.digest"
