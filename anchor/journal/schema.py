"""The journal's tables, written once for both backends.

SQLite (one machine) and PostgreSQL (replicas on several hosts) hold the same tables, columns,
constraints and indexes. What differs between the two engines is said as a `Dialect`'s parameters: the
names of four column types, how a row gets its number, and how a JSON field is read. Two things differ
by design and are each dialect's own statements: how items are counted per state (SQLite keeps one row
per chain and state by triggers; on PostgreSQL a counter row would be one row lock every replica's
submissions queue on, so its triggers append +1/-1 rows that a flush folds), and PostgreSQL's leases
(one flush at a time across hosts; SQLite's is a lock file, which the kernel releases with its process).

A journal made today gets `statements(dialect)` and is at `SCHEMA_VERSION` at once. A journal made by an
earlier Anchor is brought up to date by `migrations(dialect)`, one version at a time: a SQLite journal
may be as old as version 1, a PostgreSQL one as old as version 5 (the first it had). The golden journals
in tests/vectors/journal/ (made by the Anchor that last changed the schema) hold both to the same tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from anchor.record import Value

SCHEMA_VERSION = 8


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Dialect(Value):
    """What the journal's SQL says differently on one engine; everything else is written once."""

    name: str
    key: str
    """The type of a row's own number, given as rows are inserted."""
    integer: str
    real: str
    blob: str
    row_order: str
    """A column for a table read in the order its rows were inserted (`ORDER BY rowid`): SQLite numbers
    every row itself; PostgreSQL has no such number, so the table gets one."""
    json_field: str
    """A JSON object's field as text, from a TEXT column: `{column}` and `{field}` filled in."""
    first_version: int
    """The oldest schema version a journal of this engine can hold (PostgreSQL came at version 5)."""
    counted_from: int
    """The version whose migration brings this engine's item counts (`counts`)."""
    counts: tuple[str, ...]
    own: tuple[str, ...] = ()
    """Tables only this engine has."""

    def json(self, column: str, field: str) -> str:
        """`column`'s JSON field `field` as text, in this engine's words (both names are ours, never data)."""
        return self.json_field.format(column=column, field=field)


# SQLite: one row per (chain, state), kept by triggers on every way an item moves. Since version 7.
_SQLITE_COUNTS = (
    """CREATE TABLE item_counts (
    chain_id INTEGER NOT NULL,
    state TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (chain_id, state)
) WITHOUT ROWID""",
    "INSERT INTO item_counts (chain_id, state, n) SELECT chain_id, state, count(*) FROM items GROUP BY chain_id, state",
    """CREATE TRIGGER items_counted_in AFTER INSERT ON items BEGIN
    INSERT INTO item_counts (chain_id, state, n) VALUES (NEW.chain_id, NEW.state, 1)
        ON CONFLICT (chain_id, state) DO UPDATE SET n = n + 1;
END""",
    """CREATE TRIGGER items_counted_moved AFTER UPDATE OF chain_id, state ON items
    WHEN OLD.chain_id != NEW.chain_id OR OLD.state != NEW.state BEGIN
    UPDATE item_counts SET n = n - 1 WHERE chain_id = OLD.chain_id AND state = OLD.state;
    INSERT INTO item_counts (chain_id, state, n) VALUES (NEW.chain_id, NEW.state, 1)
        ON CONFLICT (chain_id, state) DO UPDATE SET n = n + 1;
END""",
    """CREATE TRIGGER items_counted_out AFTER DELETE ON items BEGIN
    UPDATE item_counts SET n = n - 1 WHERE chain_id = OLD.chain_id AND state = OLD.state;
END""",
)

