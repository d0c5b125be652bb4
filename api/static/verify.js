/*
 * Verify files against an Anchor proof in the browser, without uploading them.
 *
 * Every step of docs/manifest.md is recomputed here from the bytes the visitor picked: file contents
 * with hash-wasm's BLAKE3 (WebAssembly, served by this service), file leaves, the RFC 6962 file tree
 * and the manifest digest with BLAKE3 derive_key (blake3-derive.js), the batch leaf and root with
 * hash-wasm's keccak-256. Then the browser itself asks the configured RPC endpoint for the chain id,
 * the registry's code hash and the root's record (with several endpoints, each of them, a majority
 * agreeing, as `anchor verify` reads a quorum). The only requests this page makes are those JSON-RPC
 * reads and, for a result bundle with milestones, a GET of its timing record's proof from this
 * service: no file byte and no proof leaves the machine. Nothing in the proof is taken on trust; its
 * registry must be the one this service names (anyone can deploy a copy of the registry).
 *
 * Offline: with a block hash typed in, a sealed proof (`anchor seal`) is checked against it
 * alone (sealed-check.js: the header hashes to it, the receipts-trie proof leads from its receiptsRoot to
 * the receipt, the receipt holds the canonical registry's RootAnchored event of the root), and the page
 * makes no request at all, as `anchor verify --offline --trusted-block N:HASH` opens no socket.
 *
 * The steps and their verdict codes are the CLI's and the API's (anchor/readback/checklist.py, whose
 * STEPS number them: every step number below is its own, and a test holds them to it): a proof that contradicts itself is bad_proof, files that are not
 * the ones it binds are tampered, milestones that differ from the anchored timing record are tampered.
 */
