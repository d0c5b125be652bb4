"""The research CLI against a real anvil: ledger tampering, a killed search resumed, four researchers."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from eth_hash.auto import keccak

from anchor.chain.deployment import load_deployment
from anchor.chain.node import rpc_call
from anchor.chain.open import open_chain, open_registry
from anchor.errors import ExitCode, Tampered
from anchor.manifest.onchain import commit_key
from anchor.research.checkpoints import LEDGER_TAG
from anchor.settings.session import runs
from tests.conftest import ANCHOR_BIN, Chain
from tests.journal_helpers import assert_exactly_once, journal_value
from tests.research.helpers import SCORE_IS_X, make_repo

pytestmark = pytest.mark.sandbox  # runs attempts, proposers or evaluators as processes (bubblewrap)

STRANGER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"  # anvil's second account
LINEAGE_TOPIC = "0x" + keccak(b"LineageAnchored(address,bytes32,bytes32,bytes32,bytes32,bool,uint64)").hex()


def _setup(tmp_path: Path, command: str = SCORE_IS_X) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1.0, "y": 3}), "README.md": "search\n"})
    contract = tmp_path / "contract.toml"
    contract.write_text(
        f'task = "t"\ncommand = "{command.replace(chr(34), chr(92) + chr(34))}"\neditable = ["params.json"]\n'
        'metric = "score"\nmode = "max"\nattempt_timeout_minutes = 1\ngrace_seconds = 1\n'
    )
    return repo, contract


def _ledger(chain: Chain) -> list[dict[str, Any]]:
    """Every row of the ledger: the attempts and their `started` traces."""
    path = chain.data_dir / "research" / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _attempts(chain: Chain) -> list[dict[str, Any]]:
    return [row for row in _ledger(chain) if "event" not in row]


def _lineage_matches_ledger(chain: Chain, entries: list[dict[str, Any]]) -> None:
    """On chain: one lineage record per kept attempt, with the ledger's fields; none for the others."""
    handle = open_chain(chain.settings, start_local=False)
    registry = open_registry(chain.settings, handle)
    firsts = {e["commit"]: e for e in reversed([e for e in entries if e["kept"]])}
    for entry in [firsts.get(e["commit"], e) for e in entries]:
        record = registry.lineage(commit_key(entry["commit"]))
        if entry["kept"]:
            assert record is not None, entry["commit"]
            assert (record.parent, record.diff_hash, record.metric_hash) == (  # fields of its first kept entry
                "0x" + commit_key(entry["parent"]).hex(),
                "0x" + entry["diff_blake3"],
                "0x" + entry["metric_hash"],
            )
        else:
            assert record is None
    address = load_deployment(chain.data_dir, 31337).address
    logs = rpc_call(
        chain.node.rpc_url, "eth_getLogs", [{"address": address, "fromBlock": "0x0", "topics": [LINEAGE_TOPIC]}]
    )
    assert isinstance(logs, list)
    # the ledger heads' own records (diffHash = LEDGER_TAG, the first word of the data) are apart from them
    attempts = [log for log in logs if not log["data"].removeprefix("0x").startswith(LEDGER_TAG.hex())]
    assert len(logs) - len(attempts) >= 1  # at least the final head's
    # researchers cloned from one repository share the baseline commit: one record per distinct commit
    assert len(attempts) == len({e["commit"] for e in entries if e["kept"]})


def test_editing_deleting_or_reordering_a_ledger_entry_is_named(fresh_chain: Chain, tmp_path: Path) -> None:
    fresh_chain.cli("deploy", check=True)
    repo, contract = _setup(tmp_path)
    fresh_chain.cli(
        "research", "run", "--repo", str(repo), "--contract", str(contract), "--max-attempts", "5", check=True
    )
    path = fresh_chain.data_dir / "research" / "ledger.jsonl"
    original = path.read_text().splitlines()
    assert fresh_chain.cli("research", "verify").returncode == ExitCode.OK
    edited = json.loads(original[3])  # the first attempt after the baseline (row 2 is its trace)
    edited["kept"] = not edited["kept"]
    cases = {
        "edited": (original[:3] + [json.dumps(edited, separators=(",", ":"), sort_keys=True)] + original[4:], 4),
        "deleted": (original[:3] + original[4:], 4),
        "reordered": (original[:1] + [original[2], original[1]] + original[3:], 2),
    }
    for name, (lines, bad_line) in cases.items():
        path.write_text("\n".join(lines) + "\n")
        result = fresh_chain.cli("research", "verify", "--json")
        assert result.returncode == ExitCode.TAMPERED, name
        assert json.loads(result.stdout)["error"]["detail"]["line"] == bad_line, name
    path.write_text("\n".join(original) + "\n")


