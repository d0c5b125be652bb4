"""Honest final numbers: the champion re-measured after the search stopped, and its holdout run.

Why: the champion's metric is the maximum (or minimum) of N noisy measurements; selection alone
inflates it. After the search stops, the harness, not the proposer, runs the contract's command
`replications` times on the champion and the contract's `holdout_command` once, each in a fresh run
dir bound as evidence, in the same sandbox as the attempts (the holdout run alone sees the contract's
`holdout_data`). The result is a champion manifest (anchor.manifest.champion), written beside the
runs and anchored as its own record. A champion is evaluated once: a resumed search that ends on the
same champion after the same number of trials reuses its record; after more trials, or on a new
champion, the champion is evaluated again (a record names the trials it was selected from).

The selection-adjusted figure in `research report` (docs/research.md): the champion's metric moved
against its direction by stdev x E[max of N standard normals], with N the trials it was selected from
and stdev the spread of its replications; E[max] is the approximation of Bailey and Lopez de Prado
(the deflated Sharpe ratio): (1 - g) z(1 - 1/N) + g z(1 - 1/(N e)), g the Euler-Mascheroni constant.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, cast

from anchor.manifest.champion import ChampionManifest
from anchor.research.ledger import LedgerRow

if TYPE_CHECKING:
    from anchor.fence.sandbox import Sandbox
    from anchor.research.loop import Search

EULER_GAMMA = 0.5772156649015329


def champion_path(workdir: Path, researcher: str, commit: str, trials: int) -> Path:
    """A champion record: one per (champion, trials it was selected from)."""
    return workdir / "runs" / researcher / f"champion-{commit[:12]}-{trials}.json"


def latest_record(workdir: Path, researcher: str, commit: str) -> Path | None:
    """The record of `commit` selected from the most trials, if any."""
    found = list((workdir / "runs" / researcher).glob(f"champion-{commit[:12]}-*.json"))
    found = [
        p
        for p in found
        if not p.name.endswith(".anchor.json")
        and (p.stem.rsplit("-", 1)[1].isascii() and p.stem.rsplit("-", 1)[1].isdigit())
    ]
    return max(found, key=lambda p: int(p.stem.rsplit("-", 1)[1]), default=None)


def final_runs_dir(workdir: Path, researcher: str, commit: str, trials: int) -> Path:
    """The run dirs of one record's replications and holdout (their evidence)."""
    return workdir / "runs" / researcher / f"{commit[:12]}.final-{trials}"


def evaluate_champion(search: Search, holdout_box: Sandbox | None) -> ChampionManifest | None:
    """Replicate the champion and run its holdout, as the contract asks; None if it asks for neither
    or there is no champion. The repository is left on the champion, clean."""
    terms = search.contract
    champion = search.champion()
    if champion is None or (terms.replications == 0 and terms.holdout_command is None):
        return None
    trials = len(search.mine())
    path = champion_path(search.workdir, search.researcher, champion["commit"], trials)
    if path.exists():
        return ChampionManifest.model_validate(json.loads(path.read_text())["manifest"])
    head, length = search.ledger.head()
    runs = final_runs_dir(search.workdir, search.researcher, champion["commit"], trials)
    if runs.exists():  # a run that died while evaluating: its partial runs are ours and stale
        shutil.rmtree(runs)
    replications = [
        search.measure_again(runs / f"replication-{i}", terms.command, search.sandbox)
        for i in range(terms.replications)
    ]
    holdout = (
        None
        if terms.holdout_command is None
        else search.measure_again(runs / "holdout", terms.holdout_command, holdout_box)
    )
    from anchor.research.uncertainty import held_out_data, of_champion, of_holdout

    honest = of_champion(terms, search.workdir, champion)
    honest.pop("caveat")
    if holdout is not None:
        honest.update(of_holdout(terms, runs / "holdout", holdout.model_dump(mode="json")))
        honest.pop("holdout_caveat")
        honest["holdout_data"] = held_out_data(terms, search.repo.path)
    manifest = ChampionManifest.build(
        **honest,
        team_trials=sum(1 for e in search.ledger.entries() if e["seq"] < length),  # every researcher's, at the head
        environment=search.environment(),
        researcher=search.researcher,
        contract_digest=search.contract_digest,
        commit=champion["commit"],
        attempt_digest=champion["attempt_digest"],
        metric=champion["metric"],
        trials=trials,
        ledger_head=head,
        ledger_length=length,
        replications=replications,
        holdout=holdout,
    )
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"manifest": manifest.identity()}, sort_keys=True, indent=1))
    tmp.replace(path)
    return manifest


