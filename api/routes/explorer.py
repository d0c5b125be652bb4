"""Built-in HTML pages that play the block explorer on the local chain: an attempt, its lineage tree
with the champion chain highlighted, a batch, and a bundle with its files and per-file proofs.

Every "on chain" statement on a page comes from a live registry read at the block the page names.
Everything shown is escaped; the pages need no JavaScript.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from anchor.errors import NotAnchored
from anchor.explorer import links
from anchor.manifest.onchain import commit_key
from anchor.proof_file import load_proof
from anchor.prove import single_file_proof
from api.deps import ReaderDep, SettingsDep, in_journal
from api.routes.records import batch_rows
from api.routes.verify import CommitOrHex32, Hex32

router = APIRouter(prefix="/explorer", tags=["explorer"], include_in_schema=False)

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#1d2433;padding:0 1rem}
h1{font-size:1.4rem} h2{font-size:1.1rem;margin-top:1.6rem} code,.hash{font-family:ui-monospace,monospace;font-size:12px}
table{border-collapse:collapse;width:100%} td,th{border-bottom:1px solid #e3e6ee;padding:.35rem .5rem;text-align:left;vertical-align:top}
.ok{color:#0a7a32;font-weight:600} .bad{color:#b42318;font-weight:600} .muted{color:#6b7285}
ul.tree{list-style:none;padding-left:1.2rem;border-left:1px dashed #c9cfdb} ul.tree.root{border:none;padding:0}
li.node{margin:.25rem 0} .node span.box{display:inline-block;padding:.15rem .45rem;border-radius:4px;background:#f1f3f8}
li.champion>span.box{background:#fff3c4;border:1px solid #e0b400;font-weight:600}
li.current>span.box{outline:2px solid #2f6feb}
header{border-bottom:2px solid #1d2433;margin-bottom:1rem;padding-bottom:.4rem} a{color:#2f6feb}
"""


def _page(title: str, body: str, block: int | None) -> HTMLResponse:
    read = f"read live from the chain at block {block}" if block is not None else ""
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)} · Anchor</title>"
        f"<style>{STYLE}</style></head><body><header><b>Anchor explorer</b> <span class='muted'>· {escape(read)}</span>"
        f"</header><h1>{escape(title)}</h1>{body}</body></html>"
    )


def _rows(pairs: list[tuple[str, Any]]) -> str:
    return "<table>" + "".join(f"<tr><th>{escape(k)}</th><td class='hash'>{v}</td></tr>" for k, v in pairs) + "</table>"


def _yes(flag: bool | None, yes: str = "yes", no: str = "no") -> str:
    if flag is None:
        return "<span class='muted'>unknown (chain out of reach)</span>"
    return f"<span class='ok'>{escape(yes)}</span>" if flag else f"<span class='bad'>{escape(no)}</span>"


def _ledger(settings: Any) -> list[dict[str, Any]]:
    from anchor.research.ledger import Ledger

    ledger = Ledger(settings.data_dir / "research" / "ledger.jsonl")
    ledger.verify()
    return ledger.entries()


def _entry(entries: list[dict[str, Any]], commit: str) -> dict[str, Any]:
    body = commit.lower().removeprefix("0x")
    for entry in entries:
        if entry["commit"] == body:
            return entry
    raise NotAnchored(f"no attempt {body} in the research ledger", detail={"commit": commit})


