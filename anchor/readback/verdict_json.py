"""The JSON parts of a verdict (`anchor.Verification`): the quorum that agreed, each anchor of a proof
stamped through services, each service still pending, what a result bundle ran, the later stamp that
superseded a path's proof. Fixed shapes, named here once, so that every door (`--json`, the API, the
explorer) and a script read the same keys, and a type checker holds the code that writes them to them."""

from __future__ import annotations

from typing import Literal, TypedDict

from anchor.errors import ErrorJson


class Quorum(TypedDict):
    """With several read endpoints: how many had to agree, who did, and what each dissenter said."""

    quorum: int
    endpoints: int
    agreeing: list[str]
    disagreeing: dict[str, str]
    """Each dissenting endpoint and the fields where its answer differs from the agreed one."""
    unreachable: list[str]


class AnchorRow(TypedDict, total=False):
    """One anchor of a proof stamped through services: where it is, and whether it verified (`ok`)."""

    service: str
    chain_id: int
    registry: str
    in_file: bool
    """False: fetched from its service now, not yet written into the file (`anchor upgrade` writes it)."""
    from_file: bool
    """The service is named by the proof file, not configured by whoever verifies."""
    ok: bool
    error: ErrorJson
    """Why it did not verify (`ok` False)."""
    submitter: str
    anchored_at: str
    block: int
    finality: str
    tx_hash: str
    duplicate_of: str
    """The service whose anchor is this same transaction: counted once."""
    confirmed: bool
    """The file holds its receipt and the chain names the service's account (or, offline, its receipt)."""
    confirmed_by: str


class PendingRow(TypedDict, total=False):
    """A service that holds a receipt and has not anchored it yet, or was down at stamp time."""

    service: str
    state: Literal["pending", "unreached"]
    since: str
    signer: str
    chain_id: int
    registry: str
    from_file: bool
    answered: bool
    """False: the service could not be asked for its anchor now."""


class BundleRan(TypedDict, total=False):
    """What a result bundle says ran, as its verified identity binds it (docs/manifest.md)."""

    mission_sha256: str
    data_snapshot_sha256: str
    image: str
    evaluator_policy_sha256: str
    budget: dict[str, object]
    profile: dict[str, object]
    environment: dict[str, object]
    sandbox: dict[str, object]
    spent: dict[str, object]


class LaterStamp(TypedDict):
    """The later stamp a path's current proof names, as that file states it (not verified by the verdict)."""

    proof: str
    manifest_digest: str
    anchored_block: int
