// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

import {TestBase} from "./lib/Vm.sol";
import {AnchorRegistryV2} from "../contracts/AnchorRegistryV2.sol";
import {IAnchorRegistryV2} from "../contracts/IAnchorRegistryV2.sol";

/// @notice Drives v2 with direct and signed writes by a few researchers over a small commit space (so
///         re-writes and cross-researcher writes of one commit happen often), and keeps a model of every
///         record as it was first written.
contract RegistryV2Handler is TestBase {
    struct Lineage {
        address researcher;
        bytes32 commit;
        bytes32 parent;
        bool kept;
        uint64 timestamp;
    }

    AnchorRegistryV2 public immutable registry;
    Lineage[] public records;
    mapping(address researcher => mapping(bytes32 commit => bool written)) public written;
    uint256 public rejectedRewrites;

    constructor(AnchorRegistryV2 registry_) {
        registry = registry_;
    }

    function recordCount() external view returns (uint256) {
        return records.length;
    }

    function anchor(uint8 who, uint8 key, bytes32 parent, bool kept, uint32 dt) external {
        address researcher = vm.addr(uint256(who % 4) + 1);
        bytes32 commit = keccak256(abi.encode("commit", key % 8));
        vm.warp(block.timestamp + dt);
        vm.prank(researcher);
        try registry.anchor(commit, parent, "d", "m", kept) {
            _written(researcher, commit, parent, kept);
        } catch (bytes memory reason) {
            _rejected(researcher, commit, reason);
        }
    }

    struct Signed {
        address researcher;
        bytes32 commit;
        bytes32 parent;
        bool kept;
        uint256 deadline;
        uint8 v;
        bytes32 r;
        bytes32 s;
    }

    function anchorBySig(uint8 who, uint8 key, bytes32 parent, bool kept, uint32 dt, address relayer) external {
        uint256 secret = uint256(who % 4) + 1;
        vm.warp(block.timestamp + dt);
        Signed memory x =
            Signed(vm.addr(secret), keccak256(abi.encode("commit", key % 8)), parent, kept, block.timestamp, 0, 0, 0);
        (x.v, x.r, x.s) = vm.sign(secret, _digest(x));
        vm.prank(relayer);
        try registry.anchorBySig(x.researcher, x.commit, x.parent, "d", "m", x.kept, x.deadline, x.v, x.r, x.s) {
            _written(x.researcher, x.commit, x.parent, x.kept);
        } catch (bytes memory reason) {
            _rejected(x.researcher, x.commit, reason);
        }
    }

    function _digest(Signed memory x) private view returns (bytes32) {
        return registry.lineageDigest(x.researcher, x.commit, x.parent, "d", "m", x.kept, x.deadline);
    }

    function _written(address researcher, bytes32 commit, bytes32 parent, bool kept) private {
        require(!written[researcher][commit], "rewrite accepted");
        written[researcher][commit] = true;
        // forge-lint: disable-next-line(unsafe-typecast) -- warp keeps timestamps far below 2**64
        records.push(Lineage(researcher, commit, parent, kept, uint64(block.timestamp)));
    }

    function _rejected(address researcher, bytes32 commit, bytes memory reason) private {
        require(written[researcher][commit], "fresh write rejected");
        require(
            keccak256(reason)
                == keccak256(
                    abi.encodeWithSelector(IAnchorRegistryV2.LineageAlreadyAnchored.selector, researcher, commit)
                ),
            "wrong revert"
        );
        ++rejectedRewrites;
    }
}

contract AnchorRegistryV2InvariantTest is TestBase {
    AnchorRegistryV2 internal registry;
    RegistryV2Handler internal handler;

    function setUp() public {
        registry = new AnchorRegistryV2();
        handler = new RegistryV2Handler(registry);
        targetContract(address(handler));
    }

    /// @notice A written record never changes, never disappears, and belongs to its researcher alone.
    function invariant_ResearcherBoundRecordsNeverChange() public view {
        uint256 n = handler.recordCount();
        for (uint256 i; i < n; ++i) {
            (address researcher, bytes32 commit, bytes32 parent, bool kept, uint64 timestamp) = handler.records(i);
            vm.assertTrue(
                registry.verifyLineage(researcher, commit, parent, "d", "m", kept, timestamp), "record changed"
            );
        }
    }
}
