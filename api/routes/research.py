"""Read-back for teams: a researcher's attempts over every search this service knows, and the code
diff of an attempt, checked against the digest its ledger row binds before it is served.

Every ledger is verified (its hash chain) before any of its rows is served; a tampered ledger is a
409 naming the row, not a partial answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, TypeVar
from urllib.parse import quote

import blake3
from fastapi import APIRouter, Query
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.concurrency import run_in_threadpool

from anchor.errors import BadInput, NotAnchored, RateLimited, Tampered, UnsafePath
from anchor.files import read_regular
from anchor.record import Value
from anchor.research.ledger import LedgerRow
from anchor.settings.session import Settings
from api.deps import SettingsDep
from api.routes.verify import ERRORS, CommitOrHex32
from api.schemas import ResearchAttempt, ResearchAttemptPage, ResearchVerdict

T = TypeVar("T")

router = APIRouter(prefix="/v1/research", tags=["research"])

Researcher = Annotated[str, PathParam(min_length=1, max_length=128, description="a researcher id, e.g. r0")]
MAX_DIFF_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class _Verified(Value):
    """One ledger as it was verified under `stamp`, with its rows indexed by researcher."""

    stamp: tuple[object, ...]
    search: str
    workdir: Path
    rows: list[LedgerRow]
    by_researcher: dict[str, list[tuple[str, Path, LedgerRow, str | None]]]
    """researcher -> [(search id, work dir, outcome row, started_at of its trace)], in ledger order."""


_verified: dict[str, _Verified] = {}
_verified_lock = threading.Lock()


def _index(
    search: str, workdir: Path, rows: list[LedgerRow]
) -> dict[str, list[tuple[str, Path, LedgerRow, str | None]]]:
    """researcher -> [(search, work dir, outcome row, started_at of its trace)], in ledger order."""
    out: dict[str, list[tuple[str, Path, LedgerRow, str | None]]] = {}
    started: dict[tuple[str, str], str] = {}
    for row in rows:
        who = row.get("researcher")
        if not isinstance(who, str):
            continue
        if row.get("event") == "started":
            started[(who, row["commit"])] = row.get("started_at", "")
        elif "event" not in row:  # an outcome; other events (a rejected proposal) have no outcome
            out.setdefault(who, []).append((search, workdir, row, started.pop((who, row["commit"]), None)))
    return out


def _verified_searches(settings: Settings) -> list[_Verified]:
    """Every search of this data dir (the file ledgers of its known work dirs, and the PostgreSQL
    ledgers when ANCHOR_JOURNAL_URL names a database), each verified once per change.

    Why cached: every read verified every ledger's hash chain; on a 20,000-attempt ledger one
    anonymous page cost ~2 s of CPU. A ledger is verified again only when its stamp moves (file:
    size, times and inode; PostgreSQL: row count, last seq and last row), so what is served was
    verified; a ledger that fails verification is never cached and answers 409 every time."""
    from anchor.research.searches import known_ledgers

    found = []
    for ledger in known_ledgers(settings.data_dir, settings.journal_url):
        key = ledger.where
        try:
            stamp = ledger.stamp()
        except OSError:
            continue  # a known work dir whose ledger is gone: nothing to serve from it
        with _verified_lock:
            cached = _verified.get(key)
        if cached is None or cached.stamp != stamp:
            ledger.verify()
            rows = ledger.rows()
            if not rows:
                continue
            search = blake3.blake3(rows[0]["digest"].encode()).hexdigest()[:12]
            cached = _Verified(stamp, search, ledger.workdir, rows, _index(search, ledger.workdir, rows))
            with _verified_lock:
                _verified[key] = cached
        found.append(cached)
    return found


def searches(settings: Settings) -> list[tuple[str, Path, list[LedgerRow]]]:
    """(search id, work dir, verified rows) of every search of this data dir."""
    return [(v.search, v.workdir, v.rows) for v in _verified_searches(settings)]


def find_attempt(settings: Settings, commit: str, prefix: bool = False) -> tuple[list[LedgerRow], LedgerRow]:
    """The attempts of the search that has `commit` (or, with `prefix`, a commit starting with it), over
    every search this service knows, ledgers verified, and its row: the last one for that commit (an
    interrupted baseline measured again)."""
    body = commit.lower().removeprefix("0x")
    known = searches(settings)
    if prefix:  # as git takes a short commit: the start of exactly one
        starting = sorted(
            {
                str(r["commit"])
                for _, _, rows in known
                for r in rows
                if "event" not in r and r["commit"].startswith(body)
            }
        )
        if len(starting) > 1:
            raise BadInput(
                f"commit {body}: the start of {len(starting)} commits ({', '.join(c[:12] for c in starting[:3])}…);"
                " give more of its digits",
                detail={"field": "commit"},
            )
    for _, _, rows in known:
        entries = [row for row in rows if "event" not in row]
        for entry in reversed(entries):
            if entry["commit"] == body or (prefix and entry["commit"].startswith(body)):
                return entries, entry
    raise NotAnchored(f"no attempt {body} in the research ledger", detail={"commit": commit})


def _attempts_of(settings: Settings, researcher: str) -> list[tuple[str, Path, LedgerRow, str | None]]:
    """(search id, work dir, outcome row, started_at of its trace) for `researcher`, in ledger order (the
    cached index itself when one search has them: never copied per request; callers only read it)."""
    parts = [v.by_researcher[researcher] for v in _verified_searches(settings) if researcher in v.by_researcher]
    return parts[0] if len(parts) == 1 else [item for part in parts for item in part]


def _public(search: str, researcher: str, row: LedgerRow, started_at: str | None, trial: int) -> ResearchAttempt:
    who, commit = quote(researcher, safe=""), row["commit"]
    return ResearchAttempt(
        search=search,
        seq=row["seq"],
        trial=trial,
        commit=commit,
        parent=row["parent"],
        status=row["status"],
        kept=row["kept"],
        metric=row.get("metric"),
        partial=row.get("partial"),
        measured_by=row.get("measured_by"),
        environment=row.get("environment"),
        claims_differ=row.get("claims_differ"),
        started_at=started_at,
        duration_ms=row.get("duration_ms"),
        exit_code=row.get("exit_code"),
        attempt_digest=row["attempt_digest"],
        diff_blake3=row["diff_blake3"],
        contract_digest=row["contract_digest"],
        sandbox=row.get("sandbox"),
        links={"diff": f"/v1/research/{who}/attempts/{commit}/diff", "page": f"/explorer/attempt/{commit}"},
    )


@router.get("/{researcher}/attempts", operation_id="list_research_attempts", responses=ERRORS)
async def list_attempts(
    researcher: Researcher,
    settings: SettingsDep,
    status: Annotated[Literal["completed", "failed", "timed_out", "interrupted"] | None, Query()] = None,
    kept: Annotated[bool | None, Query()] = None,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> ResearchAttemptPage:
    """A researcher's attempts over every search this service knows, oldest first; filter by `status`
    and `kept`, page with `offset` and `limit`."""

    def compute() -> ResearchAttemptPage:
        found = _attempts_of(settings, researcher)
        if not found:
            raise NotAnchored(f"no attempts by researcher {researcher!r} here", detail={"researcher": researcher})
        chosen = (
            found
            if status is None and kept is None  # no filter: a slice of the cached index
            else [
                item
                for item in found
                if (status is None or item[2]["status"] == status) and (kept is None or item[2]["kept"] == kept)
            ]
        )
        trial = _trials(found)
        page = [(search, row, started) for search, _, row, started in chosen[offset : offset + limit]]
        return ResearchAttemptPage(
            researcher=researcher,
            total=len(chosen),
            offset=offset,
            limit=limit,
            next_offset=offset + limit if offset + limit < len(chosen) else None,
            attempts=[
                _public(search, researcher, row, started, trial[search, row["seq"]]) for search, row, started in page
            ],
        )

    return await run_in_threadpool(compute)


def _trials(found: list[tuple[str, Path, LedgerRow, str | None]]) -> dict[tuple[str, int], int]:
    """The trial number of each (search, ledger seq) of one researcher's attempts (anchor.research.report)."""
    from anchor.research.report import trial_numbers

    by_search: dict[str, list[LedgerRow]] = {}
    for search, _, row, _ in found:
        by_search.setdefault(search, []).append(row)
    return {(search, seq): n for search, rows in by_search.items() for seq, n in trial_numbers(rows).items()}


