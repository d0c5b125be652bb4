"""The chain-only index: a registry's events, followed from its deployment block into a store of its own."""
