"""The proof file: what a holder keeps to check a manifest against the chain (docs/manifest.md section 7).

The format and nothing else: no chain, no journal. Verification lives in `anchor.readback`."""
