"""Hostile trees: every case is refused with its typed error, a message naming the path, and nothing
written (no proof file, no transaction)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from anchor.chain.node import rpc_call
from anchor.errors import AnchorError, BadInput, ExitCode, FileChanged, UnsafePath
from anchor.manifest import hashing
from anchor.manifest.filetree import hash_tree
from tests.conftest import Chain


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short path: AF_UNIX socket names are limited to 108 bytes."""
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="ah") as name:
        yield Path(name)


def _tree(root: Path) -> Path:
    (root / "tree" / "sub").mkdir(parents=True)
    (root / "tree" / "ok.txt").write_text("fine")
    return root / "tree"


def make_symlink_out(root: Path) -> tuple[Path, str]:
    tree = _tree(root)
    (tree / "sub" / "escape").symlink_to("/etc/passwd")
    return tree, "sub/escape"


def make_symlink_dir(root: Path) -> tuple[Path, str]:
    tree = _tree(root)
    (tree / "loop").symlink_to(tree)
    return tree, "loop"


def make_symlink_root(root: Path) -> tuple[Path, str]:
    tree = _tree(root)
    (root / "alias").symlink_to(tree)
    return root / "alias", "alias"


def make_fifo(root: Path) -> tuple[Path, str]:
    tree = _tree(root)
    os.mkfifo(tree / "sub" / "pipe")
    return tree, "sub/pipe"


def make_socket(root: Path) -> tuple[Path, str]:
    tree = _tree(root)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tree / "sock"))
    server.close()
    return tree, "sock"


