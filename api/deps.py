"""Dependencies shared by the routes. The ones that never block are `async def`: FastAPI runs a plain
`def` dependency in the thread pool on every request, which costs the hot verify route dearly."""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

from fastapi import Depends, FastAPI, Request

from anchor.journal.store import Journal, open_journal
from anchor.session import Settings
from api.config import ApiConfig
from api.errors import Unauthorized
from api.reader import ChainReader


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_config(request: Request) -> ApiConfig:
    config: ApiConfig = request.app.state.config
    return config


async def get_reader(request: Request) -> ChainReader:
    reader: ChainReader = request.app.state.reader
    return reader


_journal_lock = threading.Lock()


@contextmanager
def journal_session(app: FastAPI) -> Iterator[Journal]:
    """The worker's one journal connection, for one short use at a time (sqlite3 needs that). Hold it
    only around journal calls: never across archive decoding or hashing, which can take seconds."""
    with _journal_lock:
        journal: Journal | None = getattr(app.state, "journal", None)
        if journal is None:
            journal = app.state.journal = open_journal(app.state.settings.data_dir)
        yield journal


def get_journal(request: Request) -> Iterator[Journal]:
    with journal_session(request.app) as journal:
        yield journal


def token_id(headers: dict[bytes, bytes], config: ApiConfig) -> str:
    """The accepted bearer token's id (the first 16 hex digits of its SHA-256, which is what the
    configuration holds), compared in constant time; raises `Unauthorized`. Used by the edge guard
    before any body is read, and by the routes to scope idempotency keys per client."""
    scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("a bearer token is required for this route")
    presented = hashlib.sha256(token.strip().encode("latin-1")).hexdigest()
    if not any(hmac.compare_digest(presented, known) for known in config.token_hashes):
        raise Unauthorized("the bearer token is not accepted")
    return presented[:16]


async def require_token(request: Request) -> str:
    return token_id(dict(request.scope["headers"]), request.app.state.config)


SettingsDep = Annotated[Settings, Depends(get_settings)]
ConfigDep = Annotated[ApiConfig, Depends(get_config)]
ReaderDep = Annotated[ChainReader, Depends(get_reader)]
JournalDep = Annotated[Journal, Depends(get_journal)]
ClientDep = Annotated[str, Depends(require_token)]
Authenticated = Depends(require_token)
