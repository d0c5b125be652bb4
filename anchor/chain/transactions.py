"""Build, sign, send and confirm one transaction, decoding registry reverts into typed errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anchor.chain.artifact import registry_abi
from anchor.errors import AnchorError, ChainUnreachable, RegistryRevert

if TYPE_CHECKING:
    from web3 import Web3

    from anchor.chain.keys import Signer

RECEIPT_TIMEOUT_S = 120.0


def _error_selectors() -> dict[str, tuple[str, list[str]]]:
    from eth_hash.auto import keccak

    table = {}
    for item in registry_abi():
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
    from eth_abi import decode

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
    from web3.exceptions import ContractCustomError, ContractLogicError, TimeExhausted

    try:
        tx = call.build_transaction({"from": signer.address, "chainId": chain_id})
        tx["nonce"] = w3.eth.get_transaction_count(w3.to_checksum_address(signer.address), "pending")
        raw = signer.sign(tx)
        tx_hash = w3.eth.send_raw_transaction(raw)
        receipt = dict(w3.eth.wait_for_transaction_receipt(tx_hash, timeout=RECEIPT_TIMEOUT_S, poll_latency=0.05))
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
