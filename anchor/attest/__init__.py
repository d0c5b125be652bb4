"""Provenance in the formats supply-chain tools already read: in-toto Statements v1 (docs/attestations.md).

`attest` turns an anchored, verified path or manifest digest into statements: SLSA Provenance v1 for
result bundles, and for everything our chain-anchor predicate, which carries the proof itself.
Reading them back is a proof form of the read-back layer (anchor.readback.statements): the embedded
proof verified like any proof, every subject and dependency named in them against what it binds.
"""
