"""Write the golden vectors from tests/reference_impl.py (never from the code under test).

Run once when the format changes (which also bumps its version); the vectors are then committed and
the tests only read them: `python -m tests.vectors.generate`.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests import reference_impl as ref

HERE = Path(__file__).parent


def content(spec: dict[str, str]) -> bytes:
    return bytes.fromhex(spec["hex"]) if "hex" in spec else spec["utf8"].encode("utf-8")


FILETREE_CASES = [
    ("empty tree", {}),
    ("one empty file", {"empty": {"utf8": ""}}),
    ("one file", {"hello.txt": {"utf8": "hello\n"}}),
    (
        "unicode paths",
        {
            "café/naïve.txt": {"utf8": "α"},
            "日本語/ファイル.txt": {"utf8": "にほん"},
            "emoji-🦀.txt": {"utf8": "crab"},
            "Zebra.txt": {"utf8": "upper case sorts first"},
        },
    ),
    ("NFD name is normalized to NFC", {"cafe\u0301.txt": {"utf8": "nfd"}}),
    ("deep tree", {"/".join(f"d{i}" for i in range(32)) + "/leaf.bin": {"hex": "00ff" * 8}}),
    (
        "five files (unbalanced tree)",
        {
            "a": {"utf8": "1"},
            "b/c": {"utf8": "22"},
            "b/d": {"hex": "000102"},
            "e": {"utf8": ""},
            "f/g/h": {"utf8": "x" * 100},
        },
    ),
]

# (name, files, rules in effect: .git/ by default, then .anchorignore's lines): the rules are recorded
EXCLUDE_CASES = [
    (
        "excluded .git and ignore rules, in order",
        {
            ".git/HEAD": {"utf8": "ref: refs/heads/main\n"},
            ".git/objects/ab/cdef": {"hex": "78da"},
            ".anchorignore": {"utf8": "*.tmp\n!keep.tmp\n"},
            "results/metrics.json": {"utf8": '{"acc": 0.9}'},
            "scratch/a.tmp": {"utf8": "scratch"},
            "scratch/keep.tmp": {"utf8": "kept by the negation"},
        },
        [".git/", "*.tmp", "!keep.tmp"],
    ),
]

# (name, files, links {path: target}, policy): links met are recorded; follow-inside also hashes through
LINK_CASES = [
    (
        "recorded symbolic links (never followed)",
        {
            "run3/metrics.json": {"utf8": '{"acc": 0.91}'},
            "run2/metrics.json": {"utf8": '{"acc": 0.88}'},
        },
        {"latest": "run3", "best.json": "run3/metrics.json"},
        "record",
    ),
    (
        "symbolic links followed inside the root",
        {
            "run3/metrics.json": {"utf8": '{"acc": 0.91}'},
            "run3/model/w.bin": {"hex": "00010203"},
        },
        {"latest": "run3", "best.json": "run3/metrics.json"},
        "follow-inside",
    ),
]

BUNDLE_CASES = [
    ("minimal bundle", {}),
    (
        "named output and resume",
        {
            "output": {"name": "run-42"},
            "resume": {"bundle": "run-41", "digest": "ab" * 32},
        },
    ),
    (
        "version 2: budget and resource profile",
        {
            "version": 2,
            "budget": {"minutes": 30, "attempts": 1},
            "profile": {"name": "small", "cpu": "1", "memory": "2Gi"},
        },
    ),
    (
        "version 3: ran on a host, so no image is claimed",
        {
            "version": 3,
            "image": None,
            "budget": {"minutes": 30, "attempts": 1},
            "profile": {"name": "small", "cpu": "1", "memory": "2Gi"},
            "environment": {
                "interpreter": "CPython 3.11.7",
                "lock": {"source": "installed distributions", "digest": "4c" * 32},
                "host": "40" * 32,
                "inputs": [],
            },
            "sandbox": "bubblewrap",
        },
    ),
    (
        "version 3: ran in the image it binds",
        {
            "version": 3,
            "budget": {"minutes": 30, "attempts": 1},
            "profile": {"name": "small", "cpu": "1", "memory": "2Gi"},
            "environment": {
                "interpreter": "CPython 3.12.4",
                "lock": {"source": "installed distributions", "digest": "4e" * 32},
                "image": "ghcr.io/anchor/eval@sha256:" + "33" * 32,
                "inputs": [],
            },
            "sandbox": "none",
        },
    ),
]

ATTEMPT_CASES = [
    ("kept max metric", {"metric": ("val_accuracy", "max", "0.9375"), "kept": True, "status": "completed"}),
    (
        "negative min metric, rounded to 18 decimals",
        {"metric": ("loss", "min", "-1.2345678901234567891"), "kept": False, "status": "completed"},
    ),
    ("failed without metric", {"metric": None, "kept": False, "status": "failed"}),
    (
        "timed out, sha256 commit ids",
        {"metric": None, "kept": False, "status": "timed_out", "commit": "1f" * 32, "parent": "2e" * 32},
    ),
    (
        "version 2: evidence bound, sandboxed",
        {
            "metric": ("val_accuracy", "max", "0.82"),
            "kept": True,
            "status": "completed",
            "version": 2,
            "evidence": "66" * 32,
            "sandbox": "bubblewrap",
        },
    ),
    (
        "version 2: failed, unconfined",
        {"metric": None, "kept": False, "status": "failed", "version": 2, "evidence": "77" * 32, "sandbox": "none"},
    ),
    (
        "version 3: measured by an evaluator",
        {
            "metric": ("val_accuracy", "max", "0.91"),
            "kept": True,
            "status": "completed",
            "version": 3,
            "evidence": "68" * 32,
            "sandbox": "bubblewrap",
            "measured_by": {"source": "evaluator", "digest": "e1" * 32},
        },
    ),
    (
        "version 3: timed out with a partial metric",
        {
            "metric": None,
            "kept": False,
            "status": "timed_out",
            "version": 3,
            "evidence": "69" * 32,
            "sandbox": "bubblewrap",
            "measured_by": {"source": "jsonl", "digest": "e2" * 32},
            "partial": ("val_accuracy", "max", "0.4"),
        },
    ),
    (
        "version 3: interrupted",
        {
            "metric": None,
            "kept": False,
            "status": "interrupted",
            "version": 3,
            "evidence": "6a" * 32,
            "sandbox": "none",
            "measured_by": {"source": "regex", "digest": "e3" * 32},
        },
    ),
    (
        "version 4: the environment it ran in, on a host, with two inputs",
        {
            "metric": ("val_accuracy", "max", "0.82"),
            "kept": True,
            "status": "completed",
            "version": 4,
            "evidence": "6b" * 32,
            "sandbox": "bubblewrap",
            "measured_by": {"source": "jsonl", "digest": "e4" * 32},
            "environment": {
                "interpreter": "CPython 3.11.7",
                "lock": {"source": "installed distributions", "digest": "4c" * 32},
                "host": "40" * 32,
                "inputs": [
                    {"path": "/srv/data/prices.csv", "digest": "d1" * 32},
                    {"path": "data", "digest": "d2" * 32},
                ],
            },
        },
    ),
    (
        "version 4: in an image, a named lockfile, no inputs",
        {
            "metric": None,
            "kept": False,
            "status": "failed",
            "version": 4,
            "evidence": "6c" * 32,
            "sandbox": "none",
            "measured_by": {"source": "evaluator", "digest": "e5" * 32},
            "environment": {
                "interpreter": "none",
                "lock": {"source": "requirements.lock", "digest": "4d" * 32},
                "image": "ghcr.io/example/research@sha256:" + "ab" * 32,
                "inputs": [],
            },
        },
    ),
    (
        "version 5: judged by a pre-registered noise rule, within the noise: not kept",
        {
            "metric": ("val_accuracy", "max", "0.8133"),
            "kept": False,
            "status": "completed",
            "version": 5,
            "evidence": "6d" * 32,
            "sandbox": "bubblewrap",
            "measured_by": {"source": "jsonl", "digest": "e4" * 32},
            "environment": {
                "interpreter": "CPython 3.11.7",
                "lock": {"source": "installed distributions", "digest": "4c" * 32},
                "host": "40" * 32,
                "inputs": [],
            },
            "keep_rule": {
                "rule": "noise",
                "replications": 3,
                "spread": "0.006666500006250156",
                "sigmas": "2",
                "threshold": "0.013333000012500312",
            },
        },
    ),
]

ENVIRONMENT = {
    "interpreter": "CPython 3.11.7",
    "lock": {"source": "installed distributions", "digest": "4c" * 32},
    "host": "40" * 32,
    "inputs": [{"path": "data", "digest": "d2" * 32}],
}

# (name, replications as (status, value) pairs, holdout (status, value) or None)
CHAMPION_CASES = [
    (
        "replicated three times and held out",
        [("completed", "0.82"), ("completed", "0.815"), ("completed", "0.823")],
        ("completed", "0.79"),
    ),
    ("held out only, the holdout failed", [], ("failed", None)),
    ("one replication: a mean, no spread", [("completed", "-1.25")], None),
    (
        "a failed replication is left out of the statistics",
        [("completed", "0.5"), ("timed_out", None), ("completed", "0.7")],
        None,
    ),
]


def filetree_vectors() -> list[dict[str, object]]:
    out = []
    for name, files in FILETREE_CASES:
        raw = {p: content(c) for p, c in files.items()}
        entries, _ = ref.tree(raw)
        identity = ref.filetree_identity(raw)
        out.append(
            {
                "name": name,
                "input": {"files": files},
                "expected": {
                    "files": entries,
                    "identity_canonical": ref.canonical(identity).decode(),
                    "digest": ref.digest(identity).hex(),
                },
            }
        )
    for name, files, rules in EXCLUDE_CASES:
        raw = {p: content(c) for p, c in files.items()}
        identity = ref.filetree_identity(raw, rules)
        kept = {p: c for p, c in raw.items() if not ref.excluded(p, rules)}
        out.append(
            {
                "name": name,
                "input": {"files": files, "exclude": rules},
                "expected": {
                    "files": ref.tree(kept)[0],
                    "identity_canonical": ref.canonical(identity).decode(),
                    "digest": ref.digest(identity).hex(),
                },
            }
        )
    for name, files, links, policy in LINK_CASES:
        raw = {p: content(c) for p, c in files.items()}
        hashed = ref.follow_inside(raw, links) if policy == "follow-inside" else raw
        identity = ref.with_links(ref.filetree_identity(hashed), links, policy)
        out.append(
            {
                "name": name,
                "input": {"files": files, "links": links, "symlinks": policy},
                "expected": {
                    "files": ref.tree(hashed)[0],
                    "identity_canonical": ref.canonical(identity).decode(),
                    "digest": ref.digest(identity).hex(),
                },
            }
        )
    return out


def bundle_vectors() -> list[dict[str, object]]:
    out = []
    output = ref.filetree_identity({"metrics.json": b'{"acc": 0.9}'})
    for name, extra in BUNDLE_CASES:
        identity: dict[str, object] = {
            "kind": "bundle",
            "version": 1,
            "mission_sha256": "11" * 32,
            "data_snapshot_sha256": "22" * 32,
            "image": "ghcr.io/anchor/eval@sha256:" + "33" * 32,
            "evaluator_policy_sha256": "44" * 32,
            "output": {k: output[k] for k in ("files_root", "file_count", "total_size")} | extra.get("output", {}),
        }
        for field in ("version", "resume", "budget", "profile", "environment", "sandbox"):
            if field in extra:
                identity[field] = extra[field]
        if "image" in extra and extra["image"] is None:  # version 3 on a host: the field is absent
            del identity["image"]
        out.append(
            {
                "name": name,
                "input": {
                    "identity": identity,
                    "milestones": {"submitted": "2026-11-30T03:00:00+00:00", "completed": "2026-11-30T03:05:00+00:00"},
                },
                "expected": {
                    "identity_canonical": ref.canonical(identity).decode(),
                    "digest": ref.digest(identity).hex(),
                },
            }
        )
    return out


def attempt_vectors() -> list[dict[str, object]]:
    out = []
    for name, case in ATTEMPT_CASES:
        identity: dict[str, object] = {
            "kind": "attempt",
            "version": 1,
            "commit": case.get("commit", "a1" * 20),
            "parent": case.get("parent", "b2" * 20),
            "diff_blake3": ref.blake3.blake3(b"--- a/train.py\n+++ b/train.py\n").hexdigest(),
            "kept": case["kept"],
            "status": case["status"],
            "researcher": "researcher-0",
            "contract_digest": "55" * 32,
        }
        if case.get("version") in (2, 3, 4, 5):
            identity.update(version=case["version"], evidence=case["evidence"], sandbox=case["sandbox"])
        if case.get("version") in (3, 4, 5):
            identity["measured_by"] = case["measured_by"]
        if case.get("version") in (4, 5):
            identity["environment"] = case["environment"]
        if case.get("version") == 5:
            identity["keep_rule"] = case["keep_rule"]
        if case.get("partial"):
            p_name, p_mode, p_raw = case["partial"]
            identity["partial"] = {"name": p_name, "mode": p_mode, "value": ref.metric_value(p_raw)}
        metric = case["metric"]
        if metric is None:
            identity["metric_hash"] = "00" * 32
            metric_input = None
        else:
            metric_name, mode, raw_value = metric
            value = ref.metric_value(raw_value)
            identity["metric"] = {"name": metric_name, "mode": mode, "value": value}
            identity["metric_hash"] = ref.metric_hash(metric_name, mode, value).hex()
            metric_input = {"name": metric_name, "mode": mode, "value": raw_value}
        out.append(
            {
                "name": name,
                "input": {
                    "metric": metric_input,
                    **{k: v for k, v in identity.items() if k not in ("metric", "metric_hash")},
                },  # noqa: E501
                "expected": {
                    "identity_canonical": ref.canonical(identity).decode(),
                    "digest": ref.digest(identity).hex(),
                    "metric_hash": identity["metric_hash"],
                },
            }
        )
    return out


def champion_vectors() -> list[dict[str, object]]:
    out = []
    for i, (name, replications, holdout) in enumerate(CHAMPION_CASES):
        mode = "min" if name.startswith("one replication") else "max"
        metric_name = "loss" if mode == "min" else "val_accuracy"

        def run(status: str, value: str | None, seed: int, name: str = metric_name, mode: str = mode) -> dict:
            run: dict[str, object] = {"status": status, "evidence": f"{seed:02x}" * 32}
            if value is not None:
                run["metric"] = {"name": name, "mode": mode, "value": ref.metric_value(value)}
            return run

        runs = [run(status, value, 0x10 + k) for k, (status, value) in enumerate(replications)]
        identity: dict[str, object] = {
            "kind": "champion",
            "version": 1,
            "researcher": "researcher-0",
            "contract_digest": "55" * 32,
            "commit": "a1" * 20,
            "attempt_digest": "88" * 32,
            "metric": {"name": metric_name, "mode": mode, "value": "-1.5" if mode == "min" else "0.83"},
            "trials": 12 + i,
            "ledger_head": "99" * 32,
            "ledger_length": 40,
            "replications": runs,
        }
        mean, stdev = ref.replication_stats([r["metric"]["value"] for r in runs if "metric" in r])  # type: ignore[index]
        if mean is not None:
            identity["mean"] = mean
        if stdev is not None:
            identity["stdev"] = stdev
        if holdout is not None:
            identity["holdout"] = run(holdout[0], holdout[1], 0x20)
        given = {k: v for k, v in identity.items() if k not in ("mean", "stdev")}
        out.append(
            {
                "name": name,
                "input": given,
                "expected": {
                    "identity_canonical": ref.canonical(identity).decode(),
                    "digest": ref.digest(identity).hex(),
                    "mean": mean,
                    "stdev": stdev,
                },
            }
        )
    return out


# (name, metric (mode, value), examples and their source or None, interval method or None, team trials)
CHAMPION_V2_CASES = [
    (
        "version 2: a Wilson interval on 150 declared examples, the team's trials",
        ("max", "0.82"),
        (150, "contract"),
        "wilson",
        31,
    ),
    (
        "version 2: a bootstrap interval on 400 examples the evaluator counted",
        ("max", "0.9275"),
        (400, "evaluator"),
        "bootstrap",
        3,
    ),
    ("version 2: a loss without per-example results: no interval", ("min", "0.41"), (1000, "attempt"), None, 12),
    ("version 2: sample size unknown", ("max", "0.5"), None, None, 12),
]


def champion_v2_vectors() -> list[dict[str, object]]:
    out = []
    for name, (mode, value), sample, method, team in CHAMPION_V2_CASES:
        metric = {"name": "val_accuracy" if mode == "max" else "loss", "mode": mode, "value": value}
        identity: dict[str, object] = {
            "kind": "champion",
            "version": 2,
            "researcher": "researcher-1",
            "contract_digest": "55" * 32,
            "commit": "b2" * 20,
            "attempt_digest": "77" * 32,
            "metric": metric,
            "trials": 3,
            "team_trials": team,
            "ledger_head": "99" * 32,
            "ledger_length": 62,
            "environment": ENVIRONMENT,
            "replications": [{"status": "completed", "evidence": "30" * 32, "metric": {**metric, "value": value}}],
            "mean": value,
        }
        if sample is not None:
            identity["examples"], identity["examples_source"] = sample
        expected_bounds = None
        if method == "wilson":
            assert sample is not None
            low, high = ref.wilson_bounds(value, sample[0])
            identity["interval"] = {"method": "wilson", "level": "0.95", "low": low, "high": high}
            expected_bounds = [low, high]
        elif method == "bootstrap":  # not recomputable from the manifest: `research verify` does, from the run dir
            identity["interval"] = {"method": "bootstrap", "level": "0.95", "low": "0.905", "high": "0.9525"}
        given = {k: v for k, v in identity.items() if k not in ("mean", "stdev")}
        out.append(
            {
                "name": name,
                "input": given,
                "expected": {
                    "identity_canonical": ref.canonical(identity).decode(),
                    "digest": ref.digest(identity).hex(),
                    "mean": value,
                    "stdev": None,
                    "wilson": expected_bounds,
                },
            }
        )
    return out


def champion_v3_vectors() -> list[dict[str, object]]:
    """Version 3: the holdout with its n, its Wilson interval (recomputed by decoders, as the metric's)
    and its data's digest; and a holdout that failed, which carries none of them."""
    out = []
    metric = {"name": "val_accuracy", "mode": "max", "value": "0.8"}
    for name, holdout_value in (
        ("version 3: a holdout of 1500 declared examples, its data digested", "0.781333"),
        ("version 3: a holdout that failed: no n, no interval", None),
    ):
        holdout: dict[str, object] = {"status": "completed" if holdout_value else "failed", "evidence": "21" * 32}
        if holdout_value:
            holdout["metric"] = {**metric, "value": holdout_value}
        identity: dict[str, object] = {
            "kind": "champion",
            "version": 3,
            "researcher": "r0",
            "contract_digest": "55" * 32,
            "commit": "c3" * 20,
            "attempt_digest": "77" * 32,
            "metric": metric,
            "trials": 4,
            "team_trials": 4,
            "ledger_head": "99" * 32,
            "ledger_length": 8,
            "environment": ENVIRONMENT,
            "replications": [],
            "holdout": holdout,
            "holdout_data": [{"path": "data/holdout.csv", "digest": "6a" * 32}],
        }
        expected_bounds = None
        if holdout_value:
            low, high = ref.wilson_bounds(holdout_value, 1500)
            interval = {"method": "wilson", "level": "0.95", "low": low, "high": high}
            identity.update(holdout_examples=1500, holdout_examples_source="contract", holdout_interval=interval)
            expected_bounds = [low, high]
        out.append(
            {
                "name": name,
                "input": identity,
                "expected": {
                    "identity_canonical": ref.canonical(identity).decode(),
                    "digest": ref.digest(identity).hex(),
                    "mean": None,
                    "stdev": None,
                    "wilson": None,
                    "holdout_wilson": expected_bounds,
                },
            }
        )
    return out


# (name, the mission as a person writes it, the identity the spec says it has)
MISSION_CASES = [
    (
        "a mission with every field",
        {
            "hypothesis": "Momentum over 20 days predicts next-week returns for large caps.",
            "covers": {"symbol": "SPY", "horizon": "5d", "cohort": "2026-q3"},
            "budget": {"minutes": 90, "attempts": 200},
            "stop_rules": [{"metric": "sharpe", "mode": "max", "target": 1.5}],
            "evaluator_policy_sha256": "44" * 32,
            "command": "python3 run.py {run_dir}",
        },
    ),
    (
        "the least a mission says",
        {
            "hypothesis": "h",
            "budget": {"minutes": 1, "attempts": 1},
            "evaluator_policy_sha256": "00" * 32,
            "command": "true",
        },
    ),
]


def mission_vectors() -> list[dict[str, object]]:
    out = []
    for name, given in MISSION_CASES:
        rules = [{**rule, "target": ref.metric_value(str(rule["target"]))} for rule in given.get("stop_rules", [])]
        identity: dict[str, object] = {
            "kind": "mission",
            "version": 1,
            "hypothesis": given["hypothesis"],
            "covers": dict(sorted(dict(given.get("covers", {})).items())),
            "budget": given["budget"],
            "stop_rules": rules,
            "evaluator_policy_sha256": given["evaluator_policy_sha256"],
            "command": given["command"],
        }
        out.append(
            {
                "name": name,
                "input": given,
                "expected": {
                    "identity_canonical": ref.canonical(identity).decode(),
                    "digest": ref.digest(identity).hex(),
                },
            }
        )
    return out


def timing_vectors() -> list[dict[str, object]]:
    identity = {
        "kind": "timing",
        "version": 1,
        "bundle": "c5" * 32,
        "milestones": {
            "submitted": "2026-11-30T09:00:00+00:00",
            "scheduled": "2026-11-30T09:00:02+00:00",
            "completed": "2026-11-30T09:04:12+00:00",
        },
    }
    return [
        {
            "name": "three of the six milestones",
            "input": identity,
            "expected": {"identity_canonical": ref.canonical(identity).decode(), "digest": ref.digest(identity).hex()},
        }
    ]


def _bits(value: float) -> str:
    import struct

    return struct.pack(">d", value).hex()


MLFLOW_RUN_CASES = [
    (
        "a finished run: params, a metric logged again, artifacts, MLflow's own tags dropped",
        {
            "run_id": "5d4d7b6746bb483c83edffe1d2c734b3",
            "experiment_id": "1",
            "status": "FINISHED",
            "start_time": 1796284803662,
            "end_time": 1796284803800,
            "params": {"lr": "0.01", "batch-size": "32", "Optimizer Name": "adamw"},
            "metrics": [
                ["val_acc", 2, 1796284803737, _bits(0.8125)],
                ["val_acc", 0, 1796284803706, _bits(0.61)],
                ["val_acc", 1, 1796284803722, _bits(0.74)],
                ["val_acc", 2, 1796284809000, _bits(0.97)],
                ["loss", 0, 1796284803706, _bits(0.1 + 0.2)],
            ],
            "tags": {
                "team": "vision",
                "mlflow.user": "root",
                "mlflow.runName": "delicate-moose-119",
                "mlflow.source.git.commit": "ab" * 20,
                "anchor.state": "anchored",
            },
        },
        {"model/weights.bin": {"hex": "00010203"}, "model/config.json": {"utf8": '{"layers": 3}\n'}},
    ),
    (
        "a run stamped while RUNNING: no end_time, edge metric values, no artifacts",
        {
            "run_id": "0123456789abcdef0123456789abcdef",
            "experiment_id": "0",
            "status": "RUNNING",
            "start_time": 1796284803662,
            "end_time": None,
            "params": {},
            "tags": {},
            "metrics": [
                ["m", i, 1796284803662 + i, _bits(v)]
                for i, v in enumerate(
                    (
                        float("nan"),
                        float("inf"),
                        -float("inf"),
                        -0.0,
                        0.0,
                        1e21,
                        1e20,
                        1e-7,
                        1e-6,
                        5e-324,
                        1.7976931348623157e308,
                        -1.5,
                        123456789.125,
                        2.0**53,
                    )
                )
            ],
        },
        {},
    ),
    (
        "a re-stamp of a run with an MLflow 3 logged model: the superseded digest and the changes bound",
        {
            "run_id": "71de3ef1869e467080330e62c5ec4f4e",
            "experiment_id": "2",
            "status": "FINISHED",
            "start_time": 1796284803662,
            "end_time": 1796284803900,
            "params": {"n_estimators": "4"},
            "tags": {},
            "metrics": [["val_acc", 0, 1796284803800, _bits(0.96)], ["val_acc", 0, 1796284809000, _bits(0.999)]],
            "restamp": {
                "supersedes": "0x" + "9e" * 32,
                "changes": ["metric val_acc: logged again at step 0: 0.999 at 2026-12-03T08:09:12Z (anchored: 0.96)"],
            },
            "logged_models": {
                "m-64790733a5e54b33b1b9ba1778ef22c4": {
                    "name": "model",
                    "source_run_id": "71de3ef1869e467080330e62c5ec4f4e",
                    "files": {"MLmodel": {"utf8": "flavors: {}\n"}, "model.pkl": {"hex": "80049500"}},
                }
            },
        },
        {},
    ),
]


def mlflow_run_vectors() -> list[dict[str, object]]:
    out = []
    for name, run, files in MLFLOW_RUN_CASES:
        artifacts = {path: content(spec) for path, spec in files.items()}  # type: ignore[arg-type]
        models = {
            model_id: {**m, "files": {path: content(spec) for path, spec in m["files"].items()}}
            for model_id, m in run.get("logged_models", {}).items()
        }  # type: ignore[attr-defined]
        identity = ref.mlflow_run_identity(run, artifacts, models)  # type: ignore[arg-type]
        out.append(
            {
                "name": name,
                "input": {"run": run, "artifacts": files},
                "expected": {
                    "identity_canonical": ref.canonical(identity).decode(),
                    "digest": ref.digest(identity).hex(),
                },
            }
        )
    return out


def main() -> None:
    for kind, vectors in (
        ("filetree", filetree_vectors()),
        ("bundle", bundle_vectors()),
        ("attempt", attempt_vectors()),
        ("champion", champion_vectors() + champion_v2_vectors() + champion_v3_vectors()),
        ("mission", mission_vectors()),
        ("timing", timing_vectors()),
        ("mlflow_run", mlflow_run_vectors()),
    ):
        document = {"format": "anchor-golden-vectors", "manifest_version": 1, "kind": kind, "cases": vectors}
        (HERE / f"{kind}.json").write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{kind}: {len(vectors)} cases")


if __name__ == "__main__":
    main()
