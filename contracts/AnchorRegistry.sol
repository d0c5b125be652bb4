// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

import {IAnchorRegistry} from "./IAnchorRegistry.sol";
import {MerkleLeaf} from "./MerkleLeaf.sol";

/// @title AnchorRegistry
/// @notice Immutable, admin-free, write-once registry of research lineage and Merkle batch roots.
/// @dev Gas is the design constraint: every record costs exactly one fresh storage slot.
///      A lineage record stores a keccak256 commitment over all of its fields (including researcher and
///      timestamp); the fields themselves travel in the event, and `verifyLineage` checks any claimed
///      field set against the commitment on chain. A batch root stores its submitter, timestamp and block
///      packed into one word.
contract AnchorRegistry is IAnchorRegistry {
    /// @dev Commitment over the full lineage record, keyed by attempt commit.
    mapping(bytes32 commit => bytes32 recordHash) private _lineage;

    /// @dev submitter (bits 0..159) | timestamp (160..207) | block number (208..255), keyed by root.
    mapping(bytes32 root => uint256 packedRecord) private _roots;

    /// @inheritdoc IAnchorRegistry
    function anchor(bytes32 commit, bytes32 parent, bytes32 diffHash, bytes32 metricHash, bool kept) external {
        if (commit == bytes32(0)) revert ZeroKey();
        if (_lineage[commit] != bytes32(0)) revert LineageAlreadyAnchored(commit);
        // forge-lint: disable-next-line(unsafe-typecast) -- uint64 seconds outlast the chain by billions of years
        uint64 timestamp = uint64(block.timestamp);
        _lineage[commit] = _lineageHash(commit, parent, diffHash, metricHash, kept, msg.sender, timestamp);
        emit LineageAnchored(commit, parent, msg.sender, diffHash, metricHash, kept, timestamp);
    }

    /// @inheritdoc IAnchorRegistry
    function anchorRoot(bytes32 root) external {
        if (root == bytes32(0)) revert ZeroKey();
        if (_roots[root] != 0) revert RootAlreadyAnchored(root);
        // forge-lint: disable-next-line(unsafe-typecast) -- 48-bit seconds and block numbers last 8.9 million years
        uint256 packed = uint256(uint160(msg.sender)) | (uint256(uint48(block.timestamp)) << 160);
        // forge-lint: disable-next-line(unsafe-typecast) -- see above
        _roots[root] = packed | (uint256(uint48(block.number)) << 208);
        emit RootAnchored(root, msg.sender);
    }

    /// @inheritdoc IAnchorRegistry
    function exists(bytes32 commit) external view returns (bool) {
        return _lineage[commit] != bytes32(0);
    }

    /// @inheritdoc IAnchorRegistry
    function get(bytes32 commit) external view returns (bytes32 recordHash) {
        return _lineage[commit];
    }

    /// @inheritdoc IAnchorRegistry
    function verifyLineage(
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        address researcher,
        uint64 timestamp
    ) external view returns (bool) {
        bytes32 stored = _lineage[commit];
        return stored != bytes32(0)
            && stored == _lineageHash(commit, parent, diffHash, metricHash, kept, researcher, timestamp);
    }

    /// @inheritdoc IAnchorRegistry
    function rootRecord(bytes32 root) external view returns (address submitter, uint48 timestamp, uint48 blockNumber) {
        uint256 packed = _roots[root];
        // forge-lint: disable-next-line(unsafe-typecast) -- the low 160 bits are the submitter by construction
        submitter = address(uint160(packed));
        // forge-lint: disable-next-line(unsafe-typecast) -- deliberate extraction of the packed 48-bit field
        timestamp = uint48(packed >> 160);
        // forge-lint: disable-next-line(unsafe-typecast) -- the top 48 bits, nothing is truncated
        blockNumber = uint48(packed >> 208);
    }

    /// @inheritdoc IAnchorRegistry
    function isAnchored(bytes32 root) external view returns (bool) {
        return _roots[root] != 0;
    }

    /// @inheritdoc IAnchorRegistry
    function verifyInclusion(bytes32 root, bytes32[] calldata proof, bytes32 item) external view returns (bool) {
        return _roots[root] != 0 && MerkleLeaf.processProof(proof, MerkleLeaf.leaf(item)) == root;
    }

    /// @inheritdoc IAnchorRegistry
    function lineageHash(
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        address researcher,
        uint64 timestamp
    ) external pure returns (bytes32) {
        return _lineageHash(commit, parent, diffHash, metricHash, kept, researcher, timestamp);
    }

    /// @inheritdoc IAnchorRegistry
    function version() external pure returns (string memory) {
        return "1.0.0";
    }

    function _lineageHash(
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        address researcher,
        uint64 timestamp
    ) private pure returns (bytes32) {
        return keccak256(abi.encode(commit, parent, diffHash, metricHash, kept, researcher, timestamp));
    }
}
