"""The batched once-per-root floor: benchmarks/floor_verify_per_root.py's reads, asked as Anchor's verify
of many asks them, 32 proofs at a time in JSON-RPC batches (one of receipts, one of calls).

For every 32 paths listed: read and BLAKE3 each as the per-root floor does; one batch of the receipts of
the transactions not read yet (the submitter from the RootAnchored log), one batch of `verifyInclusion`
for the roots not read yet; every other item's path walked locally. The floor Anchor's batched reads are
compared with, beside the unbatched one: a ratio against the unbatched floor alone would credit Anchor
with the batching, not with its own work.

    python benchmarks/floor_verify_batched.py RPC_URL REGISTRY paths.txt
"""

from __future__ import annotations

import http.client
import json
import sys
from typing import Any
from urllib.parse import urlsplit

from floor_verify import checked, inclusion
from floor_verify_per_root import root_of

AHEAD = 32


def main() -> None:
    rpc, registry, listing = sys.argv[1], sys.argv[2], sys.argv[3]
    url = urlsplit(rpc)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port or 80)

    def batch(calls: list[tuple[str, list[Any]]]) -> list[Any]:
        if not calls:
            return []
        body = [{"jsonrpc": "2.0", "id": n, "method": m, "params": p} for n, (m, p) in enumerate(calls)]
        connection.request("POST", url.path or "/", json.dumps(body), {"content-type": "application/json"})
        answers = {a["id"]: a.get("result") for a in json.loads(connection.getresponse().read())}
        return [answers.get(n) for n in range(len(calls))]

    paths = open(listing).read().split()  # noqa: SIM115 - a benchmark's floor
    submitters: dict[str, str] = {}
    roots: dict[str, bool] = {}
    bad = 0
    for start in range(0, len(paths), AHEAD):
        proofs = [checked(path) for path in paths[start : start + AHEAD]]
        bad += sum(proof is None for proof in proofs)
        good = [proof for proof in proofs if proof is not None]
        txs = list(dict.fromkeys(p["anchor"]["tx_hash"] for p in good if p["anchor"]["tx_hash"] not in submitters))
        for tx, receipt in zip(txs, batch([("eth_getTransactionReceipt", [tx]) for tx in txs]), strict=True):
            submitters[tx] = receipt["logs"][0]["topics"][2][-40:]
        firsts = {p["batch"]["root"]: p for p in good if p["batch"]["root"] not in roots}
        calls = [
            ("eth_call", [{"to": registry, "data": inclusion(submitters[p["anchor"]["tx_hash"]], p)}, "latest"])
            for p in firsts.values()
        ]
        for root, answer in zip(firsts, batch(calls), strict=True):
            roots[root] = int(str(answer), 16) == 1
        for proof in good:
            siblings = [bytes.fromhex(s[2:]) for s in proof["batch"]["proof"]]
            root = proof["batch"]["root"]
            walked = root_of(bytes.fromhex(proof["manifest_digest"][2:]), siblings) == bytes.fromhex(root[2:])
            bad += not (roots[root] and walked)
    print(f"floor: {bad} not verified ({len(roots)} roots read)")


if __name__ == "__main__":
    main()
