"""The runner: a dispatched mission in, an anchored result bundle out (`anchor mission run OUTPUT`).

What it does, in order, each step timed by us (the six milestones are ours, never the caller's):
1. `submitted`: when the dispatcher accepted the mission (its own record);
2. `scheduled`: when this runner claimed it (one run per output identity: a second is refused);
3. `image_ready`: the execution environment is ready. Here that is this host's sandbox: no container
   runtime pulls the image, so the version 3 bundle binds this host's identity as where it ran and
   claims no image (in the Kubernetes Job of `anchor mission render k8s`, which runs exactly the
   dispatched image by digest, ANCHOR_IMAGE names it and the bundle binds that image);
4. `snapshot_ready`: the data snapshot is in the content-addressed cache and re-hashed to the
   dispatched SHA-256 (fetched from its reference if missing or corrupt), and held so that eviction
   passes it by;
5. `evaluator_started`: the mission's command starts, in bubblewrap (the research sandbox: no
   network, the data directory and keystores hidden, the snapshot read-only, only the mission's own
   directory writable) unless `--no-sandbox`, with MISSION_SNAPSHOT, MISSION_RESULT, MISSION_OUTPUT
   (and MISSION_RESUME) set, and `{snapshot}`, `{result}` (alias `{run_dir}`) in the command replaced
   by those paths, shell-quoted; it is stopped, by the process group we started, when the mission's
   budget of minutes runs out;
6. `completed`: the command exited. On exit 0 the result directory is hashed and a version 3 result
   bundle (mission SHA-256, snapshot SHA-256, evaluator policy, budget, resource profile, output tree,
   resume pin, and where it ran: environment, sandbox, and the image only when it ran in one) is
   anchored with its timing record in the same batch.

A resumed mission starts only from the pinned bundle's result directory as this runner left it, and
only if that directory still hashes to the output the pinned (anchored) bundle binds.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import Conflict, MissionFailed, NotAnchored, Tampered
from anchor.files import private_dir
from anchor.missions.snapshots import _alive
from anchor.settings.session import protect_environment

if TYPE_CHECKING:
    from collections.abc import Callable

    from anchor.anchoring.client import StampOutcome
    from anchor.anchoring.stamp import AnchorOutcome
    from anchor.manifest.bundle import BundleManifest
    from anchor.missions.snapshots import SnapshotCache
    from anchor.settings.session import Settings


@dataclass(frozen=True, slots=True)
class MissionRun:
    output: str
    result_dir: Path
    proof: Path
    manifest: BundleManifest
    outcome: AnchorOutcome | StampOutcome
    """Anchored with the local key, or (with services) pending at them: `StampOutcome`."""
    sandbox: str
    seconds: float


def _now() -> datetime:
    return datetime.now(UTC)


def _db(data_dir: Path) -> sqlite3.Connection:
    from anchor.missions.dispatch import _db as dispatch_db

    db = dispatch_db(data_dir)
    db.execute(
        "CREATE TABLE IF NOT EXISTS runs (output TEXT PRIMARY KEY, state TEXT NOT NULL, pid INTEGER,"
        " bundle TEXT, result TEXT, updated_at TEXT NOT NULL)"
    )
    return db


@dataclass(frozen=True, slots=True)
class MissionState:
    """A dispatched mission and where its run stands, as `anchor mission list|status` shows it."""

    output: str
    submitted_at: str
    record: dict[str, Any]
    state: str
    """`dispatched` (never run), `running` (its process is alive), `interrupted` (its process died),
    `failed` (its command failed or ran out of budget; it may run again) or `done` (bundle anchored)."""
    updated_at: str | None
    bundle: str | None
    result: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "output": self.output, "state": self.state, "submitted_at": self.submitted_at,
            "updated_at": self.updated_at, "bundle": None if self.bundle is None else "0x" + self.bundle,
            "result": self.result, "mission_sha256": self.record["mission_sha256"],
            "snapshot_sha256": self.record["snapshot"]["sha256"], "image": self.record["image"],
            "profile": self.record["profile"]["name"], "resume": self.record.get("resume"),
        }  # fmt: skip


def mission_states(data_dir: Path, output: str | None = None) -> list[MissionState]:
    """Every dispatched mission (or the one of `output`), oldest first, with its run's state. Reads only:
    a data dir with no missions yet gives an empty list and creates nothing."""
    if not (data_dir / "missions.sqlite").exists():
        return []
    db = _db(data_dir)
    try:
        rows = db.execute(
            "SELECT m.output, m.submitted_at, m.record, r.state, r.pid, r.updated_at, r.bundle, r.result"
            " FROM missions m LEFT JOIN runs r ON r.output = m.output"
            " WHERE ? IS NULL OR m.output = ? ORDER BY m.id",
            (output, output),
        ).fetchall()
    finally:
        db.close()
    states = []
    for out, submitted, record, state, pid, updated, bundle, result in rows:
        if state is None:
            state = "dispatched"
        elif state == "running" and not (pid and _alive(int(pid))):
            state = "interrupted"
        states.append(MissionState(out, submitted, json.loads(record), state, updated, bundle, result))
    return states


def _claim(data_dir: Path, output: str) -> tuple[dict[str, Any], datetime]:
    """The dispatched record of `output`, claimed for this process; refuses a finished or running one."""
    db = _db(data_dir)
    try:
        db.execute("BEGIN IMMEDIATE")
        row = db.execute("SELECT record, submitted_at FROM missions WHERE output = ?", (output,)).fetchone()
        if row is None:
            db.execute("ROLLBACK")
            raise NotAnchored(f"output: no dispatched mission has output {output!r} (hint: anchor mission submit)",
                              detail={"field": "output"})  # fmt: skip
        run = db.execute("SELECT state, pid, bundle FROM runs WHERE output = ?", (output,)).fetchone()
        if run is not None and run[0] == "done":
            db.execute("ROLLBACK")
            raise Conflict(f"output: {output!r} already ran; its bundle is 0x{run[2]}", detail={"field": "output"})
        if run is not None and run[0] == "running" and run[1] and _alive(int(run[1])):
            db.execute("ROLLBACK")
            raise Conflict(f"output: {output!r} is running (pid {run[1]})", detail={"field": "output"})
        db.execute(
            "INSERT INTO runs (output, state, pid, updated_at) VALUES (?, 'running', ?, ?)"
            " ON CONFLICT (output) DO UPDATE SET state = 'running', pid = excluded.pid,"
            " updated_at = excluded.updated_at",
            (output, os.getpid(), _now().isoformat()),
        )
        db.execute("COMMIT")
        return json.loads(row[0]), datetime.fromisoformat(row[1])
    finally:
        db.close()


def _finish(data_dir: Path, output: str, state: str, bundle: str | None = None, result: Path | None = None) -> None:
    db = _db(data_dir)
    try:
        db.execute(
            "UPDATE runs SET state = ?, pid = NULL, bundle = ?, result = ?, updated_at = ? WHERE output = ?",
            (state, bundle, None if result is None else str(result), _now().isoformat(), output),
        )
    finally:
        db.close()


def _resume_dir(data_dir: Path, pin: dict[str, Any]) -> Path:
    """The pinned bundle's result directory, as a run here left it and as its anchored bundle binds it."""
    from anchor.manifest.filetree import hash_tree
    from anchor.proof.file import load_proof

    db = _db(data_dir)
    try:
        row = db.execute("SELECT result FROM runs WHERE bundle = ? AND state = 'done'", (pin["digest"],)).fetchone()
    finally:
        db.close()
    if row is None or not row[0] or not Path(row[0]).is_dir():
        raise NotAnchored(f"resume: bundle 0x{pin['digest']} was not run here; its result is not on this machine",
                          detail={"field": "resume.digest"})  # fmt: skip
    pinned = load_proof(data_dir / "proofs" / f"{pin['digest']}.json").manifest["output"]
    found = hash_tree(Path(row[0])).summary()
    if found["files_root"] != pinned["files_root"]:
        raise Tampered(f"resume: {row[0]} no longer holds the output bundle 0x{pin['digest']} anchored",
                       detail={"field": "resume.digest", "result": row[0]})  # fmt: skip
    return Path(row[0])


