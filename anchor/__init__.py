"""Anchor: tamper-evident, on-chain-anchored provenance for automated research.

Data flows manifest (pure hashing, `anchor.manifest`) → batch (`anchor.batch`) → chain
(`anchor.chain`) → read-back (`anchor.verify`, the CLI and the API).
"""

__version__ = "0.1.0"
