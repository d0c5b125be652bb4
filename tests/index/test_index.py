"""The chain-only index on a real anvil: every record of the registry found from the chain alone, the
cursor resumed, a revert of the last blocks undone in the index, a foreign contract refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from anchor.chain.keys import load_signer
from anchor.chain.open import open_chain, open_registry
from anchor.errors import BadInput, DeploymentMismatch
from anchor.index.follow import Follower
from anchor.index.store import IndexStore
from anchor.manifest.onchain import commit_of_key
from tests.conftest import Chain


def _write(chain: Chain, n: int, kept_every: int = 2) -> tuple[list[str], list[str]]:
    """`n` lineage records and one root per record, straight to the registry; their keys as hex."""
    handle = open_chain(chain.settings)
    registry, signer = open_registry(chain.settings, handle), load_signer(handle.chain_id)
    commits, roots = [], []
    parent = bytes(32)
    for i in range(n):
        commit = os.urandom(20).ljust(32, b"\0")
        registry.anchor_lineage(signer, commit, parent, os.urandom(32), os.urandom(32), i % kept_every == 0)
        root = os.urandom(32)
        registry.anchor_root(signer, root)
        commits.append("0x" + commit.hex())
        roots.append("0x" + root.hex())
        parent = commit
    return commits, roots


def _follower(chain: Chain, path: Path, **kw: object) -> Follower:
    handle = open_chain(chain.settings)
    registry = open_registry(chain.settings, handle)
    return Follower(handle.rpc, IndexStore(path, handle.chain_id, registry.address), registry.address, **kw)


def test_every_record_is_indexed_from_the_chain_alone_and_found_by_search(fresh_chain: Chain, tmp_path: Path) -> None:
    chain = fresh_chain
    chain.cli("deploy", check=True)
    commits, roots = _write(chain, 5)
    follower = _follower(chain, tmp_path / "index.sqlite")  # no --from-block: found by bisection
    report = follower.sync()
    assert report.added == 10 and report.dropped == 0
    store = follower.store
    assert store.counts() == {"lineage": 5, "checkpoints": 0, "promotions": 0, "roots": 5, "researchers": 1}
    for commit in commits:
        [hit] = store.search(commit_of_key(commit)[:10])
        assert hit["key"] == commit
    for root in roots:
        assert store.search(root)[0]["key"] == root
    tx = store.root(roots[0])["tx"]  # type: ignore[index]
    assert store.search(tx) == [{"kind": "root", "key": roots[0], "block": store.root(roots[0])["block"]}]  # type: ignore[index]
    trial = store.attempts(store.researchers()[0]["researcher"])
    assert [r["commit_id"] for r in trial] == commits and [r["kept"] for r in trial] == [1, 0, 1, 0, 1]
    assert trial[1]["parent"] == commits[0]
    # a second sync reads only what is new
    more, _ = _write(chain, 1)
    assert follower.sync().added == 2 and store.search(more[0][2:])[0]["key"] == more[0]


def test_a_revert_of_the_last_blocks_drops_exactly_the_reverted_records(fresh_chain: Chain, tmp_path: Path) -> None:
    chain = fresh_chain
    chain.cli("deploy", check=True)
    kept, kept_roots = _write(chain, 3)
    handle = open_chain(chain.settings)
    snapshot = handle.rpc.request("evm_snapshot", [])
    gone, gone_roots = _write(chain, 2)
    follower = _follower(chain, tmp_path / "index.sqlite", confirmations=12)
    assert follower.sync().added == 10
    assert follower.store.search(gone[1][2:12])

    handle.rpc.request("evm_revert", [snapshot])
    report = follower.sync()
    assert report.dropped > 0
    for key in gone + gone_roots:
        assert follower.store.search(key) == [], key
    for key in kept + kept_roots:
        assert follower.store.search(key), key
    # the chain goes on from the fork point: new blocks at the old heights are read, not skipped
    after, _ = _write(chain, 3)
    follower.sync()
    assert all(follower.store.search(c) for c in after) and follower.store.counts()["lineage"] == 6


def test_an_address_without_the_registry_code_is_refused(fresh_chain: Chain, tmp_path: Path) -> None:
    chain = fresh_chain
    chain.cli("deploy", check=True)
    handle = open_chain(chain.settings)
    signer = load_signer(handle.chain_id)
    with pytest.raises(DeploymentMismatch, match="no AnchorRegistry code"):
        Follower(handle.rpc, IndexStore(tmp_path / "i.sqlite", handle.chain_id, signer.address), signer.address)


def test_an_index_file_of_another_registry_is_refused_not_mixed(tmp_path: Path) -> None:
    IndexStore(tmp_path / "i.sqlite", 31337, "0x" + "11" * 20).close()
    with pytest.raises(BadInput, match="holds registry 0x1111"):
        IndexStore(tmp_path / "i.sqlite", 31337, "0x" + "22" * 20)


def test_a_reorg_deeper_than_the_checked_depth_is_reported_not_guessed(fresh_chain: Chain, tmp_path: Path) -> None:
    from anchor.errors import IndexReorgTooDeep

    chain = fresh_chain
    chain.cli("deploy", check=True)
    handle = open_chain(chain.settings)
    snapshot = handle.rpc.request("evm_snapshot", [])
    _write(chain, 3)  # six blocks
    follower = _follower(chain, tmp_path / "index.sqlite", confirmations=1)
    follower.sync()
    handle.rpc.request("evm_revert", [snapshot])
    _write(chain, 3)  # the same heights again, other blocks
    with pytest.raises(IndexReorgTooDeep, match="more than 1 blocks deep"):
        follower.sync()


def test_sybil_records_of_one_commit_are_paged_and_its_diff_is_computed_once(
    fresh_chain: Chain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anyone can relay records of any commit under fresh keys: 500 of them made the attempt page
    690 KB, 1.4-1.8 s and 500 `git diff` processes per view, and the home page listed every
    researcher. Now both are paged, and the diff of (parent, commit) is computed once."""
    import subprocess
    import time

    import blake3
    from eth_account import Account
    from fastapi.testclient import TestClient

    from anchor.chain.signed import LineageFields, sign_lineage
    from anchor.index import claims
    from anchor.index.site import SiteOptions, open_site
    from api.index_app import create_index_app
    from api.routes import index_site

    fresh_chain.cli("deploy", check=True)
    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "train.py").write_text("lr = 0.1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "baseline"], check=True)
    parent = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    (repo / "train.py").write_text("lr = 0.05\n")
    subprocess.run([*git, "commit", "-qam", "attempt"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    diff = subprocess.run([*git, "diff", "--binary", parent, commit], check=True, capture_output=True).stdout

    handle = open_chain(fresh_chain.settings)
    registry, relayer = open_registry(fresh_chain.settings, handle), load_signer(handle.chain_id)
    sybils = 45
    for _ in range(sybils):
        fresh = Account.create()
        fields = LineageFields(
            fresh.address,
            bytes.fromhex(commit).ljust(32, b"\0"),
            bytes.fromhex(parent).ljust(32, b"\0"),
            blake3.blake3(diff).digest(),
            os.urandom(32),
            False,
            int(time.time()) + 3600,
        )
        registry.anchor_signed(relayer, sign_lineage(fresh, handle.chain_id, registry.address, fields))

    diffs = []
    real_run = claims.subprocess.run

    def counted(argv: list[str], *args: object, **kwargs: object) -> object:
        if "diff" in argv:
            diffs.append(argv)
        return real_run(argv, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(claims.subprocess, "run", counted)
    monkeypatch.setattr(claims, "_diffs", {})
    monkeypatch.setattr(index_site, "RESEARCHERS_PER_PAGE", 20)
    options = SiteOptions(
        rpc_urls=(f"http://127.0.0.1:{fresh_chain.port}",),
        registry=registry.address,
        index=tmp_path / "index.sqlite",
        repo=repo,
        confirmations=1,
    )
    site = open_site(options)
    site.sync()
    with TestClient(create_index_app(site)) as client:
        first = client.get(f"/attempt/{commit}").text
        assert first.count("<h2>Record by") == index_site.RECORDS_PER_PAGE
        assert f"page 1 of 3 ({sybils} in all)" in first and "?page=2'>next" in first
        assert "its BLAKE3 is the diff hash on chain" in first
        last = client.get(f"/attempt/{commit}", params={"page": 3}).text
        assert last.count("<h2>Record by") == sybils - 2 * index_site.RECORDS_PER_PAGE
        assert client.get(f"/attempt/{commit}", params={"page": 4}).status_code == 404
        home = client.get("/").text
        assert home.count("<tr><td class='hash'><a href='/researcher/") == 20 and "page 1 of 3 (45 in all)" in home
    assert len(diffs) == 1, diffs  # one (parent, commit): one git diff, for every record and page


def test_a_lying_endpoint_is_outvoted_by_a_quorum_and_one_against_one_indexes_nothing(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """The chain-only index read one endpoint and showed what it said: an endpoint that rewrote the roots
    in its `eth_getLogs` answers had them indexed as anchored. Given several endpoints, every window's
    events, block hashes and the registry's code are indexed only when a quorum (default: a majority)
    agrees; a split is `NoQuorum` with nothing stored, and a dissenter is named."""
    from anchor.chain.rpc import Rpc
    from anchor.errors import NoQuorum
    from tests.faults.rpc_proxy import FaultyProxy

    chain = fresh_chain
    chain.cli("deploy", check=True)
    _, roots = _write(chain, 2)
    handle = open_chain(chain.settings)
    registry = open_registry(chain.settings, handle)
    root_topic = Follower(
        handle.rpc, IndexStore(tmp_path / "t.sqlite", handle.chain_id, registry.address), registry.address
    )._root.topic
    fake = "0x" + "f0" * 32

    def rewrite_roots(request: dict[str, object], result: object) -> object:
        for log in result if isinstance(result, list) else []:
            if str(log["topics"][0]).lower() == root_topic:
                log["topics"][1] = fake
        return result

    honest = [FaultyProxy(chain.node.rpc_url) for _ in range(3)]
    liar = FaultyProxy(chain.node.rpc_url)
    liar.lie_logs = rewrite_roots
    try:

        def follower(name: str, *proxies: FaultyProxy, quorum: int | None = None) -> Follower:
            store = IndexStore(tmp_path / f"{name}.sqlite", handle.chain_id, registry.address)
            return Follower([Rpc(p.url) for p in proxies], store, registry.address, from_block=0, quorum=quorum)

        alone = follower("alone", liar)
        alone.sync()
        assert alone.store.root(fake) is not None  # one endpoint's word is all a single read has

        voted = follower("voted", honest[0], liar, honest[1])
        report = voted.sync()
        assert voted.store.root(fake) is None and all(voted.store.root(r) is not None for r in roots)
        assert list(report.disagreeing) == [liar.url] and "events_sha256" in report.disagreeing[liar.url]

        honest[1].mode = "503"  # out of reach: the other two agree; asked once a sync, not once a read
        down = follower("down", *honest)
        faults = honest[1].faults
        down.sync()
        assert all(down.store.root(r) is not None for r in roots)
        assert honest[1].faults - faults == down.rpcs[1].retries + 1
        honest[1].mode = "ok"

        split = follower("split", honest[0], liar)
        with pytest.raises(NoQuorum, match=liar.url):
            split.sync()
        assert split.store.counts()["roots"] == 0 and split.store.cursor() is None
        with pytest.raises(BadInput, match="quorum 3"):
            follower("three", honest[0], liar, quorum=3)

        # the door: `anchor index` with the three names every one of them, on its pages and in the
        # browser check, which reads them all (a majority agreeing)
        from fastapi.testclient import TestClient

        from anchor.index.site import SiteOptions, open_site
        from api.index_app import create_index_app

        urls = tuple(p.url for p in (honest[0], liar, honest[1]))
        site = open_site(SiteOptions(rpc_urls=urls, registry=registry.address, index=tmp_path / "site.sqlite"))
        site.sync()
        assert site.rpc_label == ", ".join(urls) + " (2 of 3 must agree)" and site.browser_rpc_urls == urls
        with TestClient(create_index_app(site)) as client:
            assert site.rpc_label in client.get("/").text and client.get(f"/search?q={fake}").status_code == 404
            page = client.get("/verify")
            assert all(url in page.text for url in urls)
            assert all(url in page.headers["content-security-policy"] for url in urls)
        honest[1].mode = "503"  # out of reach when the site opens: two of three still agree
        late = open_site(
            SiteOptions(
                rpc_urls=tuple(p.url for p in honest), registry=registry.address, index=tmp_path / "late.sqlite"
            )
        )
        late.sync()
        assert all(late.follower.store.root(r) is not None for r in roots)
        honest[1].mode = "ok"
    finally:
        for proxy in (*honest, liar):
            proxy.stop()
