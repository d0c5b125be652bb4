"""The floor verifier: the least a verifier of one-file proofs must do, and nothing of ours.

For each path listed (one a line, as `anchor verify --from` reads them): read `<PATH>.anchor.json`,
BLAKE3 the file and compare it with the proof's entry, then one `eth_call verifyInclusion(submitter,
root, proof, item)` on one kept-alive HTTP connection. The submitter is read once per transaction
(its RootAnchored log). No canonical JSON, no file-tree root, no registry code check, no finality: a
floor, not a verifier anyone should use. `python benchmarks/floor_verify.py RPC_URL REGISTRY paths.txt`.
"""

from __future__ import annotations

import http.client
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import blake3
from sha3 import keccak_256


def connect(rpc: str) -> Callable[[str, list[object]], Any]:
    """A JSON-RPC call on one kept-alive HTTP connection to `rpc`."""
    url = urlsplit(rpc)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port or 80)

    def call(method: str, params: list[object]) -> Any:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        connection.request("POST", url.path or "/", body, {"content-type": "application/json"})
        return json.loads(connection.getresponse().read())["result"]

    return call


def checked(path: str) -> dict[str, Any] | None:
    """The proof beside `path`, if the file's BLAKE3 is the proof's entry's; None otherwise."""
    proof: dict[str, Any] = json.load(open(path + ".anchor.json"))  # noqa: SIM115 - a benchmark's floor
    with open(path, "rb") as handle:
        entry = proof.get("file") or proof["files"][0]
        return proof if blake3.blake3(handle.read()).hexdigest() == entry["blake3"] else None


def inclusion(submitter: str, proof: dict[str, Any]) -> str:
    """The calldata of verifyInclusion(submitter, root, path, item) for `proof`."""
    siblings = [s[2:] for s in proof["batch"]["proof"]]
    return "0x" + (
        SELECTOR
        + submitter.rjust(64, "0")
        + proof["batch"]["root"][2:]
        + f"{128:064x}"
        + proof["manifest_digest"][2:]
        + f"{len(siblings):064x}"
        + "".join(siblings)
    )


SELECTOR = keccak_256(b"verifyInclusion(address,bytes32,bytes32[],bytes32)").hexdigest()[:8]


def listed(listing: str, call: Callable[[str, list[object]], Any]) -> Iterator[tuple[dict[str, Any] | None, str]]:
    """(the checked proof, or None for a file that is not its entry; its submitter) of each path listed,
    the submitter read once per transaction (its RootAnchored log)."""
    submitters: dict[str, str] = {}
    for path in open(listing).read().split():  # noqa: SIM115 - a benchmark's floor
        proof = checked(path)
        if proof is None:
            yield None, ""
            continue
        tx = proof["anchor"]["tx_hash"]
        if tx not in submitters:
            submitters[tx] = call("eth_getTransactionReceipt", [tx])["logs"][0]["topics"][2][-40:]
        yield proof, submitters[tx]


def main() -> None:
    rpc, registry, listing = sys.argv[1], sys.argv[2], sys.argv[3]
    call = connect(rpc)
    bad = 0
    for proof, submitter in listed(listing, call):
        data = inclusion(submitter, proof) if proof is not None else None
        bad += data is None or int(str(call("eth_call", [{"to": registry, "data": data}, "latest"])), 16) != 1
    print(f"floor: {bad} not verified")


if __name__ == "__main__":
    main()
