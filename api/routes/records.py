"""Read routes for records: search by any hash, batches, attempts, lineage, the deployment."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from anchor.chain.deployment import check_code, load_deployment
from anchor.chain.explorer import links
from anchor.errors import BadInput, NotAnchored
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
    found = await in_journal(request.app, lambda journal: _found(journal.db, body, value))
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
                    partial(registry.root_record, key_bytes) if what == "root"
                    else partial(registry.lineage, key_bytes, researcher)
                )  # fmt: skip
                anchored = reader.read(f"{what}:{key_bytes.hex()}:{researcher}", probe) is not None
            hits.append(SearchHit(kind=kind, key=hit_key, detail={**detail, "anchored": anchored}))
        return hits, reader.head()

    hits, block = await run_in_threadpool(live)
    return SearchResults(data=hits, count=len(hits), read_at_block=block)


Found = list[tuple[str, str, dict[str, Any], tuple[str, bytes, str | None] | None]]


def _found(db: Any, body: str, value: bytes) -> Found:
    """What the journal knows under `value` (run in the thread pool)."""
    found: Found = []
    root_of_item = "SELECT effects.key FROM items JOIN effects ON effects.id = items.effect_id WHERE items.digest = ?"

    def batch(digest: bytes) -> tuple[str, bytes, str | None] | None:
        row = db.execute(root_of_item, (digest,)).fetchone()
        return None if row is None else ("root", bytes(row[0]), None)

    for row in db.execute("SELECT digest, kind FROM items WHERE digest = ?", (value,)):
        found.append(
            ("manifest", _hex(row["digest"]) or "", {"manifest_kind": row["kind"]}, batch(bytes(row["digest"])))
        )
    for row in db.execute(
        "SELECT files.path, items.digest FROM files JOIN items ON items.id = files.item_id WHERE blake3 = ?", (value,)
    ):
        detail = {"path": row["path"], "manifest_digest": _hex(row["digest"])}
        found.append(("file", "0x" + value.hex(), detail, batch(bytes(row["digest"]))))
    # a v2 lineage effect is keyed by keccak(researcher, commit): its commit is found in its args
    for row in db.execute(
        "SELECT kind, key, args, tx_hash, block_number FROM effects"
        " WHERE key = ? OR tx_hash = ? OR json_extract(args, '$.commit') = ?",
        (value, value, value.hex()),
    ):
        is_tx = row["tx_hash"] is not None and bytes(row["tx_hash"]) == value
        kind = "transaction" if is_tx else "batch_root" if row["kind"] == "root" else "lineage"
        args = json.loads(row["args"])
        detail = {
            "effect": row["kind"],
            "key": _hex(row["key"]),
            "tx_hash": _hex(row["tx_hash"]),
            "block_number": row["block_number"],
            **({"researcher": args["researcher"]} if "researcher" in args else {}),
        }
        if row["kind"] == "root":
            found.append((kind, "0x" + value.hex(), detail, ("root", bytes(row["key"]), None)))
        else:
            commit = bytes.fromhex(args["commit"]) if "commit" in args else bytes(row["key"])
            found.append((kind, "0x" + value.hex(), detail, ("lineage", commit, args.get("researcher"))))
    if len(body) in (40, 64):
        for row in db.execute(
            "SELECT digest FROM items WHERE kind = 'attempt' AND json_extract(identity, '$.commit') = ?", (body,)
        ):
            found.append(("attempt", body, {"manifest_digest": _hex(row["digest"])}, batch(bytes(row["digest"]))))
    return found


@router.get("/batches/{root}", operation_id="get_batch", responses=ERRORS)
async def get_batch(root: Hex32, request: Request, reader: ReaderDep) -> BatchPublic:
    """The records of one batch, and the registry's record of its root, read live."""
    key = parse_hex32(root, "root")
    effect, rows = await in_journal(request.app, lambda journal: batch_rows(journal.db, key))
    if effect is None:
        raise NotAnchored(f"no batch with root 0x{key.hex()} in this service's journal", detail={"root": root})
    items = [{"manifest_digest": _hex(r["digest"]), "kind": r["kind"], "state": r["state"]} for r in rows]
    registry = await run_in_threadpool(reader.registry)
    record = await run_in_threadpool(reader.read, f"root:{key.hex()}", lambda: registry.root_record(key))
    block = reader.head()
    tx = _hex(effect["tx_hash"])
    return BatchPublic(
        root="0x" + key.hex(), anchored=record is not None, read_at_block=block,
        record=None if record is None else record.__dict__ if hasattr(record, "__dict__") else _slots(record),
        items=items, links=links(registry.chain_id, tx_hash=tx, block=None if record is None else record.block_number,
                                 address=registry.address),
    )  # fmt: skip


def batch_rows(db: Any, key: bytes) -> tuple[Any, list[Any]]:
    """A batch's root effect and its items, from the journal (run in the thread pool)."""
    effect = db.execute("SELECT id, tx_hash FROM effects WHERE kind = 'root' AND key = ?", (key,)).fetchone()
    if effect is None:
        return None, []
    items = db.execute("SELECT digest, kind, state FROM items WHERE effect_id = ? ORDER BY id", (effect["id"],))
    return effect, items.fetchall()


def _slots(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in obj.__slots__}


@router.get("/attempts/{commit}", operation_id="get_attempt", responses=ERRORS)
async def get_attempt(commit: CommitOrHex32, request: Request, reader: ReaderDep) -> AttemptPublic:
    """An attempt by commit: its lineage record read live from the registry, and its attempt manifests."""
    key = commit_key(commit)
    body = commit.lower().removeprefix("0x")
    registry = await run_in_threadpool(reader.registry)
    record = await run_in_threadpool(reader.read, f"lineage:{key.hex()}", lambda: registry.lineage(key))
    rows = await in_journal(
        request.app,
        lambda journal: journal.db.execute(
            "SELECT digest, state, identity FROM items"
            " WHERE kind = 'attempt' AND json_extract(identity, '$.commit') = ?",
            (body,),
        ).fetchall(),
    )
    manifests = [{"manifest_digest": _hex(r["digest"]), "state": r["state"], **json.loads(r["identity"])} for r in rows]
    if record is None and not manifests:
        raise NotAnchored(f"no attempt {body} is known here or anchored on chain", detail={"commit": commit})
    return AttemptPublic(
        commit=body, lineage_on_chain=None if record is None else _slots(record), read_at_block=reader.head(),
        manifests=manifests,
        links={} if record is None else links(registry.chain_id, tx_hash=record.tx_hash, block=record.block_number,
                                              address=registry.address),
    )  # fmt: skip


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
        deployment=record.model_dump(), code_matches=True, read_at_block=reader.head(),
        links=links(record.chain_id, tx_hash=record.tx_hash, block=record.block_number, address=record.address),
    )  # fmt: skip


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
            contract=kept["contract"], compiler_version=kept["solc_version"],
            settings=kept["standard_json_input"]["settings"], constructor_arguments="0x",
            standard_json_input=kept["standard_json_input"], address=record.address, chain_id=record.chain_id,
            metadata=kept.get("metadata"), recorded=True,
        )  # fmt: skip
    source = standard_json_input()
    name = CONTRACTS[version_of(record.code_hash) or LATEST]
    return SourceMaterial(
        contract=f"contracts/{name}.sol:{name}", compiler_version=compiler_settings().solc_version,
        settings=source["settings"], constructor_arguments="0x", standard_json_input=source, address=record.address,
        chain_id=record.chain_id,
    )  # fmt: skip