def make_device(root: Path) -> tuple[Path, str]:
    tree = _tree(root)
    os.mknod(tree / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    return tree, "null"


def make_device_root(root: Path) -> tuple[Path, str]:
    return Path("/dev/null"), "/dev/null"


def make_non_utf8(root: Path) -> tuple[Path, str]:
    tree = _tree(root)
    with open(os.path.join(os.fsencode(tree), b"bad-\xff\xfe.txt"), "wb") as handle:
        handle.write(b"x")
    return tree, "bad-\\xff\\xfe.txt"


def make_nfc_collision(root: Path) -> tuple[Path, str]:
    tree = _tree(root)
    (tree / "caf\u00e9.txt").write_text("composed")
    (tree / "cafe\u0301.txt").write_text("decomposed")
    return tree, "caf\u00e9.txt"


def make_missing_root(root: Path) -> tuple[Path, str]:
    return root / "does-not-exist", "does-not-exist"


CASES: dict[str, tuple[Callable[[Path], tuple[Path, str]], type[AnchorError], str]] = {
    "symlink out of the root": (make_symlink_out, UnsafePath, "links are refused by default"),
    "symlink to a directory": (make_symlink_dir, UnsafePath, "links are refused by default"),
    "root is a symlink": (make_symlink_root, UnsafePath, "root is a symbolic link"),
    "FIFO": (make_fifo, UnsafePath, "a FIFO is not a regular file"),
    "socket": (make_socket, UnsafePath, "a socket is not a regular file"),
    "device file in the tree": (make_device, UnsafePath, "a device file is not a regular file"),
    "device file as the root": (make_device_root, UnsafePath, "a device file is not a regular file"),
    "non-UTF-8 name": (make_non_utf8, UnsafePath, "not valid UTF-8"),
    "names colliding after NFC": (make_nfc_collision, UnsafePath, "after Unicode NFC normalization"),
    "missing root": (make_missing_root, BadInput, "no such file or directory"),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_hostile_tree_is_refused_with_a_typed_error_naming_the_path(case: str, short_tmp: Path) -> None:
    make, error, words = CASES[case]
    root, named = make(short_tmp)
    with pytest.raises(error) as info:
        hash_tree(root)
    assert type(info.value) is error
    assert words in info.value.message and named in info.value.message


@pytest.mark.parametrize("case", ["symlink out of the root", "FIFO", "non-UTF-8 name", "names colliding after NFC"])
def test_hostile_tree_writes_no_proof_and_sends_no_transaction(
    case: str, short_tmp: Path, deployed_chain: Chain
) -> None:
    make, _, words = CASES[case]
    root, named = make(short_tmp)
    before = rpc_call(deployed_chain.node.rpc_url, "eth_blockNumber")
    proof = short_tmp / "out.anchor.json"
    result = deployed_chain.cli("anchor", str(root), "--proof", str(proof))
    assert result.returncode == ExitCode.BAD_INPUT, result.stderr
    assert named in result.stderr and words in result.stderr
    assert not proof.exists()
    assert rpc_call(deployed_chain.node.rpc_url, "eth_blockNumber") == before


def test_a_file_that_grows_while_read_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "log.txt"
    target.write_bytes(b"a" * 1000)
    real_read = os.read

    def read_then_append(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        with open(target, "ab") as writer:
            writer.write(b"appended by another process")
        return data

    monkeypatch.setattr(hashing.os, "read", read_then_append)
    with pytest.raises(FileChanged, match="log.txt: changed while it was being hashed"):
        hash_tree(tmp_path)


def test_a_file_swapped_for_a_fifo_after_the_walk_is_refused_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk saw a regular file; before it is opened, it becomes a FIFO nobody writes to. Opening it
    for reading blocked `anchor hash` for good; now it opens at once and is refused by name."""
    import threading

    from anchor.manifest import hashing

    target = tmp_path / "results.csv"
    target.write_bytes(b"a,b\n")
    real_hash_files = hashing.hash_files

    def swap_then_hash(listing: list, progress: object = None) -> list:  # type: ignore[type-arg]
        target.unlink()
        os.mkfifo(target)
        return real_hash_files(listing, progress)

    monkeypatch.setattr(hashing, "hash_files", swap_then_hash)
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            hash_tree(tmp_path)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    assert outcome, "hashing blocked on a FIFO swapped in after the walk"
    assert isinstance(outcome[0], UnsafePath) and "results.csv: not a regular file" in str(outcome[0])


def test_a_large_file_rewritten_in_place_while_mapped_is_detected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "weights.bin"
    target.write_bytes(os.urandom(hashing.SMALL_FILE + 4096))
    real_blake3 = hashing.blake3.blake3

    class RewritingHasher:
        AUTO = real_blake3.AUTO

        def __init__(self, *args: object, **kwargs: object) -> None:
            self.inner = real_blake3(*args, **kwargs)  # type: ignore[arg-type]

        def update(self, data: object) -> None:
            with open(target, "r+b") as writer:  # same size: no SIGBUS, but new content and mtime
                writer.write(b"\x00" * 16)
            self.inner.update(data)  # type: ignore[arg-type]

        def hexdigest(self) -> str:
            return str(self.inner.hexdigest())

    monkeypatch.setattr(hashing.blake3, "blake3", RewritingHasher)
    with pytest.raises(FileChanged, match="weights.bin"):
        hash_tree(tmp_path)


def test_an_unreadable_file_is_refused_naming_it(short_tmp: Path) -> None:
    """Root reads everything, so the hashing runs as `nobody` on a file only root may read."""
    tree = _tree(short_tmp)
    secret = tree / "sub" / "secret.bin"
    secret.write_bytes(b"s")
    secret.chmod(0o000)
    for path in (short_tmp, tree, tree / "sub"):
        path.chmod(0o755)
    probe = (  # imports first (the interpreter lives under /root), then drop to nobody
        "import json, os, sys\n"
        "from anchor.manifest.filetree import hash_tree\n"
        "from anchor.errors import AnchorError\n"
        "if os.geteuid() == 0:\n    os.setgid(65534); os.setuid(65534)\n"
        "try:\n    hash_tree(sys.argv[1])\n"
        "except AnchorError as e:\n    print(json.dumps([type(e).__name__, e.message]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(tree)], capture_output=True, text=True, check=True)
    kind, message = json.loads(out.stdout)
    assert kind == "UnsafePath" and "sub/secret.bin: cannot be read (Permission denied)" in message


def test_hashing_a_large_file_keeps_memory_bounded(tmp_path: Path) -> None:
    """A 768 MiB sparse file hashed in a fresh interpreter: peak RSS stays far below the file size."""
    big = tmp_path / "sparse.bin"
    with open(big, "wb") as handle:
        handle.truncate(768 << 20)
    probe = (  # ru_maxrss survives fork+exec on Linux: reset the high-water mark here, read VmHWM
        "import sys\n"
        "from anchor.manifest.filetree import hash_tree\n"
        "open('/proc/self/clear_refs', 'w').write('5')\n"
        "hash_tree(sys.argv[1])\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
        "print(int(hwm.split()[1]) // 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(big)], capture_output=True, text=True, check=True)
    assert int(out.stdout) < 200, f"peak RSS {out.stdout.strip()} MiB"


@pytest.mark.parametrize("size", [100, 2 << 20], ids=["small file", "large file"])
def test_a_directory_swapped_for_a_link_outside_after_the_walk_binds_nothing_from_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """The walk saw results/metrics.txt; before it is hashed, `results` becomes a link to a directory
    outside the root holding a file of the same name (as /etc holds hostname). Links are refused, yet
    the file outside was hashed into the manifest (only the last component was opened O_NOFOLLOW).
    Now every file must be the very file the walk listed (device and inode): a named FileChanged."""
    from anchor.manifest import hashing

    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "results").mkdir(parents=True)
    outside.mkdir()
    (root / "results" / "metrics.txt").write_bytes(b"m" * size)
    (outside / "metrics.txt").write_bytes(b"secret" * (size // 6 + 1))
    real_hash_files = hashing.hash_files

    def swap_then_hash(listing: list, progress: object = None) -> list:  # type: ignore[type-arg]
        (root / "results").rename(tmp_path / "moved")
        (root / "results").symlink_to(outside)
        return real_hash_files(listing, progress)

    monkeypatch.setattr(hashing, "hash_files", swap_then_hash)
    with pytest.raises(FileChanged, match="results/metrics.txt: not the file the walk listed"):
        hash_tree(root)


def test_a_directory_swapped_for_a_link_outside_while_the_tree_is_walked_lists_nothing_from_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """the walk listed the root and saw `results`, a directory; before it entered it,
    `results` became a link to a directory outside (as /etc, holding hostname). The walk listed by
    path, so it listed the outside directory, and the hash then matched what it listed: the outside
    file was bound as results/hostname. Now each directory is opened O_NOFOLLOW and must be the one
    listed (device and inode); the swap is a named FileChanged and nothing from outside is listed."""
    from anchor.manifest import walk as walk_module

    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "results").mkdir(parents=True)
    (root / "results" / "metrics.txt").write_bytes(b"m")
    outside.mkdir()
    (outside / "hostname").write_bytes(b"secret host\n")
    target = os.fsencode(root / "results")
    swapped = []

    def swap_once(path: object) -> None:
        if not swapped and os.fsencode(path) == target:  # type: ignore[arg-type]
            swapped.append(True)
            (root / "results").rename(tmp_path / "moved")
            (root / "results").symlink_to(outside)

    real_open, real_scandir = os.open, os.scandir

    def opening(path: object, *args: object, **kwargs: object) -> int:
        if isinstance(path, str | bytes | os.PathLike):
            swap_once(path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    def listing(path: object = ".") -> object:
        if isinstance(path, str | bytes | os.PathLike):
            swap_once(path)
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(walk_module.os, "open", opening)
    monkeypatch.setattr(walk_module.os, "scandir", listing)
    with pytest.raises(FileChanged, match="results: changed while the tree was walked"):
        hash_tree(root)
    assert swapped


def _worker_frames(root: Path, sub: str) -> list[tuple[str, str, tuple[int, int], frozenset[tuple[int, int]]]]:
    """The frame a walk hands a worker for `root/sub` (anchor.manifest.walk.Frame)."""
    top, below = os.lstat(root), os.lstat(root / sub)
    ids = frozenset({(top.st_dev, top.st_ino), (below.st_dev, below.st_ino)})
    return [(f"{sub}/", str(root / sub), (below.st_dev, below.st_ino), ids)]


def _swap_at_first_open(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    """Run `swap` after a worker's walk has listed a directory and before it opens the first file there."""
    real = hashing.hash_file

    def swapping(path: str, shown: str, *args: object, **kwargs: object) -> tuple[int, str]:
        if kwargs.get("dir_fd") is not None and not getattr(swapping, "done", False):
            swapping.done = True  # type: ignore[attr-defined]
            swap()
        return real(path, shown, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(hashing, "hash_file", swapping)


def test_a_file_a_worker_walks_to_is_opened_under_its_directorys_descriptor_so_a_swap_above_binds_nothing_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker lists results/ and hashes metrics.txt where it meets it, opening the name relative to the
    descriptor of the directory it verified and listed. `results` swapped for a link to a directory
    outside in between: the file hashed is still the one listed, never the outside one."""
    import blake3

    from anchor.manifest.filetree import _leaf

    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "results").mkdir(parents=True)
    (root / "results" / "metrics.txt").write_bytes(b"listed")
    outside.mkdir()
    (outside / "metrics.txt").write_bytes(b"secret from outside")

    def swap() -> None:
        (root / "results").rename(tmp_path / "moved")
        (root / "results").symlink_to(outside)

    _swap_at_first_open(monkeypatch, swap)
    rels, sizes, digests, *_ = hashing._walk_and_hash(_worker_frames(root, "results"), str(root), None, "refuse", _leaf)
    assert (rels, sizes, digests) == ("results/metrics.txt", [6], blake3.blake3(b"listed").hexdigest())


@pytest.mark.parametrize("swapped_for", ["a FIFO", "a link to a file outside"])
def test_a_file_a_worker_walks_to_swapped_before_it_is_opened_is_refused_by_name_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swapped_for: str
) -> None:
    """The directory's own listing said regular file (its d_type, no stat); by the time the worker opens
    it, it is a FIFO nobody writes to, or a link to /etc's kind of file. It opens at once (O_NONBLOCK)
    or not at all (O_NOFOLLOW), and the worker answers with a refusal naming it."""
    from anchor.manifest.filetree import _leaf

    root = tmp_path / "root"
    (root / "results").mkdir(parents=True)
    target = root / "results" / "metrics.txt"
    target.write_bytes(b"listed")
    (tmp_path / "passwd").write_bytes(b"root:x:0:0\n")

    def swap() -> None:
        target.unlink()
        if swapped_for == "a FIFO":
            os.mkfifo(target)
        else:
            target.symlink_to(tmp_path / "passwd")

    _swap_at_first_open(monkeypatch, swap)
    answer = hashing._walk_and_hash(_worker_frames(root, "results"), str(root), None, "refuse", _leaf)
    assert isinstance(answer, list) and answer[0][:2] == ("error", "UnsafePath")
    assert "results/metrics.txt" in answer[0][2]


def test_a_directory_renamed_between_its_listing_and_its_stat_is_file_changed_not_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer renaming a folder while `anchor stamp` walks: the walk listed `sub`, and by the time it
    looked at it, it was gone. That was FileNotFoundError from deep inside, exit 1."""
    from anchor.manifest import walk as walk_module

    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("a\n")
    real_scandir = walk_module.os.scandir

    class Listed(list):  # type: ignore[type-arg]
        def __enter__(self) -> Listed:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    def listing_then_rename(fd: object) -> Listed:
        with real_scandir(fd) as it:  # type: ignore[call-overload]
            children = Listed(it)
        if (root / "sub").exists():
            (root / "sub").rename(root / "sub.x")
        return children

    monkeypatch.setattr(walk_module.os, "scandir", listing_then_rename)
    with pytest.raises(FileChanged, match="sub: changed while the tree was walked"):
        hash_tree(root)


def _workers_tree(root: Path) -> Path:
    """800 one-byte files in four folders: enough (`PARALLEL_MIN_FILES`) for the hashing to fork its workers."""
    for d in range(4):
        (root / f"d{d}").mkdir(parents=True, exist_ok=True)
        for i in range(200):
            (root / f"d{d}" / f"f{i}.txt").write_bytes(b"x")
    return root


def test_a_worker_that_dies_while_hashing_is_file_changed_not_an_internal_error(tmp_path: Path) -> None:
    """A 400 MB file truncated and grown again while a worker maps it: the worker dies of SIGBUS, and the
    pool's BrokenProcessPool was an internal error (exit 1, 14 runs of 15). Run in a process of its own:
    workers are forked only by a process with one thread, which a test runner's is not always."""
    _workers_tree(tmp_path)
    script = (
        "import os, signal, sys\n"
        "from anchor.errors import AnchorError\n"
        "from anchor.manifest import hashing\n"
        "from anchor.manifest.filetree import hash_tree\n"
        "def die(*args):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "hashing._walk_and_hash = hashing._hash_packed = die\n"
        "try:\n"
        "    hash_tree(sys.argv[1])\n"
        "except AnchorError as exc:\n"
        "    print(type(exc).__name__, exc.message)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("FileChanged a process hashing the tree died before it answered"), done
    assert "Traceback" not in done.stderr, done.stderr


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat_line = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat_line.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_hashing_workers_end_with_the_process_that_forked_them_however_it_ends(tmp_path: Path) -> None:
    """The process hashing a tree killed outright (SIGBUS on a file truncated under its mapping, or
    SIGKILL): its two workers stayed, blocked on their pipe for good, and held the command's output open,
    so `$(anchor hash DIR)` never returned. A worker now asks the kernel to kill it when its parent ends.
    Here the workers are made to sleep, and the test kills the one process it started."""
    import signal
    import time

    tree = _workers_tree(tmp_path / "tree")
    script = (
        "import sys, time\n"
        "from anchor.manifest import hashing\n"
        "from anchor.manifest.filetree import hash_tree\n"
        "def slow(*args):\n"
        "    time.sleep(120)\n"
        "hashing._walk_and_hash = hashing._hash_packed = slow\n"
        "hash_tree(sys.argv[1])\n"
    )
    started = subprocess.Popen([sys.executable, "-c", script, str(tree)])
    try:
        deadline = time.monotonic() + 30
        while len(workers := _children_of(started.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(workers) >= 2, workers
    finally:
        os.kill(started.pid, signal.SIGKILL)  # the process this test started, by its PID
        started.wait()
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in workers if _running(pid)]
    for pid in left:  # a failure leaves no orphan behind: the workers of the process we started, by PID
        os.kill(pid, signal.SIGKILL)
    assert not left, left
