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
   budget of minutes runs out. Each run is an attempt (MISSION_ATTEMPT, `{attempt}`), under the
   attempt limits (memory, file size, processes: anchor.fence.runner.Limits). A mission with stop
   rules runs its command again, into the same result directory, until the `metrics.json` an attempt
   leaves there meets a rule or its budget's attempts are spent; one without runs it once;
6. `completed`: the last attempt exited. On exit 0 the result directory is hashed and a version 3 result
   bundle (mission SHA-256, snapshot SHA-256, evaluator policy, budget, resource profile, output tree,
   resume pin, where it ran: environment, sandbox, and the image only when it ran in one, and what it
   spent: attempts and why they stopped) is
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
import stat
import subprocess
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import Conflict, MissionFailed, NotAnchored, Tampered
from anchor.fence.cgroups import Limits
from anchor.files import private_dir
from anchor.layout import DataDir
from anchor.missions.snapshots import _alive
from anchor.record import Value
from anchor.settings.session import protect_environment

if TYPE_CHECKING:
    from collections.abc import Callable

    from anchor.anchoring.stamper import Stamped, Stamper
    from anchor.fence.sandbox import Sandbox
    from anchor.manifest.bundle import BundleManifest
    from anchor.manifest.environment import Environment
    from anchor.missions.dispatch import MissionDocument, MissionRecord, ResumePin, StopRuleJson
    from anchor.missions.snapshots import SnapshotCache
    from anchor.settings.session import Settings


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class MissionRun(Value):
    output: str
    result_dir: Path
    proof: Path
    manifest: BundleManifest
    outcome: Stamped
    """Anchored with the local key, or pending at services (`outcome.state`)."""
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


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class MissionState(Value):
    """A dispatched mission and where its run stands, as `anchor mission list|status` shows it."""

    output: str
    submitted_at: str
    record: MissionRecord
    state: str
    """`dispatched` (never run), `running` (its process is alive), `interrupted` (its process died),
    `prepared` (a pod's `--stage prepare` ran; its command and `--stage seal` follow there),
    `failed` (its command failed or ran out of budget; it may run again) or `done` (bundle anchored)."""
    updated_at: str | None
    bundle: str | None
    result: str | None

    def next_step(self, mission_dir: Path) -> str:
        """What to do next, in words (`anchor mission status`)."""
        return {
            "dispatched": f"run it: anchor mission run {self.output}",
            "interrupted": f"its runner stopped before the end; run it again: anchor mission run {self.output}",
            "failed": f"see {mission_dir / 'run.log'}; it may run again: anchor mission run {self.output}",
            "prepared": f"its command runs in its pod, then: anchor mission run {self.output} --stage seal"
            " --workspace DIR",
            "running": "it is running",
            "done": f"check it: anchor verify {self.result}",
        }[self.state]

    def to_json(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "state": self.state,
            "submitted_at": self.submitted_at,
            "updated_at": self.updated_at,
            "bundle": None if self.bundle is None else "0x" + self.bundle,
            "result": self.result,
            "mission_sha256": self.record["mission_sha256"],
            "snapshot_sha256": self.record["snapshot"]["sha256"],
            "image": self.record["image"],
            "profile": self.record["profile"]["name"],
            "resume": self.record.get("resume"),
        }


def mission_states(data_dir: Path, output: str | None = None) -> list[MissionState]:
    """Every dispatched mission (or the one of `output`), oldest first, with its run's state. Reads only:
    a data dir with no missions yet gives an empty list and creates nothing."""
    if not DataDir(data_dir).missions_db.exists():
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


def mission_status(settings: Settings, output: str) -> tuple[MissionState, list[str]]:
    """`anchor mission status OUTPUT`: its state, and the result directories of its failed runs (kept in
    its mission directory). `NotAnchored` naming `output` when no mission was dispatched with it."""
    found = mission_states(settings.data_dir, output)
    if not found:
        raise NotAnchored(
            f"output: no dispatched mission has output {output!r} (see `anchor mission list`)",
            detail={"field": "output"},
        )
    mission_dir = settings.layout.mission(output)
    failed = sorted(p.name for p in mission_dir.glob("result.failed-*")) if mission_dir.is_dir() else []
    return found[0], failed


