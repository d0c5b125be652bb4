"""Built-in HTML pages that play the block explorer on the local chain: an attempt, its lineage tree
with the champion chain highlighted, a batch, and a bundle with its files and per-file proofs.

Every "on chain" statement on a page comes from a live registry read at the block the page names.
The HTML is Jinja2 templates in api/templates with autoescaping on for every value (a file name or a
researcher is a stranger's text); the pages need no JavaScript.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from anchor.anchoring.prove import single_file_proof
from anchor.chain.explorer import links
from anchor.errors import AnchorError, NotAnchored
from anchor.journal import reads
from anchor.manifest.onchain import commit_key, commit_of_key, parse_hex32
from anchor.research.ledger import LedgerRow, value_of
from api.deps import ReaderDep, SettingsDep, anchored_proof, in_journal
from api.pages import counted, page
from api.routes.research import find_attempt
from api.routes.verify import Hex32

router = APIRouter(prefix="/explorer", tags=["explorer"], include_in_schema=False)

CommitPrefix = Annotated[str, Path(pattern=r"^(0x)?[0-9a-fA-F]{7,64}$", examples=["f179994d64dc"])]
"""A commit as a person has it: its first 7 or more hex digits (as the CLI prints 12 of them), all 40, or
the 32-byte key the registry holds for it."""


def _diff(settings: Any, entry: LedgerRow) -> str | None:
    """The attempt's code.diff if it is kept here and hashes to what its row binds; None otherwise."""
    from api.routes.research import attempt_diff

    try:
        return attempt_diff(settings, entry["researcher"], entry["commit"]).decode("utf-8", "replace")
    except AnchorError:
        return None


@router.get("/attempt/{commit}", response_class=HTMLResponse)
async def attemptpage(commit: CommitPrefix, settings: SettingsDep, reader: ReaderDep) -> HTMLResponse:
    from anchor.research.report import trial_numbers

    entries, entry = await run_in_threadpool(find_attempt, settings, commit_of_key(commit), True)
    diff = await run_in_threadpool(_diff, settings, entry)
    registry = await run_in_threadpool(reader.registry)
    record = await run_in_threadpool(registry.lineage, commit_key(entry["commit"]))
    found = links(registry.chain_id, tx_hash=record.tx_hash) if record is not None else {}
    return page(
        "attempt.html",
        f"Attempt {entry['commit'][:12]}",
        reader.head(),
        chain=reader.where(),
        e=entry,
        trial=trial_numbers(entries)[entry["seq"]],
        record=record,
        explorer_links=found,
        diff=diff,
    )


