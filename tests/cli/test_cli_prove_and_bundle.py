"""One file proven without its bundle; result bundles anchored and verified through the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from tests.conftest import EVAL_IMAGE, Chain, result_bundle_spec

IMAGE = EVAL_IMAGE


def _anchored_file_proof(chain: Chain, bundle: Path, tmp_path: Path) -> Path:
    chain.cli("anchor", str(bundle), check=True)
    out = tmp_path / "metrics.proof.json"
    chain.cli("prove", str(bundle / "outputs" / "metrics.json"), "--in", str(bundle), "-o", str(out), check=True)
    return out


def test_a_single_file_verifies_with_its_proof_alone(deployed_chain: Chain, bundle: Path, tmp_path: Path) -> None:
    proof_path = _anchored_file_proof(deployed_chain, bundle, tmp_path)
    lone = tmp_path / "elsewhere" / "copy.json"
    lone.parent.mkdir()
    shutil.copy(bundle / "outputs" / "metrics.json", lone)
    shutil.rmtree(bundle)  # the rest of the bundle is gone
    result = json.loads(
        deployed_chain.cli("verify", str(lone), "--proof", str(proof_path), "--json", check=True).stdout
    )
    assert result["verified"] is True and result["files"] == 1
    proof = json.loads(proof_path.read_text())
    assert "files" not in proof and proof["file"]["path"] == "outputs/metrics.json"
    assert len(proof["file"]["audit_path"]) == 3  # 5 files (4 + run-id.txt): ceil(log2(5)) siblings


def test_a_changed_single_file_exits_tampered_naming_its_anchored_path(
    deployed_chain: Chain, bundle: Path, tmp_path: Path
) -> None:
    proof_path = _anchored_file_proof(deployed_chain, bundle, tmp_path)
    target = bundle / "outputs" / "metrics.json"
    target.write_bytes(target.read_bytes().replace(b"0.9375", b"0.9999"))
    result = deployed_chain.cli("verify", str(target), "--proof", str(proof_path))
    assert result.returncode == ExitCode.TAMPERED and "outputs/metrics.json" in result.stderr


def test_prove_refuses_a_file_that_changed_since_anchoring(deployed_chain: Chain, bundle: Path, tmp_path: Path) -> None:
    deployed_chain.cli("anchor", str(bundle), check=True)
    (bundle / "config.toml").write_text("seed = 8\n")
    out = tmp_path / "p.json"
    result = deployed_chain.cli("prove", str(bundle / "config.toml"), "--in", str(bundle), "-o", str(out))
    assert result.returncode == ExitCode.TAMPERED and not out.exists()


def test_a_file_proof_whose_path_climbs_out_is_refused(deployed_chain: Chain, bundle: Path, tmp_path: Path) -> None:
    proof_path = _anchored_file_proof(deployed_chain, bundle, tmp_path)
    proof = json.loads(proof_path.read_text())
    proof["file"]["path"] = "../../etc/passwd"
    proof_path.write_text(json.dumps(proof))
    result = deployed_chain.cli("verify", str(bundle / "outputs" / "metrics.json"), "--proof", str(proof_path))
    assert result.returncode == ExitCode.BAD_INPUT and "../../etc/passwd" in result.stderr


def test_a_result_bundle_is_anchored_and_verified(deployed_chain: Chain, bundle: Path, tmp_path: Path) -> None:
    spec = result_bundle_spec(tmp_path)
    anchored = json.loads(deployed_chain.cli("bundle", str(spec), "--anchor", "--json", check=True).stdout)
    proof = anchored["proof"]
    assert proof["manifest"]["kind"] == "bundle" and proof["annotations"]["milestones"]["submitted"].startswith("2026")
    verified = json.loads(deployed_chain.cli("verify", str(bundle), "--json", check=True).stdout)
    assert verified["manifest_digest"] == proof["manifest_digest"]


def test_a_bundle_with_an_image_tag_exits_bad_input_naming_the_field(deployed_chain: Chain, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    spec = tmp_path / "bundle.toml"
    spec.write_text(
        f'mission_sha256 = "{"aa" * 32}"\ndata_snapshot_sha256 = "{"bb" * 32}"\nimage = "python:3.11"\n'
        f'evaluator_policy_sha256 = "{"cc" * 32}"\noutput = "out"\n'
    )
    result = deployed_chain.cli("bundle", str(spec), "--anchor")
    assert result.returncode == ExitCode.BAD_INPUT and "field 'image'" in result.stderr
    assert not (tmp_path / "out.anchor.json").exists()


def test_the_shipped_example_spec_anchors_and_verify_spec_names_a_changed_mission(
    deployed_chain: Chain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/result-bundle/bundle.toml, as the README uses it; then one edited input file. The spec
    and the data are checked against one reading of the proof file (it was read twice: a file replaced
    between the two reads had the spec checked against one proof and the data against another)."""
    import shutil
    import uuid

    from tests.conftest import ROOT

    shutil.copytree(ROOT / "examples" / "result-bundle", tmp_path / "result-bundle")
    spec, outputs = tmp_path / "result-bundle" / "bundle.toml", tmp_path / "result-bundle" / "outputs"
    (outputs / "run-id.txt").write_text(uuid.uuid4().hex)  # unique: the registry is write-once
    deployed_chain.cli("bundle", str(spec), "--anchor", check=True)
    ok = deployed_chain.cli("verify", str(outputs), "--spec", str(spec))
    assert ok.returncode == ExitCode.OK, ok.stderr
    import anchor.files
    from anchor.library.verifier import Verifier

    reads: list[Path] = []
    read_regular = anchor.files.read_regular
    monkeypatch.setattr(anchor.files, "read_regular", lambda p, *a: reads.append(Path(p)) or read_regular(p, *a))
    assert Verifier(deployed_chain.settings).verify(outputs, spec=spec).verified
    assert [p.name for p in reads].count("outputs.anchor.json") == 1, reads
    mission = tmp_path / "result-bundle" / "mission.toml"
    mission.write_text(mission.read_text().replace("accuracy", "f1"))
    changed = deployed_chain.cli("verify", str(outputs), "--spec", str(spec))
    assert changed.returncode == ExitCode.TAMPERED and "mission_sha256 (mission.toml)" in changed.stderr


