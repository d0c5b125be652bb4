"""The lean floor of a one-file verify: floor_verify.py's work with nothing a verdict does not need
loaded. Run under `python -S` (no site: only the directory holding `blake3` and `_pysha3` is put on the
path), JSON-RPC over a raw kept-alive socket (no http.client, no ssl, no email), the same two reads:
the transaction's receipt (its RootAnchored log names the submitter) and one `eth_call
verifyInclusion(submitter, root, proof, item)`. What `anchor verify FILE` cannot go below without
giving up a check.

    python -S benchmarks/floor_verify_lean.py RPC_URL REGISTRY paths.txt SITE_PACKAGES
"""

import sys

sys.path.append(sys.argv[4])

import json  # noqa: E402 - after the one path this floor allows itself
import socket  # noqa: E402

import blake3  # noqa: E402
from _pysha3 import keccak_256  # noqa: E402


def connect(rpc):
    """A JSON-RPC call on one kept-alive socket to `rpc` (http://host:port/, nothing fancier)."""
    hostport = rpc.split("://", 1)[1].split("/", 1)[0]
    host, port = hostport.rsplit(":", 1) if ":" in hostport else (hostport, "80")
    sock = socket.create_connection((host, int(port)))
    reader = sock.makefile("rb")

    def call(method, params):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        head = f"POST / HTTP/1.1\r\nHost: {hostport}\r\nContent-Type: application/json\r\n"
        head += f"Content-Length: {len(body)}\r\n\r\n"
        sock.sendall(head.encode() + body)
        length = 0
        reader.readline()  # the status line
        while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return json.loads(reader.read(length))["result"]

    return call


SELECTOR = keccak_256(b"verifyInclusion(address,bytes32,bytes32[],bytes32)").hexdigest()[:8]


def main():
    rpc, registry, listing = sys.argv[1], sys.argv[2], sys.argv[3]
    call = connect(rpc)
    submitters = {}
    bad = 0
    for path in open(listing).read().split():  # noqa: SIM115 - a floor
        proof = json.load(open(path + ".anchor.json"))  # noqa: SIM115 - a floor
        entry = proof.get("file") or proof["files"][0]
        with open(path, "rb") as handle:
            if blake3.blake3(handle.read()).hexdigest() != entry["blake3"]:
                bad += 1
                continue
        tx = proof["anchor"]["tx_hash"]
        if tx not in submitters:
            submitters[tx] = call("eth_getTransactionReceipt", [tx])["logs"][0]["topics"][2][-40:]
        siblings = [s[2:] for s in proof["batch"]["proof"]]
        data = "0x" + (
            SELECTOR
            + submitters[tx].rjust(64, "0")
            + proof["batch"]["root"][2:]
            + f"{128:064x}"
            + proof["manifest_digest"][2:]
            + f"{len(siblings):064x}"
            + "".join(siblings)
        )
        bad += int(str(call("eth_call", [{"to": registry, "data": data}, "latest"])), 16) != 1
    print(f"lean floor: {bad} not verified")


if __name__ == "__main__":
    main()
