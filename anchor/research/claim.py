"""A research claim as one portable file: export a search, and check it again anywhere, even offline.

Why: `research verify` and `research report` need the data dir and a live RPC endpoint, so a reader
of a paper cannot re-derive its trial count, champion and selection-adjusted figure from what the
paper ships. A claim holds what those figures rest on, and nothing that must be trusted:

- `ledger.jsonl`, the hash-chained ledger (every attempt and its trace);
- `contract.toml` and `contract.anchor.json`, the pre-registered contract and its proof;
- `checkpoints/*.anchor.json`, every anchored ledger head, sealed (anchor.sealing: header, receipt and
  receipt-trie proof), so the heads are checked against a block hash the reader trusts;
- `runs/<researcher>/champion-*.json` and their sealed proofs: the champion records (replications,
  holdout), with the champion's bound run dir and every record's final runs, re-hashed against the
  evidence the ledger and the record bind;
- `attempts/<seq>.json`, every attempt's manifest as the ledger entry rebuilds it;
- `lineage/<commit>.json`, each kept commit of a champion's lineage: its `LineageAnchored` record with
  the transaction's receipt sealed as a batch root's is;
- `headers.json`, every block header from the first sealed block to the last, each the parent of the
  next: trusting the last block's hash (`--trusted-block N:HASH`) vouches for every earlier one;
- `report.txt` and `report.json`, the report as `research report` printed it when exported;
- `claim.json`, the index: each file and its BLAKE3, so an edit made without care is named by file.

`check_claim` re-derives from these alone (offline: no socket is opened) the ledger's hash chain, that
every row is under an anchored head (no trial dropped), the pre-registration, each attempt manifest,
each champion record against its sealed proof and the ledger's champion, and the whole report, which
must equal the exported one line for line. Anything that does not follow is `Tampered`, naming the
file and what in it. The index is a convenience, never the defence: an editor who recomputes it is
caught by the re-derivation.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import AnchorError, BadInput, NotAnchored, Tampered
from anchor.record import Value
from anchor.research.ledger import LedgerRow

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from anchor.settings.session import Settings

FORMAT = "anchor/research-claim"
VERSION = 1
INDEX = "claim.json"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ClaimExport(Value):
    """What `export_claim` wrote: where, how many files, and the block a reader must trust."""

    path: Path
    files: int
    chain_id: int
    trust_block: int
    """The claim's last header: `--trusted-block N:HASH` with this N checks every sealed part."""
    sealed: int
    """Proofs sealed into the claim (checkpoints, champion records, the pre-registration)."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ClaimVerdict(Value):
    """What `check_claim` re-derived: the report (as `research report` prints it) and what it rests on."""

    lines: list[str]
    """The report, line for line as exported."""
    data: dict[str, Any]
    """The report's figures (`research report --json`)."""
    trials: int
    rows: int
    anchored_rows: int
    checkpoints: int
    champions: dict[str, str]
    """researcher -> champion commit."""
    lineage: dict[str, list[str]]
    """researcher -> the champion's lineage, baseline first (kept commits)."""
    lineage_by: dict[str, list[str]]
    """researcher -> the addresses whose sealed lineage records (checked) hold that lineage."""
    attempts_checked: int
    records_checked: int
    offline: bool
    trusted: str
    """What the verdict rests on, in words."""
    where: dict[str, object] | None = None
    """Where the last checkpoint is anchored: chain, registry, transaction, batch root, ledger head and length."""

    def to_json(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "report": self.data,
            "trials": self.trials,
            "rows": self.rows,
            "anchored_rows": self.anchored_rows,
            "checkpoints": self.checkpoints,
            "champions": self.champions,
            "lineage": self.lineage,
            "lineage_by": self.lineage_by,
            "attempts_checked": self.attempts_checked,
            "records_checked": self.records_checked,
            "offline": self.offline,
            "trusted": self.trusted,
        }


# -- export ---------------------------------------------------------------------------------------------


def export_claim(settings: Settings, work: Path, out: Path, explicit: bool = True) -> ClaimExport:
    """Write the claim of the search in `work` to `out` (a `.tar` file, else a directory). Needs the
    chain (to seal the proofs and read the headers) and a search whose every row is under an anchored
    head; `out` must not exist (nothing of the user's is overwritten)."""
    from anchor.research.report import report_search
    from anchor.research.verdict import open_search

    if out.exists() or out.is_symlink():
        raise BadInput(
            f"{out}: already exists; a claim is written only where nothing is (choose another -o)",
            detail={"field": "output", "file": str(out)},
        )
    if not out.parent.is_dir():
        raise BadInput(f"{out.parent}: no such directory", detail={"field": "output", "file": str(out)})
    from anchor.errors import ChainUnreachable
    from anchor.manifest.canonical import canonical_json

    ledger, work = open_search(settings, work, explicit)
    rows = ledger.rows()
    report = report_search(settings, work, explicit)
    if report.data.get("anchored_trials") is None:
        raise ChainUnreachable(
            "the chain is out of reach: a claim is sealed from it (start it with `anchor chain up`, or give --rpc-url)",
            detail={"inputs": ["rpc_url"]},
        )
    with tempfile.TemporaryDirectory(prefix=".claim-", dir=out.parent) as scratch:
        root = Path(scratch) / "claim"
        root.mkdir()
        # the rows as the file holds them (a PostgreSQL ledger stores each row's canonical line too)
        (root / "ledger.jsonl").write_bytes(b"".join(canonical_json(row) + b"\n" for row in rows))
        for name in ("contract.toml", "contract.anchor.json"):
            if (work / name).is_file():
                shutil.copy2(work / name, root / name)
        (root / "checkpoints").mkdir()
        for proof in sorted((work / "checkpoints").glob("*.anchor.json")):
            shutil.copy2(proof, root / "checkpoints" / proof.name)
        _copy_champions(work, root, report.data)
        _write_attempts(root, rows)
        sealed, chain_id, blocks = _seal_all(settings, root)
        blocks += _seal_lineage(settings, root, rows)
        _write_headers(settings, root, chain_id, blocks)
        (root / "report.txt").write_text("\n".join(report.lines) + "\n", encoding="utf-8")
        (root / "report.json").write_text(json.dumps(report.data, sort_keys=True, indent=1) + "\n", encoding="utf-8")
        files = _index(root, chain_id, max(blocks))
        if out.suffix == ".tar":
            _tar(root, out)
        else:
            root.rename(out)
    return ClaimExport(out, files, chain_id, max(blocks), sealed)


