"""Sealed proofs (issue 45): what lets a proof be verified with no network, against one trusted block hash.

An EVM chain already commits to everything needed: the receipt of the transaction that anchored a root
carries the registry's `RootAnchored` event, the receipt is in the block's receipts trie, the trie's root
is in the block header, and keccak256 of the header is the block hash. With the registry at its
canonical address (its address certifies its code, docs/registry.md), one trusted block hash is the
whole trust root. `seal` (anchor.sealing.make) collects the header, the receipt and its trie proof from
the chain once; `check` (anchor.sealing.check) verifies them with no socket. The RLP and the Merkle-Patricia
trie are Ethereum's maintained libraries (`rlp`, `trie`), never a walker of our own.
"""
