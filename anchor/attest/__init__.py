"""Provenance in the formats supply-chain tools already read: in-toto Statements v1 (docs/attestations.md).

`attest` turns an anchored, verified path or manifest digest into statements: SLSA Provenance v1 for
result bundles, and for everything our chain-anchor predicate, which carries the proof itself.
`verify_statements` checks such statements back: the embedded proof against a live chain read and the
files on disk, and every subject and dependency named in them against what the proof binds.
"""