def test_a_file_proof_is_written_beside_the_directory_never_inside_it(deployed_chain: Chain, bundle: Path) -> None:
    """By default `anchor prove` used to write into the anchored directory, and the next `verify DIR`
    reported the tool's own file as tampering. Now the proof lands in `<DIR>.proofs/` and `verify FILE`
    finds it there."""
    deployed_chain.cli("anchor", str(bundle), check=True)
    target = bundle / "outputs" / "metrics.json"
    written = json.loads(deployed_chain.cli("--json", "prove", str(target), "--in", str(bundle), check=True).stdout)
    proof = Path(written["proof_file"])
    assert proof == bundle.parent / "bundle.proofs" / "outputs" / "metrics.json.anchor.json" and proof.is_file()
    assert not list(bundle.rglob("*.anchor.json"))
    assert deployed_chain.cli("verify", str(bundle)).returncode == ExitCode.OK
    single = json.loads(deployed_chain.cli("--json", "verify", str(target), check=True).stdout)
    assert single["path_in_bundle"] == "outputs/metrics.json"


def _result_bundle(tmp_path: Path, name: str, resume: str = "", image_digest: str = "4f" * 32) -> Path:
    """A copy of examples/result-bundle with its own output (the registry is write-once and shared),
    optionally resuming the bundle whose digest is `resume`."""
    target = tmp_path / name
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "result-bundle", target)
    (target / "outputs" / "run.txt").write_text(f"{name} {tmp_path}")
    spec = target / "bundle.toml"
    text = spec.read_text().replace("4f8c0d6e7a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5", image_digest)
    text = text.split("[milestones]")[0]
    if resume:
        text += f'\n[resume]\nbundle = "part-1"\ndigest = "{resume}"\n'
    spec.write_text(text)
    return spec


