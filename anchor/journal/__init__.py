"""The SQLite journal between manifest and chain: the single source of truth for submissions,
batches, transactions and confirmations, so anchoring survives a crash at any instant.
"""
