"""Hostile clients against a real uvicorn server on a real chain: each reproduction from the
report is a test here. Over raw sockets where the order of events is the point (a 401 that arrives
before the body was sent proves the body was never read), so no assertion depends on timing."""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.api_server import serving_api_process
from tests.conftest import Chain, deployed, touches
from tests.hostile_archives import directory_flood
from tests.journal_helpers import journal_value

TOKEN_A, TOKEN_B = "token-of-client-a", "token-of-client-b"


def _hash(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


@pytest.fixture(scope="module")
@touches("chain")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any, Chain]]:
    with deployed(tmp_path_factory.mktemp("hostile-api")) as chain:
        env = {
            **chain.env(),
            "ANCHOR_API_TOKENS": f"{_hash(TOKEN_A)},{_hash(TOKEN_B)}",
            "ANCHOR_API_MAX_REQUEST_BYTES": str(8 << 20),
        }
        with serving_api_process(env) as (url, process):
            yield url, process, chain


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _exchange(url: str, head: str, body: bytes = b"", *, send_all: bool = True) -> tuple[int, dict[str, Any]]:
    """Send a raw request (all of `body`, or only its first 64 KiB) from a thread while this one reads
    the answer as it arrives: a server that answers early and closes (a 401, a 413) is read, not lost."""
    with socket.create_connection(("127.0.0.1", _port(url)), timeout=60) as conn:
        payload = head.encode("latin-1") + b"\r\n" + (body if send_all else body[: 64 * 1024])

        def send() -> None:
            with contextlib.suppress(OSError):  # the server may stop reading once it has answered
                conn.sendall(payload)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
            try:
                chunk = conn.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.split(b"\r\n\r\n", 1)[1] or b"{}")


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 1 << 30


def _headers(method: str, path: str, length: int | None, **extra: str) -> str:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in extra.items()]
    return "\r\n".join(lines) + "\r\n"


def _multipart(field: str, filename: str, data: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def _alive(url: str, process: Any) -> None:
    assert process.poll() is None, "the server process died"
    status, body = _exchange(url, _headers("GET", "/health", None))
    assert status == 200 and body["status"] == "ok"


def test_deeply_nested_json_does_not_kill_the_worker(server: tuple[str, Any, Chain]) -> None:
    """`[` x 100,000 (200 KB, no token) used to overflow the C stack: SIGSEGV, worker gone."""
    url, process, _ = server
    pid = process.pid
    deep = b"[" * 100_000 + b"]" * 100_000
    body, content_type = _multipart("proof", "p.json", deep)
    status, answer = _exchange(url, _headers("POST", "/v1/verify/proof", len(body), Content_Type=content_type), body)
    assert status == 422 and answer["code"] == "bad_proof" and "deeper" in answer["message"]
    status, answer = _exchange(
        url,
        _headers(
            "POST", "/v1/manifests", len(deep), Content_Type="application/json", Authorization=f"Bearer {TOKEN_A}"
        ),
        deep,
    )
    assert status == 422 and "deeper" in answer["message"]
    status, answer = _exchange(url, _headers("POST", "/v1/manifests", len(deep), Content_Type="application/json"), deep)
    assert status == 401
    _alive(url, process)
    assert process.pid == pid


@pytest.mark.parametrize("path", ["/v1/manifests", "/v1/bundles"])
def test_a_write_without_a_token_is_refused_before_its_body_is_read(server: tuple[str, Any, Chain], path: str) -> None:
    """60 MiB announced, 64 KiB sent: the 401 arrives although the body never will."""
    url, process, chain = server
    before = journal_value(chain.data_dir, "SELECT count(*) FROM items")
    status, answer = _exchange(
        url,
        _headers("POST", path, 60 << 20, Content_Type="application/json"),
        b"[" + b"0," * (32 << 10),
        send_all=False,
    )
    assert status == 401 and answer["code"] == "unauthorized"
    assert journal_value(chain.data_dir, "SELECT count(*) FROM items") == before
    _alive(url, process)


def test_a_chunked_body_is_counted_as_it_streams(server: tuple[str, Any, Chain]) -> None:
    """No Content-Length: the limit (8 MiB here) is enforced on the bytes that arrive."""
    url, process, _ = server
    chunk = b"x" * (1 << 20)
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(12)) + b"0\r\n\r\n"
    body_head = b'--b\r\nContent-Disposition: form-data; name="proof"; filename="p.json"\r\n\r\n'
    first = b"%x\r\n%s\r\n" % (len(body_head), body_head)
    status, answer = _exchange(
        url,
        _headers(
            "POST",
            "/v1/verify/proof",
            None,
            Transfer_Encoding="chunked",
            Content_Type="multipart/form-data; boundary=b",
        ),
        first + chunks,
    )
    assert status == 413 and answer["code"] == "request_too_large"
    _alive(url, process)


