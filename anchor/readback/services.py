"""Reading from anchoring services (docs/calendar.md): who a service is, and the complete proof it
has for a manifest, checked against the chain before anyone believes it. Reads only: submitting is
`anchor.anchoring.client`'s, which uses the same HTTP call.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from anchor.errors import ServiceError
from anchor.proof.file import PendingProof, ProofFile, ServiceAnchor
from anchor.proof.receipt import Receipt
from anchor.record import Value

MAX_ANSWER_BYTES = 64 << 10
"""The largest answer a service call reads (caps sized to what answers carry): a complete proof
without its listing (the listing never left the client), a receipt, /v1/service; `INFO_BYTES` for the
last. An answer past its cap is refused by name, never read on."""
INFO_BYTES = 16 << 10
URL_PATTERN = re.compile(r"^https?://[^\s/@]+(:[0-9]{1,5})?(/[^\s]*)?$")


def clean_url(url: str, given_as: str = "services") -> str:
    """A service URL as given (`services`, ANCHOR_SERVICE_URLS: `given_as`, which the refusal names),
    checked and without a trailing `/`; `BadInput` for anything else (a `URL=TOKEN` pair keeps its URL:
    tokens never come from here)."""
    from anchor.errors import BadInput

    if "=" in url and not url.startswith("http"):
        url = url.partition("=")[0]
    from anchor.settings.model import http_url_problem, meant_url

    problem = http_url_problem(url) or (None if URL_PATTERN.match(url) else "expected an http(s) URL, no user in it")
    if problem is not None:
        example = meant_url(url) or "http://127.0.0.1:8000"
        example = f"{given_as}={example}" if given_as.isupper() else example
        raise BadInput(
            f"{given_as} {url!r}: {problem} (hint: {example}); tokens go in ANCHOR_SERVICE_TOKEN, never with the URL",
            detail={"field": "services"},
        )
    return url.rstrip("/")


def configured_urls(settings: Any) -> tuple[str, ...]:
    """The service URLs the user configured (`settings.service_urls`: ANCHOR_SERVICE_URLS); a malformed
    entry configures nothing here (the writers that use the list refuse it by name). What a verdict
    compares a file's URLs with."""
    from anchor.errors import BadInput

    found = []
    for url in getattr(settings, "service_urls", ()):
        try:
            found.append(clean_url(url))
        except BadInput:
            return ()
    return tuple(found)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Service(Value):
    """One anchoring service; `token` is never shown (repr names whether there is one)."""

    url: str
    token: str | None = field(default=None, repr=False)


_origins_lock = threading.Lock()
_origins: dict[tuple[str, int | None, bool, float], Any] = {}


def _origin(url: str, timeout_s: float) -> tuple[Any, str]:
    """(the kept-alive connections to `url`'s origin, shared by every call in this process; the path
    prefix the service lives under)."""
    from urllib.parse import urlsplit

    from anchor.chain.rpc import KeptAlive

    parts = urlsplit(url)
    key = (parts.hostname or "", parts.port, parts.scheme == "https", timeout_s)
    with _origins_lock:
        if key not in _origins:
            _origins[key] = KeptAlive(*key)
        return _origins[key], parts.path.rstrip("/")


def call(
    service: Service,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    key: str | None = None,
    auth: bool = False,
    retries: int = 3,
    timeout_s: float = 10.0,
    cap: int = MAX_ANSWER_BYTES,
) -> tuple[int, Any]:
    """(status, JSON answer of at most `cap` bytes) of one call; connection failures, timeouts, 429 and
    5xx are retried with the same idempotency key. Each exchange ends by its own deadline, `timeout_s`
    after it starts, however slowly the answer comes (anchor.chain.rpc.KeptAlive). 401/403 are not
    retried: the token is wrong, retrying cannot help."""
    import json

    from anchor.chain.rpc import Exhausted, send
    from anchor.ingest.untrusted_json import parse_json

    headers = {"Accept": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    if auth and service.token:
        headers["Authorization"] = f"Bearer {service.token}"
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    connections, prefix = _origin(service.url, timeout_s)
    try:
        status, _, content = send(
            connections,
            method,
            prefix + path,
            payload,
            headers,
            url=service.url,
            retries=retries,
            backoff_s=0.1,
            why=(service.url, path),
            limit=cap + 1,
        )
    except Exhausted as spent:
        raise ServiceError(
            spent.said(f"{service.url}: {method} {path}", f"--service or ANCHOR_SERVICE_URLS ({service.url})"),
            detail={"service": service.url, "last_error": spent.failure},
        ) from None
    if len(content) > cap:
        raise ServiceError(
            f"{service.url}: {method} {path}: the answer is larger than {cap} bytes, more than"
            " such an answer holds; not read further",
            detail={"service": service.url, "cap": cap},
        )
    if status in (401, 403):
        word = "unauthorized" if status == 401 else "forbidden"
        raise ServiceError(
            f"{service.url}: HTTP {status} ({word}): the service refused the token;"
            " check ANCHOR_SERVICE_TOKEN for this service",
            detail={"service": service.url, "status": status},
        )
    return status, (parse_json(content, f"{service.url}{path}") if content else {})


def error_of(service: Service, status: int, data: Any, what: str) -> ServiceError:
    said = data.get("message") if isinstance(data, dict) else None
    return ServiceError(
        f"{service.url}: {what}: HTTP {status}" + (f" ({said})" if said else ""),
        detail={"service": service.url, "status": status},
    )


_infos: dict[str, dict[str, Any]] = {}


def service_info(service: Service, retries: int = 3) -> dict[str, Any]:
    """The service's /v1/service (its receipt key, funded account, chain and registry); once a process."""
    if service.url not in _infos:
        status, data = call(service, "GET", "/v1/service", retries=retries, cap=INFO_BYTES)
        if status != 200 or not isinstance(data, dict) or "receipt_signer" not in data:
            raise error_of(service, status, data, "not an anchoring service (no /v1/service)")
        _infos[service.url] = data
    return _infos[service.url]


def fetch_anchor(receipt: Receipt, found: ProofFile | PendingProof, settings: Any) -> ServiceAnchor | None:
    """The service's anchor for this receipt, as it sends it (None while it is pending): nothing of it is
    believed until it is read on chain, by the caller, under its own trust (the verification checklist's
    chain steps, or `check_service_anchor` before `anchor upgrade` writes it in)."""
    from anchor.proof.file import decoded_proof

    service = Service(receipt.url)
    status, data = call(service, "GET", f"/v1/proofs/{found.manifest_digest}", retries=1)
    if status == 202:
        return None
    if status != 200 or not isinstance(data, dict):
        raise error_of(service, status, data, "no proof for this manifest")
    theirs = decoded_proof(data, f"{receipt.url}/v1/proofs/{found.manifest_digest}")  # bounded JSON already
    if not isinstance(theirs, ProofFile) or theirs.manifest_digest != found.manifest_digest:
        raise ServiceError(f"{receipt.url}: the proof it sent is for another manifest", detail={"service": receipt.url})
    return ServiceAnchor(service=receipt.url, batch=theirs.batch, anchor=theirs.anchor)
