// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

/// @title IAnchorRegistryV3
/// @notice Write-once anchors for research provenance on a public chain: lineage records bound to the
///         researcher who made them, and Merkle batch roots.
/// @dev What changed from v2, and why (docs/threat-model.md, issue 30): v2 keyed a batch root by the root
///      alone. A one-item batch's root is keccak(keccak(digest)), computable from a public manifest digest,
///      and any root can be copied from the mempool: a stranger who anchored it first owned it, and the
///      rightful submitter's later anchor reverted. v3 keys a root by (submitter, root), as v2 did for
///      lineage: nobody can take, block or overwrite another submitter's root, and one root anchored by
///      two submitters is two records. Lineage records, their EIP-712 type and domain ("AnchorRegistry",
///      version "2", this chain and address) are v2's, unchanged.
///      What changed from v1, and why:
///      - v1 keyed a lineage record by its commit alone, so anyone who saw a commit id (a public repo, the
///        mempool) could anchor it first and own it. v2 keys it by (researcher, commit): nobody can take,
///        block or overwrite another researcher's record, and one commit anchored by two researchers is
///        two records.
///      - v1's researcher was whoever paid the gas, so a relaying service erased who the researchers were.
///        v2 also accepts a record signed by the researcher as EIP-712 typed data (`anchorBySig`) and
///        submitted by anyone: the signer, not the payer, is the researcher.
///      - v1 needed an unbounded log scan to find a record's event. v2 keeps the record's block number in
///        its storage slot, so a reader fetches the event from exactly one block.
///      There is no owner, no admin, no upgrade path, no pause and no selfdestruct. Everything a verifier
///      needs is recomputable off chain from the events and the pure functions below.
interface IAnchorRegistryV3 {
    /// @notice `researcher` already has a lineage record for `commit`.
    /// @param researcher The researcher the record belongs to.
    /// @param commit The attempt's commit.
    error LineageAlreadyAnchored(address researcher, bytes32 commit);
    /// @notice `submitter` already anchored this batch root.
    /// @param submitter Who anchored it.
    /// @param root The batch root.
    error RootAlreadyAnchored(address submitter, bytes32 root);
    /// @notice A zero key (commit or root) can never be anchored: zero means "absent" in storage.
    error ZeroKey();
    /// @notice The signed record's deadline has passed.
    /// @param deadline The deadline the researcher signed (Unix seconds).
    error SignatureExpired(uint256 deadline);
    /// @notice The signature is malformed: `s` in the upper half of the curve order (malleable) or `v` not 27/28.
    error MalformedSignature();
    /// @notice The signature does not recover to the researcher it claims.
    /// @param researcher The researcher named in the call.
    /// @param recovered The address the signature recovers to (zero if none).
    error WrongSigner(address researcher, address recovered);

    /// @notice Emitted once per lineage record; researcher, commit and parent are indexed so that explorers
    ///         and readers can filter by each.
    /// @param researcher The researcher the record belongs to (the signer for `anchorBySig`).
    /// @param commit The attempt's commit.
    /// @param parent The champion commit the attempt started from (zero for a baseline).
    /// @param diffHash Hash of the attempt's diff.
    /// @param metricHash Hash of the attempt's metric.
    /// @param kept Whether the attempt became champion.
    /// @param timestamp The block timestamp, bound into the stored commitment.
    event LineageAnchored(
        address indexed researcher,
        bytes32 indexed commit,
        bytes32 indexed parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint64 timestamp
    );

    /// @notice Emitted once per (submitter, root).
    /// @param root The Merkle batch root.
    /// @param submitter Who anchored it.
    event RootAnchored(bytes32 indexed root, address indexed submitter);

    /// @notice Anchor the lineage record of one attempt, as researcher `msg.sender`.
    /// @param commit The attempt's commit (non-zero).
    /// @param parent The champion commit it started from.
    /// @param diffHash Hash of the attempt's diff.
    /// @param metricHash Hash of the attempt's metric.
    /// @param kept Whether the attempt became champion.
    function anchor(bytes32 commit, bytes32 parent, bytes32 diffHash, bytes32 metricHash, bool kept) external;