def _claim(data_dir: Path, output: str) -> tuple[MissionRecord, datetime]:
    """The dispatched record of `output`, claimed for this process; refuses a finished or running one."""
    db = _db(data_dir)
    try:
        db.execute("BEGIN IMMEDIATE")
        row = db.execute("SELECT record, submitted_at FROM missions WHERE output = ?", (output,)).fetchone()
        if row is None:
            import difflib

            known = [str(r[0]) for r in db.execute("SELECT output FROM missions").fetchall()]
            db.execute("ROLLBACK")
            near = difflib.get_close_matches(output, known, n=1)
            hint = f"did you mean {near[0]!r}? `anchor mission list` shows them" if near else "anchor mission submit"
            raise NotAnchored(
                f"output: no dispatched mission has output {output!r} (hint: {hint})", detail={"field": "output"}
            )
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
            (output, os.getpid(), _now().isoformat(timespec="milliseconds")),
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
            (state, bundle, None if result is None else str(result), _now().isoformat(timespec="milliseconds"), output),
        )
    finally:
        db.close()


def _resume_dir(settings: Settings, pin: ResumePin) -> Path:
    """The pinned bundle's result directory, as a run here left it and as its anchored bundle binds it."""
    from anchor.manifest.filetree import hash_tree

    data_dir = settings.data_dir
    db = _db(data_dir)
    try:
        row = db.execute("SELECT result FROM runs WHERE bundle = ? AND state = 'done'", (pin["digest"],)).fetchone()
    finally:
        db.close()
    if row is None or not row[0] or not Path(row[0]).is_dir():
        raise NotAnchored(
            f"resume: bundle 0x{pin['digest']} was not run here; its result is not on this machine",
            detail={"field": "resume.digest"},
        )
    from anchor.anchoring.proofs import store_finder

    stored = store_finder(settings)(bytes.fromhex(pin["digest"]))
    if stored is None:
        raise NotAnchored(
            f"resume: bundle 0x{pin['digest']} has no proof in the proof store of {data_dir}",
            detail={"field": "resume.digest"},
        )
    pinned = stored.manifest["output"]
    if not isinstance(pinned, dict):
        raise Tampered(
            f"resume: the proof of bundle 0x{pin['digest']} names no output", detail={"field": "resume.digest"}
        )
    found = hash_tree(Path(row[0])).summary()
    if found["files_root"] != pinned["files_root"]:
        raise Tampered(
            f"resume: {row[0]} no longer holds the output bundle 0x{pin['digest']} anchored",
            detail={"field": "resume.digest", "result": row[0]},
        )
    return Path(row[0])


def _fresh_result_dir(mission_dir: Path) -> Path:
    """`<mission dir>/result`, empty; an earlier failed run's is kept beside it, renamed (ours, but a
    user may want to see what failed)."""
    result = mission_dir / "result"
    if result.exists():
        result.rename(mission_dir / f"result.failed-{int(time.time())}")
    result.mkdir(mode=0o700)
    return result


def _box(settings: Settings, mission_dir: Path, snapshot: Path, resume: Path | None, runtime: str) -> Sandbox:
    """The mission's sandbox, found once per run (finding it probes bubblewrap): the data dir and the
    keystores hidden, the snapshot (and a resumed result) read-only, only the mission's directory writable."""
    from anchor.fence.sandbox import Sandbox

    hidden = [settings.data_dir, *([settings.keystore] if settings.keystore else []), *settings.env.secret_files]
    box = Sandbox.find(mission_dir, (), tuple(hidden), runtime=runtime, limits=Limits.from_environment(settings.env))
    return replace(box, read_only=(snapshot.resolve(), *([resume.resolve()] if resume else [])), edits=False)


