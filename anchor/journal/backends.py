"""Which journal: SQLite in the data directory (the default), or PostgreSQL when ANCHOR_JOURNAL_URL
names one (replicas on several hosts). One entry, so every command, the API and the flusher open the
same journal the same way."""

from __future__ import annotations

from pathlib import Path

from anchor.errors import BadInput
from anchor.journal.store import Journal
from anchor.layout import DataDir

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_journal(data_dir: Path, url: str | None = None) -> Journal:
    """The journal of `data_dir`, or the PostgreSQL journal at `url` (a postgresql:// URL)."""
    if not url:
        return Journal(DataDir(data_dir).journal)
    if not url.startswith(POSTGRES_SCHEMES):
        raise BadInput(
            "ANCHOR_JOURNAL_URL must be a postgresql:// URL (unset: the SQLite journal in the data directory)",
            detail={"variable": "ANCHOR_JOURNAL_URL"},
        )
    from anchor.journal.pg import PgJournal  # psycopg only for those who use it

    return PgJournal(url)
