"""A small JSON-RPC client: every chain read, and the transport under web3 for writes.

Why not web3 for reads: importing it costs about a second, more than a whole verify should take.
A read needs eight methods (chain id, head, code, block, call, logs, receipt); this is
them, over one kept-alive HTTP connection per thread. Writes still build transactions with web3, whose
provider sends through `Rpc.post` (anchor.chain.connection), so there is one retry policy:

Every method is retried, eth_sendRawTransaction included: a resend carries the same signed bytes,
which the node either already knows or mines once, by `send`, the one retry loop every HTTP exchange
(RPC and anchoring service) goes through. Retried: refused or reset connections, timeouts, HTTP 429
(after its Retry-After, at most 5 s) and 5xx. Backoff doubles from ANCHOR_RPC_BACKOFF_S with a jitter
fixed by host, process and call (`jitter`), capped at 2 s, for ANCHOR_RPC_RETRIES retries (default 4);
each request times out after ANCHOR_RPC_TIMEOUT_S (10 s). HTTP 401 and 403 (an expired key, a wrong
project id) stop at once, naming the endpoint without its key: no retry can fix a credential. A JSON-RPC
error answer that says the provider is throttling (`throttled`) is retried the same way; any other (a
revert, a provider's "block range too large") is `RpcError`, left to the caller (anchor.chain.logs).
"""

from __future__ import annotations

import io
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from anchor.chain import wire
from anchor.errors import ChainUnreachable
from anchor.settings.model import Environment
from anchor.settings.session import check_rpc_url
from anchor.settings.session import endpoint_of as redact_url

MAX_ANSWER_BYTES = 64 << 20
"""Largest JSON-RPC answer read (a window of logs, a block with its receipts' proofs are far below it):
an endpoint that sends more is out of bounds, not read into memory up to a gigabyte."""
_QUANTITY = re.compile(r"0x[0-9a-fA-F]{1,64}")
_DATA = re.compile(r"0x(?:[0-9a-fA-F]{2})*")
_HASH = re.compile(r"0x[0-9a-fA-F]{64}")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_BLOCK = {"number": _QUANTITY, "timestamp": _QUANTITY, "hash": _HASH, "parentHash": _HASH}
"""The fields of a block header every reader of one uses, and their form (a pending block has no hash)."""
_LOG = {"address": _ADDRESS, "data": _DATA, "blockNumber": _QUANTITY, "transactionHash": _HASH}
_RECEIPT = {"transactionHash": _HASH, "blockNumber": _QUANTITY, "blockHash": _HASH, "status": _QUANTITY}


class RpcError(Exception):
    """The endpoint answered with a JSON-RPC error (not a transport failure)."""

    def __init__(self, method: str, code: int, message: str, data: object = None) -> None:
        super().__init__(f"{method}: {message} (code {code})")
        self.code, self.message = code, message
        self.data = data
        """The error's `data`, as the node gave it: a revert's ABI-encoded reason, for one."""


THROTTLE_WORDS = re.compile(r"\b429\b|rate limit|rate exceeded|too many requests|throttl|capacity")
"""How providers word "slow down" in a JSON-RPC error answer (Infura: "project ID request rate exceeded",
"daily request count exceeded, request rate limited"), where others answer HTTP 429: words, and 429 only
standing alone (a custom error's hex arguments hold "429" one time in ten)."""


def throttled(message: str) -> bool:
    """True when a JSON-RPC error answer says the provider is throttling us (retried, then
    `ChainUnreachable`), not that the request was wrong (an `RpcError` for the caller). A revert is
    never throttling, whatever its reason says: that is the contract's word, not the provider's."""
    text = message.lower()
    return "revert" not in text and THROTTLE_WORDS.search(text) is not None


