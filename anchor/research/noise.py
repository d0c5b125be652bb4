"""A noise-aware keep rule the contract pre-registers: `keep = "noise"`.

Why: the default rule keeps a candidate that beats the champion by more than a static
`min_improvement` on one measurement. When re-runs of the same code differ by more than that, the
search "improves" by luck and the champion's lineage is noise. With `keep = "noise"` the harness
re-measures the baseline `noise_replications` times right after measuring it (the same command, the
same sandbox, each run dir bound as evidence), takes their sample standard deviation as the spread,
and keeps a candidate only if it beats the champion by more than `noise_sigmas` x spread (and by more
than `min_improvement`).

The calibration is one ledger row (event `noise`: its runs with their evidence, the spread, the
sigmas, the threshold), under the hash chain; every attempt judged by it is an attempt manifest of
version 5 whose `keep_rule` carries the same figures. `research verify` re-hashes the calibration's
run dirs, recomputes the spread and the threshold from their re-read metrics, checks every version 5
record carries them, and replays every keep decision: a threshold lowered after the fact, or an
attempt kept within the noise, is named (exit 4).
"""

from __future__ import annotations

import shutil
from decimal import Decimal, localcontext
from pathlib import Path
from typing import TYPE_CHECKING, cast

from anchor.errors import Tampered
from anchor.manifest.attempt import canonical_decimal
from anchor.research.ledger import KeepRuleJson, LedgerRow, NoiseRun, value_of

if TYPE_CHECKING:
    from anchor.research.contract import AttemptContract
    from anchor.research.loop import Search

NOISE = "noise"
"""The `event` of the calibration row."""


def noise_dir(workdir: Path, researcher: str, commit: str) -> Path:
    return workdir / "runs" / researcher / f"{commit}.noise"


def keep_rule_of(values: list[str], terms: AttemptContract) -> KeepRuleJson:
    """The rule's figures from the baseline's re-measured values (canonical decimals): the spread is
    their sample standard deviation (exact, then canonical, as a champion record's `stdev`), the
    threshold `noise_sigmas` x spread, at least `min_improvement`."""
    from anchor.manifest.champion import statistics

    spread = statistics(values)[1] or "0"
    sigmas = canonical_decimal(repr(terms.noise_sigmas))
    floor = Decimal(repr(terms.min_improvement))
    threshold = max(Decimal(sigmas) * Decimal(spread), floor)
    return {
        "rule": "noise",
        "replications": len(values),
        "spread": spread,
        "sigmas": sigmas,
        "threshold": canonical_decimal(threshold),
    }


def calibrate(search: Search, baseline: LedgerRow) -> KeepRuleJson | None:
    """Re-measure the baseline `noise_replications` times and append the calibration row; returns the
    rule, or None when fewer than two runs completed (the search then stops: a rule it cannot apply
    is not silently replaced by another)."""
    terms = search.contract
    runs_dir = noise_dir(search.workdir, search.researcher, baseline["commit"])
    if runs_dir.exists():  # a calibration a killed harness left half done: ours, stale
        shutil.rmtree(runs_dir)
    runs = [
        search.measure_again(runs_dir / f"noise-{i}", terms.command, search.sandbox)
        for i in range(terms.noise_replications)
    ]
    values = [run.metric.value for run in runs if run.metric is not None]
    if len(values) < 2:
        return None
    rule = keep_rule_of(values, terms)
    measured = [cast("NoiseRun", run.model_dump(mode="json", exclude_none=True)) for run in runs]
    search.ledger.append(
        {
            "event": NOISE,
            "researcher": search.researcher,
            "contract_digest": search.contract_digest,
            "commit": baseline["commit"],
            "runs": measured,
            "replications": rule["replications"],
            "spread": rule["spread"],
            "sigmas": rule["sigmas"],
            "threshold": rule["threshold"],
        }
    )
    return rule


def is_better(candidate: str, best: str, mode: str, min_improvement: float | str) -> bool:
    """Strict improvement by more than `min_improvement` (a float of the contract, or a canonical
    decimal: a noise rule's threshold) in the contract's direction."""
    margin = Decimal(min_improvement if isinstance(min_improvement, str) else repr(min_improvement))
    new, old = Decimal(candidate), Decimal(best)
    with localcontext(prec=100):  # exact for any metric value (see anchor.manifest.attempt)
        return new > old + margin if mode == "max" else new < old - margin


