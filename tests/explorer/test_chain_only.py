"""Provenance for someone who has only the chain: `anchor index` after the demo's data
directory is deleted, and a file checked against its proof in headless Chromium without being sent.

The session's one demo run (conftest.demo_run) feeds the module, through a copy of its data dir.
Before that directory goes, the test keeps what a researcher would publish (the ledger, a clone of the
attempts' repository) and what an auditor would be handed (a proof file); the revert test anchors
one more root after an anvil snapshot and reverts to it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anchor.chain.node import LocalChain, rpc_call
from anchor.index.store import CHECKPOINT
from anchor.manifest.onchain import commit_of_key
from tests.cdp import chromium_page
from tests.conftest import ANCHOR_BIN, ROOT, DemoRun, free_port, touches
from tests.explorer.test_explorer_pages import CHROMIUM_FLAGS, Nodes, chromium
from tests.journal_helpers import journal_batches


def _get(url: str) -> tuple[int, str, str]:
    """(status, final URL, body), following redirects."""
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:  # noqa: S310 - loopback
            return answer.status, answer.url, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, url, exc.read().decode()


def _stamp(env: dict[str, str], folder: Path, out: Path) -> dict[str, Any]:
    subprocess.run(
        [str(ANCHOR_BIN), "stamp", str(folder), "--out", str(out)],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return dict(json.loads(out.read_text()))


@pytest.fixture(scope="module")
@touches("chain", "browser")
def world(demo_run: DemoRun, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("chain-only")
    data = base / "demo"
    env = demo_run.copy(data)  # the session's demo (conftest.demo_run), copied: this module deletes it
    port = int(env["ANCHOR_LOCAL_PORT"])
    subprocess.run([str(ANCHOR_BIN), "chain", "up"], env=env, check=True, capture_output=True)
    rpc = f"http://127.0.0.1:{port}"
    anvil = LocalChain(data, port).status().pid
    assert anvil is not None
    try:
        # what the auditor is handed: a folder with a token nobody could guess, and its proof
        token = os.urandom(16).hex()
        folder = base / "results"
        (folder / "notes").mkdir(parents=True)
        (folder / "results.txt").write_text(f"accuracy 0.82 run {token}\n" * 40)
        (folder / "notes" / "README.md").write_text("how the result was obtained\n")
        proof = _stamp(env, folder, base / "results.anchor.json")
        excluded = base / "excluded"  # a tree stamped with an exclusion rule: a browser cannot apply it
        excluded.mkdir()
        (excluded / "a.txt").write_text("kept\n")
        (excluded / "scratch.log").write_text("left out by the rule\n")
        stamp = [
            str(ANCHOR_BIN),
            "stamp",
            str(excluded),
            "--exclude",
            "*.log",
            "--out",
            str(base / "excluded.anchor.json"),
        ]
        subprocess.run(stamp, env=env, check=True, capture_output=True, timeout=120)
        linked = base / "linked"  # a tree whose proof records a link: a file picker never hands over a link
        linked.mkdir()
        (linked / "a.txt").write_text("the file\n")
        (linked / "latest").symlink_to("a.txt")
        linked_stamp = [
            str(ANCHOR_BIN),
            "stamp",
            str(linked),
            "--symlinks",
            "record",
            "--out",
            str(base / "linked.anchor.json"),
        ]
        subprocess.run(linked_stamp, env=env, check=True, capture_output=True, timeout=120)
        report = json.loads(
            subprocess.run(
                [str(ANCHOR_BIN), "--json", "research", "report"], env=env, check=True, capture_output=True, text=True
            ).stdout
        )
        registry = json.loads((data / "deployments" / "31337.json").read_text())["address"]
        roots = sorted(journal_batches(data))
        shutil.copy(data / "research" / "ledger.jsonl", base / "ledger.jsonl")
        subprocess.run(
            ["git", "clone", "-q", "--mirror", str(data / "research-repo"), str(base / "repo.git")], check=True
        )
        # a copy that still owns the running chain (its record names the same anvil): the revert test
        # anchors through it after the original is gone
        shutil.copytree(data, base / "stamper", symlinks=True)
        shutil.rmtree(data)  # no data directory, journal or ledger of ours from here on

        site_port = free_port()
        served_env = {**env, "ANCHOR_DATA_DIR": str(base / "absent")}
        command = [
            str(ANCHOR_BIN),
            "index",
            "--rpc-url",
            rpc,
            "--registry",
            registry,
            "--index",
            str(base / "index.sqlite"),
            "--claims",
            str(base / "ledger.jsonl"),
            "--repo",
            str(base / "repo.git"),
            "--port",
            str(site_port),
        ]
        server = subprocess.Popen(
            command, env=served_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
        url = f"http://127.0.0.1:{site_port}"
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(url + "/", timeout=1)  # noqa: S310 - loopback
                    break
                except OSError:
                    assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
                    time.sleep(0.1)
            yield {
                "url": url,
                "rpc": rpc,
                "registry": registry,
                "env": served_env,
                "base": base,
                "token": token,
                "folder": folder,
                "proof": proof,
                "report": report,
                "roots": roots,
                "stamper": {**env, "ANCHOR_DATA_DIR": str(base / "stamper")},
            }
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
    finally:
        os.kill(anvil, signal.SIGTERM)  # the anvil this fixture started; its data directory is gone


def _ledger(world: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (world["base"] / "ledger.jsonl").read_text().splitlines()]
    return [r for r in rows if r.get("kind") == "attempt"]


def test_with_the_data_dir_gone_every_commit_and_root_is_found_from_the_chain(world: dict[str, Any]) -> None:
    attempts = _ledger(world)
    kept = [a["commit"] for a in attempts if a["kept"]]
    assert len(attempts) == 12 and len(kept) >= 2
    for commit in kept:  # every kept attempt has its lineage record: found by a 12-digit prefix
        status, final, page = _get(f"{world['url']}/search?q={commit[:12]}")
        assert status == 200 and final.endswith("/attempt/0x" + commit + "0" * 24), (commit, final)
        assert "its BLAKE3 is the diff hash on chain" in page or "a baseline" in page
    for trial, a in enumerate(attempts, 1):  # numbered as every door numbers trials, not by ledger row
        if not a["kept"]:  # no lineage record; the published ledger's claim is named as such
            status, _, page = _get(f"{world['url']}/search?q={a['commit']}")
            assert status == 404 and "not kept" in page and f"trial #{trial} by" in page
    assert len(world["roots"]) >= 5
    status, _, page = _get(f"{world['url']}/attempt/{'ab' * 20}")  # a person is told, in a page, what is missing
    assert status == 404 and page.startswith("<!doctype html>") and "no lineage record of commit" in page
    for root in world["roots"]:
        status, final, page = _get(f"{world['url']}/search?q={root}")
        assert status == 200 and final.endswith(f"/batch/{root}") and root in page
        assert "anchored at 20" in page  # the registry's own record, read live


def test_the_lineage_tree_and_the_metric_chart_come_from_the_chain_and_matching_claims(world: dict[str, Any]) -> None:
    status, _, home = _get(world["url"] + "/")
    assert status == 200 and "by 1 researcher and" in home and "Recent anchors" in home
    researcher = home.split("/researcher/")[1].split("'")[0]
    status, _, page = _get(f"{world['url']}/researcher/{researcher}")
    nodes = Nodes()
    nodes.feed(page)
    tree = [a["data-commit"] for tag, a in nodes.elements if tag == "li" and "node" in a.get("class", "")]
    attempts = _ledger(world)
    assert tree == [a["commit"] for a in attempts if a["kept"]]  # the champion chain, baseline first
    assert tree[-1] == world["report"]["researchers"]["r0"]["champion"]
    # the ledger heads' own records are counted apart from the attempts', never drawn as attempts
    assert f"{len(tree)} lineage record" in page and " ledger checkpoint" in page
    assert "rows (block" in page.split(" ledger checkpoint")[1].split("</p>")[0]
    circles = [a["class"] for tag, a in nodes.elements if tag == "circle"]
    assert circles.count("matches") == len(tree) and circles.count("claimed") == 12 - len(tree)
    assert "differs" not in circles and [tag for tag, _ in nodes.elements].count("polyline") == 1


def test_a_claimed_metric_that_does_not_hash_to_the_chain_is_not_shown_as_the_records(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """The published ledger is a claim: a value edited (and the chain re-sealed) shows as differing."""
    import sqlite3

    from anchor.index.claims import load_claims
    from anchor.research.ledger import entry_digest
    from api.routes.index_site import metric_chart

    rows = [json.loads(line) for line in (world["base"] / "ledger.jsonl").read_text().splitlines()]
    prev = "0" * 64
    for row in rows:  # a forger who rewrites the value and every digest after it: the chain still agrees
        if row.get("kept") and row["seq"] == max(r["seq"] for r in rows if r.get("kept")):
            row["metric"]["value"] = "0.99"
        row["prev"] = prev
        row["digest"] = prev = entry_digest(row)
    forged = tmp_path / "ledger.jsonl"
    forged.write_text("".join(json.dumps(r) + "\n" for r in rows))
    claims = load_claims(forged)
    db = sqlite3.connect(world["base"] / "index.sqlite")
    db.row_factory = sqlite3.Row
    records = {r["commit_id"]: dict(r) for r in db.execute("SELECT * FROM lineage")}
    chart = metric_chart(claims, records)
    assert chart is not None
    states = [p["state"] for p in chart["points"]]
    assert states.count("differs") == 1 and states[[p["value"] for p in chart["points"]].index("0.99")] == "differs"


def test_a_repository_diff_that_does_not_hash_to_the_chain_is_not_shown(world: dict[str, Any]) -> None:
    from anchor.index.claims import verified_diff

    kept = [a for a in _ledger(world) if a["kept"] and int(a["parent"], 16)]
    commit, parent = "0x" + kept[0]["commit"] + "0" * 24, "0x" + kept[0]["parent"] + "0" * 24
    true_hash = "0x" + kept[0]["diff_blake3"]
    state, diff = verified_diff(world["base"] / "repo.git", parent, commit, true_hash)
    assert state == "verified" and diff and b"diff --git" in diff
    assert verified_diff(world["base"] / "repo.git", parent, commit, "0x" + "ab" * 32) == ("differs", None)


def test_no_chain_only_page_is_wider_than_a_laptop_window_and_each_names_its_chain(world: dict[str, Any]) -> None:
    """The explorer pages' tables ran past a 1200-pixel window (a block column off screen); these pages
    share their stylesheet, and are held to the same. Their header said "on chain 31337": the chain is
    named as every verdict names it."""
    status, _, home = _get(world["url"] + "/")
    assert status == 200
    header = home.split("<header>", 1)[1].split("</header>", 1)[0]
    assert "on local development chain (31337) · indexed to block" in header, header  # where, by name
    researcher = home.split("/researcher/")[1].split("'")[0]
    commit = next(a for a in _ledger(world) if a["kept"])["commit"]
    pages = [
        "/",
        f"/batch/{world['roots'][0]}",
        f"/researcher/{researcher}",
        f"/attempt/0x{commit}{'0' * 24}",
        "/verify",
    ]
    with chromium_page(chromium(), CHROMIUM_FLAGS) as page:
        for path in pages:
            taken, window = page.width_at(world["url"] + path)
            assert taken <= window, (path, taken, window)


def test_the_browser_verifies_a_folder_and_no_request_carries_its_bytes(world: dict[str, Any]) -> None:
    files = sorted(p for p in world["folder"].rglob("*") if p.is_file())
    with chromium_page(chromium(), CHROMIUM_FLAGS) as page:
        page.goto(world["url"] + "/verify", ready="!!document.getElementById('check')")
        page.set_files("#files", files)
        page.set_files("#proof", [world["base"] / "results.anchor.json"])
        page.evaluate("document.getElementById('check').click()")
        status = page.wait_for("document.getElementById('verdict').dataset.status")
        verdict = page.evaluate("document.getElementById('verdict').textContent")
        assert status == "verified", verdict
        assert "results.txt" in verdict and world["proof"]["batch"]["root"] in verdict and "block" in verdict
        bodies = page.bodies()
        token = world["token"]
        assert "<unread>" not in bodies  # a body the browser would not hand over cannot be proven clean
        assert page.requests and not any(
            token in b or token in r["url"] for b, r in zip(bodies, page.requests, strict=True)
        )
        # the page's only writes are JSON-RPC reads to the chain; everything else is a GET of this service
        posts = [r for r in page.requests if r["method"] != "GET"]
        assert posts and all(r["url"].rstrip("/") == world["rpc"] for r in posts if r["method"] == "POST")
        methods = {json.loads(b)["method"] for b, r in zip(bodies, page.requests, strict=True) if r["method"] == "POST"}
        # registry v3: the proof's transaction receipt names whose record the root is
        assert methods == {"eth_chainId", "eth_blockNumber", "eth_getCode", "eth_getTransactionReceipt", "eth_call"}
        assert all(r["url"].startswith((world["url"], world["rpc"])) for r in page.requests)


def test_the_browser_names_a_file_changed_by_one_byte(world: dict[str, Any], tmp_path: Path) -> None:
    changed = tmp_path / "results"
    shutil.copytree(world["folder"], changed)
    data = bytearray((changed / "results.txt").read_bytes())
    data[100] ^= 0x01
    (changed / "results.txt").write_bytes(bytes(data))
    with chromium_page(chromium(), CHROMIUM_FLAGS) as page:
        page.goto(world["url"] + "/verify", ready="!!document.getElementById('check')")
        page.set_files("#files", sorted(p for p in changed.rglob("*") if p.is_file()))
        page.set_files("#proof", [world["base"] / "results.anchor.json"])
        page.evaluate("document.getElementById('check').click()")
        assert page.wait_for("document.getElementById('verdict').dataset.status") == "tampered"
        assert page.evaluate("document.getElementById('verdict').dataset.file") == "results.txt"
        assert "changed: results.txt" in page.evaluate("document.getElementById('verdict').textContent")
        assert not any(world["token"] in b for b in page.bodies())


def test_the_browser_says_it_cannot_apply_exclusion_rules_rather_than_calling_a_file_added(
    world: dict[str, Any],
) -> None:
    excluded = world["base"] / "excluded"
    with chromium_page(chromium(), CHROMIUM_FLAGS) as page:
        page.goto(world["url"] + "/verify", ready="!!document.getElementById('check')")
        page.set_files("#proof", [world["base"] / "excluded.anchor.json"])
        verdicts = []
        for picked in ([excluded / "a.txt", excluded / "scratch.log"], [excluded / "a.txt"]):
            page.set_files("#files", picked)
            page.evaluate("document.getElementById('verdict').dataset.status = ''")
            page.evaluate("document.getElementById('check').click()")
            status = page.wait_for("document.getElementById('verdict').dataset.status")
            verdicts.append((status, page.evaluate("document.getElementById('verdict').textContent")))
    assert verdicts[0][0] == "bad_input" and "scratch.log" in verdicts[0][1] and "*.log" in verdicts[0][1]
    assert verdicts[1][0] == "verified", verdicts[1]


def test_the_browser_does_not_call_verified_a_folder_whose_links_it_could_not_check(world: dict[str, Any]) -> None:
    """A proof that records a symbolic link: the page checks every file, but a picker hands over what a
    link points to, never the link, so the verdict names the link as unchecked instead of "verified"."""
    with chromium_page(chromium(), CHROMIUM_FLAGS) as page:
        page.goto(world["url"] + "/verify", ready="!!document.getElementById('check')")
        page.set_files("#proof", [world["base"] / "linked.anchor.json"])
        page.set_files("#files", [world["base"] / "linked" / "a.txt"])
        page.evaluate("document.getElementById('check').click()")
        status = page.wait_for("document.getElementById('verdict').dataset.status")
        text = page.evaluate("document.getElementById('verdict').textContent")
    assert status == "files_verified_links_unchecked", text
    assert "latest → a.txt" in text and "anchor verify" in text and "✓ verified" not in text


def test_the_chain_only_pages_carry_a_policy_that_lets_them_read_only_the_chain(world: dict[str, Any]) -> None:
    """The explorer built from the chain alone: no framing, scripts only from itself, and connections
    only to itself and the one RPC origin its browser check reads (the Chromium tests above pass under it)."""
    for path in ("/", "/verify"):
        with urllib.request.urlopen(world["url"] + path, timeout=30) as answer:  # noqa: S310 - loopback
            policy = answer.headers["Content-Security-Policy"]
            assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert "frame-ancestors 'none'" in policy and "script-src 'self' 'wasm-unsafe-eval'" in policy, policy
        assert policy.split("connect-src ")[1].split(";")[0].split() == ["'self'", world["rpc"].rstrip("/")]


def test_index_mistakes_are_one_line_errors(world: dict[str, Any], tmp_path: Path) -> None:
    env = world["env"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(ANCHOR_BIN), "index", *args], env=env, capture_output=True, text=True, timeout=60)

    no_rpc = run("--registry", world["registry"])
    assert no_rpc.returncode == 2 and "--rpc-url" in no_rpc.stderr and "Traceback" not in no_rpc.stderr
    typo = run("--rpc-url", world["rpc"], "--registry", world["registry"][:-1])
    assert typo.returncode == 2 and "--registry" in typo.stderr
    not_registry = run("--rpc-url", world["rpc"], "--registry", "0x" + "12" * 20, "--index", str(tmp_path / "i.db"))
    assert not_registry.returncode == 6 and "no AnchorRegistry code" in not_registry.stderr
    keyed = run(
        "--rpc-url",
        world["rpc"],
        "--registry",
        world["registry"],
        "--browser-rpc-url",
        "https://rpc.example/v2/SECRETKEY",
    )
    assert keyed.returncode == 2 and "SECRETKEY" not in keyed.stderr
    missing = run("--rpc-url", world["rpc"], "--registry", world["registry"], "--claims", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "--claims" in missing.stderr
    assert not (tmp_path / "nope.jsonl").exists()
    twice = run("--rpc-url", world["rpc"], "--rpc-url", world["rpc"] + "/", "--registry", world["registry"])
    assert twice.returncode == 2 and "named twice" in twice.stderr  # one endpoint votes once
    unmeetable = run("--rpc-url", world["rpc"], "--quorum", "2", "--registry", world["registry"])
    assert unmeetable.returncode == 2 and "--quorum 2: only 1 read endpoint is given" in unmeetable.stderr
    api_only = subprocess.run(
        [str(ANCHOR_BIN), "serve", "--quorum", "2"], env=env, capture_output=True, text=True, timeout=60
    )
    assert api_only.returncode == 2 and "No such option '--quorum'" in api_only.stderr  # the API's serve has none


def test_after_evm_revert_the_index_drops_a_reverted_root_and_keeps_the_rest(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """A root anchored after a snapshot is found; once the chain is reverted to the snapshot it is
    gone from the index, and everything anchored before is still there. The test leaves the chain as
    it found it, so it may run in any order."""
    snapshot = rpc_call(world["rpc"], "evm_snapshot", [])
    (tmp_path / "late").mkdir()
    (tmp_path / "late" / "x.txt").write_text(world["token"] + tmp_path.name)
    late = _stamp(world["stamper"], tmp_path / "late", tmp_path / "late.anchor.json")["batch"]["root"]
    deadline = time.monotonic() + 60
    while _get(f"{world['url']}/search?q={late}")[0] != 200:
        assert time.monotonic() < deadline, "the late root never reached the index"
        time.sleep(0.5)
    assert rpc_call(world["rpc"], "evm_revert", [snapshot]) is True
    deadline = time.monotonic() + 60
    while _get(f"{world['url']}/search?q={late}")[0] != 404:
        assert time.monotonic() < deadline, "the reverted root is still in the index"
        time.sleep(0.5)
    for root in world["roots"]:
        assert _get(f"{world['url']}/search?q={root}")[0] == 200
    kept = [a["commit"] for a in _ledger(world) if a["kept"]]
    assert all(_get(f"{world['url']}/search?q={c}")[0] == 200 for c in kept)
    assert commit_of_key("0x" + kept[0] + "0" * 24) == kept[0]


def test_the_browsers_proof_code_reproduces_every_golden_vector() -> None:
    kinds = ["filetree", "bundle", "attempt", "champion", "mission", "timing"]
    node = shutil.which("node")
    assert node, "node is installed with the npm toolchain (make install)"
    out = subprocess.run(
        [node, str(ROOT / "tests" / "js" / "vectors.js"), *kinds],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    rows = {(r["kind"], r["name"]): r for r in json.loads(out.stdout)}
    checked = 0
    for kind in kinds:
        for case in json.loads((ROOT / "tests" / "vectors" / f"{kind}.json").read_text())["cases"]:
            expected = case.get("expected", {})
            if "identity_canonical" not in expected:
                continue
            mine = rows[(kind, case["name"])]
            assert (mine["canonical"], mine["digest"]) == (expected["identity_canonical"], expected["digest"]), case[
                "name"
            ]
            if "files_root" in mine:
                assert mine["files_root"] == json.loads(expected["identity_canonical"])["files_root"]
                assert mine["audit_ok"] is True
            checked += 1
    assert checked == len(rows) >= 25


def test_the_vendored_hash_wasm_is_the_npm_release() -> None:
    vendored = ROOT / "api" / "static" / "vendor" / "hash-wasm"
    release = ROOT / "node_modules" / "hash-wasm" / "dist"
    assert json.loads((ROOT / "node_modules" / "hash-wasm" / "package.json").read_text())["version"] == "4.12.0"
    for name in ("blake3.umd.min.js", "keccak.umd.min.js"):
        assert (vendored / name).read_bytes() == (release / name).read_bytes(), name


def test_the_chain_only_home_says_when_every_record_was_anchored_and_labels_ledger_checkpoints(
    world: dict[str, Any],
) -> None:
    """block numbers only, and ledger checkpoints shown as `lineage` rows with a hex commit."""
    import re

    page = urllib.request.urlopen(world["url"] + "/", timeout=30).read().decode()  # noqa: S310 - loopback
    table = page.split("<table class='recent'>")[1].split("</table>")[0]
    rows = table.count("<tr>") - 1
    times = re.findall(r"<td class='when'>(20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC)</td>", table)
    assert rows > 0 and len(times) == rows, table[:2000]
    with sqlite3.connect(world["base"] / "index.sqlite") as db:
        latest = db.execute(
            "SELECT diff_hash = ? FROM (SELECT diff_hash, block, log_index FROM lineage UNION ALL"
            " SELECT NULL, block, log_index FROM roots) ORDER BY block DESC, log_index DESC LIMIT 25",
            (CHECKPOINT,),
        ).fetchall()
    checkpoints = sum(1 for (is_checkpoint,) in latest if is_checkpoint)
    assert table.count("<td>ledger checkpoint</td>") == checkpoints and checkpoints > 0, table[:3000]
    assert table.count("ledger head of contract") == checkpoints
    # the counts above the table say each kind apart, as the researcher's page does (it said "8 lineage
    # records" of 4 kept attempts and 4 checkpoints)
    with sqlite3.connect(world["base"] / "index.sqlite") as db:
        (kept,), (all_checkpoints,) = (
            db.execute("SELECT count(*) FROM lineage WHERE diff_hash != ?", (CHECKPOINT,)).fetchone(),
            db.execute("SELECT count(*) FROM lineage WHERE diff_hash = ?", (CHECKPOINT,)).fetchone(),
        )
    assert (
        f"{kept} lineage record{'s' if kept != 1 else ''} of kept attempts, {all_checkpoints} ledger checkpoint" in page
    )
