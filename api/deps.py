"""Dependencies shared by the routes. The ones that never block are `async def`: FastAPI runs a plain
`def` dependency in the thread pool on every request, which costs the hot verify route dearly."""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

from fastapi import Depends, FastAPI, Request
from starlette.concurrency import run_in_threadpool

from anchor.errors import Forbidden, Unauthorized
from anchor.journal.backends import open_journal
from anchor.journal.store import Journal
from anchor.settings.session import Settings
from api.config import SCOPES, ApiConfig
from api.reader import ChainReader

if TYPE_CHECKING:
    from anchor.anchoring.receipts import ReceiptSigner
    from anchor.journal.group import GroupCommit
    from anchor.proof.file import ProofFile

T = TypeVar("T")


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_config(request: Request) -> ApiConfig:
    config: ApiConfig = request.app.state.config
    return config


async def get_reader(request: Request) -> ChainReader:
    reader: ChainReader = request.app.state.reader
    return reader


_local = threading.local()
_opened_lock = threading.Lock()


def thread_journal(app: FastAPI) -> Journal:
    """This thread's own connection to the app's journal, opened once per pool thread.

    Why: sqlite3 serializes use of one connection, so a shared one made every request wait for any
    other's journal call (and, when a lock was held across an await, for its whole request). Each
    thread of the pool has its own; SQLite's WAL lets readers run beside the one writer."""
    journals: dict[tuple[int, object], Journal] = getattr(_local, "journals", None) or {}
    _local.journals = journals
    key = (id(app), app.state.settings.data_dir)
    journal = journals.get(key)
    if journal is None or journal.closed:
        journal = journals[key] = open_journal(app.state.settings.data_dir, app.state.settings.journal_url)
        with _opened_lock:
            app.state.__dict__.setdefault("journals", []).append(journal)  # closed with the app
    return journal


def journal_writer(app: FastAPI) -> GroupCommit:
    """The app's one journal writer for submissions (anchor.journal.group): started at the first
    submission, on its own connection; concurrent requests share its transactions."""
    writer: GroupCommit | None = getattr(app.state, "journal_writer", None)
    if writer is None:
        from anchor.journal.group import GroupCommit

        with _opened_lock:
            writer = getattr(app.state, "journal_writer", None)
            if writer is None:
                settings = app.state.settings
                writer = GroupCommit(lambda: open_journal(settings.data_dir, settings.journal_url))
                app.state.journal_writer = writer
    return writer


def close_journals(app: FastAPI) -> None:
    """At shutdown: journal what the writer holds, then close every thread's connection (none is in
    use once the server has stopped)."""
    writer = getattr(app.state, "journal_writer", None)
    if writer is not None:
        app.state.journal_writer = None
        writer.close()
    with _opened_lock:
        for journal in app.state.__dict__.pop("journals", []):
            journal.close()


async def in_journal(app: FastAPI, work: Callable[[Journal], T]) -> T:
    """`work(journal)` in the thread pool, on that thread's own connection: never on the event loop."""
    return await run_in_threadpool(lambda: work(thread_journal(app)))


ROUTE_SCOPES = {"/v1/manifests": "submit", "/v1/bundles": "submit", "/v1/missions": "submit", "/v1/lineage": "relay"}
"""The scope each write route needs; a token with `admin` has every scope."""


def token_id(headers: dict[bytes, bytes], config: ApiConfig, path: str | None = None) -> str:
    """The accepted bearer token's id (the first 16 hex digits of its SHA-256, which is what the
    configuration holds), compared in constant time; raises `Unauthorized`. Used by the edge guard
    before any body is read, and by the routes to scope idempotency keys per client."""
    scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("a bearer token is required for this route")
    presented = hashlib.sha256(token.strip().encode("latin-1")).hexdigest()
    matched = [known for known in config.token_hashes if hmac.compare_digest(presented, known)]
    if not matched:
        raise Unauthorized("the bearer token is not accepted")
    needed = ROUTE_SCOPES.get(path or "")
    scopes = config.token_scopes.get(matched[0], SCOPES)
    if needed is not None and needed not in scopes and "admin" not in scopes:
        raise Forbidden(
            f"this token may not {needed} (its scopes: {'+'.join(sorted(scopes))})", detail={"needed_scope": needed}
        )
    return presented[:16]


async def require_token(request: Request) -> str:
    return token_id(dict(request.scope["headers"]), request.app.state.config, request.scope["path"])


SettingsDep = Annotated[Settings, Depends(get_settings)]
ConfigDep = Annotated[ApiConfig, Depends(get_config)]
ReaderDep = Annotated[ChainReader, Depends(get_reader)]
ClientDep = Annotated[str, Depends(require_token)]
Authenticated = Depends(require_token)


_signer_lock = threading.Lock()


def receipt_signer(app: FastAPI, chain_id: int) -> ReceiptSigner:
    """(In a pool thread.) The service's receipt signer, loaded once; also records the funded account's
    address (the submitter a verifier will see), which the receipt key must not be."""
    with _signer_lock:
        signer: ReceiptSigner | None = getattr(app.state, "receipt_signer", None)
        if signer is None:
            from anchor.anchoring.receipts import load_receipt_signer
            from anchor.chain.keys import load_signer

            funded = load_signer(chain_id, None, app.state.settings.env).address
            signer = load_receipt_signer(app.state.settings, funded)
            app.state.funded_address = funded
            app.state.receipt_signer = signer
        return signer


def anchored_proof(app: FastAPI, reader: ChainReader, digest: bytes) -> ProofFile | None:
    """(In a pool thread.) The proof of manifest `digest` on the registry's chain, from the proof store:
    this replica's tree of the batch, else rebuilt from the journal, which replicas share (the batch may
    have been flushed by another)."""
    from anchor.anchoring.proofs import stored_proof

    registry = reader.registry()
    layout = app.state.settings.layout
    return stored_proof(layout, thread_journal(app), digest, registry.chain_id, registry.code_hash)
