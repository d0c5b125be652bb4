"""Build, sign, send and confirm one transaction, decoding registry reverts into typed errors.

Two ways in. `send` takes a web3 contract call (a deploy, a retraction, a direct lineage write: the rarer
writes, where eth_account's second of import is paid once). The step-wise primitives below are what
the journal's effect protocol drives (every batch root and relayed record): they speak JSON-RPC through
`anchor.chain.rpc` and sign with `anchor.chain.eip1559`, so a flush imports neither web3 nor eth_account."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anchor.chain.artifact import CONTRACTS, registry_abi
from anchor.errors import AnchorError, ChainUnreachable, InsufficientFunds, NonceTooLow, RegistryRevert, Underpriced
from anchor.settings.interrupt import check as check_interrupt

if TYPE_CHECKING:
    from web3 import Web3

    from anchor.chain.keys import Signer
    from anchor.chain.rpc import Rpc, RpcError

RECEIPT_TIMEOUT_S = 120.0

SQL_INTEGER = 2**63 - 1
"""The most a nonce, a gas amount or a fee read from a node may be: each goes into a journal column of
that size (a node answering 64 hex digits was an OverflowError in SQLite)."""


def _error_selectors() -> dict[str, tuple[str, list[str]]]:
    from anchor.manifest.keccak import keccak256 as keccak

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
    from anchor.chain.abi import decode

    try:
        values = decode(types, bytes.fromhex(data[10:]))
    except ValueError:  # a selector of ours with arguments that are not: not our registry's error
        return None
    # as eth_abi decoded them (what callers and journaled failures carry): bytes as 0x-hex, addresses lower-case
    args = [
        "0x" + v.hex() if isinstance(v, bytes) else v.lower() if kind == "address" else v
        for kind, v in zip(types, values, strict=True)
    ]
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
        check_interrupt()  # nothing is sent after Ctrl-C (anchor.settings.interrupt)
        tx_hash = w3.eth.send_raw_transaction(raw)
        receipt = dict(w3.eth.wait_for_transaction_receipt(tx_hash, timeout=RECEIPT_TIMEOUT_S, poll_latency=0.05))
    except Web3RPCError as exc:  # the node refused it: an unfunded key (was "this is a bug")
        if "insufficient funds" in str(exc).lower():
            gas = int(tx.get("gas", 0) or 0)
            from anchor.chain.connection import rpc_of

            raise unfunded(rpc_of(w3), signer.address, gas, int(tx.get("maxFeePerGas", 0) or 0), chain_id) from None
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
        raise RegistryRevert("the transaction was mined but reverted", detail={"tx_hash": bytes(tx_hash).hex()})
    return receipt


# ---------------------------------------------------------------------------------------------
# Step-wise primitives for the journal's effect protocol: each step is recorded before the next.
# They read and send through `Rpc` (JSON-RPC as the node speaks it); receipts come back with numbers as
# int and hashes as bytes, as web3 gave them, so the protocol's journal rows are unchanged.

PRIORITY_FEE_MIN, PRIORITY_FEE_MAX = 10**9, 15 * 10**8
"""web3's bounds on a tip estimated from fee history, where a node has no eth_maxPriorityFeePerGas."""


def fee_quote(rpc: Rpc) -> tuple[int, int]:
    """(max fee, priority fee) per gas: twice the pending base fee plus the suggested tip."""
    block = rpc.get_block("pending") or {}
    base = int(str(block.get("baseFeePerGas") or "0x0"), 16)
    return 2 * base + (priority := max_priority_fee(rpc)), priority


def max_priority_fee(rpc: Rpc) -> int:
    """The node's suggested tip; where it has no such method, the average 5th-percentile tip of the last
    ten blocks, kept within 1 to 1.5 gwei (what web3's `max_priority_fee` falls back to)."""
    from anchor.chain.rpc import RpcError

    try:
        return rpc.quantity("eth_maxPriorityFeePerGas", [], SQL_INTEGER)
    except RpcError:
        history = rpc.request("eth_feeHistory", [hex(10), "pending", [5.0]]) or {}
    rewards = history.get("reward") if isinstance(history, dict) else None  # an answer of any shape
    each = [tip[0] for tip in (rewards if isinstance(rewards, list) else []) if isinstance(tip, list) and tip]
    tips = [rpc.as_quantity("eth_feeHistory", tip, SQL_INTEGER) for tip in each]
    fees = [tip for tip in tips if tip]
    average = round(sum(fees) / (len(fees) or 1))
    return min(PRIORITY_FEE_MAX, max(PRIORITY_FEE_MIN, average))


def _revert_of(exc: RpcError, prefix: str) -> RegistryRevert | None:
    """A node's refusal of a call as the registry's revert: its custom error decoded from the error's
    data, else the node's words when it says "revert"; None when it is no revert at all."""
    data = exc.data if isinstance(exc.data, str) else None
    if data and len(data) >= 10:
        return decode_revert(data) or RegistryRevert(f"{prefix}: {data}")
    if "revert" in exc.message.lower():
        return RegistryRevert(f"{prefix}: {exc.message}")
    return None


def estimate_gas(rpc: Rpc, to: str, data: bytes, sender: str) -> int:
    """Gas for the call plus a 20% margin; a revert surfaces here as a typed `RegistryRevert`."""
    from anchor.chain.rpc import RpcError

    try:
        answer = rpc.request("eth_estimateGas", [{"from": sender, "to": to, "data": "0x" + data.hex()}])
    except RpcError as exc:
        revert = _revert_of(exc, "the registry reverted")
        if revert is not None:
            raise revert from None
        if "insufficient funds" in exc.message.lower():
            raise InsufficientFunds("the node refused the gas estimate: the sender cannot pay for it") from None
        raise ChainUnreachable(f"the node refused the gas estimate: {_said(exc)}") from None
    return rpc.as_quantity("eth_estimateGas", answer, SQL_INTEGER) * 12 // 10