def _fresh_result_dir(mission_dir: Path) -> Path:
    """`<mission dir>/result`, empty; an earlier failed run's is kept beside it, renamed (ours, but a
    user may want to see what failed)."""
    result = mission_dir / "result"
    if result.exists():
        result.rename(mission_dir / f"result.failed-{int(time.time())}")
    result.mkdir(mode=0o700)
    return result


def _command(
    record: dict[str, Any], mission_dir: Path, result: Path, snapshot: Path, resume: Path | None,
    settings: Settings, sandbox: bool,
) -> tuple[list[str], dict[str, str], str]:  # fmt: skip
    from anchor.research.sandbox import Sandbox, allowed_env

    command = record["mission"]["document"]["command"]
    for placeholder, value in (("{result}", result), ("{run_dir}", result), ("{snapshot}", snapshot)):
        command = command.replace(placeholder, shlex.quote(str(value)))
    mission_env = {"MISSION_SNAPSHOT": str(snapshot), "MISSION_RESULT": str(result), "MISSION_OUTPUT": record["output"]}
    if resume is not None:
        mission_env["MISSION_RESUME"] = str(resume)
    if not sandbox:
        return ["/bin/sh", "-c", command], {**allowed_env(mission_dir), **mission_env}, "none"
    hidden = [settings.data_dir, *([settings.keystore] if settings.keystore else [])]
    for name in ("ANCHOR_KEYSTORE", "ANCHOR_RESEARCHER_KEYSTORE"):
        if os.environ.get(name):
            hidden.append(Path(os.environ[name]))
    box = Sandbox.find(mission_dir, (), tuple(hidden))
    box = replace(box, read_only=(snapshot.resolve(), *([resume.resolve()] if resume else [])), edits=False)
    return box.argv(command, mission_dir, extra_env=mission_env), {}, "bubblewrap"


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through _run_command, which stops the command's group


