"""Read one answer from several RPC endpoints and accept it only when a quorum agrees.

Why: a verdict read from one endpoint is that endpoint's word. A hosted provider can lag, serve a
fork, or lie (rewrite an `eth_call` answer); nothing in a single answer shows it. With several
endpoints (`--rpc-url` repeated, or ANCHOR_READ_RPCS) the same read runs against each, the answers are
compared on what they assert (not on how far each has synced), and an answer is given only when at
least `quorum` endpoints (default: a majority) agree. The verdict names every endpoint that disagreed;
with no quorum, `NoQuorum` (exit 12) names what each one said. Unreachable endpoints do not vote.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

from anchor.errors import AnchorError, BadInput, ChainUnreachable, NoQuorum
from anchor.readback.verdict_json import Quorum
from anchor.settings.session import Settings
from anchor.settings.session import endpoint_of as redact_url

T = TypeVar("T")


def read_agreed(
    settings: Settings,
    read: Callable[[Settings], T],
    asserts: Callable[[T], object],
    quorum: int | None = None,
    weakest: Callable[[list[T]], T] | None = None,
) -> tuple[T, Quorum | None]:
    """(the agreed answer, how it was agreed) for `read(settings-with-one-endpoint)` over every read
    endpoint. One endpoint and no quorum asked: the plain read, agreement None. An error agreed by the
    quorum (not anchored, deployment mismatch) is raised as that error.

    What endpoints may honestly differ on (how far each has synced: finality, confirmations) is not
    voted on; `weakest` picks, among the agreeing answers, the one that claims the least of it. Taking
    the first agreeing answer let one endpoint listed first make a 1-confirmation anchor "finalized"
    while the verdict said every endpoint agreed."""
    endpoints = read_endpoints(settings)
    need = needed(quorum, len(endpoints))
    if len(endpoints) == 1:
        return _answered(redact_url(endpoints[0]) if endpoints[0] else "local chain", partial(read, settings)), None
    voters = [
        (
            redact_url(url) if url else "local chain",
            asked(url or "", partial(read, replace(settings, rpc_url=url, read_rpcs=()))),
        )
        for url in endpoints
    ]
    return agree(voters, need, asserts, weakest)


_DOWN: ContextVar[dict[str, ChainUnreachable] | None] = ContextVar("anchor_endpoints_down", default=None)
"""Within `down_once()`: each endpoint (by its full URL) that did not answer, and how it failed."""


@contextmanager
def down_once(memory: dict[str, ChainUnreachable] | None = None) -> Iterator[None]:
    """Within the block, an endpoint out of reach (its retries and back-off spent) is asked once: its
    silence is then given at once to every later read of the block. `verify A B C` through three
    endpoints, one down, waited out that one's retries on every read of every path. A block inside
    another shares the outer one's memory (a verdict within a verify of many paths); `memory`, a block
    entered again and again (one per path of a verify of many) keeps it between them."""
    if _DOWN.get() is not None:
        yield
        return
    token = _DOWN.set({} if memory is None else memory)
    try:
        yield
    finally:
        _DOWN.reset(token)


def asked(url: str, read: Callable[[], T]) -> Callable[[], T]:
    """`read` of the endpoint `url`, remembered as down (within `down_once()`) when it does not answer.
    One that answers, if only to refuse this read (HTTP 400, an answer out of form, an error answer),
    is not: the refusal is this read's, and with `--quorum` equal to the endpoints every later path
    was NO_QUORUM after one transaction an endpoint refused."""

    def once() -> T:
        down = _DOWN.get()
        if down is not None and url in down:
            raise down[url]
        try:
            return _answered(redact_url(url) if url else "local chain", read)
        except ChainUnreachable as exc:
            if down is not None and unanswered(exc):
                down[url] = exc
            raise

    return once


def unanswered(exc: ChainUnreachable) -> bool:
    """Whether the endpoint gave no answer at all: its retries spent on silence, refused connections,
    5xx or throttling (`last_error`), or a busy local chain waited for (`waited_s`)."""
    return isinstance(exc.detail, dict) and ("last_error" in exc.detail or "waited_s" in exc.detail)


def _answered(shown: str, read: Callable[[], T]) -> T:
    """`read()`, where a JSON-RPC error answer that the read did not expect (it handles the ones it
    does, a revert it reads as "not anchored" among them) is that endpoint failing: `ChainUnreachable`,
    which a quorum counts as silent. Left as it was, an error answer to `eth_call` or `eth_getCode` was
    an internal error (exit 1), and one such endpoint stopped the honest ones from giving a verdict."""
    try:
        return read()
    except Exception as exc:
        from anchor.chain.rpc import RpcError  # here: an offline verdict never imports the client

        if isinstance(exc, RpcError):
            raise ChainUnreachable(
                f"{shown}: {exc} (an error answer to a read every node answers)", detail={"rpc_url": shown}
            ) from None
        raise


def needed(quorum: int | None, endpoints: int) -> int:
    """How many endpoints must agree: `quorum`, else a majority; `BadInput` (before any read) for a
    quorum no list of `endpoints` could meet."""
    if quorum is not None and not 1 <= quorum <= 64:
        raise BadInput(f"quorum {quorum}: expected 1 to 64", detail={"field": "quorum"})
    if quorum is not None and quorum > endpoints:
        given = f"{endpoints} read endpoint is" if endpoints == 1 else f"{endpoints} read endpoints are"
        raise BadInput(
            f"quorum {quorum}: only {given} given, so no answer could"
            f" have {quorum} behind it (hint: quorum {endpoints}, or more read_rpcs)",
            detail={"field": "quorum", "inputs": ["quorum", "read_rpcs"]},
        )
    return quorum or endpoints // 2 + 1


def agree(
    voters: Sequence[tuple[str, Callable[[], T]]],
    need: int,
    asserts: Callable[[T], object],
    weakest: Callable[[list[T]], T] | None = None,
) -> tuple[T, Quorum]:
    """The vote itself, over any reads (`voters`: each endpoint's name and its read): the answer at least
    `need` of them assert, with how it was agreed; `NoQuorum` naming what each said otherwise. An
    unreachable endpoint does not vote; an error agreed by the quorum is raised as that error. Shared
    by verdicts (`read_agreed`) and the chain-only index (anchor.index.follow)."""
    votes: dict[object, list[tuple[str, Any]]] = {}
    silent: list[str] = []
    for shown, read_one in voters:
        try:
            value: Any = read_one()
            key: object = ("answer", repr(asserts(value)))
        except ChainUnreachable:
            silent.append(shown)
            continue
        except AnchorError as exc:
            value, key = exc, ("error", exc.code)
        votes.setdefault(key, []).append((shown, value))
    ranked = sorted(votes.values(), key=len, reverse=True)
    said = {shown: _said(value) for group in ranked for shown, value in group}
    if not ranked or len(ranked[0]) < need or (len(ranked) > 1 and len(ranked[1]) == len(ranked[0])):
        raise NoQuorum(
            f"no {need} of {len(voters)} endpoints agree: "
            + "; ".join(f"{shown} says {answer}" for shown, answer in said.items())
            + (f"; unreachable: {', '.join(silent)}" if silent else ""),
            detail={"quorum": need, "endpoints": len(voters), "answers": said, "unreachable": silent},
        )
    winners = ranked[0]
    value = winners[0][1]
    if weakest is not None and not isinstance(value, AnchorError):
        value = weakest([answer for _, answer in winners])
    agreed = None if isinstance(value, AnchorError) else asserts(value)
    agreement: Quorum = {
        "quorum": need,
        "endpoints": len(voters),
        "agreeing": [shown for shown, _ in winners],
        "disagreeing": {shown: _differs(other, agreed, asserts) for group in ranked[1:] for shown, other in group},
        "unreachable": silent,
    }
    if isinstance(value, AnchorError):
        value.detail = {**value.detail, "quorum": agreement}
        raise value
    return value, agreement


def read_endpoints(settings: Settings) -> list[str | None]:
    """The endpoints a read asks (None: the local chain), each once, or `BadInput` for a list that names one
    twice: an endpoint is one voter, and listed twice it alone could meet a quorum of two. Checked before
    any read, and by `anchor serve` before it serves (a service with such a list would refuse every read)."""
    endpoints: list[str | None] = list(settings.read_rpcs) or [settings.rpc_url]
    seen: set[str] = set()
    for url in endpoints:
        same = (url or "").rstrip("/")  # a provider's key in the path is case-sensitive: not lowered
        if same in seen:
            raise BadInput(
                f"{redact_url(same)} is named twice among the read endpoints (--rpc-url, ANCHOR_READ_RPCS):"
                " an endpoint votes once, so name each once",
                detail={"field": "rpc_url"},
            )
        seen.add(same)
    return endpoints


def _differs(value: Any, agreed: object, asserts: Callable[[Any], object]) -> str:
    """What a dissenting endpoint said, as the fields where it differs from the agreed answer."""
    if isinstance(value, AnchorError) or not isinstance(agreed, dict):
        return _said(value)
    mine = asserts(value)
    assert isinstance(mine, dict)
    return ", ".join(f"{k} {mine.get(k)} (agreed: {agreed.get(k)})" for k in agreed if mine.get(k) != agreed.get(k))


def _said(value: object) -> str:
    if isinstance(value, AnchorError):
        return f"{value.code}: {value.message}"[:200]
    return "verified" if getattr(value, "verified", False) else "an answer"
