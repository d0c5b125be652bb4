"""A research claim travels as one file: `research export` writes it from a search of examples/research,
`research check` re-derives its report from it alone (with the chain stopped, in a network namespace
with no interface, so no socket could be opened), and an editor who drops an attempt, edits a metric or
swaps the champion, recomputing every hash they can, is refused by name."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import blake3
import pytest

from anchor.errors import BadInput, ExitCode, Tampered
from anchor.research.claim import check_claim
from anchor.research.ledger import GENESIS, entry_digest
from anchor.settings.session import Settings
from tests.cli import ANCHOR_BIN
from tests.conftest import Chain
from tests.research.helpers import export_example_claim as _export

pytestmark = pytest.mark.sandbox  # runs attempts as processes (bubblewrap)


def _offline_check(claim: Path, *args: str, data: Path) -> subprocess.CompletedProcess[str]:
    """`anchor research check --offline` in a network namespace of its own with no interface up: a socket
    to the chain (stopped anyway) or anywhere else would fail, so passing proves none was opened."""
    env = {"PATH": "/usr/bin:/bin", "ANCHOR_DATA_DIR": str(data), "HOME": str(data)}
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})
    return subprocess.run(
        ["unshare", "--net", str(ANCHOR_BIN), "research", "check", str(claim), "--offline", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_exported_claim_reproduces_the_online_report_offline_with_no_socket(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    done = _export(fresh_chain, tmp_path)
    online = fresh_chain.cli("research", "check", str(done.claim), check=True).stdout
    assert online.startswith(done.report)  # online, the same report, re-derived from the claim and the chain
    # a champion record edited in the work dir is not exported: the claim would not rest on the chain
    runs = fresh_chain.data_dir / "research" / "runs" / "r0"
    record = next(p for p in runs.glob("champion-*.json") if not p.name.endswith(".anchor.json"))
    kept = record.read_text()
    body = json.loads(kept)
    body["manifest"]["holdout"]["metric"]["value"] = "0.99"
    record.write_text(json.dumps(body))
    refused = fresh_chain.cli("research", "export", "-o", str(tmp_path / "second.tar"))
    assert refused.returncode == ExitCode.NOT_ANCHORED and f"{record}: edited" in refused.stderr
    assert not (tmp_path / "second.tar").exists()
    record.write_text(kept)
    fresh_chain.node.down()
    said = _offline_check(done.claim, "--trusted-block", done.trusted, data=tmp_path / "nowhere")
    assert said.returncode == ExitCode.OK, said.stderr
    assert said.stdout.startswith(done.report)  # the online report, byte for byte
    assert "(offline, no socket opened)" in said.stdout and "champion of r0: " in said.stdout
    assert "  anchored: the last checkpoint (" in said.stdout and "on local development chain (31337)" in said.stdout
    trials = [line for line in done.report.splitlines() if "anchored up to block" in line]
    assert trials and trials[0] in said.stdout  # the trial count, as anchored, re-derived from the sealed heads
    # the trust root is the reader's: without it, the hint says where to get the hash and prints none of ours
    block_hash = done.trusted.split(":")[1]
    missing = _offline_check(done.claim, data=tmp_path / "nowhere")
    assert missing.returncode == ExitCode.BAD_INPUT and block_hash not in missing.stderr + missing.stdout
    assert "cast block" in missing.stderr
    wrong = _offline_check(done.claim, "--trusted-block", done.trusted[:-1] + "0", data=tmp_path / "nowhere")
    if done.trusted.endswith("0"):
        wrong = _offline_check(done.claim, "--trusted-block", done.trusted[:-1] + "1", data=tmp_path / "nowhere")
    assert wrong.returncode == ExitCode.TAMPERED and "headers.json: block" in wrong.stderr
    assert _offline_check(done.claim, "--trusted-block", "5:0xzz", data=tmp_path / "n").returncode == 2
    # an earlier block of the claim, trusted: the later headers are not, and no hash of the claim's is offered
    number = int(done.trusted.split(":")[0]) - 1
    with tarfile.open(done.claim) as tar:
        claim_headers = json.loads(tar.extractfile("headers.json").read())  # type: ignore[union-attr]
    earlier = claim_headers["headers"][number - claim_headers["first"]]
    from eth_hash.auto import keccak

    earlier_hash = "0x" + keccak(bytes.fromhex(earlier[2:])).hex()
    short = _offline_check(done.claim, "--trusted-block", f"{number}:{earlier_hash}", data=tmp_path / "n")
    assert short.returncode == ExitCode.BAD_INPUT and f"headers run to block {number + 1}" in short.stderr
    assert block_hash not in short.stderr


# -- an editor with the claim in hand, recomputing every hash they can --------------------------------------


def _rows(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / "ledger.jsonl").read_text().splitlines()]


def _rewrite(root: Path, rows: list[dict[str, Any]]) -> None:
    """The ledger rewritten with its hash chain recomputed, the attempt files rebuilt to match, and the
    claim's index re-hashed: everything an editor without the chain can make consistent."""
    from anchor.research.anchoring import attempt_of
    from anchor.research.ledger import is_attempt

    prev, out = GENESIS, []
    for seq, row in enumerate(rows):
        fields = {k: v for k, v in row.items() if k not in ("seq", "prev", "digest")}
        entry = {**fields, "seq": seq, "prev": prev}
        if is_attempt(entry) and "attempt_digest" in entry:
            if "metric" in entry:
                from anchor.manifest.attempt import Metric

                entry["metric_hash"] = Metric.model_validate(entry["metric"]).hash().hex()
            entry["attempt_digest"] = ""
            entry["attempt_digest"] = _attempt_digest(entry)
        entry["digest"] = entry_digest(entry)
        prev = entry["digest"]
        out.append(entry)
    (root / "ledger.jsonl").write_text(
        "".join(json.dumps(e, sort_keys=True, separators=(",", ":")) + "\n" for e in out)
    )
    shutil.rmtree(root / "attempts")
    (root / "attempts").mkdir()
    for entry in out:
        if is_attempt(entry):
            (root / "attempts" / f"{entry['seq']:08d}.json").write_text(
                json.dumps(attempt_of(entry).identity(), sort_keys=True) + "\n"
            )
    _reindex(root)


