"""Local writes that another user of the machine cannot redirect, and that survive a power cut.

Why here and not in each writer: a proof file, a deployment record and the data directory all face the
same local adversary (symlinks planted at a predictable name, a permissive umask) and the same crash
(a rename that reached the disk before the data did). One helper gets it right once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from anchor.errors import StorageError, UnsafePath

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
PUBLIC_FILE = 0o644


def private_dir(path: Path) -> Path:
    """Create `path` and every missing parent 0700 whatever the umask, and make `path` 0700; refuse a
    symlink. The parents too: `private_dir(DATA/chain)` on a fresh data dir used to leave DATA itself
    0755 under umask 022, its file names readable by every local user (`mkdir(parents=True)` gives
    parents the umask's mode). Directories that already exist keep theirs. The XDG base-directory
    rule is the same: a missing directory is created 0700."""
    if path.is_symlink():
        raise UnsafePath(f"{path}: the data directory is a symbolic link; refusing it", detail={"path": str(path)})
    missing = []
    for ancestor in (path, *path.parents):
        if ancestor.exists() or ancestor.is_symlink():
            break
        missing.append(ancestor)
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            continue  # made meanwhile by someone else: not ours to change (`path` itself is checked below)
        except OSError as exc:  # the user's to fix (a full or read-only disk, no such place, no access)
            from anchor.errors import BadInput

            raise storage_error(exc, directory) or BadInput(
                f"{directory}: cannot be made ({exc.strerror})", detail={"path": str(directory)}
            ) from None
        os.chmod(directory, PRIVATE_DIR)  # mkdir's mode is filtered by the umask
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True)  # raises as before (a file in the way)
    if stat.S_IMODE(path.stat().st_mode) != PRIVATE_DIR:
        os.chmod(path, PRIVATE_DIR)
    return path


def folder_beside(path: Path) -> Path:
    """Make the folder `path` (and its parents) that a command keeps files in next to the user's own
    (`DIR.proofs/`, `PATH.anchor-history/`); a file of the user's in the way is `BadInput` naming it,
    left as it is, never an internal FileExistsError or NotADirectoryError from deep inside."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        from anchor.errors import BadInput

        blocking = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), path)
        raise BadInput(
            f"{blocking}: a file is in the way of the folder {path.name}/ that holds what anchor keeps there;"
            " it was not touched (move it away or remove it, then run the command again)",
            detail={"path": str(blocking)},
        ) from None
    except OSError as exc:
        from anchor.errors import BadInput

        raise storage_error(exc, path) or BadInput(
            f"{path}: cannot be made ({exc.strerror})", detail={"path": str(path)}
        ) from None
    return path


_STORAGE_ERRNOS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the filesystem is read-only",
}


def storage_error(exc: BaseException, path: Path) -> StorageError | None:
    """The typed error for a write that failed for want of space or write access, naming `path`
    (None for any other failure, which keeps its own meaning)."""
    why = _STORAGE_ERRNOS.get(getattr(exc, "errno", None) or -1)
    if why is None:
        return None
    return StorageError(
        f"{path}: {why}; nothing was half-written and nothing journaled is lost: free space (or restore write"
        " access) and run the same command again",
        detail={"path": str(path), "errno": errno.errorcode.get(getattr(exc, "errno", 0) or 0, "")},
    )


