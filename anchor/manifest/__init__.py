"""Pure, consensus-critical hashing: canonical encoding, domain tags, file trees.

Nothing in this package touches the network or imports web3; a second implementation only needs
BLAKE3 and the rules in docs/manifest.md.
"""