def _run_command(argv: list[str], env: dict[str, str], cwd: Path, budget_s: float, log: Path) -> tuple[int, bool]:
    """Run in a process group of its own (ours, by the PID we started); (exit code, timed out). A
    SIGTERM to the runner (a pod being stopped, `kill`) stops the command's group before the runner
    exits: the default action would end the runner alone and leave the command running, unowned."""
    import threading

    with open(log, "wb") as out:
        child = subprocess.Popen(
            argv, cwd=cwd, env=env or None, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, _terminated) if main else None
        try:
            return child.wait(timeout=budget_s), False
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return -signal.SIGKILL, True
        except BaseException:  # Ctrl-C, SIGTERM: nothing of the mission outlives us
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise
        finally:
            if main:
                signal.signal(signal.SIGTERM, previous)


def run_mission(
    settings: Settings,
    output: str,
    cache: SnapshotCache,
    sandbox: bool = True,
    say: Callable[[str], None] | None = None,
    services: Any = None,
) -> MissionRun:
    """Run the dispatched mission of `output` and anchor its result bundle (see the module's steps).
    With `services` (anchor.anchoring.client), no key is used here: the bundle and its timing record
    are stamped through them, and this process's environment (the service token) is made unreadable
    to the mission's command before it starts."""
    from anchor.anchoring.stamp import anchor_bundle
    from anchor.manifest.bundle import BundleManifest
    from anchor.manifest.filetree import hash_tree
    from anchor.manifest.validation import validated
    from anchor.research.environment import current as current_environment

    say = say or (lambda _: None)
    record, submitted = _claim(settings.data_dir, output)
    milestones: dict[str, datetime] = {"submitted": submitted, "scheduled": _now()}
    mission_dir = settings.data_dir / "missions" / output.replace("/", "_")
    try:
        private_dir(mission_dir)
        milestones["image_ready"] = _now()  # the host's sandbox (see the module's step 3)
        with cache.held(record["snapshot"]["sha256"], record["snapshot"]["ref"]) as fetched:
            snapshot = fetched.path
            say(f"snapshot sha256:{fetched.key} {'verified in the cache' if fetched.hit else 'fetched and verified'}")
            milestones["snapshot_ready"] = _now()
            resume = _resume_dir(settings.data_dir, record["resume"]) if record.get("resume") else None
            result = _fresh_result_dir(mission_dir)
            argv, env, confinement = _command(record, mission_dir, result, snapshot, resume, settings, sandbox)
            if services:
                protect_environment()  # the token in our environment is not the command's to read
            budget = record["mission"]["document"]["budget"]
            milestones["evaluator_started"] = _now()
            say(f"running the mission's command ({confinement}), budget {budget['minutes']} min")
            began = time.monotonic()
            code, timed_out = _run_command(argv, env, mission_dir, budget["minutes"] * 60.0, mission_dir / "run.log")
            seconds = time.monotonic() - began
            milestones["completed"] = _now()
        if timed_out or code != 0:
            why = f"ran out of its budget of {budget['minutes']} min" if timed_out else f"exited {code}"
            raise MissionFailed(
                f"the mission's command {why}; nothing anchored (log: {mission_dir / 'run.log'})",
                detail={"exit_code": code, "timed_out": timed_out, "log": str(mission_dir / "run.log")},
            )
        tree = hash_tree(result)
        environment = current_environment()  # where it ran: this host, or the image ANCHOR_IMAGE names
        manifest = validated(BundleManifest, {
            "version": 3, "mission_sha256": record["mission_sha256"],
            "data_snapshot_sha256": record["snapshot"]["sha256"], "image": environment.image,
            "evaluator_policy_sha256": record["evaluator_policy_sha256"],
            "output": {"name": output, **tree.summary()}, "resume": record.get("resume"),
            "budget": {"minutes": budget["minutes"], "attempts": budget["attempts"]},
            "profile": record["profile"], "environment": environment.model_dump(mode="json", exclude_none=True),
            "sandbox": confinement, "milestones": {k: v.isoformat() for k, v in milestones.items()},
        }, "mission run")  # fmt: skip
        proof_out = mission_dir / "result.anchor.json"
        notes = {"dispatched_image": record["image"]}  # what it was dispatched with: display only, not a claim
        if services:
            from anchor.anchoring.client import stamp_bundle_through

            outcome: AnchorOutcome | StampOutcome = stamp_bundle_through(manifest, tree, services, proof_out, notes)
        else:
            outcome = anchor_bundle(manifest, tree, settings, proof_out, notes)
    except (KeyboardInterrupt, SystemExit):  # stopped from outside (Ctrl-C, SIGTERM): not its failure
        _finish(settings.data_dir, output, "interrupted")
        raise
    except BaseException:
        _finish(settings.data_dir, output, "failed")
        raise
    _finish(settings.data_dir, output, "done", manifest.digest.hex(), result)
    return MissionRun(output, result, proof_out, manifest, outcome, confinement, seconds)
