"""Sealed proofs: what lets a proof be verified with no network, against one trusted block hash.

An EVM chain already commits to everything needed: the receipt of the transaction that anchored a root
carries the registry's `RootAnchored` event, the receipt is in the block's receipts trie, the trie's root
is in the block header, and keccak256 of the header is the block hash. With the registry at its
canonical address (its address certifies its code, docs/registry.md), one trusted block hash is the
whole trust root. `seal` (anchor.sealing.make) collects the header, the receipt and its trie proof from
the chain once; `check` (anchor.sealing.check) verifies them with no socket. Sealing builds the receipts
trie with Ethereum's maintained `trie` library; checking decodes with a one-page RLP decoder
(anchor.sealing.rlp) and walks the proof with a thirty-line walker (anchor.sealing.mpt), both held to
Ethereum's packages by differential tests, because importing those packages costs an offline verdict
three times the rest of its work.
"""
