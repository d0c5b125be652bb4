"""The research verdict: `verify_search`, what `anchor research verify` and the API's
`GET /v1/research/searches/{search}/verify` say of a search, in the library rather than in the CLI.

What it checks of a search, in this order, each check raising the typed error of its failure (an edit
is `Tampered`, exit 4, 409); a proof each rests on is verified by the one checklist of
anchor.readback.checklist, whose numbers are its own:
- the ledger's hash chain (`Ledger.verify`), scored under one contract (`one_contract`);
- every ledger head anchored at a checkpoint, read back from its proof file (`check_anchored_heads`);
- the checkpoint records found on chain by the contract digest, from trusted addresses (`chain_heads`);
- every measured commit with its ledgered diff, every attempt's evidence re-hashed, metrics re-read
  (anchor.research.audit);
- every anchored champion record still binds what was anchored, its final runs re-hashed and its
  sample size, interval and team count recomputed (`champion_records_hold`);
- no kept attempt's lineage record retracted by its researcher (`refuse_retracted_champions`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from anchor.record import Value
from anchor.research.ledger import AnyLedger, KeepRuleJson, LedgerRow
from anchor.settings.session import Settings


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SearchVerdict(Value):
    """What a search's verification found: every field computed here, none taken from the ledger's say."""

    ledger: str
    entries: int
    head: str
    attempts: int
    researcher: str | None
    anchored: Any
    """anchor.research.checkpoints.AnchoredHeads: the heads read back from their proof files."""
    found: Any
    """anchor.research.checkpoints.ChainHeads: the checkpoint records found on chain by the contract."""
    audit: Any
    """anchor.research.audit's result: commits found, run dirs re-hashed, legacy entries."""
    final_runs: int
    environments: tuple[str, ...]
    """The environment each attempt binds (canonical JSON), in ledger order."""
    keep_rules: dict[str, KeepRuleJson]
    """researcher -> the noise-aware keep rule recomputed from its calibration (`keep = "noise"`)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "ledger": self.ledger,
            "entries": self.entries,
            "head": self.head,
            "anchored": asdict(self.anchored) if self.anchored.checkpoints else None,
            "checkpoint_records": asdict(self.found),
            "audit": asdict(self.audit),
            "final_runs": self.final_runs,
            "keep_rules": self.keep_rules,
        }


def verify_search(
    settings: Settings,
    work: Path,
    *,
    repo: Path | None = None,
    researcher: str | None = None,
    researcher_addresses: Sequence[str] = (),
    explicit: bool = True,
) -> SearchVerdict:
    """The module's checks, the hash chain to the champion records, on the search in `work`
    (`explicit=False`: the one search the data dir knows, when `work` holds none). `researcher`: audit
    only this researcher's commits and evidence (a shared ledger: each host has its own run dirs)."""
    from anchor.errors import BadInput
    from anchor.research.audit import audit
    from anchor.research.checkpoints import check_anchored_heads

    ledger, work = open_search(settings, work, explicit)
    result = ledger.verify()
    one_contract(ledger.entries(), ledger.where)
    heads = check_anchored_heads(ledger, settings)
    opened = search_registry(settings)
    found = chain_heads(ledger, work, settings, [researcher_address(a) for a in researcher_addresses], opened)
    attempts = ledger.entries()
    mine = attempts if researcher is None else [e for e in attempts if e["researcher"] == researcher]
    if researcher is not None and not mine:
        from anchor.errors import did_you_mean

        known = sorted({str(e["researcher"]) for e in attempts})
        raise BadInput(
            f"researcher {researcher}: no attempts of this researcher in {ledger.where} (its researchers:"
            f" {', '.join(known) or 'none yet'}){did_you_mean(researcher, known)}",
            detail={"field": "researcher"},
        )
    checked = audit(mine, work, repo)
    rules = _noise_holds(work, ledger.rows())
    finals = champion_records_hold(work, mine, attempts)
    bound = tuple(json.dumps(e["environment"], sort_keys=True) for e in mine if "environment" in e)
    refuse_retracted_champions(opened, mine)
    return SearchVerdict(
        str(ledger.where),
        int(result["entries"]),
        str(result["head"]),
        len(attempts),
        researcher,
        heads,
        found,
        checked,
        finals,
        bound,
        rules,
    )