# PostgreSQL: per-state counts without a counter row (a counter row would be one row lock that every
# replica's submissions, which share the writer lock, queue on). Triggers append +1/-1 rows instead
# (inserts never wait on each other); `PgJournal.item_counts` sums them, and every flush folds them into
# one row per (chain, state) (`compact_counts`). Counting on the index instead grew with the journal:
# 0.40 s for `journal status` at 100,000 items (benchmarks/journal_bench.py --growth). Since version 8.
_POSTGRESQL_COUNTS = (
    "CREATE TABLE item_count_deltas (chain_id BIGINT NOT NULL, state TEXT NOT NULL, n BIGINT NOT NULL)",
    "CREATE INDEX item_count_deltas_chain ON item_count_deltas (chain_id)",
    "INSERT INTO item_count_deltas SELECT chain_id, state, count(*) FROM items GROUP BY chain_id, state",
    """CREATE FUNCTION items_counted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO item_count_deltas SELECT chain_id, state, count(*) FROM new_rows GROUP BY chain_id, state;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO item_count_deltas SELECT chain_id, state, -count(*) FROM old_rows GROUP BY chain_id, state;
    ELSE
        INSERT INTO item_count_deltas SELECT chain_id, state, sum(n) FROM (
            SELECT chain_id, state, 1 AS n FROM new_rows UNION ALL SELECT chain_id, state, -1 FROM old_rows
        ) moved GROUP BY chain_id, state HAVING sum(n) != 0;
    END IF;
    RETURN NULL;
END $$""",
    # once per statement, over its transition tables: a batch of 4,096 items moved by one UPDATE is two
    # count rows, not 8,192 (as row triggers, the count rows were 123 bytes an item at 200,000 items)
    "CREATE TRIGGER items_counted_in AFTER INSERT ON items REFERENCING NEW TABLE AS new_rows"
    " FOR EACH STATEMENT EXECUTE FUNCTION items_counted()",
    "CREATE TRIGGER items_counted_moved AFTER UPDATE ON items REFERENCING OLD TABLE AS old_rows"
    " NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION items_counted()",
    "CREATE TRIGGER items_counted_out AFTER DELETE ON items REFERENCING OLD TABLE AS old_rows"
    " FOR EACH STATEMENT EXECUTE FUNCTION items_counted()",
    # every item is updated twice (batched, confirmed), and neither update can be HOT (both touch what
    # an index holds): vacuumed at PostgreSQL's default (a fifth of the table dead), the heap held
    # every row about twice at 200,000 items. A hundredth keeps the dead versions few, and their
    # space is what the next submissions fill.
    "ALTER TABLE items SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000)",
    "ALTER TABLE item_count_deltas SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000)",
)

SQLITE = Dialect(
    name="sqlite",
    key="INTEGER PRIMARY KEY",
    integer="INTEGER",
    real="REAL",
    blob="BLOB",
    row_order="",
    json_field="json_extract({column}, '$.{field}')",
    first_version=1,
    counted_from=7,
    counts=_SQLITE_COUNTS,
)
POSTGRESQL = Dialect(
    name="postgresql",
    key="BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
    integer="BIGINT",
    real="DOUBLE PRECISION",
    blob="BYTEA",
    row_order="rowid BIGINT GENERATED ALWAYS AS IDENTITY,",
    json_field="({column}::jsonb ->> '{field}')",
    first_version=5,
    counted_from=8,
    counts=_POSTGRESQL_COUNTS,
    # one flush at a time per chain and registry, across hosts: a lease with a fencing token (pg.py)
    own=(
        """CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    token {integer} NOT NULL,
    expires_at {real} NOT NULL,
    backend_pid INTEGER NOT NULL
)""",
    ),
)

# The tables as they are at SCHEMA_VERSION, in the order their references need.
_TABLES = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # what is to be written on chain: a batch's root, or a lineage record; driven intent -> confirmed
    """CREATE TABLE effects (
    id {key},
    chain_id {integer} NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('root', 'lineage')),
    key {blob} NOT NULL CHECK (length(key) = 32),
    args TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('intent', 'signed', 'broadcast', 'mined', 'confirmed')),
    registry TEXT NOT NULL,
    tx_hash {blob},
    block_number {integer},
    block_hash {blob},
    gas_used {integer},
    created_at {real} NOT NULL,
    updated_at {real} NOT NULL,
    failure TEXT,
    abandoned_at {real},
    UNIQUE (chain_id, registry, kind, key)
)""",
    "CREATE INDEX effects_open ON effects (chain_id, state)",
    # a submitted manifest: pending, batched into an effect, confirmed with it
    """CREATE TABLE items (
    id {key},
    chain_id {integer} NOT NULL,
    digest {blob} NOT NULL CHECK (length(digest) = 32),
    kind TEXT NOT NULL,
    identity TEXT NOT NULL,
    payload TEXT NOT NULL,
    idempotency_key TEXT,
    proof_path TEXT,
    state TEXT NOT NULL CHECK (state IN ('pending', 'batched', 'confirmed')),
    effect_id {integer} REFERENCES effects(id),
    created_at {real} NOT NULL,
    proof_error TEXT,
    UNIQUE (chain_id, digest),
    UNIQUE (chain_id, idempotency_key)
)""",
    "CREATE INDEX items_effect ON items (effect_id)",
    *(
        # the open items only (every item stays confirmed for good); what looks for open items names
        # `state != 'confirmed'`, the partial index's own term, so both engines take it
        "CREATE INDEX items_open ON items (chain_id, id) WHERE state != 'confirmed'",
        "CREATE INDEX items_proof_error ON items (chain_id, id) WHERE proof_error IS NOT NULL",
    ),
    """CREATE TABLE txs (
    id {key},
    effect_id {integer} NOT NULL REFERENCES effects(id),
    sender TEXT NOT NULL,
    nonce {integer} NOT NULL,
    tx_hash {blob} NOT NULL UNIQUE,
    raw {blob} NOT NULL,
    gas {integer} NOT NULL,
    max_fee {integer} NOT NULL,
    priority_fee {integer} NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('signed', 'broadcast', 'replaced', 'dropped', 'mined')),
    created_at {real} NOT NULL
)""",
    "CREATE INDEX txs_effect ON txs (effect_id)",
    "CREATE INDEX effects_failed ON effects (chain_id, id) WHERE failure IS NOT NULL",
    # an item's files by content hash (search, verify-by-upload)
    """CREATE TABLE files (
    item_id {integer} NOT NULL REFERENCES items(id),
    blake3 {blob} NOT NULL CHECK (length(blake3) = 32),
    path TEXT NOT NULL
)""",
    "CREATE INDEX files_blake3 ON files (blake3)",
    # every path a proof must be written to: one manifest submitted from two places has two
    """CREATE TABLE proof_paths (
    {row_order}
    item_id {integer} NOT NULL REFERENCES items(id),
    path TEXT NOT NULL,
    UNIQUE (item_id, path)
)""",
    # a mission's output identity, unique wherever the journal is shared (anchor.missions.dispatch)
    """CREATE TABLE mission_outputs (
    output TEXT PRIMARY KEY,
    mission_sha256 TEXT NOT NULL,
    claimed_at {real} NOT NULL,
    claimed_by TEXT NOT NULL
)""",
)