@router.get("/attempt/{commit}", response_class=HTMLResponse)
async def attempt_page(commit: CommitOrHex32, settings: SettingsDep, reader: ReaderDep) -> HTMLResponse:
    entries = await run_in_threadpool(_ledger, settings)
    entry = _entry(entries, commit)
    registry = await run_in_threadpool(reader.registry)
    record = await run_in_threadpool(registry.lineage, commit_key(entry["commit"]))
    metric = entry.get("metric")
    pairs: list[tuple[str, Any]] = [
        ("commit", escape(entry["commit"])),
        ("parent (champion it started from)", f"<a href='/explorer/attempt/{escape(quote(entry['parent'], safe=''))}'>{escape(entry['parent'])}</a>"),
        ("researcher", escape(entry["researcher"])),
        ("status", escape(entry["status"]) + f" (exit {entry['exit_code']}, {entry['duration_ms']} ms)"),
        ("metric", escape(f"{metric['name']} = {metric['value']} ({metric['mode']})") if metric else "—"),
        ("kept", _yes(entry["kept"], "kept: became the champion", "not kept: reset")),
        ("diff BLAKE3", escape(entry["diff_blake3"])),
        ("attempt manifest digest", escape(entry["attempt_digest"])),
        ("ledger entry", f"#{entry['seq']} · {escape(entry['digest'])}"),
        ("lineage record on chain", _yes(record is not None) if entry["kept"] else "<span class='muted'>none (only kept attempts get one)</span>"),
    ]  # fmt: skip
    if record is not None:
        pairs += [("anchored in", f"tx {escape(record.tx_hash)} · block {record.block_number}")]
        pairs += [
            (f"explorer {k}", f"<a href='{escape(v)}'>{escape(v)}</a>")
            for k, v in links(registry.chain_id, tx_hash=record.tx_hash).items()
        ]
    body = (
        _rows(pairs)
        + f"<p><a href='/explorer/lineage/{escape(quote(entry['commit'], safe=''))}'>lineage tree →</a></p>"
    )
    return _page(f"Attempt {entry['commit'][:12]}", body, reader.head())


@router.get("/lineage/{commit}", response_class=HTMLResponse)
async def lineage_page(commit: CommitOrHex32, settings: SettingsDep, reader: ReaderDep) -> HTMLResponse:
    from anchor.research.loop import NO_PARENT
    from anchor.research.report import lineage_tree

    entries = await run_in_threadpool(_ledger, settings)
    target = _entry(entries, commit)
    data, _ = await run_in_threadpool(lineage_tree, entries, target["commit"], settings)
    champion, on_chain = set(data["champion_chain"]), data["lineage_on_chain"]
    mine = [e for e in entries if e["researcher"] == target["researcher"]]
    children: dict[str, list[dict[str, Any]]] = {}
    for e in mine:
        children.setdefault(e["parent"], []).append(e)

    def node(e: dict[str, Any]) -> str:
        classes = (
            ["node"]
            + (["champion"] if e["commit"] in champion else [])
            + (["current"] if e["commit"] == target["commit"] else [])
        )
        metric = f"{e['metric']['value']}" if "metric" in e else e["status"]
        marks = (" ★" if e["commit"] in champion else "") + (
            " <small class='ok'>✓ on chain</small>" if on_chain.get(e["commit"]) else ""
        )
        label = f"<a href='/explorer/attempt/{escape(quote(e['commit'], safe=''))}'>{escape(e['commit'][:12])}</a> #{e['seq']} {escape(metric)}{marks}"  # marks: fixed HTML
        kids = "".join(node(c) for c in children.get(e["commit"], []))
        sub = f"<ul class='tree'>{kids}</ul>" if kids else ""
        return f"<li class='{' '.join(classes)}' data-commit='{escape(e['commit'])}'><span class='box'>{label}</span>{sub}</li>"

    tree = "".join(node(root) for root in children.get(NO_PARENT, []))
    legend = "<p class='muted'>★ champion chain (highlighted) · ✓ on chain: its lineage record, read live · outlined: this attempt</p>"
    summary = _rows([
        ("researcher", escape(target["researcher"])),
        ("trials by this researcher", str(len(mine))),
        ("champion chain", " → ".join(escape(c[:12]) for c in data["champion_chain"])),
    ])  # fmt: skip
    return _page(
        f"Lineage of {target['commit'][:12]}", summary + legend + f"<ul class='tree root'>{tree}</ul>", reader.head()
    )


@router.get("/", response_class=HTMLResponse)
async def home(request: Request, reader: ReaderDep) -> HTMLResponse:
    """The latest batches of this service, and where to go next."""
    batches = await in_journal(
        request.app,
        lambda journal: journal.db.execute(
            "SELECT key, state, block_number, (SELECT count(*) FROM items WHERE effect_id = effects.id) AS items"
            " FROM effects WHERE kind = 'root' ORDER BY id DESC LIMIT 20"
        ).fetchall(),
    )
    rows = "".join(
        f"<tr><td class='hash'><a href='/explorer/batch/0x{bytes(b['key']).hex()}'>0x{bytes(b['key']).hex()}</a></td>"
        f"<td>{b['items']}</td><td>{escape(b['state'])}</td><td>{b['block_number'] if b['block_number'] is not None else ''}</td></tr>"
        for b in batches
    )
    body = (
        "<p>Every record here is read back from the chain. The REST API is described at <a href='/docs'>/docs</a>"
        " (OpenAPI schema: <a href='/openapi.json'>/openapi.json</a>).</p>"
        f"<h2>Latest batches</h2><table class='items'><tr><th>root</th><th>records</th><th>state</th><th>block</th></tr>{rows}</table>"
        + ("" if batches else "<p class='muted'>Nothing anchored through this service yet.</p>")
    )
    return _page("Anchor", body, reader.last_head())


