// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

import {IAnchorRegistry} from "./IAnchorRegistry.sol";
import {MerkleLeaf} from "./MerkleLeaf.sol";
import {ResearcherSignatures} from "./ResearcherSignatures.sol";
import {
    AlreadyRetracted,
    LineageAlreadyAnchored,
    LineageNotAnchored,
    RootAlreadyAnchored,
    RootNotAnchored,
    ZeroKey,
    ZeroReason
} from "./Errors.sol";

/// @title AnchorRegistry
/// @notice Immutable, admin-free, write-once registry of researcher-bound lineage records and
///         submitter-bound Merkle batch roots, each retractable once by its owner. Deployed through the
///         deterministic deployment proxy with a fixed salt, so it has one address on every chain.
/// @dev Gas is the design constraint: every record costs exactly one fresh storage slot, and its retraction
///      rewrites that slot (a warm non-zero write, no new slot), which keeps a retraction under 30,000 gas.
///      A lineage slot, keyed by (researcher, commit), holds the high 160 bits of a keccak256 commitment
///      over all the record's fields (bits 96..255; finding other fields that match takes 2^160 work), the
///      block of its retraction (48..95, zero until retracted) and the block it was written in (0..47). A
///      root slot, keyed by (submitter, root), holds its timestamp (0..47) and block (48..95), and the
///      timestamp (96..143) and block (144..191) of its retraction. No constructor and no immutables: the
///      runtime code is the same at every address and on every chain; readers recognise it by its hash.
contract AnchorRegistry is IAnchorRegistry, ResearcherSignatures {
    uint256 private constant _BLOCK_MASK = type(uint48).max;
    uint256 private constant _COMMITMENT_MASK = ~uint256(type(uint96).max);

    /// @dev commitment (high 160 bits) | retraction block (48..95) | block (0..47), by researcher then commit.
    mapping(address researcher => mapping(bytes32 commit => uint256 packedRecord)) private _lineage;

    /// @dev timestamp | block | retraction timestamp | retraction block (48 bits each, from bit 0), by
    ///      submitter then root; never zero once written (every block after genesis has a non-zero timestamp).
    mapping(address submitter => mapping(bytes32 root => uint256 packedRecord)) private _roots;

    /// @inheritdoc IAnchorRegistry
    function anchor(bytes32 commit, bytes32 parent, bytes32 diffHash, bytes32 metricHash, bool kept) external {
        _anchor(msg.sender, commit, parent, diffHash, metricHash, kept);
    }

    /// @inheritdoc IAnchorRegistry
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
    ) external {
        bytes32 message = _lineageStruct(researcher, commit, parent, diffHash, metricHash, kept, deadline);
        _requireSigned(researcher, message, deadline, v, r, s);
        _anchor(researcher, commit, parent, diffHash, metricHash, kept);
    }

    /// @inheritdoc IAnchorRegistry
    function anchorRoot(bytes32 root) external {
        if (root == bytes32(0)) revert ZeroKey();
        mapping(bytes32 => uint256) storage mine = _roots[msg.sender];
        if (mine[root] != 0) revert RootAlreadyAnchored(msg.sender, root);
        // forge-lint: disable-next-line(unsafe-typecast) -- 48-bit seconds and block numbers last 8.9 million years
        mine[root] = uint256(uint48(block.timestamp)) | (uint256(uint48(block.number)) << 48);
        emit RootAnchored(root, msg.sender);
    }

    /// @inheritdoc IAnchorRegistry
    function retract(bytes32 root, bytes32 reason) external {
        if (reason == bytes32(0)) revert ZeroReason();
        mapping(bytes32 => uint256) storage mine = _roots[msg.sender];
        uint256 packed = mine[root];
        if (packed == 0) revert RootNotAnchored(msg.sender, root);
        // forge-lint: disable-next-line(unsafe-typecast) -- bits 144..191 are the retraction block by construction
        if (packed >> 144 != 0) revert AlreadyRetracted(msg.sender, root, uint48(packed >> 144));
        // forge-lint: disable-next-line(unsafe-typecast) -- 48-bit seconds and block numbers last 8.9 million years
        mine[root] = packed | (uint256(uint48(block.timestamp)) << 96) | (uint256(uint48(block.number)) << 144);
        emit RootRetracted(root, msg.sender, reason);
    }

    /// @inheritdoc IAnchorRegistry
    function retractLineage(bytes32 commit, bytes32 reason) external {
        _retractLineage(msg.sender, commit, reason);
    }

    /// @inheritdoc IAnchorRegistry
    function retractLineageBySig(
        address researcher,
        bytes32 commit,
        bytes32 reason,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        _requireSigned(researcher, _retractionStruct(researcher, commit, reason, deadline), deadline, v, r, s);
        _retractLineage(researcher, commit, reason);
    }

    /// @inheritdoc IAnchorRegistry
    function lineageRecord(address researcher, bytes32 commit)
        external
        view
        returns (bytes20 commitment, uint48 blockNumber, uint48 retractedBlock)
    {
        uint256 packed = _lineage[researcher][commit];
        // forge-lint: disable-next-line(unsafe-typecast) -- the high 20 bytes are the commitment by construction
        commitment = bytes20(bytes32(packed));
        // forge-lint: disable-next-line(unsafe-typecast) -- the low 48 bits are the block number by construction
        blockNumber = uint48(packed);
        // forge-lint: disable-next-line(unsafe-typecast) -- bits 48..95 are the retraction block by construction
        retractedBlock = uint48(packed >> 48);
    }

    /// @inheritdoc IAnchorRegistry
    function verifyLineage(
        address researcher,
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint64 timestamp
    ) external view returns (bool) {
        uint256 packed = _lineage[researcher][commit];
        bytes32 full = _lineageHash(researcher, commit, parent, diffHash, metricHash, kept, timestamp);
        return packed != 0 && (packed & _COMMITMENT_MASK) == (uint256(full) & _COMMITMENT_MASK);
    }

    /// @inheritdoc IAnchorRegistry
    function rootRecord(address submitter, bytes32 root)
        external
        view
        returns (uint48 timestamp, uint48 blockNumber, uint48 retractedAt, uint48 retractedBlock)
    {
        uint256 packed = _roots[submitter][root];
        // forge-lint: disable-next-line(unsafe-typecast) -- deliberate extraction of the packed 48-bit fields
        (timestamp, blockNumber) = (uint48(packed), uint48(packed >> 48));
        // forge-lint: disable-next-line(unsafe-typecast) -- deliberate extraction of the packed 48-bit fields
        (retractedAt, retractedBlock) = (uint48(packed >> 96), uint48(packed >> 144));
    }

    /// @inheritdoc IAnchorRegistry
    function isAnchored(address submitter, bytes32 root) external view returns (bool) {
        return _roots[submitter][root] != 0;
    }

    /// @inheritdoc IAnchorRegistry
    function verifyInclusion(address submitter, bytes32 root, bytes32[] calldata proof, bytes32 item)
        external
        view
        returns (bool)
    {
        return _roots[submitter][root] != 0 && MerkleLeaf.processProof(proof, MerkleLeaf.leaf(item)) == root;
    }

    /// @inheritdoc IAnchorRegistry
    function lineageHash(
        address researcher,
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint64 timestamp
    ) external pure returns (bytes32) {
        return _lineageHash(researcher, commit, parent, diffHash, metricHash, kept, timestamp);
    }

    /// @inheritdoc IAnchorRegistry
    function lineageDigest(
        address researcher,
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint256 deadline
    ) external view returns (bytes32) {
        return _typedDigest(_lineageStruct(researcher, commit, parent, diffHash, metricHash, kept, deadline));
    }

    /// @inheritdoc IAnchorRegistry
    function retractionDigest(address researcher, bytes32 commit, bytes32 reason, uint256 deadline)
        external
        view
        returns (bytes32)
    {
        return _typedDigest(_retractionStruct(researcher, commit, reason, deadline));
    }

    /// @inheritdoc IAnchorRegistry
    function version() external pure returns (string memory) {
        return "4.0.0";
    }

    function _anchor(
        address researcher,
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept
    ) private {
        if (commit == bytes32(0)) revert ZeroKey();
        mapping(bytes32 => uint256) storage records = _lineage[researcher];
        if (records[commit] != 0) revert LineageAlreadyAnchored(researcher, commit);
        // forge-lint: disable-next-line(unsafe-typecast) -- uint64 seconds outlast the chain by billions of years
        uint64 timestamp = uint64(block.timestamp);
        bytes32 full = _lineageHash(researcher, commit, parent, diffHash, metricHash, kept, timestamp);
        records[commit] = (uint256(full) & _COMMITMENT_MASK) | (block.number & _BLOCK_MASK);
        emit LineageAnchored(researcher, commit, parent, diffHash, metricHash, kept, timestamp);
    }

    function _retractLineage(address researcher, bytes32 commit, bytes32 reason) private {
        if (reason == bytes32(0)) revert ZeroReason();
        mapping(bytes32 => uint256) storage records = _lineage[researcher];
        uint256 packed = records[commit];
        if (packed == 0) revert LineageNotAnchored(researcher, commit);
        // forge-lint: disable-next-line(unsafe-typecast) -- bits 48..95 are the retraction block by construction
        uint48 retracted = uint48(packed >> 48);
        if (retracted != 0) revert AlreadyRetracted(researcher, commit, retracted);
        records[commit] = packed | ((block.number & _BLOCK_MASK) << 48);
        emit LineageRetracted(researcher, commit, reason);
    }

    function _lineageHash(
        address researcher,
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint64 timestamp
    ) private pure returns (bytes32) {
        return keccak256(abi.encode(researcher, commit, parent, diffHash, metricHash, kept, timestamp));
    }
}
