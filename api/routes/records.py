"""Read routes for records: search by any hash, batches, attempts, lineage, the deployment."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from anchor.chain.deployment import check_code, load_deployment
from anchor.chain.explorer import links
from anchor.errors import BadInput, NotAnchored
from anchor.journal import reads
from anchor.journal.store import Journal
from anchor.manifest.onchain import commit_key, parse_hex32
from api.deps import ReaderDep, SettingsDep, in_journal
from api.routes.verify import ERRORS, CommitOrHex32, Hex32
from api.schemas import (
    AttemptPublic,
    BatchPublic,
    DeploymentPublic,
    LineagePublic,
    SearchHit,
    SearchResults,
    SourceMaterial,
)

router = APIRouter(prefix="/v1", tags=["records"])


def _hex(value: bytes | None) -> str | None:
    return None if value is None else "0x" + bytes(value).hex()


@router.get("/search/{key}", operation_id="search", responses=ERRORS)
async def search(key: CommitOrHex32, request: Request, reader: ReaderDep) -> SearchResults:
    """Everything we know under a hash: manifest digest, file BLAKE3, git commit, batch root or tx hash.

    The journal says where to look; whether each record is anchored is read live from the registry."""
    body = key.lower().removeprefix("0x")
    value = commit_key(body) if len(body) == 40 else parse_hex32(key, "key")
    found = await in_journal(request.app, lambda journal: _found(journal, reader.chain_id(), body, value))
    if not found:
        return SearchResults(data=[], count=0, read_at_block=None)

    def live() -> tuple[list[SearchHit], int]:
        registry = reader.registry()
        hits = []
        for kind, hit_key, detail, check in found:
            anchored: bool | None = None
            if check is not None:
                what, key_bytes, researcher = check
                probe: Callable[[], object] = (
                    partial(registry.root_record, key_bytes)
                    if what == "root"
                    else partial(registry.lineage, key_bytes, researcher)
                )
                anchored = reader.read(f"{what}:{key_bytes.hex()}:{researcher}", probe) is not None
            hits.append(SearchHit(kind=kind, key=hit_key, detail={**detail, "anchored": anchored}))
        return hits, reader.head()

    hits, block = await run_in_threadpool(live)
    return SearchResults(data=hits, count=len(hits), read_at_block=block)


Found = list[tuple[str, str, dict[str, Any], tuple[str, bytes, str | None] | None]]


def _found(journal: Journal, chain_id: int, body: str, value: bytes) -> Found:
    """What the journal knows under `value` on this service's chain (run in the thread pool)."""
    found: Found = []

    def batch(digest: bytes) -> tuple[str, bytes, str | None] | None:
        root = reads.root_of_item(journal, chain_id, digest)
        return None if root is None else ("root", root, None)

    for item in reads.items_with_digest(journal, chain_id, value):
        found.append(("manifest", "0x" + item.digest.hex(), {"manifest_kind": item.kind}, batch(item.digest)))
    for hit in reads.files_with_blake3(journal, chain_id, value):
        detail: dict[str, Any] = {"path": hit.path, "manifest_digest": "0x" + hit.digest.hex()}
        found.append(("file", "0x" + value.hex(), detail, batch(hit.digest)))
    for effect in reads.effects_matching(journal, chain_id, value):
        is_tx = effect.tx_hash == value
        kind = "transaction" if is_tx else "batch_root" if effect.kind == "root" else "lineage"
        detail = {
            "effect": effect.kind,
            "key": "0x" + effect.key.hex(),
            "tx_hash": _hex(effect.tx_hash),
            "block_number": effect.block_number,
            **({"researcher": effect.args["researcher"]} if "researcher" in effect.args else {}),
        }
        if effect.kind == "root":
            found.append((kind, "0x" + value.hex(), detail, ("root", effect.key, None)))
        else:
            commit = bytes.fromhex(effect.args["commit"]) if "commit" in effect.args else effect.key
            found.append((kind, "0x" + value.hex(), detail, ("lineage", commit, effect.args.get("researcher"))))
    if len(body) in (40, 64):
        for attempt in reads.attempts_of_commit(journal, chain_id, body):
            found.append(("attempt", body, {"manifest_digest": "0x" + attempt.digest.hex()}, batch(attempt.digest)))
    return found


@router.get("/batches/{root}", operation_id="get_batch", responses=ERRORS)
async def get_batch(root: Hex32, request: Request, reader: ReaderDep) -> BatchPublic:
    """The records of one batch, and the registry's record of its root, read live."""
    key = parse_hex32(root, "root")
    effect, rows = await in_journal(request.app, lambda journal: reads.batch(journal, reader.chain_id(), key))
    if effect is None:
        raise NotAnchored(f"no batch with root 0x{key.hex()} in this service's journal", detail={"root": root})
    items = [{"manifest_digest": "0x" + r.digest.hex(), "kind": r.kind, "state": r.state} for r in rows]
    registry = await run_in_threadpool(reader.registry)
    tx = _hex(effect.tx_hash)
    record = await run_in_threadpool(reader.read, f"root:{key.hex()}:{tx}", lambda: registry.root_record_of_tx(key, tx))
    block = reader.head()
    return BatchPublic(
        root="0x" + key.hex(),
        anchored=record is not None,
        read_at_block=block,
        record=None if record is None else record.__dict__ if hasattr(record, "__dict__") else _slots(record),
        items=items,
        links=links(
            registry.chain_id,
            tx_hash=tx,
            block=None if record is None else record.block_number,
            address=registry.address,
        ),
    )