def test_bundle_and_verify_refuse_a_resume_pin_the_dispatcher_would_refuse(
    deployed_chain: Chain, tmp_path: Path
) -> None:
    """A pin never anchored is not anchored (exit 3, `resume.digest`); a pin whose image (or mission,
    snapshot, policy) differs is refused naming it (exit 2, `resume.image`), by `bundle` before anything
    is anchored and by `verify` for a bundle someone anchored anyway; an agreeing, anchored pin passes."""
    first = json.loads(
        deployed_chain.cli("--json", "bundle", str(_result_bundle(tmp_path, "a")), "--anchor", check=True).stdout
    )
    pin = first["proof"]["manifest_digest"][2:]

    never = deployed_chain.cli("--json", "bundle", str(_result_bundle(tmp_path, "b", "77" * 32)), "--anchor")
    assert never.returncode == ExitCode.NOT_ANCHORED
    assert json.loads(never.stdout)["error"]["detail"]["field"] == "resume.digest"
    assert not (tmp_path / "b" / "outputs.anchor.json").exists()

    other_image = _result_bundle(tmp_path, "c", pin, image_digest="5e" * 32)
    refused = deployed_chain.cli("--json", "bundle", str(other_image))
    assert refused.returncode == ExitCode.BAD_INPUT
    assert json.loads(refused.stdout)["error"]["detail"]["field"] == "resume.image"

    good = deployed_chain.cli("bundle", str(_result_bundle(tmp_path, "d", pin)), "--anchor")
    assert good.returncode == ExitCode.OK, good.stderr
    assert deployed_chain.cli("verify", str(tmp_path / "d" / "outputs")).returncode == ExitCode.OK

    # anchored by someone who skipped the check: the bytes say resume, the verifier refuses the pin
    from anchor.anchoring.stamp import anchor_bundle
    from anchor.manifest.bundle import load_bundle_spec

    manifest, tree, out = load_bundle_spec(other_image)
    anchor_bundle(manifest, tree, deployed_chain.settings, out.with_name("outputs.anchor.json"))
    verdict = deployed_chain.cli("--json", "verify", str(out))
    assert verdict.returncode == ExitCode.BAD_INPUT
    assert json.loads(verdict.stdout)["error"]["detail"]["field"] == "resume.image"
    # the service's doors say the same (every door, the same verdict)
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.config import ApiConfig

    proof_file = out.with_name("outputs.anchor.json")
    digest = json.loads(proof_file.read_text())["manifest_digest"]
    with TestClient(create_app(deployed_chain.settings, ApiConfig(token_hashes=frozenset()))) as client:
        by_digest = client.get(f"/v1/verify/{digest}")
        uploaded = client.post("/v1/verify/proof", files={"proof": ("p.json", proof_file.read_bytes())})
    for answer in (by_digest, uploaded):
        assert answer.status_code == 422 and answer.json()["detail"]["field"] == "resume.image", answer.text


def test_a_mistyped_spec_path_is_named_before_the_proof_is_judged(deployed_chain: Chain, bundle: Path) -> None:
    """`verify DIR --spec bundle.tom`: the missing spec file, with the name that was meant, comes first
    (it said "--spec needs a result-bundle proof", a true statement about the wrong mistake)."""
    deployed_chain.cli("stamp", str(bundle), check=True)
    spec = bundle.parent / "bundle.toml"
    spec.write_text("")
    result = deployed_chain.cli("verify", str(bundle), "--spec", str(bundle.parent / "bundle.tom"))
    assert result.returncode == ExitCode.BAD_INPUT
    assert f"bundle.tom: no such bundle spec (did you mean {spec}?)" in result.stderr, result.stderr


