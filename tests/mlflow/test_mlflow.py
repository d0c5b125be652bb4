"""The MLflow bridge against a real `mlflow server` (each test over a SQLite and a PostgreSQL backend
store, local artifacts), runs logged with MLflow's own client, tampered with on disk, in the store's
database and through the API.

A run is stamped (`anchor mlflow stamp`), its proof written back into the run, and verified
(`anchor mlflow verify`); each later change is named: an artifact edited or removed, a metric logged
again, a param rewritten in the database, the run's proof swapped for another run's or replaced by a
re-stamp with another key. A routine re-stamp refuses a changed run (its changes named) and an asked
one records what it supersedes; MLflow 3's logged models are bound with their run; a deleted run fails
its verdict unless accepted, and an experiment's roster names a run gone from the store; a registered
version is promoted only on a proof, and an alias moved to a version without one is named. Through a
keyless service a run is pending at once, then upgraded and verified; `anchor.mlflow.anchored_run` in a
training script stamps when its block ends. Bad input is one typed line, exit 2/3/5, and nothing is
written to the run."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anchor.errors import ExitCode
from tests.cli import run_anchor
from tests.conftest import STRANGER_KEY, Chain, deployed, free_port
from tests.mlflow_server import BACKENDS, TrackingServer, backend_server, log_run, train_model

pytestmark = pytest.mark.chain

STRANGER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrackingServer]:
    """One tracking server per backend store: every test runs against SQLite and against PostgreSQL."""
    with backend_server(request.param, tmp_path_factory.mktemp("mlflow"), request) as served:
        yield served


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    with deployed(tmp_path_factory.mktemp("mlflow-data")) as started:
        yield started


def _env(chain: Chain, server: TrackingServer, **extra: str) -> dict[str, str]:
    return {**chain.env(), "MLFLOW_TRACKING_URI": server.url, **extra}


def _mlflow(chain: Chain, server: TrackingServer, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return run_anchor(["mlflow", *args], _env(chain, server, **extra))


def _anchor_tags(server: TrackingServer, run_id: str) -> dict[str, str]:
    tags = server.client().get_run(run_id).data.tags
    return {k: v for k, v in tags.items() if k.startswith("anchor.")}


def _artifacts(server: TrackingServer, run_id: str, folder: str | None = None) -> list[str]:
    found = []
    for info in server.client().list_artifacts(run_id, folder):
        found += _artifacts(server, run_id, info.path) if info.is_dir else [info.path]
    return found


def test_a_stamped_run_verifies_and_every_later_change_is_named(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    run_id = log_run(server, tmp_path)
    stamped = _mlflow(chain, server, "stamp", run_id)
    assert stamped.returncode == 0, stamped.stdout + stamped.stderr
    assert f"run {run_id}: anchored in block" in stamped.stdout
    tags = _anchor_tags(server, run_id)
    assert tags["anchor.state"] == "anchored" and tags["anchor.tx"].startswith("0x")
    proof = json.loads(server.artifact_file(run_id, "anchor/proof.anchor.json").read_text())
    assert proof["manifest"]["kind"] == "mlflow_run" and proof["manifest_digest"] == tags["anchor.manifest_digest"]
    manifest = proof["manifest"]
    assert manifest["params"] == [{"key": "batch-size", "value": "32"}, {"key": "lr", "value": "0.01"}]
    assert [(m["step"], m["value"]) for m in manifest["metrics"]] == [(0, "0.61"), (1, "0.74"), (2, "0.8125")]
    assert manifest["tags"] == [{"key": "team", "value": "vision"}]  # MLflow's own tags are not bound
    assert manifest["source_commit"] == "ab" * 20 and manifest["status"] == "FINISHED"
    assert [f["path"] for f in proof["files"]] == ["model/config.json", "model/weights.bin"]  # anchor/ left out
    assert proof["annotations"]["mlflow"]["tracking_uri"] == server.url  # outside the digest

    again = _mlflow(chain, server, "stamp", run_id, "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["runs"][0]["unchanged"] is True
    assert _anchor_tags(server, run_id) == tags  # nothing anchored, nothing written

    verified = _mlflow(chain, server, "verify", run_id)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"OK: run {run_id} (2 files) is anchored" in verified.stdout
    assert "FINISHED: its 2 params, 3 metric values, 1 tags and 2 artifact files as anchored" in verified.stdout
    assert "by          0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266" in verified.stdout

    # an artifact edited in the artifact store on disk
    weights = server.artifact_file(run_id, "model/weights.bin")
    original = weights.read_bytes()
    weights.write_bytes(original[:-1] + b"\x00")
    edited = _mlflow(chain, server, "verify", run_id)
    assert edited.returncode == ExitCode.TAMPERED, edited.stdout + edited.stderr
    assert "~ artifact model/weights.bin: edited (16,384 -> 16,384 bytes" in edited.stderr
    weights.write_bytes(original)
    assert _mlflow(chain, server, "verify", run_id).returncode == 0  # put back: verified again

    # an artifact deleted from the store
    config = server.artifact_file(run_id, "model/config.json")
    kept = config.read_bytes()
    config.unlink()
    removed = _mlflow(chain, server, "verify", run_id)
    assert (
        removed.returncode == ExitCode.TAMPERED and "~ artifact model/config.json: removed (14 bytes)" in removed.stderr
    )
    config.write_bytes(kept)

    # a param rewritten in the backend store's database (MLflow's API refuses to change a param)
    server.sql("UPDATE params SET value = '0.02' WHERE run_uuid = ? AND key = 'lr'", run_id)
    rewritten = _mlflow(chain, server, "verify", run_id)
    assert rewritten.returncode == ExitCode.TAMPERED
    assert "~ param lr: changed from '0.01' to '0.02'" in rewritten.stderr
    server.sql("UPDATE params SET value = '0.01' WHERE run_uuid = ? AND key = 'lr'", run_id)

    # a metric logged again, through the API, with a better value at a step already logged
    server.client().log_metric(run_id, "val_acc", 0.97, step=2)
    relogged = _mlflow(chain, server, "verify", run_id, "--json")
    assert relogged.returncode == ExitCode.TAMPERED
    error = json.loads(relogged.stdout)["error"]
    assert error["code"] == "tampered" and len(error["detail"]["changes"]) == 1
    assert error["detail"]["changes"][0].startswith("metric val_acc: logged again at step 2: 0.97 at ")
    assert error["detail"]["changes"][0].endswith("(anchored: 0.8125)")

    # stamping the changed run anchors it anew when asked; the earlier proof is kept in the run
    restamped = _mlflow(chain, server, "stamp", run_id, "--restamp")
    assert restamped.returncode == 0 and "earlier     " + tags["anchor.manifest_digest"] in restamped.stdout
    assert f"anchor/superseded/{tags['anchor.manifest_digest']}.anchor.json" in _artifacts(server, run_id)
    assert _mlflow(chain, server, "verify", run_id).returncode == 0


def test_the_docs_example_run_is_stamped_and_verified_as_docs_mlflow_md_shows(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    """docs/mlflow.md's flow begins with `python examples/mlflow/train.py`: the script is there, prints its
    run's id, and the run stamps and verifies with the figures the page shows (a newcomer found no
    train.py and wrote one)."""
    root = Path(__file__).resolve().parents[2]
    assert "python examples/mlflow/train.py" in (root / "docs" / "mlflow.md").read_text()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MLFLOW_TRACKING_URI": server.url}
    trained = subprocess.run(
        [sys.executable, str(root / "examples" / "mlflow" / "train.py")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert trained.returncode == 0, trained.stderr
    run_id = trained.stdout.strip().splitlines()[-1]
    assert len(run_id) == 32, trained.stdout
    assert _mlflow(chain, server, "stamp", run_id).returncode == 0
    verified = _mlflow(chain, server, "verify", run_id)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "its 2 params, 3 metric values, 0 tags and 2 artifact files as anchored" in verified.stdout


def test_a_proof_of_another_run_and_a_restamp_with_another_key_are_refused(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    first, second = log_run(server, tmp_path), log_run(server, tmp_path)
    for run_id in (first, second):
        assert _mlflow(chain, server, "stamp", run_id).returncode == 0
    # the first run's proof, given for the second run
    other = tmp_path / "first.anchor.json"
    other.write_bytes(server.artifact_file(first, "anchor/proof.anchor.json").read_bytes())
    swapped = _mlflow(chain, server, "verify", second, "--proof", str(other))
    assert swapped.returncode == ExitCode.TAMPERED
    assert f"~ run_id: the proof is of run {first}, not of run {second}" in swapped.stderr

    # whoever writes the store changes a file, then stamps the run again with a key of their own: the
    # run's new proof verifies, of other contents, by another account
    server.artifact_file(second, "model/config.json").write_text('{"layers": 4}\n')
    forger = {
        "ANCHOR_DATA_DIR": str(tmp_path / "forger"),
        "ANCHOR_RPC_URL": chain.node.rpc_url,
        "ANCHOR_PRIVATE_KEY": STRANGER_KEY,
    }
    forged = run_anchor(["mlflow", "stamp", second, "--restamp"], {**_env(chain, server), **forger})
    assert forged.returncode == 0, forged.stdout + forged.stderr
    caught = _mlflow(chain, server, "verify", second)  # this data dir kept the proof it stamped
    assert caught.returncode == ExitCode.TAMPERED, caught.stdout + caught.stderr
    assert "the run was stamped again elsewhere" in caught.stderr
    expect = ["--expect-submitter", "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"]
    by_policy = run_anchor(["mlflow", "verify", second, *expect], {**_env(chain, server), **forger})
    assert by_policy.returncode == ExitCode.POLICY  # a verifier without the kept copy: the submitter says it
    assert STRANGER in by_policy.stderr


def test_a_keyless_service_leaves_the_run_pending_then_upgrade_completes_it(
    server: TrackingServer, tmp_path: Path
) -> None:
    from tests.calendar.test_calendar import TOKEN, _client, local_service

    run_id = log_run(server, tmp_path)
    client = {**_client(tmp_path), "MLFLOW_TRACKING_URI": server.url}
    with local_service(tmp_path) as service:
        stamped = run_anchor(["mlflow", "stamp", run_id, "--service", service.url], client)
        assert stamped.returncode == 0, stamped.stdout + stamped.stderr
        assert "pending at the services" in stamped.stdout
        assert _anchor_tags(server, run_id)["anchor.state"] == "pending" and "anchor.tx" not in _anchor_tags(
            server, run_id
        )
        check = ["mlflow", "verify", run_id, "--rpc-url", service.rpc]
        assert run_anchor(check, client).returncode == ExitCode.PENDING
        early = run_anchor(["mlflow", "upgrade", run_id, "--rpc-url", service.rpc], client)
        assert early.returncode == ExitCode.PENDING
        service.flush()
        upgraded = run_anchor(["mlflow", "upgrade", run_id, "--rpc-url", service.rpc], client)
        assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
        assert _anchor_tags(server, run_id)["anchor.state"] == "anchored"
        verified = run_anchor(check, client)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert f"(the account of {service.url})" in verified.stdout
        assert TOKEN not in json.dumps(server.client().get_run(run_id).data.tags)


TRAINING_SCRIPT = """
import sys, mlflow, anchor.mlflow
mlflow.set_tracking_uri(sys.argv[1])
mlflow.set_experiment("training")
with anchor.mlflow.anchored_run(run_name="lr-0.01") as run:
    mlflow.log_param("lr", 0.01)
    for step in range(3):
        mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
    mlflow.log_text("weights", "model/weights.txt")
