// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

import {TestBase} from "./lib/Vm.sol";
import {AnchorRegistry} from "../contracts/AnchorRegistry.sol";
import {AlreadyRetracted, LineageAlreadyAnchored, RootAlreadyAnchored} from "../contracts/Errors.sol";

/// @notice Drives the registry with direct and signed lineage writes, batch roots and retractions of both, by a few accounts over small key
///         spaces (so re-writes, and one key written by several accounts, happen often), and keeps a model of
///         every record of both kinds as it was first written.
contract RegistryHandler is TestBase {
    struct Lineage {
        address researcher;
        bytes32 commit;
        bytes32 parent;
        bool kept;
        uint64 timestamp;
    }

    AnchorRegistry public immutable registry;
    Lineage[] public records;
    mapping(address researcher => mapping(bytes32 commit => bool written)) public written;
    uint256 public rejectedRewrites;

    struct Root {
        address submitter;
        bytes32 root;
        uint48 timestamp;
        uint48 blockNumber;
    }

    Root[] public roots;
    mapping(address submitter => mapping(bytes32 root => bool written)) public rootWritten;

    constructor(AnchorRegistry registry_) {
        registry = registry_;
    }

    function recordCount() external view returns (uint256) {
        return records.length;
    }

    function rootCount() external view returns (uint256) {
        return roots.length;
    }

    function anchorRoot(uint8 who, uint8 key, uint32 dt) external {
        address submitter = vm.addr(uint256(who % 4) + 1);
        bytes32 root = keccak256(abi.encode("root", key % 8));
        vm.warp(block.timestamp + dt);
        vm.roll(block.number + 1);
        vm.prank(submitter);
        try registry.anchorRoot(root) {
            require(!rootWritten[submitter][root], "root rewrite accepted");
            rootWritten[submitter][root] = true;
            // forge-lint: disable-next-line(unsafe-typecast) -- warp and roll keep both far below 2**48
            roots.push(Root(submitter, root, uint48(block.timestamp), uint48(block.number)));
        } catch (bytes memory reason) {
            require(rootWritten[submitter][root], "fresh root rejected");
            require(
                keccak256(reason) == keccak256(abi.encodeWithSelector(RootAlreadyAnchored.selector, submitter, root)),
                "wrong root revert"
            );
        }
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

    mapping(address submitter => mapping(bytes32 root => uint48 retractedBlock)) public rootRetracted;
    mapping(address researcher => mapping(bytes32 commit => uint48 retractedBlock)) public lineageRetracted;
    uint256 public rejectedRetractions;

    /// @dev Retract a root as `who`: accepted exactly when `who` anchored it and never retracted it.
    function retract(uint8 who, uint8 key, bytes32 reason) external {
        address submitter = vm.addr(uint256(who % 4) + 1);
        bytes32 root = keccak256(abi.encode("root", key % 8));
        reason = reason == bytes32(0) ? bytes32(uint256(1)) : reason;
        vm.roll(block.number + 1);
        vm.prank(submitter);
        try registry.retract(root, reason) {
            require(rootWritten[submitter][root] && rootRetracted[submitter][root] == 0, "bad retraction accepted");
            // forge-lint: disable-next-line(unsafe-typecast) -- roll keeps block numbers far below 2**48
            rootRetracted[submitter][root] = uint48(block.number);
        } catch (bytes memory why) {
            uint48 at = rootRetracted[submitter][root];
            require(!rootWritten[submitter][root] || at != 0, "a fresh retraction rejected");
            if (at != 0) {
                bytes memory expected = abi.encodeWithSelector(AlreadyRetracted.selector, submitter, root, at);
                require(keccak256(why) == keccak256(expected), "wrong retraction revert");
            }
            ++rejectedRetractions;
        }
    }

    /// @dev Retract a lineage record as `who`, directly.
    function retractLineage(uint8 who, uint8 key, bytes32 reason) external {
        address researcher = vm.addr(uint256(who % 4) + 1);
        bytes32 commit = keccak256(abi.encode("commit", key % 8));
        reason = reason == bytes32(0) ? bytes32(uint256(1)) : reason;
        vm.roll(block.number + 1);
        vm.prank(researcher);
        try registry.retractLineage(commit, reason) {
            require(written[researcher][commit] && lineageRetracted[researcher][commit] == 0, "bad retraction");
            // forge-lint: disable-next-line(unsafe-typecast) -- roll keeps block numbers far below 2**48
            lineageRetracted[researcher][commit] = uint48(block.number);
        } catch {
            require(!written[researcher][commit] || lineageRetracted[researcher][commit] != 0, "fresh one rejected");
            ++rejectedRetractions;
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
            keccak256(reason) == keccak256(abi.encodeWithSelector(LineageAlreadyAnchored.selector, researcher, commit)),
            "wrong revert"
        );
        ++rejectedRewrites;
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

    /// @notice A written root never changes or disappears, belongs to its submitter alone, and no account
    ///         that never anchored a root has a record of it.
    function invariant_SubmitterBoundRootsNeverChange() public view {
        uint256 n = handler.rootCount();
        for (uint256 i; i < n; ++i) {
            (address submitter, bytes32 root, uint48 timestamp, uint48 blockNumber) = handler.roots(i);
            (uint48 t, uint48 b,,) = registry.rootRecord(submitter, root);
            vm.assertEq(uint256(t), uint256(timestamp), "root timestamp changed");
            vm.assertEq(uint256(b), uint256(blockNumber), "root block changed");
            vm.assertFalse(registry.isAnchored(address(0xdead), root), "a root of nobody's");
        }
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

    /// @notice A retraction is its owner's alone and write-once: a record is retracted exactly when its
    ///         owner's accepted retraction says so, in that block, and never un-retracted or moved.
    function invariant_RetractionsAreTheOwnersAndWriteOnce() public view {
        uint256 n = handler.rootCount();
        for (uint256 i; i < n; ++i) {
            (address submitter, bytes32 root,,) = handler.roots(i);
            (,,, uint48 retractedBlock) = registry.rootRecord(submitter, root);
            vm.assertEq(uint256(retractedBlock), uint256(handler.rootRetracted(submitter, root)), "root retraction");
        }
        n = handler.recordCount();
        for (uint256 i; i < n; ++i) {
            (address researcher, bytes32 commit,,,) = handler.records(i);
            (,, uint48 retractedBlock) = registry.lineageRecord(researcher, commit);
            vm.assertEq(
                uint256(retractedBlock), uint256(handler.lineageRetracted(researcher, commit)), "lineage retraction"
            );
        }
    }
}
