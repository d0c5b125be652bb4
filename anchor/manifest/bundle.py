"""The result-bundle manifest: what ran (mission, data snapshot, image, evaluator policy), what came out
(the output file tree) and, for a resumed run, which earlier bundle it continues.

The six latency milestones are recorded in the document but kept out of the identity digest: the
same result computed faster is the same result.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from anchor.errors import BadInput
from anchor.manifest.environment import Environment
from anchor.manifest.filetree import FileTreeManifest, hash_tree
from anchor.manifest.identity import HasIdentity
from anchor.manifest.mission import Budget, StopRule  # what the run was allowed: the mission's budget, as enforced
from anchor.manifest.validation import validated

HEX64 = r"^[0-9a-f]{64}$"
IMAGE = re.compile(r"^(?P<name>[a-z0-9][a-z0-9._\-/:]*)@sha256:(?P<digest>[0-9a-f]{64})$")
MILESTONES = ("submitted", "scheduled", "image_ready", "snapshot_ready", "evaluator_started", "completed")


class ResumePin(BaseModel):
    """The earlier bundle a resumed run continues: a reference and its manifest digest, always both."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    bundle: str = Field(min_length=1, max_length=256)
    digest: str = Field(pattern=HEX64)


class OutputIdentity(BaseModel):
    """The output file tree, by its root; `name` is the run's own label for it."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=256)
    files_root: str = Field(pattern=HEX64)
    file_count: int = Field(ge=0, lt=2**53)
    total_size: int = Field(ge=0, lt=2**53)


class Milestones(BaseModel):
    """RFC 3339 times of the six latency milestones; every one optional, none before `submitted`."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    submitted: datetime | None = None
    scheduled: datetime | None = None
    image_ready: datetime | None = None
    snapshot_ready: datetime | None = None
    evaluator_started: datetime | None = None
    completed: datetime | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Milestones:
        times = {name: getattr(self, name) for name in MILESTONES if getattr(self, name) is not None}
        for name, value in times.items():
            if value.tzinfo is None:
                raise ValueError(f"milestone {name} needs a timezone (RFC 3339)")
        first, last = times.get("submitted"), times.get("completed")
        for name, value in times.items():
            if first is not None and value < first:
                raise ValueError(f"milestone {name} is before submitted")
            if last is not None and value > last:
                raise ValueError(f"milestone {name} is after completed")
        return self

    def to_json(self) -> dict[str, str]:
        return {name: getattr(self, name).isoformat() for name in MILESTONES if getattr(self, name) is not None}


TIMING_PROOF_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.anchor\.json$")
"""A timing proof's name as annotations may give it: a bare file name beside the bundle's proof, never
a path (annotations are a submitter's display data; no reader opens a path they name)."""


def check_annotations(annotations: object) -> None:
    """The annotations a submitter may attach that readers interpret: `milestones` (the six names, RFC 3339
    with a timezone, in order) and `timing` (`digest`, 0x and 64 hex; `proof`, a bare file name). Other
    keys are display data, kept as given. Raises `BadInput` naming the field: a malformed value was a
    500 on the explorer's bundle page, and a `timing.proof` of `../../etc/passwd` was opened as a path."""
    from anchor.manifest.validation import validated

    if not isinstance(annotations, dict):
        raise BadInput("annotations: expected an object", detail={"field": "annotations"})
    if "milestones" in annotations:
        try:
            validated(Milestones, annotations["milestones"], "annotations.milestones")
        except BadInput as exc:
            inner = str(exc.detail.get("field", "(root)"))
            field = "annotations.milestones" + ("" if inner == "(root)" else f".{inner}")
            raise BadInput(exc.message, detail={"field": field}) from None
    if "timing" in annotations:
        timing = annotations["timing"]
        if not isinstance(timing, dict) or set(timing) - {"digest", "proof"} or "digest" not in timing:
            raise BadInput("annotations.timing: expected {digest, proof}", detail={"field": "annotations.timing"})
        if not isinstance(timing["digest"], str) or not re.fullmatch(r"0x[0-9a-f]{64}", timing["digest"]):
            raise BadInput(
                "annotations.timing.digest: expected 0x and 64 hex digits",
                detail={"field": "annotations.timing.digest"},
            )
        name = timing.get("proof")
        if name is not None and (not isinstance(name, str) or not TIMING_PROOF_NAME.match(name)):
            raise BadInput(
                "annotations.timing.proof: a bare file name ending in .anchor.json, not a path",
                detail={"field": "annotations.timing.proof"},
            )