def test_a_proof_with_an_unbounded_batch_path_is_refused_before_any_chain_call(
    server: tuple[str, Any, Chain],
) -> None:
    """900,000 sibling hashes used to cost 8.5 s of CPU and a 900,000-element eth_call."""
    url, process, _ = server
    proof = {
        "format": "anchor/proof",
        "version": 1,
        "manifest": {},
        "manifest_digest": "0x" + "11" * 32,
        "batch": {
            "item": "0x" + "11" * 32,
            "leaf": "0x" + "22" * 32,
            "root": "0x" + "33" * 32,
            "proof": ["0x" + "44" * 32] * 1000,
        },
        "anchor": {
            "chain_id": 31337,
            "registry": "0x" + "55" * 20,
            "code_hash": "0x" + "66" * 32,
            "tx_hash": "0x" + "77" * 32,
            "block_number": 1,
        },
    }
    body, content_type = _multipart("proof", "p.json", json.dumps(proof).encode())
    status, answer = _exchange(url, _headers("POST", "/v1/verify/proof", len(body), Content_Type=content_type), body)
    assert status == 422 and "batch.proof" in answer["message"]
    _alive(url, process)


def _manifest_submission(annotations: Any, token: str, url: str, key: str | None = None) -> tuple[int, Any]:
    from anchor.manifest.filetree import FileTreeManifest

    files = [{"path": f"r-{uuid.uuid4().hex}.txt", "size": 1, "blake3": "ab" * 32}]
    identity = FileTreeManifest.from_files_json(files).identity()
    raw = json.dumps({"manifest": identity, "files": files, "annotations": annotations}).encode()
    extra = {"Idempotency_Key": key} if key else {}
    return _exchange(
        url,
        _headers(
            "POST", "/v1/manifests", len(raw), Content_Type="application/json", Authorization=f"Bearer {token}", **extra
        ),
        raw,
    )


def test_annotations_no_proof_writer_can_encode_are_refused_at_submission(server: tuple[str, Any, Chain]) -> None:
    """A lone surrogate or deep nesting was accepted with 202 and then stopped every later flush."""
    url, _, chain = server
    before = journal_value(chain.data_dir, "SELECT count(*) FROM items")
    lone = b'{"x":"\\ud800"}'
    from anchor.manifest.filetree import FileTreeManifest

    files = [{"path": "s.txt", "size": 1, "blake3": "cd" * 32}]
    identity = json.dumps(FileTreeManifest.from_files_json(files).identity()).encode()
    raw = b'{"manifest":' + identity + b',"annotations":' + lone + b"}"
    status, answer = _exchange(
        url,
        _headers("POST", "/v1/manifests", len(raw), Content_Type="application/json", Authorization=f"Bearer {TOKEN_A}"),
        raw,
    )
    assert status == 422 and "surrogate" in answer["message"]
    nested: Any = "leaf"
    for _ in range(40):
        nested = {"n": nested}
    status, answer = _manifest_submission(nested, TOKEN_A, url)
    assert status == 422 and "deeper" in answer["message"]
    assert journal_value(chain.data_dir, "SELECT count(*) FROM items") == before


@pytest.mark.parametrize(
    ("annotations", "field"),
    [
        ({"timing": {"digest": "0x" + "ab" * 32, "proof": "../../etc/passwd"}}, "annotations.timing.proof"),
        ({"timing": {"digest": "0x" + "ab" * 32, "proof": "x" * 5000}}, "annotations.timing.proof"),
        ({"timing": {"digest": "not hex"}}, "annotations.timing.digest"),
        ({"milestones": {"submitted": "yesterday"}}, "annotations.milestones"),
        ({"milestones": {"submitted": "2026-11-30T09:00:00"}}, "annotations.milestones"),  # no timezone
        ({"milestones": {"lunch": "2026-11-30T12:00:00Z"}}, "annotations.milestones"),
    ],
    ids=[
        "timing-proof-a-path",
        "timing-proof-5000-chars",
        "timing-digest",
        "milestone-not-a-time",
        "milestone-without-timezone",
        "milestone-unknown",
    ],
)
def test_annotations_readers_interpret_are_typed_at_submission_and_never_name_a_path(
    server: tuple[str, Any, Chain], annotations: dict[str, Any], field: str
) -> None:
    """`annotations.timing.proof` was opened as a path under the proofs dir (`../../etc/passwd` answered
    with the server's data-dir path; 5,000 characters were a 500 on a public GET) and unchecked
    milestones made the explorer's bundle page a 500. Refused by name at the door, nothing journaled."""
    url, _, chain = server
    before = journal_value(chain.data_dir, "SELECT count(*) FROM items")
    status, answer = _manifest_submission(annotations, TOKEN_A, url)
    assert status == 422 and answer["detail"]["field"].startswith(field), answer
    assert journal_value(chain.data_dir, "SELECT count(*) FROM items") == before
    status, _ = _manifest_submission({"note": "display data is kept as given"}, TOKEN_A, url)
    assert status == 202


