/*
 * The pure steps of checking an Anchor proof (docs/manifest.md): canonical JSON, the domain-separated
 * BLAKE3 digests, the RFC 6962 file tree and an RFC 9162 audit path. No DOM and no I/O, so that node
 * runs the same code against the golden vectors (tests/test_browser_verify.py).
 */
(function (global) {
  "use strict";
  const blake3 = typeof anchorBlake3 !== "undefined" ? anchorBlake3 : require("./blake3-derive.js");
  const enc = new TextEncoder();
  let Verdict = class extends Error { constructor(status, message) { super(message); this.status = status; } };
  function setVerdict(cls) { Verdict = cls; }

  function hexToBytes(hex) {
    const h = hex.toLowerCase().replace(/^0x/, "");
    if (!/^[0-9a-f]*$/.test(h) || h.length % 2) throw new Verdict("bad_proof", "not hex: " + hex.slice(0, 20));
    const out = new Uint8Array(h.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(h.substr(2 * i, 2), 16);
    return out;
  }
  const toHex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  const concat = (a, b) => { const o = new Uint8Array(a.length + b.length); o.set(a); o.set(b, a.length); return o; };
  const same = (a, b) => a.toLowerCase().replace(/^0x/, "") === b.toLowerCase().replace(/^0x/, "");

  /* canonical JSON (docs/manifest.md section 1): sorted keys, no whitespace, integers only */
  function canonical(v) {
    if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
    if (v === null) throw new Verdict("bad_proof", "null in a manifest");
    if (typeof v === "object") return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
    if (typeof v === "number" && !Number.isSafeInteger(v)) throw new Verdict("bad_proof", "a non-integer number in a manifest");
    return JSON.stringify(v);
  }
  const H = (kind, bytes) => blake3.deriveKey("anchor.manifest.v1 " + kind, bytes);

  function mth(leaves) {
    if (leaves.length === 0) return H("tree-node", new Uint8Array(0));
    if (leaves.length === 1) return leaves[0];
    let k = 1;
    while (k * 2 < leaves.length) k *= 2;
    return H("tree-node", concat(mth(leaves.slice(0, k)), mth(leaves.slice(k))));
  }

  function auditRoot(leaf, index, size, path) { /* RFC 9162 section 2.1.3.2 */
    if (index >= size) throw new Verdict("bad_proof", "file index past the tree size");
    let fn = index, sn = size - 1, r = leaf;
    for (const p of path.map(hexToBytes)) {
      if (sn === 0) throw new Verdict("bad_proof", "audit path too long");
      if ((fn & 1) === 1 || fn === sn) {
        r = H("tree-node", concat(p, r));
        if ((fn & 1) === 0) while ((fn & 1) === 0 && fn !== 0) { fn >>= 1; sn >>= 1; }
      } else r = H("tree-node", concat(r, p));
      fn >>= 1; sn >>= 1;
    }
    if (sn !== 0) throw new Verdict("bad_proof", "audit path too short");
    return r;
  }

  const utf8Compare = (a, b) => { const x = enc.encode(a), y = enc.encode(b);
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
    return x.length - y.length; };

  /* the domain of each manifest kind (docs/manifest.md section 2) */
  const DOMAINS = { filetree: "filetree-manifest", bundle: "bundle-manifest", attempt: "attempt-manifest",
    champion: "champion-manifest", mission: "mission", timing: "timing", mlflow_run: "mlflow-run" };
  function manifestDigest(identity) {
    const domain = DOMAINS[identity && identity.kind];
    if (!domain) throw new Verdict("bad_proof", "unknown manifest kind: " + String(identity && identity.kind).slice(0, 40));
    return H(domain, enc.encode(canonical(identity)));
  }

  /* the file tree a manifest binds: its own, a bundle's output, an MLflow run's artifacts */
  const treeOf = (m) => (m.kind === "bundle" ? m.output : m.kind === "mlflow_run" ? m.artifacts : m);

  const api = { treeOf, manifestDigest, hexToBytes, toHex, concat, same, canonical, H, mth, auditRoot, utf8Compare, setVerdict };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else global.anchorProof = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
