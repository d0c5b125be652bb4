"""The chain-only explorer's pages: home (search, recent anchors, researchers), a researcher's attempts
with the metric chart and lineage tree, an attempt with its diff, a batch root, and search by commit,
researcher, root or transaction. Every record on a page is a registry event from the index; the
header says up to which block and through which endpoint."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from anchor.errors import NotAnchored
from anchor.manifest.onchain import commit_of_key
from api.pages import page

router = APIRouter(include_in_schema=False)

Address = Annotated[str, Path(pattern=r"^0x[0-9a-fA-F]{40}$")]
Key = Annotated[str, Path(pattern=r"^(0x)?([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$")]


def _site(request: Request) -> Any:
    return request.app.state.site


def _read(request: Request, fn: Any) -> Any:
    site = _site(request)
    with site.lock:
        return fn(site.follower.store)


def _header(request: Request) -> dict[str, Any]:
    site = _site(request)
    store = site.follower.store
    with site.lock:
        cursor, counts = store.cursor(), store.counts()
    from anchor.chain.presets import chain_name

    return {
        "cursor": cursor,
        "counts": counts,
        "rpc": site.rpc_label,
        "registry": site.follower.address,
        "chain_id": site.chain_id,
        "chain": chain_name(site.chain_id),
        "code_hash": site.follower.code_hash,
        "version": site.follower.version,
        "canonical": _is_canonical(site.follower.address),
        "from_block": site.follower.from_block,
        "error": site.last_error,
        "confirmations": site.follower.confirmations,
    }


def _commit32(key: str) -> str:
    body = key.lower().removeprefix("0x")
    return "0x" + (body + "0" * 24 if len(body) == 40 else body)


def _show(html: str, request: Request, title: str, **values: Any) -> HTMLResponse:
    info = _header(request)
    return page(f"index/{html}", title, info["cursor"], site=info, short=commit_of_key, **values)


RESEARCHERS_PER_PAGE = 50
RECORDS_PER_PAGE = 20
"""Pages are bounded: anyone can make a researcher (a fresh key) and relay records of any commit under
it. 500 sybil records of one commit made its attempt page 690 KB and 1.4-1.8 s, with 500 `git diff`
processes per view; the home page listed every researcher."""
PageNumber = Annotated[int, Query(alias="page", ge=1, le=1_000_000)]


def _pages(total: int, per_page: int, page_number: int, what: str) -> dict[str, int]:
    pages = max(1, -(-total // per_page))
    if page_number > pages:
        raise NotAnchored(f"page {page_number}: there are {pages} pages of {what}", detail={"page": page_number})
    first = (page_number - 1) * per_page
    return {"page": page_number, "pages": pages, "offset": first, "total": total}


@router.get("/", response_class=HTMLResponse)
async def home(request: Request, page_number: PageNumber = 1) -> HTMLResponse:
    recent = await run_in_threadpool(_read, request, lambda s: s.recent(25))
    recent = await run_in_threadpool(_with_times, request, recent)
    total = (await run_in_threadpool(_read, request, lambda s: s.counts()))["researchers"]
    listing = _pages(total, RESEARCHERS_PER_PAGE, page_number, "researchers")
    researchers = await run_in_threadpool(
        _read, request, lambda s: s.researchers(RESEARCHERS_PER_PAGE, listing["offset"])
    )
    return _show(
        "home.html", request, "Anchor · chain-only explorer", recent=recent, researchers=researchers, listing=listing
    )


def _with_times(request: Request, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each record with its UTC time: a lineage record carries its own, a root gets its block's (read
    once per block and kept: a block that stays in the index does not change its time)."""
    site = _site(request)
    times: dict[int, int] = request.app.state.__dict__.setdefault("block_times", {})
    for row in rows:
        if row.get("timestamp") is None and row.get("block") is not None:
            number = int(row["block"])
            if number not in times:
                at = site.follower.block_time(number)  # agreed by the quorum, when several endpoints are read
                if at is None:
                    continue
                if len(times) > 100_000:
                    times.clear()
                times[number] = at
            row["timestamp"] = times[number]
    return rows