def atomic_write(path: Path, data: bytes, mode: int = PUBLIC_FILE) -> None:
    """Replace `path` with `data` so a reader sees the old file or the new one, never half of one.

    The temporary file is created by `mkstemp` in the target directory (O_CREAT|O_EXCL, so a planted
    file or symlink at a guessable name is never written through); an existing symlink at `path`
    itself is refused rather than replaced. File and directory are fsynced before and after the
    rename, so a power cut leaves the old file or the complete new one. `mode` is set explicitly:
    the result does not depend on the umask.
    """
    _refuse_symlink(path)
    parent = path.parent if str(path.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # writers only (5 ms with shutil and random): a verify reads

        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise storage_error(exc, path) or exc from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        typed = storage_error(exc, path)
        if typed is not None:
            raise typed from None
        raise
    _fsync_dir(parent)


def atomic_write_many(writes: list[tuple[Path, bytes]], mode: int = PUBLIC_FILE) -> dict[int, Exception]:
    """`atomic_write` for a whole batch: same guarantees, one `sync()` for all the files' data instead
    of one fsync each (8x cheaper for a batch of proofs here), then the renames, then one fsync per
    directory. A write that fails (a symlink at its path, a full disk) fails alone: returns
    {index in `writes`: the error}, and the others are written."""
    failed: dict[int, Exception] = {}
    staged: list[tuple[int, str, Path]] = []
    for index, (path, data) in enumerate(writes):
        tmp = None
        try:
            if path.is_symlink():
                raise UnsafePath(
                    f"{path}: is a symbolic link; refusing to write through it", detail={"path": str(path)}
                )
            parent = path.parent if str(path.parent) else Path(".")
            parent.mkdir(parents=True, exist_ok=True)
            import tempfile

            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                os.fchmod(out.fileno(), mode)
            staged.append((index, tmp, path))
        except (OSError, UnsafePath) as exc:
            if tmp is not None:  # a full disk: never leave the half-written file behind
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            failed[index] = storage_error(exc, path) or exc
    os.sync()  # every staged file's data is on disk before any rename makes it visible
    parents = set()
    for index, tmp, path in staged:
        try:
            os.replace(tmp, path)
            parents.add(path.parent if str(path.parent) else Path("."))
        except OSError as exc:
            failed[index] = exc
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    for parent in parents:
        _fsync_dir(parent)
    return failed


def _refuse_symlink(path: Path) -> None:
    if path.is_symlink():
        raise UnsafePath(f"{path}: is a symbolic link; refusing to write through it", detail={"path": str(path)})


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_document(path: Path, what: str, detail: dict[str, str], limit: int | None = None) -> tuple[str, bytes]:
    """The UTF-8 text and the bytes of a document a user names (a mission file, a bundle spec, an attempt
    contract), or `BadInput` saying in words what it is instead, naming it as `what` and carrying
    `detail`: no such file (with the near name), a folder, unreadable, too large, not UTF-8. One reader,
    so each kind of document is refused alike (a folder was a bug report for one, `[Errno 21]` for two)."""
    from anchor.errors import BadInput, did_you_mean_path

    try:  # O_NONBLOCK: a FIFO opens at once and is refused below; reading it would wait for a writer forever
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such {what}{did_you_mean_path(path)}", detail=detail) from None
    except IsADirectoryError:
        raise BadInput(f"{path}: a folder, not a {what}", detail=detail) from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot be read ({exc.strerror})", detail=detail) from None
    try:
        found = os.fstat(fd)
        if stat.S_ISDIR(found.st_mode):
            raise BadInput(f"{path}: a folder, not a {what}", detail=detail)
        if not stat.S_ISREG(found.st_mode):
            raise BadInput(f"{path}: not a regular file (a FIFO, a socket or a device), not a {what}", detail=detail)
        if limit is not None and found.st_size > limit:
            raise BadInput(f"{path}: larger than {limit} bytes, too large for a {what}", detail=detail)
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise BadInput(f"{path}: cannot be read ({exc.strerror})", detail=detail) from None
    finally:
        os.close(fd)
    try:
        return raw.decode("utf-8"), raw
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not a {what}: not UTF-8 text (byte {exc.start})", detail=detail) from None


def tail_regular(path: Path, size: int) -> bytes:
    """The last `size` bytes of `path` if it is a regular file reached without following a link, else
    b"": a log untrusted code could have replaced (with a link to a host file, a FIFO) is never followed,
    waited on, or read whole."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            return b""
        os.lseek(fd, max(0, found.st_size - size), os.SEEK_SET)
        return os.read(fd, size)
    except OSError:
        return b""
    finally:
        os.close(fd)


def read_regular(path: Path, limit: int) -> bytes:
    """At most `limit` + 1 bytes of `path`, which must be a regular file reached without following a
    link in its last component; `UnsafePath` otherwise. For files that untrusted code could have
    replaced (an attempt's run dir): a link to /proc/self/fd/N, a FIFO or a device would otherwise
    block the reading thread for good. O_NONBLOCK makes opening a FIFO return at once."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(f"{path}: is a symbolic link; refusing to follow it", detail={"path": str(path)}) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(f"{path}: is not a regular file", detail={"path": str(path)})
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