print("RESULT", run.info.run_id, run.stamped.state, run.stamped.digest)
try:
    with anchor.mlflow.anchored_run(run_name="diverged") as failed:
        mlflow.log_metric("loss", float("nan"), step=0)
        raise RuntimeError("diverged")
except RuntimeError as exc:
    print("RESULT", failed.info.run_id, failed.stamped.state, exc)
"""


def test_anchored_run_in_a_training_script_stamps_when_the_block_ends_through_a_service(
    server: TrackingServer, tmp_path: Path
) -> None:
    from tests.calendar.test_calendar import _client, local_service

    script = tmp_path / "train.py"
    script.write_text(TRAINING_SCRIPT)
    with local_service(tmp_path) as service:
        env = {**_client(tmp_path), "ANCHOR_SERVICE_URLS": service.url}
        ran = subprocess.run(
            [sys.executable, str(script), server.url], env=env, capture_output=True, text=True, timeout=300
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        said = [line.split(" ", 3)[1:] for line in ran.stdout.splitlines() if line.startswith("RESULT ")]
        (run_id, state, digest), (failed_id, failed_state, why) = said
        assert state == failed_state == "pending" and why == "diverged"  # the training job never waited
        assert server.client().get_run(failed_id).info.status == "FAILED"  # a failed trial is stamped too
        failed_proof = json.loads(server.artifact_file(failed_id, "anchor/proof.anchor.json").read_text())
        assert failed_proof["manifest"]["status"] == "FAILED"
        assert [m["value"] for m in failed_proof["manifest"]["metrics"]] == ["NaN"]
        service.flush()
        client = {**env, "MLFLOW_TRACKING_URI": server.url}
        assert run_anchor(["mlflow", "upgrade", run_id, "--rpc-url", service.rpc], client).returncode == 0
        verified = run_anchor(["mlflow", "verify", run_id, "--rpc-url", service.rpc, "--json"], client)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert json.loads(verified.stdout)["manifest_digest"] == digest


def test_a_run_stamped_while_running_says_so_and_its_end_is_named(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    run_id = log_run(server, tmp_path, finish=False)
    refused = _mlflow(chain, server, "stamp", run_id)
    assert refused.returncode == ExitCode.BAD_INPUT and f"run {run_id} is RUNNING" in refused.stderr
    assert _anchor_tags(server, run_id) == {} and _artifacts(server, run_id, "anchor") == []  # nothing written
    allowed = _mlflow(chain, server, "stamp", run_id, "--allow-running")
    assert allowed.returncode == 0 and "stamped while RUNNING" in allowed.stdout
    verified = _mlflow(chain, server, "verify", run_id)
    assert verified.returncode == 0 and "(stamped while RUNNING: what it held then)" in verified.stdout
    server.client().set_terminated(run_id)
    ended = _mlflow(chain, server, "verify", run_id)
    assert ended.returncode == ExitCode.TAMPERED
    assert "~ status: changed from RUNNING to FINISHED (it was stamped while RUNNING)" in ended.stderr


class _Broken(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(500)
        self.end_headers()
        self.wfile.write(b"internal error")

    do_POST = do_GET  # noqa: N815

    def log_message(self, *args: Any) -> None:
        pass


def test_bad_input_is_one_typed_line_and_nothing_is_written_to_the_run(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    run_id = log_run(server, tmp_path)
    unknown = _mlflow(chain, server, "stamp", "0123456789abcdef0123456789abcdef")
    assert unknown.returncode == ExitCode.BAD_INPUT
    assert unknown.stderr.startswith("error[bad_input]: run 0123456789abcdef0123456789abcdef: not found")
    down = run_anchor(["mlflow", "stamp", run_id, "--tracking-uri", f"http://127.0.0.1:{free_port()}"], chain.env())
    assert down.returncode == ExitCode.CHAIN_UNREACHABLE, down.stderr
    assert "unreachable (connection refused: nothing listens there)" in down.stderr, down.stderr  # not [Errno 111]
    broken = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Broken)
    threading.Thread(target=broken.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{broken.server_address[1]}"
        five = run_anchor(["mlflow", "verify", run_id, "--tracking-uri", url], chain.env())
        assert five.returncode == ExitCode.CHAIN_UNREACHABLE and "answered 500" in five.stderr, five.stderr
    finally:
        broken.shutdown()
        broken.server_close()
    bounded = _mlflow(chain, server, "stamp", run_id, ANCHOR_MLFLOW_MAX_ARTIFACT_BYTES="1000")
    assert bounded.returncode == ExitCode.BAD_INPUT
    assert (
        "artifact model/weights.bin of run" in bounded.stderr
        and "16,384 bytes, past the bound of 1,000" in bounded.stderr
    )
    no_server = run_anchor(["mlflow", "stamp", run_id], chain.env())
    assert no_server.returncode == ExitCode.BAD_INPUT and "--tracking-uri" in no_server.stderr
    both = _mlflow(chain, server, "stamp", run_id, "--experiment", "anchor-tests")
    assert both.returncode == ExitCode.BAD_INPUT
    never = _mlflow(chain, server, "verify", run_id)
    assert never.returncode == ExitCode.NOT_ANCHORED and "holds no proof" in never.stderr
    bare = server.url.removeprefix("http://")
    no_scheme = run_anchor(["mlflow", "stamp", run_id, "--tracking-uri", bare], chain.env())
    assert no_scheme.returncode == ExitCode.BAD_INPUT and f"hint: --tracking-uri {server.url}" in no_scheme.stderr
    missing = tmp_path / "no-such" / "mlflow.db"
    local = run_anchor(["mlflow", "stamp", run_id, "--tracking-uri", f"sqlite:///{missing}"], chain.env())
    assert local.returncode == ExitCode.BAD_INPUT and not missing.parent.exists()  # MLflow would have made one
    for result in (unknown, down, five, bounded, no_server, both, never, no_scheme, local):
        assert "Traceback" not in result.stderr and result.stderr.startswith("error["), result.stderr
        assert len(result.stderr.splitlines()) <= 6, result.stderr  # the line, then the fields it names
    assert _anchor_tags(server, run_id) == {} and _artifacts(server, run_id, "anchor") == []


def test_a_credential_in_the_tracking_uri_reaches_no_proof_tag_or_output(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    run_id = log_run(server, tmp_path)
    secret = "s3cr3t-tracking-password"  # noqa: S105 - a test's own
    with_credential = server.url.replace("http://", f"http://researcher:{secret}@")
    stamped = run_anchor(["mlflow", "stamp", run_id, "--tracking-uri", with_credential, "--json"], chain.env())
    assert stamped.returncode == 0, stamped.stdout + stamped.stderr
    proof = server.artifact_file(run_id, "anchor/proof.anchor.json").read_text()
    kept = (chain.data_dir / "mlflow" / f"{run_id}.anchor.json").read_text()
    verified = run_anchor(["mlflow", "verify", run_id, "--tracking-uri", with_credential, "--json"], chain.env())
    assert verified.returncode == 0
    for text in (
        proof,
        kept,
        stamped.stdout,
        stamped.stderr,
        verified.stdout,
        verified.stderr,
        json.dumps(server.client().get_run(run_id).data.tags),
    ):
        assert secret not in text
    assert json.loads(proof)["annotations"]["mlflow"]["tracking_uri"] == server.url


def test_every_door_gives_the_run_the_same_verdict(chain: Chain, server: TrackingServer, tmp_path: Path) -> None:
    """Parity (tests/readback/test_verdict_parity.py): `anchor mlflow verify`, `anchor verify` of the downloaded
    artifacts with the run's proof, and the API's `POST /v1/verify/proof` agree, intact and tampered."""
    import hashlib

    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.config import ApiConfig

    run_id = log_run(server, tmp_path)
    assert _mlflow(chain, server, "stamp", run_id).returncode == 0
    proof_path = tmp_path / "run.anchor.json"
    proof_path.write_bytes(server.artifact_file(run_id, "anchor/proof.anchor.json").read_bytes())
    artifacts = tmp_path / "artifacts"
    server.client().download_artifacts(run_id, "model", str(artifacts))
    config = ApiConfig(token_hashes=frozenset({hashlib.sha256(b"t").hexdigest()}))
    same = ("manifest_digest", "submitter", "anchored_block", "root", "registry", "chain_id")
    tampered = json.loads(proof_path.read_text())
    tampered["batch"]["proof"] = ["0x" + "11" * 32]
    bad_path = tmp_path / "bad.anchor.json"
    bad_path.write_text(json.dumps(tampered))
    with TestClient(create_app(chain.settings, config)) as api:
        for given, expected in ((proof_path, "ok"), (bad_path, None)):
            door_mlflow = json.loads(_mlflow(chain, server, "verify", run_id, "--proof", str(given), "--json").stdout)
            door_verify = json.loads(
                run_anchor(["verify", str(artifacts), "--proof", str(given), "--json"], chain.env()).stdout
            )
            door_api = api.post("/v1/verify/proof", files={"proof": ("p.anchor.json", given.read_bytes())}).json()
            if expected == "ok":
                assert door_mlflow["ok"] and door_verify["ok"] and door_api["verified"], (door_mlflow, door_verify)
                assert (
                    {k: door_mlflow[k] for k in same}
                    == {k: door_verify[k] for k in same}
                    == {k: door_api[k] for k in same}
                )
            else:
                codes = {door_mlflow["error"]["code"], door_verify["error"]["code"], door_api["code"]}
                assert len(codes) == 1, (door_mlflow, door_verify, door_api)


def test_an_experiment_is_stamped_run_by_run_and_a_second_pass_anchors_nothing(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    experiment = "sweep"
    ids = [log_run(server, tmp_path, experiment) for _ in range(3)]
    first = _mlflow(chain, server, "stamp", "--experiment", experiment, "--json")
    assert first.returncode == 0, first.stdout + first.stderr
    rows = json.loads(first.stdout)["runs"]
    assert [r["run_id"] for r in rows] == ids and not any(r["unchanged"] for r in rows)  # oldest first
    again = _mlflow(chain, server, "stamp", "--experiment", experiment)
    assert again.returncode == 0 and again.stdout.splitlines()[-1] == "3 runs: 0 stamped (0 pending), 3 unchanged"
    for run_id in ids:
        assert _mlflow(chain, server, "verify", run_id).returncode == 0
    nothing = _mlflow(chain, server, "stamp", "--experiment", "no-such-experiment")
    assert nothing.returncode == ExitCode.BAD_INPUT and "experiment 'no-such-experiment': not found" in nothing.stderr
    typo = _mlflow(chain, server, "stamp", "--experiment", "swep")  # a typo names the experiment meant
    assert typo.returncode == ExitCode.BAD_INPUT and "(did you mean sweep?)" in typo.stderr, typo.stderr


def _launder(server: TrackingServer, run_id: str) -> None:
    """What whoever writes the tracking store does to a finished run: an artifact appended to, a metric
    logged again with a better value, a tag added, a param edited in the database."""
    with server.artifact_file(run_id, "model/weights.bin").open("ab") as weights:
        weights.write(b"backdoor")
    server.client().log_metric(run_id, "val_acc", 0.999, step=2)
    server.client().set_tag(run_id, "reviewed", "yes")
    server.sql("UPDATE params SET value = '0.02' WHERE run_uuid = ? AND key = 'lr'", run_id)


LAUNDERED = (
    "~ artifact model/weights.bin: edited (16,384 -> 16,392 bytes",
    "~ metric val_acc: logged again at step 2: 0.999 at ",
    "~ tag reviewed: added ('yes')",
    "~ param lr: changed from '0.01' to '0.02'",
)


def test_a_routine_restamp_refuses_a_changed_run_and_stamps_the_rest(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    experiment = "laundry"
    changed = log_run(server, tmp_path, experiment)
    assert _mlflow(chain, server, "stamp", "--experiment", experiment).returncode == 0
    anchored = _anchor_tags(server, changed)
    _launder(server, changed)
    fresh = log_run(server, tmp_path, experiment)
    running = log_run(server, tmp_path, experiment, finish=False)  # fails for a reason of its own, after

    routine = _mlflow(chain, server, "stamp", "--experiment", experiment)
    assert routine.returncode == ExitCode.TAMPERED, routine.stdout + routine.stderr
    assert f"error[tampered]: run {changed} changed since its last stamp (4 changes)" in routine.stderr
    for line in LAUNDERED:
        assert line in routine.stderr, routine.stderr
    assert f"error[bad_input]: run {running} is RUNNING" in routine.stderr  # reported, not the end of the pass
    assert _anchor_tags(server, changed) == anchored  # nothing anchored or written for the changed run
    assert _anchor_tags(server, fresh)["anchor.state"] == "anchored"  # the new run is stamped all the same
    assert routine.stdout.splitlines()[-1] == "3 runs: 1 stamped (0 pending), 0 unchanged, 2 refused"
    as_json = json.loads(_mlflow(chain, server, "stamp", "--experiment", experiment, "--json").stdout)
    refused = {row["run_id"]: row["error"] for row in as_json["runs"] if "error" in row}
    assert refused[changed]["code"] == "tampered" and len(refused[changed]["detail"]["changes"]) == 4
    single = _mlflow(chain, server, "stamp", changed)
    assert single.returncode == ExitCode.TAMPERED and "--restamp" in single.stderr

    asked = _mlflow(chain, server, "stamp", changed, "--restamp")
    assert asked.returncode == 0, asked.stdout + asked.stderr
    record = json.loads(server.artifact_file(changed, "anchor/proof.anchor.json").read_text())["manifest"]["restamp"]
    assert record["supersedes"] == anchored["anchor.manifest_digest"]  # bound in the new manifest, on chain
    assert [line.split(":")[0] for line in record["changes"]] == [
        "artifact model/weights.bin",
        "param lr",
        "tag reviewed",
        "metric val_acc",
    ]
    verified = _mlflow(chain, server, "verify", changed)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    earlier = server.artifact_file(changed, f"anchor/superseded/{anchored['anchor.manifest_digest']}.anchor.json")
    block = json.loads(earlier.read_text())["anchor"]["block_number"]
    said = f"  stamped     2 times; the earlier stamp (block {block}) held "
    assert said in verified.stdout, verified.stdout
    held = verified.stdout.split(said)[1].splitlines()[0]
    assert held == (
        "artifact model/weights.bin of 16,384 bytes, param lr '0.01', no tag reviewed, val_acc 0.8125 at step 2"
    ), held
    in_json = json.loads(_mlflow(chain, server, "verify", changed, "--json").stdout)
    assert in_json["stamps"] == 2 and in_json["earlier"]["manifest_digest"] == anchored["anchor.manifest_digest"]
    assert in_json["earlier"]["anchored_block"] == block and "val_acc 0.8125 at step 2" in in_json["earlier"]["held"]
    assert len(in_json["earlier"]["changes"]) == 4


def _train(chain: Chain, server: TrackingServer, tmp_path: Path) -> tuple[str, str]:
    """A scikit-learn run logged the MLflow 3 way (`log_model(name=…)`): its run id and logged model id."""
    return train_model(server, tmp_path, _env(chain, server))


def test_a_logged_model_is_bound_with_its_run_and_one_changed_byte_of_it_is_named(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    run_id, model_id = _train(chain, server, tmp_path)
    assert _artifacts(server, run_id) == []  # MLflow 3 keeps the model outside the run's artifacts
    stamped = _mlflow(chain, server, "stamp", run_id)
    assert stamped.returncode == 0, stamped.stdout + stamped.stderr
    manifest = json.loads(server.artifact_file(run_id, "anchor/proof.anchor.json").read_text())["manifest"]
    (model,) = manifest["logged_models"]
    assert model["model_id"] == model_id and model["name"] == "model" and model["source_run_id"] == run_id
    assert "model.pkl" in [f["path"] for f in model["files"]] and "MLmodel" in [f["path"] for f in model["files"]]
    assert _mlflow(chain, server, "verify", run_id).returncode == 0

    (pickled,) = server.artifacts.glob(f"*/models/{model_id}/artifacts/model.pkl")
    data = bytearray(pickled.read_bytes())
    data[len(data) // 2] ^= 0x01
    pickled.write_bytes(bytes(data))
    edited = _mlflow(chain, server, "verify", run_id)
    assert edited.returncode == ExitCode.TAMPERED, edited.stdout + edited.stderr
    size = f"{len(data):,}"
    assert f"~ logged model {model_id} (model): model.pkl: edited ({size} -> {size} bytes" in edited.stderr


def test_a_deleted_run_is_named_in_its_verdict_and_an_experiment_reports_it_apart(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    experiment = "lifecycle"
    kept, hidden = log_run(server, tmp_path, experiment), log_run(server, tmp_path, experiment)
    assert _mlflow(chain, server, "stamp", "--experiment", experiment).returncode == 0
    server.client().delete_run(hidden)

    deleted = _mlflow(chain, server, "verify", hidden)
    assert deleted.returncode == ExitCode.POLICY, deleted.stdout + deleted.stderr
    assert f"error[policy_mismatch]: run {hidden} is deleted" in deleted.stderr and "--allow-deleted" in deleted.stderr
    allowed = _mlflow(chain, server, "verify", hidden, "--allow-deleted")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "  lifecycle   deleted (accepted: --allow-deleted)" in allowed.stdout
    assert (
        json.loads(_mlflow(chain, server, "verify", hidden, "--allow-deleted", "--json").stdout)["lifecycle_stage"]
        == "deleted"
    )

    whole = _mlflow(chain, server, "verify", "--experiment", experiment)
    assert whole.returncode == ExitCode.POLICY, whole.stdout + whole.stderr
    assert f"OK: run {kept}" in whole.stdout
    assert "deleted: 1 run (hidden from the experiment, still held by the store; not accepted" in whole.stdout
    assert f"  {hidden}: verified as anchored" in whole.stdout
    assert "the experiment held 2 runs when it was stamped" in whole.stdout
    accepted = _mlflow(chain, server, "verify", "--experiment", experiment, "--allow-deleted", "--json")
    assert accepted.returncode == 0, accepted.stdout
    report = json.loads(accepted.stdout)
    assert report["runs_when_stamped"] == 2 and report["deleted"] == [hidden]
    assert sorted(r["run_id"] for r in report["runs"]) == sorted([kept, hidden])
    alone = json.loads(_mlflow(chain, server, "verify", kept, "--json").stdout)
    same = ("manifest_digest", "submitter", "anchored_block", "root", "registry", "chain_id", "lifecycle_stage")
    (listed,) = [r for r in report["runs"] if r["run_id"] == kept]
    assert {k: listed[k] for k in same} == {k: alone[k] for k in same}  # one verdict, two doors

    # a run removed for good (MLflow's `gc`) leaves the experiment one short of what was stamped
    for table in ("metrics", "latest_metrics", "params", "tags", "runs"):
        server.sql(f"DELETE FROM {table} WHERE run_uuid = ?", hidden)  # noqa: S608 - a test's own tables
    gone = _mlflow(chain, server, "verify", "--experiment", experiment, "--allow-deleted")
    assert gone.returncode == ExitCode.TAMPERED, gone.stdout + gone.stderr
    assert f"run {hidden}: anchored in the experiment's roster, gone from the store" in gone.stdout + gone.stderr


def test_a_version_is_promoted_only_on_a_proof_and_an_alias_moved_without_one_is_named(
    chain: Chain, server: TrackingServer, tmp_path: Path
) -> None:
    run_id, model_id = _train(chain, server, tmp_path)
    unstamped = _mlflow(chain, server, "promote", "digits", "--run", run_id, "--alias", "champion")
    assert unstamped.returncode == ExitCode.NOT_ANCHORED, unstamped.stdout + unstamped.stderr
    assert server.client().search_registered_models() == []  # verified first: nothing registered
    assert _mlflow(chain, server, "stamp", run_id).returncode == 0

    promoted = _mlflow(chain, server, "promote", "digits", "--run", run_id, "--alias", "champion", "--json")
    assert promoted.returncode == 0, promoted.stdout + promoted.stderr
    said = json.loads(promoted.stdout)
    assert said["version"] == "1" and said["previous"] is None and said["model_id"] == model_id
    version = server.client().get_model_version_by_alias("digits", "champion")
    digest = _anchor_tags(server, run_id)["anchor.manifest_digest"]
    assert version.version == "1" and version.tags["anchor.run_manifest_digest"] == digest
    assert version.tags["anchor.promotion_digest"] == said["promotion_digest"]
    found = run_anchor(["lookup", said["promotion_digest"]], chain.env())  # the promotion is on chain
    assert found.returncode == 0 and f"block {said['promotion_block']}" in found.stdout, found.stdout + found.stderr

    verified = _mlflow(chain, server, "verify", "models:/digits@champion")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"OK: models:/digits@champion is version 1 of digits, logged model {model_id}" in verified.stdout
    assert (
        f"  promotion   to @champion {said['promotion_digest']}: lineage record in block {said['promotion_block']}"
        f" by {said['promoted_by']}; before it no version held the alias"
    ) in verified.stdout
    by_version = json.loads(_mlflow(chain, server, "verify", "models:/digits/1", "--json").stdout)
    by_run = json.loads(_mlflow(chain, server, "verify", run_id, "--json").stdout)
    same = ("manifest_digest", "submitter", "anchored_block", "root", "registry", "chain_id", "stamps")
    assert {k: by_version["run"][k] for k in same} == {k: by_run[k] for k in same}  # one verdict, two doors

    # a second training run, registered and aliased with MLflow's own client: no promote, no proof
    other_run, other_model = _train(chain, server, tmp_path / "again")
    server.client().create_model_version("digits", f"models:/{other_model}", run_id=other_run, model_id=other_model)
    server.client().set_registered_model_alias("digits", "champion", "2")
    moved = _mlflow(chain, server, "verify", "models:/digits@champion")
    assert moved.returncode == ExitCode.NOT_ANCHORED, moved.stdout + moved.stderr
    assert "models:/digits@champion (version 2): registered without `anchor mlflow promote`" in moved.stderr

    # promoted again: the record names the version that held the alias before
    assert _mlflow(chain, server, "stamp", other_run).returncode == 0
    again = json.loads(
        _mlflow(chain, server, "promote", "digits", "--run", other_run, "--alias", "champion", "--json").stdout
    )
    assert again["version"] == "3" and again["previous"] == "2"
    champion = json.loads(_mlflow(chain, server, "verify", "models:/digits@champion", "--json").stdout)
    assert champion["version"] == "3" and champion["previous"] == {"model_version": "2", "promotion_digest": None}

    # a byte of the registered version's model file changed
    (pickled,) = server.artifacts.glob(f"*/models/{model_id}/artifacts/model.pkl")
    pickled.write_bytes(pickled.read_bytes()[:-1] + b"\x00")
    edited = _mlflow(chain, server, "verify", "models:/digits/1")
    assert edited.returncode == ExitCode.TAMPERED, edited.stdout + edited.stderr
    assert f"~ logged model {model_id} (model): model.pkl: edited" in edited.stderr