def expected_max(trials: int) -> float:
    """E[max of `trials` independent standard normals] (Bailey and Lopez de Prado's approximation); 0 for one."""
    if trials < 2:
        return 0.0
    z = NormalDist().inv_cdf
    return (1 - EULER_GAMMA) * z(1 - 1 / trials) + EULER_GAMMA * z(1 - 1 / (trials * math.e))


def selected_from(manifest: ChampionManifest) -> int:
    """How many trials the champion was selected from: the team's (every researcher's on one
    ledger: the selection ran over all of them), else this researcher's own."""
    return manifest.team_trials if manifest.team_trials is not None else manifest.trials


def selection_adjusted(manifest: ChampionManifest) -> float | None:
    """The champion's metric less what selecting it from `selected_from` noisy measurements is expected
    to have added; None without a spread (fewer than two completed replications, or all of them equal)."""
    if manifest.stdev is None or float(manifest.stdev) == 0:
        return None  # no spread: a shift of 0 would print the raw figure as if it had been adjusted
    shift = float(manifest.stdev) * expected_max(selected_from(manifest))
    value = float(manifest.metric.value)
    return value - shift if manifest.metric.mode == "max" else value + shift


def no_adjustment(manifest: ChampionManifest) -> str | None:
    """Why there is no selection-adjusted figure, in words (None when there is one)."""
    if selection_adjusted(manifest) is not None:
        return None
    completed = sum(1 for r in manifest.replications if r.metric is not None)
    if completed < 2:
        return (
            f"no selection adjustment: it needs two or more completed replications to measure the noise, and"
            f" this record has {completed}"
        )
    return "no selection adjustment: the replications do not differ, so the noise it corrects for was not measured"


ADJUSTED_INTERVAL = "the selection metric's 95% interval, shifted by the adjustment"


def replication_interval(manifest: ChampionManifest) -> dict[str, str] | None:
    """A 95% interval of the replications' mean: a percentile bootstrap over the completed replications
    (RESAMPLES resampled means, the RNG seeded with the record's digest, named in `method`, so anyone
    re-derives the bounds from the record alone). None with fewer than two completed replications, and
    None when they are all equal: `[x, x]` would read as certainty where k runs only showed no variance
    (`final_line` says so in words)."""
    from anchor.research.uncertainty import RESAMPLES, bootstrap

    values = tuple(float(r.metric.value) for r in manifest.replications if r.metric is not None)
    if len(values) < 2 or len(set(values)) == 1:
        return None
    seed = manifest.digest.hex()
    low, high = bootstrap(values, seed)
    method = f"percentile bootstrap over {len(values)} replications, {RESAMPLES:,} resamples, seed {seed}"
    return {"low": low, "high": high, "method": method}


def no_variance(final: dict[str, Any]) -> str | None:
    """ "no variance observed in k runs" when a record's completed replications (two or more) all agree."""
    completed = [r for r in final["replications"] if r not in ("failed", "timed_out", "interrupted")]
    if final.get("stdev") is None or float(final["stdev"]) != 0 or len(completed) < 2:
        return None
    return f"no variance observed in {len(completed)} runs"


def holdout_words(
    manifest: ChampionManifest, statistic: str | None = None, proportion: bool | None = None
) -> str | None:
    """The holdout's n and interval in words (as the selection metric's: anchor.research.uncertainty),
    and the data it ran on; None without a holdout."""
    from anchor.research.uncertainty import describe

    if manifest.holdout is None:
        return None
    if manifest.holdout.metric is None:
        return f"the holdout {manifest.holdout.status.replace('_', ' ')}: no figure"
    if manifest.version < 3:
        return "n and interval not recorded (a version 2 record)"
    interval = None if manifest.holdout_interval is None else manifest.holdout_interval.model_dump()
    seed = manifest.holdout.evidence
    words = describe(
        manifest.holdout_examples,
        manifest.holdout_examples_source,
        interval,
        None,
        seed=seed,
        statistic=statistic,
        proportion=proportion,
    )
    data = ", ".join(f"{d.path} {d.digest[:16]}…" for d in manifest.holdout_data)
    return words + ("; data " + data if data else "; no holdout_data declared: the data is not digested")


