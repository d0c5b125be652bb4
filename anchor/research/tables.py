"""A search's figures as a table to paste: markdown or LaTeX, with a methods sentence made from
the pre-registered contract.

Why: a paper quotes the champion's numbers with their sample sizes and intervals, the trial count behind
the selection and where it ran; retyping them from a report invites a slip no reviewer can catch. Every
figure here is one `research report` computed (and `research verify` re-derives from the ledger, the
records and their bound run dirs): the table formats, it never computes.
"""

from __future__ import annotations

from typing import Any

FORMATS = ("text", "markdown", "latex", "json")


def rows(stats: dict[str, Any]) -> list[tuple[str, str]]:
    """(figure, value) rows of one researcher's search, as `research report` computed them."""
    out: list[tuple[str, str]] = []
    metric = stats.get("champion_metric") or {}
    final = stats.get("final") or {}
    honest = stats.get("uncertainty") or {}
    interval = honest.get("interval")
    n = honest.get("examples")
    if metric:
        ci = (
            f"95% CI [{interval['low']}, {interval['high']}] ({_named(interval, honest.get('seed'))})"
            if interval
            else "no interval"
        )
        out.append(
            (
                f"selection metric ({metric.get('name')}, {metric.get('mode')})",
                f"{metric.get('value')}; n={n if n is not None else 'unknown'}; {ci}",
            )
        )
    if final.get("replications"):
        from anchor.research.final import no_variance

        flat = no_variance(final)
        spread = f" ± {float(final['stdev']):.6g} (sd)" if final.get("stdev") is not None and not flat else ""
        mean = "no completed run" if final.get("mean") is None else f"{float(final['mean']):.6g}{spread}"
        within = final.get("replication_interval")
        ci = (
            f"; 95% CI [{within['low']}, {within['high']}] ({within['method']})"
            if within
            else f"; {flat}, no interval"
            if flat
            else "; no interval (under 2 runs)"
        )
        out.append((f"replications ({len(final['replications'])})", f"{mean}; n={len(final['replications'])}{ci}"))
    if final.get("holdout") is not None:
        held = final.get("holdout_interval")
        hn = final.get("holdout_examples")
        if final.get("version", 0) < 3:
            said = "no sample size or interval is recorded for the holdout (a version 2 record)"
        else:
            ci = (
                f"95% CI [{held['low']}, {held['high']}] ({_named(held, final.get('holdout_seed'))})"
                if held
                else "no interval"
            )
            said = f"n={hn if hn is not None else 'unknown'}; {ci}"
        data = ", ".join(f"{d['path']} {d['digest'][:12]}…" for d in final.get("holdout_data") or [])
        out.append(("holdout", f"{final['holdout']}; {said}" + (f"; data {data}" if data else "")))
    if final.get("selection_adjusted") is not None:
        within = final.get("adjusted_interval")
        ci = f"; 95% CI [{within['low']}, {within['high']}] ({within['method']})" if within else "; no interval"
        out.append(
            (
                "selection-adjusted",
                f"{final['selection_adjusted']:.6g} over {final.get('adjusted_over')} trials"
                f" ({final.get('adjustment_method')}){ci}",
            )
        )
    elif final:
        out.append(("selection-adjusted", final.get("no_adjustment") or "none"))
    team = final.get("team_trials")
    trials = f"{stats.get('attempts', 0)} measured" + (f", {team} by the team" if team is not None else "")
    rejected = stats.get("rejected") or {}
    if rejected:
        trials += "; rejected (never measured): " + ", ".join(f"{k} {v}" for k, v in sorted(rejected.items()))
    out.append(("trials", trials))
    out.append(
        (
            "kept / failed / timed out",
            f"{stats.get('kept', 0)} / {stats.get('failed', 0)} / {stats.get('timed_out', 0)}",
        )
    )
    env = stats.get("environment")
    if env:
        where = f"image {env['image']}" if env.get("image") else f"host {str(env.get('host'))[:12]}…"
        gpus = env.get("accelerators")
        gpu = "; " + ", ".join(g["model"] for g in gpus) if gpus else "; no GPU"
        lock = f"lock {env['lock']['digest'][:12]}… ({env['lock']['source']})"
        out.append(("environment", f"{env['interpreter']}; {lock}; {where}{gpu}"))
    return out