def test_idempotency_keys_are_scoped_per_token_and_a_conflict_reveals_nothing(server: tuple[str, Any, Chain]) -> None:
    url, _, _ = server
    key = f"key-{uuid.uuid4().hex}"
    status_a, first = _manifest_submission({"by": "a"}, TOKEN_A, url, key)
    status_b, other = _manifest_submission({"by": "b"}, TOKEN_B, url, key)  # same key, other client: no clash
    assert status_a == 202 and status_b == 202 and first["manifest_digest"] != other["manifest_digest"]
    status, conflict = _manifest_submission({"by": "b2"}, TOKEN_B, url, key)
    assert status == 409 and conflict["code"] == "conflict"
    text = json.dumps(conflict)
    assert first["manifest_digest"][2:] not in text and other["manifest_digest"][2:] not in text


def test_the_same_key_with_the_same_manifest_and_other_annotations_is_a_conflict(
    server: tuple[str, Any, Chain],
) -> None:
    from anchor.manifest.filetree import FileTreeManifest

    url, _, _ = server
    files = [{"path": f"same-{uuid.uuid4().hex}", "size": 2, "blake3": "ef" * 32}]
    identity = FileTreeManifest.from_files_json(files).identity()
    key = uuid.uuid4().hex

    def post(note: str) -> tuple[int, Any]:
        raw = json.dumps({"manifest": identity, "files": files, "annotations": {"note": note}}).encode()
        return _exchange(
            url,
            _headers(
                "POST",
                "/v1/manifests",
                len(raw),
                Content_Type="application/json",
                Authorization=f"Bearer {TOKEN_A}",
                Idempotency_Key=key,
            ),
            raw,
        )

    assert post("first")[0] == 202
    status, again = post("first")
    assert status == 202 and again["duplicate"] is True
    status, other = post("second")
    assert status == 409 and other["code"] == "conflict"


def test_a_later_submitter_with_other_annotations_gets_a_conflict_never_the_first_ones(
    server: tuple[str, Any, Chain],
) -> None:
    """the first submitter's annotations were answered to, and shown for, every later
    submitter of the same manifest. Now another client's other annotations are a 409 naming the field
    (revealing nothing of the first), the same or no annotations are the same record, and the proof
    carries the first submission's display data only."""
    from anchor.manifest.filetree import FileTreeManifest

    url, _, _ = server
    files = [{"path": f"shared-{uuid.uuid4().hex}", "size": 3, "blake3": "ab" * 32}]
    identity = FileTreeManifest.from_files_json(files).identity()

    def post(token: str, annotations: dict[str, Any] | None) -> tuple[int, Any]:
        body: dict[str, Any] = {"manifest": identity, **({"annotations": annotations} if annotations else {})}
        raw = json.dumps(body).encode()
        return _exchange(
            url,
            _headers(
                "POST", "/v1/manifests", len(raw), Content_Type="application/json", Authorization=f"Bearer {token}"
            ),
            raw,
        )

    assert post(TOKEN_A, {"note": "by a"})[0] == 202
    status, refused = post(TOKEN_B, {"note": "by b"})
    assert status == 409 and refused["detail"] == {"field": "annotations"} and "by a" not in json.dumps(refused)
    status, same = post(TOKEN_B, None)
    assert status == 202 and same["duplicate"] is True and same["receipt"]["manifest_digest"] == same["manifest_digest"]
    assert post(TOKEN_B, {"note": "by a"})[0] == 202  # the same display data: the same record


def test_a_hostile_archive_does_not_hold_up_public_reads(server: tuple[str, Any, Chain]) -> None:
    """A million directory entries (here 30,000: past the default 20,000 entries) is refused by a bound
    (entries, or header bytes against the compression ratio: whichever trips first); the public search
    answers afterwards (the journal lock is not held while an archive is decoded)."""
    url, process, _ = server
    body, content_type = _multipart("archive", "dirs.tar.bz2", directory_flood(30_000))
    status, answer = _exchange(
        url,
        _headers("POST", "/v1/bundles", len(body), Content_Type=content_type, Authorization=f"Bearer {TOKEN_A}"),
        body,
    )
    assert status == 422 and answer["code"] == "archive_refused", answer
    assert "entries" in answer["message"] or "compression ratio" in answer["message"]
    status, _ = _exchange(url, _headers("GET", "/v1/search/0x" + "99" * 32, None))
    assert status == 200
    _alive(url, process)