def _throttled_answer(content: bytes) -> str | None:
    """The provider's words when `content` is a JSON-RPC error answer saying it is throttling; else None
    (parsed only when the bytes hold an error at all: every answer passes here)."""
    if b'"error"' not in content:
        return None
    try:
        answer = json.loads(content)
    except ValueError:
        return None
    error = answer.get("error") if isinstance(answer, dict) else None
    message = str(error.get("message", "")) if isinstance(error, dict) else str(error or "")
    return message[:500] if error is not None and throttled(message) else None


def jitter(*what: object) -> float:
    """A number in [0, 1) fixed by this host, this process and `what` (the call, its attempt): replicas
    that fail together back off by different amounts, and a run replays its own waits (random.random()
    is neither: two replicas could retry in lockstep, and a seeded one would collide everywhere)."""
    import hashlib
    import os
    import socket

    seed = "|".join(map(str, (socket.gethostname(), os.getpid(), *what))).encode()
    return int.from_bytes(hashlib.blake2b(seed, digest_size=8).digest(), "big") / 2**64


def failure_words(exc: BaseException, timeout_s: float, url: str) -> str:
    """Why an exchange got no answer, in words a user can act on (a bare "ConnectionError" was all
    `https://` to an http port said)."""
    import ssl

    if isinstance(exc, TimeoutError):
        return f"no whole answer within {timeout_s:g} s"
    if isinstance(exc, ssl.SSLError):
        hint = "; is it an http:// endpoint?" if url.startswith("https://") else ""
        return f"the TLS handshake failed ({exc.reason or type(exc).__name__}{hint})"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused: nothing listens there"
    if isinstance(exc, wire.NoAnswer):
        return "the server closed the connection without an HTTP answer"
    if isinstance(exc, wire.NotHttp):
        return f"the answer was not HTTP as we read it ({exc})"
    if isinstance(exc, socket.gaierror):  # the resolver's error: its class name ("gaierror") tells nobody anything
        return f"{UNRESOLVED} {urlsplit(url).hostname or url}"
    said = getattr(exc, "strerror", None) or ""  # the OS's own words ("No route to host"), not the class's name
    return said[:1].lower() + said[1:] if said else type(exc).__name__


UNRESOLVED = "could not resolve"
"""How `failure_words` begins for a host name the resolver does not know: offline, or a typo in the URL."""


def never_resolves(exc: BaseException) -> bool:
    """A host name that does not exist (not a resolver that is briefly down): no retry can fix it."""
    return isinstance(exc, socket.gaierror) and exc.errno in _NO_SUCH_NAME


_NO_SUCH_NAME = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}


def _hex(number: int | str) -> str:
    return number if isinstance(number, str) else hex(number)


