/*
 * The check of a sealed anchor (docs/manifest.md, "Sealed proofs"), step 8 (anchor) of the checklist
 * (anchor/readback/checklist.py), in the browser and in node
 * alike: no DOM, no I/O. Given the block hash the visitor trusts (offline) or the one the chain has at that
 * number (online), the sealed header must hash to it; the receipts-trie proof must lead from the header's receiptsRoot to exactly the sealed receipt; the
 * receipt must hold the registry's RootAnchored event of the batch root. The block's number, time and the
 * root's submitter come from there, and nothing else in the file is taken on trust.
 *
 * RLP is decoded by @ethereumjs/rlp (npm, MPL-2.0; vendored in api/static/vendor/ethereumjs-rlp,
 * byte-identical to its release, which refuses non-canonical encodings); keccak-256 by hash-wasm. The
 * trie walk (Yellow Paper appendix D) is ours: no maintained Merkle-Patricia library runs in a page
 * without a bundler. tests/explorer/test_browser_sealed.py runs it in node against the golden sealed vector and
 * against every single-byte change of the sealed section.
 */
(function (global) {
  "use strict";
  const enc = new TextEncoder();

  class SealedError extends Error { constructor(status, message) { super(message); this.status = status; } }

  const toHex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  function fromHex(text, what) {
    const h = String(text || "").toLowerCase();
    if (!/^0x([0-9a-f]{2})*$/.test(h)) throw new SealedError("bad_proof", "sealed." + what + ": not 0x-prefixed hex");
    const out = new Uint8Array((h.length - 2) / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(h.substr(2 + 2 * i, 2), 16);
    return out;
  }
  const equal = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
  const uint = (bytes) => bytes.reduce((n, x) => n * 256 + x, 0);
  const isBytes = (x) => x instanceof Uint8Array;

  function rlpUint(value) { /* rlp(index): the receipt's key in the trie */
    const body = [];
    for (let v = value; v > 0; v = Math.floor(v / 256)) body.unshift(v % 256);
    if (body.length === 1 && body[0] < 0x80) return Uint8Array.from(body);
    return Uint8Array.from([0x80 + body.length, ...body]);
  }
  const nibbles = (bytes) => Array.from(bytes).flatMap((x) => [x >> 4, x & 15]);

  /* the value under `key` in the trie of root `root`, walking `nodes` (RLP each, root first): a child of
     32 bytes is looked up by its keccak, a shorter one is inline (already decoded). Every node given
     must be one the walk visits (as anchor.sealing.mpt requires): an extra or repeated node is refused */
  async function trieGet(root, key, nodes, keccak, RLP) {
    const byHash = new Map(), unused = new Set();
    for (const node of nodes) {
      const hash = toHex(await keccak(node));
      if (byHash.has(hash)) throw new SealedError("tampered", "the trie proof holds node " + hash.slice(0, 16) + "… twice");
      byHash.set(hash, node);
      unused.add(hash);
    }
    const fetchNode = (hash) => {
      const found = byHash.get(toHex(hash));
      if (!found) throw new SealedError("tampered", "anchor.sealed.proof: no node hashing to " + toHex(hash).slice(0, 16) + "…");
      unused.delete(toHex(hash));
      return decodeStrict(RLP, found, "anchor.sealed.proof: a trie node");
    };
    const found = (value) => {
      if (unused.size) throw new SealedError("tampered", "the trie proof holds " + unused.size + " node(s) off the receipt's path");
      return value;
    };
    let path = nibbles(key), node = fetchNode(root);
    for (let depth = 0; depth < 128; depth++) {
      if (!Array.isArray(node)) throw new SealedError("tampered", "anchor.sealed.proof: a trie node is not a list");
      let child;
      if (node.length === 17) { /* branch */
        if (!path.length) return found(node[16]);
        child = node[path[0]];
        path = path.slice(1);
      } else if (node.length === 2 && isBytes(node[0]) && node[0].length) { /* leaf or extension, hex-prefix path */
        const flag = node[0][0] >> 4, all = nibbles(node[0]);
        if (flag > 3 || (!(flag & 1) && (node[0][0] & 15) !== 0)) throw new SealedError("tampered", "anchor.sealed.proof: a trie node's path prefix is malformed");
        const partial = flag & 1 ? all.slice(1) : all.slice(2);
        if (partial.length > path.length || partial.some((n, i) => n !== path[i]))
          throw new SealedError("tampered", "anchor.sealed.proof: the receipt's key leaves the trie proof's path");
        path = path.slice(partial.length);
        if (flag & 2) { /* leaf */
          if (path.length) throw new SealedError("tampered", "anchor.sealed.proof: a trie leaf before the end of the receipt's key");
          return found(node[1]);
        }
        child = node[1];
      } else throw new SealedError("tampered", "anchor.sealed.proof: a trie node of " + node.length + " items");
      if (Array.isArray(child)) { /* an inline node (shorter than 32 bytes encoded), which a proof may also list */
        unused.delete(toHex(await keccak(RLP.encode(child))));
        node = child;
      }
      else if (isBytes(child) && child.length === 32) node = fetchNode(child);
      else throw new SealedError("tampered", "anchor.sealed.proof: the receipt's key ends in an empty trie slot");
    }
    throw new SealedError("tampered", "anchor.sealed.proof: deeper than any receipts trie");
  }

  function decodeStrict(RLP, bytes, what) {
    try { return RLP.decode(bytes); } catch (e) { throw new SealedError("tampered", what + ": not RLP (" + e.message + ")"); }
  }

  /* step 8 (anchor): {number, timestamp, submitter}, or a SealedError naming the first field that fails. `trust`
     says where the block hash came from: typed in by the visitor (offline), or the chain's own word for that
     block number (online, as anchor/readback/checklist.py check_anchor_on_chain) */
  async function sealedAnchor(sealed, trustedHash, anchor, root, registry, keccak, RLP, trust) {
    const source = trust || "the trusted block hash";
    if (!sealed || sealed.version !== 1) throw new SealedError("bad_input", "this proof has no sealed section: `anchor seal` it, or verify it online");
    const header = fromHex(sealed.header, "header");
    if (toHex(await keccak(header)) !== String(trustedHash).toLowerCase().replace(/^0x/, ""))
      throw new SealedError("tampered", "anchor.sealed.header: does not hash to " + source + " " + trustedHash);
    const fields = decodeStrict(RLP, header, "anchor.sealed.header");
    if (!Array.isArray(fields) || fields.length < 15 || !fields.every(isBytes))
      throw new SealedError("tampered", "anchor.sealed.header: not a block header");
    const number = uint(fields[8]), timestamp = uint(fields[11]);
    if (number !== Number(anchor.block_number))
      throw new SealedError("tampered", "anchor.sealed.header: block " + number + ", the anchor names block " + anchor.block_number);
    if (!Number.isSafeInteger(sealed.index) || sealed.index < 0) throw new SealedError("bad_proof", "sealed.index: not a transaction index");
    const nodes = (Array.isArray(sealed.proof) ? sealed.proof : []).map((n, i) => fromHex(n, "proof[" + i + "]"));
    const receipt = fromHex(sealed.receipt, "receipt");
    const held = await trieGet(fields[5], rlpUint(sealed.index), nodes, keccak, RLP);
    if (!isBytes(held) || !equal(held, receipt))
      throw new SealedError("tampered", "anchor.sealed.receipt: not the receipt the header's receipts trie holds at index " + sealed.index);
    const body = decodeStrict(RLP, receipt.length && receipt[0] < 0x80 ? receipt.slice(1) : receipt, "anchor.sealed.receipt");
    if (!Array.isArray(body) || body.length < 4 || !isBytes(body[0]) || !Array.isArray(body[3]))
      throw new SealedError("tampered", "anchor.sealed.receipt: not a transaction receipt");
    if (!equal(body[0], Uint8Array.of(1))) throw new SealedError("tampered", "anchor.sealed.receipt: the transaction reverted (receipt status " + uint(body[0]) + ")");
    const topic = toHex(await keccak(enc.encode("RootAnchored(bytes32,address)")));
    const want = String(root).toLowerCase().replace(/^0x/, ""), registryHex = String(registry).toLowerCase().replace(/^0x/, "");
    let elsewhere = null;
    for (const log of body[3]) {
      if (!Array.isArray(log) || log.length !== 3 || !isBytes(log[0]) || !Array.isArray(log[1])) continue;
      const topics = log[1].map((t) => (isBytes(t) ? toHex(t) : ""));
      if (topics.length !== 3 || topics[0] !== topic || topics[1] !== want) continue;
      if (toHex(log[0]) !== registryHex) { elsewhere = "0x" + toHex(log[0]); continue; }
      return { number, timestamp, submitter: "0x" + topics[2].slice(-40) };
    }
    if (elsewhere) throw new SealedError("unknown_registry", "the root was anchored by " + elsewhere + ", not the registry " + registry);
    throw new SealedError("tampered", "anchor.sealed.receipt: holds no RootAnchored event of the root " + root);
  }

  /* the registry's record of `root` by `submitter` as a later block's state shows it (sealed.state, as
     anchor/sealing/check.py check_state_against reads it): the header hashes to `blockHash` and is not
     before the anchoring block; the account proof leads from its stateRoot (field 3) to the registry's
     account, whose code hash is `codeHash`; the storage proof leads from the account's storageRoot to the
     record's slot, keccak256(root ‖ keccak256(submitter ‖ 1)), which holds the anchor's block and time.
     {number, retractedBlock, retractedAt}, or a SealedError naming the field. */
  async function stateRecord(state, blockHash, anchor, root, submitter, anchoredAt, codeHash, keccak, RLP, trust) {
    const field = "anchor.sealed.state";
    const header = fromHex(state && state.header, "state.header");
    const fields = decodeStrict(RLP, header, field + ".header");
    if (!Array.isArray(fields) || fields.length < 15 || !fields.every(isBytes))
      throw new SealedError("tampered", field + ".header: not a block header");
    const number = uint(fields[8]);
    if (number < Number(anchor.block_number))
      throw new SealedError("tampered", field + ".header: block " + number + ", before the anchoring block " + anchor.block_number);
    if (toHex(await keccak(header)) !== String(blockHash).toLowerCase().replace(/^0x/, ""))
      throw new SealedError("tampered", field + ".header: does not hash to " + (trust || "the trusted block hash") + " " + blockHash);
    const walk = async (rootHash, key, nodes, name) => {
      const list = (Array.isArray(nodes) ? nodes : []).map((n, i) => fromHex(n, "state." + name + "[" + i + "]"));
      let held;
      try { held = await trieGet(rootHash, await keccak(key), list, keccak, RLP); }
      catch (e) { throw e instanceof SealedError ? new SealedError("tampered", field + "." + name + ": " + e.message) : e; }
      if (!isBytes(held) || !held.length) throw new SealedError("tampered", field + "." + name + ": holds nothing there");
      return decodeStrict(RLP, held, field + "." + name);
    };
    const account = await walk(fields[3], fromHex(anchor.registry.toLowerCase(), "registry"), state.account_proof, "account_proof");
    if (!Array.isArray(account) || account.length !== 4 || !isBytes(account[3]) ||
        toHex(account[3]) !== String(codeHash).toLowerCase().replace(/^0x/, ""))
      throw new SealedError("tampered", field + ".account_proof: the account at " + anchor.registry + " is not the registry's code");
    const pad = (bytes) => { const out = new Uint8Array(32); out.set(bytes, 32 - bytes.length); return out; };
    const inner = await keccak(Uint8Array.from([...pad(fromHex(submitter.toLowerCase(), "submitter")), ...pad(Uint8Array.of(1))]));
    const slot = await keccak(Uint8Array.from([...fromHex(String(root).toLowerCase(), "root"), ...inner]));
    const value = await walk(account[2], slot, state.storage_proof, "storage_proof");
    if (!isBytes(value)) throw new SealedError("tampered", field + ".storage_proof: not an integer");
    const packed = value.reduce((n, x) => n * 256n + BigInt(x), 0n), mask = (1n << 48n) - 1n;
    const at = Number(packed & mask), block = Number((packed >> 48n) & mask);
    if (at !== anchoredAt || block !== Number(anchor.block_number))
      throw new SealedError("tampered", field + ".storage_proof: the slot holds a record of block " + block + ", not of the anchoring block " + anchor.block_number);
    return { number, retractedBlock: Number((packed >> 144n) & mask), retractedAt: Number((packed >> 96n) & mask) };
  }

  const api = { sealedAnchor, stateRecord, trieGet, SealedError };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else global.anchorSealed = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
