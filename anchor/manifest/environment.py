"""The environment a measurement ran in, as records bind it: interpreter, lock, where, and its inputs.

Why: an attempt's record binds its code (commit, diff), its contract and its evidence, but a re-run
with another interpreter, other installed packages or other data is not the same measurement. A
reader comparing two figures needs to see whether they ran with the same inputs; a record that does
not say cannot be compared. So attempt (version 4), champion (version 2) and result-bundle records
carry this object (docs/manifest.md, "Environment"):

- `interpreter`: the `python3` the measured command finds on its PATH, as "<implementation> <version>"
  (or "none" when there is none), asked of that interpreter itself;
- `lock`: the digest of the named lockfile the contract gives (`lockfile`), else of that interpreter's
  installed distributions (`Name==version`, what `pip freeze --all` lists), with which of the two it is;
- `host` or `image`: the BLAKE3 of the machine's identity (/etc/machine-id, else the host name; hashed:
  the record is public, the id need not be), or the image digest the command ran in (ANCHOR_IMAGE,
  `name@sha256:…`, set by the rendered Jobs), never both;
- `inputs`: each data path the contract declares as an input, with its file-tree manifest digest
  (anchor.manifest.filetree), sorted by path;
- `accelerators`, only where an NVIDIA GPU is present: each GPU's model, memory (MiB),
  driver and CUDA versions, as `nvidia-smi` reports them. A result on a GPU is platform-specific; on a
  machine without one the field is absent, never faked (and a record without it keeps its digest).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

HEX64 = r"^[0-9a-f]{64}$"
IMAGE = re.compile(r"^[a-z0-9][a-z0-9._\-/:]*@sha256:[0-9a-f]{64}$")
"""As anchor.manifest.bundle pins an image (this module sits below it: the attempt manifest imports it)."""


class Lock(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    source: str = Field(min_length=1, max_length=256)
    """"installed distributions", or the lockfile's path as the contract names it."""
    digest: str = Field(pattern=HEX64)


class Input(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    path: str = Field(min_length=1, max_length=1024)
    """As the contract declares it (repo-relative or absolute)."""
    digest: str = Field(pattern=HEX64)
    """The digest of its file-tree manifest."""


class Accelerator(BaseModel):
    """One GPU the measured command could use, as its driver reports it."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    model: str = Field(min_length=1, max_length=128)
    memory_mib: int = Field(ge=0, lt=1 << 32)
    driver: str = Field(min_length=1, max_length=64)
    cuda: str = Field(min_length=1, max_length=32)


class Environment(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    interpreter: str = Field(min_length=1, max_length=128)
    lock: Lock
    host: str | None = Field(default=None, pattern=HEX64)
    image: str | None = None
    inputs: tuple[Input, ...] = Field(default=(), max_length=256)
    accelerators: tuple[Accelerator, ...] | None = Field(default=None, min_length=1, max_length=64)
    """Only where a GPU is present (None: absent from the record, as on every machine without one)."""

    @field_validator("image")
    @classmethod
    def _pinned(cls, value: str | None) -> str | None:
        if value is not None and not IMAGE.match(value):
            raise ValueError(f"image {value!r} is not pinned by digest (name@sha256:<64 hex>)")
        return value

    @model_validator(mode="after")
    def _one_place(self) -> Environment:
        if (self.host is None) == (self.image is None):
            raise ValueError("an environment names exactly one of host and image")
        paths = [i.path for i in self.inputs]
        if paths != sorted(set(paths)):
            raise ValueError("inputs are sorted by path, each path once")
        return self

    def changes(self, other: Environment) -> list[str]:
        """What differs from `other`, in words (empty when nothing does)."""
        out = []
        if self.interpreter != other.interpreter:
            out.append(f"interpreter {other.interpreter} -> {self.interpreter}")
        if self.lock != other.lock:
            out.append(f"lock ({self.lock.source}) {other.lock.digest[:12]}… -> {self.lock.digest[:12]}…")
        if (self.host, self.image) != (other.host, other.image):
            out.append(f"ran on {other.where()} -> {self.where()}")
        mine, theirs = {i.path: i.digest for i in self.inputs}, {i.path: i.digest for i in other.inputs}
        for path in sorted(mine.keys() | theirs.keys()):
            if mine.get(path) != theirs.get(path):
                before, after = theirs.get(path, "absent"), mine.get(path, "absent")
                out.append(f"input {path} {before[:12]}… -> {after[:12]}…")
        if self.accelerators != other.accelerators:
            out.append(f"accelerators {describe(other.accelerators)} -> {describe(self.accelerators)}")
        return out

    def where(self) -> str:
        return f"image {self.image}" if self.image else f"host {str(self.host)[:12]}…"


def describe(gpus: tuple[Accelerator, ...] | None) -> str:
    """GPUs in words: `1 x NVIDIA A100-SXM4-40GB (40960 MiB, driver 535.104.05, CUDA 12.2)`, or none."""
    if not gpus:
        return "none"
    kinds: dict[Accelerator, int] = {}
    for gpu in gpus:
        kinds[gpu] = kinds.get(gpu, 0) + 1
    return ", ".join(
        f"{n} x {gpu.model} ({gpu.memory_mib} MiB, driver {gpu.driver}, CUDA {gpu.cuda})" for gpu, n in kinds.items()
    )