def rule_in(rows: list[LedgerRow], researcher: str) -> KeepRuleJson | None:
    """The researcher's calibrated rule from its ledger row (the first: a resumed search keeps it)."""
    row = next((r for r in rows if r.get("event") == NOISE and r.get("researcher") == researcher), None)
    if row is None:
        return None
    return {
        "rule": "noise",
        "replications": row["replications"],
        "spread": row["spread"],
        "sigmas": row["sigmas"],
        "threshold": row["threshold"],
    }


def check_noise(work: Path, rows: list[LedgerRow], terms: AttemptContract) -> dict[str, KeepRuleJson]:
    """`research verify` of every calibration in the ledger: run dirs re-hashed and their metrics re-read,
    the spread and threshold recomputed, every version 5 record's rule compared, every keep decision
    replayed. Returns {researcher: rule} of the calibrations that hold; raises `Tampered` naming the
    first that does not."""
    from anchor.research.evidence import check

    found: dict[str, KeepRuleJson] = {}
    for row in (r for r in rows if r.get("event") == NOISE):
        who, seq = row["researcher"], row["seq"]
        if who in found:
            continue  # a resumed search calibrates once; a second row is never read
        runs_dir = noise_dir(work, who, row["commit"])
        for i, run in enumerate(row["runs"]):
            entry: LedgerRow = {"seq": seq, "evidence": run["evidence"]}
            if "metric" in run:
                entry["metric"] = run["metric"]
            check(entry, runs_dir / f"noise-{i}", terms.metric_source, what=f"noise run {i} of seq {seq}")
        values = [run["metric"]["value"] for run in row["runs"] if "metric" in run]
        honest = keep_rule_of(values, terms)
        said = rule_in(rows, who)
        if said != honest:
            raise Tampered(
                f"seq {seq}: the noise calibration of {who} says spread {row.get('spread')}, threshold"
                f" {row.get('threshold')}; its bound runs give spread {honest['spread']}, threshold"
                f" {honest['threshold']}",
                detail={"seq": seq, "field": "keep_rule", "recomputed": honest},
            )
        found[who] = honest
        champion: LedgerRow | None = None
        for entry in (r for r in rows if "event" not in r and r["researcher"] == who):
            if entry["seq"] > seq and entry.get("keep_rule") != honest:
                raise Tampered(
                    f"seq {entry['seq']}: judged after the noise calibration (seq {seq}), but its"
                    f" keep_rule is {entry.get('keep_rule')}",
                    detail={"seq": entry["seq"], "field": "keep_rule"},
                )
            if entry["seq"] > seq and champion is not None:
                now, best = value_of(entry), value_of(champion)
                beats = (
                    entry["status"] == "completed"
                    and now is not None
                    and best is not None
                    and is_better(now, best, terms.mode, honest["threshold"])
                )
                if beats != entry["kept"]:
                    raise Tampered(
                        f"seq {entry['seq']}: kept is {entry['kept']}, but against champion"
                        f" {best} and threshold {honest['threshold']} it"
                        f" {'beats' if beats else 'does not beat'} the noise",
                        detail={"seq": entry["seq"], "field": "kept"},
                    )
            if entry["kept"]:
                champion = entry
    return found


def rule_line(rule: KeepRuleJson, attempts: list[LedgerRow]) -> str:
    """The report's line for a noise-rule researcher: the calibration's figures and its decisions."""
    judged = [e for e in attempts if e.get("keep_rule") == rule]
    kept = sum(1 for e in judged if e["kept"])
    within = sum(1 for e in judged if e["status"] == "completed" and not e["kept"])
    return (
        f"keep rule: noise (pre-registered): the baseline re-measured {rule['replications']}x, spread"
        f" {rule['spread']} (sample stdev), threshold {rule['threshold']} ({rule['sigmas']} x spread,"
        f" at least min_improvement); of {len(judged)} attempts judged by it, {kept} kept (beat the champion"
        f" by more), {within} within the noise (not kept)"
    )