(function () {
  "use strict";
  const cfg = JSON.parse(document.getElementById("anchor-config").textContent);
  const enc = new TextEncoder();
  const $ = (id) => document.getElementById(id);

  class Verdict extends Error {
    constructor(status, message, file) { super(message); this.status = status; this.file = file || null; }
  }

  const { hexToBytes, toHex, concat, same, canonical, H, mth, auditRoot, utf8Compare } = anchorProof;
  anchorProof.setVerdict(Verdict);

  async function blake3File(file, progress) {
    const hasher = await hashwasm.createBLAKE3();
    hasher.init();
    const step = 8 * 1024 * 1024;
    for (let at = 0; at < file.size; at += step) {
      hasher.update(new Uint8Array(await file.slice(at, at + step).arrayBuffer()));
      progress(file, Math.min(file.size, at + step));
    }
    return hasher.digest("hex");
  }
  async function keccak(bytes) { return hexToBytes(await hashwasm.keccak(bytes, 256)); }

  async function rpc(url, method, params) {
    let answer;
    try {
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
      answer = await response.json();
    } catch (e) { throw new Verdict("chain_unreachable", "the RPC endpoint " + url + " could not be read: " + e.message); }
    if (answer.error) throw new Verdict("chain_unreachable", method + ": " + answer.error.message);
    return answer.result;
  }

  /* step 5 (chain) on every endpoint the service names, a majority agreeing, as anchor/readback/quorum.py reads a
     quorum of --rpc-urls: answers are compared on what they assert (not on how far each has synced); an
     endpoint that cannot be read does not vote; an error a majority agrees on is the verdict; no majority
     is no answer (no_quorum), naming what each said. With one endpoint, its word. */
  async function agreedOnChain(proof, root) {
    const urls = cfg.rpc_urls && cfg.rpc_urls.length ? cfg.rpc_urls : cfg.rpc_url ? [cfg.rpc_url] : [];
    if (!urls.length) throw new Verdict("chain_unreachable", "this service names no RPC endpoint for browsers (anchor serve --browser-rpc-url)");
    if (urls.length === 1) return onChain(urls[0], proof, root);
    const votes = new Map(), silent = [], said = [];
    for (const url of urls) {
      let key, value;
      try {
        value = await onChain(url, proof, root);
        key = JSON.stringify(["answer", value.chainId, value.submitter.toLowerCase(), value.when, value.at, value.milestonesAnchored]);
        said.push(url + " says anchored by " + value.submitter + " in block " + value.at);
      } catch (e) {
        if (!(e instanceof Verdict)) throw e;
        if (e.status === "chain_unreachable") { silent.push(url); continue; }
        value = e; key = JSON.stringify(["error", e.status]);
        said.push(url + " says " + e.status + ": " + e.message);
      }
      if (!votes.has(key)) votes.set(key, []);
      votes.get(key).push({ url, value });
    }
    const need = Math.floor(urls.length / 2) + 1;
    const ranked = [...votes.values()].sort((a, b) => b.length - a.length);
    if (!ranked.length || ranked[0].length < need || (ranked.length > 1 && ranked[1].length === ranked[0].length))
      throw new Verdict("no_quorum", "no " + need + " of " + urls.length + " endpoints agree: " + said.join("; ") +
        (silent.length ? "; unreachable: " + silent.join(", ") : ""));
    const winners = ranked[0];
    if (winners[0].value instanceof Verdict) throw winners[0].value;
    /* the least synced of the agreeing answers: a verdict is as recent as the endpoints that back it */
    const chosen = winners.map((w) => w.value).reduce((a, b) => (b.block < a.block ? b : a));
    chosen.agreeing = winners.map((w) => w.url);
    chosen.disagreeing = ranked.slice(1).flat().map((w) => w.url);
    return chosen;
  }

  /* on one endpoint: step 5 (chain) the chain id, step 7 (code) the registry's code, step 8 (anchor) and
     step 9 (anchored) the root's record, step 12 (milestones) */
  async function onChain(url, proof, root) {
    const chainId = parseInt(await rpc(url, "eth_chainId", []), 16);
    if (chainId !== cfg.chain_id) throw new Verdict("chain_unreachable", "the RPC endpoint serves chain " + chainId + ", not " + cfg.chain_id);
    const block = parseInt(await rpc(url, "eth_blockNumber", []), 16);
    const code = await rpc(url, "eth_getCode", [cfg.registry, "0x" + block.toString(16)]);
    if (!same("0x" + toHex(await keccak(hexToBytes(code))), cfg.code_hash))
      throw new Verdict("deployment_mismatch", "the code at " + cfg.registry + " is not the registry");
    let record;
    try { record = await rootRecord(url, root, proof.anchor.tx_hash, block); }
    catch (e) { /* a sealed section shows which field was edited, even where the transaction named is none */
      if (e instanceof Verdict && e.status === "not_anchored" && proof.anchor.sealed) await anchorOnChain(url, proof, root, null);
      throw e;
    }
    await anchorOnChain(url, proof, root, record);
    const { submitter, when, at } = record;
    const milestonesAnchored = await checkMilestones(url, proof, root, submitter, block);
    return { chainId, block, submitter, when, at, milestonesAnchored };
  }

  /* step 8 (anchor), as anchor/readback/checklist.py check_anchor_on_chain: what the anchor states beyond its
     transaction, against the chain this page reads anyway. Its block_number is the block of the registry's
     record; a sealed section holds for the hash the chain has at that number (sealed-check.js, with the
     chain's word in place of a typed hash), is of the transaction the anchor names, and shows the record's
     submitter and time. A mismatch is tampered, naming the field. */
  async function anchorOnChain(url, proof, root, record) {
    const anchor = proof.anchor, number = Number(anchor.block_number);
    if (!Number.isSafeInteger(number) || number < 0) throw new Verdict("bad_proof", "anchor.block_number: not a block number");
    if (record && record.at !== number)
      throw new Verdict("tampered", "anchor.block_number: the proof says block " + number + ", the registry's record of the root is in block " + record.at);
    if (!anchor.sealed) return;
    const block = await rpc(url, "eth_getBlockByNumber", ["0x" + number.toString(16), false]);
    if (!block) throw new Verdict("tampered", "anchor.block_number: chain " + cfg.chain_id + " has no block " + number);
    const { RLP } = await import("/assets/vendor/ethereumjs-rlp/index.js");
    let found;
    try { found = await anchorSealed.sealedAnchor(anchor.sealed, block.hash, anchor, root, cfg.registry, keccak, RLP, "the chain's hash"); }
    catch (e) { throw e instanceof anchorSealed.SealedError ? new Verdict(e.status, e.message) : e; }
    const held = (block.transactions || [])[anchor.sealed.index];
    const heldHash = held && typeof held === "object" ? held.hash : held;
    if (!heldHash || !same(heldHash, anchor.tx_hash))
      throw new Verdict("tampered", "anchor.tx_hash: " + anchor.tx_hash + " is not the transaction of the sealed receipt (block " +
        number + " holds " + (heldHash || "none") + " at index " + anchor.sealed.index + ")");
    if (record && (!same(found.submitter, record.submitter) || found.timestamp !== record.when))
      throw new Verdict("tampered", "anchor.sealed.receipt: shows the root anchored by " + found.submitter + ", the registry's record by " + record.submitter);
    const state = anchor.sealed.state;
    if (!state) return;
    /* the record as of a later block the file carries: that block's state, as the chain has it */
    let later;
    try { later = uintOf(RLP.decode(hexToBytes(state.header))[8]); } catch (e) { later = null; }
    if (later === null) throw new Verdict("tampered", "anchor.sealed.state.header: not a block header");
    const laterBlock = await rpc(url, "eth_getBlockByNumber", ["0x" + later.toString(16), false]);
    try {
      await anchorSealed.stateRecord(state, laterBlock ? laterBlock.hash : "none", anchor, root, found.submitter, found.timestamp,
        cfg.code_hash, keccak, RLP, "the chain's hash");
    } catch (e) { throw e instanceof anchorSealed.SealedError ? new Verdict(e.status, e.message) : e; }
  }
  const uintOf = (bytes) => { if (!(bytes instanceof Uint8Array)) throw new Error("not bytes"); return bytes.reduce((n, x) => n * 256 + x, 0); };

  /* the relative path of a picked file: a folder's own name is not part of the tree */
  const relPath = (f) => (f.webkitRelativePath ? f.webkitRelativePath.split("/").slice(1).join("/") : f.name);

  /* "HASH" or "N:HASH", as --trusted-block takes it; null when nothing was typed */
  function trustedBlock(text) {
    const t = String(text || "").trim();
    if (!t) return null;
    const m = /^(?:(\d{1,12}):)?(0x[0-9a-fA-F]{64})$/.exec(t);
    if (!m) throw new Verdict("bad_input", "the trusted block: expected 0x and 64 hex digits, or N:0x…, got " + JSON.stringify(t.slice(0, 80)));
    return { number: m[1] === undefined ? null : Number(m[1]), hash: m[2].toLowerCase() };
  }

  async function verify(files, proofText, progress, trustedText) {
    const trusted = trustedBlock(trustedText);
    let proof;
    try { proof = JSON.parse(proofText); } catch (e) { throw new Verdict("bad_proof", "the proof file is not JSON"); }
    /* a pending proof holds receipts, no anchor: a receipt proves acceptance only (docs/calendar.md) */
    if (proof && proof.format === "anchor/pending" && proof.version === 1)
      throw new Verdict("pending", "not anchored yet: this proof holds " + ((proof.receipts || []).length) +
        " service receipt(s) and no anchor; complete it with `anchor upgrade` after the services' next batch");
    if (!proof || proof.format !== "anchor/proof" || proof.version !== 1 || !proof.manifest || !proof.batch || !proof.anchor)
      throw new Verdict("bad_proof", "not an Anchor proof file (format anchor/proof, version 1)");
    /* step 6 (registry): the one this service names; offline, the canonical registry alone, on any chain (the
       typed hash is the trust) */
    if (trusted) {
      if (!same(proof.anchor.registry, cfg.canonical_registry))
        throw new Verdict("unknown_registry", "offline, only the canonical registry " + cfg.canonical_registry +
          " is trusted (its address certifies its code); the proof names " + proof.anchor.registry);
    } else if (Number(proof.anchor.chain_id) !== cfg.chain_id)
      throw new Verdict("bad_input", "the proof is for chain " + proof.anchor.chain_id + "; this page reads chain " +
        cfg.chain_id + " (check it with anchor verify --rpc-url on that chain)");
    if (!trusted && !same(proof.anchor.registry, cfg.registry))
      throw new Verdict("unknown_registry", "the proof names registry " + proof.anchor.registry + " on chain " + proof.anchor.chain_id +
        "; this service trusts " + cfg.registry + " on chain " + cfg.chain_id);
    const entries = proof.files ? proof.files.slice() : proof.file ? [proof.file] : null;
    if (!entries) throw new Verdict("bad_proof", "the proof lists no files");
    const picked = new Map(Array.from(files, (f) => [relPath(f), f]));
    /* a file picked without its folder (a multiple-file pick) is matched by its name when that is unique */
    const baseOf = (p) => p.split("/").pop();
    const byName = (e) => { const base = baseOf(e.path);
      const hits = Array.from(files).filter((f) => f.name === base && !entries.some((x) => x.path === relPath(f)));
      return hits.length === 1 && entries.filter((x) => baseOf(x.path) === base).length === 1 ? hits[0] : null; };
    for (const e of entries) { /* step 2 (data): every file the proof binds, hashed here */
      const f = picked.get(e.path) || byName(e);
      if (!f) throw new Verdict("tampered", "missing: " + e.path + " is in the proof but was not given", e.path);
      const digest = await blake3File(f, progress);
      if (digest !== e.blake3 || f.size !== e.size) throw new Verdict("tampered", "changed: " + e.path + " does not hash to the digest the proof binds", e.path);
      picked.delete(relPath(f));
    }
    if (proof.files && picked.size) {
      const extra = picked.keys().next().value;
      const tree = anchorProof.treeOf(proof.manifest) || {};
      if (tree.exclude || tree.symlinks) /* rules and links a browser cannot apply: say so, never guess */
        throw new Verdict("bad_input", extra + " is not in the proof, whose tree was made " +
          (tree.exclude ? "with exclusion rules (" + tree.exclude.join(", ") + ")" : "with symbolic links recorded") +
          " that a browser cannot apply: pick only the files the proof lists, or run anchor verify", extra);
      throw new Verdict("tampered", "added: " + extra + " is not in the proof", extra);
    }
    const leaf = (e) => H("file-leaf", enc.encode(canonical({ blake3: e.blake3, path: e.path, size: e.size })));
    let filesRoot;
    if (proof.files) filesRoot = mth(entries.sort((a, b) => utf8Compare(a.path, b.path)).map(leaf));
    else filesRoot = auditRoot(leaf(proof.file), proof.file.index, proof.file.tree_size, proof.file.audit_path || []);
    const tree = anchorProof.treeOf(proof.manifest);
    /* step 1 (consistent): the proof's own statements, each recomputed: one that contradicts another is a bad proof */
    if (!tree || !same(toHex(filesRoot), tree.files_root))
      throw new Verdict("bad_proof", "the proof's listing does not rebuild the file tree its manifest binds");
    const root = await batchRoot(proof, anchorProof.manifestDigest(proof.manifest));
    if (trusted) return offline(proof, root, trusted, entries, tree);
    /* the chain, read by this browser (from each endpoint the service names, a majority agreeing) */
    const { chainId, block, submitter, when, at, milestonesAnchored, agreeing, disagreeing } = await agreedOnChain(proof, root);
    /* links the proof records: a file picker hands over what a link points to, never the link itself, so
       they are not checked here and the verdict says so instead of "verified" */
    const links = (tree.symlinks && tree.symlinks.links) || [];
    return { status: links.length ? "files_verified_links_unchecked" : "verified", links,
      files: entries.map((e) => e.path), manifest_digest: proof.manifest_digest, root, submitter,
      milestones_anchored: milestonesAnchored,
      anchored_at: new Date(when * 1000).toISOString(), anchored_block: at, read_at_block: block, chain_id: chainId, registry: cfg.registry,
      agreeing: agreeing || null, disagreeing: disagreeing || null };
  }

  /* the verdict from the sealed section and the typed hash alone, no request: step 8 (anchor) offline
     (sealed-check.js), then step 10 (retraction) by the file's own word */
  async function offline(proof, root, trusted, entries, tree) {
    const { RLP } = await import("/assets/vendor/ethereumjs-rlp/index.js");
    let found;
    try {
      found = await anchorSealed.sealedAnchor(proof.anchor.sealed, trusted.hash, proof.anchor, root, cfg.canonical_registry, keccak, RLP);
    } catch (e) { throw e instanceof anchorSealed.SealedError ? new Verdict(e.status, e.message) : e; }
    if (trusted.number !== null && trusted.number !== found.number)
      throw new Verdict("bad_input", "the hash typed in is for block " + trusted.number + "; the proof is sealed in block " + found.number);
    const declared = fileRetraction(proof);
    if (declared) /* the file's own word against it, which the anchoring block cannot confirm or deny */
      throw new Verdict("retracted", "retracted by its own file (unverified): its annotations.retractions say root " + root +
        " was retracted by its submitter" + (Number.isInteger(declared.block_number) ? " in block " + declared.block_number : "") +
        (typeof declared.reason === "string" ? ': "' + declared.reason + '"' : "") +
        "; offline, the anchoring block cannot show whether it was: verify it online");
    const links = (tree.symlinks && tree.symlinks.links) || [];
    const shown = proof.annotations && proof.annotations.milestones;
    return { status: links.length ? "files_verified_links_unchecked" : "verified", links, offline: true,
      files: entries.map((e) => e.path), manifest_digest: proof.manifest_digest, root, submitter: found.submitter,
      milestones_anchored: proof.manifest.kind === "bundle" && shown ? "offline" : null,
      anchored_at: new Date(found.timestamp * 1000).toISOString(), anchored_block: found.number, chain_id: Number(proof.anchor.chain_id),
      registry: cfg.canonical_registry,
      trusted: "that block " + found.number + " of chain " + proof.anchor.chain_id + " is " + trusted.hash +
        ": check it once on any explorer or node (offline, a retraction written after that block cannot be seen)" };
  }

  /* the latest retraction of this anchor the file itself records, as anchor/readback/verifier.py
     file_retraction reads it: an entry naming another chain or registry is another anchor's; anything
     unreadable there still declares one */
  function fileRetraction(proof) {
    const entries = proof.annotations && proof.annotations.retractions;
    if (entries === undefined || entries === null) return null;
    if (!Array.isArray(entries)) return {};
    for (const entry of entries.slice().reverse()) {
      if (!entry || typeof entry !== "object" || Array.isArray(entry)) return {};
      const chain = entry.chain_id === undefined ? Number(proof.anchor.chain_id) : entry.chain_id;
      if (chain === Number(proof.anchor.chain_id) && same(String(entry.registry || proof.anchor.registry), proof.anchor.registry)) return entry;
    }
    return null;
  }

  /* the batch root a proof's manifest digest leads to, each statement on the way checked: step 1 (consistent) */
  async function batchRoot(proof, digest) {
    if (!same(toHex(digest), proof.manifest_digest)) throw new Verdict("bad_proof", "the manifest does not hash to the proof's digest");
    if (!same(proof.batch.item, proof.manifest_digest)) throw new Verdict("bad_proof", "the batch item is not the manifest digest");
    let node = await keccak(await keccak(digest));
    if (!same(toHex(node), proof.batch.leaf)) throw new Verdict("bad_proof", "the batch leaf is not the manifest's");
    for (const sibling of (proof.batch.proof || []).map(hexToBytes)) {
      const [a, b] = utf8Compare(toHex(node), toHex(sibling)) <= 0 ? [node, sibling] : [sibling, node];
      node = await keccak(concat(a, b));
    }
    const root = "0x" + toHex(node);
    if (!same(root, proof.batch.root)) throw new Verdict("bad_proof", "the batch proof does not lead to the proof's root");
    return root;
  }

  /* the registry's record of `root`, step 9 (anchored): the record of the submitter the proof's transaction
     names, and step 10 (retraction): its retraction, if its submitter withdrew it: the record stands, the
     claim does not */
  async function rootRecord(url, root, txHash, block) {
    const receipt = await rpc(url, "eth_getTransactionReceipt", [txHash]);
    const topic = "0x" + toHex(await keccak(enc.encode("RootAnchored(bytes32,address)")));
    const log = ((receipt && receipt.logs) || []).find((l) => same(l.address, cfg.registry) &&
      l.topics.length > 2 && same(l.topics[0], topic) && same(l.topics[1], root));
    if (!log) throw new Verdict("not_anchored", "the proof's transaction " + txHash + " did not anchor the root " + root);
    const submitter = "0x" + log.topics[2].slice(-40);
    const selector = toHex((await keccak(enc.encode("rootRecord(address,bytes32)"))).slice(0, 4));
    const word = (await rpc(url, "eth_call", [{ to: cfg.registry, data: "0x" + selector + "0".repeat(24) + submitter.slice(2) + root.slice(2) },
      "0x" + block.toString(16)])).slice(2);
    /* four words, as the CLI decodes them: a shorter answer is not the registry's (as anchor verify says) */
    if (!/^[0-9a-fA-F]{256}/.test(word))
      throw new Verdict("deployment_mismatch", cfg.registry + ": rootRecord gave an answer that is not the registry's (" + word.length / 2 + " bytes)");
    const when = parseInt(word.slice(0, 64), 16), at = parseInt(word.slice(64, 128), 16);
    const retractedAt = parseInt(word.slice(128, 192), 16), retractedBlock = parseInt(word.slice(192, 256), 16);
    if (!at) throw new Verdict("not_anchored", "the root " + root + " is not anchored in the registry (read at block " + block + ")");
    if (retractedBlock) {
      const retractedTopic = "0x" + toHex(await keccak(enc.encode("RootRetracted(bytes32,address,bytes32)")));
      const n = "0x" + retractedBlock.toString(16);
      const logs = await rpc(url, "eth_getLogs", [{ address: cfg.registry, fromBlock: n, toBlock: n,
        topics: [retractedTopic, root, "0x" + "0".repeat(24) + submitter.slice(2)] }]);
      const reason = logs && logs.length ? logs[0].data.slice(0, 66) : "unknown";
      throw new Verdict("retracted", "retracted: root " + root + " was retracted by its submitter " + submitter + " at " +
        new Date(retractedAt * 1000).toISOString().replace(".000Z", "+00:00") + " (block " + retractedBlock + "), reason digest " + reason);
    }
    return { submitter, when, at };
  }

  /* step 12 (milestones): a result bundle's milestones must be those its anchored timing record binds. null: none
     shown; false: shown, but the proof names no timing record (written, not verified); true: checked. */
  async function checkMilestones(url, proof, root, submitter, block) {
    const shown = proof.annotations && proof.annotations.milestones;
    if (proof.manifest.kind !== "bundle" || !shown || typeof shown !== "object") return null;
    const link = proof.annotations.timing;
    if (!link || typeof link !== "object") return false;
    const digest = String(link.digest || "").toLowerCase().replace(/^0x/, "");
    let timing = null;
    if (/^[0-9a-f]{64}$/.test(digest)) {
      try {
        const answer = await fetch("/v1/proofs/0x" + digest);
        if (answer.status === 200) timing = await answer.json();
      } catch (e) { timing = null; }
    }
    if (!timing || !timing.manifest || !timing.batch || !timing.anchor)
      throw new Verdict("not_anchored", "the bundle's timing record 0x" + digest + " has no proof at this service");
    if (!same(timing.manifest_digest, "0x" + digest) || timing.manifest.kind !== "timing")
      throw new Verdict("tampered", "not the timing record the bundle names");
    if (!same("0x" + timing.manifest.bundle, proof.manifest_digest)) throw new Verdict("tampered", "the timing record times another bundle");
    const anchored = timing.manifest.milestones || {};
    const differ = [...new Set([...Object.keys(shown), ...Object.keys(anchored)])].sort().filter((n) => shown[n] !== anchored[n]);
    if (differ.length)
      throw new Verdict("tampered", "milestones differ from the anchored timing record: " +
        differ.map((n) => n + " (proof says " + shown[n] + ", anchored " + anchored[n] + ")").join(", "));
    const timedRoot = await batchRoot(timing, anchorProof.manifestDigest(timing.manifest));
    const timed = same(timedRoot, root) && same(timing.anchor.tx_hash, proof.anchor.tx_hash)
      ? { submitter } : await rootRecord(url, timedRoot, timing.anchor.tx_hash, block);
    if (!same(timed.submitter, submitter))
      throw new Verdict("tampered", "the timing record was anchored by " + timed.submitter + ", the bundle by " + submitter);
    return true;
  }

  function show(result) {
    const out = $("verdict");
    const unchecked = result.status === "files_verified_links_unchecked";
    out.className = "verdict " + (result.status === "verified" ? "ok" : unchecked ? "warn" : "bad");
    out.dataset.status = result.status;
    out.dataset.file = result.file || "";
    out.textContent = "";
    const line = (text) => { const p = document.createElement("p"); p.textContent = text; out.appendChild(p); };
    if (result.status === "verified" || unchecked) {
      line((unchecked ? "✓ files verified (not the links): " : "✓ verified: ") + result.files.join(", "));
      if (unchecked)
        line("⚠ not checked here: " + result.links.length + " symbolic link" + (result.links.length === 1 ? "" : "s") +
          " the proof records (" + result.links.slice(0, 5).map((l) => l.path + " → " + l.target).join(", ") +
          "): a browser cannot read a link; `anchor verify` checks them");
      line("manifest " + result.manifest_digest + " in batch root " + result.root);
      line("anchored at block " + result.anchored_block + " (" + result.anchored_at + ") by " + result.submitter);
      if (result.milestones_anchored === "offline")
        line("milestones: not checked offline (their timing record is another proof): as written in the proof");
      else if (result.milestones_anchored !== null)
        line(result.milestones_anchored ? "milestones: anchored (its timing record, checked on chain)"
          : "milestones: NOT anchored (no timing record): as written in the proof, unverified");
      if (result.offline) {
        line("checked offline, no request made: the sealed header, receipt and receipts-trie proof, registry " + result.registry);
        line("trusted: " + result.trusted);
      } else
        line("read by this browser from chain " + result.chain_id + ", registry " + result.registry + ", at block " + result.read_at_block);
      if (result.agreeing)
        line("endpoints: " + result.agreeing.length + " of " + (result.agreeing.length + result.disagreeing.length) + " agree" +
          (result.disagreeing.length ? "; DISAGREED: " + result.disagreeing.join(", ") : ""));
    } else {
      line((result.status === "tampered" ? "✗ tampered: " : "✗ " + result.status + ": ") + result.message);
    }
  }

  async function run() {
    const files = [...$("files").files, ...$("folder").files];
    const proofFile = $("proof").files[0];
    if (!files.length || !proofFile) { show({ status: "bad_input", message: "pick the file(s) or folder and the proof file" }); return; }
    $("progress").textContent = "hashing…";
    const progress = (f, done) => { $("progress").textContent = "hashing " + f.name + ": " + Math.round((100 * done) / Math.max(1, f.size)) + "%"; };
    try { show(await verify(files, await proofFile.text(), progress, $("trusted").value)); }
    catch (e) { show(e instanceof Verdict ? { status: e.status, message: e.message, file: e.file } : { status: "error", message: String(e) }); }
    $("progress").textContent = "";
  }

  $("check").addEventListener("click", run);
  const zone = $("drop");
  zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("drop", (e) => {
    e.preventDefault(); zone.classList.remove("over");
    const dropped = Array.from(e.dataTransfer.files);
    const proof = dropped.find((f) => f.name.endsWith(".anchor.json") || f.name.endsWith(".json") && dropped.length > 1 && f.name.includes("proof"));
    const rest = new DataTransfer(), p = new DataTransfer();
    dropped.forEach((f) => (f === proof ? p : rest).items.add(f));
    if (proof) $("proof").files = p.files;
    $("files").files = rest.files;
    run();
  });
  window.anchorVerify = verify;
})();
