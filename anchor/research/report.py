"""Read-back of a search: the summary report and the attempt tree, from the verified ledger."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import AnchorError, BadInput
from anchor.record import Value
from anchor.research.ledger import LedgerRow
from anchor.research.loop import NO_PARENT
from anchor.settings.session import Settings

if TYPE_CHECKING:
    from anchor.research.contract import AttemptContract

BARS = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SearchReport(Value):
    """`anchor research report` of one search: its figures (`data`, the JSON a script reads), the same in
    words (`lines`), and the pre-registered contract a table's methods sentence is made from."""

    data: dict[str, Any]
    lines: list[str]
    contract: AttemptContract | None


def report_search(settings: Settings, work: Path, explicit: bool = True) -> SearchReport:
    """The figures of the search in `work`, from its verified ledger: per researcher the attempts, kept,
    failures and best metric over attempts (`summarise`), the proposals turned away, the pre-registered
    noise rule, the champion record's final numbers with the champion's sample size and interval, and
    how many trials the anchored checkpoints cover (None when the chain is out of reach). Every door
    (the CLI, a paper's table) shows these; none computes a figure of its own."""
    from anchor.errors import ChainUnreachable
    from anchor.research.checkpoints import check_anchored_heads
    from anchor.research.contract import load_pinned
    from anchor.research.ledger import is_attempt
    from anchor.research.noise import rule_in, rule_line
    from anchor.research.verdict import chain_heads, open_search

    ledger, work = open_search(settings, work, explicit)
    ledger.verify()
    entries, rows = ledger.entries(), ledger.rows()
    data, lines = summarise(entries)
    for who, reasons in rejections_by_reason(rows).items():  # proposals turned away: no trials
        if who in data["researchers"]:
            data["researchers"][who]["rejected"] = reasons
            lines.append(
                f"{who}: {sum(reasons.values())} proposals rejected, never measured: "
                + ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
            )
    for who in data["researchers"]:  # a pre-registered noise rule: its figures and its decisions
        rule = rule_in(rows, who)
        if rule is not None:
            data["researchers"][who]["keep_rule"] = rule
            lines.append(f"{who}: {rule_line(rule, [e for e in entries if e['researcher'] == who])}")
    terms = load_pinned(work, rows)
    _final_numbers(work, terms, data, lines, entries)
    try:
        heads = check_anchored_heads(ledger, settings)
        # the checkpoint records found by the contract digest need a live read: offline (a claim checked
        # against a trusted block) the sealed checkpoint proofs alone count
        found = heads if settings.offline else chain_heads(ledger, work, settings, [])
        longest = heads if heads.length >= found.length else found
        # heads count rows (attempts and their traces); a trial is an attempt row among them
        data["anchored_trials"] = sum(1 for row in rows[: longest.length] if is_attempt(row))
        data["anchored_at"] = heads.where if longest is heads else None
        lines.append(
            f"{len(entries)} trial{'' if len(entries) == 1 else 's'}, of which {data['anchored_trials']} anchored"
            + (f" up to block {longest.block} ({longest.anchored_at})" if longest.block is not None else "")
        )
    except ChainUnreachable:
        data["anchored_trials"] = None
        data["anchored_at"] = None
        lines.append("anchored trials: not checked (the chain is out of reach)")
    return SearchReport(data, lines, terms)