class _Deadlined:
    """(https only: a plain-HTTP origin goes through anchor.chain.wire, whose reads keep the same
    deadline.) A connected socket whose every send and read waits at most until `until` (monotonic): the
    socket's timeout is the time left, so one exchange, headers and body together, ends by its deadline
    however slowly the other side drips its answer (a server that sent `Content-Length: 100000`
    and then a byte every 5 s held `verify` past 90 s with a 10 s per-read timeout)."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.until = float("inf")

    def left(self) -> float:
        left = self.until - time.monotonic()
        if left <= 0:
            raise TimeoutError("no whole answer before the exchange's deadline")
        return left

    def sendall(self, data: bytes) -> None:
        self.sock.settimeout(self.left())
        self.sock.sendall(data)

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> Any:
        # the socket's own raw file underneath: it holds a reference, so the socket stays open for the
        # answer's body after http.client closes the connection of a `Connection: close` answer
        return io.BufferedReader(_DeadlinedReader(self, self.sock.makefile("rb", buffering=0)))

    def __getattr__(self, name: str) -> Any:  # close, settimeout, fileno, ... as the socket has them
        return getattr(self.sock, name)


class _DeadlinedReader(io.RawIOBase):
    def __init__(self, owner: _Deadlined, raw: Any) -> None:
        self.owner, self.raw = owner, raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self.owner.sock.settimeout(self.owner.left())
        return int(self.raw.readinto(buffer) or 0)

    def close(self) -> None:
        self.raw.close()
        super().close()


class KeptAlive:
    """One kept-alive HTTP(S) connection per thread to one origin: what the RPC client and the
    anchoring-service client (anchor.readback.services) send through. A request costs about 0.1 ms of
    CPU here, against 1.5 ms through `requests` (which re-reads the proxy variables and merges
    settings on every call). Proxies are not used: neither the RPC client nor this one reads
    HTTP(S)_PROXY. Every exchange has one deadline, `timeout_s` after it starts (connecting, sending,
    the headers and the body together), not a timeout per read. A plain-HTTP origin is spoken to by
    anchor.chain.wire, an https one by http.client (imported only then: it imports ssl and email)."""

    def __init__(self, host: str, port: int | None, tls: bool, timeout_s: float) -> None:
        self._host, self._port, self._tls, self.timeout_s = host, port, tls, timeout_s
        self._local = threading.local()

    def drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _once(
        self, method: str, target: str, body: bytes | None, headers: dict[str, str], limit: int, until: float
    ) -> tuple[int, wire.Headers, bytes]:
        if self._tls:
            return self._once_tls(method, target, body, headers, limit, until)
        port = self._port or 80
        stream: wire.Stream | None = getattr(self._local, "conn", None)
        if stream is not None and stream.buffer:  # bytes the last answer did not account for: start afresh
            self.drop()
            stream = None
        if stream is None:
            stream = self._local.conn = wire.connect(self._host, port, until)
        stream.until = until
        stream.sock.settimeout(max(0.001, until - time.monotonic()))
        stream.sock.sendall(wire.request_bytes(method, self._host, port, target, body, headers))
        answer, content, closes = wire.read_answer(stream, limit)
        if closes:
            self.drop()
        return answer.status, answer, content

    def _once_tls(
        self, method: str, target: str, body: bytes | None, headers: dict[str, str], limit: int, until: float
    ) -> tuple[int, wire.Headers, bytes]:
        import http.client

        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout_s)
        try:
            if conn.sock is None:
                conn.timeout = max(0.001, until - time.monotonic())
                conn.connect()
                conn.sock = _Deadlined(conn.sock)  # http.client only calls what it has
            sock: Any = conn.sock
            sock.until = until
            conn.request(method, target, body, headers)
            response = conn.getresponse()
            content = response.read(limit + 1)
        except http.client.RemoteDisconnected:
            raise wire.NoAnswer("the server closed the connection without an HTTP answer") from None
        except http.client.InvalidURL as exc:
            raise ValueError(str(exc)) from None
        except http.client.HTTPException as exc:
            raise wire.NotHttp(f"{type(exc).__name__}: {exc}"[:200]) from None
        if len(content) > limit or response.getheader("connection", "").lower() == "close":
            self.drop()  # an answer cut at the limit leaves the rest unread: the connection is spent
        return response.status, response, content[:limit]

    def exchange(
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        limit: int = 1 << 30,
    ) -> tuple[int, wire.Headers, bytes]:
        """(status, the answer's headers, at most `limit` bytes of the answer). Raises OSError when there
        is no answer (`wire.NotHttp` for bytes that are not one); a kept-alive connection the server
        closed while idle is retried once at once on a fresh one (not a failure)."""
        reused = getattr(self._local, "conn", None) is not None
        until = time.monotonic() + self.timeout_s
        try:
            return self._once(method, target, body, headers or {}, limit, until)
        except (ConnectionResetError, BrokenPipeError):
            self.drop()
            if not reused:
                raise
            return self._once(method, target, body, headers or {}, limit, until)
        except OSError:
            self.drop()
            raise


class Exhausted(Exception):
    """`send` got no answer it could return within its retries: the caller raises its own typed error."""

    def __init__(self, attempts: int, failure: str) -> None:
        super().__init__(failure)
        self.attempts, self.failure = attempts, failure

    def said(self, what: str, check: str) -> str:
        """The failure as a user reads it: a name that does not resolve is a cause with a next step
        ("could not resolve HOST: offline? check --rpc-url"), not "failed 5 times (gaierror)"."""
        if self.failure.startswith(UNRESOLVED):
            return f"{self.failure}: offline? check {check}"
        times = "once" if self.attempts == 1 else f"{self.attempts} times"
        return f"{what} failed {times} ({self.failure})"


def send(
    client: KeptAlive,
    method: str,
    target: str,
    body: bytes | None,
    headers: dict[str, str],
    *,
    url: str,
    retries: int,
    backoff_s: float,
    why: tuple[object, ...],
    limit: int = 1 << 30,
) -> tuple[int, wire.Headers, bytes]:
    """The one retry policy of every HTTP exchange we start, RPC and service alike: the first answer that
    is neither 429 nor 5xx, as (status, response, at most `limit` bytes), for the caller to judge
    (a 401 or a 4xx is never retried: no retry can fix a credential or a request).

    Retried: no answer (refused, reset, timed out, no HTTP), 429 and 5xx, `retries` times. The wait
    doubles from `backoff_s`, capped at 2 s, jittered by `why` (`jitter`); a 429 with `Retry-After: N`
    waits N seconds instead (at most 5). Each exchange has its own deadline (`KeptAlive`). Raises
    `Exhausted` with the last failure in words (`failure_words`) when the retries are spent."""
    failure = ""
    for attempt in range(retries + 1):
        try:
            status, response, content = client.exchange(method, target, body, headers, limit)
        except OSError as exc:
            failure = failure_words(exc, client.timeout_s, url)
            if never_resolves(exc):
                raise Exhausted(attempt + 1, failure) from None
        except ValueError as exc:  # a URL no request can carry (a space in its path): no retry can fix it
            raise Exhausted(attempt + 1, str(exc)[:200]) from None
        else:
            if status != 429 and status < 500:
                return status, response, content
            failure = f"HTTP {status}"
            wait = response.getheader("Retry-After", "") or ""
            if status == 429 and (wait.isascii() and wait.isdigit()) and attempt < retries:
                time.sleep(min(int(wait), 5))
                continue
        if attempt < retries:
            time.sleep(min(2.0, backoff_s * 2**attempt) * (0.5 + jitter(*why, attempt) / 2))
    raise Exhausted(retries + 1, failure)


AHEAD_BYTES = 64 * 1024
"""The most a call of a batch read ahead may take of its answer, on average: a receipt of an anchoring
transaction is about 1 KiB, a record 128 bytes. Answers read ahead wait in memory to be taken."""

AHEAD_SLOW_S = 2.0
"""A batch answered later than this is the last one asked: anvil answers 32 reads in about 6 ms, and an
endpoint that holds a batch would hold every window of a verify of many as long."""

_UNREAD = object()
"""No answer kept for a call (a kept answer may be null: no such receipt)."""


class Rpc:
    """One endpoint. Thread-safe: each thread keeps its own connection."""

    def __init__(self, url: str, env: Environment | None = None) -> None:
        """`env`: the settings its retries, backoff, timeout and log window come from (the defaults when
        None)."""
        env = Environment() if env is None else env
        check_rpc_url(url, "RPC URL")
        parts = urlsplit(url)
        self.url = url
        self.shown = redact_url(url)
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.retries = env.rpc_retries
        self.backoff_s = env.rpc_backoff_s
        self.timeout_s = env.rpc_timeout_s
        self.log_window = env.log_window
        self._http = KeptAlive(parts.hostname or "", parts.port, parts.scheme == "https", self.timeout_s)
        self._ids = iter(range(1, 2**62))
        self._ahead: dict[tuple[str, str], object] = {}
        self._batches = True

    # ------------------------------------------------------------------ transport

    def post(self, method: str, body: bytes, limit: int = MAX_ANSWER_BYTES, retries: int | None = None) -> bytes:
        """POST one JSON-RPC request body and return the answer's bytes, with the retries above; an answer
        that is a rate-limit error (`throttled`) is waited out the same way, so reads (`request`) and the
        writes web3 sends through here alike; still throttled after the retries: `ChainUnreachable`."""
        retries = self.retries if retries is None else retries
        for attempt in range(retries + 1):
            content = self._post_once(method, body, limit, retries)
            said = _throttled_answer(content)
            if said is None:
                return content
            if attempt == retries:
                raise ChainUnreachable(
                    f"{self.shown}: {method} was throttled {attempt + 1} times ({said})",
                    detail={"rpc_url": self.shown, "method": method, "last_error": said},
                )
            time.sleep(min(2.0, self.backoff_s * 2**attempt) * (0.5 + jitter(method, "throttled", attempt) / 2))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _post_once(self, method: str, body: bytes, limit: int, retries: int) -> bytes:
        try:
            status, _, content = send(
                self._http,
                "POST",
                self._target,
                body,
                {"Content-Type": "application/json"},
                url=self.url,
                retries=retries,
                backoff_s=self.backoff_s,
                why=(method,),
                limit=limit + 1,
            )
        except Exhausted as spent:
            raise ChainUnreachable(
                spent.said(f"{self.shown}: {method}", f"--rpc-url or ANCHOR_RPC_URL ({self.shown})"),
                detail={"rpc_url": self.shown, "method": method, "last_error": spent.failure},
            ) from None
        if status < 300 and len(content) > limit:
            raise self._refused(method, f"more than {limit:,} bytes; not read")
        if status < 300:
            return content
        if status in (401, 403):  # a key that is wrong or expired: retrying cannot help
            word = "unauthorized" if status == 401 else "forbidden"
            raise ChainUnreachable(
                f"{self.shown}: HTTP {status} ({word}) for {method}: the provider refused"
                " the URL's credentials; check the URL's key"
                " (a hosted provider puts it in the path or query; it is not shown here)",
                detail={"rpc_url": self.shown, "method": method, "status": status},
            )
        raise ChainUnreachable(
            f"{self.shown}: HTTP {status} for {method}",
            detail={"rpc_url": self.shown, "method": method, "status": status},
        )

    def request(self, method: str, params: list[Any]) -> Any:
        """The `result` of one call; `RpcError` for an error answer, `ChainUnreachable` for no answer (or a
        provider that still throttles after the retries, `post`). An answer `read_ahead` kept for the
        same method and params is taken instead, once."""
        if self._ahead:
            kept = self._ahead.pop((method, json.dumps(params)), _UNREAD)
            if kept is not _UNREAD:
                return kept
        asked = next(self._ids)
        body = json.dumps({"jsonrpc": "2.0", "id": asked, "method": method, "params": params}).encode()
        for attempt in range(2):
            raw = self.post(method, body)
            try:
                answer = json.loads(raw)
            except ValueError:
                raise self._refused(method, "something that is not JSON") from None
            if not isinstance(answer, dict):
                raise self._refused(method, "no JSON-RPC object")
            if answer.get("id") == asked:
                break
            # another request's answer: bytes the endpoint sent late are in the connection; start afresh
            self._http.drop()
            if attempt:
                raise self._refused(method, "with another request's id, twice, on fresh connections")
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {"message": str(answer["error"])}
            code = error.get("code")  # a number as JSON-RPC says; "abc" or 1e400 was a ValueError here
            code = code if isinstance(code, int) and not isinstance(code, bool) and abs(code) < 2**31 else 0
            raise RpcError(method, code, str(error.get("message", ""))[:500], error.get("data"))
        return answer.get("result")

    def read_ahead(
        self, calls: list[tuple[str, list[Any]]], fits: Callable[[int, object], bool] | None = None
    ) -> dict[int, object]:
        """Ask `calls` as one JSON-RPC batch, and keep each answer that is a plain `result` for the one
        `request` of the same method and params that follows: everything `request`'s callers check,
        they check on it as on any answer. An error answer, or a result that `fits(index, result)`
        says cannot be that call's (a receipt of another transaction), leaves its call to `request`,
        asked alone, retries and all. A batch refused, larger than `AHEAD_BYTES` a call, or whose ids
        are not the ones asked, each once, is not taken at all, and no batch is asked again: answers
        kept wait in memory until taken, and ids moved by one bind every answer to another call. A batch
        is tried once, without the retries, and one answered later than `AHEAD_SLOW_S` is the last.
        Returns {index in `calls`: result} of the answers kept, for a caller choosing the next reads.
        Why: a verify of many roots asks two calls per root; in batches of 32, anvil answered 1,000
        receipts in 0.18 s, against 0.5 s asked one by one (ethers batches its provider's calls too)."""
        if not self._batches or not calls:
            return {}
        first = next(self._ids)
        body = [
            {"jsonrpc": "2.0", "id": first + n, "method": method, "params": params}
            for n, (method, params) in enumerate(calls)
        ]
        for _ in range(len(calls) - 1):
            next(self._ids)
        started = time.monotonic()
        try:  # asked once, no retry: a batch that fails costs one try, then every call is asked alone
            answers = json.loads(self.post("batch", json.dumps(body).encode(), AHEAD_BYTES * len(calls), 0))
        except (ChainUnreachable, ValueError, RecursionError):
            answers = None
        if time.monotonic() - started > AHEAD_SLOW_S:
            self._batches = False  # answered, but slowly: it would hold every window as long (this one is used)
        ids = [a.get("id") if isinstance(a, dict) else None for a in answers] if isinstance(answers, list) else []
        if sorted(i if type(i) is int else -1 for i in ids) != list(range(first, first + len(calls))):
            self._batches = False  # it does not batch, or answers other calls than asked: one by one from here on
            return {}
        results: dict[int, object] = {}
        for answer in answers:  # each a dict whose id is one asked, once
            n = answer["id"] - first
            if "error" in answer or "result" not in answer or (fits is not None and not fits(n, answer["result"])):
                continue  # an error, or a result that cannot be this call's: the call is asked again, alone
            method, params = calls[n]
            results[n] = self._ahead[(method, json.dumps(params))] = answer["result"]
        return results

    def forget_ahead(self) -> None:
        """Drop the answers read ahead and not taken: they were of the reads of one call."""
        self._ahead.clear()

    # ------------------------------------------------------------------ the methods reads need

    def _refused(self, method: str, said: str, field: str | None = None) -> ChainUnreachable:
        """This endpoint out of reach because its answer to `method` is not one (`said`: what it answered):
        never a ValueError or KeyError deep inside, and never read as a verdict; a quorum counts it silent."""
        detail = {"rpc_url": self.shown, "method": method, **({"field": field} if field else {})}
        return ChainUnreachable(f"{self.shown}: {method} answered {said}", detail=detail)

    def as_quantity(self, method: str, value: object, most: int = 2**256 - 1) -> int:
        """A JSON-RPC quantity as the endpoint gave it, at most `most`, or `ChainUnreachable` naming the
        method: a malformed one was a ValueError (an internal error), and one endpoint's stopped a quorum."""
        number = int(value, 16) if isinstance(value, str) and _QUANTITY.fullmatch(value) else None
        if number is None or number > most:
            raise self._refused(method, f"{str(value)[:40]!r}, not a number (0x and hex digits, at most {most:#x})")
        return number

    def _data(self, method: str, value: object) -> bytes:
        """JSON-RPC data (0x and whole bytes) as the endpoint gave it, or `ChainUnreachable` naming the method."""
        if not isinstance(value, str) or _DATA.fullmatch(value) is None:
            raise self._refused(method, f"{str(value)[:40]!r}, not data (0x and whole bytes in hex)")
        return bytes.fromhex(value[2:])

    def quantity(self, method: str, params: list[Any], most: int = 2**256 - 1) -> int:
        """The number a method answers (a balance, a nonce, a fee), checked as `as_quantity` checks it;
        `most`: what the caller can hold (a nonce, gas or fee goes into a 64-bit journal column)."""
        return self.as_quantity(method, self.request(method, params), most)

    def chain_id(self) -> int:
        return self.as_quantity("eth_chainId", self.request("eth_chainId", []))

    def block_number(self) -> int:
        return self.as_quantity("eth_blockNumber", self.request("eth_blockNumber", []))

    def get_code(self, address: str, block: int | str = "latest") -> bytes:
        return self._data("eth_getCode", self.request("eth_getCode", [address, _hex(block)]))

    def _shaped(
        self, method: str, value: object, fields: dict[str, re.Pattern[str]], optional: frozenset[str] = frozenset()
    ) -> Any:
        """`value`, an object holding each of `fields` in its form (`optional` ones may be null), else
        `ChainUnreachable` naming the method and the field: a receipt of "str", or a block numbered "zz",
        was a KeyError or ValueError deep inside a verify, or read as "not anchored"."""
        if not isinstance(value, dict):
            raise self._refused(method, f"{str(value)[:40]!r}, not an object")
        for name, form in fields.items():
            got = value.get(name)
            if (got is not None or name not in optional) and (not isinstance(got, str) or form.fullmatch(got) is None):
                raise self._refused(method, f"a {name} of {str(got)[:40]!r}", name)
        return value

    def _check_logs(self, method: str, logs: list[object]) -> None:
        """Each of `logs` a log in its form (`_shaped`, and its topics hashes), else `ChainUnreachable`."""
        for value in logs:
            topics = self._shaped(method, value, _LOG).get("topics")
            if not isinstance(topics, list) or not all(isinstance(t, str) and _HASH.fullmatch(t) for t in topics):
                raise self._refused(method, f"a log whose topics are {str(topics)[:40]!r}", "topics")

    def get_block(self, block: int | str) -> dict[str, Any] | None:
        """The block header (no transactions); None when the node has no such block (or tag)."""
        found = self.request("eth_getBlockByNumber", [_hex(block), False])
        if found is None:
            return None
        pending = frozenset({"hash", "parentHash"} if block == "pending" else ())
        return dict(self._shaped("eth_getBlockByNumber", found, _BLOCK, pending))

    def call(self, to: str, data: bytes, block: int | str = "latest") -> bytes:
        return self._data("eth_call", self.request("eth_call", [{"to": to, "data": "0x" + data.hex()}, _hex(block)]))

    def get_logs(self, address: str, topics: list[Any], from_block: int, to_block: int) -> list[dict[str, Any]]:
        query = {"address": address, "fromBlock": _hex(from_block), "toBlock": _hex(to_block), "topics": topics}
        logs = self.request("eth_getLogs", [query])
        if not isinstance(logs, list):  # not "no logs": an answer that is not one
            raise self._refused("eth_getLogs", f"{str(logs)[:40]!r}, not a list")
        self._check_logs("eth_getLogs", logs)
        return logs

    def get_transaction_receipt(self, tx_hash: str) -> dict[str, Any] | None:
        """The receipt; None when the node knows no such mined transaction (an answer that is neither a
        receipt nor null is `ChainUnreachable`, never "not anchored")."""
        found = self.request("eth_getTransactionReceipt", [tx_hash])
        if found is None:
            return None
        receipt = dict(self._shaped("eth_getTransactionReceipt", found, _RECEIPT))
        logs = receipt.get("logs")
        if not isinstance(logs, list):
            raise self._refused("eth_getTransactionReceipt", f"logs of {str(logs)[:40]!r}", "logs")
        self._check_logs("eth_getTransactionReceipt", logs)
        return receipt

    def close(self) -> None:
        self._http.drop()