def _copy_champions(work: Path, root: Path, data: dict[str, Any]) -> None:
    """Each researcher's champion records with their proofs, the champion's bound run dir and every
    record's final runs (replications, holdout): what the champion's n, interval, replications and
    holdout are re-derived from, each re-hashed against the evidence the ledger or the record binds."""
    from anchor.research.evidence import listing_path, run_dir_of
    from anchor.research.final import final_runs_dir, record_state

    def copy(source: Path) -> None:
        target = root / source.relative_to(work)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True)
        elif source.is_file():
            shutil.copy2(source, target)

    for who, stats in data["researchers"].items():
        (root / "runs" / who).mkdir(parents=True, exist_ok=True)
        for record in sorted((work / "runs" / who).glob("champion-*.json")):
            copy(record)
            if not record.name.endswith(".anchor.json") and (
                record.stem.rsplit("-", 1)[-1].isascii() and record.stem.rsplit("-", 1)[-1].isdigit()
            ):
                manifest, state = record_state(record)
                if state != "anchored":  # a claim must rest on the chain: say so now, not at the reader's check
                    raise NotAnchored(
                        f"{record}: {state} (`anchor research run` again anchors it; `anchor research"
                        " verify` names an edit)",
                        detail={"file": str(record)},
                    )
                copy(final_runs_dir(work, who, manifest.commit, manifest.trials))
        if stats.get("champion") is not None:
            run = run_dir_of(work, who, stats["champion"])
            copy(run)
            copy(listing_path(run))


def _write_attempts(root: Path, rows: list[LedgerRow]) -> None:
    from anchor.research.anchoring import attempt_of
    from anchor.research.ledger import is_attempt

    (root / "attempts").mkdir()
    for row in rows:
        if is_attempt(row):
            identity = attempt_of(row).identity()
            (root / "attempts" / f"{row['seq']:08d}.json").write_text(json.dumps(identity, sort_keys=True) + "\n")


def _proofs(root: Path) -> list[Path]:
    """The proofs of a claim that are sealed into it: the checkpoints, the champion records, the contract's."""
    found = sorted((root / "checkpoints").glob("*.anchor.json")) + sorted(root.glob("runs/*/champion-*.anchor.json"))
    return found + ([root / "contract.anchor.json"] if (root / "contract.anchor.json").is_file() else [])


def _seal_all(settings: Settings, root: Path) -> tuple[int, int, list[int]]:
    """Seal every proof of the claim (the copies: the work dir's own files stay as they were); returns
    how many, the chain, and every sealed block number."""
    from anchor.proof.file import load_proof
    from anchor.sealing.make import seal

    chains, blocks, count = set(), [], 0
    for path in _proofs(root):
        seal(settings, path)
        proof = load_proof(path)
        for each in proof.all_anchors():
            chains.add(each.anchor.chain_id)
            blocks.append(each.anchor.block_number)
        count += 1
    if len(chains) != 1:
        raise BadInput(
            f"a claim rests on one chain; this search's proofs are on {sorted(chains) or 'none'}",
            detail={"field": "chain_id"},
        )
    return count, chains.pop(), blocks


def _first_kept(rows: list[LedgerRow]) -> dict[str, LedgerRow]:
    """Each kept commit's first kept entry in ledger order, whoever measured it: the one its on-chain
    lineage record holds (researchers cloned from one repository share its baseline commit, and one
    record is written per commit: anchor.research.anchoring)."""
    from anchor.research.ledger import is_attempt

    return {r["commit"]: r for r in reversed([r for r in rows if is_attempt(r) and r.get("kept")])}