def _final_numbers(
    work: Path, terms: AttemptContract | None, data: dict[str, Any], lines: list[str], entries: list[LedgerRow]
) -> None:
    """Add each researcher's champion record (replications, holdout, selection-adjusted figure) and
    the champion's sample size and interval: the record's (version 2), else computed here from the
    run dir its attempt binds, and said to be."""
    from anchor.research.final import final_line, latest_record, no_final_numbers, record_state, summary
    from anchor.research.uncertainty import describe, of_champion

    asks_none = terms is not None and terms.replications == 0 and terms.holdout_command is None
    for who, stats in data["researchers"].items():
        path = None if stats["champion"] is None else latest_record(work, who, stats["champion"])
        final: dict[str, Any] | None = None
        if path is None:
            if stats["champion"] is not None and asks_none:
                assert terms is not None
                stats["caveat"] = no_final_numbers(terms.metric, int(stats["attempts"]))
                lines.append(f"  {stats['caveat']}")
        else:
            record, state = record_state(path)
            if state == "edited":  # never print the edited numbers as the search's: say what happened
                stats["final"] = {"anchored": False, "edited": True, "record": str(path)}
                lines.append(f"  final numbers: {path} was edited after it was anchored (run `anchor research verify`)")
                continue
            kind = (None, None) if terms is None else (terms.metric_kind, terms.is_proportion())
            final = summary(record, *kind)
            final["anchored"] = state == "anchored"
            if state == "anchored":  # where a reader finds it: the transaction its proof names
                from anchor.proof.file import load_proof

                proof = load_proof(path.with_name(path.name.removesuffix(".json") + ".anchor.json"))
                final["record_anchor"] = {"tx_hash": proof.anchor.tx_hash, "root": proof.batch.root}
            lines.append(f"  {final_line(final)}" + ("" if state == "anchored" else " (not anchored yet)"))
        stats["final"] = final
        if stats["champion"] is None or terms is None:
            continue
        if final is not None and final["version"] >= 2:
            honest = {k: final[k] for k in ("examples", "examples_source", "interval")} | {"caveat": None}
            where = "from the champion record"
        else:
            entry = [e for e in entries if e["researcher"] == who and e["kept"]][-1]
            honest = of_champion(terms, work, entry)
            where = "computed now from the champion's bound run dir"
        seed = final["attempt_digest"] if final is not None and "attempt_digest" in final else None
        if seed is None:
            seed = [e for e in entries if e["researcher"] == who and e["kept"]][-1]["attempt_digest"]
        stats["uncertainty"] = {**honest, "from": where, "seed": seed}  # a bootstrap's seed, to re-derive it
        words = describe(**honest, seed=seed, proportion=terms.is_proportion(), statistic=terms.metric_kind)
        lines.append(f"  {stats['champion'][:12]}: {words} ({where})")


