// The browser's proof code (api/static/proof-check.js) against the golden vectors: prints, per case,
// what it computed, for tests/test_browser_verify.py to compare with what the vectors expect.
const fs = require("fs");
const path = require("path");
const check = require(path.join(__dirname, "..", "..", "api", "static", "proof-check.js"));
const enc = new TextEncoder();
const out = [];
for (const kind of process.argv.slice(2)) {
  const vectors = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "vectors", kind + ".json"), "utf8"));
  for (const c of vectors.cases) {
    const e = c.expected;
    if (!e || !e.identity_canonical) continue;
    const identity = JSON.parse(e.identity_canonical);
    const row = { kind, name: c.name, canonical: check.canonical(identity),
      digest: check.toHex(check.manifestDigest(identity)) };
    if (e.files) {
      const leaves = e.files.slice().sort((a, b) => check.utf8Compare(a.path, b.path))
        .map((f) => check.H("file-leaf", enc.encode(check.canonical({ blake3: f.blake3, path: f.path, size: f.size }))));
      row.files_root = check.toHex(check.mth(leaves));
      // every file's audit path, rebuilt from the tree and checked the way a one-file proof is
      row.audit_ok = leaves.every((leaf, i) => check.toHex(check.auditRoot(leaf, i, leaves.length, auditPath(leaves, i))) === row.files_root);
    }
    out.push(row);
  }
}
function auditPath(leaves, m) { // RFC 6962 PATH(m, D[n])
  if (leaves.length <= 1) return [];
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return m < k ? auditPath(leaves.slice(0, k), m).concat([check.toHex(check.mth(leaves.slice(k)))])
    : auditPath(leaves.slice(k), m - k).concat([check.toHex(check.mth(leaves.slice(0, k)))]);
}
console.log(JSON.stringify(out));