def _attempt_digest(entry: dict[str, Any]) -> str:
    from anchor.manifest.attempt import AttemptManifest
    from anchor.research.anchoring import ATTEMPT_FIELDS_V5

    return AttemptManifest.model_validate({k: entry[k] for k in ATTEMPT_FIELDS_V5 if k in entry}).digest.hex()


def _reindex(root: Path) -> None:
    index = json.loads((root / "claim.json").read_text())
    index["files"] = {
        p.relative_to(root).as_posix(): blake3.blake3(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "claim.json"
    }
    (root / "claim.json").write_text(json.dumps(index, sort_keys=True, indent=1) + "\n")


@pytest.fixture
def claim_dir(fresh_chain: Chain, tmp_path: Path) -> tuple[Path, Settings, str]:
    """A claim exported as a directory, the chain stopped, and settings trusting its last block."""
    done = _export(fresh_chain, tmp_path, "claim")
    fresh_chain.node.down()
    return done.claim, Settings(data_dir=tmp_path / "nowhere", local_port=1), done.trusted


def _refused(claim: Path, settings: Settings, trusted: str) -> str:
    with pytest.raises(Tampered) as refused:
        check_claim(settings, claim, offline=True, trusted_block=[trusted])
    return refused.value.message


def test_dropping_an_attempt_from_the_claim_is_refused_naming_the_seq(claim_dir: Any) -> None:
    claim, settings, trusted = claim_dir
    assert check_claim(settings, claim, offline=True, trusted_block=[trusted]).trials == 4  # the baseline and 3
    rows = _rows(claim)
    # an attempt after the baseline, a losing one where the search had one (a search whose every
    # proposal improved has none: which it is depends on the order two researchers' rows landed in)
    attempts = [r for r in rows if "kept" in r and r.get("parent") != "0" * 40 and r.get("status") != "interrupted"]
    loser = sorted(attempts, key=lambda r: bool(r["kept"]))[0]
    trace = next(r for r in rows if r.get("event") == "started" and r["commit"] == loser["commit"])
    _rewrite(claim, [r for r in rows if r not in (loser, trace)])
    said = _refused(claim, settings, trusted)
    assert "seq" in said and ("missing" in said or "removed, reordered or rewritten" in said)


def test_editing_one_metric_is_refused_wherever_it_is_edited(claim_dir: Any) -> None:
    claim, settings, trusted = claim_dir
    pristine = claim.with_name("pristine")
    shutil.copytree(claim, pristine)
    # in the attempt's manifest alone (the index re-hashed): the ledger entry rebuilds another one
    name = sorted((claim / "attempts").glob("*.json"))[1]
    manifest = json.loads(name.read_text())
    manifest["metric"]["value"] = "0.99"
    name.write_text(json.dumps(manifest, sort_keys=True) + "\n")
    _reindex(claim)
    assert f"attempts/{name.name}: metric differs from ledger seq" in _refused(claim, settings, trusted)
    # in the ledger, its hash chain and every attempt file recomputed: the anchored heads disagree
    shutil.rmtree(claim)
    shutil.copytree(pristine, claim)
    rows = _rows(claim)
    # a losing attempt where the search had one (whether it has depends on the order rows landed in)
    edited = sorted((r for r in rows if "kept" in r and "metric" in r), key=lambda r: bool(r["kept"]))[0]
    edited["metric"]["value"] = "0.99"
    _rewrite(claim, rows)
    assert "seq" in _refused(claim, settings, trusted)
    # in the report, by a figure alone: named by its line
    shutil.rmtree(claim)
    shutil.copytree(pristine, claim)
    text = (claim / "report.txt").read_text()
    champion_line = next(line for line in text.splitlines() if "champion " in line and "val_accuracy=" in line)
    (claim / "report.txt").write_text(
        text.replace(champion_line, champion_line.replace("val_accuracy=0.", "val_accuracy=1."))
    )
    _reindex(claim)
    assert "report.txt line" in _refused(claim, settings, trusted)
    # without re-hashing the index, the edited file is named at once
    (claim / "report.txt").write_text(text + "x\n")
    assert "report.txt: edited" in _refused(claim, settings, trusted)
    # a part that is not even JSON any more: refused as tampered, never a traceback
    (claim / "report.txt").write_text(text)
    name.write_text("not json")
    _reindex(claim)
    assert "malformed" in _refused(claim, settings, trusted)


def test_swapping_the_champion_is_refused_naming_what(claim_dir: Any) -> None:
    claim, settings, trusted = claim_dir
    pristine = claim.with_name("pristine")
    shutil.copytree(claim, pristine)
    # the kept flags edited so the ledger's champion changes, its chain recomputed: a losing attempt marked
    # kept, or, in a search whose every proposal improved (the seed decides), the champion marked lost
    rows = _rows(claim)
    completed = [r for r in rows if "kept" in r and r.get("status") == "completed"]
    champion = [r for r in completed if r["kept"]][-1]
    losers = [r for r in completed if not r["kept"]]
    if losers:
        losers[-1]["kept"] = True
    else:
        champion["kept"] = False
    other = next(r for r in reversed(completed) if r["commit"] != champion["commit"])
    _rewrite(claim, rows)
    assert "seq" in _refused(claim, settings, trusted)
    # the champion record rewritten to name another commit: not what its sealed proof anchored
    shutil.rmtree(claim)
    shutil.copytree(pristine, claim)
    record = next(p for p in claim.glob("runs/r0/champion-*.json") if not p.name.endswith(".anchor.json"))
    body = json.loads(record.read_text())
    body["manifest"]["commit"] = other["commit"]
    record.write_text(json.dumps(body, sort_keys=True, indent=1))
    _reindex(claim)
    said = _refused(claim, settings, trusted)
    assert "runs/r0/champion-" in said and "edited" in said
    # a sealed checkpoint's header edited: refused by the sealed check, naming the field
    shutil.rmtree(claim)
    shutil.copytree(pristine, claim)
    checkpoint = sorted((claim / "checkpoints").glob("*.anchor.json"))[-1]
    proof = json.loads(checkpoint.read_text())
    header = proof["anchor"]["sealed"]["header"]
    proof["anchor"]["sealed"]["header"] = header[:100] + ("0" if header[100] != "0" else "1") + header[101:]
    checkpoint.write_text(json.dumps(proof, indent=1))
    _reindex(claim)
    assert f"checkpoints/{checkpoint.name}: sealed.header: does not hash to" in _refused(claim, settings, trusted)


def test_a_claim_is_never_written_over_anything_and_a_tar_with_a_link_is_refused(tmp_path: Path) -> None:
    from anchor.research.claim import export_claim

    taken = tmp_path / "claim.anchor.tar"
    taken.write_text("mine")
    settings = Settings(data_dir=tmp_path / "d", local_port=1)
    with pytest.raises(BadInput, match="already exists"):
        export_claim(settings, tmp_path, taken)
    assert taken.read_text() == "mine"
    bad = tmp_path / "linked.tar"
    with tarfile.open(bad, "w") as tar:
        link = tarfile.TarInfo("ledger.jsonl")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    with pytest.raises(Tampered, match="ledger.jsonl is neither a file nor a directory"):
        check_claim(settings, bad, offline=True, trusted_block=["1:0x" + "00" * 32])


def test_the_rest_door_refuses_what_is_no_claim_naming_the_upload_never_a_server_path(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from api.app import create_app

    settings = Settings(data_dir=tmp_path / "d", local_port=1)
    with TestClient(create_app(settings)) as client:
        junk = client.post("/v1/verify/claim", files={"claim": ("c.tar", b"not a tar at all")})
        assert junk.status_code == 422 and junk.json()["message"].startswith("claim: not a claim tar")
        assert "/tmp" not in junk.text
        alone = client.post(
            "/v1/verify/claim", params={"trusted_block": "1:0x" + "00" * 32}, files={"claim": ("c.tar", b"")}
        )
        assert alone.status_code == 422 and "offline" in alone.text


def test_an_edited_replication_or_champion_run_file_in_the_claim_is_named(claim_dir: Any) -> None:
    """The replications, the holdout and the champion's own measurement are re-read from the run dirs
    the claim carries, each re-hashed against the evidence the record or the ledger binds."""
    claim, settings, trusted = claim_dir
    pristine = claim.with_name("pristine")
    shutil.copytree(claim, pristine)
    replication = next(claim.glob("runs/r0/*.final-*/replication-0/metrics.jsonl"))
    replication.write_text(replication.read_text().replace("0.", "0.9", 1))
    _reindex(claim)
    said = _refused(claim, settings, trusted)
    assert "replication-0 of champion" in said and "metrics.jsonl" in said
    shutil.rmtree(claim)
    shutil.copytree(pristine, claim)
    record = next(claim.glob("runs/r0/champion-*.anchor.json"))  # champion-<commit12>-<trials>.anchor.json
    champion = claim / "runs" / "r0" / record.name.split("-")[1]
    (champion / "stdout.log").write_text("rewritten\n")
    _reindex(claim)
    assert "the champion of r0" in _refused(claim, settings, trusted)


def _edit_json(path: Path, edit: Any) -> None:
    body = json.loads(path.read_text())
    edit(body)
    path.write_text(json.dumps(body, sort_keys=True))


def test_a_file_added_to_a_claim_is_named_though_its_index_lists_it(claim_dir: Any) -> None:
    """A claim carries nothing the check does not bind: a note in a final run's folder ("holdout 0.99"), a
    file at its root, a researcher's runs copied under another name, a checkpoint twice under another
    length, an edited listing of a run dir. Each was accepted with the index re-hashed; each is named."""
    claim, settings, trusted = claim_dir
    verdict = check_claim(settings, claim, offline=True, trusted_block=[trusted])
    assert verdict.trials == 4 and verdict.where is not None and verdict.where["chain_id"] == 31337  # where, too
    pristine = claim.with_name("pristine")
    shutil.copytree(claim, pristine)
    final = next(claim.glob("runs/r0/*.final-*"))
    checkpoints = sorted((claim / "checkpoints").glob("*.anchor.json"))
    last = int(checkpoints[-1].name.split(".")[0])
    listing = next(claim.glob("runs/r0/*.final-*/replication-0.evidence.json"))
    edits = {
        f"{final.relative_to(claim)}/NOTES.txt": lambda: (final / "NOTES.txt").write_text("holdout 0.99\n"),
        "README.txt": lambda: (claim / "README.txt").write_text("see the figures\n"),
        "runs/r9/": lambda: shutil.copytree(claim / "runs" / "r0", claim / "runs" / "r9"),
        f"checkpoints/{last + 1:08d}.anchor.json": lambda: shutil.copy(
            checkpoints[-1], claim / "checkpoints" / f"{last + 1:08d}.anchor.json"
        ),
        str(listing.relative_to(claim)): lambda: _edit_json(listing, lambda body: body["files"][0].update(size=7)),
    }
    for named, edit in edits.items():
        shutil.rmtree(claim)
        shutil.copytree(pristine, claim)
        edit()
        _reindex(claim)
        print("EDIT", named)
        assert named in _refused(claim, settings, trusted), named


def test_a_sparse_member_is_refused_before_anything_is_read_and_no_error_names_a_path_of_ours(
    claim_dir: Any, tmp_path: Path
) -> None:
    """A 40 GiB sparse member in a 143 KB tar made every door read it whole (MemoryError, exit 1, HTTP
    500); a member that would land outside the claim named the path it resolved to on this host."""
    claim, settings, trusted = claim_dir
    huge = claim / "zz_huge.bin"
    with huge.open("wb") as f:
        f.truncate(40 << 30)
    sparse = tmp_path / "sparse.tar"
    subprocess.run(["tar", "--sparse", "--format=gnu", "-cf", str(sparse), "-C", str(claim), "."], check=True)
    assert sparse.stat().st_size < 1 << 20
    with pytest.raises(BadInput) as refused:
        check_claim(settings, sparse, offline=True, trusted_block=[trusted])
    assert "zz_huge.bin is a sparse member" in refused.value.message
    outside = tmp_path / "outside.tar"
    with tarfile.open(outside, "w") as tar:
        member = tarfile.TarInfo("../../escaped.txt")
        member.size = 1
        tar.addfile(member, io.BytesIO(b"x"))
    with pytest.raises(BadInput) as refused:
        check_claim(settings, outside, offline=True, trusted_block=[trusted], name="claim")
    assert refused.value.message.startswith("claim: ../../escaped.txt would be written outside the claim")
    assert "/tmp" not in refused.value.message and not (tmp_path.parent / "escaped.txt").exists()


def test_online_the_claims_headers_are_checked_against_the_chain_as_offline_against_the_trusted_block(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """headers.json went unread online: an edited one was accepted there (exit 0) and refused offline."""
    done = _export(fresh_chain, tmp_path, "claim")
    listing = json.loads((done.claim / "headers.json").read_text())
    header = listing["headers"][0]
    listing["headers"][0] = header[:-2] + ("00" if header[-2:] != "00" else "01")
    (done.claim / "headers.json").write_text(json.dumps(listing, indent=1) + "\n")
    _reindex(done.claim)
    said = fresh_chain.cli("research", "check", str(done.claim))
    assert said.returncode == ExitCode.TAMPERED, said.stdout + said.stderr
    assert "headers.json: block" in said.stderr and "is not the parent of block" in said.stderr


def test_the_champions_lineage_records_are_sealed_and_an_edit_of_one_is_named(claim_dir: Any) -> None:
    """Each kept commit of the champion's lineage carries its LineageAnchored receipt, sealed as a batch
    root's is: the record must hold the ledger's fields and be in a receipt the trusted block vouches for."""
    claim, settings, trusted = claim_dir
    verdict = check_claim(settings, claim, offline=True, trusted_block=[trusted])
    lineage = verdict.lineage["r0"]
    assert len(lineage) >= 1 and sorted(p.stem for p in (claim / "lineage").glob("*.json")) == sorted(lineage)
    assert verdict.lineage_by["r0"] and all(a.startswith("0x") for a in verdict.lineage_by["r0"])
    pristine = claim.with_name("pristine")
    shutil.copytree(claim, pristine)
    record = claim / "lineage" / f"{lineage[-1]}.json"
    body = json.loads(record.read_text())
    body["metric_hash"] = "0x" + "00" * 32
    record.write_text(json.dumps(body))
    _reindex(claim)
    assert f"lineage/{record.name}: metric_hash not the ledger's" in _refused(claim, settings, trusted)
    record.write_text((pristine / "lineage" / record.name).read_text())
    body = json.loads(record.read_text())
    receipt = body["sealed"]["receipt"]
    body["sealed"]["receipt"] = receipt[:-4] + ("00" if receipt[-4:-2] != "00" else "11") + receipt[-2:]
    record.write_text(json.dumps(body))
    _reindex(claim)
    assert f"lineage/{record.name}: sealed receipt" in _refused(claim, settings, trusted)
    record.unlink()
    _reindex(claim)
    assert f"lineage/{record.name}: missing" in _refused(claim, settings, trusted)


def test_a_claim_directory_with_a_link_is_refused_and_the_users_directory_is_left_as_it_was(tmp_path: Path) -> None:
    claim = tmp_path / "claim"
    claim.mkdir(mode=0o755)
    (claim / "claim.json").write_text("{}")
    (claim / "ledger.jsonl").symlink_to("/etc/hostname")
    settings = Settings(data_dir=tmp_path / "d", local_port=1)
    with pytest.raises(Tampered, match="ledger.jsonl is neither a file nor a directory"):
        check_claim(settings, claim, offline=True, trusted_block=["1:0x" + "00" * 32])
    assert claim.stat().st_mode & 0o777 == 0o755 and sorted(p.name for p in claim.iterdir()) == [
        "claim.json",
        "ledger.jsonl",
    ]


def test_a_claim_of_two_researchers_sharing_a_baseline_checks_both_champions(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """Researchers cloned from one repository share its baseline commit, and one lineage record is
    written per commit: the claim seals that one record for both lineages, holding the first measurement."""
    done = _export(fresh_chain, tmp_path, researchers=2)
    fresh_chain.node.down()
    said = _offline_check(done.claim, "--trusted-block", done.trusted, data=tmp_path / "nowhere")
    assert said.returncode == ExitCode.OK, said.stderr
    assert said.stdout.startswith(done.report)
    assert "champion of r0: " in said.stdout and "champion of r1: " in said.stdout