@router.get("/search", response_class=HTMLResponse, response_model=None)
async def search(request: Request, q: Annotated[str, Query(max_length=200)] = "") -> HTMLResponse | RedirectResponse:
    hits = await run_in_threadpool(_read, request, lambda s: s.search(q))
    if len(hits) == 1:
        hit = hits[0]
        where = {"lineage": "attempt", "root": "batch", "researcher": "researcher"}[hit["kind"]]
        return RedirectResponse(f"/{where}/{hit['key']}", status_code=303)
    body = q.strip().lower().removeprefix("0x")
    claimed = [c for c in _site(request).claims if len(body) >= 7 and c.commit[2:].startswith(body)][:20]
    return _show("search.html", request, f"Search: {q[:80]}", q=q, hits=hits, claimed=claimed, status_code=404)


def _claims_of(request: Request, records: list[dict[str, Any]]) -> tuple[list[Any], set[str]]:
    """The published ledger's attempts of the researcher these records belong to (matched by commit)."""
    claims = _site(request).claims
    on_chain = {r["commit_id"] for r in records}
    names = {c.researcher for c in claims if c.commit in on_chain}
    return [c for c in claims if c.researcher in names], names


def _number(value: str | None) -> float | None:
    try:
        return float(Decimal(value)) if value is not None else None
    except (InvalidOperation, ValueError):
        return None


