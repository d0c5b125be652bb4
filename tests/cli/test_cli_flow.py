"""The CLI end to end on a real anvil: anchor → verify, tamper, idempotence, restarts, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from anchor.chain.deployment import load_deployment
from anchor.chain.node import rpc_call
from anchor.errors import ExitCode
from tests.cli import run_anchor
from tests.conftest import Chain, free_port
from tests.public_tools import cast_verify_inclusion

ROOT_ANCHORED_TOPIC = (
    "0x" + __import__("eth_hash.auto", fromlist=["keccak"]).keccak(b"RootAnchored(bytes32,address)").hex()
)


def _root_events(chain: Chain, root: str) -> list[object]:
    address = load_deployment(chain.data_dir, 31337).address
    logs = rpc_call(
        chain.node.rpc_url,
        "eth_getLogs",
        [{"address": address, "fromBlock": "0x0", "topics": [ROOT_ANCHORED_TOPIC, root]}],
    )
    assert isinstance(logs, list)
    return logs


def test_anchor_then_verify_reads_back_from_the_chain(deployed_chain: Chain, bundle: Path) -> None:
    anchored = json.loads(deployed_chain.cli("anchor", str(bundle), "--json", check=True).stdout)
    assert anchored["status"] == "anchored" and anchored["gas_used"] <= 48_000
    verified = json.loads(deployed_chain.cli("verify", str(bundle), "--json", check=True).stdout)
    assert verified["verified"] is True
    assert verified["root"] == anchored["proof"]["batch"]["root"]
    assert verified["read_at_block"] >= verified["anchored_block"] == anchored["proof"]["anchor"]["block_number"]


def test_anchoring_the_same_bytes_again_writes_no_second_record(deployed_chain: Chain, bundle: Path) -> None:
    first = json.loads(deployed_chain.cli("anchor", str(bundle), "--json", check=True).stdout)
    second = json.loads(deployed_chain.cli("anchor", str(bundle), "--json", check=True).stdout)
    assert second["status"] == "already_anchored" and second["gas_used"] is None
    assert second["proof"]["anchor"]["tx_hash"] == first["proof"]["anchor"]["tx_hash"]
    assert len(_root_events(deployed_chain, first["proof"]["batch"]["root"])) == 1


def test_one_changed_byte_exits_tampered_and_names_the_file(deployed_chain: Chain, bundle: Path) -> None:
    deployed_chain.cli("anchor", str(bundle), check=True)
    target = bundle / "outputs" / "metrics.json"
    data = bytearray(target.read_bytes())
    data[10] ^= 0x01
    target.write_bytes(bytes(data))
    result = deployed_chain.cli("verify", str(bundle))
    assert result.returncode == ExitCode.TAMPERED
    assert "outputs/metrics.json" in result.stderr
    as_json = json.loads(deployed_chain.cli("verify", str(bundle), "--json").stdout)
    assert as_json["error"]["detail"]["changed"] == ["outputs/metrics.json"]


def test_a_tamper_verdict_reads_as_a_diff_with_sizes(deployed_chain: Chain, bundle: Path) -> None:
    deployed_chain.cli("anchor", str(bundle), check=True)
    readme_size = (bundle / "README.md").stat().st_size
    metrics = bundle / "outputs" / "metrics.json"
    old_size = metrics.stat().st_size
    metrics.write_bytes(metrics.read_bytes() + b" ")
    (bundle / "README.md").unlink()
    (bundle / "new.txt").write_text("abc")
    stderr = deployed_chain.cli("verify", str(bundle)).stderr
    assert f"  ~ outputs/metrics.json  ({old_size} -> {old_size + 1} bytes)" in stderr.splitlines()
    assert "  + new.txt  (3 bytes)" in stderr.splitlines()
    assert f"  - README.md  (was {readme_size} bytes)" in stderr.splitlines()
    assert "\x1b" not in stderr and "['" not in stderr  # not a terminal: no colour; no Python lists
    # where, as the proof says it: the verdict stops at the data, and still names the record
    proof = json.loads(bundle.with_name(bundle.name + ".anchor.json").read_text())
    assert (
        f"  anchored, as the proof file says: manifest {proof['manifest_digest']} in block"
        f" {proof['anchor']['block_number']} of local development chain (31337), registry {proof['anchor']['registry']}"
    ) in stderr.splitlines()


def test_a_rename_reads_as_one_line_and_a_single_file_tamper_as_the_same_diff(
    deployed_chain: Chain, bundle: Path
) -> None:
    """A moved file is one "renamed (same content)" line, not a + and a −; `verify FILE` against its own
    proof prints the same `~ path (a -> b bytes)` line as the folder diff, never a Python list."""
    deployed_chain.cli("anchor", str(bundle), check=True)
    deployed_chain.cli("prove", str(bundle / "config.toml"), "--in", str(bundle), check=True)
    (bundle / "README.md").rename(bundle / "READ-ME.md")
    config = bundle / "config.toml"
    size = config.stat().st_size
    config.write_bytes(config.read_bytes() + b"#")
    folder = deployed_chain.cli("verify", str(bundle))
    assert folder.returncode == ExitCode.TAMPERED
    lines = folder.stderr.splitlines()
    assert "  > README.md -> READ-ME.md  (renamed, same content)" in lines
    assert not any(line.startswith(("  + READ-ME", "  - README")) for line in lines)
    as_json = json.loads(deployed_chain.cli("verify", str(bundle), "--json").stdout)["error"]["detail"]
    assert as_json["renamed"] == [["README.md", "READ-ME.md"]] and "README.md" in as_json["removed"]
    one = deployed_chain.cli("verify", str(config))
    assert one.returncode == ExitCode.TAMPERED
    assert f"  ~ config.toml  ({size} -> {size + 1} bytes)" in one.stderr.splitlines()
    assert "['" not in one.stderr


def test_a_files_proof_inside_a_folder_is_left_out_of_the_folder_and_hash_says_what_it_left_out(
    deployed_chain: Chain, bundle: Path
) -> None:
    """`stamp FILE` writes FILE.anchor.json beside it; stamping the folder later must not bind that proof
    (re-stamping the file would then "tamper" the folder). The rule is recorded only when it matched."""
    plain = json.loads(deployed_chain.cli("--json", "hash", str(bundle), check=True).stdout)
    deployed_chain.cli("stamp", str(bundle / "config.toml"), check=True)
    assert (bundle / "config.toml.anchor.json").is_file()
    text = deployed_chain.cli("hash", str(bundle), check=True).stdout
    assert "  left out (recorded in the manifest): config.toml.anchor.json" in text.splitlines()
    listed = json.loads(deployed_chain.cli("--json", "hash", str(bundle), check=True).stdout)
    assert listed["manifest"]["exclude"] == [".git/", "*.anchor.json"]
    assert "config.toml.anchor.json" not in {f["path"] for f in listed["files"]}
    deployed_chain.cli("stamp", str(bundle), check=True)
    deployed_chain.cli("stamp", str(bundle / "config.toml"), check=True)  # the file's proof written again
    assert deployed_chain.cli("verify", str(bundle)).returncode == ExitCode.OK
    (bundle / "config.toml.anchor.json").unlink()
    again = json.loads(deployed_chain.cli("--json", "hash", str(bundle), check=True).stdout)
    assert again["manifest_digest"] == plain["manifest_digest"] and "exclude" not in again["manifest"]


def test_a_restamp_keeps_the_earlier_proof_refreshes_file_proofs_and_names_a_superseded_anchor(
    deployed_chain: Chain, bundle: Path
) -> None:
    """Re-stamping a changed folder used to replace its proof silently and leave `DIR.proofs/` pointing
    at the old anchor, so `verify FILE` said OK against it without a word."""
    first = json.loads(deployed_chain.cli("--json", "stamp", str(bundle), check=True).stdout)
    for name in ("config.toml", "README.md", "outputs/metrics.json"):
        deployed_chain.cli("prove", str(bundle / name), "--in", str(bundle), check=True)
    removed = (bundle / "README.md").read_bytes()
    (bundle / "README.md").unlink()
    (bundle / "config.toml").write_text("changed = true\n")
    again = json.loads(deployed_chain.cli("--json", "stamp", str(bundle), check=True).stdout)
    kept = Path(again["superseded_proof"])
    assert kept.parent == bundle.with_name("bundle.anchor-history")
    assert json.loads(kept.read_text())["manifest_digest"] == first["proof"]["manifest_digest"]
    proofs = bundle.with_name("bundle.proofs")
    assert sorted(again["refreshed_file_proofs"]) == sorted(
        str(proofs / n) for n in ("config.toml.anchor.json", "outputs/metrics.json.anchor.json")
    )
    assert again["stale_file_proofs"] == [str(proofs / "README.md.anchor.json")]
    text = deployed_chain.cli("stamp", str(bundle / "outputs"), check=True).stdout  # another path: no history
    assert "previous proof" not in text

    for name in ("config.toml", "outputs/metrics.json"):  # followed the new anchor: no note
        fresh = json.loads(deployed_chain.cli("--json", "verify", str(bundle / name), check=True).stdout)
        assert fresh["manifest_digest"] == again["proof"]["manifest_digest"] and fresh["superseded_by"] is None
    (bundle / "README.md").write_bytes(removed)  # the stale proof still proves what the folder held then
    old = deployed_chain.cli("verify", str(bundle / "README.md"))
    assert old.returncode == ExitCode.OK
    assert "a later stamp superseded this anchor" in old.stdout and again["proof"]["manifest_digest"] in old.stdout
    import anchor  # the library's verdict says it too: a training script is told, not only a terminal

    later = anchor.Verifier(deployed_chain.settings).verify(bundle / "README.md").superseded_by
    assert later is not None and later["manifest_digest"] == again["proof"]["manifest_digest"]
    assert later["anchored_block"] == again["proof"]["anchor"]["block_number"]


def test_many_paths_are_verified_in_one_call_a_line_each_and_the_worst_exit_code(
    deployed_chain: Chain, bundle: Path, tmp_path: Path
) -> None:
    """A CI loop verifying 1,000 files paid for a process (and web3) each: `verify A B C` and `--from`
    check each in one process, print one line each and a summary, and exit with the highest code."""
    import shutil

    other = tmp_path / "other"
    shutil.copytree(bundle, other)
    (other / "run-id.txt").write_text("another run")
    for folder in (bundle, other):
        deployed_chain.cli("stamp", str(folder), check=True)
    (other / "README.md").write_text("changed\n")
    never = tmp_path / "never-stamped"
    never.mkdir()
    result = deployed_chain.cli("verify", str(bundle), str(other), str(never))
    assert result.returncode == ExitCode.TAMPERED  # 4: the highest of 0, 4 and 3
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"OK  {bundle} (") and lines[1].startswith(f"TAMPERED  {other}: ")
    assert (
        lines[2].startswith(f"NOT_ANCHORED  {never}: ")
        and lines[3] == "1 of 3 paths verified; 2 not (highest exit code 4)"
    )
    listing = tmp_path / "paths.txt"
    listing.write_text(f"# what CI checks\n{bundle}\n\n{bundle / 'config.toml'}\n")
    deployed_chain.cli("prove", str(bundle / "config.toml"), "--in", str(bundle), check=True)
    listed = json.loads(deployed_chain.cli("--json", "verify", "--from", str(listing), check=True).stdout)
    assert listed["ok"] is True and [r["path"] for r in listed["results"]] == [str(bundle), str(bundle / "config.toml")]
    one_proof = deployed_chain.cli("verify", str(bundle), str(other), "--proof", str(tmp_path / "p.json"))
    assert one_proof.returncode == ExitCode.BAD_INPUT and "give one PATH" in one_proof.stderr


def test_added_and_removed_files_are_named(deployed_chain: Chain, bundle: Path) -> None:
    deployed_chain.cli("anchor", str(bundle), check=True)
    (bundle / "config.toml").unlink()
    (bundle / "extra.txt").write_text("new")
    detail = json.loads(deployed_chain.cli("verify", str(bundle), "--json").stdout)["error"]["detail"]
    assert (detail["added"], detail["removed"]) == (["extra.txt"], ["config.toml"])


def test_chain_state_survives_down_and_up(fresh_chain: Chain, bundle: Path) -> None:
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("anchor", str(bundle), check=True)
    fresh_chain.cli("chain", "down", check=True)
    assert json.loads(fresh_chain.cli("chain", "status", "--json").stdout)["chain"]["running"] is False
    fresh_chain.cli("chain", "up", check=True)
    assert fresh_chain.cli("verify", str(bundle)).returncode == ExitCode.OK
    again = json.loads(fresh_chain.cli("anchor", str(bundle), "--json", check=True).stdout)
    assert again["status"] == "already_anchored"


def test_a_proof_for_a_root_this_chain_never_saw_exits_not_anchored(
    deployed_chain: Chain, fresh_chain: Chain, bundle: Path, tmp_path: Path
) -> None:
    proof = tmp_path / "p.json"
    deployed_chain.cli("anchor", str(bundle), "--proof", str(proof), check=True)
    fresh_chain.cli("deploy", check=True)  # same dev account, same nonce: same registry address
    result = fresh_chain.cli("verify", str(bundle), "--proof", str(proof))
    assert result.returncode == ExitCode.NOT_ANCHORED, result.stderr
    assert "is not anchored on chain 31337" in result.stderr


def test_unreachable_rpc_exits_chain_unreachable(deployed_chain: Chain, bundle: Path) -> None:
    result = deployed_chain.cli("--rpc-url", f"http://127.0.0.1:{free_port()}", "anchor", str(bundle))
    assert result.returncode == ExitCode.CHAIN_UNREACHABLE
    assert not (bundle.parent / "bundle.anchor.json").exists()


def test_missing_path_exits_bad_input_and_writes_nothing(deployed_chain: Chain, tmp_path: Path) -> None:
    result = deployed_chain.cli("anchor", str(tmp_path / "missing"))
    assert result.returncode == ExitCode.BAD_INPUT
    assert "missing: no such file or directory" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_corrupt_proof_exits_bad_input_naming_the_field(deployed_chain: Chain, bundle: Path, tmp_path: Path) -> None:
    proof = tmp_path / "p.json"
    deployed_chain.cli("anchor", str(bundle), "--proof", str(proof), check=True)
    data = json.loads(proof.read_text())
    data["batch"]["root"] = "0x1234"
    proof.write_text(json.dumps(data))
    result = deployed_chain.cli("verify", str(bundle), "--proof", str(proof))
    assert result.returncode == ExitCode.BAD_INPUT
    assert "batch.root" in result.stderr


def test_public_tools_alone_confirm_the_inclusion(deployed_chain: Chain, bundle: Path, tmp_path: Path) -> None:
    """`cast call` on the registry's view: no Anchor code involved in the check."""
    proof_path = tmp_path / "p.json"
    deployed_chain.cli("anchor", str(bundle), "--proof", str(proof_path), check=True)
    proof = json.loads(proof_path.read_text())
    assert cast_verify_inclusion(proof, deployed_chain.node.rpc_url)