def command_line(
    record: MissionRecord, result: str, snapshot: str, attempt: int, resume: Path | None = None
) -> tuple[str, dict[str, str]]:
    """The mission's command with `{result}` (alias `{run_dir}`), `{snapshot}` and `{attempt}` filled in
    (paths shell-quoted), and its MISSION_* environment: for a run here and the rendered pod alike."""
    command = record["mission"]["document"]["command"]
    for placeholder, value in (("{result}", result), ("{run_dir}", result), ("{snapshot}", snapshot)):
        command = command.replace(placeholder, shlex.quote(value))
    env = {
        "MISSION_SNAPSHOT": snapshot,
        "MISSION_RESULT": result,
        "MISSION_OUTPUT": record["output"],
        "MISSION_ATTEMPT": str(attempt),
    }
    if resume is not None:
        env["MISSION_RESUME"] = str(resume)
    return command.replace("{attempt}", str(attempt)), env


def _command(
    record: MissionRecord,
    mission_dir: Path,
    result: Path,
    snapshot: Path,
    resume: Path | None,
    box: Sandbox | None,
    attempt: int,
    limits: Limits,
) -> tuple[list[str], dict[str, str], str]:
    """One attempt's argv, environment and confinement: in `box`, or unconfined when it is None."""
    from anchor.fence.sandbox import allowed_environment

    command, mission_env = command_line(record, str(result), str(snapshot), attempt, resume)
    if box is None:
        return ["/bin/sh", "-c", command], {**allowed_environment(mission_dir), **mission_env}, "none"
    from anchor.fence.identity import give

    processes = limits.processes
    home = mission_dir / "home"
    fresh = not os.path.lexists(home) or home.is_symlink() or not home.is_dir()
    argv = box.argv(command, mission_dir, extra_env=mission_env, processes=processes)  # makes a missing HOME
    if fresh:
        give(home, box.identity)  # made just now, empty: nothing of anyone's is given, nothing is walked
    return argv, {}, box.runtime


def _open_to(mission_dir: Path, result: Path, box: Sandbox | None) -> None:
    """Under a root harness the command is anchor-attempt: it may pass through the mission's folder (root's,
    group anchor-attempt, 0710: never list it, never write there) to its fresh result folder, the only
    one it owns, and its HOME. The runner's own files beside them (the log, the proof) stay root's."""
    from anchor.fence.identity import give

    if box is None or box.identity is None:
        return
    os.chown(mission_dir, 0, box.identity.gid)
    os.chmod(mission_dir, 0o710)  # noqa: S103 - the group is anchor-attempt alone: it may pass through, not list
    give(result, box.identity)  # empty, made by us a moment ago


METRICS_FILE = "metrics.json"
MAX_METRICS_BYTES = 64 * 1024


