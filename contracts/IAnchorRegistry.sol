// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

/// @title IAnchorRegistry
/// @notice Write-once anchors for research provenance: per-attempt lineage records and Merkle batch roots.
/// @dev There is no owner, no admin, no upgrade path, no pause and no selfdestruct: once written, a record
///      can never change. Everything a verifier needs is recomputable off-chain from the events and the
///      pure hash functions below.
interface IAnchorRegistry {
    /// @notice A lineage record for `commit` already exists.
    error LineageAlreadyAnchored(bytes32 commit);
    /// @notice The batch root was already anchored.
    error RootAlreadyAnchored(bytes32 root);
    /// @notice A zero key (commit or root) can never be anchored: zero means "absent" in storage.
    error ZeroKey();

    /// @notice Emitted once per attempt; commit, parent and researcher are indexed so explorers can filter by each.
    event LineageAnchored(
        bytes32 indexed commit,
        bytes32 indexed parent,
        address indexed researcher,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint64 timestamp
    );

    /// @notice Emitted once per batch root.
    event RootAnchored(bytes32 indexed root, address indexed submitter);

    /// @notice Anchor the lineage record of one attempt. Reverts with `LineageAlreadyAnchored(commit)` if present.
    function anchor(bytes32 commit, bytes32 parent, bytes32 diffHash, bytes32 metricHash, bool kept) external;

    /// @notice Anchor a Merkle batch root. Reverts with `RootAlreadyAnchored(root)` if present.
    function anchorRoot(bytes32 root) external;

    /// @notice Whether a lineage record exists for `commit`.
    function exists(bytes32 commit) external view returns (bool);

    /// @notice The stored commitment of a lineage record (see `lineageHash`), zero if absent.
    function get(bytes32 commit) external view returns (bytes32 recordHash);

    /// @notice True iff the lineage record of `commit` has exactly these fields.
    function verifyLineage(
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        address researcher,
        uint64 timestamp
    ) external view returns (bool);

    /// @notice Who anchored `root` and in which block; all zero if it was never anchored.
    function rootRecord(bytes32 root) external view returns (address submitter, uint48 timestamp, uint48 blockNumber);

    /// @notice Whether `root` was anchored.
    function isAnchored(bytes32 root) external view returns (bool);

    /// @notice True iff `root` is anchored and `proof` shows `item` is a leaf of it (OpenZeppelin
    ///         StandardMerkleTree with leaf encoding ["bytes32"]).
    function verifyInclusion(bytes32 root, bytes32[] calldata proof, bytes32 item) external view returns (bool);

    /// @notice The commitment stored for a lineage record; pure so that anyone can recompute it.
    function lineageHash(
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        address researcher,
        uint64 timestamp
    ) external pure returns (bytes32);

    /// @notice Semantic version of this registry.
    function version() external pure returns (string memory);
}