def test_lookup_finds_the_record_by_path_digest_and_root(deployed_chain: Chain, bundle: Path) -> None:
    anchored = json.loads(deployed_chain.cli("anchor", str(bundle), "--json", check=True).stdout)
    for key in (str(bundle), anchored["proof"]["manifest_digest"], anchored["proof"]["batch"]["root"]):
        found = json.loads(deployed_chain.cli("lookup", key, "--json", check=True).stdout)
        assert (found["kind"], found["tx_hash"]) == ("batch_root", anchored["proof"]["anchor"]["tx_hash"])
    missing = deployed_chain.cli("lookup", "0x" + "42" * 32)
    assert missing.returncode == ExitCode.NOT_ANCHORED


def test_lookup_of_a_git_checkout_finds_what_stamp_anchored_and_reads_as_words(
    deployed_chain: Chain, bundle: Path
) -> None:
    """A folder with .git/ in it: `stamp` leaves .git/ out, so `lookup PATH` must too (it hashed the whole
    folder and answered "nothing is anchored"); its text names fields in words, with one date, no Unix time."""
    subprocess.run(["git", "init", "-q", str(bundle)], check=True)
    anchored = json.loads(deployed_chain.cli("stamp", str(bundle), "--json", check=True).stdout)
    text = deployed_chain.cli("lookup", str(bundle), check=True).stdout
    assert text.splitlines()[0] == f"batch root {anchored['proof']['batch']['root']}"
    assert f"manifest digest  {anchored['proof']['manifest_digest']}" in text
    assert " UTC, block " in text
    assert "timestamp" not in text and "_" not in text.split("explorer")[0]  # no snake_case field names


