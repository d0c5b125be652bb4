"""One chain-only explorer's parts, opened and checked together: `open_site` is the one entry.

The CLI opens a site before serving (so every mistake is a one-line error with its exit code, and the
first sync shows progress), then hands the same options to the service process, which opens it again
(the index already holds the deployment block and the records, so that second opening reads no history).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from anchor.errors import BadInput, ChainUnreachable

if TYPE_CHECKING:
    from anchor.chain.rpc import Rpc
    from anchor.index.claims import ClaimedAttempt
    from anchor.index.follow import Follower
    from anchor.settings.model import Environment


class SiteOptions(BaseModel):
    """What `anchor index` was given. The RPC URL may carry a provider's key: it is passed
    to the service as this object (never through the environment, which a child process could read)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    rpc_urls: tuple[str, ...] = Field(min_length=1, max_length=64)
    """One endpoint, whose word the index shows; or several, of which `quorum` (default: a majority) must
    agree on everything the index keeps (anchor.index.follow)."""
    quorum: int | None = None
    registry: str = Field(pattern=r"^0x[0-9a-fA-F]{40}$")
    index: Path | None = None
    from_block: int | None = Field(default=None, ge=0)
    confirmations: int = Field(default=12, ge=1)
    browser_rpc_url: str | None = None
    claims: Path | None = None
    repo: Path | None = None


@dataclass
class IndexSite:
    follower: Follower
    chain_id: int
    path: Path
    rpc_label: str
    """The RPC endpoint, redacted to scheme://host:port (a hosted URL's path often holds its key)."""
    browser_rpc_urls: tuple[str, ...]
    """The endpoints visitors' browsers read the registry through (several: a majority must agree, as in
    `anchor verify`); none when none may be shown (each carries a key)."""
    claims: list[ClaimedAttempt] = field(default_factory=list)
    repo: Path | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_error: str | None = None

    def sync(self) -> None:
        with self.lock:
            self.follower.sync()


def default_index(chain_id: int, registry: str) -> Path:
    return Path.home() / ".cache" / "anchor" / f"index-{chain_id}-{registry.lower()}.sqlite"


def open_site(
    options: SiteOptions, progress: Callable[[str], None] | None = None, env: Environment | None = None
) -> IndexSite:
    """Check every option, connect, recognise the registry by its code and open (or create) its index."""
    from anchor.chain.connection import browser_rpc_url
    from anchor.index.claims import check_repo, load_claims
    from anchor.index.follow import Follower
    from anchor.index.store import IndexStore
    from anchor.readback.quorum import needed
    from anchor.settings.session import endpoint_of as redact_url

    browsers: list[str] = []  # what visitors' browsers read: --browser-rpc-url, else each RPC URL with no key
    for url in [options.browser_rpc_url] if options.browser_rpc_url else options.rpc_urls:
        try:
            browsers.append(browser_rpc_url(url) or "")
        except BadInput:
            if options.browser_rpc_url:
                raise
    claims = load_claims(options.claims) if options.claims is not None else []
    repo = check_repo(options.repo) if options.repo is not None else None
    need = needed(options.quorum, len(options.rpc_urls))  # before any endpoint is asked
    rpcs, chains, down = _reach_enough(options.rpc_urls, need, env)
    if len(set(chains.values())) > 1:
        raise BadInput(
            "--rpc-url: the endpoints serve different chains: "
            + ", ".join(f"{redact_url(url)} chain {c}" for url, c in chains.items()),
            detail={"field": "rpc_url"},
        )
    chain_id = next(iter(chains.values()))
    if progress is not None and down:
        progress(f"out of reach now, asked again at every sync: {', '.join(redact_url(u) for u in down)}")
    path = options.index or default_index(chain_id, options.registry)
    store = IndexStore(path, chain_id, options.registry)
    follower = Follower(
        rpcs,
        store,
        options.registry,
        options.from_block,
        options.confirmations,
        progress=progress,
        quorum=options.quorum,
    )
    label = ", ".join(redact_url(url) for url in options.rpc_urls)
    if len(options.rpc_urls) > 1:
        label += f" ({need} of {len(options.rpc_urls)} must agree)"
    return IndexSite(
        follower=follower,
        chain_id=chain_id,
        path=path,
        rpc_label=label,
        browser_rpc_urls=tuple(u for u in browsers if u),
        claims=claims,
        repo=repo,
    )


def _reach_enough(
    urls: tuple[str, ...], need: int, env: Environment | None
) -> tuple[list[Rpc], dict[str, int], list[str]]:
    """A reader for every URL, the chain id of each that answers, and those that do not: enough must
    answer for a quorum (one endpoint: it must), the others are asked again at every sync."""
    from anchor.chain.connection import reach
    from anchor.chain.rpc import Rpc

    rpcs: list[Rpc] = []
    chains: dict[str, int] = {}
    down: list[str] = []
    failure: ChainUnreachable | None = None
    for url in urls:
        try:
            rpc, chains[url] = reach(url, env)
        except ChainUnreachable as exc:
            rpc, failure = Rpc(url, env), exc
            down.append(url)
        rpcs.append(rpc)
    if len(chains) < need and failure is not None:
        raise failure
    return rpcs, chains, down