def refuse_retracted_champions(opened: tuple[Any, Any] | None, entries: list[LedgerRow]) -> None:
    """The last check: a kept attempt whose lineage record its researcher retracted on chain is named, and the
    search's verdict is `Retracted` (exit 16): the ledger still holds, the claim that attempt made does
    not. Read live by commit (every researcher's record of it) from `opened` (`search_registry`);
    nothing to read without a registry."""
    from datetime import UTC, datetime

    from anchor.errors import Retracted
    from anchor.manifest.onchain import commit_key

    kept = list(dict.fromkeys(e["commit"] for e in entries if e.get("kept")))
    if not kept or opened is None:
        return
    _, registry = opened
    found = []
    for commit in kept:
        for record in registry.lineages(commit_key(commit)):
            retraction = registry.lineage_retraction(record)
            if retraction is not None:
                when = datetime.fromtimestamp(retraction.timestamp, UTC).isoformat(timespec="seconds")
                found.append(
                    {
                        "commit": commit,
                        "researcher": record.researcher,
                        "retracted_at": when,
                        "retracted_block": retraction.block_number,
                        "reason_digest": retraction.reason,
                        "tx_hash": retraction.tx_hash,
                    }
                )
    if found:
        named = ", ".join(f"{f['commit'][:12]} (by {f['researcher']} at {f['retracted_at']})" for f in found)
        raise Retracted(
            f"retracted champion{'s' if len(found) > 1 else ''}: {named}; the ledger holds, but"
            f" {'these records were' if len(found) > 1 else 'its record was'} withdrawn by the researcher",
            detail={"retracted": found},
        )


def open_search(settings: Settings, work: Path, explicit: bool = True) -> tuple[AnyLedger, Path]:
    """The search's ledger (a file, or PostgreSQL with ANCHOR_JOURNAL_URL) and its work dir, for a read:
    nothing is created. A work dir without a ledger is not anchored (exit 3), naming where it looked and
    the searches this data dir knows; without --workdir, the one search the data dir knows is taken."""
    from anchor.errors import NotAnchored
    from anchor.research.ledger import Ledger, open_ledger
    from anchor.research.searches import known_searches

    if settings.journal_url:
        ledger = open_ledger(work, settings.journal_url, settings.env.ledger_name)
        if not isinstance(ledger, Ledger):
            if not ledger.rows():
                raise NotAnchored(
                    f"{ledger.where}: no rows (hint: ANCHOR_LEDGER_NAME or --workdir names the search)",
                    detail={"field": "workdir", "looked_for": str(ledger.where)},
                )
            return ledger, work
    known = known_searches(settings.data_dir)
    if not (work / "ledger.jsonl").is_file():
        if not explicit and len(known) == 1:
            work = known[0].resolve()
        else:
            named = ", ".join(str(k) for k in known[:10]) or "none yet (anchor research run starts one)"
            raise NotAnchored(
                f"no research ledger in {work} (looked for {work / 'ledger.jsonl'}); the searches this data dir"
                f" knows: {named}" + ("; name one with --workdir" if known else ""),
                detail={"field": "workdir", "looked_for": str(work / "ledger.jsonl"), "known": [str(k) for k in known]},
            )
    return Ledger(work / "ledger.jsonl"), work