def metric_chart(claims: list[Any], records: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The metric over trials (ledger order) as SVG coordinates, with the champion line: the value of the
    last attempt kept whose metric matches its record on chain. None when nothing can be plotted."""
    values = [(i + 1, c, _number(c.metric_value)) for i, c in enumerate(claims)]
    plotted = [(x, c, y) for x, c, y in values if y is not None]
    if not plotted:
        return None
    low, high = min(y for _, _, y in plotted), max(y for _, _, y in plotted)
    span, n = (high - low) or 1.0, len(claims)

    def sx(x: float) -> float:
        return round(50 + 600 * (x - 1) / max(1, n - 1), 1)

    def sy(y: float) -> float:
        return round(210 - 180 * (y - low) / span, 1)

    points, line, champion = [], [], None
    for x, c, y in plotted:
        record = records.get(c.commit)
        state = "claimed" if record is None else ("matches" if record["metric_hash"] == c.metric_hash else "differs")
        if state == "matches" and record is not None and record["kept"]:
            champion = y
        points.append(
            {
                "x": sx(x),
                "y": sy(y),
                "state": state,
                "trial": x,
                "value": c.metric_value,
                "commit": c.commit,
                "kept": c.kept,
            }
        )
        if champion is not None:
            line.append(f"{sx(x)},{sy(champion)}")
    name = next((c.metric_name for c in claims if c.metric_name), "metric")
    return {
        "points": points,
        "line": " ".join(line),
        "low": low,
        "high": high,
        "trials": n,
        "name": name,
        "y_low": sy(low),
        "y_high": sy(high),
    }


@router.get("/researcher/{address}", response_class=HTMLResponse)
async def researcher(address: Address, request: Request) -> HTMLResponse:
    who = address.lower()
    records = await run_in_threadpool(_read, request, lambda s: s.attempts(who))
    checkpoints = await run_in_threadpool(_read, request, lambda s: s.checkpoints(who))
    if not records and not checkpoints:
        raise NotAnchored(f"no lineage record by {address} in this index", detail={"researcher": address})
    claims, names = _claims_of(request, records)
    by_commit = {r["commit_id"]: r for r in records}
    claimed = {c.commit: c for c in claims}
    children: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        children.setdefault(r["parent"] if r["parent"] in by_commit else "", []).append(r)
    return _show(
        "researcher.html",
        request,
        f"Researcher {address}",
        who=who,
        records=records,
        claimed=claimed,
        names=sorted(names),
        chart=metric_chart(claims, by_commit),
        children=children,
        roots=children.get("", []),
        trials=len(claims),
        checkpoints=checkpoints,
        longest=max((int(c["metric_hash"][-16:], 16) for c in checkpoints), default=0),
    )


@router.get("/attempt/{commit}", response_class=HTMLResponse)
async def attempt(commit: Key, request: Request, page_number: PageNumber = 1) -> HTMLResponse:
    from anchor.index.claims import verified_diff

    key = _commit32(commit)
    total = await run_in_threadpool(_read, request, lambda s: s.lineage_count(key))
    if not total:
        raise NotAnchored(f"no lineage record of commit {commit} in this index", detail={"commit": commit})
    listing = _pages(total, RECORDS_PER_PAGE, page_number, "records of this commit")
    records = await run_in_threadpool(_read, request, lambda s: s.lineage_of(key, RECORDS_PER_PAGE, listing["offset"]))
    site = _site(request)
    claims = {c.commit: c for c in site.claims}
    shown = []
    for r in records:
        kids = await run_in_threadpool(_read, request, lambda s, r=r: s.children(r["researcher"], r["commit_id"]))
        diff: tuple[str, bytes | None] = ("no --repo given", None)
        if site.repo is not None:
            diff = await run_in_threadpool(verified_diff, site.repo, r["parent"], r["commit_id"], r["diff_hash"])
        claim = claims.get(r["commit_id"])
        matches = claim is not None and claim.metric_hash == r["metric_hash"]
        text = diff[1].decode("utf-8", "replace") if diff[1] is not None else None
        shown.append(
            {"r": r, "children": kids, "diff_state": diff[0], "diff": text, "claim": claim, "claim_matches": matches}
        )
    return _show(
        "attempt.html",
        request,
        f"Attempt {commit_of_key(key)[:12]}",
        key=key,
        shown=shown,
        listing=listing,
        here=f"/attempt/{key}",
    )


@router.get("/batch/{root}", response_class=HTMLResponse)
async def batch(root: Annotated[str, Path(pattern=r"^(0x)?[0-9a-fA-F]{64}$")], request: Request) -> HTMLResponse:
    key = "0x" + root.lower().removeprefix("0x")
    record = await run_in_threadpool(_read, request, lambda s: s.root(key))
    if record is None:
        raise NotAnchored(f"no batch root {key} in this index", detail={"root": key})
    live = await run_in_threadpool(_site(request).follower.root_record, key, record["submitter"])

    def utc(seconds: int) -> str:
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")

    anchored_at = utc(live["timestamp"]) if live else None
    retracted_at = utc(live["retracted_at"]) if live and live["retracted_block"] else None
    return _show(
        "batch.html",
        request,
        f"Batch root {key[:18]}…",
        record=record,
        live=live,
        anchored_at=anchored_at,
        retracted_at=retracted_at,
    )


def _is_canonical(address: str) -> bool:
    from anchor.chain.canonical import is_canonical

    return is_canonical(address)


def install_error_pages(app: FastAPI) -> None:
    """People browse this site: a typed error is a page saying what was not found, with its status;
    the shape and status are the ones api/errors.py gives every client."""
    from fastapi.exceptions import RequestValidationError

    from anchor.errors import AnchorError

    @app.exception_handler(AnchorError)
    async def anchor_error(request: Request, exc: AnchorError) -> HTMLResponse:
        return _show(
            "error.html",
            request,
            "Not found" if exc.http_status == 404 else "Error",  # noqa: PLR2004
            message=exc.message,
            code=exc.code,
            status_code=exc.http_status,
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> HTMLResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": ("?",)}
        field = str(first["loc"][-1])
        message = f"{field}: not a commit id, address, root or transaction hash this site can look up"
        return _show("error.html", request, "Not found", message=message, code="bad_input", status_code=422)