def _said(dialect: Dialect, statements: tuple[str, ...]) -> tuple[str, ...]:
    words = {
        "key": dialect.key,
        "integer": dialect.integer,
        "real": dialect.real,
        "blob": dialect.blob,
        "row_order": dialect.row_order,
    }
    return tuple(statement.format(**words) for statement in statements)


def statements(dialect: Dialect) -> tuple[str, ...]:
    """The journal's tables as they are at SCHEMA_VERSION, in `dialect`'s words, one statement each."""
    return (*_said(dialect, (*_TABLES, *dialect.own)), *dialect.counts)


def migrations(dialect: Dialect) -> dict[int, tuple[str, ...]]:
    """Each version's change to the one before it, for a journal of `dialect` made by an earlier Anchor.
    (The Python a migration also needs, version 2's index of the files already journaled, is the
    store's.)"""
    steps: dict[int, tuple[str, ...]] = {
        2: (
            """CREATE TABLE files (
    item_id {integer} NOT NULL REFERENCES items(id),
    blake3 {blob} NOT NULL CHECK (length(blake3) = 32),
    path TEXT NOT NULL
)""",
            "CREATE INDEX files_blake3 ON files (blake3)",
        ),
        # why an item's proof file could not be written (the item is anchored all the same)
        3: ("ALTER TABLE items ADD COLUMN proof_error TEXT",),
        4: (
            """CREATE TABLE proof_paths (
    {row_order}
    item_id {integer} NOT NULL REFERENCES items(id),
    path TEXT NOT NULL,
    UNIQUE (item_id, path)
)""",
            "INSERT INTO proof_paths (item_id, path) SELECT id, proof_path FROM items WHERE proof_path IS NOT NULL",
        ),
        # fault isolation: an effect the registry refuses is parked with its reason (failed) and stops
        # nothing else; `anchor journal retry` clears it, `anchor journal abandon` closes it for good
        5: ("ALTER TABLE effects ADD COLUMN failure TEXT", "ALTER TABLE effects ADD COLUMN abandoned_at {real}"),
        6: (
            """CREATE TABLE mission_outputs (
    output TEXT PRIMARY KEY,
    mission_sha256 TEXT NOT NULL,
    claimed_at {real} NOT NULL,
    claimed_by TEXT NOT NULL
)""",
        ),
        # `journal status` at a million items: the few items whose proof could not be written, and the
        # few failed effects, found by partial indexes instead of a scan (and SQLite's counts, below)
        7: (
            "CREATE INDEX items_proof_error ON items (chain_id, id) WHERE proof_error IS NOT NULL",
            "CREATE INDEX effects_failed ON effects (chain_id, id) WHERE failure IS NOT NULL",
        ),
        # the open items only: an index over every item's state was the largest index at scale
        8: ("DROP INDEX items_pending", "CREATE INDEX items_open ON items (chain_id, id) WHERE state != 'confirmed'"),
    }
    said = {version: _said(dialect, step) for version, step in steps.items() if version > dialect.first_version}
    said[dialect.counted_from] += dialect.counts
    return said
