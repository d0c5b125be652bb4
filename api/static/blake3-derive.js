/*
 * BLAKE3 in derive_key mode, in plain JavaScript, for the browser verification page.
 *
 * Why our own: Anchor's domain-separated digests (docs/manifest.md section 2) are
 * BLAKE3.derive_key(context, bytes); hash-wasm, which hashes the file contents, offers plain and keyed
 * BLAKE3 but not derive_key (its flags differ). Inputs here are small (canonical JSON of a file entry,
 * two child hashes, a manifest identity), so a straightforward implementation of the specification
 * (https://github.com/BLAKE3-team/BLAKE3-specs) is fast enough. tests/test_browser_verify.py runs it
 * under node against the golden vectors.
 */
(function (global) {
  "use strict";
  const IV = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
  const PERM = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];
  const CHUNK_START = 1, CHUNK_END = 2, PARENT = 4, ROOT = 8, DERIVE_KEY_CONTEXT = 32, DERIVE_KEY_MATERIAL = 64;

  function rotr(x, n) { return (x >>> n) | (x << (32 - n)); }

  function g(s, a, b, c, d, x, y) {
    s[a] = (s[a] + s[b] + x) | 0; s[d] = rotr(s[d] ^ s[a], 16);
    s[c] = (s[c] + s[d]) | 0; s[b] = rotr(s[b] ^ s[c], 12);
    s[a] = (s[a] + s[b] + y) | 0; s[d] = rotr(s[d] ^ s[a], 8);
    s[c] = (s[c] + s[d]) | 0; s[b] = rotr(s[b] ^ s[c], 7);
  }

  function compress(cv, m, counter, blockLen, flags) {
    const s = [cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7], IV[0], IV[1], IV[2], IV[3],
      counter >>> 0, Math.floor(counter / 4294967296) >>> 0, blockLen, flags];
    let w = m.slice();
    for (let round = 0; round < 7; round++) {
      g(s, 0, 4, 8, 12, w[0], w[1]); g(s, 1, 5, 9, 13, w[2], w[3]);
      g(s, 2, 6, 10, 14, w[4], w[5]); g(s, 3, 7, 11, 15, w[6], w[7]);
      g(s, 0, 5, 10, 15, w[8], w[9]); g(s, 1, 6, 11, 12, w[10], w[11]);
      g(s, 2, 7, 8, 13, w[12], w[13]); g(s, 3, 4, 9, 14, w[14], w[15]);
      if (round < 6) w = PERM.map((i) => w[i]);
    }
    for (let i = 0; i < 8; i++) { s[i] = (s[i] ^ s[i + 8]) >>> 0; s[i + 8] = (s[i + 8] ^ cv[i]) >>> 0; }
    return s;
  }

  function words(bytes, offset, length) {
    const m = new Array(16).fill(0);
    for (let i = 0; i < length; i++) m[i >> 2] |= bytes[offset + i] << (8 * (i & 3));
    return m;
  }

  function chunkOutput(key, bytes, start, end, counter, flags, root) {
    let cv = key;
    const length = end - start;
    const blocks = Math.max(1, Math.ceil(length / 64));
    for (let b = 0; b < blocks; b++) {
      const off = start + 64 * b;
      const len = Math.min(64, end - off);
      let f = flags | (b === 0 ? CHUNK_START : 0) | (b === blocks - 1 ? CHUNK_END : 0);
      if (root && b === blocks - 1) f |= ROOT;
      cv = compress(cv, words(bytes, off, Math.max(0, len)), counter, Math.max(0, len), f).slice(0, 8);
    }
    return cv;
  }

  function hashWords(bytes, key, flags) {
    const chunks = Math.max(1, Math.ceil(bytes.length / 1024));
    if (chunks === 1) return chunkOutput(key, bytes, 0, bytes.length, 0, flags, true);
    const cvs = [];
    for (let c = 0; c < chunks; c++) cvs.push(chunkOutput(key, bytes, 1024 * c, Math.min(bytes.length, 1024 * (c + 1)), c, flags, false));
    function merge(lo, hi, root) {
      if (hi - lo === 1) return cvs[lo];
      let k = 1;
      while (k * 2 < hi - lo) k *= 2;
      const m = merge(lo, lo + k, false).concat(merge(lo + k, hi, false));
      return compress(key, m, 0, 64, flags | PARENT | (root ? ROOT : 0)).slice(0, 8);
    }
    return merge(0, chunks, true);
  }

  function toBytes(ws) {
    const out = new Uint8Array(32);
    for (let i = 0; i < 32; i++) out[i] = (ws[i >> 2] >>> (8 * (i & 3))) & 0xff;
    return out;
  }

  /** BLAKE3.derive_key(context, material): 32 bytes. */
  function deriveKey(context, material) {
    const contextKey = hashWords(new TextEncoder().encode(context), IV, DERIVE_KEY_CONTEXT);
    return toBytes(hashWords(material, contextKey, DERIVE_KEY_MATERIAL));
  }

  const api = { deriveKey };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else global.anchorBlake3 = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
