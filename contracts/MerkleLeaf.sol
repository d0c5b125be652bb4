// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

/// @title MerkleLeaf
/// @notice Inclusion proofs for OpenZeppelin's StandardMerkleTree over one `bytes32` value per leaf.
/// @dev Same hashing as OpenZeppelin's MerkleProof: leaves are hashed twice (second-preimage safety) and
///      pairs are sorted before hashing, so a proof is a plain list of siblings with no direction bits.
library MerkleLeaf {
    /// @notice The leaf of `item`: keccak256(bytes.concat(keccak256(abi.encode(item)))).
    function leaf(bytes32 item) internal pure returns (bytes32 h) {
        assembly ("memory-safe") {
            mstore(0x00, item)
            mstore(0x00, keccak256(0x00, 0x20))
            h := keccak256(0x00, 0x20)
        }
    }

    /// @notice The root reached from `leafHash` by folding in `proof` with sorted-pair keccak256.
    function processProof(bytes32[] calldata proof, bytes32 leafHash) internal pure returns (bytes32 computed) {
        computed = leafHash;
        for (uint256 i; i < proof.length; ++i) {
            computed = hashPair(computed, proof[i]);
        }
    }

    /// @notice keccak256 of the two nodes in ascending order.
    function hashPair(bytes32 a, bytes32 b) internal pure returns (bytes32 h) {
        assembly ("memory-safe") {
            switch lt(a, b)
            case 1 {
                mstore(0x00, a)
                mstore(0x20, b)
            }
            default {
                mstore(0x00, b)
                mstore(0x20, a)
            }
            h := keccak256(0x00, 0x40)
        }
    }
}
