"""Models of the public API: frozen, because answers are values, not state."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

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
        json_schema_extra={"examples": [{"manifest_digest": "0x…", "state": "pending", "duplicate": False,
                                         "claimed_digest_matches": None, "files": 3}]},
    )  # fmt: skip
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
    metric: dict[str, Any] | None
    partial: dict[str, Any] | None
    measured_by: dict[str, Any] | None
    environment: dict[str, Any] | None
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
