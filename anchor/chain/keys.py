"""Signing keys: never printed, logged, stored or carried in an exception.

Real chains take a key from the environment (ANCHOR_PRIVATE_KEY) or an encrypted eth-account keystore
(ANCHOR_KEYSTORE + ANCHOR_KEYSTORE_PASSWORD); the local chain falls back to anvil's public
development account. The `Signer` holds the account privately and shows only its address.

A researcher's own key (ANCHOR_RESEARCHER_KEY, or ANCHOR_RESEARCHER_KEYSTORE + _PASSWORD) signs its
lineage records as EIP-712 typed data (anchor.chain.signed); whoever relays them pays the gas with the
signing key above and never sees the researcher's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anchor.chain.node import LOCAL_CHAIN_ID
from anchor.errors import BadInput
from anchor.settings.model import Environment

SIGNATURE_TTL_S = Environment.signature_ttl_s.default

# anvil's first development account: published in anvil's own banner, worthless on any real chain.
_ANVIL_DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"


class Signer:
    """Signs transactions for one account; its repr and str show the address only.

    Made from a key (32 bytes), it knows its address at once (coincurve and keccak, ~40 ms to import)
    and signs the journal's transactions with libsecp256k1 (`sign_type2`); it loads eth_account only for
    what else it signs (EIP-712 records, a web3-built transaction): that import costs 1.2 s (eth_keyfile's
    py_ecc builds BLS pairing tables), which a flush or a stamp must not pay. Made from an
    eth_account account (a keystore), it uses that."""

    __slots__ = ("_secret", "_loaded", "address", "source", "ttl_s")

    def __init__(self, account: Any, source: str, ttl_s: int = SIGNATURE_TTL_S) -> None:
        if isinstance(account, bytes):
            self._secret: bytes | None = account
            self._loaded: Any = None
            self.address: str = address_of(account)
        else:
            self._secret, self._loaded, self.address = None, account, account.address
        self.source = source
        self.ttl_s = ttl_s
        """How long what it signs stays valid (ANCHOR_SIGNATURE_TTL_S): its EIP-712 deadline."""

    @property
    def _account(self) -> Any:
        if self._loaded is None:
            from eth_account import Account

            self._loaded = Account.from_key(self._secret)
        return self._loaded

    def sign(self, transaction: dict[str, Any]) -> bytes:
        raw: bytes = self._account.sign_transaction(transaction).raw_transaction
        return raw

    def sign_type2(
        self, *, chain_id: int, to: str, data: bytes, gas: int, nonce: int, max_fee: int, priority_fee: int
    ) -> tuple[bytes, bytes]:
        """(tx hash, raw bytes) of a signed EIP-1559 call to `to`. Pure (no RPC), so the effect protocol signs
        inside the journal transaction that records the transaction. A key loaded as bytes signs with
        libsecp256k1 (anchor.chain.eip1559), without eth_account's import; a keystore's account (whose
        decryption imported it already) signs through eth_account: the bytes are the same."""
        if self._secret is not None:
            from anchor.chain.eip1559 import signed_type2

            return signed_type2(
                self._secret,
                chain_id=chain_id,
                nonce=nonce,
                priority_fee=priority_fee,
                max_fee=max_fee,
                gas=gas,
                to=to,
                data=data,
            )
        signed = self._account.sign_transaction(
            {
                "type": 2,
                "chainId": chain_id,
                "to": to,
                "data": "0x" + data.hex(),
                "value": 0,
                "gas": gas,
                "nonce": nonce,
                "maxFeePerGas": max_fee,
                "maxPriorityFeePerGas": priority_fee,
            }
        )
        return bytes(signed.hash), bytes(signed.raw_transaction)

    def sign_lineage(self, chain_id: int, registry: str, fields: Any) -> Any:
        """An EIP-712 signed lineage record (anchor.chain.signed.SignedLineage) by this account."""
        from anchor.chain.signed import sign_lineage

        return sign_lineage(self._account, chain_id, registry, fields)

    def sign_retraction(self, chain_id: int, registry: str, commit: bytes, reason: bytes) -> Any:
        """An EIP-712 signed retraction (anchor.chain.signed.SignedRetraction) of this account's record."""
        from anchor.chain.signed import sign_retraction

        return sign_retraction(self._account, chain_id, registry, commit, reason, self.ttl_s)

    def __repr__(self) -> str:
        return f"Signer(address={self.address}, source={self.source})"

    __str__ = __repr__


def load_signer(chain_id: int, keystore: Path | None = None, env: Environment | None = None) -> Signer:
    """The signer for `chain_id` as `env` configures it (ANCHOR_PRIVATE_KEY, or `keystore` or
    ANCHOR_KEYSTORE with its password; None: no key configured). On a malformed key or keystore raises
    `BadInput` without the secret."""
    env = Environment() if env is None else env
    found = _configured(env, "private_key", keystore)
    if found is not None:
        return found
    if chain_id == LOCAL_CHAIN_ID:
        return Signer(bytes.fromhex(_ANVIL_DEV_KEY[2:]), "anvil-dev-account", env.signature_ttl_s)
    raise BadInput(f"no signing key for chain {chain_id}: set ANCHOR_PRIVATE_KEY or ANCHOR_KEYSTORE")


def load_researcher(env: Environment) -> Signer | None:
    """The researcher's own key, if `env` configures one; None means records are sent directly (the
    researcher is then whoever pays)."""
    return _configured(env, "researcher_key", None)


def address_of(secret: bytes) -> str:
    """The checksummed address of a secp256k1 private key; ValueError (naming nothing of it) if it is not one."""
    from coincurve import PrivateKey

    from anchor.manifest.keccak import checksum_address, keccak256

    if len(secret) != 32:
        raise ValueError("a private key is 32 bytes")
    public = PrivateKey(secret).public_key.format(compressed=False)[1:]  # refuses 0 and n or more
    return checksum_address(keccak256(public)[-20:].hex())


def _configured(env: Environment, key: str, keystore: Path | None) -> Signer | None:
    given, configured, secret, key_var, password_var = env._key_source(key)
    keystore = keystore or configured
    password = None if secret is None else secret.get_secret_value()
    if given:
        try:  # as eth_account reads a key: 64 hex digits, with or without 0x
            value = given.get_secret_value()
            return Signer(bytes.fromhex(value.removeprefix("0x")), f"env:{key_var}", env.signature_ttl_s)
        except Exception:  # noqa: BLE001 - any message could echo the key; say only which input failed
            raise BadInput(f"{key_var} is not a valid secp256k1 private key") from None
    if keystore is not None:
        from eth_account import Account

        if password is None:
            raise BadInput(f"{keystore}: set {password_var} to decrypt the keystore")
        try:
            encrypted = json.loads(keystore.read_text())
        except (OSError, ValueError):
            raise BadInput(f"{keystore}: not a readable keystore JSON file") from None
        try:
            account = Account.from_key(Account.decrypt(encrypted, password))
            return Signer(account, f"keystore:{keystore}", env.signature_ttl_s)
        except Exception:  # noqa: BLE001
            raise BadInput(f"{keystore}: wrong password or corrupt keystore") from None
    return None
