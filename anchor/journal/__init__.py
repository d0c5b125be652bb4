"""The journal between manifest and chain (SQLite, or PostgreSQL shared by replicas): the single
source of truth for submissions, batches, transactions and confirmations, so anchoring survives a crash
at any instant. Its tables are written once for both engines (`schema`).
"""
