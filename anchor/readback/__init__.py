"""Read-back: check data against a proof file and the chain, trusting neither the proof nor us."""
