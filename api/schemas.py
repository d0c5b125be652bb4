"""Models of the public API: frozen, because answers are values, not state."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from anchor.library.verifier import Verification

_frozen = ConfigDict(frozen=True)


class Health(BaseModel):
    model_config = _frozen
    status: str
    version: str


class Ready(BaseModel):
    """What `/ready` checked: the registry's code on chain at `block`, and the journal answering."""

    model_config = _frozen
    status: str
    version: str
    chain_id: int
    registry: str
    block: int
    journal: str


class ErrorPublic(BaseModel):
    """The one error shape of every 4xx and 5xx answer."""

    model_config = ConfigDict(
        frozen=True,
        json_schema_extra={
            "examples": [{"code": "not_anchored", "message": "no anchor known for manifest 0x…", "detail": {}}]
        },
    )
    code: str
    message: str
    detail: dict[str, Any]


class FileVerification(BaseModel):
    """An uploaded file found in an anchored bundle: its self-contained proof, verified live."""

    model_config = _frozen
    blake3: str
    size: int
    path: str
    proof: dict[str, Any]
    verification: dict[str, Any]


class SearchHit(BaseModel):
    model_config = _frozen
    kind: str = Field(description="manifest | file | batch_root | lineage | attempt | transaction")
    key: str
    detail: dict[str, Any]


class SearchResults(BaseModel):
    model_config = _frozen
    data: list[SearchHit]
    count: int
    read_at_block: int | None = Field(description="block of the live reads behind each hit's `anchored`")


class BatchPublic(BaseModel):
    model_config = _frozen
    root: str
    anchored: bool
    read_at_block: int
    record: dict[str, Any] | None
    items: list[dict[str, Any]]
    links: dict[str, str]


class AttemptPublic(BaseModel):
    model_config = _frozen
    commit: str
    lineage_on_chain: dict[str, Any] | None
    read_at_block: int
    manifests: list[dict[str, Any]]
    links: dict[str, str]


class LineagePublic(BaseModel):
    model_config = _frozen
    commit: str
    researcher: str
    ancestors: list[str]
    descendants: list[str]
    champion_chain: list[str]
    lineage_on_chain: dict[str, bool | None]
    read_at_block: int


class DeploymentPublic(BaseModel):
    model_config = _frozen
    deployment: dict[str, Any]
    code_matches: bool
    read_at_block: int
    links: dict[str, str]


class SourceMaterial(BaseModel):
    """Everything forge verify-contract, Sourcify or an Etherscan-style explorer needs."""

    model_config = _frozen
    contract: str
    compiler_version: str
    settings: dict[str, Any]
    constructor_arguments: str
    standard_json_input: dict[str, Any]
    address: str
    chain_id: int
    metadata: str | None = None
    """solc's metadata JSON, whose hash ends the deployed runtime (a Sourcify "full match")."""
    recorded: bool = False
    """True: the material recorded when it was deployed; False: rebuilt from this installation's source."""


class Submitted(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "manifest_digest": "0x…",
                    "state": "pending",
                    "duplicate": False,
                    "claimed_digest_matches": None,
                    "files": 3,
                }
            ]
        },
    )
    manifest_digest: str
    state: str
    duplicate: bool
    claimed_digest_matches: bool | None = Field(description="None when no digest was claimed")
    files: int
    receipt: dict[str, Any] | None = Field(
        default=None, description="the service's signed receipt (EIP-712; docs/calendar.md): acceptance, not anchoring"
    )


class ManifestSubmission(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    manifest: dict[str, Any] = Field(description="the identity object (docs/manifest.md)")
    files: list[dict[str, Any]] | None = Field(
        default=None, description="listing that must rebuild the identity's tree"
    )
    annotations: dict[str, Any] = Field(default_factory=dict)
    claimed_digest: str | None = Field(
        default=None, description="compared with the digest computed here, never adopted"
    )


class ResearchAttempt(BaseModel):
    """One attempt of a researcher, as its verified ledger records it (docs/research.md)."""

    model_config = _frozen
    search: str
    """The search it belongs to: 12 hex of the BLAKE3 of its ledger's first row digest (stable, reveals no path)."""
    seq: int
    """Its row in the ledger (the `started` rows, proposals turned away and other researchers' rows count too)."""
    trial: int
    """Its trial number: 1 for the researcher's first attempt in the search (as the CLI and explorer say)."""
    commit: str
    parent: str
    status: str
    kept: bool
    metric: Mapping[str, object] | None
    partial: Mapping[str, object] | None
    measured_by: Mapping[str, str] | None
    environment: Mapping[str, object] | None
    """Version 4 attempts: interpreter, lock, host or image, input digests (docs/manifest.md, "Environment")."""
    claims_differ: bool | None
    started_at: str | None
    duration_ms: int | None
    exit_code: int | None
    attempt_digest: str
    diff_blake3: str
    contract_digest: str
    sandbox: str | None
    links: dict[str, str]


class ResearchAttemptPage(BaseModel):
    model_config = _frozen
    researcher: str
    total: int
    """Attempts matching the filters, over every search this service knows."""
    offset: int
    limit: int
    next_offset: int | None
    attempts: list[ResearchAttempt]


class ResearchVerdict(BaseModel):
    """`anchor research verify` of one search (anchor.research.verdict.verify_search), as the API gives
    it: counts and chain figures only (no path of the server's: the ledger's and the repositories'
    locations stay on the host)."""

    model_config = _frozen
    search: str
    """The search id (the first 12 hex of the BLAKE3 of its first row's digest)."""
    verified: bool = True
    entries: int
    head: str
    attempts: int
    anchored_checkpoints: int
    """Ledger heads read back from their proof files and matched."""
    anchored_length: int
    """The longest anchored head: rows 0..anchored_length-1 were on chain by `anchored_block`."""
    anchored_block: int | None
    chain_records: int
    """Checkpoint records found on chain by the contract digest, from trusted addresses."""
    chain_trusted: list[str]
    chain_untrusted: list[str]
    commits: int
    run_dirs: int
    legacy_entries: int
    final_runs: int


def _twin(hint: object) -> object:
    """`hint` with each `typing.TypedDict` in it made again with `typing_extensions.TypedDict`, the one
    pydantic reads on Python 3.11 (the library keeps the stdlib's: typing_extensions would cost every
    `anchor verify` its import)."""
    import typing

    import typing_extensions

    if typing.is_typeddict(hint):
        fields = {name: _twin(inner) for name, inner in typing.get_type_hints(hint).items()}
        return typing_extensions.TypedDict(hint.__name__, fields, total=hint.__total__)  # type: ignore[attr-defined,operator]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is None or not args:
        return hint
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_twin(a) for a in args)]  # noqa: UP007 - made from a runtime tuple
    if origin is typing.Literal:
        return hint
    return origin[tuple(_twin(a) for a in args)]


def schema_of(record: type) -> type[BaseModel]:
    """The pydantic model of a library record (a frozen dataclass), field for field, for the API's schema
    and its answers: the same fields, defaults and types, nothing described twice."""
    import dataclasses
    import typing

    from pydantic import create_model

    hints = typing.get_type_hints(record)
    fields: dict[str, Any] = {
        f.name: (_twin(hints[f.name]), ... if f.default is dataclasses.MISSING else f.default)
        for f in dataclasses.fields(record)
    }
    return create_model(record.__name__, __config__=_frozen, __doc__=record.__doc__, **fields)


VerificationPublic = schema_of(Verification)
"""`anchor.Verification` as the API answers it."""