def met_rule(rules: list[StopRuleJson], result: Path) -> tuple[StopRuleJson | None, str]:
    """The first stop rule that `result/metrics.json` meets (the command's own figures: a claim the
    runner only compares, read as a regular file, never through a link), and a line saying what was
    read. Exact decimal comparison, as the rule's target is written."""
    from decimal import Decimal

    from anchor.manifest.attempt import canonical_decimal

    try:
        fd = os.open(result / METRICS_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None, f"no {METRICS_FILE} in the result: no stop rule can be met"
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None, f"{METRICS_FILE} is not a regular file: ignored"
        raw = handle.read(MAX_METRICS_BYTES + 1)
    try:
        metrics = json.loads(raw) if len(raw) <= MAX_METRICS_BYTES else None
    except ValueError:
        metrics = None
    if not isinstance(metrics, dict):
        return None, f"{METRICS_FILE} is not a JSON object of at most {MAX_METRICS_BYTES} bytes: ignored"
    seen = []
    for rule in rules:
        value = metrics.get(rule["metric"])
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            continue
        try:
            number = Decimal(canonical_decimal(value, rule["metric"]))
        except Exception:  # noqa: BLE001, S112 - a value that is not a finite number meets no rule
            continue
        seen.append(f"{rule['metric']}={number}")
        target = Decimal(rule["target"])
        if (number >= target) if rule["mode"] == "max" else (number <= target):
            wanted = ">=" if rule["mode"] == "max" else "<="  # a target reached, never read as a cap
            return rule, f"{rule['metric']}={number} meets the stop rule {rule['metric']} {wanted} {rule['target']}"
    return None, ("; ".join(seen) or "none of the rules' metrics") + ": no stop rule met"


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through _run_command, which stops the command's group


def _run_command(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    budget_s: float,
    log: Path,
    attempt: int,
    runtime: str,
    limits: Limits,
) -> tuple[int, bool, dict[str, object] | None]:
    """Run in a process group of its own (ours, by the PID we started), under the attempt limits
    (anchor.fence.runner.Limits: memory, file size, processes); (exit code, timed out, the limit it
    met). A SIGTERM to the runner (a pod being stopped, `kill`) stops the command's group before the
    runner exits: the default action would end the runner alone and leave the command running, unowned."""
    import threading

    from anchor.fence.runner import bounded

    with bounded(limits, None if runtime == "none" else runtime) as bounds:
        with open(log, "ab" if attempt > 1 else "wb") as out:
            out.write(f"--- attempt {attempt} ---\n".encode())
            out.flush()
            main = threading.current_thread() is threading.main_thread()
            # SIGTERM is held from before the command starts until its handler is in place, so a stop that
            # lands in between (a loaded machine) is handled with the command known, never the default
            # death that left it running; the command itself starts with the signal unblocked
            held = {signal.SIGTERM}
            if main:
                signal.pthread_sigmask(signal.SIG_BLOCK, held)

            def preexec() -> None:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
                bounds.preexec()

            try:
                child = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    env=env or None,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=preexec,  # noqa: PLW1509 - setrlimit, a mask and one write
                )
                previous = signal.signal(signal.SIGTERM, _terminated) if main else None
            finally:
                if main:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
            try:
                code, timed_out = child.wait(timeout=max(budget_s, 0.001)), False
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                code, timed_out = -signal.SIGKILL, True
            except BaseException:  # Ctrl-C, SIGTERM: nothing of the mission outlives us
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                raise
            finally:
                if main:
                    signal.signal(signal.SIGTERM, previous)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # what it left behind in its group goes with it
        return code, timed_out, None if timed_out else bounds.met(code, log)


def _seal(
    record: MissionRecord,
    output: str,
    result: Path,
    environment: Environment,
    confinement: str,
    spent: dict[str, Any],
    milestones: dict[str, datetime],
    settings: Settings,
    stamper: Stamper,
) -> tuple[BundleManifest, Stamped, Path]:
    """Hash the result directory and anchor the version 3 bundle that binds it (with the local key,
    or pending at services: the Stamper's), its timing record in the same batch."""
    from anchor.manifest.bundle import BundleManifest
    from anchor.manifest.filetree import hash_tree
    from anchor.manifest.validation import validated

    budget = record["mission"]["document"]["budget"]
    tree = hash_tree(result)
    manifest = validated(
        BundleManifest,
        {
            "version": 3,
            "mission_sha256": record["mission_sha256"],
            "data_snapshot_sha256": record["snapshot"]["sha256"],
            "image": environment.image,
            "evaluator_policy_sha256": record["evaluator_policy_sha256"],
            "output": {"name": output, **tree.summary()},
            "resume": record.get("resume"),
            "budget": {"minutes": budget["minutes"], "attempts": budget["attempts"]},
            "profile": record["profile"],
            "environment": environment.model_dump(mode="json", exclude_none=True),
            "sandbox": confinement,
            "spent": spent,
            "milestones": {k: v.isoformat() for k, v in milestones.items()},
        },
        "mission run",
    )
    proof_out = settings.layout.mission(output) / "result.anchor.json"
    notes: dict[str, object] = {
        "dispatched_image": record["image"]
    }  # what it was dispatched with: display only, not a claim
    outcome = stamper._stamp_bundle(manifest, tree, proof_out, notes, output=result)
    return manifest, outcome, proof_out


