"""The floor verifier (issue 49): the least a verifier of one-file proofs must do, and nothing of ours.

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
from urllib.parse import urlsplit

import blake3
from sha3 import keccak_256


def main() -> None:
    rpc, registry, listing = sys.argv[1], sys.argv[2], sys.argv[3]
    url = urlsplit(rpc)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port or 80)

    def call(method: str, params: list[object]) -> object:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        connection.request("POST", url.path or "/", body, {"content-type": "application/json"})
        return json.loads(connection.getresponse().read())["result"]

    selector = keccak_256(b"verifyInclusion(address,bytes32,bytes32[],bytes32)").hexdigest()[:8]
    submitters: dict[str, str] = {}
    bad = 0
    for path in open(listing).read().split():  # noqa: SIM115 - a benchmark's floor
        proof = json.load(open(path + ".anchor.json"))  # noqa: SIM115
        with open(path, "rb") as handle:
            entry = proof.get("file") or proof["files"][0]
            if blake3.blake3(handle.read()).hexdigest() != entry["blake3"]:
                bad += 1
                continue
        tx = proof["anchor"]["tx_hash"]
        if tx not in submitters:
            receipt = call("eth_getTransactionReceipt", [tx])
            submitters[tx] = receipt["logs"][0]["topics"][2][-40:]  # type: ignore[index]
        siblings = [s[2:] for s in proof["batch"]["proof"]]
        data = (selector + submitters[tx].rjust(64, "0") + proof["batch"]["root"][2:] + f"{128:064x}"
                + proof["manifest_digest"][2:] + f"{len(siblings):064x}" + "".join(siblings))  # fmt: skip
        if int(str(call("eth_call", [{"to": registry, "data": "0x" + data}, "latest"])), 16) != 1:
            bad += 1
    print(f"floor: {bad} not verified")


if __name__ == "__main__":
    main()
