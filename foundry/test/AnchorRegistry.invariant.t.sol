// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

import {TestBase, Vm} from "./lib/Vm.sol";
import {AnchorRegistry} from "../contracts/AnchorRegistry.sol";
import {IAnchorRegistry} from "../contracts/IAnchorRegistry.sol";

/// @notice Drives the registry with random writers, times and keys, including re-writes of existing keys,
///         and keeps a model of every record as it was when first written.
contract RegistryHandler is TestBase {
    struct Lineage {
        bytes32 parent;
        bytes32 diffHash;
        bytes32 metricHash;
        bool kept;
        address researcher;
        uint64 timestamp;
    }

    struct Root {
        address submitter;
        uint48 timestamp;
        uint48 blockNumber;
    }

    AnchorRegistry public immutable registry;
    bytes32[] public commits;
    bytes32[] public roots;
    mapping(bytes32 commit => Lineage record) public lineageModel;
    mapping(bytes32 root => Root record) public rootModel;
    uint256 public rejectedRewrites;

    constructor(AnchorRegistry registry_) {
        registry = registry_;
    }

    function commitCount() external view returns (uint256) {
        return commits.length;
    }

    function rootCount() external view returns (uint256) {
        return roots.length;
    }

    /// @dev Keys come from a small space so that re-writes of existing keys happen often.
    function anchor(
        uint8 key,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        address sender,
        uint32 dt
    ) external {
        bytes32 commit = keccak256(abi.encode("commit", key));
        vm.warp(block.timestamp + dt);
        bool existed = registry.exists(commit);
        vm.prank(sender);
        try registry.anchor(commit, parent, diffHash, metricHash, kept) {
            require(!existed, "rewrite accepted");
            // forge-lint: disable-next-line(unsafe-typecast) -- warp keeps timestamps far below 2**64
            lineageModel[commit] = Lineage(parent, diffHash, metricHash, kept, sender, uint64(block.timestamp));
            commits.push(commit);
        } catch (bytes memory reason) {
            require(existed, "fresh write rejected");
            require(
                keccak256(reason)
                    == keccak256(abi.encodeWithSelector(IAnchorRegistry.LineageAlreadyAnchored.selector, commit)),
                "wrong revert"
            );
            ++rejectedRewrites;
        }
    }

    function anchorRoot(uint8 key, address sender, uint32 dt, uint16 blocks) external {
        bytes32 root = keccak256(abi.encode("root", key));
        vm.warp(block.timestamp + dt);
        vm.roll(block.number + blocks);
        bool existed = registry.isAnchored(root);
        vm.prank(sender);
        try registry.anchorRoot(root) {
            require(!existed, "rewrite accepted");
            // forge-lint: disable-next-line(unsafe-typecast) -- warp and roll stay far below 2**48
            rootModel[root] = Root(sender, uint48(block.timestamp), uint48(block.number));
            roots.push(root);
        } catch (bytes memory reason) {
            require(existed, "fresh write rejected");
            require(
                keccak256(reason)
                    == keccak256(abi.encodeWithSelector(IAnchorRegistry.RootAlreadyAnchored.selector, root)),
                "wrong revert"
            );
            ++rejectedRewrites;
        }
    }
}

contract AnchorRegistryInvariantTest is TestBase {
    AnchorRegistry internal registry;
    RegistryHandler internal handler;

    function setUp() public {
        registry = new AnchorRegistry();
        handler = new RegistryHandler(registry);
        targetContract(address(handler));
    }

    /// @notice A written lineage record never changes and never disappears.
    function invariant_LineageRecordsNeverChange() public view {
        uint256 n = handler.commitCount();
        for (uint256 i; i < n; ++i) {
            bytes32 commit = handler.commits(i);
            (bytes32 parent, bytes32 diffHash, bytes32 metricHash, bool kept, address researcher, uint64 timestamp) =
                handler.lineageModel(commit);
            vm.assertTrue(registry.exists(commit), "record vanished");
            vm.assertTrue(
                registry.verifyLineage(commit, parent, diffHash, metricHash, kept, researcher, timestamp),
                "record changed"
            );
        }
    }

    /// @notice A written batch root never changes and never disappears.
    function invariant_RootRecordsNeverChange() public view {
        uint256 n = handler.rootCount();
        for (uint256 i; i < n; ++i) {
            bytes32 root = handler.roots(i);
            (address submitter, uint48 timestamp, uint48 blockNumber) = handler.rootModel(root);
            (address s, uint48 t, uint48 b) = registry.rootRecord(root);
            vm.assertEq(s, submitter, "submitter changed");
            vm.assertEq(uint256(t), uint256(timestamp), "timestamp changed");
            vm.assertEq(uint256(b), uint256(blockNumber), "block changed");
        }
    }
}
