"""Build, sign, send and confirm one transaction, decoding registry reverts into typed errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hexbytes import HexBytes

from anchor.chain.artifact import CONTRACTS, registry_abi
from anchor.errors import AnchorError, ChainUnreachable, InsufficientFunds, NonceTooLow, RegistryRevert, Underpriced

if TYPE_CHECKING:
    from web3 import Web3

    from anchor.chain.keys import Signer

RECEIPT_TIMEOUT_S = 120.0


def _error_selectors() -> dict[str, tuple[str, list[str]]]:
    from eth_hash.auto import keccak

    table = {}
    for item in (entry for version in CONTRACTS for entry in registry_abi(version)):  # v1 and v2 errors
        if item["type"] == "error":
            types = [arg["type"] for arg in item["inputs"]]
            signature = f"{item['name']}({','.join(types)})"
            table["0x" + keccak(signature.encode())[:4].hex()] = (item["name"], types)
    return table


def decode_revert(data: str | None) -> RegistryRevert | None:
    """The registry custom error in revert `data`, with its decoded arguments; None if unknown."""
    if not isinstance(data, str) or len(data) < 10:
        return None
    found = _error_selectors().get(data[:10].lower())
    if found is None:
        return None
    name, types = found
    from eth_abi.abi import decode

    values = decode(types, bytes.fromhex(data[10:]))
    args = ["0x" + v.hex() if isinstance(v, bytes) else v for v in values]
    return RegistryRevert(
        f"the registry refused: {name}({', '.join(map(str, args))})", detail={"error": name, "args": args}
    )


def send(w3: Web3, chain_id: int, signer: Signer, call: Any) -> dict[str, Any]:
    """Sign and send `call` (a web3 contract function or constructor); return the mined receipt.

    Raises `RegistryRevert` with the decoded custom error if the registry would revert,
    `ChainUnreachable` if the node stops answering.
    """
    from web3.exceptions import ContractCustomError, ContractLogicError, TimeExhausted, Web3RPCError

    tx: dict[str, Any] = {}
    try:
        tx = call.build_transaction({"from": signer.address, "chainId": chain_id})
        tx["nonce"] = w3.eth.get_transaction_count(w3.to_checksum_address(signer.address), "pending")
        raw = signer.sign(tx)
        tx_hash = w3.eth.send_raw_transaction(raw)
        receipt = dict(w3.eth.wait_for_transaction_receipt(tx_hash, timeout=RECEIPT_TIMEOUT_S, poll_latency=0.05))
    except Web3RPCError as exc:  # the node refused it: an unfunded key (issue 48: was "this is a bug")
        if "insufficient funds" in str(exc).lower():
            gas = int(tx.get("gas", 0) or 0)
            raise unfunded(w3, signer.address, gas, int(tx.get("maxFeePerGas", 0) or 0), chain_id) from None
        raise ChainUnreachable(f"the node refused the transaction: {_said(exc)}") from None
    except ContractCustomError as exc:
        decoded = decode_revert(exc.data if isinstance(exc.data, str) else None)
        raise decoded or RegistryRevert(f"the registry reverted: {exc.data}") from None
    except ContractLogicError as exc:
        raise RegistryRevert(f"the transaction would revert: {exc.message}") from None
    except TimeExhausted:
        raise ChainUnreachable(f"no receipt within {RECEIPT_TIMEOUT_S:.0f}s") from None
    except AnchorError:
        raise
    except (ConnectionError, OSError) as exc:
        raise ChainUnreachable(f"the chain stopped answering ({type(exc).__name__})") from None
    if receipt["status"] != 1:
        raise RegistryRevert("the transaction was mined but reverted", detail={"tx_hash": tx_hash.hex()})
    return receipt


# ---------------------------------------------------------------------------------------------
# Step-wise primitives for the journal's effect protocol: each step is recorded before the next.


def fee_quote(w3: Web3) -> tuple[int, int]:
    """(max fee, priority fee) per gas: twice the pending base fee plus the suggested tip."""
    block = w3.eth.get_block("pending")
    base = int(block.get("baseFeePerGas", 0) or 0)
    priority = int(w3.eth.max_priority_fee)
    return 2 * base + priority, priority


def estimate_gas(call: Any, sender: str) -> int:
    """Gas for `call` plus a 20% margin; a revert surfaces here as a typed `RegistryRevert`."""
    from web3.exceptions import ContractCustomError, ContractLogicError

    try:
        return int(call.estimate_gas({"from": sender}) * 12 // 10)
    except ContractCustomError as exc:
        decoded = decode_revert(exc.data if isinstance(exc.data, str) else None)
        raise decoded or RegistryRevert(f"the registry reverted: {exc.data}") from None
    except ContractLogicError as exc:
        raise RegistryRevert(f"the transaction would revert: {exc.message}") from None


def replay_revert(call: Any, sender: str, block: int) -> RegistryRevert:
    """Why a mined transaction reverted: the same call replayed on the state of its block, decoded
    into the registry's custom error when it is one (receipts carry no revert data)."""
    from web3.exceptions import ContractCustomError, ContractLogicError

    try:
        call.call({"from": sender}, block_identifier=block)
    except ContractCustomError as exc:
        decoded = decode_revert(exc.data if isinstance(exc.data, str) else None)
        return decoded or RegistryRevert(f"the anchoring transaction reverted: {exc.data}")
    except ContractLogicError as exc:
        return RegistryRevert(f"the anchoring transaction reverted: {exc.message}")
    return RegistryRevert("the anchoring transaction reverted (the replay on its block succeeds: a race)")