@router.get("/lineage/{commit}", response_class=HTMLResponse)
async def lineagepage(commit: CommitPrefix, settings: SettingsDep, reader: ReaderDep) -> HTMLResponse:
    from anchor.research.loop import NO_PARENT
    from anchor.research.report import lineage_tree, summarise, trial_numbers

    entries, target = await run_in_threadpool(find_attempt, settings, commit_of_key(commit), True)
    data, _ = await run_in_threadpool(lineage_tree, entries, target["commit"], settings)
    trial = trial_numbers(entries)  # as the CLI and the API number them, not by ledger row
    mine = [{**e, "trial": trial[e["seq"]]} for e in entries if e["researcher"] == target["researcher"]]
    children: dict[str, list[dict[str, Any]]] = {}
    for e in mine:
        children.setdefault(str(e["parent"]), []).append(e)
    return page(
        "lineage.html",
        f"Lineage of {target['commit'][:12]}",
        reader.head(),
        chain=reader.where(),
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
async def home(request: Request, reader: ReaderDep, settings: SettingsDep) -> HTMLResponse:
    """What was anchored here last, each said as what it is (a file tree and its name, a research attempt
    and its trial, a champion, an MLflow run…) with its commit, when and by whom, and links to its page
    and to the research lineage; the searches and their champions; the latest batches."""
    chain_id = reader.chain_id()

    def latest(journal: Any) -> tuple[list[Any], list[Any], list[Any]]:
        items = reads.recent_items(journal, chain_id, RECENT_ITEMS)
        holding = reads.batches_by_id(journal, chain_id, {i.batch_id for i in items if i.batch_id is not None})
        return items, holding, reads.recent_batches(journal, chain_id, 20)

    items, holding, batches = await in_journal(request.app, latest)
    records = await run_in_threadpool(_anchored_records, request.app, reader, [*batches, *holding])
    research = await run_in_threadpool(_research_of, settings)
    anchored = [_described(i, records.get(i.batch_id) if i.batch_id is not None else None, research) for i in items]
    # "records", not "items": in a template `b.items` is the dict's method, and the page showed
    # "<built-in method items of dict object at 0x…>" in every row
    from anchor.chain.canonical import canonical_address, canonical_code_hash

    registry = await run_in_threadpool(reader.registry)
    shown = {
        "address": registry.address,
        "code_hash": registry.code_hash,
        "canonical": registry.address == canonical_address() and registry.code_hash == canonical_code_hash(),
    }
    return page(
        "home.html",
        "Anchor",
        reader.last_head(),
        chain=reader.where(),
        batches=_batch_rows(batches, records),
        registry=shown,
        anchored=anchored,
        searches=research["searches"],
    )


RECENT_ITEMS = 30
"""Records listed on the explorer's home, newest first (the search finds the rest)."""

KINDS = {
    "filetree": "file tree",
    "bundle": "result bundle",
    "attempt": "research attempt",
    "champion": "champion record",
    "ledger": "research ledger checkpoint",
    "timing": "timing record",
    "mlflow_run": "MLflow run",
    "mission": "mission",
}
"""Each manifest kind in words (docs/manifest.md)."""


def _research_of(settings: Any) -> dict[str, Any]:
    """Every search this service knows: per researcher the champion, its metric and the attempts, with
    the trial number of each attempt by (commit, ledger seq). A ledger that fails verification is left
    out here (its own pages say why)."""
    from anchor.research.report import summarise, trial_numbers
    from api.routes.research import searches

    trials: dict[tuple[str, int], int] = {}
    heads: dict[str, tuple[str, str]] = {}
    found = []
    try:
        known = searches(settings)
    except AnchorError:
        known = []
    for search, _, rows in known:
        entries = [row for row in rows if "event" not in row]
        numbers = trial_numbers(entries)
        trials.update({(e["commit"], int(e["seq"])): numbers[int(e["seq"])] for e in entries})
        for who, stats in summarise(entries)[0]["researchers"].items():
            last = next(e for e in reversed(entries) if e["researcher"] == who)
            found.append(
                {
                    "search": search,
                    "researcher": who,
                    "attempts": stats["attempts"],
                    "kept": stats["kept"],
                    "champion": stats["champion"],
                    "metric": stats["champion_metric"],
                    "lineage": stats["champion"] or last["commit"],
                }
            )
        if found and found[-1]["search"] == search:  # a checkpoint of this ledger leads to its lineage
            heads.update({str(row.get("digest")): (search, found[-1]["lineage"]) for row in rows})
    return {"searches": found, "trials": trials, "heads": heads}


def _described(item: Any, record: Any, research: dict[str, Any]) -> dict[str, Any]:
    """One row of the home page: what the record is, its name, commit, when and by whom, and where to go."""
    ident, kind = item.identity, item.kind
    digest = "0x" + item.digest.hex()
    row: dict[str, Any] = {
        "digest": digest,
        "kind": KINDS.get(kind, kind),
        "name": "",
        "detail": "",
        "commit": None,
        "lineage": None,
        "page": f"/explorer/bundle/{digest}",
        "state": item.state,
        "journaled_at": item.created_at,
        "anchored_at": getattr(record, "timestamp", None),
        "submitter": getattr(record, "submitter", None),
    }
    metric = ident.get("metric") if isinstance(ident.get("metric"), dict) else None
    said = f"{metric.get('name')} = {metric.get('value')}" if metric else ""
    if kind == "filetree":
        row["name"] = _stamped_name(item.proof_path)
        row["detail"] = f"{_count(ident.get('file_count'), 'file')}, {_count(ident.get('total_size'), 'byte')}"
    elif kind == "bundle":
        output = ident.get("output") or {}
        row["name"], row["detail"] = str(output.get("name", "")), _count(output.get("file_count"), "output file")
    elif kind == "attempt":
        commit = str(ident.get("commit", ""))
        trial = research["trials"].get((commit, int(item.annotations.get("ledger_seq", -1))))
        row["name"] = f"{ident.get('researcher')}, trial #{trial}" if trial else str(ident.get("researcher", ""))
        row["detail"] = f"{said or ident.get('status')}, {'kept' if ident.get('kept') else 'not kept'}"
        row.update(commit=commit, lineage=commit, page=f"/explorer/attempt/{quote(commit, safe='')}")
    elif kind == "champion":
        commit = str(ident.get("commit", ""))
        row["name"] = f"champion of {ident.get('researcher')}"
        row["detail"] = f"{said} after {ident.get('trials')} trials" if said else ""
        row.update(commit=commit, lineage=commit)
    elif kind == "ledger":
        search, lineage = research["heads"].get(str(ident.get("head")), (None, None))
        row["name"] = f"ledger of search {search}" if search else "a search's ledger"
        row["detail"], row["lineage"] = f"its first {ident.get('length')} rows", lineage
    elif kind == "mlflow_run":
        row["name"] = f"run {ident.get('run_id')}"
        row["detail"] = f"experiment {ident.get('experiment_id')}, {ident.get('status', '').lower()}"
        row["commit"] = ident.get("source_commit")
    elif kind == "timing":
        row["name"], row["detail"] = "milestones of a result bundle", f"bundle 0x{str(ident.get('bundle', ''))[:12]}…"
    elif kind == "mission":
        hypothesis = str(ident.get("hypothesis", ""))
        row["name"] = hypothesis[:80] + ("…" if len(hypothesis) > 80 else "")
    return row


def _count(n: object, noun: str) -> str:
    return counted(n, noun) if isinstance(n, int) else f"{n} {noun}s"


def _stamped_name(proof_path: str | None) -> str:
    """The name a tree was stamped under, from its proof file's (`results.anchor.json`: "results");
    never the directories above it, which are this server's own layout."""
    if not proof_path:
        return ""
    from pathlib import PurePath

    return PurePath(proof_path).name.removesuffix(".anchor.json")


def _batch_rows(batches: list[Any], records: dict[int, Any]) -> list[dict[str, Any]]:
    """A table row per batch: its root, records, state, block, and who anchored it when, as the chain
    says; "this service" only where the chain's submitter is the key that signed the journal's own
    transaction for it (confirmed, never assumed)."""
    rows = []
    for b in batches:
        record = records.get(b.id)
        submitter = getattr(record, "submitter", None)
        rows.append(
            {
                "root": "0x" + b.root.hex(),
                "records": b.items,
                "state": b.state,
                "block": b.block_number,
                "anchored_at": getattr(record, "timestamp", None),
                "submitter": submitter,
                "ours": submitter is not None and str(submitter).lower() == str(b.sender).lower(),
            }
        )
    return rows


SearchText = Annotated[str, Query(alias="q", max_length=512, description="A digest, root, tx, address or path.")]


@router.get("/search", response_class=HTMLResponse)
async def searchpage(request: Request, reader: ReaderDep, q: SearchText = "") -> HTMLResponse:
    """What was anchored here, found by manifest digest, batch root, transaction, submitter or path."""
    chain_id = reader.chain_id()

    def lookup(journal: Any) -> tuple[dict[str, list[Any]], list[Any]]:
        found = reads.search(journal, chain_id, q)
        held = {i["effect_id"] for i in found["items"] if i["effect_id"] is not None}
        return found, reads.batches_by_id(journal, chain_id, held)

    found, holding = await in_journal(request.app, lookup)
    records = await run_in_threadpool(_anchored_records, request.app, reader, [*found["batches"], *holding])
    attempts = await run_in_threadpool(_attempts_of, request.app.state.settings, q)
    items = [
        {"digest": "0x" + bytes(i["digest"]).hex(), "kind": i["kind"], "state": _state(i, records)}
        for i in found["items"]
    ]
    batches = _batch_rows(found["batches"], records)
    return page(
        "search.html",
        f"Search: {q[:60]}",
        reader.last_head(),
        chain=reader.where(),
        q=q,
        items=items,
        batches=batches,
        attempts=attempts,
    )


def _state(item: Any, records: dict[int, Any]) -> str:
    """An item's state in the journal, and its record's retraction on chain: a retracted manifest read
    "confirmed" in the search, with no mark."""
    record = records.get(item["effect_id"]) if item["effect_id"] is not None else None
    retracted = getattr(record, "retracted_block", 0)
    return f"{item['state']} · retracted by its submitter (block {retracted})" if retracted else str(item["state"])


def _attempts_of(settings: Any, query: str) -> list[dict[str, Any]]:
    """The research attempts of a commit (its full id or 7+ hex digits of it), over every search here."""
    import re

    body = query.strip().lower().removeprefix("0x")
    if not re.fullmatch(r"[0-9a-f]{7,40}", body):
        return []
    try:
        _, entry = find_attempt(settings, body, prefix=True)
    except AnchorError:
        return []
    return [
        {
            "commit": entry["commit"],
            "researcher": entry["researcher"],
            "status": entry["status"],
            "kept": entry["kept"],
            "metric": value_of(entry),
        }
    ]


RECORD_FRESH_S = 10.0
"""How long a record read as not retracted is shown without reading it again: a record is written once,
but its submitter may retract it once, later (a retracted one is final, kept for good)."""


def _anchored_records(app: Any, reader: Any, batches: list[Any]) -> dict[int, Any]:
    """The registry's record (submitter, time, retraction) of each confirmed batch, kept: a retracted
    record for good, one that is not for RECORD_FRESH_S (kept for good, a retraction after the first read
    never showed on the home or search page)."""
    import time

    kept: dict[tuple[bytes, bytes], tuple[Any, float]] = app.state.__dict__.setdefault("anchored_records", {})
    found: dict[int, Any] = {}
    registry = None
    now = time.monotonic()
    for batch in batches:
        if batch.state != "confirmed" or batch.tx_hash is None:
            continue
        key = (bytes(batch.root), bytes(batch.tx_hash))
        held = kept.get(key)
        if held is None or (not held[0].retracted_block and now - held[1] > RECORD_FRESH_S):
            registry = registry or reader.registry()
            record = registry.root_record_of_tx(key[0], "0x" + key[1].hex())
            if record is None:
                continue
            if len(kept) > 10_000:
                kept.clear()
            kept[key] = held = (record, now)
        found[batch.id] = held[0]
    return found


@router.get("/batch/{root}", response_class=HTMLResponse)
async def batchpage(root: Hex32, request: Request, reader: ReaderDep) -> HTMLResponse:
    key = bytes.fromhex(root.lower().removeprefix("0x"))
    effect, items = await in_journal(request.app, lambda journal: reads.batch(journal, reader.chain_id(), key))
    if effect is None:
        raise NotAnchored(f"no batch with root 0x{key.hex()} here", detail={"root": root})
    registry = await run_in_threadpool(reader.registry)
    tx = None if effect.tx_hash is None else "0x" + bytes(effect.tx_hash).hex()
    record = await run_in_threadpool(registry.root_record_of_tx, key, tx)
    retraction = None if record is None else await run_in_threadpool(registry.root_retraction, record)
    rows = [{"digest": "0x" + i.digest.hex(), "kind": i.kind, "state": i.state} for i in items]
    return page(
        "batch.html",
        f"Batch 0x{key.hex()[:16]}…",
        reader.head(),
        chain=reader.where(),
        registry=registry.address,
        root="0x" + key.hex(),
        record=record,
        retraction=retraction,
        tx="0x" + (effect.tx_hash or b"").hex(),
        items=rows,
    )


PAGE_FILES = 500
"""Files listed on one bundle page: a 200,000-file bundle made one 52 MB page that took the event
loop 6-7 s to render; `?page=N` walks the rest."""

BUNDLE_CACHE_FILES = 1_000_000
"""Files held by the per-digest cache of bundle listings, over every bundle in it (oldest dropped)."""
_listing_lock = threading.Lock()
PageNumber = Annotated[int, Query(alias="page", ge=1, le=1_000_000, description="Which page of the file listing.")]


@router.get("/bundle/{digest}", response_class=HTMLResponse)
async def bundlepage(
    digest: Hex32, request: Request, settings: SettingsDep, reader: ReaderDep, page_number: PageNumber = 1
) -> HTMLResponse:
    key = parse_hex32(digest, "digest")
    async with _one_at_a_time(request.app):  # pages wait on the loop, holding no thread and no GIL
        return await _bundle_page(key, request, settings, reader, page_number)


def _one_at_a_time(app: Any) -> asyncio.Semaphore:
    """One bundle page built at a time per process. Why: building and rendering are CPU in pool
    threads, and the event loop needs the GIL between them: six clients loading pages at once kept
    six threads contending with it, and /health waited 150 ms (p99). Queued page loads wait here on
    the loop instead."""
    slots: asyncio.Semaphore | None = getattr(app.state, "bundle_page_slots", None)
    if slots is None:
        slots = app.state.bundle_page_slots = asyncio.Semaphore(1)
    return slots


async def _bundle_page(key: bytes, request: Request, settings: Any, reader: Any, page_number: int) -> HTMLResponse:
    from anchor.readback.verifier import Verification
    from api.routes.verify import cached_verdict

    # the proof and its listing, once per digest (immutable once anchored), built in the pool
    header, files, loaded = await run_in_threadpool(_bundle_listing, request.app, reader, key)
    # the one verdict the API and the CLI give, shared with /v1/verify (a result bundle's edited
    # milestones are a 409 page); on a first view, from the proof the listing was just built from
    verdict = await cached_verdict(request, settings, reader, key, loaded)
    verification = Verification.model_validate_json(verdict)
    pages = max(1, -(-len(files) // PAGE_FILES))
    if page_number > pages:
        raise NotAnchored(
            f"page {page_number}: this bundle's listing has {pages} pages", detail={"field": "page", "pages": pages}
        )
    first = (page_number - 1) * PAGE_FILES
    shown = [{"path": p, "size": n, "blake3": b} for p, n, b in files[first : first + PAGE_FILES]]
    return await run_in_threadpool(  # rendering is CPU: off the event loop too
        page,
        "bundle.html",
        f"Bundle {header.manifest_digest[:18]}…",
        verification.read_at_block,
        chain=reader.where(),
        proof=header,
        verification=verification,
        digest="0x" + key.hex(),
        files=shown,
        listing={
            "page": page_number,
            "pages": pages,
            "first": first + 1,
            "last": first + len(shown),
            "total": len(files),
        },
        timeline=_timeline(verification.milestones or {}),
    )


def _bundle_listing(app: Any, reader: Any, digest: bytes) -> tuple[Any, tuple[tuple[str, int, str], ...], Any]:
    """(the proof without its listing, the listing as (path, size, BLAKE3) rows, the whole proof when it
    was read now else None), from a per-digest cache (app.state.bundle_listings, at most
    BUNDLE_CACHE_FILES files over all bundles): what a bundle page shows never changes once anchored,
    only the verdict does (read per block)."""
    cache: OrderedDict[bytes, Any] = app.state.__dict__.setdefault("bundle_listings", OrderedDict())
    with _listing_lock:
        if digest in cache:
            cache.move_to_end(digest)
            header, rows = cache[digest]
            return header, rows, None
    proof = anchored_proof(app, reader, digest)
    if proof is None:
        raise NotAnchored(
            f"no anchored manifest 0x{digest.hex()} here", detail={"manifest_digest": "0x" + digest.hex()}
        )
    tree = proof._filetree()
    rows = tuple((f.path, f.size, f.blake3) for f in tree.files) if tree else ()
    entry = (proof.model_copy(update={"files": None}), rows)
    with _listing_lock:
        cache[digest] = entry
        while len(cache) > 1 and sum(len(r) for _, r in cache.values()) > BUNDLE_CACHE_FILES:
            cache.popitem(last=False)
    return (*entry, proof)


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
            {
                "name": name,
                "at": milestones[name],
                "seconds": (when - first).total_seconds(),
                "x": round(40 + 620 * (when - first).total_seconds() / span, 1),
            }
            for name, when in sorted(times.items(), key=lambda item: item[1])
        ]
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


@router.get("/promotion/{digest}", response_class=HTMLResponse)
async def promotionpage(digest: Hex32, settings: SettingsDep, reader: ReaderDep) -> HTMLResponse:
    """A model's promotion (anchor mlflow promote): its lineage record, the run it stands on, what it
    promoted where this service's data dir kept the record, and the history of the alias on chain."""
    from anchor.mlflow.registry import read_promotion

    key = parse_hex32(digest, "digest")
    registry = await run_in_threadpool(reader.registry)
    found = await run_in_threadpool(read_promotion, registry, key, settings.layout.mlflow_promotion(key.hex()))
    record = found["record"]
    return page(
        "promotion.html",
        f"Promotion {found['digest'][:18]}…",
        reader.head(),
        chain=reader.where(),
        explorer_links=links(registry.chain_id, tx_hash=record.tx_hash),
        **found,
    )