def test_help_documents_every_exit_code() -> None:
    result = subprocess.run([sys.executable, "-m", "anchor", "--help"], capture_output=True, text=True, check=True)
    for code in ExitCode:
        assert f"{code.value}  " in result.stdout


def test_cli_start_up_imports_neither_web3_nor_solcx() -> None:
    probe = "import sys, anchor.cli.app; print(sorted(m for m in ('web3', 'solcx', 'eth_account') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_git_internals_and_ignored_files_are_left_out_and_the_rules_recorded(
    deployed_chain: Chain, bundle: Path
) -> None:
    """A results folder that is also a git repository, with scratch files: `.git/` and the
    .anchorignore patterns are left out, recorded in the manifest, and applied again by verify."""
    subprocess.run(["git", "init", "-q", str(bundle)], check=True)
    (bundle / ".anchorignore").write_text("*.tmp\n!keep.tmp\n")
    (bundle / "scratch.tmp").write_text("scratch")
    (bundle / "keep.tmp").write_text("kept")
    hashed = json.loads(
        deployed_chain.cli("hash", str(bundle), "--exclude", "outputs/predictions.csv", "--json", check=True).stdout
    )
    assert hashed["manifest"]["exclude"] == [".git/", "*.tmp", "!keep.tmp", "outputs/predictions.csv"]
    paths = [f["path"] for f in hashed["files"]]
    assert "keep.tmp" in paths and "scratch.tmp" not in paths and not any(p.startswith(".git/") for p in paths)
    deployed_chain.cli("anchor", str(bundle), "--exclude", "outputs/predictions.csv", check=True)
    (bundle / "scratch.tmp").write_text("scratch changes: excluded, not tampering")
    subprocess.run(["git", "-C", str(bundle), "add", "-A"], check=True, capture_output=True)  # .git/ changes too
    assert deployed_chain.cli("verify", str(bundle)).returncode == ExitCode.OK
    (bundle / "keep.tmp").write_text("kept, and changed")
    changed = deployed_chain.cli("verify", str(bundle))
    assert changed.returncode == ExitCode.TAMPERED and "keep.tmp" in changed.stderr
    everything = json.loads(
        deployed_chain.cli("hash", str(bundle), "--no-default-excludes", "--json", check=True).stdout
    )
    assert any(f["path"].startswith(".git/") for f in everything["files"])


