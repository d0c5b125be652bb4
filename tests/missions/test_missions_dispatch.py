"""The dispatcher: every refusal through the CLI and through `POST /v1/missions`, each a
typed error naming the field, and nothing stored; a resume pin that is anchored and agrees is taken."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchor.errors import ExitCode
from anchor.manifest.mission import Mission
from anchor.missions.dispatch import submissions
from api.app import create_app
from api.config import ApiConfig
from tests.conftest import Chain

TOKEN = "mission-token"  # noqa: S105 - a test token
AUTH = {"Authorization": f"Bearer {TOKEN}"}
IMAGE = "ghcr.io/example/runner@sha256:" + "ab" * 32
DOCUMENT = {
    "hypothesis": "Momentum predicts next-week returns.",
    "covers": {"symbol": "SPY"},
    "budget": {"minutes": 30, "attempts": 10},
    "evaluator_policy_sha256": "44" * 32,
    "command": "python3 run.py",
}
SNAPSHOT = "22" * 32


def _valid(output: str) -> dict[str, Any]:
    mission = Mission.model_validate(DOCUMENT)
    return {
        "mission": {"ref": "mission.toml", "digest": "0x" + mission.digest.hex(), "document": DOCUMENT},
        "snapshot": {"ref": "https://data.example/snap.parquet", "sha256": SNAPSHOT},
        "image": IMAGE,
        "output": output,
        "profile": "small",
    }


@pytest.fixture
def chain(fresh_chain: Chain) -> Chain:
    fresh_chain.cli("deploy", check=True)
    return fresh_chain


@pytest.fixture
def client(chain: Chain) -> Iterator[TestClient]:
    config = ApiConfig(token_hashes=frozenset({hashlib.sha256(TOKEN.encode()).hexdigest()}))
    with TestClient(create_app(chain.settings, config)) as test_client:
        yield test_client


def _anchored_bundle(chain: Chain, tmp_path: Path, image: str = IMAGE) -> str:
    """A result bundle that binds the mission, snapshot, image and policy above, anchored; its digest."""
    (tmp_path / "out").mkdir(parents=True, exist_ok=True)
    (tmp_path / "out" / "result.json").write_text('{"sharpe": 1.1}')
    spec = tmp_path / "bundle.toml"
    spec.write_text(
        f'mission_sha256 = "{Mission.model_validate(DOCUMENT).sha256()}"\n'
        f'data_snapshot_sha256 = "{SNAPSHOT}"\nevaluator_policy_sha256 = "{"44" * 32}"\n'
        f'image = "{image}"\noutput = "out"\noutput_name = "run-1"\n'
    )
    done = chain.cli("--json", "bundle", str(spec), "--anchor", check=True)
    return str(json.loads(done.stdout)["proof"]["manifest_digest"])


def _cli_submit(chain: Chain, tmp_path: Path, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    mission = tmp_path / "mission.json"
    mission.write_text(json.dumps(request["mission"]["document"]))
    args = [
        "--json",
        "mission",
        "submit",
        "--mission",
        str(mission),
        "--snapshot",
        request["snapshot"]["ref"],
        "--image",
        request["image"],
        "--output",
        request["output"],
        "--profile",
        request["profile"],
    ]
    if request["mission"].get("digest"):
        args += ["--mission-digest", request["mission"]["digest"]]
    if request["snapshot"].get("sha256"):
        args += ["--snapshot-sha256", request["snapshot"]["sha256"]]
    for key, flag in (("bundle", "--resume-bundle"), ("digest", "--resume-digest")):
        if (request.get("resume") or {}).get(key):
            args += [flag, request["resume"][key]]
    done = chain.cli(*args)
    return done.returncode, json.loads(done.stdout or "{}")


def _refusals(tmp_path: Path, pinned: str, drifted: str) -> list[tuple[str, dict[str, Any], int, int, str]]:
    """(name, request, CLI exit code, HTTP status, field named)."""
    local = tmp_path / "snap.parquet"
    local.write_bytes(b"not the snapshot")

    def variant(change: Any) -> dict[str, Any]:
        request = copy.deepcopy(_valid("taken-output"))
        change(request)
        return request

    return [
        ("a mutable tag", variant(lambda r: r.update(image="ghcr.io/example/runner:latest")), 2, 422, "image"),
        ("no mission digest", variant(lambda r: r["mission"].pop("digest")), 2, 422, "mission.digest"),
        (
            "a mismatching mission digest",
            variant(lambda r: r["mission"].update(digest="0x" + "99" * 32)),
            4,
            409,
            "mission.digest",
        ),
        ("no snapshot SHA-256", variant(lambda r: r["snapshot"].pop("sha256")), 2, 422, "snapshot.sha256"),
        ("an output identity already used", variant(lambda r: r.update(output="first-run")), 7, 409, "output"),
        ("an unknown resource profile", variant(lambda r: r.update(profile="huge")), 2, 422, "profile"),
        ("a mistyped resource profile", variant(lambda r: r.update(profile="smal")), 2, 422, "profile"),
        ("half a resume pair", variant(lambda r: r.update(resume={"bundle": "run-1"})), 2, 422, "resume"),
        (
            "a resume pin that is not anchored",
            variant(lambda r: r.update(resume={"bundle": "run-0", "digest": "0x" + "77" * 32})),
            3,
            404,
            "resume.digest",
        ),
        (
            "a resume pin whose image drifts",
            variant(lambda r: r.update(resume={"bundle": "run-2", "digest": drifted})),
            2,
            422,
            "resume.image",
        ),
        (
            "a resume pin whose snapshot drifts",
            variant(
                lambda r: (
                    r.update(resume={"bundle": "run-1", "digest": pinned}),
                    r["snapshot"].update(sha256="33" * 32),
                )
            ),
            2,
            422,
            "resume.data_snapshot_sha256",
        ),
    ]


def test_every_refusal_of_the_door_names_its_field_and_stores_nothing(
    chain: Chain, client: TestClient, tmp_path: Path
) -> None:
    pinned = _anchored_bundle(chain, tmp_path / "b1")
    drifted = _anchored_bundle(chain, tmp_path / "b2", image="ghcr.io/example/other@sha256:" + "cd" * 32)
    code, first = _cli_submit(chain, tmp_path, _valid("first-run"))
    assert code == 0 and first["id"] == 1 and first["profile"] == {"name": "small", "cpu": "1", "memory": "2Gi"}
    stored = submissions(chain.data_dir)
    for name, request, exit_code, status, field in _refusals(tmp_path, pinned, drifted):
        code, body = _cli_submit(chain, tmp_path, request)
        assert code == exit_code and body["error"]["detail"]["field"] == field, (name, body)
        answer = client.post("/v1/missions", json=request, headers=AUTH)
        assert answer.status_code == status, (name, answer.json())
        assert set(answer.json()) == {"code", "message", "detail"} and answer.json()["detail"]["field"] == field
        assert submissions(chain.data_dir) == stored, name  # nothing written
        if name == "a mistyped resource profile":  # both doors say what was meant
            assert body["error"]["message"].endswith("(did you mean small?)"), body
            assert answer.json()["message"].endswith("(did you mean small?)")
    # the local-snapshot check is the CLI's: the service never opens a path a client names
    local = tmp_path / "snap.parquet"
    request = _valid("local-snapshot")
    request["snapshot"] = {"ref": str(local), "sha256": "11" * 32}
    code, body = _cli_submit(chain, tmp_path, request)
    assert code == ExitCode.TAMPERED and body["error"]["detail"]["field"] == "snapshot.sha256"
    assert submissions(chain.data_dir) == stored
    # and an anchored pin that agrees is taken, through either door
    resumed = _valid("second-run") | {"resume": {"bundle": "run-1", "digest": pinned}}
    answer = client.post("/v1/missions", json=resumed, headers=AUTH)
    assert answer.status_code == 201 and answer.json()["resume"] == {"bundle": "run-1", "digest": pinned[2:]}
    assert client.post("/v1/missions", json=_valid("third-run")).status_code == 401  # the door needs a token
    assert submissions(chain.data_dir) == stored + 1


@pytest.mark.parametrize("journal_url", ["postgresql"], indirect=True)
def test_one_output_identity_submitted_through_two_replicas_is_refused_by_the_second(
    chain: Chain, journal_url: str | None, tmp_path: Path
) -> None:
    """Replicas of the service share a PostgreSQL journal, each with its data dir: an output identity
    lived in each data dir's missions.sqlite, so the second replica accepted one the first had. Now
    it is claimed in the journal they share, and the second is refused by name (409), its data dir
    holding nothing."""
    import dataclasses

    config = ApiConfig(token_hashes=frozenset({hashlib.sha256(TOKEN.encode()).hexdigest()}))
    replicas = []
    for name in ("a", "b"):
        data = tmp_path / name
        data.mkdir()
        (data / "deployments").mkdir()
        for record in (chain.data_dir / "deployments").iterdir():  # the same chain and registry
            (data / "deployments" / record.name).write_bytes(record.read_bytes())
        replicas.append(dataclasses.replace(chain.settings, data_dir=data, journal_url=journal_url))
    with TestClient(create_app(replicas[0], config)) as a, TestClient(create_app(replicas[1], config)) as b:
        first = a.post("/v1/missions", json=_valid("spy-weekly-2026-12"), headers=AUTH)
        assert first.status_code == 201, first.json()
        second = b.post("/v1/missions", json=_valid("spy-weekly-2026-12"), headers=AUTH)
        assert second.status_code == 409, second.json()
        assert second.json()["detail"] == {"field": "output"} and "spy-weekly-2026-12" in second.json()["message"]
        assert b.post("/v1/missions", json=_valid("spy-weekly-2026-13"), headers=AUTH).status_code == 201
    assert submissions(replicas[0].data_dir) == 1 and submissions(replicas[1].data_dir) == 1


def test_an_output_identity_is_one_folder_of_its_own_never_the_data_dir_or_another_missions(
    chain: Chain, client: TestClient, tmp_path: Path
) -> None:
    """A mission's folder is `missions/<output>` with `/` made `_`. A client could submit output `..` (its
    folder: the data dir itself, its `result` beside the journal) or `team_run` beside an earlier
    `team/run`: one folder for two missions, and the second run renames the first one's finished result
    away as "failed". Both doors refuse such an output, naming the field; nothing is stored."""
    assert client.post("/v1/missions", json=_valid("team/run"), headers=AUTH).status_code == 201
    stored = submissions(chain.data_dir)
    for output, status, exit_code in (
        ("..", 422, 2),
        ("a/../b", 422, 2),
        ("./x", 422, 2),
        ("/abs", 422, 2),
        ("x\ny", 422, 2),
        ("team_run", 409, 7),
    ):
        answer = client.post("/v1/missions", json=_valid(output), headers=AUTH)
        assert answer.status_code == status and answer.json()["detail"]["field"] == "output", (output, answer.json())
        code, body = _cli_submit(chain, tmp_path, _valid(output))
        assert code == exit_code and body["error"]["detail"]["field"] == "output", (output, body)
        assert submissions(chain.data_dir) == stored, output
    assert "team/run" in client.post("/v1/missions", json=_valid("team_run"), headers=AUTH).json()["message"]
