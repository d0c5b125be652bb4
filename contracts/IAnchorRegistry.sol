// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

/// @title IAnchorRegistry
/// @notice Write-once anchors for research provenance on a public chain: lineage records bound to the
///         researcher who made them, Merkle batch roots bound to their submitter, and write-once
///         retractions of either by its owner. One registry, at one CREATE2 address on every chain.
/// @dev Why each rule (docs/registry.md, docs/threat-model.md):
///      - A root is keyed by (submitter, root) and a lineage record by (researcher, commit): a stranger
///        who copies a root or a commit from the mempool writes a record of their own, and can neither
///        take, block nor overwrite another's (the squatting of earlier, retired versions).
///      - A researcher may sign a record or a retraction as EIP-712 typed data for anyone to submit: the
///        signer, not the payer, is the researcher, so a relaying service does not erase who they are.
///      - A retraction never deletes: the record stays readable, marked retracted with the block of its
///        retraction, and its event carries a 32-byte digest of the reason (the text is kept off chain).
///        Only the record's own submitter or researcher can retract it, once.
///      - Each record is one storage slot that also holds its block number, so a reader fetches its event
///        (and its retraction's) from exactly one block, at any chain height.
///      There is no owner, no admin, no upgrade path, no pause and no selfdestruct. Everything a verifier
///      needs is recomputable off chain from the events and the pure functions below.
interface IAnchorRegistry {
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

    /// @notice Emitted once when a submitter retracts its record of a root.
    /// @param root The Merkle batch root.
    /// @param submitter Whose record it is (and who retracted it).
    /// @param reason The 32-byte digest of the reason (Anchor writes keccak256 of its UTF-8 text).
    event RootRetracted(bytes32 indexed root, address indexed submitter, bytes32 reason);

    /// @notice Emitted once when a researcher retracts a lineage record (directly or by signature).
    /// @param researcher Whose record it is (the signer, for a signed retraction).
    /// @param commit The attempt's commit.
    /// @param reason The 32-byte digest of the reason.
    event LineageRetracted(address indexed researcher, bytes32 indexed commit, bytes32 reason);

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

    /// @notice Retract `msg.sender`'s record of `root`, once. The record stays; readers see it retracted.
    /// @param root The batch root `msg.sender` anchored.
    /// @param reason The 32-byte digest of why (non-zero), emitted in `RootRetracted`.
    function retract(bytes32 root, bytes32 reason) external;

    /// @notice Retract `msg.sender`'s lineage record of `commit`, once. The record stays.
    /// @param commit The attempt's commit `msg.sender` anchored as researcher.
    /// @param reason The 32-byte digest of why (non-zero), emitted in `LineageRetracted`.
    function retractLineage(bytes32 commit, bytes32 reason) external;

    /// @notice Retract `researcher`'s lineage record of `commit`, signed by the researcher (EIP-712, see
    ///         `retractionDigest`); anyone may submit, as for `anchorBySig`.
    /// @param researcher The signer, whose record it is.
    /// @param commit The attempt's commit.
    /// @param reason The 32-byte digest of why (non-zero).
    /// @param deadline Last Unix second at which the signature is accepted.
    /// @param v Signature recovery id (27 or 28).
    /// @param r Signature r.
    /// @param s Signature s (lower half of the curve order).
    function retractLineageBySig(
        address researcher,
        bytes32 commit,
        bytes32 reason,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;

    /// @notice The stored record of (researcher, commit).
    /// @param researcher The researcher.
    /// @param commit The attempt's commit.
    /// @return commitment The high 160 bits of `lineageHash(...)` (zero if absent).
    /// @return blockNumber The block the record was written in (zero if absent): its event is in that block.
    /// @return retractedBlock The block of its retraction (zero if never retracted): its event is there.
    function lineageRecord(address researcher, bytes32 commit)
        external
        view
        returns (bytes20 commitment, uint48 blockNumber, uint48 retractedBlock);

    /// @notice True iff `researcher`'s record of `commit` has exactly these fields (retracted or not).
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

    /// @notice When `submitter` anchored `root`, and whether and when it retracted it; all zero if it never
    ///         anchored it. The submitters of a root are found by its `RootAnchored` events.
    /// @param submitter Who anchored it.
    /// @param root The batch root.
    /// @return timestamp The block timestamp of the anchor.
    /// @return blockNumber The block number of the anchor.
    /// @return retractedAt The block timestamp of its retraction (zero if never retracted).
    /// @return retractedBlock The block of its retraction (zero if never retracted).
    function rootRecord(address submitter, bytes32 root)
        external
        view
        returns (uint48 timestamp, uint48 blockNumber, uint48 retractedAt, uint48 retractedBlock);

    /// @notice Whether `submitter` anchored `root` (retracted or not).
    /// @param submitter Who anchored it.
    /// @param root The batch root.
    /// @return Whether it is anchored by that submitter.
    function isAnchored(address submitter, bytes32 root) external view returns (bool);

    /// @notice True iff `submitter` anchored `root` and `proof` shows `item` is a leaf of it (OpenZeppelin
    ///         StandardMerkleTree with leaf encoding ["bytes32"]). A retracted root still includes what it
    ///         included: read `rootRecord` for the retraction.
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

    /// @notice The EIP-712 digest a researcher signs for `retractLineageBySig` on this chain and registry.
    /// @param researcher The researcher.
    /// @param commit The attempt's commit.
    /// @param reason The reason digest.
    /// @param deadline Last Unix second the signature is valid.
    /// @return The typed-data digest.
    function retractionDigest(address researcher, bytes32 commit, bytes32 reason, uint256 deadline)
        external
        view
        returns (bytes32);

    /// @notice Semantic version of this registry.
    /// @return "4.0.0".
    function version() external pure returns (string memory);
}