def sign_tx(
    signer: Signer, chain_id: int, to: str, data: str, gas: int, nonce: int, max_fee: int, priority_fee: int
) -> tuple[bytes, bytes]:
    """(tx hash, raw signed EIP-1559 tx). Pure: no RPC, so it can run inside a journal transaction."""
    from eth_hash.auto import keccak

    raw = signer.sign(
        {
            "type": 2,
            "chainId": chain_id,
            "to": to,
            "data": data,
            "value": 0,
            "gas": gas,
            "nonce": nonce,
            "maxFeePerGas": max_fee,
            "maxPriorityFeePerGas": priority_fee,
        }
    )
    return keccak(raw), raw


def broadcast(w3: Web3, raw: bytes) -> None:
    """Send signed bytes; the node already knowing them is success (a resend of the same tx)."""
    from web3.exceptions import Web3RPCError

    try:
        w3.eth.send_raw_transaction(raw)
    except Web3RPCError as exc:
        text = str(exc).lower()
        if "already known" in text or "already imported" in text:
            return
        if "nonce too low" in text or "nonce has already been used" in text:
            raise NonceTooLow("the node reports the nonce as used") from None
        if "underpriced" in text or "base fee" in text or "fee too low" in text:
            raise Underpriced(f"the node refuses the fees: {exc}") from None
        if "insufficient funds" in text:
            raise InsufficientFunds("the node refused the transaction: the sender cannot pay for it") from None
        raise ChainUnreachable(f"the node refused the transaction: {_said(exc)}") from None


def _said(exc: Exception) -> str:
    """A node's refusal in words: its JSON-RPC `message`, not the Python repr of the error dict."""
    arg = exc.args[0] if exc.args else None
    if isinstance(arg, dict) and isinstance(arg.get("message"), str):
        return f"{arg['message']} (code {arg.get('code')})"
    return str(exc)


def unfunded(w3: Web3, sender: str, gas: int, max_fee: int, chain_id: int, effect_id: int | None = None) -> Any:
    """The `InsufficientFunds` verdict on `sender`: its balance now and the most the transaction costs."""
    from anchor.errors import InsufficientFunds

    balance = int(w3.eth.get_balance(w3.to_checksum_address(sender)))
    cost = gas * max_fee
    needs = (f"the transaction may cost up to {ether(cost)} (gas {gas} x max fee {max_fee} wei)" if cost
             else "the transaction costs more than that")  # fmt: skip
    then = (f"fund it, then `anchor journal retry {effect_id}` (or `anchor journal abandon {effect_id}`)"
            if effect_id is not None else "fund it and run the same command again")  # fmt: skip
    return InsufficientFunds(
        f"the account {sender} cannot pay for this transaction on chain {chain_id}: it holds {ether(balance)} and"
        f" {needs}; {then}",
        detail={"sender": sender, "balance_wei": balance, "cost_wei": cost, "chain_id": chain_id,
                **({"effect": effect_id} if effect_id is not None else {})},
    )  # fmt: skip


def ether(wei: int) -> str:
    """An amount of wei said as ETH (the unit every chain preset's faucet and explorer use)."""
    return f"{wei / 10**18:.6f} ETH" if wei else "0 ETH"


def get_receipt(w3: Web3, tx_hash: bytes) -> dict[str, Any] | None:
    from web3.exceptions import TransactionNotFound

    try:
        return dict(w3.eth.get_transaction_receipt(HexBytes(tx_hash)))
    except TransactionNotFound:
        return None


def is_pending(w3: Web3, tx_hash: bytes) -> bool:
    from web3.exceptions import TransactionNotFound

    try:
        tx = w3.eth.get_transaction(HexBytes(tx_hash))
    except TransactionNotFound:
        return False
    return tx.get("blockNumber") is None


def block_hash(w3: Web3, number: int) -> bytes | None:
    from web3.exceptions import BlockNotFound

    try:
        return bytes(w3.eth.get_block(number)["hash"])
    except BlockNotFound:
        return None
