"""Built-in HTML pages that play the block explorer on the local chain: an attempt, its lineage tree
with the champion chain highlighted, a batch, and a bundle with its files and per-file proofs.

Every "on chain" statement on a page comes from a live registry read at the block the page names.
The HTML is Jinja2 templates in api/templates with autoescaping on for every value (a file name or a
researcher is a stranger's text); the pages need no JavaScript.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from anchor.anchoring.prove import single_file_proof
from anchor.chain.explorer import links
from anchor.errors import NotAnchored
from anchor.journal import reads
from anchor.manifest.onchain import commit_key, parse_hex32
from api.deps import ReaderDep, SettingsDep, anchored_proof, in_journal
from api.pages import page
from api.routes.research import find_attempt
from api.routes.verify import CommitOrHex32, Hex32

router = APIRouter(prefix="/explorer", tags=["explorer"], include_in_schema=False)


def _diff(settings: Any, entry: dict[str, Any]) -> str | None:
    """The attempt's code.diff if it is kept here and hashes to what its row binds; None otherwise."""
    from anchor.errors import AnchorError
    from api.routes.research import attempt_diff

    try:
        return attempt_diff(settings, entry["researcher"], entry["commit"]).decode("utf-8", "replace")
    except AnchorError:
        return None


@router.get("/attempt/{commit}", response_class=HTMLResponse)
async def attemptpage(commit: CommitOrHex32, settings: SettingsDep, reader: ReaderDep) -> HTMLResponse:
    _, entry = await run_in_threadpool(find_attempt, settings, commit)
    diff = await run_in_threadpool(_diff, settings, entry)
    registry = await run_in_threadpool(reader.registry)
    record = await run_in_threadpool(registry.lineage, commit_key(entry["commit"]))
    found = links(registry.chain_id, tx_hash=record.tx_hash) if record is not None else {}
    return page(
        "attempt.html",
        f"Attempt {entry['commit'][:12]}",
        reader.head(),
        e=entry,
        record=record,
        explorer_links=found,
        diff=diff,
    )


@router.get("/lineage/{commit}", response_class=HTMLResponse)
async def lineagepage(commit: CommitOrHex32, settings: SettingsDep, reader: ReaderDep) -> HTMLResponse:
    from anchor.research.loop import NO_PARENT
    from anchor.research.report import lineage_tree, summarise

    entries, target = await run_in_threadpool(find_attempt, settings, commit)
    data, _ = await run_in_threadpool(lineage_tree, entries, target["commit"], settings)
    mine = [e for e in entries if e["researcher"] == target["researcher"]]
    children: dict[str, list[dict[str, Any]]] = {}
    for e in mine:
        children.setdefault(e["parent"], []).append(e)
    return page(
        "lineage.html",
        f"Lineage of {target['commit'][:12]}",
        reader.head(),
        target=target,
        trials=len(mine),
        champion_chain=data["champion_chain"],
        champion=set(data["champion_chain"]),
        on_chain=data["lineage_on_chain"],
        children=children,
        roots=children.get(NO_PARENT, []),
        researchers=summarise(entries)[0]["researchers"],
    )


@router.get("/", response_class=HTMLResponse)
async def home(request: Request, reader: ReaderDep) -> HTMLResponse:
    """The latest batches of this service, and where to go next."""
    batches = await in_journal(request.app, lambda journal: reads.recent_batches(journal, reader.chain_id(), 20))
    # "records", not "items": in a template `b.items` is the dict's method, and the page showed
    # "<built-in method items of dict object at 0x…>" in every row
    rows = [
        {"root": "0x" + b.root.hex(), "records": b.items, "state": b.state, "block": b.block_number} for b in batches
    ]
    return page("home.html", "Anchor", reader.last_head(), batches=rows)


@router.get("/batch/{root}", response_class=HTMLResponse)
async def batchpage(root: Hex32, request: Request, reader: ReaderDep) -> HTMLResponse:
    key = bytes.fromhex(root.lower().removeprefix("0x"))
    effect, items = await in_journal(request.app, lambda journal: reads.batch(journal, reader.chain_id(), key))
    if effect is None:
        raise NotAnchored(f"no batch with root 0x{key.hex()} here", detail={"root": root})
    registry = await run_in_threadpool(reader.registry)
    record = await run_in_threadpool(registry.root_record, key)
    rows = [{"digest": "0x" + i.digest.hex(), "kind": i.kind, "state": i.state} for i in items]
    return page(
        "batch.html",
        f"Batch 0x{key.hex()[:16]}…",
        reader.head(),
        root="0x" + key.hex(),
        record=record,
        tx="0x" + (effect.tx_hash or b"").hex(),
        items=rows,
    )


@router.get("/bundle/{digest}", response_class=HTMLResponse)
async def bundlepage(digest: Hex32, request: Request, settings: SettingsDep, reader: ReaderDep) -> HTMLResponse:
    from api.routes.verify import verdict_of

    body_hex = digest.lower().removeprefix("0x")
    # this replica's proof file, else rebuilt from the journal the replicas share
    proof = await run_in_threadpool(anchored_proof, request.app, reader, parse_hex32(digest, "digest"))
    if proof is None:
        raise NotAnchored(f"no anchored manifest 0x{body_hex} here", detail={"manifest_digest": digest})
    # the one verdict the API and the CLI give (a result bundle's edited milestones are a 409 page)
    verification = await run_in_threadpool(verdict_of, proof, settings, request.app, reader)
    files = proof.filetree()
    return page(
        "bundle.html",
        f"Bundle {proof.manifest_digest[:18]}…",
        verification.read_at_block,
        proof=proof,
        verification=verification,
        digest="0x" + body_hex,
        files=files.files if files else (),
        timeline=_timeline(verification.milestones or {}),
    )


def _timeline(milestones: dict[str, str]) -> list[dict[str, Any]]:
    """Each milestone with its offset from the first, in seconds and as a share of the whole: what the
    page draws (no JavaScript, no chart library)."""
    from datetime import datetime

    if not milestones:
        return []
    try:  # proofs journaled before annotations were checked may hold anything: draw nothing, never a 500
        times = {name: datetime.fromisoformat(value) for name, value in milestones.items()}
        first, last = min(times.values()), max(times.values())  # naive beside aware: a TypeError
        span = (last - first).total_seconds() or 1.0
        return [
            {"name": name, "at": milestones[name], "seconds": (when - first).total_seconds(),
             "x": round(40 + 620 * (when - first).total_seconds() / span, 1)}
            for name, when in sorted(times.items(), key=lambda item: item[1])
        ]  # fmt: skip
    except (TypeError, ValueError):
        return []


@router.get("/bundle/{digest}/proof")
async def file_proof(digest: Hex32, path: str, request: Request, reader: ReaderDep) -> JSONResponse:
    """The self-contained proof of one file of a bundle (what `anchor prove` writes)."""
    whole = await run_in_threadpool(anchored_proof, request.app, reader, parse_hex32(digest, "digest"))
    if whole is None:
        raise NotAnchored(f"no anchored manifest {digest} here", detail={"manifest_digest": digest})
    single = single_file_proof(whole, path)
    return JSONResponse(json.loads(single.dumps()))