def _slots(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in obj.__slots__}


@router.get("/attempts/{commit}", operation_id="get_attempt", responses=ERRORS)
async def get_attempt(commit: CommitOrHex32, request: Request, reader: ReaderDep) -> AttemptPublic:
    """An attempt by commit: its lineage record read live from the registry, and its attempt manifests."""
    key = commit_key(commit)
    body = commit.lower().removeprefix("0x")
    registry = await run_in_threadpool(reader.registry)
    record = await run_in_threadpool(reader.read, f"lineage:{key.hex()}", lambda: registry.lineage(key))
    rows = await in_journal(request.app, lambda journal: reads.attempts_of_commit(journal, registry.chain_id, body))
    manifests = [{"manifest_digest": "0x" + r.digest.hex(), "state": r.state, **r.identity} for r in rows]
    if record is None and not manifests:
        raise NotAnchored(f"no attempt {body} is known here or anchored on chain", detail={"commit": commit})
    return AttemptPublic(
        commit=body,
        lineage_on_chain=None if record is None else _slots(record),
        read_at_block=reader.head(),
        manifests=manifests,
        links={}
        if record is None
        else links(registry.chain_id, tx_hash=record.tx_hash, block=record.block_number, address=registry.address),
    )


@router.get("/lineage/{commit}", operation_id="get_lineage", responses=ERRORS)
async def get_lineage(commit: str, settings: SettingsDep, reader: ReaderDep) -> LineagePublic:
    """Ancestors back to the baseline and descendants of an attempt, from the verified research ledger."""
    from anchor.research.report import lineage_tree
    from api.routes.research import find_attempt

    if not all(c in "0123456789abcdef" for c in commit.lower()) or not 4 <= len(commit) <= 64:
        raise BadInput(f"commit: expected hex, got {commit!r}", detail={"field": "commit"})

    def compute() -> LineagePublic:
        entries, _ = find_attempt(settings, commit, prefix=True)
        data, _ = lineage_tree(entries, commit, settings)
        return LineagePublic(**data, read_at_block=reader.head())

    return await run_in_threadpool(compute)


@router.get("/deployment", operation_id="get_deployment", responses=ERRORS)
async def get_deployment(settings: SettingsDep, reader: ReaderDep) -> DeploymentPublic:
    """The registry this service anchors to, with its code checked live."""
    registry = await run_in_threadpool(reader.registry)
    record = load_deployment(settings.data_dir, registry.chain_id)
    await run_in_threadpool(check_code, registry.rpc, record.address, record.code_hash)
    return DeploymentPublic(
        deployment=record.model_dump(),
        code_matches=True,
        read_at_block=reader.head(),
        links=links(record.chain_id, tx_hash=record.tx_hash, block=record.block_number, address=record.address),
    )


@router.get("/deployment/source", operation_id="get_source_material", responses=ERRORS)
async def get_source_material(settings: SettingsDep, reader: ReaderDep) -> SourceMaterial:
    """Standard-JSON input, compiler version and settings, constructor arguments: enough for
    `forge verify-contract`, Sourcify or an Etherscan-style explorer to verify the deployment."""
    from anchor.chain.artifact import CONTRACTS, LATEST, version_of
    from anchor.chain.compiler import standard_json_input
    from anchor.chain.deployment import load_source
    from anchor.chain.toolchain import compiler_settings

    registry = await run_in_threadpool(reader.registry)
    record = load_deployment(settings.data_dir, registry.chain_id)
    kept = load_source(settings.data_dir, registry.chain_id)
    if kept is not None and kept.get("address") == record.address and kept.get("contract"):
        return SourceMaterial(
            contract=kept["contract"],
            compiler_version=kept["solc_version"],
            settings=kept["standard_json_input"]["settings"],
            constructor_arguments="0x",
            standard_json_input=kept["standard_json_input"],
            address=record.address,
            chain_id=record.chain_id,
            metadata=kept.get("metadata"),
            recorded=True,
        )
    source = standard_json_input()
    name = CONTRACTS[version_of(record.code_hash) or LATEST]
    return SourceMaterial(
        contract=f"contracts/{name}.sol:{name}",
        compiler_version=compiler_settings().solc_version,
        settings=source["settings"],
        constructor_arguments="0x",
        standard_json_input=source,
        address=record.address,
        chain_id=record.chain_id,
    )