def adjusted_interval(manifest: ChampionManifest) -> dict[str, str] | None:
    """A 95% interval of the adjusted figure: the champion's own (its n, its method) moved by the same
    shift, so it says what the sample size allows around the adjusted value; None without either."""
    adjusted = selection_adjusted(manifest)
    if adjusted is None or manifest.interval is None:
        return None
    shift = adjusted - float(manifest.metric.value)
    low, high = float(manifest.interval.low) + shift, float(manifest.interval.high) + shift
    return {"low": f"{low:.6f}", "high": f"{high:.6f}", "method": ADJUSTED_INTERVAL}


ADJUSTMENT_METHOD = "replication stdev x E[max of N standard normals] (Bailey and Lopez de Prado)"


def summary(manifest: ChampionManifest, statistic: str | None = None, proportion: bool | None = None) -> dict[str, Any]:
    """What `research report` shows of a champion record; `statistic`: the contract's `metric_kind` when
    its bootstrap is over items recomputing a macro_f1 or an auc, `proportion`: whether the metric is one
    (each said so in the holdout's words; None where the contract is not at hand)."""
    return {
        "commit": manifest.commit,
        "attempt_digest": manifest.attempt_digest,
        "metric_name": manifest.metric.name,
        "metric": manifest.metric.value,
        "trials": manifest.trials,
        "replications": [r.metric.value if r.metric else r.status for r in manifest.replications],
        "mean": manifest.mean,
        "stdev": manifest.stdev,
        "selection_adjusted": selection_adjusted(manifest),
        "holdout": None
        if manifest.holdout is None
        else (manifest.holdout.metric.value if manifest.holdout.metric else manifest.holdout.status),
        "digest": manifest.digest.hex(),
        "version": manifest.version,
        "team_trials": manifest.team_trials,
        "examples": manifest.examples,
        "examples_source": manifest.examples_source,
        "interval": None if manifest.interval is None else manifest.interval.model_dump(),
        "adjustment_method": ADJUSTMENT_METHOD if selection_adjusted(manifest) is not None else None,
        "adjusted_over": selected_from(manifest),
        "adjusted_interval": adjusted_interval(manifest),
        "no_adjustment": no_adjustment(manifest),
        "replication_interval": replication_interval(manifest),
        "holdout_examples": manifest.holdout_examples,
        "holdout_examples_source": manifest.holdout_examples_source,
        "holdout_interval": None if manifest.holdout_interval is None else manifest.holdout_interval.model_dump(),
        "holdout_data": [d.model_dump() for d in manifest.holdout_data],
        "holdout_words": holdout_words(manifest, statistic, proportion),
        "holdout_seed": None if manifest.holdout is None else manifest.holdout.evidence,
    }