def attempt_diff(settings: Settings, researcher: str, commit: str) -> bytes:
    """The code.diff of `researcher`'s attempt `commit`, only if it hashes to the digest its ledger row
    binds (`Tampered` otherwise); `NotAnchored` when there is no such attempt or no diff left."""
    from anchor.research.evidence import evidence_dir_of

    body = commit.lower().removeprefix("0x")
    for _, workdir, row, _ in reversed(_attempts_of(settings, researcher)):
        if row["commit"] != body:
            continue
        path = evidence_dir_of(workdir, row) / "code.diff"
        try:  # the attempt could write in its run dir: never follow what it left there, never block on it
            data = read_regular(path, MAX_DIFF_BYTES)
        except UnsafePath as exc:
            raise Tampered(
                f"the code.diff of attempt {body} is not a regular file ({exc.message}); not served",
                detail={"commit": body, "seq": row["seq"]},
            ) from None
        except OSError:
            raise NotAnchored(f"the code.diff of attempt {body} is not kept here", detail={"commit": body}) from None
        if len(data) > MAX_DIFF_BYTES or blake3.blake3(data).hexdigest() != row["diff_blake3"]:
            raise Tampered(
                f"the code.diff of attempt {body} does not hash to the diff_blake3 its ledger row binds",
                detail={"commit": body, "seq": row["seq"]},
            )
        return data
    raise NotAnchored(f"no attempt {body} by researcher {researcher!r} here", detail={"commit": body})


