"""The service's receipt key: signs what it accepted, and is never the funded key.

Why a key of its own: the funded key pays gas and must stay in one place; a receipt key only vouches
"accepted at T". It comes from ANCHOR_RECEIPT_KEY, else `<data dir>/receipt.key` (0600, made at first
use), and is refused if it is the funded key: a service that signed receipts with its funded key would
put that key on every path that signs one.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anchor.errors import BadInput
from anchor.layout import DataDir
from anchor.proof.receipt import SERVICE_NAME, Receipt, signing_hash
from anchor.record import Value
from anchor.settings.session import Settings


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ReceiptSigner(Value):
    """Holds the receipt key privately: its repr shows the address and name only."""

    _account: Any
    address: str
    name: str
    history: tuple[dict[str, Any], ...] = ()
    """Every receipt key this service has signed with, oldest first: {address, since, until}; the
    current one has until None. Published at /v1/service, so a receipt signed before a rotation is
    still checked against the key that signed it, for the time that key was in use."""

    _secp256k1: Any = field(default=None, repr=False, compare=False)
    """The same key as libsecp256k1 holds it, made once (not on every receipt)."""

    def __post_init__(self) -> None:
        from coincurve import PrivateKey

        object.__setattr__(self, "_secp256k1", PrivateKey(bytes(self._account.key)))

    def __repr__(self) -> str:
        return f"ReceiptSigner(address={self.address}, name={self.name!r})"

    def sign(self, chain_id: int, registry: str, digest: str, accepted_at: int) -> Receipt:
        """Sign the receipt's EIP-712 hash with libsecp256k1 (coincurve): RFC 6979 nonces and low s, so
        the same bytes eth-account and `cast wallet sign` give, v in {27, 28}. Called on every
        submission: eth-account re-parsed the key and re-derived its public key each time (about 0.2
        ms of the 0.3 a receipt cost)."""
        registry = _checksummed(registry)
        hashed = signing_hash(chain_id, registry, digest, accepted_at, self.name)
        raw = self._secp256k1.sign_recoverable(hashed, hasher=None)
        return Receipt(
            url="",
            service=self.name,
            signer=self.address,
            manifest_digest=digest,
            chain_id=chain_id,
            registry=registry,
            accepted_at=accepted_at,
            signature="0x" + (raw[:64] + bytes([raw[64] + 27])).hex(),
        )


@functools.lru_cache(maxsize=64)
def _checksummed(address: str) -> str:
    from anchor.chain.abi import checksum_address

    return checksum_address(address)


def receipt_key_path(data_dir: Path) -> Path:
    return DataDir(data_dir).receipt_key


def _make_receipt_key(path: Path, key_hex: str) -> None:
    """Publish a new key at `path` whole or not at all: written and synced under a name of its own, then
    hard-linked into place, which fails if another worker published first (then theirs is read). Creating
    `path` itself and then writing it let a second worker read it empty in between ("not a receipt key"
    for a good submission, seen with two API workers on a fresh data dir)."""
    import tempfile

    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # 0600, a fresh name (O_EXCL)
    draft = Path(name)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(key_hex + "\n")
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileExistsError):  # another worker published first: read theirs
            os.link(draft, path)
    finally:
        draft.unlink(missing_ok=True)


def load_receipt_signer(settings: Settings, funded_address: str | None = None) -> ReceiptSigner:
    """The service's receipt signer (made and kept in the data dir on first use). Refuses the funded key."""
    from eth_account import Account

    from anchor.files import private_dir

    env_key = settings.env.receipt_key
    if env_key:
        try:
            account = Account.from_key(env_key.get_secret_value())
        except Exception:  # noqa: BLE001 - any message could echo the key
            raise BadInput("ANCHOR_RECEIPT_KEY is not a valid secp256k1 private key") from None
    else:
        path = receipt_key_path(settings.data_dir)
        if not path.is_file():
            private_dir(settings.data_dir)
            _make_receipt_key(path, Account.create().key.hex())
        try:
            account = Account.from_key(path.read_text().strip())
        except Exception:  # noqa: BLE001
            raise BadInput(f"{path}: not a receipt key (delete it to have a new one made)") from None
    if funded_address is not None and account.address.lower() == funded_address.lower():
        raise BadInput(
            "the receipt key is the funded key: set ANCHOR_RECEIPT_KEY to a key of its own (receipts are"
            " signed on every submission; the funded key must sign nothing but transactions)",
            detail={"field": "ANCHOR_RECEIPT_KEY"},
        )
    history = record_signer(settings.data_dir, account.address)
    return ReceiptSigner(account, account.address, service_name(settings), tuple(history))


def record_signer(data_dir: Path, address: str, now: int | None = None) -> list[dict[str, Any]]:
    """The receipt keys this service has used, oldest first ({address, since, until}), with `address`
    the current one: a new key (ANCHOR_RECEIPT_KEY changed, receipt.key replaced) closes the last entry
    at `now` and opens its own. Kept in `<data dir>/receipt.signers.json` (public addresses only)."""
    import time

    from anchor.files import atomic_write

    path = DataDir(data_dir).receipt_signers
    try:
        history = json.loads(path.read_text())
        valid = isinstance(history, list) and all(
            isinstance(h, dict) and isinstance(h.get("address"), str) and isinstance(h.get("since"), int)
            for h in history
        )
    except FileNotFoundError:
        history, valid = [], True
    except ValueError:
        valid = False
    if not valid:
        raise BadInput(
            f"{path}: not a receipt-key history (a JSON list of {{address, since, until}})", detail={"file": str(path)}
        )
    if history and history[-1]["address"].lower() == address.lower():
        return list(history)
    at = int(time.time()) if now is None else now
    if history:
        history[-1]["until"] = at
    history.append({"address": address, "since": at if history else 0, "until": None})  # the first: since ever
    atomic_write(path, (json.dumps(history, indent=1) + "\n").encode())
    return list(history)


def service_name(settings: Settings) -> str:
    """ANCHOR_SERVICE_NAME, else the public URL `anchor serve` recorded, else "anchor service"."""
    from anchor.chain.explorer import service_record

    name = settings.env.service_name
    if not name:
        try:
            name = str(json.loads(service_record(settings.data_dir).read_text())["public_url"])
        except (OSError, ValueError, KeyError, TypeError):
            name = "anchor service"
    if not SERVICE_NAME.match(name):
        raise BadInput("ANCHOR_SERVICE_NAME: 1 to 200 printable ASCII characters", detail={"field": "service_name"})
    return name