def run_mission(
    settings: Settings,
    output: str,
    cache: SnapshotCache,
    sandbox: bool = True,
    say: Callable[[str], None] | None = None,
    stamper: Stamper | None = None,
    runtime: str = "auto",
) -> MissionRun:
    """Run the dispatched mission of `output` and anchor its result bundle (see the module's steps).
    `stamper` (default: `Stamper.from_settings`) anchors the bundle and its timing record, with the
    key here or through services; either way this process's environment (a key, the service token) is
    made unreadable to the mission's command before it starts."""
    from anchor.anchoring.stamper import Stamper
    from anchor.research.environment import current as current_environment

    stamper = stamper or Stamper.from_settings(settings)  # before the mission is claimed: a bad URL is refused
    say = say or (lambda _: None)
    record, submitted = _claim(settings.data_dir, output)
    milestones: dict[str, datetime] = {"submitted": submitted, "scheduled": _now()}
    mission_dir = settings.layout.mission(output)
    try:
        private_dir(mission_dir)
        milestones["image_ready"] = _now()  # the host's sandbox (see the module's step 3)
        with cache.held(record["snapshot"]["sha256"], record["snapshot"]["ref"]) as fetched:
            snapshot = fetched.path
            say(f"snapshot sha256:{fetched.key} {'verified in the cache' if fetched.hit else 'fetched and verified'}")
            milestones["snapshot_ready"] = _now()
            pin = record.get("resume")
            resume = _resume_dir(settings, pin) if pin else None
            result = _fresh_result_dir(mission_dir)
            protect_environment()  # a token or key in our environment is not the command's to read
            budget = record["mission"]["document"]["budget"]
            rules = list(record["mission"]["document"].get("stop_rules") or [])
            allowed = budget["attempts"] if rules else 1  # without a stop rule there is nothing to run again for
            milestones["evaluator_started"] = _now()
            began = time.monotonic()
            deadline = began + budget["minutes"] * 60.0
            spent: dict[str, Any] = {"attempts": 0, "stopped": "attempts" if rules else "one_run"}
            box = _box(settings, mission_dir, snapshot, resume, runtime) if sandbox else None
            _open_to(mission_dir, result, box)
            for attempt in range(1, allowed + 1):
                limits = Limits.from_environment(settings.env)
                argv, env, confinement = _command(record, mission_dir, result, snapshot, resume, box, attempt, limits)
                say(
                    f"attempt {attempt} of at most {allowed}: running the mission's command ({confinement}),"
                    f" {max(0.0, deadline - time.monotonic()) / 60:.1f} of {budget['minutes']} min left"
                )
                code, timed_out, limit = _run_command(
                    argv,
                    env,
                    mission_dir,
                    deadline - time.monotonic(),
                    mission_dir / "run.log",
                    attempt,
                    confinement,
                    limits,
                )
                spent["attempts"] = attempt
                if timed_out or code != 0:
                    break
                if rules:
                    rule, line = met_rule(rules, result)
                    say(f"attempt {attempt}: {line}")
                    if rule is not None:
                        spent.update(stopped="stop_rule", rule=rule)
                        break
            seconds = time.monotonic() - began
            milestones["completed"] = _now()
        if timed_out or code != 0:
            why = (
                f"ran out of its budget of {budget['minutes']} min"
                if timed_out
                else f"met its {limit['name']} limit ({limit['bound']})"
                if limit
                else f"exited {code}"
            )
            raise MissionFailed(
                f"the mission's command {why} on attempt {spent['attempts']}; nothing anchored"
                f" (log: {mission_dir / 'run.log'})",
                detail={
                    "exit_code": code,
                    "timed_out": timed_out,
                    "log": str(mission_dir / "run.log"),
                    "attempt": spent["attempts"],
                    **({"limit": limit} if limit else {}),
                },
            )
        ran_in = current_environment(settings.env.image)
        manifest, outcome, proof_out = _seal(
            record, output, result, ran_in, confinement, spent, milestones, settings, stamper
        )
    except (KeyboardInterrupt, SystemExit):  # stopped from outside (Ctrl-C, SIGTERM): not its failure
        _finish(settings.data_dir, output, "interrupted")
        raise
    except BaseException:
        _finish(settings.data_dir, output, "failed")
        raise
    _finish(settings.data_dir, output, "done", manifest.digest.hex(), result)
    return MissionRun(output, result, proof_out, manifest, outcome, confinement, seconds)


