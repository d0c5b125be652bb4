"""Capture the environment a measurement runs in (anchor.manifest.environment says what and why).

The interpreter and its installed distributions are asked once per search, of the `python3` the
measured command finds on the PATH it is given (one short subprocess: the harness's own interpreter
may not be the one the command runs). The contract's inputs are hashed at every capture, before the
command runs, so a data file changed between two attempts shows in their records.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import blake3

from anchor.errors import BadInput
from anchor.manifest.environment import IMAGE, Accelerator, Environment, Input, Lock
from anchor.settings.session import inherited, search_path

if TYPE_CHECKING:
    from anchor.research.contract import AttemptContract

DISTRIBUTIONS = "installed distributions"
"""The lock source when the contract names no lockfile: `name==version` of every distribution the
interpreter sees (what `pip freeze --all` lists), sorted, one a line, hashed."""

_ASK = (
    "import importlib.metadata as m, platform\n"
    "print(platform.python_implementation(), platform.python_version())\n"
    "print('\\n'.join(sorted({f\"{d.metadata['Name']}=={d.version}\" for d in m.distributions()"
    " if d.metadata['Name']})))\n"
)


class Capture:
    """One search's environment capture: the interpreter and lock asked once, the inputs each time."""

    def __init__(self, terms: AttemptContract, repo: Path, image: str = "") -> None:
        """`image`: ANCHOR_IMAGE, the image the command runs in (empty: this host)."""
        self.terms, self.repo, self.image = terms, repo, image
        self._fixed: tuple[str, Lock, str | None, str | None, tuple[Accelerator, ...] | None] | None = None
        if terms.lockfile is not None and not (repo / terms.lockfile).is_file():
            raise BadInput(
                f"lockfile: {terms.lockfile!r} ({repo / terms.lockfile}) is not a file in the repository",
                detail={"field": "lockfile"},
            )
        for text, path in terms.input_paths(repo):
            if not path.exists():
                raise BadInput(
                    f"inputs: {text!r} ({path}) does not exist; the contract declares it as data the measurement"
                    " reads, and every record binds its digest",
                    detail={"field": "inputs", "path": text},
                )

    def __call__(self) -> Environment:
        from anchor.manifest.filetree import hash_tree

        if self._fixed is None:
            self._fixed = (*self._interpreter_and_lock(), *_where(self.image), accelerators())
        interpreter, lock, host, image, gpus = self._fixed
        inputs = tuple(
            Input(path=text, digest=hash_tree(path).digest.hex()) for text, path in self.terms.input_paths(self.repo)
        )
        return Environment(interpreter=interpreter, lock=lock, host=host, image=image, inputs=inputs, accelerators=gpus)

    def _interpreter_and_lock(self) -> tuple[str, Lock]:
        interpreter, listing = ask_interpreter()
        if self.terms.lockfile is None:
            return interpreter, Lock(source=DISTRIBUTIONS, digest=blake3.blake3(listing).hexdigest())
        path = self.repo / self.terms.lockfile
        try:
            data = path.read_bytes()
        except OSError:
            raise BadInput(
                f"lockfile: {self.terms.lockfile!r} ({path}) cannot be read", detail={"field": "lockfile"}
            ) from None
        return interpreter, Lock(source=self.terms.lockfile, digest=blake3.blake3(data).hexdigest())


def ask_interpreter() -> tuple[str, bytes]:
    """("<implementation> <version>", its distributions' listing) of the `python3` on PATH, asked of it."""
    python = shutil.which("python3", path=search_path())
    if python is None:
        return "none", b""
    try:
        asked = subprocess.run(  # noqa: S603 - the interpreter the measured command would run
            [python, "-I", "-c", _ASK], capture_output=True, timeout=60, check=True, env=_plain_environment()
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown", b""
    first, _, rest = asked.stdout.partition(b"\n")
    return first.decode("utf-8", "replace").strip()[:128] or "none", rest


def current(image: str = "") -> Environment:
    """The environment of a command run here with no declared inputs (a mission's: its data snapshot
    is bound by its own digest), its lock the installed distributions."""
    interpreter, listing = ask_interpreter()
    host, ran_in = _where(image)
    lock = Lock(source=DISTRIBUTIONS, digest=blake3.blake3(listing).hexdigest())
    return Environment(interpreter=interpreter, lock=lock, host=host, image=ran_in, accelerators=accelerators())


def accelerators() -> tuple[Accelerator, ...] | None:
    """The NVIDIA GPUs `nvidia-smi` (on the PATH the measured command gets) reports, or None where there
    is none, it fails or it says something it should not: a field is absent rather than faked."""
    smi = shutil.which("nvidia-smi", path=search_path())
    if smi is None:
        return None
    query = [smi, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"]
    try:
        listed = subprocess.run(query, capture_output=True, text=True, timeout=20, check=True, env=_plain_environment())
        detail = subprocess.run(
            [smi, "-q"], capture_output=True, text=True, timeout=20, check=True, env=_plain_environment()
        )
    except (OSError, subprocess.SubprocessError):
        return None
    cuda = next(
        (
            line.split(":", 1)[1].strip()
            for line in detail.stdout.splitlines()
            if line.strip().startswith("CUDA Version") and ":" in line
        ),
        "",
    )
    found = []
    for line in listed.stdout.splitlines()[:64]:
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 3 or not (parts[1].isascii() and parts[1].isdigit()):
            return None
        found.append((parts[0], int(parts[1]), parts[2]))
    try:
        gpus = tuple(Accelerator(model=m, memory_mib=mib, driver=d, cuda=cuda) for m, mib, d in found)
    except ValueError:
        return None
    return gpus or None


def _plain_environment() -> dict[str, str]:
    return inherited(("PATH", "LANG", "LC_ALL", "HOME"))


def _where(image: str) -> tuple[str | None, str | None]:
    """(host, image): the image the command runs in when `image` (ANCHOR_IMAGE) names one, else this host."""
    if IMAGE.match(image):
        return None, image
    return host_identity(), None


def host_identity() -> str:
    """The BLAKE3 of this machine's identity: /etc/machine-id, else the host name (hashed: records are
    public, the machine id need not be)."""
    import socket

    try:
        ident = Path("/etc/machine-id").read_bytes().strip()
    except OSError:
        ident = b""
    return blake3.blake3(b"anchor host v1\0" + (ident or socket.gethostname().encode())).hexdigest()