def test_a_proof_written_inside_the_folder_it_proves_is_refused_before_anything_is_sent(
    deployed_chain: Chain, bundle: Path, tmp_path: Path
) -> None:
    """`anchor stamp DIR --out DIR/p.anchor.json` anchored (and paid for) a proof that every `verify DIR`
    then called tampered ("+ p.anchor.json"): the exclusion of proof files is recorded only when it left
    one out while hashing. stamp, prove, attest and bundle refuse such an --out (exit 2, nothing sent,
    nothing written), unless the folder's recorded rules leave it out (.git/ here)."""
    head = lambda: deployed_chain.cli("--json", "journal", "status").stdout  # noqa: E731 - nothing sent
    before = head()
    inside = deployed_chain.cli("stamp", str(bundle), "--out", str(bundle / "p.anchor.json"))
    assert inside.returncode == ExitCode.BAD_INPUT and "inside" in inside.stderr, inside.stderr
    assert not (bundle / "p.anchor.json").exists() and head() == before
    deployed_chain.cli("stamp", str(bundle), check=True)
    for args, out in (
        (
            ["prove", str(bundle / "outputs" / "metrics.json"), "--in", str(bundle)],
            bundle / "outputs" / "m.anchor.json",
        ),
        (["attest", str(bundle)], bundle / "x.intoto.jsonl"),
    ):
        refused = deployed_chain.cli(*args, "--out", str(out))
        assert refused.returncode == ExitCode.BAD_INPUT and "the folder it proves" in refused.stderr, refused.stderr
        assert not out.exists()
    spec = result_bundle_spec(tmp_path)  # its output folder is `bundle`
    before = head()
    refused = deployed_chain.cli("bundle", str(spec), "--anchor", "--out", str(bundle / "b.anchor.json"))
    assert refused.returncode == ExitCode.BAD_INPUT and "the folder it proves" in refused.stderr, refused.stderr
    assert not (bundle / "b.anchor.json").exists() and head() == before
    from anchor.anchoring.stamper import Stamper  # the library's refusal, for a Python caller as for the door
    from anchor.errors import BadInput
    from anchor.manifest.bundle import load_bundle_spec

    manifest, tree, output_dir = load_bundle_spec(spec)
    with Stamper.from_settings(deployed_chain.settings) as stamper, pytest.raises(BadInput, match="the folder it"):
        stamper._stamp_bundle(manifest, tree, output_dir / "b.anchor.json", output=output_dir)
    assert head() == before
    assert deployed_chain.cli("verify", str(bundle)).returncode == ExitCode.OK
    (bundle / ".git").mkdir()
    (bundle / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    kept = deployed_chain.cli("stamp", str(bundle), "--out", str(bundle / ".git" / "p.anchor.json"))
    assert kept.returncode == ExitCode.OK, kept.stderr
    assert deployed_chain.cli("verify", str(bundle), "--proof", str(bundle / ".git" / "p.anchor.json")).returncode == 0


def test_a_folder_that_only_gained_proof_files_says_so_beside_the_tamper_verdict(
    deployed_chain: Chain, bundle: Path
) -> None:
    """Stamping a folder inside an anchored one writes its proof into the outer one: the stamp says so
    before it writes, and `verify` of the outer folder is still `tampered` (it is not what was anchored)
    and now says why, and that the anchored files are unchanged; any other added file gets no such note."""
    deployed_chain.cli("stamp", str(bundle), check=True)
    inner = deployed_chain.cli("stamp", str(bundle / "outputs"), check=True)  # said before it is written
    assert f"is written inside {bundle}, which has an anchor of its own" in inner.stderr, inner.stderr
    outer = deployed_chain.cli("verify", str(bundle))
    assert outer.returncode == ExitCode.TAMPERED and "outputs.anchor.json" in outer.stderr
    assert "only proof or statement files were added since" in outer.stderr, outer.stderr
    (bundle / "notes.txt").write_text("added by hand\n")
    edited = deployed_chain.cli("verify", str(bundle))
    assert edited.returncode == ExitCode.TAMPERED and "only proof or statement files" not in edited.stderr


def test_a_file_in_the_way_of_a_folder_anchor_keeps_beside_the_data_is_named_and_left_alone(
    deployed_chain: Chain, tmp_path: Path
) -> None:
    """`DIR.proofs/` (per-file proofs) and `DIR.anchor-history/` (superseded proofs) are made beside the
    user's folder. A file of the user's at either name was an internal FileExistsError (exit 1); now it
    is exit 2 naming it, the file is untouched, and the re-stamp sends nothing."""
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "x").write_text("a\n")
    deployed_chain.cli("stamp", str(folder), check=True)
    for name in ("r.proofs", "r.anchor-history"):
        (tmp_path / name).write_text("mine\n")
    proved = deployed_chain.cli("prove", str(folder / "x"), "--in", str(folder))
    assert proved.returncode == ExitCode.BAD_INPUT, proved.stdout + proved.stderr
    assert f"{tmp_path / 'r.proofs'}: a file is in the way of the folder r.proofs/" in proved.stderr
    (folder / "x").write_text("b\n")
    before = deployed_chain.cli("journal", "status").stdout
    restamped = deployed_chain.cli("stamp", str(folder))
    assert restamped.returncode == ExitCode.BAD_INPUT, restamped.stdout + restamped.stderr
    assert "r.anchor-history: a file is in the way of the folder r.anchor-history/" in restamped.stderr
    assert deployed_chain.cli("journal", "status").stdout == before  # nothing journaled, nothing sent
    assert [(tmp_path / n).read_text() for n in ("r.proofs", "r.anchor-history")] == ["mine\n", "mine\n"]