def test_a_search_cannot_continue_under_another_contract_and_an_audit_names_a_second_one(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """Editing the pinned copy of the contract (metric direction max -> min) and continuing: the ledger
    held rows under two contract digests and `research verify` exited 0. The rows decide now: the run is
    refused (exit 7), and a ledger that holds a second digest all the same is named by the audit (exit 4)."""
    from anchor.research.ledger import Ledger

    repo, contract = _setup(tmp_path)
    run = ["research", "run", "--repo", str(repo), "--no-anchor", "--max-attempts", "2"]
    fresh_chain.cli(*run, "--contract", str(contract), check=True)
    work = fresh_chain.data_dir / "research"
    flipped = tmp_path / "flipped.toml"
    flipped.write_text(contract.read_text().replace('mode = "max"', 'mode = "min"'))
    (work / "contract.toml").write_text(flipped.read_text())  # the pinned copy, edited in place
    refused = fresh_chain.cli("--json", *run, "--contract", str(flipped))
    assert refused.returncode == ExitCode.CONFLICT, refused.stderr
    assert json.loads(refused.stdout)["error"]["detail"]["field"] == "contract"

    last = _attempts(fresh_chain)[-1]  # appended as the edited search would have: a valid hash chain
    fields = {k: v for k, v in last.items() if k not in ("seq", "prev", "digest")}
    Ledger(work / "ledger.jsonl").append({**fields, "contract_digest": "ab" * 32})
    audit = fresh_chain.cli("--json", "research", "verify")
    assert audit.returncode == ExitCode.TAMPERED, audit.stderr
    detail = json.loads(audit.stdout)["error"]["detail"]
    assert detail["field"] == "contract_digest" and detail["seq"] == last["seq"] + 1


def test_the_pinned_contract_edited_after_the_search_is_named_by_the_audit_and_the_report(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """Whoever can write the work dir widened the pinned contract's `editable` after the search (so a
    commit that touched the evaluator would pass the commit audit) and `research verify` said OK: the
    audit, the noise replay, the champion records and the report's methods table all read the pinned
    copy without comparing it with the contract the search pre-registered (anchored before any attempt
    ran, its digest in every row). Now each names the file."""
    repo, contract = _setup(tmp_path)
    fresh_chain.cli(
        "research", "run", "--repo", str(repo), "--contract", str(contract), "--max-attempts", "2", check=True
    )
    pinned = fresh_chain.data_dir / "research" / "contract.toml"
    assert fresh_chain.cli("research", "verify").returncode == ExitCode.OK
    assert fresh_chain.cli("research", "report", "--format", "markdown").returncode == ExitCode.OK
    pinned.write_text(pinned.read_text().replace("editable = [", 'editable = ["evaluate.py", '))
    for command in (["research", "verify"], ["research", "report", "--format", "markdown"]):
        result = fresh_chain.cli("--json", *command)
        assert result.returncode == ExitCode.TAMPERED, (command, result.stdout, result.stderr)
        error = json.loads(result.stdout)["error"]
        assert (
            error["detail"]["file"] == str(pinned) and "edited since the search was scored under it" in error["message"]
        ), error


def test_a_search_killed_mid_attempt_reaps_its_orphan_and_resumes_from_anchored_checkpoints(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    fresh_chain.cli("deploy", check=True)
    hang = tmp_path / "hang"
    # the hanging attempt marks its run dir, so the test finds that one and not one that started just
    # before the flag appeared and is about to finish
    repo, contract = _setup(tmp_path, f"test -f {hang} && touch {{run_dir}}/hanging && sleep 29.7; " + SCORE_IS_X)
    # --no-sandbox: the hang flag lives in /tmp, which a sandboxed attempt cannot see; unconfined, the
    # attempt's group also outlives a SIGKILLed harness (bwrap --die-with-parent would not), which is
    # what the resumed search must clean up
    argv = [
        str(ANCHOR_BIN),
        "research",
        "run",
        "--repo",
        str(repo),
        "--contract",
        str(contract),
        "--max-attempts",
        "8",
        "--max-failures",
        "8",
        "--no-sandbox",
        "--checkpoint-every",
        "1",
    ]
    search = subprocess.Popen(
        argv, env=fresh_chain.env(), start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while len(_attempts(fresh_chain)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    hang.touch()  # the next attempt hangs in its command ...
    runs = fresh_chain.data_dir / "research" / "runs" / "r0"
    orphan: list[int] = []
    while time.monotonic() < deadline and not orphan:
        scored = {e["commit"][:12] for e in _attempts(fresh_chain)}
        orphan = [
            json.loads(p.read_text())["pgid"]
            for p in runs.glob("*/process.json")
            if p.parent.name not in scored and (p.parent / "hanging").exists()
        ]
        time.sleep(0.05)
    rows = _ledger(fresh_chain)
    hung = rows[-1]  # its trace: written before the command ran
    assert hung.get("event") == "started" and hung["commit"][:12] not in scored
    before_kill = len(_attempts(fresh_chain))
    assert 3 <= before_kill < 8
    # the checkpoints' background flusher catches up while the attempt hangs (awaited, not slept): every
    # row up to the last outcome (the trace after it is anchored with the next checkpoint)
    while time.monotonic() < deadline and _anchored_length(fresh_chain) != len(rows) - 1:
        time.sleep(0.1)
    os.killpg(search.pid, signal.SIGKILL)  # ... and the harness dies in the middle of it (its own group only)
    search.wait()
    [pgid] = orphan
    assert _group_alive(pgid), "the unconfined attempt should have outlived the SIGKILLed harness"
    # every attempt up to the last checkpoint is on chain, read back with the harness dead
    assert _anchored_length(fresh_chain) == len(rows) - 1 and len(_ledger(fresh_chain)) == len(rows)
    hang.unlink()
    fresh_chain.cli(*argv[1:], check=True)
    assert not _group_alive(pgid), "the resumed search did not stop the attempt its predecessor left running"
    entries = _attempts(fresh_chain)
    assert len(entries) == 8
    assert len({e["commit"] for e in entries}) == 8  # no commit measured twice
    [closed] = [e for e in entries if e["commit"] == hung["commit"]]  # the killed attempt, on record
    assert closed["status"] == "interrupted" and closed["started_seq"] == hung["seq"] and not closed["kept"]
    assert fresh_chain.cli("research", "verify").returncode == ExitCode.OK
    _lineage_matches_ledger(fresh_chain, entries)


def _anchored_length(chain: Chain) -> int:
    """Entries 0..n-1 anchored by the checkpoints, as `research verify` reads them back from the chain."""
    checked = json.loads(chain.cli("--json", "research", "verify").stdout or "{}")
    return int((checked.get("anchored") or {}).get("length") or 0)


def _group_alive(pgid: int) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                state, _, group = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
                if int(group) == pgid and runs(int(entry.name), state):
                    return True
    return False


def test_four_researchers_times_25_attempts_agree_with_the_chain(fresh_chain: Chain, tmp_path: Path) -> None:
    fresh_chain.cli("deploy", check=True)
    repo, contract = _setup(tmp_path)
    result = fresh_chain.cli(
        "research",
        "run",
        "--repo",
        str(repo),
        "--contract",
        str(contract),
        "--researchers",
        "4",
        "--max-attempts",
        "25",
        "--max-failures",
        "25",
        "--json",
        check=True,
    )
    summary = json.loads(result.stdout)
    entries = _attempts(fresh_chain)
    assert sorted({e["researcher"] for e in entries}) == ["r0", "r1", "r2", "r3"]
    assert all(sum(e["researcher"] == r for e in entries) == 25 for r in ("r0", "r1", "r2", "r3"))
    # one chain, nothing lost or interleaved badly: 100 attempts, each after its own trace, and a
    # `rejected` event for each proposal the guard turned away (repeats: never run, no trial)
    rows = _ledger(fresh_chain)
    assert [e["seq"] for e in rows] == list(range(len(rows)))
    assert sum(1 for e in rows if e.get("event") != "rejected") == 200
    assert sum(1 for e in rows if e.get("event") == "rejected") == sum(r["rejected"] for r in summary["researchers"])
    assert len({e["seq"] for e in entries}) == 100
    assert all(e["status"] != "interrupted" for e in entries)
    assert len({(e["researcher"], e["commit"]) for e in entries}) == 100
    assert fresh_chain.cli("research", "verify").returncode == ExitCode.OK
    assert summary["anchored"]["attempts"] == 100
    items = int(journal_value(fresh_chain.data_dir, "SELECT count(*) FROM items"))
    # each researcher checkpointed the shared ledger while it ran: one head per distinct length
    heads = list((fresh_chain.data_dir / "research" / "checkpoints").glob("*.anchor.json"))
    assert len(heads) > 4 and any(h.name == f"{len(rows):08d}.anchor.json" for h in heads)
    assert items == 100 + 1 + len(heads)  # attempts, pre-registered contract, ledger heads
    assert_exactly_once(fresh_chain.node.rpc_url, fresh_chain.data_dir, items)
    _lineage_matches_ledger(fresh_chain, entries)


def _rewritten(entries: list[dict[str, Any]]) -> str:
    """The ledger an operator would write after editing it: seq, prev and digests recomputed, so the
    hash chain alone checks out."""
    from anchor.manifest.canonical import canonical_json
    from anchor.research.ledger import GENESIS, entry_digest

    prev, lines = GENESIS, []
    for seq, original in enumerate(entries):
        entry = {**original, "seq": seq, "prev": prev}
        entry["digest"] = prev = entry_digest(entry)
        lines.append(canonical_json(entry).decode())
    return "\n".join(lines) + "\n"


def test_a_ledger_rewritten_without_its_losers_reordered_or_truncated_is_caught_by_the_chain(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """The ledger head is anchored at checkpoints while the search runs; verify reads every one back.
    Dropping the losing attempts and recomputing the hash chain (so the ledger checks itself), reordering,
    or cutting entries after a checkpoint: each is tampered, naming the seq."""
    fresh_chain.cli("deploy", check=True)
    repo, contract = _setup(tmp_path)
    fresh_chain.cli(
        "research",
        "run",
        "--repo",
        str(repo),
        "--contract",
        str(contract),
        "--max-attempts",
        "8",
        "--checkpoint-every",
        "2",
        check=True,
    )
    path = fresh_chain.data_dir / "research" / "ledger.jsonl"
    original = path.read_text()
    entries = [json.loads(line) for line in original.splitlines()]
    assert len(list((path.parent / "checkpoints").glob("*.anchor.json"))) >= 3  # during the run, not only at its end
    ok = fresh_chain.cli("research", "verify")
    assert ok.returncode == ExitCode.OK and f"anchored checkpoints agree; entries 0..{len(entries) - 1}" in ok.stdout
    # the same verdict through the API (the research verdict is the library's, not the CLI's)
    from fastapi.testclient import TestClient

    from api.app import create_app

    cli = json.loads(fresh_chain.cli("research", "verify", "--json", check=True).stdout)
    with TestClient(create_app(fresh_chain.settings)) as client:
        search = client.get("/v1/research/r0/attempts").json()["attempts"][0]["search"]
        served = client.get(f"/v1/research/searches/{search}/verify")
        assert served.status_code == 200, served.text
        verdict = served.json()
        assert (verdict["entries"], verdict["head"], verdict["anchored_length"], verdict["commits"]) == (
            cli["entries"],
            cli["head"],
            cli["anchored"]["length"],
            cli["audit"]["commits"],
        )
        assert str(tmp_path) not in served.text  # no path of the server's
        assert client.get("/v1/research/searches/000000000000/verify").status_code == 404
        report = json.loads(fresh_chain.cli("research", "report", "--json", check=True).stdout)
        figures = client.get(f"/v1/research/searches/{search}/report")  # the report's door in the API
        assert figures.status_code == 200, figures.text
        assert {**figures.json(), "ok": True} == report and str(tmp_path) not in figures.text
        assert client.get("/v1/research/searches/000000000000/report").status_code == 404
    assert report["anchored_trials"] == len([e for e in entries if "event" not in e])  # attempts, not traces
    import anchor.research

    assert {**anchor.research.report_search(fresh_chain.settings, path.parent).data, "ok": True} == report

    kept = [e for e in entries if e.get("kept")]
    assert len(kept) < len(entries)  # there were losers (and traces) to drop
    path.write_text(_rewritten(kept))
    dropped = fresh_chain.cli("research", "verify", "--json")
    assert dropped.returncode == ExitCode.TAMPERED  # the hash chain alone would say OK
    assert json.loads(dropped.stdout)["error"]["detail"]["seq"] <= len(kept)
    from anchor.research.verdict import verify_search

    with pytest.raises(Tampered) as caught:  # the library's verdict is the CLI's
        verify_search(fresh_chain.settings, path.parent)
    assert caught.value.detail["seq"] == json.loads(dropped.stdout)["error"]["detail"]["seq"]

    path.write_text(_rewritten([entries[0], entries[2], entries[1], *entries[3:]]))
    reordered = fresh_chain.cli("research", "verify", "--json")
    assert reordered.returncode == ExitCode.TAMPERED
    assert json.loads(reordered.stdout)["error"]["detail"]["seq"] >= 1

    path.write_text("".join(line + "\n" for line in original.splitlines()[:-1]))  # a valid chain, one short
    truncated = fresh_chain.cli("research", "verify", "--json")
    assert truncated.returncode == ExitCode.TAMPERED
    assert json.loads(truncated.stdout)["error"]["detail"]["seq"] == len(entries) - 1

    path.write_text(original)
    assert fresh_chain.cli("research", "verify").returncode == ExitCode.OK


def test_a_trial_dropped_with_every_checkpoint_proof_deleted_is_caught_from_the_chain_alone(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """Deleting `checkpoints/` together with rewriting the ledger (one losing trial dropped, the hash
    chain recomputed) passed as "checked against itself only": the proofs were the only way to the
    anchored heads. Each head now has its own lineage record, found by the contract digest (an
    indexed topic), so verify names the rewrite without them. A record planted by a stranger for the
    same contract is listed as not trusted, never compared: it cannot fail an honest ledger."""
    from eth_account import Account

    from anchor.chain.keys import Signer, load_signer
    from anchor.research.anchoring import checkpoint_record, contract_digest

    fresh_chain.cli("deploy", check=True)
    repo, contract = _setup(tmp_path)
    fresh_chain.cli(
        "research",
        "run",
        "--repo",
        str(repo),
        "--contract",
        str(contract),
        "--max-attempts",
        "6",
        "--checkpoint-every",
        "2",
        check=True,
    )
    work = fresh_chain.data_dir / "research"
    stranger = Signer(Account.from_key(STRANGER_KEY), "stranger")
    registry = open_registry(fresh_chain.settings, open_chain(fresh_chain.settings, start_local=False))
    digest = contract_digest(work / "contract.toml")
    path, original = work / "ledger.jsonl", (work / "ledger.jsonl").read_text()
    genesis = json.loads(original.splitlines()[0])["digest"]
    registry.anchor_lineage(stranger, *checkpoint_record("ee" * 32, 3, digest, genesis))  # a lie about this search
    # the same operator's second search of the same contract (another first row): another ledger, not a rewrite
    registry.anchor_lineage(load_signer(31337), *checkpoint_record("dd" * 32, 40, digest, "0c" * 32))
    shutil.rmtree(work / "checkpoints")
    honest = fresh_chain.cli("--json", "research", "verify")
    assert honest.returncode == ExitCode.OK, honest.stdout + honest.stderr
    found = json.loads(honest.stdout)["checkpoint_records"]
    assert found["checkpoints"] >= 3 and found["length"] == len(original.splitlines())
    assert found["others"] == [stranger.address]  # listed, not trusted
    assert found["other_ledgers"] == [["0c" * 24, 40]]
    assert json.loads(honest.stdout)["anchored"] is None  # no proof file left: this was the chain alone

    entries = [json.loads(line) for line in original.splitlines()]
    loser = next(i for i, e in enumerate(entries) if e.get("kept") is False and "event" not in e)
    path.write_text(_rewritten([e for i, e in enumerate(entries) if i not in (loser - 1, loser)]))  # and its trace
    dropped = fresh_chain.cli("--json", "research", "verify")
    assert dropped.returncode == ExitCode.TAMPERED, dropped.stdout
    error = json.loads(dropped.stdout)["error"]
    assert "found without a proof file" in error["message"] and error["detail"]["seq"] <= len(entries) - 2
    typo = fresh_chain.cli("research", "verify", "--researcher-address", "0x123")
    assert typo.returncode == ExitCode.BAD_INPUT
    assert "--researcher-address '0x123': expected an address, 0x and 40 hex digits" in typo.stderr


def test_the_evaluators_number_is_the_one_anchored_on_chain_not_the_agents(fresh_chain: Chain, tmp_path: Path) -> None:
    """The lineage record of each kept attempt carries the hash of the evaluator's metric; the number
    the edited code wrote in its own metrics file is only a flagged claim."""
    from anchor.manifest.attempt import Metric

    fresh_chain.cli("deploy", check=True)
    repo = make_repo(
        tmp_path / "repo",
        {
            "params.json": json.dumps({"x": 1.0, "y": 3}),
            "README.md": "search\n",
            "eval.py": (
                "import json,sys\nprint(json.dumps({'score': json.load(open(sys.argv[1]+'/out.json'))['x'] / 4}))\n"
            ),
        },
    )
    attempt = (
        "python3 -c \"import json,sys; x=json.load(open('params.json'))['x'];"
        " json.dump({'x': x}, open(sys.argv[1]+'/out.json','w'));"
        " json.dump({'score': 99}, open(sys.argv[1]+'/metrics.json','w'))\" {run_dir}"
    )
    contract = tmp_path / "contract.toml"
    contract.write_text(
        f'task = "t"\ncommand = "{attempt.replace(chr(34), chr(92) + chr(34))}"\neditable = ["params.json"]\n'
        'metric = "score"\nmode = "max"\nattempt_timeout_minutes = 1\n'
        'metric_source = "evaluator:python3 eval.py {run_dir}"\nevaluator_files = ["eval.py"]\n'
    )
    fresh_chain.cli(
        "research", "run", "--repo", str(repo), "--contract", str(contract), "--max-attempts", "4", check=True
    )
    entries = _attempts(fresh_chain)
    assert all(e["measured_by"]["source"] == "evaluator" and e["claims_differ"] for e in entries)
    registry = open_registry(fresh_chain.settings, open_chain(fresh_chain.settings, start_local=False))
    for entry in (e for e in entries if e["kept"]):
        record = registry.lineage(commit_key(entry["commit"]))
        assert record is not None
        theirs = Metric.of("score", "max", 99).hash().hex()
        assert record.metric_hash == "0x" + entry["metric_hash"] != "0x" + theirs
    assert all(json.loads(e["claims"]) == {"score": 99, "from": "metrics.json"} for e in entries)
    assert entries[0]["metric"]["value"] == "0.25"  # the baseline: x = 1.0, scored x / 4 by the evaluator
    assert fresh_chain.cli("research", "verify").returncode == ExitCode.OK


def test_four_researchers_times_25_attempts_share_one_postgres_ledger(
    fresh_chain: Chain, tmp_path: Path, postgres_url: str
) -> None:
    """ANCHOR_JOURNAL_URL=postgresql://…: four researchers, each its own process, clone and work dir (as
    the pods of the rendered Job are), append to one ledger in the database; the chain, checkpoints
    and anchoring are the same as with the file, and each researcher's audit is green."""
    from anchor.research.ledger import PgLedger

    fresh_chain.cli("deploy", check=True)
    repo, contract = _setup(tmp_path)
    env = {**fresh_chain.env(), "ANCHOR_JOURNAL_URL": postgres_url, "ANCHOR_LEDGER_NAME": "team"}
    env["ANCHOR_DEBUG"] = "1"  # an internal error seen once under load (FileNotFoundError): its traceback, if again

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(ANCHOR_BIN), *args], env=env, capture_output=True, text=True, timeout=300)

    researchers = []
    for k in range(4):
        clone = tmp_path / f"clone-r{k}"
        subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
        argv = [
            str(ANCHOR_BIN),
            "--json",
            "research",
            "run",
            "--repo",
            str(clone),
            "--contract",
            str(contract),
            "--workdir",
            str(tmp_path / f"work-r{k}"),
            "--researcher",
            f"r{k}",
            "--max-attempts",
            "25",
            "--max-failures",
            "25",
        ]
        researchers.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [r.communicate(timeout=600) for r in researchers]
    assert [r.returncode for r in researchers] == [0, 0, 0, 0], [(out[-1000:], err[-1000:]) for out, err in outputs]
    ledger = PgLedger(postgres_url, tmp_path / "work-r0", "team")
    rows, entries = ledger.rows(), ledger.entries()
    assert [r["seq"] for r in rows] == list(range(len(rows)))  # one chain, nothing lost
    assert sum(1 for r in rows if r.get("event") != "rejected") == 200  # 100 attempts, each after its own trace
    assert all(sum(e["researcher"] == r for e in entries) == 25 for r in ("r0", "r1", "r2", "r3"))
    assert len({(e["researcher"], e["commit"]) for e in entries}) == 100 and len({e["seq"] for e in entries}) == 100
    for k in range(4):  # each researcher's evidence is in its own work dir: its audit, with the whole chain
        verified = cli(
            "--json", "research", "verify", "--workdir", str(tmp_path / f"work-r{k}"), "--researcher", f"r{k}"
        )
        assert verified.returncode == ExitCode.OK, verified.stdout + verified.stderr
        assert json.loads(verified.stdout)["audit"]["evidence"] == 25
    # ANCHOR_JOURNAL_URL puts the anchoring journal in that database too, beside the ledger
    items = int(journal_value(fresh_chain.data_dir, "SELECT count(*) FROM items", postgres_url))
    assert items > 0 and not (fresh_chain.data_dir / "journal.sqlite").exists()
    assert_exactly_once(fresh_chain.node.rpc_url, fresh_chain.data_dir, items, postgres_url)
    _lineage_matches_ledger(fresh_chain, entries)
    attempt_items = int(
        journal_value(fresh_chain.data_dir, "SELECT count(*) FROM items WHERE kind = 'attempt'", postgres_url)
    )
    assert attempt_items == 100  # every attempt anchored exactly once
    # read-back for the team: the service lists a researcher's attempts from the database
    import urllib.request

    from tests.api_server import serving_api

    with serving_api(env) as url, urllib.request.urlopen(f"{url}/v1/research/r2/attempts?limit=500") as answer:  # noqa: S310
        page = json.loads(answer.read())
    assert page["total"] == 25 and {a["commit"] for a in page["attempts"]} == {
        e["commit"] for e in entries if e["researcher"] == "r2"
    }


def test_two_researchers_on_one_ledger_adjust_over_the_teams_trials_on_either_backend(
    backend_chain: Chain, tmp_path: Path
) -> None:
    """two researchers share one ledger (a file with the SQLite journal, PostgreSQL with
    ANCHOR_JOURNAL_URL); each champion record's `team_trials` is every researcher's measured attempts
    before its head, recomputed from the ledger here, and the adjusted figure is over that many."""
    from tests.conftest import ROOT

    backend_chain.cli("deploy", check=True)
    example = ROOT / "examples" / "research"
    repo = make_repo(tmp_path / "repo", {n: (example / n).read_text() for n in ("train.py", "params.json", "data.csv")})
    ran = backend_chain.cli(
        "research",
        "run",
        "--repo",
        str(repo),
        "--contract",
        str(example / "contract.toml"),
        "--researchers",
        "2",
        "--max-attempts",
        "3",
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads(backend_chain.cli("research", "report", "--json", check=True).stdout)
    verified = json.loads(backend_chain.cli("research", "verify", "--json", check=True).stdout)
    assert verified["entries"] >= 12 and verified["final_runs"] == 8  # 2 x (3 replications + the holdout)
    finals = {who: stats["final"] for who, stats in report["researchers"].items()}
    assert set(finals) == {"r0", "r1"}
    records = {}
    for who in finals:
        (path,) = sorted((backend_chain.data_dir / "research" / "runs" / who).glob("champion-*-*[0-9].json"))
        records[who] = json.loads(path.read_text())["manifest"]
    for who, record in records.items():
        final = finals[who]
        assert final["team_trials"] == record["team_trials"] >= record["trials"] == 3
        assert final["adjusted_over"] == record["team_trials"]  # the team's count, not the researcher's 3
    later = max(records.values(), key=lambda r: r["ledger_length"])
    assert later["team_trials"] > later["trials"]  # the other researcher's baseline came before its head
    said = backend_chain.cli("research", "report", check=True).stdout
    assert f"selected from 3 trials (the team's: {later['team_trials']})" in said


def test_research_verify_recomputes_a_noise_rule_and_refuses_a_lowered_threshold(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """a `keep = "noise"` search's report gives the calibration and each decision;
    a ledger rewritten (its hash chain recomputed) with a lower threshold is exit 4."""
    repo, contract = _setup(tmp_path)
    contract.write_text(contract.read_text() + 'keep = "noise"\nnoise_replications = 3\nnoise_sigmas = 2\n')
    ran = fresh_chain.cli(
        "research", "run", "--repo", str(repo), "--contract", str(contract), "--max-attempts", "4", "--no-anchor"
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = fresh_chain.cli("research", "report", check=True).stdout
    assert "keep rule: noise (pre-registered): the baseline re-measured 3x, spread 0 (sample stdev)" in report
    ok = fresh_chain.cli("research", "verify")
    assert ok.returncode == ExitCode.OK and "keep rule of r0: noise, recomputed from its 3 bound baseline" in ok.stdout
    path = fresh_chain.data_dir / "research" / "ledger.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text(_rewritten([{**r, "sigmas": "1"} if r.get("event") == "noise" else r for r in rows]))
    edited = fresh_chain.cli("research", "verify", "--json")
    assert edited.returncode == ExitCode.TAMPERED, edited.stdout
    assert json.loads(edited.stdout)["error"]["detail"]["field"] == "keep_rule"


def test_research_verify_names_a_champion_whose_lineage_record_its_researcher_retracted(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """`anchor retract COMMIT` withdraws a kept attempt's lineage record on chain; the ledger
    still holds, and `research verify` says retracted (exit 16), naming the commit and its researcher."""
    fresh_chain.cli("deploy", check=True)
    repo, contract = _setup(tmp_path)
    fresh_chain.cli(
        "research", "run", "--repo", str(repo), "--contract", str(contract), "--max-attempts", "3", check=True
    )
    assert fresh_chain.cli("research", "verify").returncode == ExitCode.OK
    champion = [e for e in _attempts(fresh_chain) if e["kept"]][-1]["commit"]
    assert fresh_chain.cli("retract", champion[:12], "--reason", "x").returncode == ExitCode.BAD_INPUT  # a prefix
    fresh_chain.cli("retract", champion, "--reason", "the evaluator read the holdout", check=True)
    said = fresh_chain.cli("research", "verify", "--json")
    assert said.returncode == ExitCode.RETRACTED, said.stdout
    error = json.loads(said.stdout)["error"]
    [retracted] = error["detail"]["retracted"]
    assert retracted["commit"] == champion and champion[:12] in error["message"]
    assert retracted["reason_digest"] == "0x" + keccak(b"the evaluator read the holdout").hex()


def test_a_ledger_row_that_smuggles_a_git_option_or_a_path_is_refused_before_git_or_a_file_is_touched(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """A ledger is anyone's to write (a shared PostgreSQL one: every researcher host; a published one: its
    author), and its hash chain is the author's to make. A row whose parent was `--output=FILE` made
    `research verify` run `git diff --output=FILE …`: a file written wherever the auditor (root, in CI)
    may write, holding the row author's diff. A researcher `../..` or a commit `../../..` named run dirs
    outside the work dir. Each is refused by name, exit 4, before git runs or a path is opened."""
    from anchor.research.ledger import Ledger

    repo, contract = _setup(tmp_path)
    fresh_chain.cli(
        "research",
        "run",
        "--repo",
        str(repo),
        "--contract",
        str(contract),
        "--no-anchor",
        "--max-attempts",
        "2",
        check=True,
    )
    work = fresh_chain.data_dir / "research"
    original = (work / "ledger.jsonl").read_text()
    last = _attempts(fresh_chain)[-1]
    fields = {k: v for k, v in last.items() if k not in ("seq", "prev", "digest")}
    planted = tmp_path / "written-by-git.txt"
    for field, value in (
        ("parent", f"--output={planted}"),
        ("researcher", "../../outside"),
        ("commit", "../../../../" + "0" * 28),
    ):
        (work / "ledger.jsonl").write_text(original)
        Ledger(work / "ledger.jsonl").append({**fields, field: value})  # a valid hash chain: the author's
        audit = fresh_chain.cli("--json", "research", "verify")
        assert audit.returncode == ExitCode.TAMPERED, (field, audit.stdout, audit.stderr)
        detail = json.loads(audit.stdout)["error"]["detail"]
        assert detail["field"] == field and detail["seq"] == last["seq"] + 1, (field, detail)
        assert not planted.exists(), field