def test_a_tree_without_anything_to_exclude_has_the_identity_it_always_had(bundle: Path) -> None:
    from anchor.manifest.exclude import Rules
    from anchor.manifest.filetree import hash_tree

    assert hash_tree(bundle, Rules.for_root(bundle)).identity() == hash_tree(bundle).identity()
    assert "exclude" not in hash_tree(bundle, Rules.for_root(bundle)).identity()


def test_a_symlink_is_refused_by_default_and_a_recorded_one_is_verified_by_its_target(
    deployed_chain: Chain, bundle: Path
) -> None:
    """`latest -> run3`, the link every results folder has: refused with its name and a hint by
    default; with --symlinks=record it is bound by its target, and verify names a retargeted link."""
    (bundle / "run3").mkdir()
    (bundle / "run3" / "m.json").write_text("{}")
    (bundle / "latest").symlink_to("run3")
    refused = deployed_chain.cli("anchor", str(bundle))
    assert refused.returncode == ExitCode.BAD_INPUT and "Traceback" not in refused.stderr
    assert "latest: is a symbolic link" in refused.stderr and "--symlinks=record" in refused.stderr
    assert not (bundle.parent / f"{bundle.name}.anchor.json").exists()
    deployed_chain.cli("anchor", str(bundle), "--symlinks", "record", check=True)
    assert deployed_chain.cli("verify", str(bundle)).returncode == ExitCode.OK
    (bundle / "latest").unlink()
    (bundle / "latest").symlink_to("outputs")
    (bundle / "newest").symlink_to("run3")
    result = deployed_chain.cli("verify", str(bundle))
    assert result.returncode == ExitCode.TAMPERED
    assert "  ~ latest  (link to run3 -> link to outputs)" in result.stderr.splitlines()
    assert "  + newest  (link to run3)" in result.stderr.splitlines()