def sparkline(values: list[Decimal | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return ""
    low, high = min(known), max(known)
    span = high - low or Decimal(1)
    return "".join(" " if v is None else BARS[int((v - low) / span * (len(BARS) - 1))] for v in values)


def rejections_by_reason(rows: list[LedgerRow]) -> dict[str, dict[str, int]]:
    """researcher -> {reason: how many proposals were rejected for it} (the ledger's `rejected` events)."""
    found: dict[str, dict[str, int]] = {}
    for row in rows:
        if row.get("event") == "rejected":
            mine = found.setdefault(str(row.get("researcher")), {})
            mine[str(row.get("reason"))] = mine.get(str(row.get("reason")), 0) + 1
    return found


def summarise(entries: list[LedgerRow]) -> tuple[dict[str, Any], list[str]]:
    researchers = sorted({e["researcher"] for e in entries})
    data: dict[str, Any] = {"trials": len(entries), "researchers": {}}
    lines = [f"{len(entries)} trials in the ledger, {len(researchers)} researcher(s)"]
    for who in researchers:
        mine = [e for e in entries if e["researcher"] == who]
        measured = [e.get("metric") for e in mine]
        mode = next((m["mode"] for m in measured if m is not None), "max")
        values = [None if m is None else Decimal(m["value"]) for m in measured]
        best: list[Decimal | None] = []
        for v in values:
            prev = best[-1] if best else None
            if v is None:
                best.append(prev)
            elif prev is None:
                best.append(v)
            else:
                best.append(max(prev, v) if mode == "max" else min(prev, v))
        kept = [e for e in mine if e["kept"]]
        champion = kept[-1] if kept else None
        stats: dict[str, object] = {
            "attempts": len(mine),
            "kept": len(kept),
            "failed": sum(e["status"] == "failed" for e in mine),
            "timed_out": sum(e["status"] == "timed_out" for e in mine),
            "partial": sum("partial" in e for e in mine),
            "interrupted": sum(e["status"] == "interrupted" for e in mine),
            "claims_flagged": sum(bool(e.get("claims_differ")) for e in mine),
            "champion": None if champion is None else champion["commit"],
            "champion_metric": None if champion is None else champion["metric"],
            "best_over_attempts": [None if b is None else str(b) for b in best],
        }
        data["researchers"][who] = stats
        lines += [
            f"{who}: {stats['attempts']} attempts, {stats['kept']} kept, {stats['failed']} failed,"
            f" {stats['timed_out']} timed out ({stats['partial']} with a partial metric),"
            f" {stats['interrupted']} interrupted, {stats['claims_flagged']} agent claims flagged",
            f"  best {mode} over attempts: {sparkline(best)}  ({best[0]} → {best[-1]})",
            f"  per attempt:             {sparkline(values)}",
        ]
        sources = sorted({(e["measured_by"]["source"], e["measured_by"]["digest"]) for e in mine if "measured_by" in e})
        stats["measured_by"] = [{"source": src, "digest": digest} for src, digest in sources]
        if sources:
            lines.append("  measured by: " + ", ".join(f"{src} (digest {digest[:16]}…)" for src, digest in sources))
        runtimes: dict[str, int] = {}
        for e in mine:  # where each attempt ran, as its manifest binds it (anchor.fence: gvisor, bubblewrap, none)
            runtimes[e.get("sandbox") or "not recorded"] = runtimes.get(e.get("sandbox") or "not recorded", 0) + 1
        stats["sandbox"] = runtimes
        lines.append("  ran in: " + ", ".join(f"{name} ({count})" for name, count in sorted(runtimes.items())))
        stats["environment"], changes = _environments(mine)
        lines += changes
        if champion is not None and (won := champion.get("metric")) is not None:
            lines.append(
                f"  champion {champion['commit'][:12]} {won['name']}={won['value']}"
                f" after {len(mine)} trials" + (f" (the team's: {len(entries)})" if len(researchers) > 1 else "")
            )
    return data, lines


def _environments(mine: list[LedgerRow]) -> tuple[dict[str, Any] | None, list[str]]:
    """The latest environment a researcher's attempts ran in (version 4 records) and, in words, every
    change between two consecutive attempts (attempts numbered 1..N as the report counts them)."""
    from anchor.manifest.environment import Environment

    lines, last, raw = [], None, None
    for number, entry in enumerate(mine, start=1):
        if "environment" not in entry or entry["environment"] == raw:
            continue  # most attempts share the last one's: compared as data, built only when it changes
        raw, now = entry["environment"], Environment.model_validate(entry["environment"])
        if last is not None and now != last:
            lines.append(f"  environment changed at attempt {number}: " + "; ".join(now.changes(last)))
        last = now
    if last is None:
        return None, ["  environment: not recorded (attempts from before version 4 records)"] if mine else []
    inputs = ", ".join(f"{i.path} {i.digest[:12]}…" for i in last.inputs) or "none declared"
    head = (
        f"  environment: {last.interpreter}, lock ({last.lock.source}) {last.lock.digest[:12]}…, {last.where()};"
        f" inputs: {inputs}"
    )
    return last.model_dump(mode="json", exclude_none=True), [head, *lines]


def trial_numbers(entries: Sequence[LedgerRow]) -> dict[int, int]:
    """Each attempt's trial number, by its ledger seq: 1 for a researcher's first attempt in the search,
    then one more for each attempt of theirs after it. Every door numbers trials with this.

    Why not the ledger seq: the ledger also holds the `started` row of every attempt, the proposals
    turned away and every other researcher's rows, so the fourth trial was "#9" on the command line and
    "trial #4" in the explorer. A trial number is what the report counts ("12 trials"): the last trial
    of a researcher is numbered as many as they ran. The seq stays what a ledger row is called."""
    counts: dict[str, int] = {}
    numbers = {}
    for entry in entries:
        if "event" in entry:  # a trace row: no trial of its own
            continue
        counts[entry["researcher"]] = counts.get(entry["researcher"], 0) + 1
        numbers[int(entry["seq"])] = counts[entry["researcher"]]
    return numbers


def lineage_tree(entries: list[LedgerRow], prefix: str, settings: Settings) -> tuple[dict[str, Any], list[str]]:
    matches = [e for e in entries if e["commit"].startswith(prefix.lower())]
    commits = sorted({e["commit"] for e in matches})
    if len(commits) > 1:  # a prefix too short: which ones, so the next try can be long enough
        raise BadInput(
            f"commit {prefix!r} matches {len(commits)} attempts in the ledger: give more of it ("
            + ", ".join(c[:12] for c in commits[:5])
            + (", …" if len(commits) > 5 else "")
            + ")",
            detail={"field": "commit"},
        )
    if not commits:
        raise BadInput(
            f"commit {prefix!r} matches no attempt in the ledger (`anchor research report` names the"
            " champion; `git log --oneline --glob=refs/anchor` in the repository lists every measured one)",
            detail={"field": "commit"},
        )
    target = matches[-1]  # the last row of that commit: an interrupted baseline measured again
    mine = [e for e in entries if e["researcher"] == target["researcher"]]
    trial = trial_numbers(entries)
    by_commit = {e["commit"]: e for e in mine}
    children: dict[str, list[LedgerRow]] = {}
    for e in mine:
        children.setdefault(e["parent"], []).append(e)
    kept = [e for e in mine if e["kept"]]
    champion_chain: list[str] = []
    node = kept[-1] if kept else None
    while node is not None:
        champion_chain.append(node["commit"])
        node = by_commit.get(node["parent"])
    ancestors, node = [], by_commit.get(target["parent"])
    while node is not None:
        ancestors.append(node["commit"])
        node = by_commit.get(node["parent"])
    on_chain = _anchored(settings, [e["commit"] for e in kept])

    lines = [
        f"lineage of {target['commit'][:12]} ({target['researcher']}); ★ champion chain, ⛓ lineage record on chain"
    ]

    def walk(entry: LedgerRow, depth: int) -> None:
        measured = entry.get("metric")
        metric = entry["status"] if measured is None else f"{measured['name']}={measured['value']}"
        marks = " ★" if entry["commit"] in champion_chain else ""
        marks += " ⛓" if on_chain.get(entry["commit"]) else ""
        marks += "  ← this attempt" if entry["commit"] == target["commit"] else ""
        state = "kept" if entry["kept"] else entry["status"] if entry["status"] != "completed" else "reset"
        lines.append(f"{'  ' * depth}{entry['commit'][:12]} trial #{trial[entry['seq']]} {state} {metric}{marks}")
        for child in children.get(entry["commit"], []):
            walk(child, depth + 1)

    for root in children.get(NO_PARENT, []):
        walk(root, 0)
    data = {
        "commit": target["commit"],
        "researcher": target["researcher"],
        "trial": trial[target["seq"]],
        "trials": [{"trial": trial[e["seq"]], "commit": e["commit"], "ledger_seq": e["seq"]} for e in mine],
        "ancestors": ancestors,
        "descendants": [e["commit"] for e in mine if _descends(e, target["commit"], by_commit)],
        "champion_chain": list(reversed(champion_chain)),
        "lineage_on_chain": on_chain,
    }
    return data, lines


def _descends(entry: LedgerRow, ancestor: str, by_commit: dict[str, LedgerRow]) -> bool:
    node = by_commit.get(entry["parent"])
    while node is not None:
        if node["commit"] == ancestor:
            return True
        node = by_commit.get(node["parent"])
    return bool(entry["parent"] == ancestor)


def _anchored(settings: Settings, commits: list[str]) -> dict[str, bool | None]:
    """Live registry reads: does each kept commit have its lineage record? None if the chain is out of reach."""
    from anchor.chain.open import open_chain, open_registry
    from anchor.manifest.onchain import commit_key

    try:
        handle = open_chain(settings)
        registry = open_registry(settings, handle)
        from anchor.chain.keys import load_researcher, load_signer

        # ours: the researcher key's record when there is one, else the signing key's (who sends directly)
        who = load_researcher(settings.env) or load_signer(handle.chain_id, settings.keystore, settings.env)
        return {c: registry.lineage(commit_key(c), who.address) is not None for c in commits}
    except AnchorError:
        return dict.fromkeys(commits)