    /// @notice Anchor a lineage record signed by `researcher` (EIP-712, see `lineageDigest`); anyone may submit.
    /// @dev No nonce is needed: a record is write-once per (researcher, commit), so a replayed signature can
    ///      only hit `LineageAlreadyAnchored`. The domain binds chain id and this registry's address.
    /// @param researcher The signer, who becomes the record's researcher.
    /// @param commit The attempt's commit (non-zero).
    /// @param parent The champion commit it started from.
    /// @param diffHash Hash of the attempt's diff.
    /// @param metricHash Hash of the attempt's metric.
    /// @param kept Whether the attempt became champion.
    /// @param deadline Last Unix second at which the signature is accepted.
    /// @param v Signature recovery id (27 or 28).
    /// @param r Signature r.
    /// @param s Signature s (lower half of the curve order).
    function anchorBySig(
        address researcher,
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;

    /// @notice Anchor a Merkle batch root as submitter `msg.sender`. Reverts with
    ///         `RootAlreadyAnchored(msg.sender, root)` if that submitter anchored it before; another
    ///         submitter's record of the same root neither blocks nor counts.
    /// @param root The batch root (non-zero).
    function anchorRoot(bytes32 root) external;

    /// @notice The stored record of (researcher, commit): the first 26 bytes of its commitment and its block.
    /// @param researcher The researcher.
    /// @param commit The attempt's commit.
    /// @return commitment The high 208 bits of `lineageHash(...)` (zero if absent).
    /// @return blockNumber The block the record was written in (zero if absent): its event is in that block.
    function lineageRecord(address researcher, bytes32 commit)
        external
        view
        returns (bytes26 commitment, uint48 blockNumber);

    /// @notice True iff `researcher`'s record of `commit` has exactly these fields.
    /// @param researcher The researcher.
    /// @param commit The attempt's commit.
    /// @param parent Claimed parent.
    /// @param diffHash Claimed diff hash.
    /// @param metricHash Claimed metric hash.
    /// @param kept Claimed kept flag.
    /// @param timestamp Claimed block timestamp.
    /// @return Whether the record exists with exactly these fields.
    function verifyLineage(
        address researcher,
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint64 timestamp
    ) external view returns (bool);

    /// @notice When `submitter` anchored `root`, and in which block; both zero if it never did. The
    ///         submitters of a root are found by its `RootAnchored` events (root and submitter indexed).
    /// @param submitter Who anchored it.
    /// @param root The batch root.
    /// @return timestamp The block timestamp.
    /// @return blockNumber The block number.
    function rootRecord(address submitter, bytes32 root) external view returns (uint48 timestamp, uint48 blockNumber);

    /// @notice Whether `submitter` anchored `root`.
    /// @param submitter Who anchored it.
    /// @param root The batch root.
    /// @return Whether it is anchored by that submitter.
    function isAnchored(address submitter, bytes32 root) external view returns (bool);

    /// @notice True iff `submitter` anchored `root` and `proof` shows `item` is a leaf of it (OpenZeppelin
    ///         StandardMerkleTree with leaf encoding ["bytes32"]).
    /// @param submitter Who anchored the root.
    /// @param root The batch root.
    /// @param proof Sibling hashes from the leaf up.
    /// @param item The manifest digest.
    /// @return Whether `item` is included under `root` as `submitter` anchored it.
    function verifyInclusion(address submitter, bytes32 root, bytes32[] calldata proof, bytes32 item)
        external
        view
        returns (bool);

    /// @notice The full commitment of a lineage record; pure so that anyone can recompute it.
    /// @param researcher The researcher.
    /// @param commit The attempt's commit.
    /// @param parent The parent commit.
    /// @param diffHash The diff hash.
    /// @param metricHash The metric hash.
    /// @param kept The kept flag.
    /// @param timestamp The block timestamp.
    /// @return keccak256(abi.encode(researcher, commit, parent, diffHash, metricHash, kept, timestamp)).
    function lineageHash(
        address researcher,
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint64 timestamp
    ) external pure returns (bytes32);

    /// @notice The EIP-712 digest a researcher signs for `anchorBySig` on this chain and registry.
    /// @param researcher The researcher.
    /// @param commit The attempt's commit.
    /// @param parent The parent commit.
    /// @param diffHash The diff hash.
    /// @param metricHash The metric hash.
    /// @param kept The kept flag.
    /// @param deadline Last Unix second the signature is valid.
    /// @return The typed-data digest.
    function lineageDigest(
        address researcher,
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint256 deadline
    ) external view returns (bytes32);

    /// @notice The EIP-712 domain separator: name "AnchorRegistry", version "2", this chain id and address.
    /// @return The domain separator.
    // forge-lint: disable-next-line(mixed-case-function) -- the EIP-2612 / EIP-712 spelling tools expect
    function DOMAIN_SEPARATOR() external view returns (bytes32);

    /// @notice Semantic version of this registry.
    /// @return "3.0.0".
    function version() external pure returns (string memory);
}
