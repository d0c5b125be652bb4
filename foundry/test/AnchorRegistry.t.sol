// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

import {TestBase} from "./lib/Vm.sol";
import {MerkleReference} from "./lib/MerkleReference.sol";
import {AnchorRegistry} from "../contracts/AnchorRegistry.sol";
import {IAnchorRegistry} from "../contracts/IAnchorRegistry.sol";

contract AnchorRegistryTest is TestBase {
    AnchorRegistry internal registry;

    address internal constant ALICE = address(0xA11CE);
    address internal constant BOB = address(0xB0B);

    bytes32 internal constant COMMIT = bytes32(bytes20(0x1111111111111111111111111111111111111111));
    bytes32 internal constant PARENT = bytes32(bytes20(0x2222222222222222222222222222222222222222));
    bytes32 internal constant DIFF = keccak256("diff");
    bytes32 internal constant METRIC = keccak256("metric");

    // Golden vector produced by @openzeppelin/merkle-tree 1.0.8:
    // StandardMerkleTree.of([[0x..01], [0x..02], [0x..03]], ["bytes32"]).
    bytes32 internal constant OZ_ROOT = 0x6115218373392d12cc18a3d50ad2a53a2c99b391060070dfc0ebbbbe158ec944;

    function setUp() public {
        registry = new AnchorRegistry();
        vm.warp(1_700_000_000);
        vm.roll(100);
    }

    // ---------------------------------------------------------------- lineage

    function test_Anchor_StoresCommitmentOverAllFields() public {
        vm.prank(ALICE);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        bytes32 expected = keccak256(abi.encode(COMMIT, PARENT, DIFF, METRIC, true, ALICE, uint64(1_700_000_000)));
        vm.assertEq(registry.get(COMMIT), expected, "stored commitment");
        vm.assertEq(
            registry.lineageHash(COMMIT, PARENT, DIFF, METRIC, true, ALICE, 1_700_000_000), expected, "pure lineageHash"
        );
        vm.assertTrue(registry.exists(COMMIT), "exists after anchor");
        vm.assertTrue(
            registry.verifyLineage(COMMIT, PARENT, DIFF, METRIC, true, ALICE, 1_700_000_000), "verify all fields"
        );
    }

    function test_Anchor_EmitsEventWithIndexedCommitParentResearcher() public {
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAnchorRegistry.LineageAnchored(COMMIT, PARENT, ALICE, DIFF, METRIC, false, 1_700_000_000);
        vm.prank(ALICE);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, false);
    }

    function test_RevertIf_LineageAnchoredTwice() public {
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        vm.expectRevert(abi.encodeWithSelector(IAnchorRegistry.LineageAlreadyAnchored.selector, COMMIT));
        vm.prank(BOB);
        registry.anchor(COMMIT, bytes32(0), bytes32(0), bytes32(0), false);
    }

    function test_RevertIf_LineageCommitIsZero() public {
        vm.expectRevert(abi.encodeWithSelector(IAnchorRegistry.ZeroKey.selector));
        registry.anchor(bytes32(0), PARENT, DIFF, METRIC, true);
    }

    function test_Anchor_AcceptsBaselineWithZeroParent() public {
        registry.anchor(COMMIT, bytes32(0), DIFF, METRIC, true);
        vm.assertTrue(registry.exists(COMMIT), "baseline anchored");
    }

    function test_Exists_FalseAndGetZeroForUnknownCommit() public view {
        vm.assertFalse(registry.exists(COMMIT), "unknown commit exists");
        vm.assertEq(registry.get(COMMIT), bytes32(0), "unknown commit get");
        vm.assertFalse(
            registry.verifyLineage(COMMIT, PARENT, DIFF, METRIC, true, ALICE, 1_700_000_000), "unknown commit verifies"
        );
    }

    function test_VerifyLineage_RejectsEachAlteredField() public {
        vm.prank(ALICE);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        uint64 t = 1_700_000_000;
        vm.assertFalse(registry.verifyLineage(COMMIT, COMMIT, DIFF, METRIC, true, ALICE, t), "parent");
        vm.assertFalse(registry.verifyLineage(COMMIT, PARENT, METRIC, METRIC, true, ALICE, t), "diff");
        vm.assertFalse(registry.verifyLineage(COMMIT, PARENT, DIFF, DIFF, true, ALICE, t), "metric");
        vm.assertFalse(registry.verifyLineage(COMMIT, PARENT, DIFF, METRIC, false, ALICE, t), "kept");
        vm.assertFalse(registry.verifyLineage(COMMIT, PARENT, DIFF, METRIC, true, BOB, t), "researcher");
        vm.assertFalse(registry.verifyLineage(COMMIT, PARENT, DIFF, METRIC, true, ALICE, t + 1), "timestamp");
    }

    // ---------------------------------------------------------------- roots

    function test_AnchorRoot_RecordsSubmitterTimestampAndBlock() public {
        bytes32 root = keccak256("root");
        vm.prank(BOB);
        registry.anchorRoot(root);
        (address submitter, uint48 timestamp, uint48 blockNumber) = registry.rootRecord(root);
        vm.assertEq(submitter, BOB, "submitter");
        vm.assertEq(uint256(timestamp), 1_700_000_000, "timestamp");
        vm.assertEq(uint256(blockNumber), 100, "block");
        vm.assertTrue(registry.isAnchored(root), "isAnchored");
    }

    function test_AnchorRoot_EmitsEvent() public {
        bytes32 root = keccak256("root");
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAnchorRegistry.RootAnchored(root, ALICE);
        vm.prank(ALICE);
        registry.anchorRoot(root);
    }

    function test_RevertIf_RootAnchoredTwice() public {
        bytes32 root = keccak256("root");
        registry.anchorRoot(root);
        vm.expectRevert(abi.encodeWithSelector(IAnchorRegistry.RootAlreadyAnchored.selector, root));
        vm.prank(ALICE);
        registry.anchorRoot(root);
    }

    function test_RevertIf_RootIsZero() public {
        vm.expectRevert(abi.encodeWithSelector(IAnchorRegistry.ZeroKey.selector));
        registry.anchorRoot(bytes32(0));
    }

    function test_RootRecord_ZeroForUnknownRoot() public view {
        (address submitter, uint48 timestamp, uint48 blockNumber) = registry.rootRecord(keccak256("nope"));
        vm.assertEq(submitter, address(0), "submitter");
        vm.assertEq(uint256(timestamp) + uint256(blockNumber), 0, "time and block");
        vm.assertFalse(registry.isAnchored(keccak256("nope")), "isAnchored");
    }

    function test_VerifyInclusion_OpenZeppelinGoldenVector() public {
        registry.anchorRoot(OZ_ROOT);
        bytes32[] memory items = _items3();
        (bytes32[] memory tree, uint256[] memory idx) = MerkleReference.build(items);
        vm.assertEq(tree[0], OZ_ROOT, "reference root equals OpenZeppelin root");
        for (uint256 i; i < 3; ++i) {
            vm.assertTrue(
                registry.verifyInclusion(OZ_ROOT, MerkleReference.proof(tree, idx[i]), items[i]), "item included"
            );
        }
    }

    function test_VerifyInclusion_FlippedByteFails() public {
        registry.anchorRoot(OZ_ROOT);
        bytes32[] memory items = _items3();
        (bytes32[] memory tree, uint256[] memory idx) = MerkleReference.build(items);
        bytes32[] memory proof = MerkleReference.proof(tree, idx[0]);
        proof[0] = proof[0] ^ bytes32(uint256(1) << 8);
        vm.assertFalse(registry.verifyInclusion(OZ_ROOT, proof, items[0]), "flipped proof byte");
        vm.assertFalse(
            registry.verifyInclusion(OZ_ROOT, MerkleReference.proof(tree, idx[0]), items[0] ^ bytes32(uint256(1))),
            "flipped item byte"
        );
    }

    function test_VerifyInclusion_FalseWhenRootNotAnchored() public view {
        bytes32[] memory items = _items3();
        (bytes32[] memory tree, uint256[] memory idx) = MerkleReference.build(items);
        vm.assertFalse(
            registry.verifyInclusion(tree[0], MerkleReference.proof(tree, idx[1]), items[1]), "unanchored root"
        );
    }

    function test_VerifyInclusion_SingleLeafTreeHasEmptyProof() public {
        bytes32 item = keccak256("only");
        bytes32 root = MerkleReference.leafOf(item);
        registry.anchorRoot(root);
        vm.assertTrue(registry.verifyInclusion(root, new bytes32[](0), item), "single leaf");
    }

    function test_Version() public view {
        vm.assertEq(registry.version(), "1.0.0", "version");
    }

    // ---------------------------------------------------------------- fuzz

    function testFuzz_LineageChain(bytes32 seed, uint8 length, address researcher) public {
        uint256 n = bound(length, 1, 32);
        bytes32 parent;
        for (uint256 i; i < n; ++i) {
            bytes32 commit = keccak256(abi.encode(seed, i));
            vm.warp(1_700_000_000 + i);
            vm.prank(researcher);
            registry.anchor(commit, parent, keccak256(abi.encode(commit, "d")), keccak256(abi.encode(i)), i % 2 == 0);
            parent = commit;
        }
        parent = bytes32(0);
        for (uint256 i; i < n; ++i) {
            bytes32 commit = keccak256(abi.encode(seed, i));
            vm.assertTrue(
                registry.verifyLineage(
                    commit,
                    parent,
                    keccak256(abi.encode(commit, "d")),
                    keccak256(abi.encode(i)),
                    i % 2 == 0,
                    researcher,
                    // forge-lint: disable-next-line(unsafe-typecast) -- i < 32
                    uint64(1_700_000_000 + i)
                ),
                "chain link verifies"
            );
            vm.expectRevert(abi.encodeWithSelector(IAnchorRegistry.LineageAlreadyAnchored.selector, commit));
            registry.anchor(commit, parent, bytes32(0), bytes32(0), false);
            parent = commit;
        }
    }

    function testFuzz_RandomTreeProofsVerify(uint256 seed, uint256 size) public {
        (uint256 n, bytes32[] memory items, bytes32[] memory tree, uint256[] memory idx) = _anchoredTree(seed, size);
        // every 1..16th leaf, always including the first and the last
        uint256 step = n / 16 + 1;
        for (uint256 i; i < n; i += step) {
            vm.assertTrue(registry.verifyInclusion(tree[0], MerkleReference.proof(tree, idx[i]), items[i]), "leaf");
        }
        vm.assertTrue(
            registry.verifyInclusion(tree[0], MerkleReference.proof(tree, idx[n - 1]), items[n - 1]), "last leaf"
        );
    }

    function testFuzz_TamperedProofOrItemFails(uint256 seed, uint256 size, uint256 pick, uint256 bit) public {
        (uint256 n, bytes32[] memory items, bytes32[] memory tree, uint256[] memory idx) = _anchoredTree(seed, size);
        uint256 k = bound(pick, 0, n - 1);
        bytes32 flip = bytes32(uint256(1) << bound(bit, 0, 255));
        bytes32[] memory proof = MerkleReference.proof(tree, idx[k]);
        vm.assertFalse(registry.verifyInclusion(tree[0], proof, items[k] ^ flip), "tampered item");
        if (proof.length > 0) {
            uint256 at = bound(pick >> 128, 0, proof.length - 1);
            proof[at] = proof[at] ^ flip;
            vm.assertFalse(registry.verifyInclusion(tree[0], proof, items[k]), "tampered proof");
        }
    }

    function testFuzz_RootAnchoredOnceOnly(bytes32 root, address first, address second) public {
        vm.assume(root != bytes32(0));
        vm.prank(first);
        registry.anchorRoot(root);
        vm.expectRevert(abi.encodeWithSelector(IAnchorRegistry.RootAlreadyAnchored.selector, root));
        vm.prank(second);
        registry.anchorRoot(root);
        (address submitter,,) = registry.rootRecord(root);
        vm.assertEq(submitter, first, "first writer wins");
    }

    /// @dev A tree of 1..1024 pseudo-random items, built by the reference and anchored.
    function _anchoredTree(uint256 seed, uint256 size)
        internal
        returns (uint256 n, bytes32[] memory items, bytes32[] memory tree, uint256[] memory idx)
    {
        n = bound(size, 1, 1024);
        items = new bytes32[](n);
        for (uint256 i; i < n; ++i) {
            items[i] = keccak256(abi.encode(seed, i));
        }
        (tree, idx) = MerkleReference.build(items);
        registry.anchorRoot(tree[0]);
    }

    function _items3() internal pure returns (bytes32[] memory items) {
        items = new bytes32[](3);
        items[0] = bytes32(uint256(1));
        items[1] = bytes32(uint256(2));
        items[2] = bytes32(uint256(3));
    }
}
