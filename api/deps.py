"""Dependencies shared by the routes. The ones that never block are `async def`: FastAPI runs a plain
`def` dependency in the thread pool on every request, which costs the hot verify route dearly."""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request

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


def get_journal(request: Request) -> Iterator[Journal]:
    """One connection per worker, used by one request at a time (sqlite3 needs that)."""
    with _journal_lock:
        journal: Journal | None = getattr(request.app.state, "journal", None)
        if journal is None:
            journal = request.app.state.journal = open_journal(request.app.state.settings.data_dir)
        yield journal


def require_token(request: Request) -> None:
    """Bearer tokens, compared by SHA-256 in constant time with the configured hashes."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("a bearer token is required for this route")
    presented = hashlib.sha256(token.strip().encode()).hexdigest()
    config: ApiConfig = request.app.state.config
    if not any(hmac.compare_digest(presented, known) for known in config.token_hashes):
        raise Unauthorized("the bearer token is not accepted")


SettingsDep = Annotated[Settings, Depends(get_settings)]
ConfigDep = Annotated[ApiConfig, Depends(get_config)]
ReaderDep = Annotated[ChainReader, Depends(get_reader)]
JournalDep = Annotated[Journal, Depends(get_journal)]
Authenticated = Depends(require_token)
