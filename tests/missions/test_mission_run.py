"""`anchor mission run` (the highest seam): an immutable mission in, through the dispatcher,
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
from anchor.fence.sandbox import default_runtime
from anchor.research.environment import host_identity
from tests.cli import run_anchor
from tests.conftest import Chain
from tests.public_tools import cast_verify_inclusion

IMAGE = "ghcr.io/example/runner@sha256:" + "ab" * 32
MILESTONES = ["submitted", "scheduled", "image_ready", "snapshot_ready", "evaluator_started", "completed"]


@pytest.fixture
def chain(fresh_chain: Chain) -> Chain:
    fresh_chain.cli("deploy", check=True)
    return fresh_chain


def _dispatch(
    chain: Chain, tmp_path: Path, output: str, command: str, minutes: int = 5, attempts: int = 1, rules: str = ""
) -> dict[str, Any]:
    snapshot = tmp_path / "prices.csv"
    if not snapshot.exists():
        snapshot.write_text("day,close\n1,100\n2,101\n3,99\n")
    mission = tmp_path / f"{output}.toml"
    mission.write_text(
        f'hypothesis = "The snapshot has three days."\ncommand = {json.dumps(command)}\n'
        f'evaluator_policy_sha256 = "{"44" * 32}"\n[covers]\nsymbol = "SPY"\n'
        f"[budget]\nminutes = {minutes}\nattempts = {attempts}\n{rules}"
    )
    added = json.loads(chain.cli("--json", "snapshot", "add", str(snapshot), check=True).stdout)
    key = added["snapshot"].removeprefix("sha256:")
    digest = json.loads(chain.cli("--json", "mission", "check", str(mission), check=True).stdout)["digest"]
    chain.cli(
        "mission",
        "submit",
        "--mission",
        str(mission),
        "--mission-digest",
        digest,
        "--snapshot",
        str(snapshot),
        "--snapshot-sha256",
        key,
        "--image",
        IMAGE,
        "--output",
        output,
        "--profile",
        "small",
        check=True,
    )
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
    assert manifest["environment"]["host"] == host_identity() and manifest["sandbox"] == default_runtime()
    assert manifest["environment"]["interpreter"].startswith("CPython 3.")
    assert manifest["evaluator_policy_sha256"] == "44" * 32
    assert manifest["budget"] == {"minutes": 5, "attempts": 1} and manifest["profile"]["name"] == "small"
    times = [datetime.fromisoformat(done["milestones"][name]) for name in MILESTONES]  # all six, by the runner
    assert times == sorted(times) and len(done["milestones"]) == 6
    result = Path(done["result"])
    assert (result / "lines.txt").read_text().strip() == "4"
    seen = (result / "seen.txt").read_text().split()
    assert done["sandbox"] == default_runtime() and "journal.sqlite" not in seen  # the data dir is hidden inside

    verified = chain.cli("--json", "verify", str(result))
    assert verified.returncode == ExitCode.OK, verified.stdout
    verdict = json.loads(verified.stdout)
    assert verdict["verified"] is True and verdict["milestones_anchored"] is True
    assert set(verdict["milestones"]) == set(MILESTONES)
    text = chain.cli("verify", str(result), check=True).stdout
    assert f"mission     sha256 {sent['mission_sha256']}" in text and IMAGE not in text
    assert f"executor    host {host_identity()[:16]}… (ran on a host: no image ran, none is claimed)" in text
    assert f"sandbox     {default_runtime()}" in text
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
        for k in (
            "mission_sha256",
            "data_snapshot_sha256",
            "evaluator_policy_sha256",
            "budget",
            "profile",
            "environment",
            "sandbox",
            "spent",
        )
    }
    assert "executor" in page.text and "no image is claimed" in page.text and IMAGE not in page.text
    assert set(over_http["milestones"]) == set(MILESTONES)
    assert page.status_code == 200 and sent["snapshot"] in page.text and "snapshot_ready" in page.text
    assert page.text.count("<circle ") == 6

    # a replica that did not flush this batch has no tree of it: it rebuilds both proofs from the journal
    trees = list((chain.data_dir / "batches").rglob("*.tree"))
    assert trees and not (chain.data_dir / "proofs").exists()
    for tree in trees:
        tree.unlink()
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
    edited["annotations"] = {
        **proof["annotations"],
        "milestones": {**done["milestones"], "evaluator_started": done["milestones"]["submitted"]},
    }
    Path(done["proof"]).write_text(json.dumps(edited))
    tampered = chain.cli("--json", "verify", str(result))
    assert tampered.returncode == ExitCode.TAMPERED
    assert json.loads(tampered.stdout)["error"]["detail"]["milestones"] == ["evaluator_started"]


def test_a_failing_mission_anchors_nothing_and_may_run_again(chain: Chain, tmp_path: Path) -> None:
    _dispatch(
        chain,
        tmp_path,
        "flaky",
        'test -e "$HOME/retry" || { touch "$HOME/retry"; exit 3; }; echo ok > {result}/ok',
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
    runner = subprocess.Popen(
        [str(ANCHOR_BIN), "mission", "run", "term", "--no-sandbox"],
        env=chain.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
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
            "mission",
            "submit",
            "--mission",
            str(mission),
            "--mission-digest",
            digest,
            "--snapshot",
            str(snapshot),
            "--snapshot-sha256",
            key,
            "--image",
            IMAGE,
            "--output",
            output,
            "--resume-bundle",
            "part-1",
            "--resume-digest",
            pin,
            check=True,
        )
    second = json.loads(chain.cli("--json", "mission", "run", "part-2", check=True).stdout)
    assert second["manifest"]["resume"] == {"bundle": "part-1", "digest": pin[2:]}
    assert (Path(second["result"]) / "before").read_text() == "1\n"  # it saw part-1's result
    (Path(first["result"]) / "step").write_text("1\n1\n1\n")  # part-1's result edited after anchoring
    refused = chain.cli("--json", "mission", "run", "part-3")
    assert refused.returncode == ExitCode.TAMPERED, refused.stdout + refused.stderr
    assert json.loads(refused.stdout)["error"]["detail"]["field"] == "resume.digest"


COUNT_UP = (
    "n=$(cat {result}/n 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {result}/n;"
    ' test "$MISSION_ATTEMPT" = "$n" && test {attempt} = $n'
    " && printf '{\"score\": %s}' $n > {result}/metrics.json"
)


def test_a_mission_runs_again_until_a_stop_rule_is_met_or_its_attempts_are_spent_and_the_bundle_says_which(
    chain: Chain, tmp_path: Path
) -> None:
    """stop rules and attempt budgets were validated and hashed but never enforced (the
    command ran once, whatever the mission said). Now each run is an attempt: the runner reads the
    metrics the attempt left and stops at the first rule met, or when the budget's attempts are spent,
    and the anchored bundle binds how many ran and why they stopped."""
    rule = '[[stop_rules]]\nmetric = "score"\nmode = "max"\ntarget = 3\n'
    _dispatch(chain, tmp_path, "to-three", COUNT_UP, attempts=10, rules=rule)
    ran = chain.cli("--json", "mission", "run", "to-three")
    assert ran.returncode == ExitCode.OK, ran.stdout + ran.stderr
    spent = json.loads(ran.stdout)["manifest"]["spent"]
    assert spent == {"attempts": 3, "stopped": "stop_rule", "rule": {"metric": "score", "mode": "max", "target": "3"}}
    assert (Path(json.loads(ran.stdout)["result"]) / "n").read_text().strip() == "3"

    _dispatch(chain, tmp_path, "never", COUNT_UP, attempts=4, rules=rule.replace("= 3", "= 99"))
    ran = chain.cli("--json", "mission", "run", "never")
    assert ran.returncode == ExitCode.OK, ran.stdout + ran.stderr
    assert json.loads(ran.stdout)["manifest"]["spent"] == {"attempts": 4, "stopped": "attempts"}

    _dispatch(chain, tmp_path, "once", COUNT_UP, attempts=4)  # no stop rule: nothing to run again for
    ran = chain.cli("--json", "mission", "run", "once")
    assert json.loads(ran.stdout)["manifest"]["spent"] == {"attempts": 1, "stopped": "one_run"}
    shown = chain.cli("verify", json.loads(ran.stdout)["result"])
    assert shown.returncode == ExitCode.OK and "spent       1 of 4 attempts (no stop rule: one run)" in shown.stdout


def test_a_mission_past_its_process_bound_fails_naming_it(chain: Chain, tmp_path: Path) -> None:
    """a mission's command had no process bound (and RLIMIT_NPROC does not bind root). Never
    skipped: where no bound can be set, the mission completes and this test fails."""
    _dispatch(chain, tmp_path, "forks", "for i in $(seq 64); do sleep 30 & done; wait")
    ran = run_anchor(["--json", "mission", "run", "forks"], {**chain.env(), "ANCHOR_ATTEMPT_PROCESSES": "8"})
    assert ran.returncode == ExitCode.MISSION_FAILED, ran.stdout + ran.stderr
    error = json.loads(ran.stdout)["error"]
    assert error["detail"]["limit"] == {"name": "processes", "bound": 8}, error
    assert "met its processes limit (8)" in error["message"]


def test_two_missions_at_once_see_and_touch_nothing_of_each_other(chain: Chain, tmp_path: Path) -> None:
    """two missions run side by side on one data dir; the second one's command tries to read,
    overwrite and list the first one's result while it runs, and neither bundle binds the other's files."""
    import subprocess
    import time

    from tests.cli import ANCHOR_BIN

    first = chain.data_dir / "missions" / "first" / "result"
    _dispatch(chain, tmp_path, "first", "echo mine > {result}/secret && sleep 4 && cat {result}/secret > {result}/end")
    prying = (
        f"cat {first}/secret > {{result}}/seen 2>&1; echo planted > {first}/secret 2>> {{result}}/seen;"
        f" ls {chain.data_dir}/missions >> {{result}}/seen 2>&1; true"
    )
    _dispatch(chain, tmp_path, "second", prying)
    runner = subprocess.Popen(
        [str(ANCHOR_BIN), "--json", "mission", "run", "first"],
        env=chain.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (first / "secret").is_file() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (first / "secret").is_file(), "the first mission never started"
        second = chain.cli("--json", "mission", "run", "second")
        out, err = runner.communicate(timeout=120)
    finally:
        if runner.poll() is None:
            runner.kill()  # the runner we started, by its PID; it takes its command's group down with it
            runner.wait()
    assert runner.returncode == ExitCode.OK and second.returncode == ExitCode.OK, out + err + second.stdout
    seen = (Path(json.loads(second.stdout)["result"]) / "seen").read_text()
    assert "mine" not in seen and "No such file" in seen, seen
    assert "first" not in seen.splitlines()  # the listing of the missions dir: only its own is there
    assert (first / "end").read_text() == "mine\n"  # the first one's file, unchanged to its end
    one, two = json.loads(out)["manifest"]["output"], json.loads(second.stdout)["manifest"]["output"]
    assert one["file_count"] == 2 and two["file_count"] == 1 and one["files_root"] != two["files_root"]


def test_in_a_pod_prepare_and_seal_bind_the_image_the_command_ran_in_and_nothing_they_could_not_see(
    chain: Chain, tmp_path: Path
) -> None:
    """the rendered Job's trusted steps, run here as its containers would run them: `prepare`
    puts the verified snapshot in its volume read-only, the command runs apart (here: as its container
    would, with the rendered command line), and `seal` anchors a bundle that names the dispatched image
    as where it ran, `sandbox: container`, and only the milestones trusted code measured."""
    import stat
    import subprocess

    sent = _dispatch(chain, tmp_path, "pod", "wc -l < {snapshot} > {result}/lines.txt")
    workspace = tmp_path / "mission"
    (workspace / "snapshot").mkdir(parents=True)
    (workspace / "result").mkdir()
    early = chain.cli("--json", "mission", "run", "pod", "--stage", "seal", "--workspace", str(workspace))
    assert early.returncode == ExitCode.CONFLICT and "seal follows `--stage prepare`" in early.stdout
    typo = chain.cli("mission", "run", "pdo", "--stage", "seal", "--workspace", str(workspace))
    assert typo.returncode == ExitCode.NOT_ANCHORED and "no dispatched mission has output 'pdo'" in typo.stderr
    prepared = chain.cli("--json", "mission", "run", "pod", "--stage", "prepare", "--workspace", str(workspace))
    assert prepared.returncode == ExitCode.OK, prepared.stdout + prepared.stderr
    data = workspace / "snapshot" / "data"
    assert data.read_text().startswith("day,close") and stat.S_IMODE(data.stat().st_mode) == 0o444
    between = chain.cli("mission", "status", "pod")  # a prepared mission is a state, not a traceback
    assert between.returncode == ExitCode.OK and "mission 'pod': prepared" in between.stdout, between.stderr
    assert "anchor mission run pod --stage seal --workspace DIR" in between.stdout
    line = f"wc -l < {data} > {workspace / 'result' / 'lines.txt'}"
    subprocess.run(["sh", "-c", line], check=True, env={"PATH": "/usr/bin:/bin"})  # the command's container
    sealed = chain.cli("--json", "mission", "run", "pod", "--stage", "seal", "--workspace", str(workspace))
    assert sealed.returncode == ExitCode.OK, sealed.stdout + sealed.stderr
    manifest = json.loads(sealed.stdout)["manifest"]
    assert manifest["sandbox"] == "container" and manifest["image"] == IMAGE == manifest["environment"]["image"]
    assert "host" not in manifest["environment"] and manifest["spent"] == {"attempts": 1, "stopped": "one_run"}
    assert manifest["mission_sha256"] == sent["mission_sha256"] and manifest["output"]["file_count"] == 1
    assert set(json.loads(sealed.stdout)["milestones"]) == {"submitted", "scheduled", "snapshot_ready", "completed"}
    again = chain.cli("--json", "mission", "run", "pod", "--stage", "seal", "--workspace", str(workspace))
    assert again.returncode == ExitCode.CONFLICT  # one bundle per output identity
    proof = json.loads(sealed.stdout)["proof"]
    verified = chain.cli("verify", str(workspace / "result"), "--proof", proof)
    assert verified.returncode == ExitCode.OK and f"image       {IMAGE}" in verified.stdout, verified.stdout
    assert "sandbox     container" in verified.stdout


@pytest.mark.parametrize("runtime", ["bubblewrap", "gvisor"])
def test_a_mission_command_holds_no_capability_and_cannot_remount_its_snapshot(
    chain: Chain, tmp_path: Path, runtime: str
) -> None:
    """a mission's command runs through the same sandbox as an attempt, so it held every
    capability under a root runner and could remount what it was shown read-only. Now CapEff is 0, the
    remount is refused, the snapshot is unchanged, and the bundle records which runtime it ran in."""
    probe = (
        "grep CapEff /proc/self/status > {result}/caps; mount -o remount,bind,rw {snapshot} 2> /dev/null"
        " && echo remounted > {result}/mount || echo refused > {result}/mount;"
        " echo planted >> {snapshot} 2> /dev/null; true"
    )
    _dispatch(chain, tmp_path, f"caps-{runtime}", probe)
    ran = chain.cli("--json", "mission", "run", f"caps-{runtime}", "--sandbox-runtime", runtime)
    assert ran.returncode == ExitCode.OK, ran.stdout + ran.stderr
    done = json.loads(ran.stdout)
    result = Path(done["result"])
    assert (result / "caps").read_text().split() == ["CapEff:", "0000000000000000"]
    assert (result / "mount").read_text() == "refused\n"
    assert (tmp_path / "prices.csv").read_text() == "day,close\n1,100\n2,101\n3,99\n"
    assert done["sandbox"] == runtime and done["manifest"]["sandbox"] == runtime
