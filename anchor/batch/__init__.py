"""Merkle batching of manifest digests into one on-chain root."""
