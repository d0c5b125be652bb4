// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

import {IAnchorRegistryV3} from "./IAnchorRegistryV3.sol";
import {MerkleLeaf} from "./MerkleLeaf.sol";

/// @title AnchorRegistryV3
/// @notice Immutable, admin-free, write-once registry of researcher-bound lineage records and submitter-bound
///         Merkle batch roots.
/// @dev Gas is the design constraint: every record costs exactly one fresh storage slot. A lineage slot,
///      keyed by (researcher, commit), holds the high 208 bits of a keccak256 commitment over all the
///      record's fields and, in its low 48 bits, the block number the record was written in (so its event
///      is fetched from one block, at any chain height). A 208-bit commitment leaves 2^208 work to find other
///      fields that match it. A batch root slot, keyed by (submitter, root), holds its timestamp and block.
///      No immutables: the EIP-712 domain is recomputed per call (about 200 gas) so that the runtime code,
///      and so its hash, is the same at every address and on every chain; readers recognise a registry
///      by that hash.
contract AnchorRegistryV3 is IAnchorRegistryV3 {
    /// @notice EIP-712 type of a signed lineage record.
    bytes32 public constant LINEAGE_TYPEHASH = keccak256(
        "Lineage(address researcher,bytes32 commit,bytes32 parent,bytes32 diffHash,bytes32 metricHash,bool kept,uint256 deadline)"
    );
    bytes32 private constant _DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant _NAME_HASH = keccak256("AnchorRegistry");
    /// @dev The lineage type and its domain are v2's: a record signed for a v3 registry is the same typed data.
    bytes32 private constant _VERSION_HASH = keccak256("2");
    /// @dev secp256k1n / 2: a larger `s` is the malleable twin of a valid signature (EIP-2).
    uint256 private constant _HALF_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;
    uint256 private constant _BLOCK_MASK = type(uint48).max;

    /// @dev commitment (high 208 bits) | block number (low 48 bits), keyed by researcher then commit.
    mapping(address researcher => mapping(bytes32 commit => uint256 packedRecord)) private _lineage;

    /// @dev timestamp (bits 0..47) | block number (48..95), keyed by submitter then root; never zero once
    ///      written (every block after genesis has a non-zero timestamp).
    mapping(address submitter => mapping(bytes32 root => uint256 packedRecord)) private _roots;

    /// @inheritdoc IAnchorRegistryV3
    function anchor(bytes32 commit, bytes32 parent, bytes32 diffHash, bytes32 metricHash, bool kept) external {
        _anchor(msg.sender, commit, parent, diffHash, metricHash, kept);
    }

    /// @inheritdoc IAnchorRegistryV3
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
        // forge-lint: disable-next-line(block-timestamp) -- a deadline in hours or days; a few seconds of skew is moot
        if (block.timestamp > deadline) revert SignatureExpired(deadline);
        if (uint256(s) > _HALF_ORDER || (v != 27 && v != 28)) revert MalformedSignature();
        bytes32 digest = _lineageDigest(researcher, commit, parent, diffHash, metricHash, kept, deadline);
        address recovered = ecrecover(digest, v, r, s);
        if (recovered == address(0) || recovered != researcher) revert WrongSigner(researcher, recovered);
        _anchor(researcher, commit, parent, diffHash, metricHash, kept);
    }

    /// @inheritdoc IAnchorRegistryV3
    function anchorRoot(bytes32 root) external {
        if (root == bytes32(0)) revert ZeroKey();
        mapping(bytes32 => uint256) storage mine = _roots[msg.sender];
        if (mine[root] != 0) revert RootAlreadyAnchored(msg.sender, root);
        // forge-lint: disable-next-line(unsafe-typecast) -- 48-bit seconds and block numbers last 8.9 million years
        mine[root] = uint256(uint48(block.timestamp)) | (uint256(uint48(block.number)) << 48);
        emit RootAnchored(root, msg.sender);
    }

    /// @inheritdoc IAnchorRegistryV3
    function lineageRecord(address researcher, bytes32 commit)
        external
        view
        returns (bytes26 commitment, uint48 blockNumber)
    {
        uint256 packed = _lineage[researcher][commit];
        // forge-lint: disable-next-line(unsafe-typecast) -- the high 26 bytes are the commitment by construction
        commitment = bytes26(bytes32(packed));
        // forge-lint: disable-next-line(unsafe-typecast) -- the low 48 bits are the block number by construction
        blockNumber = uint48(packed);
    }

    /// @inheritdoc IAnchorRegistryV3
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
        return packed != 0 && (packed & ~_BLOCK_MASK) == (uint256(full) & ~_BLOCK_MASK);
    }

    /// @inheritdoc IAnchorRegistryV3
    function rootRecord(address submitter, bytes32 root) external view returns (uint48 timestamp, uint48 blockNumber) {
        uint256 packed = _roots[submitter][root];
        // forge-lint: disable-next-line(unsafe-typecast) -- deliberate extraction of the packed 48-bit field
        timestamp = uint48(packed);
        // forge-lint: disable-next-line(unsafe-typecast) -- deliberate extraction of the packed 48-bit field
        blockNumber = uint48(packed >> 48);
    }

    /// @inheritdoc IAnchorRegistryV3
    function isAnchored(address submitter, bytes32 root) external view returns (bool) {
        return _roots[submitter][root] != 0;
    }

    /// @inheritdoc IAnchorRegistryV3
    function verifyInclusion(address submitter, bytes32 root, bytes32[] calldata proof, bytes32 item)
        external
        view
        returns (bool)
    {
        return _roots[submitter][root] != 0 && MerkleLeaf.processProof(proof, MerkleLeaf.leaf(item)) == root;
    }

    /// @inheritdoc IAnchorRegistryV3
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

    /// @inheritdoc IAnchorRegistryV3
    function lineageDigest(
        address researcher,
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint256 deadline
    ) external view returns (bytes32) {
        return _lineageDigest(researcher, commit, parent, diffHash, metricHash, kept, deadline);
    }

    /// @inheritdoc IAnchorRegistryV3
    // forge-lint: disable-next-line(mixed-case-function) -- the EIP-712 spelling tools expect
    function DOMAIN_SEPARATOR() external view returns (bytes32) {
        return _domainSeparator();
    }

    /// @inheritdoc IAnchorRegistryV3
    function version() external pure returns (string memory) {
        return "3.0.0";
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
        records[commit] = (uint256(full) & ~_BLOCK_MASK) | (block.number & _BLOCK_MASK);
        emit LineageAnchored(researcher, commit, parent, diffHash, metricHash, kept, timestamp);
    }

    function _lineageDigest(
        address researcher,
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint256 deadline
    ) private view returns (bytes32) {
        bytes32 structHash = keccak256(
            abi.encode(LINEAGE_TYPEHASH, researcher, commit, parent, diffHash, metricHash, kept, deadline)
        );
        return keccak256(abi.encodePacked("\x19\x01", _domainSeparator(), structHash));
    }

    function _domainSeparator() private view returns (bytes32) {
        return keccak256(abi.encode(_DOMAIN_TYPEHASH, _NAME_HASH, _VERSION_HASH, block.chainid, address(this)));
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