def champion_records_hold(work: Path, entries: list[LedgerRow], team: list[LedgerRow]) -> int:
    """Every champion record that was anchored still binds the bytes its proof anchored, and every final
    run it binds (replications, holdout) re-hashes to its evidence with its metric re-read: an edited
    figure, in the record or in a run's metrics file, is named (exit 4), never read back as the
    search's. Returns how many final run dirs were checked."""
    from anchor.errors import Tampered
    from anchor.research.contract import load_pinned
    from anchor.research.final import check_final_runs, record_state

    terms = load_pinned(work, team)
    source = None if terms is None else terms.metric_source
    checked = 0
    for who in sorted({e["researcher"] for e in entries}):
        for path in sorted((work / "runs" / who).glob("champion-*-*.json")):
            if path.name.endswith(".anchor.json") or not (
                path.stem.rsplit("-", 1)[-1].isascii() and path.stem.rsplit("-", 1)[-1].isdigit()
            ):
                continue
            record, state = record_state(path)
            if state == "edited":
                raise Tampered(
                    f"{path}: the champion record differs from the one anchored beside it",
                    detail={"field": "champion_record", "record": str(path)},
                )
            if terms is not None and source is not None:
                try:
                    checked += check_final_runs(work, record, source)
                except Tampered as exc:
                    exc.detail = {**exc.detail, "field": "final_run", "record": str(path)}
                    raise
                _uncertainty_holds(terms, work, record, team, path)
    return checked


def _uncertainty_holds(terms: Any, work: Path, record: Any, entries: list[LedgerRow], path: Path) -> None:
    """A version 2 record's sample size, interval and team count, recomputed: from the run dir the
    champion's attempt binds (already re-hashed by the audit) and from the ledger."""
    from anchor.errors import Tampered
    from anchor.research.uncertainty import of_champion

    if record.version < 2:
        return
    entry = next((e for e in entries if e.get("attempt_digest") == record.attempt_digest), None)
    if entry is None:
        raise Tampered(
            f"{path}: its champion attempt {record.attempt_digest[:16]}… is not in the ledger",
            detail={"field": "champion_record", "record": str(path)},
        )
    honest = of_champion(terms, work, entry)
    interval = None if record.interval is None else record.interval.model_dump()
    said = {"examples": record.examples, "examples_source": record.examples_source, "interval": interval}
    for field, value in said.items():
        if honest[field] != value:
            raise Tampered(
                f"{path}: its {field} is {value}, but recomputed from the champion's run dir it is {honest[field]}",
                detail={"field": field, "record": str(path)},
            )
    if record.version >= 3 and record.holdout is not None:
        _holdout_holds(terms, work, record, path)
    team = sum(1 for e in entries if e["seq"] < record.ledger_length)
    if record.team_trials != team:
        raise Tampered(
            f"{path}: team_trials is {record.team_trials}, but the ledger's first {record.ledger_length}"
            f" rows hold {team} attempts",
            detail={"field": "team_trials", "record": str(path)},
        )


def researcher_address(text: str) -> str:
    from anchor.manifest.onchain import parse_address

    return parse_address(text, "researcher_addresses").lower()


def search_registry(settings: Settings) -> tuple[Any, Any] | None:
    """(chain handle, registry) a search's records are read from, opened once per verdict; None where
    there can be no record: the local chain of a data dir that never deployed one (a --no-anchor
    search), or a chain without a registry."""
    from anchor.chain.open import open_chain, open_registry
    from anchor.errors import NotDeployed

    if not settings.rpc_url:
        from anchor.chain.deployment import load_deployment
        from anchor.chain.node import LOCAL_CHAIN_ID

        try:
            load_deployment(settings.data_dir, LOCAL_CHAIN_ID)
        except NotDeployed:
            return None
    handle = open_chain(settings)
    try:
        return handle, open_registry(settings, handle)
    except NotDeployed:
        return None