def _seal_lineage(settings: Settings, root: Path, rows: list[LedgerRow]) -> list[int]:
    """Each champion's lineage records (one per kept commit of its lineage) as the chain holds them,
    sealed as batch roots are (header, receipt, receipt-trie proof: anchor.sealing.make.seal_anchor), in
    `lineage/<commit>.json`; returns their blocks. The record taken is the earliest whose fields are the
    ledger's (anyone may anchor a record of a public commit; the check names whose it is)."""
    import dataclasses as dc

    from anchor.chain.abi import checksum_address
    from anchor.chain.open import open_chain, open_registry
    from anchor.manifest.onchain import commit_key
    from anchor.proof.file import load_proof
    from anchor.sealing.make import seal_anchor

    champions, lineage = _champions(rows)
    if not champions:
        return []
    handle = open_chain(settings)
    registry = open_registry(settings, handle)
    like = load_proof(sorted((root / "checkpoints").glob("*.anchor.json"))[-1]).anchor
    (root / "lineage").mkdir()
    blocks = []
    first = _first_kept(rows)
    for who in sorted(champions):
        for commit in lineage[who]:
            entry = first[commit]
            parent = "0x" + commit_key(entry["parent"]).hex()
            wanted = (parent, "0x" + entry["diff_blake3"], "0x" + entry["metric_hash"])
            records = registry.lineages(commit_key(commit))
            found = [r for r in records if (r.parent, r.diff_hash, r.metric_hash) == wanted]
            if not found:
                raise BadInput(
                    f"the lineage record of {commit[:12]} ({who}) is not on chain yet: run `anchor research"
                    " run` again to anchor it, then export",
                    detail={"commit": commit},
                )
            record = min(found, key=lambda r: r.block_number)
            anchor = dc.replace(like, tx_hash=record.tx_hash, block_number=record.block_number, sealed=None)
            sealed, _ = seal_anchor(handle.rpc, anchor)
            body = {
                "chain_id": anchor.chain_id,
                "registry": anchor.registry,
                "commit": commit,
                "researcher": checksum_address(record.researcher),
                "parent": record.parent,
                "diff_hash": record.diff_hash,
                "metric_hash": record.metric_hash,
                "kept": record.kept,
                "timestamp": record.timestamp,
                "tx_hash": record.tx_hash,
                "block_number": record.block_number,
                "sealed": dc.asdict(sealed),
            }
            (root / "lineage" / f"{commit}.json").write_text(json.dumps(body, sort_keys=True, indent=1) + "\n")
            blocks.append(record.block_number)
    return blocks


def _write_headers(settings: Settings, root: Path, chain_id: int, blocks: list[int]) -> None:
    """Every header from the first sealed block to the last, each re-encoded and compared with the hash
    the node names for it (never adopted unchecked)."""
    from anchor.chain.open import open_chain
    from anchor.manifest.keccak import keccak256
    from anchor.sealing.encoding import header_rlp

    handle = open_chain(settings)
    headers = []
    for number in range(min(blocks), max(blocks) + 1):
        block = handle.rpc.get_block(number)
        if not block:
            raise BadInput(f"block {number} is not on this chain: not exported", detail={"block": number})
        header = header_rlp(block)
        if "0x" + keccak256(header).hex() != str(block["hash"]).lower():
            raise BadInput(
                f"block {number}: its header does not re-encode to its hash: not exported", detail={"block": number}
            )
        headers.append("0x" + header.hex())
    (root / "headers.json").write_text(
        json.dumps({"chain_id": chain_id, "first": min(blocks), "headers": headers}, indent=1) + "\n"
    )


def _digests(root: Path) -> dict[str, str]:
    """Each file's BLAKE3, read a chunk at a time: a claim's file is never held whole in memory."""
    import blake3

    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.name != INDEX:
            hasher = blake3.blake3()
            with path.open("rb") as f:
                while chunk := f.read(1 << 20):
                    hasher.update(chunk)
            found[path.relative_to(root).as_posix()] = hasher.hexdigest()
    return found


def _index(root: Path, chain_id: int, trust_block: int) -> int:
    files = _digests(root)
    index = {"format": FORMAT, "version": VERSION, "chain_id": chain_id, "trust_block": trust_block, "files": files}
    (root / INDEX).write_text(json.dumps(index, sort_keys=True, indent=1) + "\n")
    return len(files) + 1


def _tar(root: Path, out: Path) -> None:
    """A reproducible tar: sorted names, no owner, no time."""

    def plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info

    tmp = out.with_name(out.name + ".partial")
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(root.rglob("*")):
            tar.add(path, arcname=path.relative_to(root).as_posix(), recursive=False, filter=plain)
    tmp.replace(out)


# -- check ----------------------------------------------------------------------------------------------


def check_claim(
    settings: Settings,
    claim: Path,
    *,
    offline: bool = False,
    trusted_block: Sequence[str] = (),
    name: str | None = None,
) -> ClaimVerdict:
    """Re-derive the claim at `claim` (a directory or a `.tar` file): see the module docstring. Offline,
    `trusted_block` (`N:HASH`, the claim's last header, or an earlier one of its headers) is the whole
    trust root and no socket is opened; online, every proof is read back from the chain `settings`
    names. `name`: what a refusal calls the claim (the API's "claim", never a path of the server's)."""
    label = name or str(claim)
    with _opened(claim, label) as root:
        try:
            return _check(settings, root, offline, trusted_block)
        except AnchorError as exc:  # name the claim's parts, never a scratch directory of ours
            raise _renamed(exc, root, label) from None
        except (ValueError, KeyError, TypeError, IndexError, UnicodeError) as exc:  # hostile input, not a bug of ours
            said = _renamed(Tampered(f"{type(exc).__name__}: {exc}"), root, label).message
            raise Tampered(f"{label}: a part of it is malformed ({said[:300]})", detail={"field": "claim"}) from None


def _renamed(exc: AnchorError, root: Path, claim: str) -> AnchorError:
    said = exc.message.replace(str(root) + "/", f"{claim}: ").replace(str(root), claim)
    detail = {
        k: (v.replace(str(root) + "/", "").replace(str(root), claim) if isinstance(v, str) else v)
        for k, v in exc.detail.items()
    }
    return type(exc)(said, detail=detail)