# --- a mission in a pod (anchor mission render k8s): the trusted steps either side of the command ---
#
# The rendered Job runs three containers in turn: `prepare` and `seal` in the anchor image (trusted),
# and between them the mission's command alone in the dispatched image, with no Secret, no service
# account token and no network beyond what the NetworkPolicy lets the pod reach. The command never
# shares a container, a process table or a writable snapshot with anything that holds the token.
POD_SNAPSHOT = "snapshot"
POD_RESULT = "result"


def run_dispatched(
    settings: Settings,
    output: str,
    *,
    stamper: Stamper,
    say: Callable[[str], None],
    sandbox: bool = True,
    runtime: str = "auto",
    stage: str | None = None,
    workspace: Path | None = None,
    max_bytes: int | None = None,
) -> MissionRun | dict[str, Any]:
    """`anchor mission run`: the sandbox runtime checked, and an unconfined run refused where it must be,
    before the mission is claimed; then the whole run (`run_mission`), or one stage of the rendered Job
    (`prepare`, `seal`) in `workspace`. `max_bytes`: the snapshot cache's cap (else its setting)."""
    from anchor.errors import BadInput
    from anchor.fence.sandbox import check_runtime, refuse_unconfined
    from anchor.missions.snapshots import SnapshotCache

    check_runtime(runtime)
    if not sandbox:
        refuse_unconfined(settings)
    if stage not in (None, "prepare", "seal") or (stage is None) != (workspace is None):
        raise BadInput(
            "--stage: `prepare` or `seal`, and only with --workspace DIR (the rendered Job's steps)",
            detail={"field": "stage"},
        )
    if stage == "seal":
        assert workspace is not None
        return seal_mission(settings, output, workspace, stamper, say)
    cache = SnapshotCache.for_settings(settings, max_bytes)
    if stage == "prepare":
        assert workspace is not None
        return prepare_mission(settings, output, cache, workspace, say)
    return run_mission(settings, output, cache, sandbox=sandbox, say=say, stamper=stamper, runtime=runtime)


def complete_through(done: MissionRun, stamper: Stamper) -> bool:
    """A mission stamped through services: wait for their batch (ANCHOR_UPGRADE_WAIT_S), upgrade the
    bundle's proof and its timing record's; True when both are complete."""
    from anchor.proof.locate import timing_proof_path

    proofs = [done.proof, *[p for p in [timing_proof_path(done.proof)] if p.is_file()]]
    results = stamper.complete(proofs)
    return all(getattr(results.get(p), "complete", False) for p in proofs)


def one_attempt_only(document: MissionDocument) -> None:
    """A pod runs the command once (its container cannot be re-run by trusted code without the
    Kubernetes API, which the pod is not given): a mission that asks to run again until a stop rule
    is met is refused for a pod, naming the field."""
    from anchor.errors import BadInput

    if document.get("stop_rules") and document["budget"]["attempts"] > 1:
        raise BadInput(
            f"stop_rules: a Kubernetes Job runs the command once (one attempt, in a container without keys);"
            f" this mission may run {document['budget']['attempts']} attempts until a stop rule is met"
            " (hint: run it with `anchor mission run` on a host, or set its budget to 1 attempt)",
            detail={"field": "stop_rules"},
        )