def replay_revert(rpc: Rpc, to: str, data: bytes, sender: str, block: int) -> RegistryRevert:
    """Why a mined transaction reverted: the same call replayed on the state of its block, decoded
    into the registry's custom error when it is one (receipts carry no revert data)."""
    from anchor.chain.rpc import RpcError

    try:
        rpc.request("eth_call", [{"from": sender, "to": to, "data": "0x" + data.hex()}, hex(block)])
    except RpcError as exc:
        return _revert_of(exc, "the anchoring transaction reverted") or RegistryRevert(
            f"the anchoring transaction reverted: {exc.message}"
        )
    return RegistryRevert("the anchoring transaction reverted (the replay on its block succeeds: a race)")


def broadcast(rpc: Rpc, raw: bytes) -> None:
    """Send signed bytes; the node already knowing them is success (a resend of the same tx). Never after
    Ctrl-C, even one a finalizer swallowed: KeyboardInterrupt instead (anchor.settings.interrupt), and
    what the journal signed waits there for the next flush."""
    from anchor.chain.rpc import RpcError

    check_interrupt()
    try:
        rpc.request("eth_sendRawTransaction", ["0x" + raw.hex()])
    except RpcError as exc:
        text = str(exc).lower()
        if "already known" in text or "already imported" in text:
            return
        if "nonce too low" in text or "nonce has already been used" in text:
            raise NonceTooLow("the node reports the nonce as used") from None
        if "underpriced" in text or "base fee" in text or "fee too low" in text:
            raise Underpriced(f"the node refuses the fees: {exc.message}") from None
        if "insufficient funds" in text:
            raise InsufficientFunds("the node refused the transaction: the sender cannot pay for it") from None
        raise ChainUnreachable(f"the node refused the transaction: {_said(exc)}") from None


def _said(exc: Exception) -> str:
    """A node's refusal in words: its JSON-RPC `message` and code, not the Python repr of an error dict."""
    from anchor.chain.rpc import RpcError

    if isinstance(exc, RpcError):
        return f"{exc.message} (code {exc.code})"
    arg = exc.args[0] if exc.args else None
    if isinstance(arg, dict) and isinstance(arg.get("message"), str):
        return f"{arg['message']} (code {arg.get('code')})"
    return str(exc)


def transaction_count(rpc: Rpc, address: str) -> int:
    """The account's next nonce as the node counts it, its pending transactions included."""
    return rpc.quantity("eth_getTransactionCount", [address, "pending"], SQL_INTEGER)


def unfunded(rpc: Rpc, sender: str, gas: int, max_fee: int, chain_id: int, effect_id: int | None = None) -> Any:
    """The `InsufficientFunds` verdict on `sender`: its balance now and the most the transaction costs."""
    from anchor.errors import InsufficientFunds

    balance = balance_of(rpc, sender)
    cost = gas * max_fee
    needs = (
        f"the transaction may cost up to {ether(cost)} (gas {gas} x max fee {max_fee} wei)"
        if cost
        else "the transaction costs more than that"
    )
    then = (
        f"fund it, then `anchor journal retry {effect_id}` (or `anchor journal abandon {effect_id}`)"
        if effect_id is not None
        else "fund it and run the same command again"
    )
    return InsufficientFunds(
        f"the account {sender} cannot pay for this transaction on chain {chain_id}: it holds {ether(balance)} and"
        f" {needs}; {then}",
        detail={
            "sender": sender,
            "balance_wei": balance,
            "cost_wei": cost,
            "chain_id": chain_id,
            **({"effect": effect_id} if effect_id is not None else {}),
        },
    )


def balance_of(rpc: Rpc, address: str) -> int:
    return rpc.quantity("eth_getBalance", [address, "latest"])


def ether(wei: int) -> str:
    """An amount of wei said as ETH (the unit every chain preset's faucet and explorer use)."""
    return f"{wei / 10**18:.6f} ETH" if wei else "0 ETH"


def _hash(value: Any) -> bytes:
    return bytes.fromhex(str(value).removeprefix("0x"))


def get_receipt(rpc: Rpc, tx_hash: bytes) -> dict[str, Any] | None:
    """The transaction's receipt, or None while the node has none; `status`, `blockNumber` and `gasUsed`
    as int, `transactionHash` and `blockHash` as bytes."""
    found = rpc.get_transaction_receipt("0x" + bytes(tx_hash).hex())
    if found is None:
        return None
    receipt = dict(found)
    for name in ("status", "blockNumber", "gasUsed"):
        receipt[name] = int(str(found.get(name) or "0x0"), 16)
    for name in ("transactionHash", "blockHash"):
        receipt[name] = _hash(found[name])
    return receipt


def is_pending(rpc: Rpc, tx_hash: bytes) -> bool:
    """The node knows the transaction and has not mined it."""
    tx = rpc.request("eth_getTransactionByHash", ["0x" + bytes(tx_hash).hex()])
    return isinstance(tx, dict) and tx.get("blockNumber") is None


def block_hash(rpc: Rpc, number: int) -> bytes | None:
    block = rpc.get_block(number)
    return None if block is None else _hash(block["hash"])