def _opened(claim: Path, label: str) -> Any:
    """The claim as a scratch directory of ours, removed afterwards: a tar extracted (Python's `data`
    filter), a directory copied (so the check neither changes the user's directory nor reads a file
    that changes under it). Regular files and directories only: a link or a device is refused by name."""
    from contextlib import contextmanager

    @contextmanager
    def opened() -> Iterator[Path]:
        if not claim.is_dir() and not claim.is_file():
            raise BadInput(
                f"{label}: no such claim (a directory or a .tar that `anchor research export` wrote)",
                detail={"field": "claim", "file": label},
            )
        with tempfile.TemporaryDirectory(prefix="anchor-claim-") as scratch:
            root = Path(scratch).resolve() / "claim"
            try:
                if claim.is_dir():
                    shutil.copytree(claim, root, symlinks=True)
                else:
                    with tarfile.open(claim, "r:") as tar:
                        members = tar.getmembers()
                        odd_members = [m.name for m in members if not (m.isfile() or m.isdir())]
                        if odd_members:
                            raise Tampered(
                                f"{label}: {odd_members[0]} is neither a file nor a directory",
                                detail={"field": "claim", "file": odd_members[0]},
                            )
                        # a sparse member claims any size in a few bytes of tar (40 GiB in 143 KB): an
                        # export never writes one, and every other member's size is the tar's own bytes
                        sparse = [m.name for m in members if m.issparse()]
                        if sparse:
                            raise BadInput(
                                f"{label}: {sparse[0]} is a sparse member; `anchor research export` writes none",
                                detail={"field": "claim", "file": sparse[0]},
                            )
                        tar.extractall(root, members, filter="data")
            except tarfile.FilterError as exc:  # its message holds the path it resolved to: a path of ours
                name = exc.tarinfo.name
                raise BadInput(
                    f"{label}: {name} would be written outside the claim ({type(exc).__name__})",
                    detail={"field": "claim", "file": name},
                ) from None
            except (tarfile.TarError, OSError, shutil.Error) as exc:
                said = str(exc).replace(str(root) + "/", "").replace(str(root), "claim").replace(scratch, "")
                raise BadInput(
                    f"{label}: not a claim tar ({type(exc).__name__}: {said})", detail={"field": "claim", "file": label}
                ) from None
            odd = sorted(p for p in root.rglob("*") if p.is_symlink() or not (p.is_file() or p.is_dir()))
            if odd:
                name = odd[0].relative_to(root).as_posix()
                raise Tampered(
                    f"{label}: {name} is neither a file nor a directory", detail={"field": "claim", "file": name}
                )
            yield root

    return opened()


def _check(settings: Settings, root: Path, offline: bool, trusted_block: Sequence[str]) -> ClaimVerdict:
    from anchor.research.checkpoints import check_anchored_heads
    from anchor.research.contract import load_pinned
    from anchor.research.ledger import Ledger, is_attempt
    from anchor.research.report import report_search

    index = _read_index(root)
    settings = dataclasses.replace(settings, journal_url=None)  # the claim's ledger, never a database's
    trusted = "the chain, read live"
    headers = _headers(root)
    if offline:
        settings, trusted = _trust_headers(settings, headers, index, trusted_block)
    else:  # the same headers, vouched for by the chain's hash of the last: online reads what offline reads
        _trust_headers(settings, headers, index, [_chains_hash_of(headers[1][-1], settings, index)])
    ledger = Ledger(root / "ledger.jsonl")
    ledger.verify()  # the hash chain: an edited, dropped or reordered row named by line
    rows = ledger.rows()
    load_pinned(root, rows)  # the contract is the pre-registered one, byte for byte
    for proof in _proofs(root):  # each sealed proof against the trusted block (or the chain), named if not
        _leaned_on(proof, settings, proof.relative_to(root).as_posix())
    heads = check_anchored_heads(ledger, settings)  # every checkpoint, sealed, against the trusted block
    if heads.length != len(rows):
        raise Tampered(
            f"ledger.jsonl: {len(rows)} rows, but the anchored heads cover {heads.length}: rows"
            f" {heads.length}..{len(rows) - 1} are under no anchored checkpoint (added after the fact?)",
            detail={"file": "ledger.jsonl", "seq": heads.length},
        )
    attempts = _attempts_hold(root, rows)
    champions, lineage = _champions(rows)
    records = _records_hold(root, rows, champions, settings)
    _champion_runs_hold(root, rows, champions)
    writers = _lineage_holds(root, rows, lineage, settings)
    report = report_search(settings, root)
    exported = (root / "report.txt").read_text(encoding="utf-8").splitlines()
    for number, (said, derived) in enumerate(zip(exported, report.lines, strict=False), start=1):
        if said != derived:
            raise Tampered(
                f"report.txt line {number}: says {said!r}, the claim re-derives {derived!r}",
                detail={"file": "report.txt", "line": number},
            )
    if len(exported) != len(report.lines):
        raise Tampered(
            f"report.txt: {len(exported)} lines, the claim re-derives {len(report.lines)}",
            detail={"file": "report.txt"},
        )
    exported_data = json.loads((root / "report.json").read_text(encoding="utf-8"))
    if exported_data != json.loads(json.dumps(report.data)):
        differ = sorted(k for k in set(exported_data) | set(report.data) if exported_data.get(k) != report.data.get(k))
        raise Tampered(
            f"report.json: {', '.join(differ) or 'its figures'} differ from what the claim re-derives",
            detail={"file": "report.json", "fields": differ},
        )
    _every_file_bound(root, rows, champions, terms=load_pinned(root, rows))
    return ClaimVerdict(
        lines=report.lines,
        data=report.data,
        trials=sum(1 for r in rows if is_attempt(r)),
        rows=len(rows),
        anchored_rows=heads.length,
        checkpoints=heads.checkpoints,
        champions=champions,
        lineage=lineage,
        lineage_by=writers,
        attempts_checked=attempts,
        records_checked=records,
        offline=offline,
        trusted=trusted,
        where=heads.where,
    )


