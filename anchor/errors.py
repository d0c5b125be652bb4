"""The one error hierarchy of Anchor.

Every failure a user can act on is an `AnchorError` subclass carrying an exit code (CLI) and an HTTP
status (API). The CLI and the API translate them in exactly one place each, so a new error type only
needs to be declared here.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = [
    "AnchorError",
    "ArchiveRefused",
    "BadInput",
    "ChainUnreachable",
    "Conflict",
    "DeploymentMismatch",
    "ErrorJson",
    "ExitCode",
    "FileChanged",
    "Forbidden",
    "GitError",
    "GuardError",
    "IndexReorgTooDeep",
    "InsufficientFunds",
    "JournalBusy",
    "JournalDamaged",
    "JournalError",
    "LeaseLost",
    "MissionFailed",
    "NoQuorum",
    "NonceTooLow",
    "NotAnchored",
    "NotDeployed",
    "NotFinal",
    "Pending",
    "PolicyMismatch",
    "ProofContradicted",
    "ProofFormatError",
    "RateLimited",
    "RegistryRevert",
    "Retracted",
    "ServiceError",
    "StorageError",
    "Tampered",
    "TooLarge",
    "ToolchainMissing",
    "TrackingUnreachable",
    "Unauthorized",
    "Underpriced",
    "UnknownRegistry",
    "UnsafePath",
]
"""Public (docs/python.md): the exit codes and the hierarchy. The helpers below that build a hint
(`did_you_mean`, …) are internal."""


class ExitCode(IntEnum):
    """Process exit codes of the `anchor` CLI; documented in `anchor --help`."""

    OK = 0
    INTERNAL = 1
    """A bug in anchor, and only that: an exception no part of anchor raised on purpose. Every
    `AnchorError` carries a code of its own (a test holds every class to it)."""
    BAD_INPUT = 2
    NOT_ANCHORED = 3
    TAMPERED = 4
    CHAIN_UNREACHABLE = 5
    DEPLOYMENT_MISMATCH = 6
    CONFLICT = 7
    TOOLCHAIN = 8
    UNKNOWN_REGISTRY = 9
    POLICY = 10
    NOT_FINAL = 11
    NO_QUORUM = 12
    MISSION_FAILED = 13
    PENDING = 14
    STORAGE = 15
    RETRACTED = 16
    JOURNAL = 17
    """The journal cannot be used as it is: another writer held it past the timeout, it is of a schema
    this anchor does not speak, PostgreSQL cannot be reached, a replica's flush lease was taken over,
    or its rows disagree (a batch's items do not rebuild its root). Nothing was half-written."""
    GIT = 18
    """A git command of the research harness failed in the user's repository (left as it was)."""
    ABORTED = 130
    """Ctrl-C (128 + SIGINT): `aborted` on stderr; nothing is sent after it (anchor.settings.interrupt)."""
    READER_GONE = 141
    """Whoever read the output closed it early (`| head -1`): 128 + SIGPIPE, as a shell reports a Unix
    tool that a closed pipe stopped. Not an error of anchor's, so nothing is said on stderr."""


class AnchorError(Exception):
    """Root of every error Anchor raises on purpose. Raise one of its kinds, never the root itself: its
    exit code (1) is the one kept for bugs."""

    exit_code: ExitCode = ExitCode.INTERNAL
    http_status: int = 500
    code: str = "internal"
    step: int | None = None
    """The verification checklist's step that raised it (anchor.readback.checklist.STEPS), None elsewhere:
    which check failed, said by its number rather than guessed from the message."""

    def __init__(self, message: str, *, detail: Mapping[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail: dict[str, object] = detail if isinstance(detail, dict) else dict(detail or {})
        """What the failure names (the field, the files, the block…): JSON values, a door renders them."""

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle with the detail (the API's decoder process raises these across a process boundary)."""
        return (_rebuild, (type(self), self.message, self.detail))

    def said_as(self, name: Callable[[str], str]) -> str:
        """The message in a door's own words. A refusal of one input the library takes (a parameter:
        `min_finality`, `require`, `services`) names it in `detail["field"]` and opens with that name, as
        a Python caller and the API's query string spell it; other inputs a hint names are listed in
        `detail["inputs"]` and written as the library names them. A door whose users spell them otherwise
        says them here, in one place (the CLI: `--min-finality`). Any other message is said as it is."""
        import re

        message = self.message
        field = self.detail.get("field")
        if isinstance(field, str) and field and message.startswith(field) and message[len(field) :][:1] in " :":
            message = name(field) + message[len(field) :]
        inputs = self.detail.get("inputs")
        for other in inputs if isinstance(inputs, list | tuple) else ():
            if not isinstance(other, str) or not other.isidentifier():
                continue  # the names of our own inputs, never words from data
            message = re.sub(rf"(?<![\w-]){re.escape(other)}(?![\w-])", name(other).replace("\\", r"\\"), message)
        return message

    def diagnostic_lines(self, name: Callable[[str], str] | None = None) -> list[str]:
        """The message (said as `said_as(name)` when a door names the inputs its own way), then the detail
        fields, one per line (each may still hold data's own escapes)."""
        message = self.message if name is None else self.said_as(name)
        shown = []
        for key, value in self.detail.items():
            rows = isinstance(value, list | tuple) and (not value or any(isinstance(v, dict) for v in value))
            if key == "inputs" or value is None or isinstance(value, dict) or rows:
                continue  # rows of a verdict, or nothing known (not "reason: None"): `--json` holds them
            if isinstance(value, list | tuple):
                value = ", ".join(map(str, value))
            elif key == "field" and name is not None and isinstance(value, str):
                value = name(value)  # the input refused, said as the door says it (`--repo` in the CLI)
            shown.append(f"  {key}: {value}")
        return [message, *shown]

    def diagnostics(self) -> str:
        """A human-readable explanation, with the detail fields one per line."""
        return "\n".join(self.diagnostic_lines())

    def to_dict(self) -> ErrorJson:
        """The typed error shape shared by `--json` output and the API: code, message, detail."""
        return {"code": self.code, "message": self.message, "detail": self.detail}


class ErrorJson(TypedDict):
    """The typed error as JSON (`--json`, the API's error body)."""

    code: str
    message: str
    detail: dict[str, object]


def _rebuild(cls: type[AnchorError], message: str, detail: dict[str, object]) -> AnchorError:
    return cls(message, detail=detail)


class BadInput(AnchorError):
    """The input (a path, a field, a file) is malformed or not allowed; nothing was written."""

    exit_code = ExitCode.BAD_INPUT
    http_status = 422
    code = "bad_input"


def did_you_mean(given: str, choices: Any) -> str:
    """The hint `(did you mean X?)`, with a space before it, for the choice closest to a mistyped `given`;
    empty when none is close. The one way a refusal of a word from a known list suggests what was meant."""
    import difflib

    near = difflib.get_close_matches(given, [str(c) for c in choices], n=1)
    return f" (did you mean {near[0]}?)" if near else ""


def did_you_mean_path(path: Any) -> str:
    """The hint `(did you mean P?)`, with a space before it, for a path that does not exist: the closest
    existing name, component by component from the first missing one (`examples/research/contract.tom`
    -> `examples/research/contract.toml`); empty when nothing is close."""
    import difflib
    import os
    from pathlib import Path

    path = Path(path)
    parts = path.parts
    base = Path(parts[0]) if path.is_absolute() else Path(".")
    for i, part in enumerate(parts[1:] if path.is_absolute() else parts):
        candidate = base / part
        if not candidate.exists():
            try:
                names = [entry.name for entry in os.scandir(base)]
            except OSError:
                return ""
            match = difflib.get_close_matches(part, names, n=1, cutoff=0.7)
            if not match:
                return ""
            rest = parts[(i + 2 if path.is_absolute() else i + 1) :]
            fixed = base / match[0]
            return f" (did you mean {fixed.joinpath(*rest) if fixed.joinpath(*rest).exists() else fixed}?)"
        base = candidate
    return ""


class UnsafePath(BadInput):
    """A path in a tree is a link, a device, a FIFO, escapes the root or cannot be read."""

    code = "unsafe_path"


class FileChanged(BadInput):
    """A file changed while it was being hashed; its digest would be half old, half new."""

    code = "file_changed"


class ProofFormatError(BadInput):
    """A proof file cannot be decoded: bad JSON, wrong format tag, unsupported version, bad field."""

    code = "bad_proof"


class NotAnchored(AnchorError):
    """The data is intact, but no anchor for it exists on the chain."""

    exit_code = ExitCode.NOT_ANCHORED
    http_status = 404
    code = "not_anchored"


class Tampered(AnchorError):
    """The data differs from what was anchored; `detail` names the files."""

    exit_code = ExitCode.TAMPERED
    http_status = 409
    code = "tampered"


class ProofContradicted(Tampered):
    """A field of the proof file itself (its anchor's block or transaction, a sealed header, receipt, trie
    node or later state) is not what the chain holds, or not what the trusted block hash leads to: the
    file was edited. Tampered as any edit (exit 4, code `tampered`, the field named), but answered 422
    over HTTP: what is refused is the document the client sent, which proves nothing as it stands, where
    409 says the data differs from a proof that holds."""

    http_status = 422


class ChainUnreachable(AnchorError):
    """The RPC endpoint did not answer (refused, timed out, or failed)."""

    exit_code = ExitCode.CHAIN_UNREACHABLE
    http_status = 503
    code = "chain_unreachable"


class NonceTooLow(ChainUnreachable):
    """The node says the nonce was already used: reconcile, never resend blindly."""

    code = "nonce_too_low"


class Underpriced(ChainUnreachable):
    """The node will not take the transaction at its fees: replace it with a fee bump."""

    code = "underpriced"


class IndexReorgTooDeep(ChainUnreachable):
    """The chain changed below the blocks the chain-only index keeps hashes for: rebuild the index."""

    code = "reorg_too_deep"


class DeploymentMismatch(AnchorError):
    """The code at the registry address is not the recorded registry: refuse to answer."""

    exit_code = ExitCode.DEPLOYMENT_MISMATCH
    http_status = 502
    code = "deployment_mismatch"


class NotDeployed(DeploymentMismatch):
    """No deployment of the registry is recorded for this chain."""

    code = "not_deployed"


class Conflict(AnchorError):
    """A write conflicts with what is already recorded."""

    exit_code = ExitCode.CONFLICT
    http_status = 409
    code = "conflict"


class InsufficientFunds(Conflict):
    """The signing account cannot pay for the transaction. `detail` names the sender, its
    balance and the most the transaction could cost; the journal parks the effect as failed, so nothing
    else waits on it, until `journal retry` (after funding) or `journal abandon`."""

    code = "insufficient_funds"


class RegistryRevert(Conflict):
    """The registry reverted with one of its custom errors; `detail` carries its arguments."""

    code = "registry_revert"


class ToolchainMissing(AnchorError):
    """A required tool (anvil, the solc shim, forge) is not installed: its message says how to get it where
    anchor runs (Foundry on PATH for an installed package; `make install` in a source checkout)."""

    exit_code = ExitCode.TOOLCHAIN
    code = "toolchain_missing"


class UnknownRegistry(AnchorError):
    """The proof names a registry address that is not the one trusted for its chain (the deployment
    record, or the address given with `--registry`): a copy deployed by anyone proves nothing."""

    exit_code = ExitCode.UNKNOWN_REGISTRY
    http_status = 422
    code = "unknown_registry"


class Retracted(AnchorError):
    """Anchored, and since retracted on chain by whoever anchored it (its submitter, or the lineage
    record's researcher): the record stands, its claim is withdrawn. The detail says when, by whom and
    the reason's digest (and the reason's text where the proof file keeps it)."""

    exit_code = ExitCode.RETRACTED
    http_status = 410
    code = "retracted"


class NotFinal(AnchorError):
    """Anchored, but the block is not yet as final as `--min-finality` requires (it could still reorg)."""

    exit_code = ExitCode.NOT_FINAL
    http_status = 425
    code = "not_final"


class NoQuorum(AnchorError):
    """The read endpoints disagree and no answer is backed by the required number of them."""

    exit_code = ExitCode.NO_QUORUM
    http_status = 502
    code = "no_quorum"


class PolicyMismatch(AnchorError):
    """Verified, but not as the verifier required: another submitter, or anchored later than allowed."""

    exit_code = ExitCode.POLICY
    http_status = 412
    code = "policy_mismatch"


class ArchiveRefused(BadInput):
    """An uploaded archive broke one of the decoder's bounds (anchor.ingest.archive)."""

    code = "archive_refused"


class JournalError(AnchorError):
    """The journal cannot be used as it is (locked too long, of another schema version, unreachable, or
    its rows disagree with each other)."""

    exit_code = ExitCode.JOURNAL
    http_status = 503
    code = "journal"


class JournalBusy(JournalError):
    """Another process held the journal's write lock longer than the busy timeout."""

    http_status = 503
    code = "journal_busy"


class LeaseLost(JournalError):
    """This replica's flush lease expired while it stalled and another replica took it over: its
    fencing token is stale, so it must not commit (nothing it tried was)."""

    http_status = 503
    code = "lease_lost"


class GitError(AnchorError):
    """A git command of the research harness failed (the repository is the user's: we report, never repair)."""

    exit_code = ExitCode.GIT
    code = "git"


class GuardError(AnchorError):
    """A proposal the git guard refuses: outside the fence, uncommitted, or already scored."""

    exit_code = ExitCode.CONFLICT
    http_status = 409
    code = "guard"


class Unauthorized(AnchorError):
    """A write to the REST service without an accepted bearer token. (The service's own refusal of a
    request: the CLI, a client of services, says a service's 401 as `ChainUnreachable`.)"""

    exit_code = ExitCode.BAD_INPUT
    http_status = 401
    code = "unauthorized"


class Forbidden(Unauthorized):
    """An accepted token without the scope this route needs (submit, relay, admin)."""

    http_status = 403
    code = "forbidden"


class RateLimited(AnchorError):
    """A public calendar's per-client rate or its queue is full: retry after `Retry-After` seconds."""

    exit_code = ExitCode.CHAIN_UNREACHABLE
    http_status = 429
    code = "too_many_requests"


class TooLarge(AnchorError):
    """A request body past the service's limit (read no further than the limit)."""

    exit_code = ExitCode.BAD_INPUT
    http_status = 413
    code = "request_too_large"


class ResearcherFailed(AnchorError):
    """One researcher of a session (its own `anchor research run` process) failed: the session ends
    with that researcher's exit code (`detail["exit_code"]`), and its message."""

    code = "researcher_failed"

    def __init__(self, message: str, *, detail: dict[str, Any] | None = None) -> None:
        super().__init__(message, detail=detail)
        said = self.detail.get("exit_code")
        self.exit_code = ExitCode(said) if isinstance(said, int) and said in list(ExitCode) else ExitCode.INTERNAL


class MissionFailed(AnchorError):
    """A mission's command failed or ran out of its budget: nothing is anchored."""

    exit_code = ExitCode.MISSION_FAILED
    http_status = 422
    code = "mission_failed"


class Pending(AnchorError):
    """Accepted by an anchoring service (a signed receipt), not anchored yet: `anchor upgrade` fetches
    the complete proof once the service's next batch is mined. Not 0 (nothing is on chain yet) and
    not 3 (something is on its way)."""

    exit_code = ExitCode.PENDING
    http_status = 425
    code = "pending"


class ServiceError(AnchorError):
    """An anchoring service (client mode) did not take the submission: unreachable, refused the
    token, or answered something that is not what it was asked. `detail` names the service."""

    exit_code = ExitCode.CHAIN_UNREACHABLE
    http_status = 502
    code = "service"


class TrackingUnreachable(ServiceError):
    """An MLflow tracking server (anchor.mlflow) could not be asked: down, answering 5xx, or not an MLflow
    server at that address. Nothing was written to the run. `detail` names the server (scheme, host,
    port: never a credential in its URL)."""

    code = "tracking_unreachable"


class StorageError(AnchorError):
    """The disk is full, or the filesystem read-only, where Anchor had to write (a proof, the journal,
    the ledger): nothing half-written is left and nothing journaled is lost; free space or restore write
    access and run the same command again. `detail` names the path."""

    exit_code = ExitCode.STORAGE
    http_status = 507
    code = "storage"


class JournalDamaged(StorageError):
    """The journal file is not a database any more (truncated or overwritten outside Anchor): nothing
    is written to it; restore it from a backup, or move it aside to start an empty one."""

    http_status = 503
    code = "journal_damaged"