def prepare_mission(
    settings: Settings, output: str, cache: SnapshotCache, workspace: Path, say: Callable[[str], None]
) -> dict[str, Any]:
    """`anchor mission run OUTPUT --stage prepare --workspace DIR`: claim the mission, put the verified
    snapshot in DIR/snapshot/data (the volume the command gets read-only) and check that DIR/result
    (the command's volume) is empty; the milestones measured so far wait in the data dir for `seal`."""
    import shutil

    record, submitted = _claim(settings.data_dir, output)
    milestones = {"submitted": submitted, "scheduled": _now()}
    try:
        one_attempt_only(record["mission"]["document"])
        if record.get("resume"):
            raise NotAnchored(
                "resume: a pod has no earlier result directory to start from; resume on the host"
                " that ran the pinned bundle",
                detail={"field": "resume"},
            )
        result = workspace / POD_RESULT
        if not result.is_dir() or any(result.iterdir()):
            raise Conflict(
                f"{result}: not an empty directory (the command's own volume)", detail={"field": "workspace"}
            )
        with cache.held(record["snapshot"]["sha256"], record["snapshot"]["ref"]) as fetched:
            target = workspace / POD_SNAPSHOT / "data"
            shutil.copyfile(fetched.path, target)
            target.chmod(0o444)
            say(f"snapshot sha256:{fetched.key} {'verified in the cache' if fetched.hit else 'fetched and verified'}")
        milestones["snapshot_ready"] = _now()
        stage = private_dir(settings.layout.mission(output)) / "stage.json"
        stage.write_text(json.dumps({k: v.isoformat() for k, v in milestones.items()}))
    except BaseException:
        _finish(settings.data_dir, output, "failed")
        raise
    _finish(settings.data_dir, output, "prepared")
    measured = json.loads(stage.read_text())
    return {"output": output, "snapshot": str(target), "result": str(result), "milestones": measured}


def seal_mission(
    settings: Settings, output: str, workspace: Path, stamper: Stamper, say: Callable[[str], None]
) -> MissionRun:
    """`anchor mission run OUTPUT --stage seal --workspace DIR`, after the command's container exited 0
    (a failed command fails the pod, and nothing is anchored): hash DIR/result, links refused, and
    anchor the bundle. It binds the dispatched image as where the command ran (the kubelet ran exactly
    that digest), `sandbox: container`, and the milestones measured here: `image_ready` and
    `evaluator_started` happened in a container trusted code cannot watch, so they are left out rather
    than guessed."""
    from anchor.manifest.environment import Environment, Lock

    unknown = NotAnchored(
        f"output: no dispatched mission has output {output!r} (hint: anchor mission submit, then --stage prepare)",
        detail={"field": "output"},
    )
    if not settings.layout.missions_db.exists():
        raise unknown  # nothing created for a mistyped output
    db = _db(settings.data_dir)
    try:
        row = db.execute(
            "SELECT m.record, r.state FROM missions m LEFT JOIN runs r ON r.output = m.output WHERE m.output = ?",
            (output,),
        ).fetchone()
        if row is None:
            raise unknown
        if row[1] != "prepared":
            raise Conflict(
                f"output: {output!r} is {row[1] or 'not prepared'}; seal follows `--stage prepare`",
                detail={"field": "output"},
            )
        db.execute(
            "UPDATE runs SET state = 'running', pid = ?, updated_at = ? WHERE output = ?",
            (os.getpid(), _now().isoformat(timespec="milliseconds"), output),
        )
    finally:
        db.close()
    record = json.loads(row[0])
    mission_dir = settings.layout.mission(output)
    try:
        measured = json.loads((mission_dir / "stage.json").read_text())
        milestones = {k: datetime.fromisoformat(v) for k, v in measured.items()}
        milestones["completed"] = _now()
        result = workspace / POD_RESULT
        rules = list(record["mission"]["document"].get("stop_rules") or [])
        spent: dict[str, Any] = {"attempts": 1, "stopped": "one_run"}
        if rules:
            rule, line = met_rule(rules, result)
            say(f"attempt 1: {line}")
            spent = {"attempts": 1, "stopped": "stop_rule", "rule": rule} if rule else {**spent, "stopped": "attempts"}
        image = record["image"]
        environment = Environment(
            interpreter="the image's own (the command ran in it; this container only measured)",
            lock=Lock(source="the image, by digest", digest=image.rsplit("sha256:", 1)[1]),
            image=image,
        )
        manifest, outcome, proof_out = _seal(
            record, output, result, environment, "container", spent, milestones, settings, stamper
        )
    except BaseException:
        _finish(settings.data_dir, output, "failed")
        raise
    _finish(settings.data_dir, output, "done", manifest.digest.hex(), result)
    seconds = (milestones["completed"] - milestones["snapshot_ready"]).total_seconds()
    return MissionRun(output, result, proof_out, manifest, outcome, "container", seconds)
