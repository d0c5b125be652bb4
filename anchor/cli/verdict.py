"""A verdict as the command line prints it: what, when, by whom, where, how final (every door that
verifies on the command line prints these lines: `verify`, `mlflow verify`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anchor.cli.output import count


def verdict_output(path: Path, result: Any) -> tuple[dict[str, Any], list[str]]:
    """What `anchor verify PATH` prints of a verdict: the JSON object (`--json`) and the lines for people."""
    return result.to_json(), verdict_lines(str(path), result)


def verdict_lines(shown: str, result: Any) -> list[str]:
    """A verdict as `anchor verify` prints it: what, when, by whom, where, how final (every door that
    verifies on the command line prints these lines: `verify`, `mlflow verify`)."""
    from anchor.chain.presets import chain_name

    inside = f" as {result.path_in_bundle} of its bundle" if result.path_in_bundle else ""
    return [
        f"OK: {shown} ({count(result.files, 'file')}){inside} is anchored",
        f"  anchored at {result.anchored_at} (block {result.anchored_block}): it existed by then",
        f"  by          {result.submitter}" + (f" (the account of {result.service})" if result.service else ""),
        f"  in          registry {result.registry} on {chain_name(result.chain_id)}"
        f" (trusted by {result.registry_trusted_by})",
        f"  manifest    {result.manifest_digest}",
        f"  root        {result.root} (tx {result.tx_hash})",
        f"  finality    {result.finality}"
        + (f" ({count(result.confirmations, 'confirmation')})" if result.finality in ("safe", "finalized") else "")
        + f" (read at block {result.read_at_block})",
        *([f"  trusted     {result.trusted}"] if result.trusted else []),
        *quorum_lines(result.quorum),
        *anchors_lines(result),
        *(
            [
                f"  note:       a later stamp superseded this anchor: {later['proof']} says it anchored"
                f" {later['manifest_digest']} in block {later['anchored_block']} (not verified here: `anchor verify`"
                " without --proof checks it); this proof shows what was there then"
            ]
            if (later := result.superseded_by)
            else []
        ),
        *bundle_lines(result),
        *milestone_lines(result),
        *(
            ["  note: chain 31337 is this machine's local development chain: only this machine can check it"]
            if result.chain_id == 31337
            else []
        ),
    ]


def quorum_lines(agreement: dict[str, object] | None) -> list[str]:
    if not agreement:
        return []
    lines = [
        f"  quorum      {len(agreement['agreeing'])} of {agreement['endpoints']} endpoints agree"  # type: ignore[arg-type]
        f" (needed {agreement['quorum']})"
    ]
    dissent = agreement["disagreeing"]
    assert isinstance(dissent, dict)
    lines += [f"  DISAGREED   {endpoint}: {said}" for endpoint, said in dissent.items()]
    return lines + [f"  unreachable {endpoint}" for endpoint in agreement["unreachable"]]  # type: ignore[attr-defined]


def anchors_lines(result: Any) -> list[str]:
    """Each anchor of a proof stamped through services, and each service still pending."""
    if result.anchors is None:
        return []
    rows, pending = result.anchors, result.pending or []
    ok = sum(1 for row in rows if row["ok"])
    lines = [
        f"  anchors     {ok} of {len(rows) + len(pending)} verified"
        + (f" (--require {result.required})" if result.required else "")
    ]
    for row in rows:
        named = named_service(row)
        if not row["ok"]:
            lines.append(f"    FAILED   {named}: chain {row['chain_id']}: {row['error']['message']}")
        elif row.get("duplicate_of"):
            lines.append(
                f"    SAME     {named}: same transaction as {row['duplicate_of']} ({row['tx_hash']}): counted once"
            )
        else:
            lines.append(
                f"    OK       {named}: chain {row['chain_id']}, registry {row['registry']},"
                f" by {row['submitter']} at {row['anchored_at']} (block {row['block']})"
                + (
                    ""
                    if row.get("confirmed")
                    else f"; unconfirmed: named in the file, counted as an anchor of {row['submitter']} only"
                )
                + ("; not in the file yet: `anchor upgrade` writes it" if row.get("in_file") is False else "")
            )
    for row in pending:
        if row["state"] == "pending":
            lines.append(f"    PENDING  {named_service(row)} since {row['since']}, receipt signed by {row['signer']}")
        else:
            lines.append(f"    SKIPPED  {named_service(row)}: down at stamp time; `anchor upgrade` submits again")
    return lines


def without(url: str, why: str) -> str:
    """A service's error after its URL was already said (it printed the URL twice)."""
    return why.removeprefix(f"{url}: ")


def named_service(row: dict[str, Any]) -> str:
    """A service's URL, said to come from the proof file when the user did not configure it now."""
    return str(row["service"]) + (
        " (named by the file)" if row.get("from_file") and row["service"] != "local key" else ""
    )


def bundle_lines(result: Any) -> list[str]:
    """For a result bundle: what ran, as its verified manifest binds it (the verdict carries it)."""
    bundle = result.bundle
    if not bundle:
        return []
    env = bundle.get("environment")
    ran = (
        f"  image       {bundle['image']}"
        if "image" in bundle
        else f"  executor    host {env['host'][:16]}… (ran on a host: no image ran, none is claimed)"
        if env
        else "  image       (none)"
    )
    lines = [
        f"  mission     sha256 {bundle['mission_sha256']}",
        f"  snapshot    sha256 {bundle['data_snapshot_sha256']}",
        ran,
        f"  policy      sha256 {bundle['evaluator_policy_sha256']}",
    ]
    if "budget" in bundle:
        budget, profile = bundle["budget"], bundle["profile"]
        lines.append(f"  budget      {budget['minutes']} min, {count(budget['attempts'], 'attempt')}")
        lines.append(f"  profile     {profile['name']} ({profile['cpu']} CPU, {profile['memory']})")
    if "spent" in bundle:
        spent, allowed = bundle["spent"], bundle["budget"]["attempts"]
        why = (
            "no stop rule: one run"
            if spent["stopped"] == "one_run"
            else "its attempts ran out before any stop rule was met"
            if spent["stopped"] == "attempts"
            else f"stop rule met: {spent['rule']['metric']} {'>=' if spent['rule']['mode'] == 'max' else '<='}"
            f" {spent['rule']['target']}"
        )
        lines.append(f"  spent       {spent['attempts']} of {count(allowed, 'attempt')} ({why})")
    if env:
        lines.append(f"  sandbox     {bundle['sandbox']}")
        lines.append(
            f"  environment {env['interpreter']}, lock ({env['lock']['source']}) {env['lock']['digest'][:16]}…"
        )
    return lines


def milestone_lines(result: Any) -> list[str]:
    if not result.milestones:
        return []
    how = (
        "anchored: its timing record, checked on chain"
        if result.milestones_anchored
        else "NOT anchored (no timing record): as written in the proof, unverified"
    )
    from anchor.manifest.bundle import MILESTONES  # in the order they happen, not alphabetical

    ordered = sorted(result.milestones.items(), key=lambda item: MILESTONES.index(item[0]))
    return [f"  milestones  {how}", *(f"    {name:<18} {when}" for name, when in ordered)]
