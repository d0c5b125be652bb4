"""Evidence bound to the metric: an attempt's run dir, hashed into its attempt manifest.

Why: the metric is read from a file the code under measurement wrote, beside its logs, its claims and
the harness's `code.diff`. A number in the ledger says nothing about those files unless they are bound
to it; bound, an operator who edits a metrics file afterwards, or deletes a log, is caught by
`research verify`, which re-hashes the run dir and re-reads the metric from the bound file.

The run dir is hashed as a file tree (docs/manifest.md section 3) with symbolic links recorded, never
followed (the attempt may leave a link to anything). What a file tree cannot hold (a FIFO, a socket,
a device, a name that is not UTF-8, a link whose target is not) is removed first and named in the
ledger entry (`evidence_removed`), and the attempt counts as failed: a run that leaves such things is
not a measurement we can bind. The listing is written beside the run dir (`<run dir>.evidence.json`)
so that a verifier can name the file that changed, not only say that something did.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from anchor.errors import BadInput, Tampered
from anchor.manifest.filetree import FileTreeManifest, diff, hash_tree
from anchor.manifest.walk import MAX_LINK_TARGET
from anchor.record import Value
from anchor.research.ledger import LedgerRow

POLICY = "record"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Sealed(Value):
    manifest: FileTreeManifest
    removed: tuple[str, ...]
    """What the run left that cannot be evidence, removed before hashing (relative paths)."""


def run_dir_of(workdir: Path, researcher: str, commit: str) -> Path:
    """Where an attempt's evidence lives: <workdir>/runs/<researcher>/<commit[:12]>."""
    return workdir / "runs" / researcher / commit[:12]


def interrupted_dir_of(workdir: Path, researcher: str, commit: str, started_seq: int) -> Path:
    """Where an interrupted attempt's evidence is kept: beside the commit's run dir, named for its trace."""
    return workdir / "runs" / researcher / f"{commit[:12]}.interrupted-{started_seq}"


def evidence_dir_of(workdir: Path, entry: LedgerRow) -> Path:
    """The run dir an attempt row binds."""
    if entry.get("status") == "interrupted":
        return interrupted_dir_of(workdir, entry["researcher"], entry["commit"], entry["started_seq"])
    return run_dir_of(workdir, entry["researcher"], entry["commit"])


def listing_path(run_dir: Path) -> Path:
    return run_dir.with_name(run_dir.name + ".evidence.json")


def seal(run_dir: Path) -> Sealed:
    """Hash the run dir once the attempt's processes are gone; write its listing beside it."""
    removed = _remove_unbindable(run_dir)
    try:
        manifest = hash_tree(run_dir, symlinks=POLICY)
    except BadInput as exc:  # e.g. two names equal after NFC normalization: keep them aside, bind a note
        aside = run_dir.with_name(run_dir.name + ".refused")
        shutil.rmtree(aside, ignore_errors=True)
        run_dir.rename(aside)
        run_dir.mkdir()
        (run_dir / "refused.txt").write_text(f"the run dir could not be bound ({exc.message}); kept in {aside.name}\n")
        removed.append(".")
        manifest = hash_tree(run_dir, symlinks=POLICY)
    listing = {"identity": manifest.identity(), "files": manifest.files_json()}
    tmp = listing_path(run_dir).with_suffix(".tmp")
    tmp.write_text(json.dumps(listing, sort_keys=True))
    tmp.replace(listing_path(run_dir))
    return Sealed(manifest, tuple(removed))


def _remove_unbindable(run_dir: Path) -> list[str]:
    removed: list[str] = []
    for top, dirs, files in os.walk(os.fsencode(run_dir), topdown=True, followlinks=False):
        for name in [*dirs, *files]:
            path = os.path.join(top, name)
            rel = os.path.relpath(path, os.fsencode(run_dir)).decode("utf-8", "backslashreplace")
            try:
                info = os.lstat(path)
                name.decode("utf-8")
                if stat.S_ISLNK(info.st_mode):
                    target = os.readlink(path)
                    target.decode("utf-8")
                    bindable = len(target) <= MAX_LINK_TARGET
                else:
                    bindable = stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)
                if stat.S_ISDIR(info.st_mode) and not stat.S_ISLNK(info.st_mode):
                    os.chmod(path, info.st_mode | stat.S_IRWXU)  # a directory it locked is still read
            except (OSError, UnicodeDecodeError):
                bindable = False
            if bindable:
                continue
            removed.append(rel)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        dirs[:] = [d for d in dirs if os.path.isdir(os.path.join(top, d)) and not os.path.islink(os.path.join(top, d))]
    return sorted(removed)


def check(entry: LedgerRow, run_dir: Path, metric_source: str, what: str | None = None) -> None:
    """Re-hash an entry's run dir and re-read its metric from the bound file; raises `Tampered` naming
    the seq (or `what`: a champion's final run) and what differs, also when the run dir is gone."""
    from anchor.research.metrics import read_metric

    seq = entry["seq"]
    label = what or f"seq {seq}"
    if not run_dir.is_dir():
        raise Tampered(
            f"{label}: the evidence of this {'run' if what else 'attempt'} ({run_dir}) is missing; its metric"
            " cannot be re-read",
            detail={"seq": seq, "run_dir": str(run_dir)},
        )
    actual = hash_tree(run_dir, symlinks=POLICY)
    if actual.digest.hex() != entry["evidence"]:
        named = _changed_files(run_dir, actual, entry["evidence"])
        raise Tampered(
            f"{label}: the run dir {run_dir} is not the one bound in the {'record' if what else 'attempt manifest'}"
            + (f" ({', '.join(named[:5])} changed)" if named else ""),
            detail={"seq": seq, "run_dir": str(run_dir), "files": named},
        )
    for key in ("metric", "partial"):
        if key not in entry:
            continue
        metric = entry[key]
        if metric is None:  # never written (a row holds a manifest's identity, its empty fields left out)
            continue
        value = read_metric(run_dir, metric_source, metric["name"])
        if value != metric["value"]:
            raise Tampered(
                f"{label}: the bound metric file gives {metric['name']}={value}, the"
                f" {'record' if what else 'ledger'} says {metric['value']}",
                detail={"seq": seq, "metric": metric["name"], "file": value, "ledger": metric["value"]},
            )


def _changed_files(run_dir: Path, actual: FileTreeManifest, evidence: str) -> list[str]:
    """The files that differ from the listing written at sealing, when that listing is the bound one."""
    try:
        listing = json.loads(listing_path(run_dir).read_text())
        expected = FileTreeManifest.from_files_json(listing["files"], str(run_dir), listing["identity"])
    except (OSError, ValueError, KeyError, TypeError, BadInput):
        return []
    if expected.digest.hex() != evidence:
        return []
    return diff(expected, actual).named()
