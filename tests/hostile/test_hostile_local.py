"""Hostile files and a hostile local user: a stranger's registry, planted symlinks, terminal
escapes in names, a journal row no proof writer can encode, a permissive umask."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from anchor.anchoring.service import AnchorService
from anchor.errors import ExitCode
from anchor.journal.submit import Submission
from tests.conftest import ANCHOR_BIN, Chain
from tests.journal_helpers import unique_submissions


def test_a_proof_from_a_strangers_copy_of_the_registry_is_not_our_registry(
    deployed_chain: Chain, bundle: Path, tmp_path: Path
) -> None:
    """A stranger deploys a byte-identical registry on the same chain at another address (plain CREATE:
    the canonical address can only hold the canonical deployment), records it in a data dir of theirs
    and anchors there: the proof is internally perfect, but its registry is neither the canonical one
    nor ours (exit 9), unless named explicitly."""
    from eth_account import Account

    from anchor.chain.artifact import runtime_code_hash
    from anchor.chain.canonical import canonical_address
    from anchor.chain.deployment import Deployment
    from anchor.chain.toolchain import compiler_settings
    from tests.conftest import STRANGER_KEY, lookalike_registry

    stranger_address, receipt = lookalike_registry(deployed_chain.node.rpc_url)
    assert stranger_address != canonical_address()
    record = Deployment(
        chain_id=31337,
        address=stranger_address,
        code_hash=runtime_code_hash(),
        tx_hash="0x" + bytes(receipt["transactionHash"]).hex(),
        block_number=int(receipt["blockNumber"]),
        deployer=Account.from_key(STRANGER_KEY).address,
        registry_version="4.0.0",
        compiler=compiler_settings().to_json(),
    )
    (tmp_path / "stranger" / "deployments").mkdir(parents=True)
    (tmp_path / "stranger" / "deployments" / "31337.json").write_text(json.dumps(record.model_dump()))
    env = {
        **deployed_chain.env(),
        "ANCHOR_DATA_DIR": str(tmp_path / "stranger"),
        "ANCHOR_RPC_URL": deployed_chain.node.rpc_url,
    }
    subprocess.run([str(ANCHOR_BIN), "anchor", str(bundle)], env=env, check=True, capture_output=True)
    assert (
        json.loads((bundle.parent / f"{bundle.name}.anchor.json").read_text())["anchor"]["registry"] == stranger_address
    )
    ours = deployed_chain.cli("verify", str(bundle), "--json")
    assert ours.returncode == ExitCode.UNKNOWN_REGISTRY, ours.stderr
    error = json.loads(ours.stdout)["error"]
    assert error["code"] == "unknown_registry" and error["detail"]["proof_registry"] == stranger_address
    named = deployed_chain.cli("verify", str(bundle), "--registry", stranger_address, "--json", check=True)
    verdict = json.loads(named.stdout)
    assert verdict["registry_trusted_by"] == "--registry" and verdict["registry"] == stranger_address
    wrong = deployed_chain.cli("verify", str(bundle), "--registry", "0x" + "12" * 20)
    assert wrong.returncode == ExitCode.UNKNOWN_REGISTRY and "not our registry" in wrong.stderr


def test_a_verdict_says_when_by_whom_in_which_registry_and_where_in_the_bundle(
    deployed_chain: Chain, bundle: Path
) -> None:
    deployed_chain.cli("anchor", str(bundle), check=True)
    text = deployed_chain.cli("verify", str(bundle), check=True).stdout
    deployment = json.loads((deployed_chain.data_dir / "deployments" / "31337.json").read_text())
    assert "anchored at 20" in text and "+00:00" in text  # ISO 8601, UTC
    assert "by          0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266" in text  # anvil's first account
    assert f"registry {deployment['address']} on local development chain (31337) (trusted by canonical address" in text
    deployed_chain.cli("prove", str(bundle / "outputs" / "metrics.json"), "--in", str(bundle), check=True)
    single = deployed_chain.cli("verify", str(bundle / "outputs" / "metrics.json"), check=True).stdout
    assert "as outputs/metrics.json of its bundle" in single


def test_verify_can_require_who_anchored_and_by_when(deployed_chain: Chain, bundle: Path) -> None:
    deployed_chain.cli("anchor", str(bundle), check=True)
    anvil = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
    cases = [
        (["--expect-submitter", anvil], ExitCode.OK),
        (["--expect-submitter", "0x" + "99" * 20], ExitCode.POLICY),
        (["--anchored-before", "2999-01-01"], ExitCode.OK),
        (["--anchored-before", "2000-01-01T00:00:00+00:00"], ExitCode.POLICY),
        (["--anchored-before", "next tuesday"], ExitCode.BAD_INPUT),
    ]
    for extra, code in cases:
        result = deployed_chain.cli("verify", str(bundle), *extra)
        assert result.returncode == code, (extra, result.stderr)


def test_a_symlink_planted_at_the_proof_path_is_refused_and_its_target_untouched(
    deployed_chain: Chain, bundle: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    proof = bundle.parent / "bundle.anchor.json"
    proof.symlink_to(victim)
    # and the old predictable temporary names, for the next few hundred PIDs
    for pid in range(os.getpid(), os.getpid() + 400):
        (bundle.parent / f".bundle.anchor.json.{pid}.tmp").symlink_to(victim)
    result = deployed_chain.cli("anchor", str(bundle))
    assert result.returncode == ExitCode.BAD_INPUT and "symbolic link" in result.stderr
    assert victim.read_text() == "precious"
    proof.unlink()
    deployed_chain.cli("anchor", str(bundle), check=True)
    assert victim.read_text() == "precious" and json.loads(proof.read_text())["format"] == "anchor/proof"


def test_terminal_escapes_in_a_file_name_cannot_forge_a_verdict(deployed_chain: Chain, bundle: Path) -> None:
    name = "x\r\x1b[2KOK: everything is anchored\x1b[0m"
    (bundle / name).write_text("innocent")
    deployed_chain.cli("anchor", str(bundle), check=True)
    (bundle / name).write_text("tampered")
    result = deployed_chain.cli("verify", str(bundle))
    assert result.returncode == ExitCode.TAMPERED
    assert "\x1b" not in result.stderr and "\r" not in result.stderr
    assert "\\x1b[2K" in result.stderr and result.stderr.startswith("error[tampered]")


def test_one_proof_that_cannot_be_written_fails_its_item_never_the_flush(fresh_chain: Chain, tmp_path: Path) -> None:
    """A row accepted before validation existed (a lone surrogate) and a proof path with a symlink
    planted on it: both items are anchored, their proofs reported unwritten; everything else flows."""
    fresh_chain.cli("deploy", check=True)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    planted = tmp_path / "planted.anchor.json"
    planted.symlink_to(victim)
    service = AnchorService.open(fresh_chain.settings)
    try:
        good = service.submit(unique_submissions(3))
        [trapped] = service.submit([Submission(unique_submissions(1)[0].identity, {}, None, planted)])
        [legacy] = service.submit(unique_submissions(1, tag="legacy"))
        with service.journal.tx() as db:  # what an earlier version accepted: a lone surrogate
            db.execute(
                "UPDATE items SET payload = ? WHERE id = ?", ('{"annotations": {"x": "\\ud800"}}', legacy.item_id)
            )
        service.flush()
        state = service.status()
    finally:
        service.close()
    assert state.items == {"pending": 0, "batched": 0, "confirmed": 5}
    assert {e["item"] for e in state.proof_errors} == {trapped.item_id, legacy.item_id}
    assert victim.read_text() == "precious"
    kept = AnchorService.open(fresh_chain.settings)
    try:
        assert all(kept.proof(done.digest) is not None for done in good)  # the store gives the others' proofs
    finally:
        kept.close()
    status = fresh_chain.cli("journal", "status")
    assert status.returncode == 0 and "proof files not written: 2" in status.stdout
    later = AnchorService.open(fresh_chain.settings)  # and the next flush is not stuck behind them
    try:
        later.submit(unique_submissions(2))
        later.flush()
        assert later.status().items["confirmed"] == 7
    finally:
        later.close()


def test_data_files_are_private_whatever_the_umask(fresh_chain: Chain, tmp_path: Path) -> None:
    data = tmp_path / "loose"
    env = {**fresh_chain.env(), "ANCHOR_DATA_DIR": str(data), "ANCHOR_RPC_URL": fresh_chain.node.rpc_url}
    under_umask_0 = "import os, sys; os.umask(0); os.execv(sys.argv[1], sys.argv[1:])"
    for step in ("deploy", "status"):
        subprocess.run(
            [sys.executable, "-c", under_umask_0, str(ANCHOR_BIN), step], env=env, check=True, capture_output=True
        )
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "journal.sqlite").stat().st_mode) == 0o600
    for path in data.rglob("*"):  # and, behind that, nothing writable by anyone else
        assert stat.S_IMODE(path.stat().st_mode) & 0o022 == 0, path


def test_a_new_data_dir_and_its_missing_parents_are_private_whatever_the_umask(tmp_path: Path) -> None:
    """Under umask 022 the data dir used to be 0755 (only its subdirectories were 0700): every local
    user could list its file names. A folder that already existed keeps its mode."""
    import os
    import stat

    from anchor.files import private_dir

    (tmp_path / "shared").mkdir(mode=0o755)
    old = os.umask(0o022)
    try:
        private_dir(tmp_path / "shared" / "home" / "data" / "chain")
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "shared").rglob("*")}
    assert modes == {"home": 0o700, "data": 0o700, "chain": 0o700}
    assert stat.S_IMODE((tmp_path / "shared").stat().st_mode) == 0o755  # not ours to change