def _read_index(root: Path) -> dict[str, Any]:
    """The claim's index, and every file it lists with the digest it lists: a file missing, added or
    edited is named (an editor who rewrote the index too is caught by the re-derivation after this)."""
    try:
        index = json.loads((root / INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BadInput(
            f"{INDEX}: missing or not JSON: not a claim `anchor research export` wrote", detail={"file": INDEX}
        ) from None
    if not isinstance(index, dict) or index.get("format") != FORMAT or index.get("version") != VERSION:
        raise BadInput(f"{INDEX}: not a version {VERSION} {FORMAT}", detail={"file": INDEX})
    listed, found = index.get("files") or {}, _digests(root)
    for name in sorted(set(listed) | set(found)):
        if name not in found:
            raise Tampered(f"{name}: listed in the claim, missing from it", detail={"file": name})
        if name not in listed:
            raise Tampered(f"{name}: in the claim, listed nowhere in its index", detail={"file": name})
        if listed[name] != found[name]:
            raise Tampered(f"{name}: edited (its BLAKE3 is not the one the claim lists)", detail={"file": name})
    return index


Headers = tuple[list[bytes], list[int], list[bytes]]
"""headers.json read: the headers, their block numbers, their parent hashes."""


def _headers(root: Path) -> Headers:
    """headers.json's headers, their block numbers and their parent hashes (`Tampered` if it holds none)."""
    from anchor.sealing.encoding import NUMBER, header_fields

    try:
        listing = json.loads((root / "headers.json").read_text(encoding="utf-8"))
        headers = [bytes.fromhex(h[2:]) for h in listing["headers"]]
        numbers = [int.from_bytes(header_fields(h)[NUMBER], "big") for h in headers]
        parents = [bytes(header_fields(h)[0]) for h in headers]
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise Tampered(
            f"headers.json: not a list of block headers ({type(exc).__name__})", detail={"file": "headers.json"}
        ) from None
    if not headers:
        raise Tampered("headers.json: holds no block header", detail={"file": "headers.json"})
    return headers, numbers, parents


def _chains_hash_of(last: int, settings: Settings, index: dict[str, object]) -> str:
    """`N:HASH` of the claim's last header, block `last`, as the chain read live names it: online, the
    chain is the trust root headers.json is checked against (it went unread online, so an edited one
    passed there and was refused offline)."""
    from anchor.chain.open import open_chain
    from anchor.chain.presets import chain_name

    handle = open_chain(settings)
    said = index.get("chain_id")
    chain_id = said if isinstance(said, int) else 0
    if handle.chain_id != chain_id:
        raise Tampered(
            f"{INDEX}: the claim is of {chain_name(chain_id)}, the endpoint serves {chain_name(handle.chain_id)}",
            detail={"file": INDEX, "field": "chain_id"},
        )
    block = handle.rpc.get_block(last)
    if not block:
        raise Tampered(
            f"headers.json: block {last} is not on the chain read ({chain_name(chain_id)})",
            detail={"file": "headers.json", "block": last},
        )
    return f"{last}:{str(block['hash']).lower()}"


def _every_file_bound(root: Path, rows: list[LedgerRow], champions: dict[str, str], terms: Any) -> None:
    """Every file of the claim is one a check above re-derived or re-hashed: a file added beside them (a
    NOTES.txt saying "holdout 0.99" in a final run's folder, a researcher's runs copied under another
    name, a checkpoint twice under another length) is named, so a verified claim carries nothing that
    was not checked. The same rule as the checks: the champion's run dir counts when its evidence was
    re-hashed, a record's final runs when the contract names a metric to re-read."""
    from anchor.manifest.decode import validate_identity
    from anchor.manifest.filetree import FileTreeManifest
    from anchor.research.evidence import evidence_dir_of, listing_path
    from anchor.research.final import final_runs_dir, record_state
    from anchor.research.ledger import is_attempt

    bound = {INDEX, "ledger.jsonl", "contract.toml", "contract.anchor.json", "headers.json", "report.txt"}
    bound |= {"report.json"}
    bound |= {f"attempts/{r['seq']:08d}.json" for r in rows if is_attempt(r)}
    bound |= {p.relative_to(root).as_posix() for p in (root / "lineage").glob("*.json")}  # each one checked
    # each checkpoint checked, and named for the ledger length it holds (check_anchored_heads)
    bound |= {p.relative_to(root).as_posix() for p in (root / "checkpoints").glob("*.anchor.json")}
    trees: list[tuple[Path, str]] = []  # run dirs the checks re-hashed, with the evidence each hashes to
    researchers = {str(r["researcher"]) for r in rows if is_attempt(r)}
    for who in sorted(researchers):
        champion = [r for r in rows if is_attempt(r) and r["researcher"] == who and r["kept"]]
        if who in champions and terms is not None and "evidence" in champion[-1]:
            trees.append((evidence_dir_of(root, champion[-1]), str(champion[-1]["evidence"])))
        for path in sorted((root / "runs" / who).glob("champion-*.json")):
            bound.add(path.relative_to(root).as_posix())
            if path.name.endswith(".anchor.json"):
                continue
            record, _ = record_state(path)
            if record.researcher != who:
                raise Tampered(
                    f"runs/{who}/{path.name}: a champion record of {record.researcher}, filed under {who}",
                    detail={"file": f"runs/{who}/{path.name}"},
                )
            if terms is not None and terms.metric_source is not None:
                runs = final_runs_dir(root, who, record.commit, record.trials)
                named = [(f"replication-{i}", run) for i, run in enumerate(record.replications)]
                named += [] if record.holdout is None else [("holdout", record.holdout)]
                trees += [(runs / name, run.evidence) for name, run in named]
    for tree, evidence in trees:  # each re-hashed to `evidence` above; its listing must list that tree
        bound |= {p.relative_to(root).as_posix() for p in tree.rglob("*") if p.is_file()}
        listing = listing_path(tree)
        if listing.is_file():
            name = listing.relative_to(root).as_posix()
            try:  # the listing's own digest, from its entries: no file of the tree is read again
                said = json.loads(listing.read_text(encoding="utf-8"))
                identity = validate_identity(said["identity"], name)
                listed = FileTreeManifest.from_files_json(said["files"], name, identity)
                holds = listed.identity() == said["identity"] and listed.digest.hex() == evidence
            except (AnchorError, ValueError, KeyError, TypeError):
                holds = False
            if not holds:
                raise Tampered(f"{name}: not the listing of the run dir beside it", detail={"file": name})
            bound.add(name)
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    unbound = [name for name in found if name not in bound]
    if unbound:
        raise Tampered(
            f"{unbound[0]}: in the claim, but no check binds it (a file added to it?)"
            + (f"; {len(unbound) - 1} more" if len(unbound) > 1 else ""),
            detail={"file": unbound[0], "files": unbound[:20]},
        )


def _trust_headers(
    settings: Settings, read: Headers, index: dict[str, Any], trusted_block: Sequence[str]
) -> tuple[Settings, str]:
    """Offline settings trusting every header of the claim that the trusted block vouches for: the
    trusted one by its hash, each earlier one as the parent hash of the next. Nothing is trusted on the
    claim's word: the hint says where to get the hash, never prints the claim's."""
    from anchor.chain.presets import chain_name
    from anchor.manifest.keccak import keccak256
    from anchor.sealing.check import parse_trusted_block

    chain_id = int(index.get("chain_id") or 0)
    given = [parse_trusted_block(text) for text in trusted_block]
    if not given:
        last = index.get("trust_block")
        raise BadInput(
            f"trusted_block: an offline check rests on a block hash you trust; this claim's last block is"
            f" {last} of {chain_name(chain_id)}: get its hash from an explorer, from `cast block {last}"
            f" -f hash` on any node of that chain, or from a colleague, and give it as {last}:HASH",
            detail={"field": "trusted_block", "block": last},
        )
    headers, numbers, parents = read
    hashes = [keccak256(h) for h in headers]
    by_number = {n: i for i, n in enumerate(numbers)}
    vouched: list[tuple[int | None, int, str]] = []
    for chain, number, block_hash in given:
        if chain is not None and chain != chain_id:
            continue
        if number not in by_number:
            span = f"{numbers[0]}..{numbers[-1]}" if numbers else "none"
            raise BadInput(
                f"trusted_block: block {number} is not among the claim's headers ({span}): trust the last",
                detail={"field": "trusted_block", "block": number},
            )
        at = by_number[number]
        if "0x" + hashes[at].hex() != block_hash:
            raise Tampered(
                f"headers.json: block {number} does not hash to the trusted {block_hash} (the claim was edited,"
                " or the hash is not that block's: check the hash you gave)",
                detail={"file": "headers.json", "block": number},
            )
        vouched.append((chain_id, number, block_hash))
        for i in range(at, 0, -1):  # each earlier header is the parent of the one after it
            if parents[i] != hashes[i - 1] or numbers[i] != numbers[i - 1] + 1:
                raise Tampered(
                    f"headers.json: block {numbers[i - 1]} is not the parent of block {numbers[i]}",
                    detail={"file": "headers.json", "block": numbers[i - 1]},
                )
            vouched.append((chain_id, numbers[i - 1], "0x" + hashes[i - 1].hex()))
    if not vouched:
        others = sorted({str(chain) for chain, _, _ in given if chain is not None and chain != chain_id})
        raise BadInput(
            f"trusted_block: none for {chain_name(chain_id)}, the claim's chain"
            + (f" (the blocks given are of chain {', '.join(others)})" if others else ""),
            detail={"field": "trusted_block"},
        )
    top = max(n for _, n, _ in vouched)
    if numbers and top < numbers[-1]:  # a later header would be trusted on the claim's word: ask for the last
        raise BadInput(
            f"trusted_block: the claim's headers run to block {numbers[-1]} of {chain_name(chain_id)}; trust"
            f" that one: get its hash from an explorer or `cast block {numbers[-1]} -f hash` on any node",
            detail={"field": "trusted_block", "block": numbers[-1]},
        )
    words = (
        f"that block {top} of {chain_name(chain_id)} is the hash you gave (every earlier header of the claim"
        " is its ancestor); offline, a retraction written after it cannot be seen"
    )
    return dataclasses.replace(settings, offline=True, trusted_blocks=tuple(vouched)), words


def _leaned_on(path: Path, settings: Settings, name: str) -> Any:
    """The proof at `path` verified as any verdict leans on one; a refusal names the claim's file."""
    from anchor.proof.file import load_proof
    from anchor.readback.checklist import leaned_on

    try:
        return leaned_on(load_proof(path), settings)
    except AnchorError as exc:
        if exc.message.startswith(name):
            raise
        raise type(exc)(f"{name}: {exc.message}", detail={**exc.detail, "file": name}) from None


def _attempts_hold(root: Path, rows: list[LedgerRow]) -> int:
    """Every attempt's manifest in the claim is the one its ledger entry rebuilds, and there is one for
    each: an edited metric, a dropped or an added attempt file is named."""
    from anchor.research.anchoring import attempt_of
    from anchor.research.ledger import is_attempt

    wanted = {f"{row['seq']:08d}.json": row for row in rows if is_attempt(row)}
    present = {p.name for p in (root / "attempts").glob("*")} if (root / "attempts").is_dir() else set()
    for name in sorted(set(wanted) | present):
        if name not in present:
            raise Tampered(
                f"attempts/{name}: missing (ledger seq {wanted[name]['seq']} is an attempt)",
                detail={"file": f"attempts/{name}", "seq": wanted[name]["seq"]},
            )
        if name not in wanted:
            raise Tampered(f"attempts/{name}: an attempt the ledger does not hold", detail={"file": f"attempts/{name}"})
        said = json.loads((root / "attempts" / name).read_text(encoding="utf-8"))
        built = attempt_of(wanted[name]).identity()
        if said != json.loads(json.dumps(built)):
            differ = sorted(k for k in set(said) | set(built) if said.get(k) != built.get(k))
            verb = "differs" if len(differ) == 1 else "differ"
            raise Tampered(
                f"attempts/{name}: {', '.join(differ)} {verb} from ledger seq {wanted[name]['seq']}",
                detail={"file": f"attempts/{name}", "fields": differ},
            )
    return len(wanted)


def _champions(rows: list[LedgerRow]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Each researcher's champion (their last kept attempt) and its lineage through kept parents, from
    the verified ledger."""
    from anchor.research.ledger import is_attempt

    champions: dict[str, str] = {}
    lineage: dict[str, list[str]] = {}
    for who in sorted({str(r["researcher"]) for r in rows if is_attempt(r)}):
        kept = [r for r in rows if is_attempt(r) and r["researcher"] == who and r["kept"]]
        if not kept:
            continue
        by_commit = {r["commit"]: r for r in kept}
        chain: list[str] = []
        node: LedgerRow | None = kept[-1]
        while node is not None and node["commit"] not in chain:
            chain.append(node["commit"])
            node = by_commit.get(node["parent"])
        champions[who], lineage[who] = kept[-1]["commit"], list(reversed(chain))
    return champions, lineage


LINEAGE_FIELDS = ("researcher", "commit", "parent", "diff_hash", "metric_hash", "kept", "timestamp")


def _lineage_holds(
    root: Path, rows: list[LedgerRow], lineage: dict[str, list[str]], settings: Settings
) -> dict[str, list[str]]:
    """Every kept commit of each champion's lineage has its sealed lineage record in the claim, holding
    the ledger's fields (parent, diff, metric hash, kept), and the record is on chain: offline, in a
    receipt of a block the trusted one vouches for, emitted by the canonical registry; online, read back.
    Returns researcher -> the addresses that wrote its records."""
    from anchor.manifest.onchain import commit_key

    present = {p.name for p in (root / "lineage").glob("*")} if (root / "lineage").is_dir() else set()
    wanted = {f"{c}.json": who for who, commits in lineage.items() for c in commits}
    for name in sorted(set(wanted) | present):
        if name not in present:
            raise Tampered(
                f"lineage/{name}: missing (a kept commit of {wanted[name]}'s champion)",
                detail={"file": f"lineage/{name}"},
            )
        if name not in wanted:
            raise Tampered(f"lineage/{name}: not a commit of a champion's lineage", detail={"file": f"lineage/{name}"})
    writers: dict[str, list[str]] = {}
    first = _first_kept(rows)
    for name, who in sorted(wanted.items()):
        where = f"lineage/{name}"
        body = json.loads((root / where).read_text(encoding="utf-8"))
        entry = first[name.removesuffix(".json")]
        ledger = {
            "commit": "0x" + commit_key(entry["commit"]).hex(),
            "parent": "0x" + commit_key(entry["parent"]).hex(),
            "diff_hash": "0x" + entry["diff_blake3"],
            "metric_hash": "0x" + entry["metric_hash"],
            "kept": True,
        }
        said = {k: body.get(k) for k in ledger} | {"commit": "0x" + commit_key(str(body.get("commit"))).hex()}
        differ = sorted(k for k in ledger if said[k] != ledger[k])
        if differ:
            raise Tampered(f"{where}: {', '.join(differ)} not the ledger's", detail={"file": where, "fields": differ})
        on_chain = _sealed_lineage(body, settings, where) if settings.offline else _live_lineage(body, settings, where)
        if on_chain != {k: body.get(k) for k in LINEAGE_FIELDS} | {"commit": ledger["commit"]}:
            raise Tampered(f"{where}: not the record its transaction holds", detail={"file": where})
        writers.setdefault(who, [])
        if str(body["researcher"]) not in writers[who]:
            writers[who].append(str(body["researcher"]))
    return writers


def _sealed_lineage(body: dict[str, Any], settings: Settings, where: str) -> dict[str, Any]:
    """The lineage record a sealed receipt holds, checked as anchor.sealing.check checks a root's: the
    header is one the trusted block vouches for, the receipt is in its receipts trie, succeeded, and holds
    the canonical registry's LineageAnchored event."""
    import rlp
    from trie.exceptions import BadTrieProof
    from trie.hexary import HexaryTrie

    from anchor.chain.abi import checksum_address, interface
    from anchor.chain.artifact import LATEST
    from anchor.chain.canonical import canonical_address
    from anchor.manifest.keccak import keccak256
    from anchor.manifest.onchain import commit_key
    from anchor.sealing.encoding import NUMBER, RECEIPTS_ROOT, TIMESTAMP, header_fields, index_key, receipt_logs

    try:
        sealed = body["sealed"]
        header, receipt = bytes.fromhex(sealed["header"][2:]), bytes.fromhex(sealed["receipt"][2:])
        fields = header_fields(header)
        number, timestamp = (int.from_bytes(fields[i], "big") for i in (NUMBER, TIMESTAMP))
        nodes = tuple(rlp.decode(bytes.fromhex(node[2:])) for node in sealed["proof"])
        key, receipts_root = index_key(int(sealed["index"])), bytes(fields[RECEIPTS_ROOT])
        held = HexaryTrie.get_from_proof(receipts_root, key, nodes)  # type: ignore[no-untyped-call]
        status, logs = receipt_logs(receipt)
    except (KeyError, TypeError, ValueError, IndexError, BadTrieProof, rlp.exceptions.DecodingError):
        raise Tampered(
            f"{where}: its sealed section is not a header, receipt and trie proof",
            detail={"file": where, "field": "sealed"},
        ) from None
    vouched = settings.trusted_block(int(body.get("chain_id") or 0), number)
    if vouched != "0x" + keccak256(header).hex() or number != body.get("block_number"):
        raise Tampered(
            f"{where}: sealed header of block {number} is not one the trusted block vouches for",
            detail={"file": where, "field": "sealed.header"},
        )
    if bytes(held) != receipt or status != 1:
        raise Tampered(
            f"{where}: sealed receipt is not a successful one of block {number}",
            detail={"file": where, "field": "sealed.receipt"},
        )
    event = interface(LATEST).events["LineageAnchored"]
    emitter = bytes.fromhex(canonical_address()[2:])
    for address, topics, data in logs:
        if address != emitter or not topics or "0x" + topics[0].hex() != event.topic:
            continue
        args = event.args({"topics": ["0x" + t.hex() for t in topics], "data": "0x" + data.hex()})
        if bytes(args["commit"]) != commit_key(str(body.get("commit"))) or int(args["timestamp"]) != timestamp:
            continue
        return {
            "researcher": checksum_address(args["researcher"]),
            "commit": "0x" + bytes(args["commit"]).hex(),
            "parent": "0x" + bytes(args["parent"]).hex(),
            "diff_hash": "0x" + bytes(args["diffHash"]).hex(),
            "metric_hash": "0x" + bytes(args["metricHash"]).hex(),
            "kept": bool(args["kept"]),
            "timestamp": int(args["timestamp"]),
        }
    raise Tampered(
        f"{where}: the sealed receipt holds no LineageAnchored event of the canonical registry for it",
        detail={"file": where, "field": "sealed.receipt"},
    )


def _live_lineage(body: dict[str, Any], settings: Settings, where: str) -> dict[str, Any]:
    """The lineage record the chain holds for the file's commit and researcher, read back live."""
    from anchor.chain.abi import checksum_address
    from anchor.chain.open import open_chain, open_registry
    from anchor.manifest.onchain import commit_key

    handle = open_chain(settings)
    key, who = commit_key(str(body.get("commit"))), str(body.get("researcher"))
    record = open_registry(settings, handle).lineage(key, who)
    if record is None or record.tx_hash.lower() != str(body.get("tx_hash")).lower():
        raise Tampered(
            f"{where}: no such record on chain (its transaction {body.get('tx_hash')})", detail={"file": where}
        )
    return {
        "researcher": checksum_address(record.researcher),
        "commit": record.commit,
        "parent": record.parent,
        "diff_hash": record.diff_hash,
        "metric_hash": record.metric_hash,
        "kept": record.kept,
        "timestamp": record.timestamp,
    }


def _champion_runs_hold(root: Path, rows: list[LedgerRow], champions: dict[str, str]) -> None:
    """Each champion's bound run dir re-hashes to the evidence its ledger entry binds (its metric re-read),
    then every champion record's final runs, n, interval and team count are recomputed from the claim as
    `research verify` recomputes them from a work dir (`champion_records_hold`)."""
    from anchor.research.contract import load_pinned
    from anchor.research.evidence import check, evidence_dir_of
    from anchor.research.ledger import is_attempt
    from anchor.research.verdict import champion_records_hold

    entries = [r for r in rows if is_attempt(r)]
    terms = load_pinned(root, rows)
    for who, commit in champions.items():
        entry = [e for e in entries if e["researcher"] == who and e["kept"]][-1]
        if terms is not None and "evidence" in entry:
            what = f"the champion of {who} ({commit[:12]})"
            check(entry, evidence_dir_of(root, entry), terms.metric_source, what=what)
    champion_records_hold(root, entries, entries)


def _records_hold(root: Path, rows: list[LedgerRow], champions: dict[str, str], settings: Settings) -> int:
    """Every champion record is the one its sealed proof anchored (checked on chain or against the
    trusted block), names the ledger's champion and a head the ledger holds."""
    from anchor.research.final import record_state

    checked = 0
    for path in sorted(root.glob("runs/*/champion-*.json")):
        if path.name.endswith(".anchor.json"):
            continue
        name = path.relative_to(root).as_posix()
        record, state = record_state(path)
        if state != "anchored":
            raise Tampered(f"{name}: {state} (its proof binds other bytes, or there is none)", detail={"file": name})
        if record.ledger_length > len(rows) or rows[record.ledger_length - 1]["digest"] != record.ledger_head:
            raise Tampered(
                f"{name}: names ledger head {record.ledger_head[:16]}… at {record.ledger_length} rows,"
                " which the ledger does not hold",
                detail={"file": name},
            )
        kept = [r for r in rows[: record.ledger_length] if r.get("researcher") == record.researcher and r.get("kept")]
        if not kept or (kept[-1]["commit"], kept[-1]["attempt_digest"]) != (record.commit, record.attempt_digest):
            raise Tampered(
                f"{name}: its champion {record.commit[:12]} is not the ledger's at that head"
                f" ({kept[-1]['commit'][:12] if kept else 'none'})",
                detail={"file": name},
            )
        checked += 1
    return checked
