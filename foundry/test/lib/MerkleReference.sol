// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

/// @notice A plain reference of OpenZeppelin's StandardMerkleTree construction (heap layout, leaves sorted
///         by hash), used to build roots and proofs that the registry's inclusion view must accept.
library MerkleReference {
    function leafOf(bytes32 item) internal pure returns (bytes32) {
        return keccak256(bytes.concat(keccak256(abi.encode(item))));
    }

    function hashPair(bytes32 a, bytes32 b) internal pure returns (bytes32) {
        return a < b ? keccak256(abi.encodePacked(a, b)) : keccak256(abi.encodePacked(b, a));
    }

    /// @return tree heap array of 2n-1 nodes; tree[0] is the root.
    /// @return leafIndex leafIndex[i] is the heap position of items[i].
    function build(bytes32[] memory items) internal pure returns (bytes32[] memory tree, uint256[] memory leafIndex) {
        uint256 n = items.length;
        bytes32[] memory leaves = new bytes32[](n);
        uint256[] memory order = new uint256[](n);
        for (uint256 i; i < n; ++i) {
            leaves[i] = leafOf(items[i]);
            order[i] = i;
        }
        // positions sorted by leaf hash, ascending (OpenZeppelin sorts leaves before building): a stable
        // bottom-up merge sort, so a fuzzed tree of 1,024 items costs n log n comparisons, not n^2
        uint256[] memory spare = new uint256[](n);
        for (uint256 width = 1; width < n; width *= 2) {
            for (uint256 lo; lo < n; lo += 2 * width) {
                uint256 mid = lo + width < n ? lo + width : n;
                uint256 hi = lo + 2 * width < n ? lo + 2 * width : n;
                uint256 a = lo;
                uint256 b = mid;
                for (uint256 k = lo; k < hi; ++k) {
                    if (a < mid && (b >= hi || leaves[order[a]] <= leaves[order[b]])) {
                        spare[k] = order[a++];
                    } else {
                        spare[k] = order[b++];
                    }
                }
            }
            (order, spare) = (spare, order);
        }
        tree = new bytes32[](2 * n - 1);
        leafIndex = new uint256[](n);
        for (uint256 i; i < n; ++i) {
            uint256 pos = tree.length - 1 - i;
            tree[pos] = leaves[order[i]];
            leafIndex[order[i]] = pos;
        }
        for (uint256 k = tree.length - n; k > 0; --k) {
            uint256 i = k - 1;
            tree[i] = hashPair(tree[2 * i + 1], tree[2 * i + 2]);
        }
    }

    function proof(bytes32[] memory tree, uint256 index) internal pure returns (bytes32[] memory out) {
        uint256 depth;
        for (uint256 i = index; i > 0; i = (i - 1) / 2) {
            ++depth;
        }
        out = new bytes32[](depth);
        uint256 k;
        while (index > 0) {
            out[k++] = tree[index % 2 == 1 ? index + 1 : index - 1];
            index = (index - 1) / 2;
        }
    }
}