def test_a_link_planted_after_anchoring_is_named_as_added_not_a_crash(deployed_chain: Chain, bundle: Path) -> None:
    deployed_chain.cli("anchor", str(bundle), check=True)
    (bundle / "outputs" / "passwd").symlink_to("/etc/passwd")
    result = deployed_chain.cli("verify", str(bundle))
    assert result.returncode == ExitCode.TAMPERED
    assert "  + outputs/passwd  (link to /etc/passwd)" in result.stderr.splitlines()


def test_stamp_writes_its_proof_once(deployed_chain: Chain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flush writes the proof where it was asked for the moment the batch confirms; `stamp` then
    wrote the same bytes a second time. Every atomic write is counted by target."""
    import anchor.anchoring.proofs
    import anchor.proof.file
    from anchor.files import atomic_write, atomic_write_many

    written: list[Path] = []

    def one(path: Path, data: bytes, *args: object, **kwargs: object) -> None:
        written.append(Path(path))
        atomic_write(path, data, *args, **kwargs)  # type: ignore[arg-type]

    def many(writes: list[tuple[Path, bytes]]) -> object:
        written.extend(Path(p) for p, _ in writes)
        return atomic_write_many(writes)

    monkeypatch.setattr(anchor.proof.file, "atomic_write", one)
    monkeypatch.setattr(anchor.anchoring.proofs, "atomic_write_many", many)
    target = tmp_path / "result.txt"
    target.write_text(f"{tmp_path.name}\n")
    deployed_chain.cli("stamp", str(target), check=True)
    proof_out = tmp_path / "result.txt.anchor.json"
    assert written.count(proof_out) == 1, written
    assert deployed_chain.cli("verify", str(target)).returncode == ExitCode.OK


def test_many_proofs_of_one_batch_read_the_chain_once_and_each_is_still_checked_on_its_own(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """`verify --from` of 20 one-file proofs of one batch asks the chain what one proof's verify asks
    (it once asked 11 calls a proof, the same receipt read for each), and the shared read hides nothing:
    a changed file is still tampered, an edited Merkle path still a bad proof, each on its own line."""
    from tests.faults.rpc_proxy import FaultyProxy

    work = tmp_path / "work"
    (work / "results").mkdir(parents=True)
    paths = []
    for n in range(20):
        (work / "results" / f"r{n:02d}.txt").write_text(f"result {n}\n")
        paths.append(f"results/r{n:02d}.txt")
    env = fresh_chain.env()
    fresh_chain.cli("deploy", check=True)
    run_anchor(["journal", "submit", *paths], env, cwd=work, check=True)
    run_anchor(["journal", "flush", "--batch-size", "20"], env, cwd=work, check=True)
    proxy = FaultyProxy(fresh_chain.node.rpc_url)
    try:
        through = {**env, "ANCHOR_RPC_URL": proxy.url}
        run_anchor(["verify", paths[0]], through, cwd=work, check=True)
        one = sum(proxy.calls.values())
        proxy.calls.clear()
        (work / "all.txt").write_text("\n".join(paths) + "\n")
        listed = run_anchor(["verify", "--from", "all.txt"], through, cwd=work)
        assert listed.returncode == 0 and listed.stdout.splitlines()[-1] == "20 of 20 paths verified"
        assert sum(proxy.calls.values()) == one and proxy.calls["eth_getTransactionReceipt"] == 1, proxy.calls
        # a changed file and an edited path among them: refused by name, the rest verified
        (work / paths[3]).write_text("result 3, improved\n")
        edited = work / f"{paths[7]}.anchor.json"
        doc = json.loads(edited.read_text())
        doc["batch"]["proof"][0] = "0x" + "11" * 32
        edited.write_text(json.dumps(doc))
        mixed = run_anchor(["verify", "--from", "all.txt"], through, cwd=work)
        lines = mixed.stdout.splitlines()
        assert lines[3].startswith(f"TAMPERED  {paths[3]}: ") and lines[7].startswith(f"BAD_PROOF  {paths[7]}: ")
        assert lines[-1] == "18 of 20 paths verified; 2 not (highest exit code 4)", lines[-1]
    finally:
        proxy.stop()


def _six_batches(chain: Chain, tmp_path: Path) -> tuple[Path, list[str]]:
    """A work dir holding 6 stamped files, each anchored in a batch of its own, listed in all.txt."""
    work = tmp_path / "work"
    (work / "results").mkdir(parents=True)
    paths = [f"results/r{n}.txt" for n in range(6)]
    for n, path in enumerate(paths):
        (work / path).write_text(f"result {n}\n")
    env = chain.env()
    chain.cli("deploy", check=True)
    run_anchor(["journal", "submit", *paths], env, cwd=work, check=True)
    run_anchor(["journal", "flush", "--batch-size", "1"], env, cwd=work, check=True)
    roots = {json.loads((work / f"{path}.anchor.json").read_text())["batch"]["root"] for path in paths}
    assert len(roots) == len(paths)
    (work / "all.txt").write_text("\n".join(paths) + "\n")
    return work, paths


def _tx(work: Path, path: str) -> str:
    return str(json.loads((work / f"{path}.anchor.json").read_text())["anchor"]["tx_hash"])


ONCE_A_CALL = {"eth_chainId": 1, "eth_getCode": 1, "eth_blockNumber": 1, "eth_getBlockByNumber": 2}
"""What a verify of many reads once for the whole call: the chain id, the code, the head, and the safe
and finalized heads."""


def test_many_proofs_of_many_batches_read_a_receipt_and_a_record_per_root_and_the_rest_once(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """`verify --from` of 6 proofs, each its own batch: per root the transaction's receipt and the
    registry's record, and nothing else per root (the inclusion is computed as the registry computes it,
    its code checked once); the chain id, the code, the head and the safe and finalized heads once for
    the whole call, every root read at that one head. After the first proof, the next proofs' receipts
    are asked in one JSON-RPC batch and their records in another: 5 + 5 calls in 2 HTTP requests."""
    from tests.faults.rpc_proxy import FaultyProxy

    work, _ = _six_batches(fresh_chain, tmp_path)
    proxy = FaultyProxy(fresh_chain.node.rpc_url)
    try:
        listed = run_anchor(
            ["verify", "--json", "--from", "all.txt"], {**fresh_chain.env(), "ANCHOR_RPC_URL": proxy.url}, cwd=work
        )
        assert listed.returncode == 0, listed.stdout + listed.stderr
        results = json.loads(listed.stdout)["results"]
        assert all(r["ok"] for r in results) and len({r["anchored_block"] for r in results}) == 6, results
        assert proxy.calls == {
            **ONCE_A_CALL,
            "eth_getTransactionReceipt": 6,
            "eth_call": 6,  # rootRecord; no verifyInclusion
        }, proxy.calls
        assert proxy.posts == sum(proxy.calls.values()) - 10 + 2, proxy.posts
    finally:
        proxy.stop()


def test_an_endpoint_slow_to_answer_a_batch_is_asked_no_other(
    fresh_chain: Chain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch answered, but after seconds, would hold every window of a verify of many as long: its
    answers are used, and the calls after it are asked alone (single calls answered at once)."""
    import time

    from tests.faults.rpc_proxy import FaultyProxy

    work, _ = _six_batches(fresh_chain, tmp_path)
    monkeypatch.setattr("anchor.readback.ahead.AHEAD", 2)  # windows of two: the first, 2, 2 and 1 more
    proxy = FaultyProxy(fresh_chain.node.rpc_url)
    proxy.mangle_batch = lambda answers: (time.sleep(2.5), answers)[1]
    try:
        listed = run_anchor(
            ["verify", "--json", "--from", "all.txt"], {**fresh_chain.env(), "ANCHOR_RPC_URL": proxy.url}, cwd=work
        )
        assert all(r["ok"] for r in json.loads(listed.stdout)["results"]), listed.stdout
        assert proxy.calls == {**ONCE_A_CALL, "eth_getTransactionReceipt": 6, "eth_call": 6}, proxy.calls
        # the first alone; the slow batch of 2 receipts, their records alone; then every call alone
        assert proxy.posts == sum(ONCE_A_CALL.values()) + 2 + 1 + 2 + 3 + 3, proxy.posts
    finally:
        proxy.stop()