class Profile(BaseModel):
    """The resource profile it ran under: a declared name and its bounds (requests = limits)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,31}$")
    cpu: str = Field(pattern=r"^[0-9]+(\.[0-9]+)?m?$")
    memory: str = Field(pattern=r"^[0-9]+(Ki|Mi|Gi|Ti)?$")


class Spent(BaseModel):
    """What a run used of its budget and why it stopped (version 3, written by the runner, inside the
    identity): `attempts` runs of the command; `stopped` is `stop_rule` (the `rule` met by the
    `metrics.json` the last attempt left), `attempts` (the budget's attempts ran out first) or
    `one_run` (a mission without stop rules runs its command once)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    attempts: int = Field(ge=1, le=1_000_000)
    stopped: Literal["stop_rule", "attempts", "one_run"]
    rule: StopRule | None = None

    @model_validator(mode="after")
    def _named(self) -> Spent:
        if (self.stopped == "stop_rule") != (self.rule is not None):
            raise ValueError("rule: present exactly when a stop rule ended the run")
        if self.stopped == "one_run" and self.attempts != 1:
            raise ValueError("attempts: a run without stop rules is one attempt")
        return self


class BundleManifest(HasIdentity, BaseModel):
    """Version 2 adds what the run was allowed (`budget`) and what it ran on (`profile`), both inside
    the identity: the same output under another budget or profile is another result bundle.

    Version 3 binds where it actually ran: `environment` (anchor.manifest.environment: interpreter,
    lock, and the host's identity or the image it ran in) and `sandbox`. Its `image` is present only
    when the command ran in that image (then it equals `environment.image`): a run on a host never
    claims the image it was dispatched with. Its optional `spent` (`Spent`) says how many attempts
    ran and why they stopped; absent in bundles written before it, so their digests are unchanged."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    kind: Literal["bundle"] = "bundle"
    version: Literal[1, 2, 3] = 1
    mission_sha256: str = Field(pattern=HEX64)
    data_snapshot_sha256: str = Field(pattern=HEX64)
    image: str | None = None
    evaluator_policy_sha256: str = Field(pattern=HEX64)
    output: OutputIdentity
    resume: ResumePin | None = None
    budget: Budget | None = None
    profile: Profile | None = None
    environment: Environment | None = None
    sandbox: Literal["bubblewrap", "gvisor", "container", "none"] | None = None
    """`container`: the command ran alone in a container of its image, without keys or network (the
    Kubernetes Job of `anchor mission render k8s`), and was measured from a separate one."""
    spent: Spent | None = None
    milestones: Milestones | None = None

    @model_validator(mode="after")
    def _versioned(self) -> BundleManifest:
        extra = [name for name in ("budget", "profile") if getattr(self, name) is not None]
        where = [name for name in ("environment", "sandbox") if getattr(self, name) is not None]
        if self.version == 1 and extra:
            raise ValueError(f"{extra[0]}: a version 2 field (a version 1 bundle has no budget or profile)")
        if self.version >= 2 and len(extra) != 2:
            raise ValueError(f"a version {self.version} bundle records both its budget and its profile")
        if self.version < 3 and (where or self.spent is not None):
            raise ValueError(f"{(where or ['spent'])[0]}: a version 3 field")
        if self.spent is not None and self.budget is not None and self.spent.attempts > self.budget.attempts:
            raise ValueError(f"spent.attempts: {self.spent.attempts} is past the budget's {self.budget.attempts}")
        if self.version < 3 and self.image is None:
            raise ValueError("image: required before version 3")
        if self.version == 3:
            if len(where) != 2 or self.environment is None:
                raise ValueError("a version 3 bundle records both its environment and its sandbox")
            if self.sandbox == "container" and self.image is None:
                raise ValueError("sandbox: a command that ran in a container names that container's image")
            if self.image != self.environment.image:
                raise ValueError(
                    "image: present exactly when the command ran in that image (environment.image);"
                    " a run on a host claims no image"
                )
        return self

    @field_validator("image")
    @classmethod
    def _pinned_image(cls, value: str | None) -> str | None:
        if value is not None and not IMAGE.match(value):
            raise ValueError(
                f"{value!r} is not pinned by digest; a tag is not an execution identity, use name@sha256:<64 hex>"
            )
        return value

    def identity(self) -> dict[str, Any]:
        """Everything but the milestones; absent fields are omitted, never null."""
        return self.model_dump(mode="json", exclude={"milestones"}, exclude_none=True)

    def annotations(self) -> dict[str, Any]:
        return {"milestones": self.milestones.to_json()} if self.milestones else {}


def _sha256_file(path: Path, field: str) -> str:
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise BadInput(f"{field}: {path}: cannot be read ({exc.strerror})", detail={"field": field}) from None


def _digest_field(spec: dict[str, Any], base: Path, name: str) -> str:
    """`name` (a file we hash) and/or `name_sha256` (a claim we compare, never adopt)."""
    claimed, path = spec.get(f"{name}_sha256"), spec.get(name)
    if path is None:
        if claimed is None:
            raise BadInput(
                f"bundle spec: field '{name}' (a file) or '{name}_sha256' is required", detail={"field": name}
            )
        return str(claimed).lower().removeprefix("0x")
    computed = _sha256_file(base / str(path), name)
    if claimed is not None and str(claimed).lower().removeprefix("0x") != computed:
        raise BadInput(
            f"bundle spec: field '{name}_sha256' claims {claimed}, but {path} hashes to {computed}",
            detail={"field": f"{name}_sha256", "claimed": claimed, "computed": computed},
        )
    return computed


INPUT_FILES = ("mission", "data_snapshot", "evaluator_policy")
"""The spec fields naming an input file, each hashed into `<name>_sha256` of the identity."""


def read_bundle_spec(spec_path: Path) -> dict[str, Any]:
    """The TOML spec, with unknown and missing fields refused by name (nothing is hashed yet)."""
    from anchor.files import read_document

    try:
        spec = tomllib.loads(read_document(spec_path, "bundle spec", {"field": "spec"})[0])
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{spec_path}: not a TOML bundle spec ({exc})", detail={"field": "spec"}) from None
    known = {
        "mission",
        "mission_sha256",
        "data_snapshot",
        "data_snapshot_sha256",
        "image",
        "evaluator_policy",
        "evaluator_policy_sha256",
        "output",
        "output_name",
        "resume",
        "milestones",
        "budget",
        "profile",
    }
    unknown = sorted(set(spec) - known)
    if unknown:
        from anchor.errors import did_you_mean

        raise BadInput(
            f"{spec_path}: unknown field '{unknown[0]}'{did_you_mean(unknown[0], sorted(known))}",
            detail={"field": unknown[0]},
        )
    if "output" not in spec:
        raise BadInput(f"{spec_path}: field 'output' (the output directory) is required", detail={"field": "output"})
    if spec.get("image") is None:
        raise BadInput(f"{spec_path}: field 'image' is required", detail={"field": "image"})
    return spec


def bundle_inputs(spec: dict[str, Any], base: Path) -> dict[str, Any]:
    """What ran, as the identity records it: the input files' SHA-256 (computed here) and the image."""
    return {f"{name}_sha256": _digest_field(spec, base, name) for name in INPUT_FILES} | {"image": spec["image"]}


def load_bundle_spec(spec_path: Path) -> tuple[BundleManifest, FileTreeManifest, Path]:
    """Build a bundle manifest from a TOML spec (see docs/manifest.md). Raises `BadInput` naming the field."""
    spec, base = read_bundle_spec(spec_path), spec_path.parent
    output_dir = (base / str(spec["output"])).resolve()
    tree = hash_tree(output_dir)
    data = {
        **bundle_inputs(spec, base),
        "output": {"name": spec.get("output_name"), **tree.summary()},
        "resume": spec.get("resume"),
        "milestones": spec.get("milestones"),
        "budget": spec.get("budget"),
        "profile": spec.get("profile"),
    }
    if data["budget"] is not None or data["profile"] is not None:
        data["version"] = 2
    return validated(BundleManifest, data, str(spec_path)), tree, output_dir