@router.get("/batch/{root}", response_class=HTMLResponse)
async def batch_page(root: Hex32, request: Request, reader: ReaderDep) -> HTMLResponse:
    key = bytes.fromhex(root.lower().removeprefix("0x"))
    effect, items = await in_journal(request.app, lambda journal: batch_rows(journal.db, key))
    if effect is None:
        raise NotAnchored(f"no batch with root 0x{key.hex()} here", detail={"root": root})
    registry = await run_in_threadpool(reader.registry)
    record = await run_in_threadpool(registry.root_record, key)
    pairs: list[tuple[str, Any]] = [("root", "0x" + key.hex()), ("anchored on chain", _yes(record is not None))]
    if record is not None:
        pairs += [("submitter", escape(record.submitter)), ("block", str(record.block_number)),
                  ("tx", escape("0x" + bytes(effect["tx_hash"] or b"").hex()))]  # fmt: skip
    rows = "".join(
        f"<tr><td class='hash'><a href='/explorer/bundle/0x{bytes(i['digest']).hex()}'>0x{bytes(i['digest']).hex()}</a></td>"
        f"<td>{escape(i['kind'])}</td><td>{escape(i['state'])}</td></tr>"
        for i in items
    )
    body = (
        _rows(pairs)
        + f"<h2>{len(items)} records</h2><table class='items'><tr><th>manifest</th><th>kind</th><th>state</th></tr>{rows}</table>"
    )
    return _page(f"Batch 0x{key.hex()[:16]}…", body, reader.head())


@router.get("/bundle/{digest}", response_class=HTMLResponse)
async def bundle_page(digest: Hex32, settings: SettingsDep, reader: ReaderDep) -> HTMLResponse:
    from anchor.verify.verifier import check_proof_consistency, verify_proof_on_chain

    body_hex = digest.lower().removeprefix("0x")
    stored = settings.proofs_dir / f"{body_hex}.json"
    if not stored.is_file():
        raise NotAnchored(f"no anchored manifest 0x{body_hex} here", detail={"manifest_digest": digest})
    proof = load_proof(stored)
    root = check_proof_consistency(proof)
    verification = await run_in_threadpool(verify_proof_on_chain, proof, root, settings, len(proof.files or ()))
    files = proof.filetree()
    rows = "".join(
        f"<tr><td>{escape(f.path)}</td><td>{f.size}</td><td class='hash'>{escape(f.blake3)}</td>"
        f"<td><a href='/explorer/bundle/0x{body_hex}/proof?path={escape(quote(f.path, safe=''))}'>proof</a></td></tr>"
        for f in (files.files if files else ())
    )
    pairs = [
        ("manifest digest", escape(proof.manifest_digest)),
        ("kind", escape(proof.manifest["kind"])),
        (
            "batch root",
            f"<a href='/explorer/batch/{escape(quote(proof.batch.root, safe=''))}'>{escape(proof.batch.root)}</a>",
        ),
        ("verified on chain", _yes(verification.verified) + f" · anchored in block {verification.anchored_block}"),
        ("tx", escape(verification.tx_hash)),
        ("finality", escape(verification.finality)),
    ]
    table = f"<table class='files'><tr><th>path</th><th>bytes</th><th>BLAKE3</th><th></th></tr>{rows}</table>"
    return _page(
        f"Bundle {proof.manifest_digest[:18]}…", _rows(pairs) + "<h2>Files</h2>" + table, verification.read_at_block
    )


@router.get("/bundle/{digest}/proof")
async def file_proof(digest: Hex32, path: str, settings: SettingsDep) -> JSONResponse:
    """The self-contained proof of one file of a bundle (what `anchor prove` writes)."""
    stored = settings.proofs_dir / f"{digest.lower().removeprefix('0x')}.json"
    if not stored.is_file():
        raise NotAnchored(f"no anchored manifest {digest} here", detail={"manifest_digest": digest})
    single = single_file_proof(load_proof(stored), path)
    return JSONResponse(json.loads(single.dumps()))
