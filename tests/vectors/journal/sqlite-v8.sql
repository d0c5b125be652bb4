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
    updated_at REAL NOT NULL, failure TEXT, abandoned_at REAL,
    UNIQUE (chain_id, registry, kind, key)
);
INSERT INTO "effects" VALUES(1,31337,'root',X'ECA0CF12FD95EBD6A903D67AFECBF201127A5CCB8BE4AE6195404CC77BFB4AED','{"items": 3}','confirmed','0x552e7013529f3843cE996998aBE92e097d5e97F9',X'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',7,X'BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB',80000,1.79662098819242167478e+09,1.79662098819242191318e+09,NULL,NULL);
INSERT INTO "effects" VALUES(2,31337,'root',X'6D75D60B8094C4437A4056D199BDFD5427B50DF5EAD0BCEEA1FBC875882C2EC7','{"items": 1}','intent','0x552e7013529f3843cE996998aBE92e097d5e97F9',NULL,NULL,NULL,NULL,1.79662098820109868051e+09,1.7966209882010989189e+09,NULL,NULL);
INSERT INTO "effects" VALUES(3,31337,'lineage',X'CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC','{"commit": "dddddddddddddddddddddddddddddddddddddddd", "kept": true}','intent','0x552e7013529f3843cE996998aBE92e097d5e97F9',NULL,NULL,NULL,NULL,2.0,2.0,'reverted: NotSigned',NULL);
CREATE TABLE files (
    item_id INTEGER NOT NULL REFERENCES items(id),
    blake3 BLOB NOT NULL CHECK (length(blake3) = 32),
    path TEXT NOT NULL
);
INSERT INTO "files" VALUES(1,X'1010101010101010101010101010101010101010101010101010101010101010','f0.txt');
INSERT INTO "files" VALUES(2,X'1111111111111111111111111111111111111111111111111111111111111111','f1.txt');
INSERT INTO "files" VALUES(3,X'1212121212121212121212121212121212121212121212121212121212121212','f2.txt');
INSERT INTO "files" VALUES(4,X'1313131313131313131313131313131313131313131313131313131313131313','f3.txt');
CREATE TABLE item_counts (
    chain_id INTEGER NOT NULL,
    state TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (chain_id, state)
) WITHOUT ROWID;
INSERT INTO "item_counts" VALUES(31337,'batched',1);
INSERT INTO "item_counts" VALUES(31337,'confirmed',3);
INSERT INTO "item_counts" VALUES(31337,'pending',0);
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
    created_at REAL NOT NULL, proof_error TEXT,
    UNIQUE (chain_id, digest),
    UNIQUE (chain_id, idempotency_key)
);
INSERT INTO "items" VALUES(1,31337,X'14A9674141127AA9277DFAAE35A17F8E748A07F26A5B13075C5BBC2A10F5E393','filetree','{"file_count": 1, "files_root": "0000000000000000000000000000000000000000000000000000000000000000", "kind": "filetree", "total_size": 0, "version": 1}','{"annotations": {"n": "0"}, "files": [{"blake3": "1010101010101010101010101010101010101010101010101010101010101010", "path": "f0.txt", "size": 0}]}','key-0',NULL,'confirmed',1,1.79662098816299319265e+09,NULL);
INSERT INTO "items" VALUES(2,31337,X'2269BC7BB7FB08978D9DFF60D0C24DFED90A6280C50F959011401F2F352B81A6','filetree','{"file_count": 1, "files_root": "0101010101010101010101010101010101010101010101010101010101010101", "kind": "filetree", "total_size": 1, "version": 1}','{"annotations": {"n": "1"}, "files": [{"blake3": "1111111111111111111111111111111111111111111111111111111111111111", "path": "f1.txt", "size": 1}]}','key-1',NULL,'confirmed',1,1.79662098816454148288e+09,NULL);
INSERT INTO "items" VALUES(3,31337,X'F0ADD9907A478661BD742D7095E7FB3E2FFF9A1C012890405F5CAA2D28156389','filetree','{"file_count": 1, "files_root": "0202020202020202020202020202020202020202020202020202020202020202", "kind": "filetree", "total_size": 2, "version": 1}','{"annotations": {"n": "2"}, "files": [{"blake3": "1212121212121212121212121212121212121212121212121212121212121212", "path": "f2.txt", "size": 2}]}','key-2',NULL,'confirmed',1,1.79662098816983723643e+09,NULL);
INSERT INTO "items" VALUES(4,31337,X'BF5542DFE9C745A81D736AD19CBD907F4EEB997550A28295EBF2C1838FD8A685','filetree','{"file_count": 1, "files_root": "0303030303030303030303030303030303030303030303030303030303030303", "kind": "filetree", "total_size": 3, "version": 1}','{"annotations": {"n": "3"}, "files": [{"blake3": "1313131313131313131313131313131313131313131313131313131313131313", "path": "f3.txt", "size": 3}]}','key-3',NULL,'batched',2,1.79662098817617058759e+09,NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO "meta" VALUES('schema_version','8');
INSERT INTO "meta" VALUES('chain_genesis:31337','0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff');
CREATE TABLE mission_outputs (
    output TEXT PRIMARY KEY,
    mission_sha256 TEXT NOT NULL,
    claimed_at REAL NOT NULL,
    claimed_by TEXT NOT NULL
);
INSERT INTO "mission_outputs" VALUES('tour-1','eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee',1.79662098821333146092e+09,'host:1');
CREATE TABLE proof_paths (
    item_id INTEGER NOT NULL REFERENCES items(id),
    path TEXT NOT NULL,
    UNIQUE (item_id, path)
);
INSERT INTO "proof_paths" VALUES(1,'/results/r0.anchor.json');
INSERT INTO "proof_paths" VALUES(2,'/results/r1.anchor.json');
INSERT INTO "proof_paths" VALUES(3,'/results/r2.anchor.json');
INSERT INTO "proof_paths" VALUES(4,'/results/r3.anchor.json');
INSERT INTO "proof_paths" VALUES(1,'/elsewhere/r0.anchor.json');
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
INSERT INTO "txs" VALUES(1,1,'0x1111111111111111111111111111111111111111',0,X'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',X'02726177',90000,2000000000,1000000000,'mined',1.5);
CREATE INDEX items_effect ON items (effect_id);
CREATE INDEX effects_open ON effects (chain_id, state);
CREATE INDEX txs_effect ON txs (effect_id);
CREATE INDEX files_blake3 ON files (blake3);
CREATE TRIGGER items_counted_in AFTER INSERT ON items BEGIN
    INSERT INTO item_counts (chain_id, state, n) VALUES (NEW.chain_id, NEW.state, 1)
        ON CONFLICT (chain_id, state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER items_counted_moved AFTER UPDATE OF chain_id, state ON items
    WHEN OLD.chain_id != NEW.chain_id OR OLD.state != NEW.state BEGIN
    UPDATE item_counts SET n = n - 1 WHERE chain_id = OLD.chain_id AND state = OLD.state;
    INSERT INTO item_counts (chain_id, state, n) VALUES (NEW.chain_id, NEW.state, 1)
        ON CONFLICT (chain_id, state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER items_counted_out AFTER DELETE ON items BEGIN
    UPDATE item_counts SET n = n - 1 WHERE chain_id = OLD.chain_id AND state = OLD.state;
END;
CREATE INDEX items_proof_error ON items (chain_id, id) WHERE proof_error IS NOT NULL;
CREATE INDEX effects_failed ON effects (chain_id, id) WHERE failure IS NOT NULL;
CREATE INDEX items_open ON items (chain_id, id) WHERE state != 'confirmed';
COMMIT;