def final_line(final: dict[str, Any]) -> str:
    """One line of a champion's final numbers, as `research run` and `research report` print them
    (6 significant digits; the exact values are in --json and in the record)."""
    name = final["metric_name"]
    team = final.get("team_trials")
    among = f" (the team's: {team})" if team is not None and team != final["trials"] else ""
    parts = [
        f"final numbers of {final['commit'][:12]}: {name}={final['metric']} selected from"
        f" {final['trials']} trials{among};"
    ]
    if final["replications"]:
        flat = no_variance(final)
        spread = (
            f" ± {float(final['stdev']):.6g} (sample stdev)"
            if final["stdev"] is not None and float(final["stdev"])
            else f", {flat} (no interval)"
            if flat
            else ""
        )
        mean = "no completed run" if final["mean"] is None else f"mean {float(final['mean']):.6g}{spread}"
        within = final.get("replication_interval")
        ci = f", 95% interval [{within['low']}, {within['high']}] ({within['method']})" if within else ""
        parts.append(f"replicated {len(final['replications'])}x: {mean}{ci};")
        if final["selection_adjusted"] is not None:
            over = final.get("adjusted_over")
            within = final.get("adjusted_interval")
            ci = f", 95% interval [{within['low']}, {within['high']}] ({within['method']})" if within else ""
            among = f" over {over} trials" if over is not None else ""
            parts.append(f"selection-adjusted {final['selection_adjusted']:.6g}{among} ({ADJUSTMENT_METHOD}){ci};")
        else:
            parts.append("no selection adjustment possible (it needs two or more replications that differ);")
    if final["holdout"] is not None:
        said = final.get("holdout_words")
        parts.append(f"holdout {_figure(final['holdout'])}" + (f" ({said})" if said else ""))
    return " ".join(parts).rstrip(";")


def _figure(value: str) -> str:
    """A measured value as the line's other figures are printed (6 significant digits: `0.903333`, not
    `0.9033333333333333` beside them); a status (`failed`) as it is. The JSON keeps the exact value."""
    try:
        return f"{float(value):.6g}"
    except ValueError:
        return value


def check_final_runs(workdir: Path, record: ChampionManifest, metric_source: str) -> int:
    """Re-hash every final run of a champion record (its replications and holdout) against the evidence
    the record binds, and re-read each metric from the bound file: a replication's metrics file edited
    after the record was made is named (`Tampered`), never averaged into the search's figure. Returns
    how many run dirs were checked."""
    from anchor.research.evidence import check

    runs = final_runs_dir(workdir, record.researcher, record.commit, record.trials)
    named = [(f"replication-{i}", run) for i, run in enumerate(record.replications)]
    named += [] if record.holdout is None else [("holdout", record.holdout)]
    for name, run in named:
        entry: dict[str, object] = {"seq": name, "evidence": run.evidence}  # named, not numbered: not a row
        if run.metric is not None:
            entry["metric"] = {"name": run.metric.name, "value": run.metric.value}
        check(
            cast("LedgerRow", entry),
            runs / name,
            metric_source,
            what=f"{name} of champion {record.commit[:12]} ({record.trials} trials)",
        )
    return len(named)


def no_final_numbers(metric: str, trials: int) -> str:
    """What a report says of a champion whose contract asks for no replications and no holdout: its
    figure is the best of `trials` measurements as measured, and nothing here corrects that."""
    return (
        f"no final numbers: the contract asks for no replications and no holdout, so {metric} is the best of"
        f" {trials} trials as measured, not adjusted for selection (`replications = 3` in the contract"
        " re-measures the champion; `holdout_command` scores it on data the search never saw)"
    )


def record_state(path: Path) -> tuple[ChampionManifest, str]:
    """A champion record file and what vouches for it: "anchored" when its proof beside it binds exactly
    this record (its digest recomputed here), "edited" when a proof is there but binds other bytes (the
    file was changed after anchoring: its numbers are not the anchored ones), else "not anchored"."""
    import json

    from anchor.errors import BadInput
    from anchor.manifest.decode import validate_identity
    from anchor.proof.file import load_proof

    proof_path = path.with_name(path.name.removesuffix(".json") + ".anchor.json")
    try:
        record = ChampionManifest.model_validate(validate_identity(json.loads(path.read_text())["manifest"], str(path)))
    except (BadInput, ValueError, KeyError, TypeError):
        if not proof_path.is_file():
            raise BadInput(f"{path}: not a champion record", detail={"file": str(path)}) from None
        # an edit that breaks the record's own rules (a holdout value its Wilson interval no longer
        # follows from): edited all the same; the anchored record is the proof's
        anchored = load_proof(proof_path)
        return ChampionManifest.model_validate(validate_identity(anchored.manifest, str(proof_path))), "edited"
    if not proof_path.is_file():
        return record, "not anchored"
    proof = load_proof(proof_path)
    same = proof.manifest_digest == "0x" + record.digest.hex() and proof.manifest == record.identity()
    return record, "anchored" if same else "edited"
