BEGIN TRANSACTION;
CREATE TABLE effects (
    id INTEGER PRIMARY KEY,
    chain_id INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('root', 'lineage')),
    key BLOB NOT NULL CHECK (length(key) = 32),
    args TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('intent', 'signed', 'broadcast', 'mined', 'confirmed')),
    registry TEXT NOT NULL,
    tx_hash BLOB,
    block_number INTEGER,
    block_hash BLOB,
    gas_used INTEGER,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    UNIQUE (chain_id, registry, kind, key)
);
CREATE TABLE items (
    id INTEGER PRIMARY KEY,
    chain_id INTEGER NOT NULL,
    digest BLOB NOT NULL CHECK (length(digest) = 32),
    kind TEXT NOT NULL,
    identity TEXT NOT NULL,
    payload TEXT NOT NULL,
    idempotency_key TEXT,
    proof_path TEXT,
    state TEXT NOT NULL CHECK (state IN ('pending', 'batched', 'confirmed')),
    effect_id INTEGER REFERENCES effects(id),
    created_at REAL NOT NULL,
    UNIQUE (chain_id, digest),
    UNIQUE (chain_id, idempotency_key)
);
INSERT INTO "items" VALUES(1,31337,X'0101010101010101010101010101010101010101010101010101010101010101','filetree','{}','{"files": [{"path": "a.txt", "size": 1, "blake3": "abababababababababababababababababababababababababababababababab"}]}',NULL,'/results/r.anchor.json','pending',NULL,0.0);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO "meta" VALUES('schema_version','1');
CREATE TABLE txs (
    id INTEGER PRIMARY KEY,
    effect_id INTEGER NOT NULL REFERENCES effects(id),
    sender TEXT NOT NULL,
    nonce INTEGER NOT NULL,
    tx_hash BLOB NOT NULL UNIQUE,
    raw BLOB NOT NULL,
    gas INTEGER NOT NULL,
    max_fee INTEGER NOT NULL,
    priority_fee INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('signed', 'broadcast', 'replaced', 'dropped', 'mined')),
    created_at REAL NOT NULL
);
CREATE INDEX items_pending ON items (chain_id, state, id);
CREATE INDEX items_effect ON items (effect_id);
CREATE INDEX effects_open ON effects (chain_id, state);
CREATE INDEX txs_effect ON txs (effect_id);
COMMIT;