@router.get(
    "/{researcher}/attempts/{commit}/diff",
    operation_id="get_research_attempt_diff",
    responses={**ERRORS, 200: {"content": {"text/x-diff": {}}}},
    response_class=PlainTextResponse,
)
async def get_diff(researcher: Researcher, commit: CommitOrHex32, settings: SettingsDep) -> PlainTextResponse:
    """The attempt's code.diff (what it changed from its champion), checked against the ledger's digest."""
    data = await run_in_threadpool(attempt_diff, settings, researcher, commit)
    return PlainTextResponse(
        data.decode("utf-8", "replace"), media_type="text/x-diff", headers={"X-Content-Type-Options": "nosniff"}
    )


Search = Annotated[str, PathParam(pattern=r"^[0-9a-f]{12}$", description="a search id, as the attempts list it")]
_auditing = threading.BoundedSemaphore(1)
"""One search audit at a time per worker: an audit re-hashes every run dir and runs git, and the route is
public; a second request waits up to `AUDIT_WAIT_S`, then is told to come back (429), so anonymous
clients cannot hold every pool thread. Never cached: a run dir edited since is an edit to report."""
AUDIT_WAIT_S = 30.0


@router.get("/searches/{search}/verify", operation_id="verify_research_search", responses=ERRORS)
async def verify_search_route(search: Search, settings: SettingsDep) -> ResearchVerdict:
    """`anchor research verify` of one search this service knows: the ledger's hash chain, its anchored
    checkpoints (proof files and the records found on chain), every commit and run dir re-hashed, the
    champion records recomputed (anchor.research.verdict). An edit is 409 (`tampered`), naming it."""
    from anchor.research.verdict import verify_search

    def compute() -> ResearchVerdict:
        v = _audited(settings, search, verify_search)
        return ResearchVerdict(
            search=search,
            entries=v.entries,
            head=v.head,
            attempts=v.attempts,
            anchored_checkpoints=v.anchored.checkpoints,
            anchored_length=v.anchored.length,
            anchored_block=v.anchored.block,
            chain_records=v.found.checkpoints,
            chain_trusted=list(v.found.trusted),
            chain_untrusted=list(v.found.others),
            commits=v.audit.commits,
            run_dirs=v.audit.evidence,
            legacy_entries=v.audit.legacy,
            final_runs=v.final_runs,
        )

    return await run_in_threadpool(compute)


@router.get("/searches/{search}/report", operation_id="report_research_search", responses=ERRORS)
async def report_search_route(search: Search, settings: SettingsDep) -> JSONResponse:
    """`anchor research report --json` of one search this service knows (anchor.research.report_search):
    per researcher the attempts, rejections, keep rule and champion, the champion record's final numbers
    with their sample size and intervals, and the trials the anchored checkpoints cover; from the verified
    ledger (an edited one is 409, `tampered`)."""
    from anchor.research import report_search

    found = await run_in_threadpool(_audited, settings, search, report_search)
    return JSONResponse(found.data)


def _audited(settings: Settings, search: str, read: Callable[[Settings, Path], T]) -> T:
    """`read(settings, work dir)` of the search `search` (404 if this service knows none), one audit at a
    time per worker (`_auditing`)."""
    workdir = next((w for s, w, _ in searches(settings) if s == search), None)
    if workdir is None:
        raise NotAnchored(f"no search {search} here", detail={"search": search})
    if not _auditing.acquire(timeout=AUDIT_WAIT_S):
        raise RateLimited("another search audit is running here: retry later", detail={"retry_after_s": 30})
    try:
        return read(settings, workdir)
    finally:
        _auditing.release()