def _named(interval: dict[str, str], seed: str | None) -> str:
    """An interval's method as a table cell: a bootstrap with its resamples and seed (to re-derive it)."""
    from anchor.research.uncertainty import RESAMPLES

    if interval["method"] != "bootstrap":
        return interval["method"]
    return f"bootstrap, {RESAMPLES:,} resamples" + (f", seed {seed}" if seed else "")


def methods(terms: Any, stats: dict[str, Any], anchored: dict[str, Any]) -> str:
    """One paragraph of methods, from the pre-registered contract and what the search recorded."""
    final = stats.get("final") or {}
    parts = [
        f"The attempt contract ({terms.task}) was pre-registered before the search: the metric {terms.metric}"
        f" ({'higher' if terms.mode == 'max' else 'lower'} is better), measured by {terms.metric_source}."
    ]
    parts.append(
        f"The champion was selected from {stats.get('attempts', 0)} measured trials"
        + (f" ({final['team_trials']} across the team)" if final.get("team_trials") is not None else "")
        + "; proposals that changed nothing or repeated a scored commit were rejected before measurement"
        " and are not counted."
    )
    if getattr(terms, "replications", 0):
        parts.append(
            f"It was replicated {terms.replications} times"
            + (" and evaluated once on held-out data" if terms.holdout_command else "")
            + "."
        )
    if final.get("selection_adjusted") is not None:
        parts.append(f"Its figure was adjusted for selection ({final.get('adjustment_method')}).")
    if anchored.get("anchored_trials") is not None:
        parts.append(
            f"Every attempt was recorded in a hash-chained ledger; {anchored['anchored_trials']} trials were"
            " anchored on chain with it, so the trial count cannot be lowered after the fact."
        )
    parts += where_recorded(anchored.get("anchored_at"), final)
    return " ".join(parts)


def where_recorded(at: dict[str, Any] | None, final: dict[str, Any]) -> list[str]:
    """The sentences that take a reader from the paper to the record: the chain, the registry, the
    transaction and batch root of the ledger head (and of the champion record), the head itself, and
    the command that checks them; none when the head was not read back (the chain out of reach)."""
    if not at:
        return []
    said = [
        f"The ledger head {at['head']} ({at['length']} rows) is anchored on {at['chain']} in the registry"
        f" {at['registry']}, transaction {at['tx_hash']} (batch root {at['root']})"
    ]
    record = final.get("record_anchor")
    if record and final.get("digest"):
        said[0] += f"; the champion record 0x{final['digest']} in transaction {record['tx_hash']}"
    said[0] += "."
    said.append(
        "Anyone can re-derive these figures from the exported claim with `anchor research check CLAIM"
        " --offline --trusted-block N:HASH`, N the claim's last block and HASH its hash from any explorer"
        " or node."
    )
    return said


def render(data: dict[str, Any], terms: Any, fmt: str) -> str:
    """The table(s) and methods paragraph of every researcher, in `fmt` (markdown or latex)."""
    blocks = []
    for who, stats in data["researchers"].items():
        table = rows(stats)
        text = methods(terms, stats, data) if terms is not None else ""
        if fmt == "markdown":
            body = "\n".join(f"| {figure} | {value} |" for figure, value in table)
            blocks.append(f"### {who}\n\n| figure | value |\n|---|---|\n{body}\n\n{text}\n")
        else:
            body = "\n".join(f"{_tex(figure)} & {_tex(value)} \\\\" for figure, value in table)
            blocks.append(
                f"% {who}\n\\begin{{tabular}}{{ll}}\n\\hline\nfigure & value \\\\\n\\hline\n{body}\n"
                f"\\hline\n\\end{{tabular}}\n\n{_tex(text)}\n"
            )
    return "\n".join(blocks)


def _tex(text: str) -> str:
    """Text safe in a LaTeX table cell: its special characters escaped."""
    text = text.replace("\\", "\0")  # a placeholder: the braces of \textbackslash{} must not be escaped
    for char, escaped in (
        ("&", r"\&"),
        ("%", r"\%"),
        ("$", r"\$"),
        ("#", r"\#"),
        ("_", r"\_"),
        ("{", r"\{"),
        ("}", r"\}"),
        ("~", r"\textasciitilde{}"),
        ("^", r"\textasciicircum{}"),
        ("±", r"$\pm$"),
        ("…", r"\ldots{}"),
    ):
        text = text.replace(char, escaped)
    return text.replace("\0", r"\textbackslash{}")