def test_proof_files_that_lie_or_block_among_many_cost_their_own_verdict_and_not_the_batches(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """What is read ahead is chosen from what the next proof files claim. A transaction hash that is not
    one (which an endpoint could answer by failing the whole batch), a proof that is a FIFO (a read would
    block), and a proof naming another transaction: each gets its own verdict, the rest verify, and the
    others' reads are still asked in batches."""
    import os

    from tests.faults.rpc_proxy import FaultyProxy

    work, paths = _six_batches(fresh_chain, tmp_path)
    garbled = work / f"{paths[2]}.anchor.json"
    doc = json.loads(garbled.read_text())
    doc["anchor"]["tx_hash"] = "0x" + "zz" * 32
    garbled.write_text(json.dumps(doc))
    other = work / f"{paths[3]}.anchor.json"
    doc = json.loads(other.read_text())
    doc["anchor"]["tx_hash"] = json.loads((work / f"{paths[5]}.anchor.json").read_text())["anchor"]["tx_hash"]
    other.write_text(json.dumps(doc))
    blocking = work / f"{paths[4]}.anchor.json"
    blocking.unlink()
    os.mkfifo(blocking)
    proxy = FaultyProxy(fresh_chain.node.rpc_url)
    try:
        listed = run_anchor(
            ["verify", "--json", "--from", "all.txt"], {**fresh_chain.env(), "ANCHOR_RPC_URL": proxy.url}, cwd=work
        )
        results = {r["path"]: r for r in json.loads(listed.stdout)["results"]}
        assert [results[p]["ok"] for p in paths] == [True, True, False, False, False, True], listed.stdout
        assert results[paths[2]]["error"]["code"] == "bad_proof"
        assert results[paths[3]]["error"]["code"] == "not_anchored"
        assert "not a regular file" in results[paths[4]]["error"]["message"]
        assert proxy.posts < sum(proxy.calls.values()), (proxy.posts, proxy.calls)  # batches were asked
    finally:
        proxy.stop()


def test_batches_refused_or_answered_out_of_form_are_asked_again_one_call_at_a_time(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """A provider that takes no JSON-RPC batch is asked one once, then every call alone. A batch answer
    whose ids are not the ones asked (a call left out, one answered twice, ids moved by one), or larger
    than 64 KiB a call (answers read ahead wait in memory), is not taken at all, and no batch is asked
    again; an error answer, or a receipt of another transaction,
    leaves that one call to be asked alone. The verdicts are those without batches."""
    from tests.faults.rpc_proxy import FaultyProxy

    work, paths = _six_batches(fresh_chain, tmp_path)
    proxy = FaultyProxy(fresh_chain.node.rpc_url)
    through = {**fresh_chain.env(), "ANCHOR_RPC_URL": proxy.url}

    def verified(mangle: Any) -> None:
        proxy.mangle_batch, proxy.posts = mangle, 0
        proxy.calls.clear()
        listed = run_anchor(["verify", "--json", "--from", "all.txt"], through, cwd=work)
        results = json.loads(listed.stdout)["results"]
        assert [(r["path"], r["ok"]) for r in results] == [(p, True) for p in paths], listed.stdout

    def receipts_only(mangle: Any) -> Any:  # the records' batch (fewer than 5) as it came
        return lambda answers: mangle(answers) if len(answers) == 5 else answers

    try:
        proxy.batches = False
        verified(None)
        assert proxy.calls == {**ONCE_A_CALL, "eth_getTransactionReceipt": 6, "eth_call": 6}, proxy.calls
        assert proxy.posts == sum(proxy.calls.values()) + 1  # the one batch refused, never another
        proxy.batches = True
        for out_of_form in (
            lambda a: a[1:],  # a call left out
            lambda a: [*a, {**a[2], "result": None}],  # one answered twice
            lambda a: [{**x, "id": x["id"] + 1} for x in a],  # ids moved by one
            lambda a: [{**x, "padding": "x" * 70_000} for x in a],  # more than a call's share of memory
        ):
            verified(receipts_only(out_of_form))
            assert proxy.calls == {**ONCE_A_CALL, "eth_getTransactionReceipt": 6 + 5, "eth_call": 6}, proxy.calls
            assert proxy.posts == sum(ONCE_A_CALL.values()) + 2 + 1 + 5 + 5, proxy.posts
        other = rpc_call(fresh_chain.node.rpc_url, "eth_getTransactionReceipt", [_tx(work, paths[0])])

        def one_wrong(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
            error = {"jsonrpc": "2.0", "id": answers[1]["id"], "error": {"code": -32000, "message": "busy"}}
            return [answers[0], error, {**answers[2], "result": other}, *answers[3:]]

        verified(receipts_only(one_wrong))  # an error and another transaction's receipt: those two asked alone
        assert proxy.calls == {**ONCE_A_CALL, "eth_getTransactionReceipt": 6 + 2, "eth_call": 6}, proxy.calls
        assert proxy.posts == sum(ONCE_A_CALL.values()) + 2 + 2 + 2 + 2, proxy.posts
    finally:
        proxy.stop()


def test_a_folder_named_as_dot_from_inside_it_is_stamped_verified_and_looked_up_with_its_proof_beside_it(
    deployed_chain: Chain, tmp_path: Path
) -> None:
    """`cd results && anchor stamp .`, the first thing many type, said "unexpected ValueError; this is a bug
    in anchor" (`.` has no name to put `.anchor.json` after), and so did verify, lookup, attest, seal,
    upgrade, retract and `prove F --in .`. The folder is named by what `.` is: results.anchor.json beside it."""
    from tests.cli import run_anchor

    results = tmp_path / "results"
    (results / "outputs").mkdir(parents=True)
    (results / "outputs" / "metrics.json").write_text('{"acc": 0.9}')
    env = deployed_chain.env()
    for args in (
        ["stamp", "."],
        ["verify", "."],
        ["lookup", "."],
        ["prove", "outputs/metrics.json", "--in", "."],
        ["verify", "outputs/metrics.json"],
        ["attest", "."],
        ["seal", "."],
    ):
        done = run_anchor(args, env, cwd=results)
        assert done.returncode == ExitCode.OK, (args, done.stdout, done.stderr)
    assert (tmp_path / "results.anchor.json").is_file() and (tmp_path / "results.proofs").is_dir()
    assert not list(results.glob("*.anchor.json")) and not (results / ".anchor.json").exists()  # never inside
    inside = run_anchor(["verify", ".."], env, cwd=results / "outputs")  # `..` names the folder too
    assert inside.returncode == ExitCode.OK, inside.stderr
    # and a confirmed effect is said to be confirmed, not only "not failed", when abandoning it is refused
    [effect] = json.loads(deployed_chain.cli("--json", "journal", "status", check=True).stdout)["recent"][:1]
    kept = deployed_chain.cli("journal", "abandon", str(effect["id"]))
    assert kept.returncode == ExitCode.BAD_INPUT and f"effect #{effect['id']} is confirmed, not failed" in kept.stderr


def test_a_proof_whose_code_hash_was_edited_is_refused_even_after_its_genuine_batch_mate(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """Under --registry the proof's own code hash is what step 6 expects of the code: a verify of many
    once reused the verdict read for a genuine proof of the same root, and passed the edited one."""
    work = tmp_path / "work"
    (work / "results").mkdir(parents=True)
    paths = ["results/genuine.txt", "results/edited.txt"]
    for path in paths:
        (work / path).write_text(f"{path}\n")
    env = fresh_chain.env()
    fresh_chain.cli("deploy", check=True)
    run_anchor(["journal", "submit", *paths], env, cwd=work, check=True)
    run_anchor(["journal", "flush", "--batch-size", "2"], env, cwd=work, check=True)
    edited = work / f"{paths[1]}.anchor.json"
    doc = json.loads(edited.read_text())
    registry = doc["anchor"]["registry"]
    doc["anchor"]["code_hash"] = "0x" + "ab" * 32
    edited.write_text(json.dumps(doc))
    alone = run_anchor(["verify", "--registry", registry, paths[1]], env, cwd=work)
    both = run_anchor(["verify", "--registry", registry, *paths], env, cwd=work)
    assert alone.returncode != 0, alone.stdout + alone.stderr
    lines = both.stdout.splitlines()
    assert lines[0].startswith(f"OK  {paths[0]}") and not lines[1].startswith("OK"), both.stdout + both.stderr