def chain_heads(ledger: Any, work: Path, settings: Any, given: list[str], opened: tuple[Any, Any] | None = None) -> Any:
    """The ledger's checkpoint records found on chain by its contract digest (the entries' and the
    pinned contract's: a ledger rewritten under another digest is still looked up under the pinned
    one), compared with the ledger; see anchor.research.checkpoints. The chain and the registry are
    opened once (`opened`, else here), the ledger read once."""
    from anchor.research.anchoring import contract_digest
    from anchor.research.checkpoints import ChainHeads, check_chain_heads, trusted_addresses

    nothing = ChainHeads(0, 0, None, None, tuple(given), ())
    reached = opened if opened is not None else search_registry(settings)
    if reached is None:
        return nothing
    handle, registry = reached
    trusted = trusted_addresses(settings, handle.chain_id, given)
    rows = ledger.rows()
    digests = {row["contract_digest"] for row in rows if "contract_digest" in row}  # one, once verify checked it
    if (work / "contract.toml").is_file():
        digests.add(contract_digest(work / "contract.toml"))
    found = [check_chain_heads(rows, ledger.where, registry, digest, trusted) for digest in sorted(digests)]
    best = max(found, key=lambda f: f.length, default=ChainHeads(0, 0, None, None, tuple(sorted(trusted)), ()))
    return ChainHeads(
        sum(f.checkpoints for f in found),
        best.length,
        best.block,
        best.anchored_at,
        best.trusted,
        tuple(sorted({a for f in found for a in f.others})),
        tuple(sorted({g for f in found for g in f.other_ledgers})),
        rows[0]["digest"] if rows else "",
    )


def one_contract(entries: list[LedgerRow], where: object) -> None:
    """A ledger is scored under one pre-registered contract: rows under a second digest (its pinned
    copy edited mid-search, the direction of the metric turned round) make its values incomparable,
    and an audit names where the second contract begins (exit 4)."""
    from anchor.errors import Tampered

    first = next((e["contract_digest"] for e in entries if "contract_digest" in e), None)
    other = next((e for e in entries if e.get("contract_digest", first) != first), None)
    if other is not None:
        raise Tampered(
            f"{where}: scored under two contracts: {first[:16]}… until seq {other['seq']}, then"  # type: ignore[index]
            f" {other['contract_digest'][:16]}…; values under different contracts cannot be compared",
            detail={"field": "contract_digest", "seq": other["seq"], "digests": [first, other["contract_digest"]]},
        )


def _holdout_holds(terms: Any, work: Path, record: Any, path: Path) -> None:
    """A version 3 record's holdout n and interval, recomputed from its bound run dir (re-hashed by
    `check_final_runs` first): an edited figure is named (exit 4). Its data's digests stand as anchored:
    whoever holds the data compares them (`anchor hash PATH`); data changed since is no edit of the record."""
    from anchor.errors import Tampered
    from anchor.research.final import final_runs_dir
    from anchor.research.uncertainty import of_holdout

    runs = final_runs_dir(work, record.researcher, record.commit, record.trials)
    honest = of_holdout(terms, runs / "holdout", record.holdout.model_dump(mode="json"))
    interval = None if record.holdout_interval is None else record.holdout_interval.model_dump()
    said = {
        "holdout_examples": record.holdout_examples,
        "holdout_examples_source": record.holdout_examples_source,
        "holdout_interval": interval,
    }
    for field, value in said.items():
        if honest[field] != value:
            raise Tampered(
                f"{path}: its {field} is {value}, but recomputed from the holdout's run dir it is {honest[field]}",
                detail={"field": field, "record": str(path)},
            )


def _noise_holds(work: Path, rows: list[LedgerRow]) -> dict[str, KeepRuleJson]:
    """Every noise calibration recomputed and every keep decision replayed (anchor.research.noise)."""
    from anchor.research.contract import load_pinned
    from anchor.research.noise import NOISE, check_noise

    terms = load_pinned(work, rows) if any(r.get("event") == NOISE for r in rows) else None
    return {} if terms is None else check_noise(work, rows, terms)
