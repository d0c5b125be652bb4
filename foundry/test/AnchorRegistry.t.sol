// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

import {TestBase} from "./lib/Vm.sol";
import {MerkleReference} from "./lib/MerkleReference.sol";
import {AnchorRegistry} from "../contracts/AnchorRegistry.sol";
import {IAnchorRegistry} from "../contracts/IAnchorRegistry.sol";
import {
    AlreadyRetracted,
    LineageAlreadyAnchored,
    LineageNotAnchored,
    MalformedSignature,
    RootAlreadyAnchored,
    RootNotAnchored,
    SignatureExpired,
    WrongSigner,
    ZeroKey,
    ZeroReason
} from "../contracts/Errors.sol";

contract AnchorRegistryTest is TestBase {
    AnchorRegistry internal registry;

    uint256 internal constant VICTIM_KEY = 0xA11CE;
    uint256 internal constant STRANGER_KEY = 0xB0B;
    address internal victim;
    address internal stranger;
    address internal constant RELAYER = address(0x5E1A7);
    uint256 internal constant N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141;

    bytes32 internal constant COMMIT = bytes32(bytes20(0x1111111111111111111111111111111111111111));
    bytes32 internal constant PARENT = bytes32(bytes20(0x2222222222222222222222222222222222222222));
    bytes32 internal constant DIFF = keccak256("diff");
    bytes32 internal constant METRIC = keccak256("metric");
    uint64 internal constant T0 = 1_700_000_000;
    uint256 internal constant DEADLINE = T0 + 3600;

    function setUp() public {
        registry = new AnchorRegistry();
        victim = vm.addr(VICTIM_KEY);
        stranger = vm.addr(STRANGER_KEY);
        vm.warp(T0);
        vm.roll(100);
        // Records the retraction gas tests retract, written here so that in the test (its own transaction)
        // their slots are cold and clean, as a retraction sent in a later transaction finds them.
        registry.anchorRoot(GAS_ROOT);
        registry.anchor(GAS_COMMIT, PARENT, DIFF, METRIC, true);
        vm.prank(victim);
        registry.anchor(GAS_COMMIT, PARENT, DIFF, METRIC, true);
    }

    bytes32 internal constant GAS_ROOT = keccak256("gas-retracted-root");
    bytes32 internal constant GAS_COMMIT = keccak256("gas-retracted-commit");

    function _sign(uint256 key, address researcher, bytes32 commit, bool kept, uint256 deadline)
        internal
        view
        returns (uint8 v, bytes32 r, bytes32 s)
    {
        return vm.sign(key, registry.lineageDigest(researcher, commit, PARENT, DIFF, METRIC, kept, deadline));
    }

    /// @dev The exact revert of a signature that recovers to someone other than `researcher`.
    function _wrongSigner(address researcher, bytes32 digest, uint8 v, bytes32 r, bytes32 s)
        internal
        pure
        returns (bytes memory)
    {
        address recovered = ecrecover(digest, v, r, s);
        require(recovered != researcher, "recovers to the researcher");
        return abi.encodeWithSelector(WrongSigner.selector, researcher, recovered);
    }

    function _prefix(bytes32 full) internal pure returns (bytes32) {
        return full & ~bytes32(uint256(type(uint96).max));
    }

    // ---------------------------------------------------------------- direct lineage records

    function test_Anchor_StoresCommitmentPrefixAndBlock() public {
        vm.prank(victim);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        (bytes20 commitment, uint48 blockNumber,) = registry.lineageRecord(victim, COMMIT);
        bytes32 full = keccak256(abi.encode(victim, COMMIT, PARENT, DIFF, METRIC, true, T0));
        vm.assertEq(bytes32(commitment), _prefix(full), "commitment prefix (160 bits)");
        vm.assertEq(uint256(blockNumber), 100, "block number beside the commitment");
        vm.assertEq(registry.lineageHash(victim, COMMIT, PARENT, DIFF, METRIC, true, T0), full, "pure lineageHash");
        vm.assertTrue(registry.verifyLineage(victim, COMMIT, PARENT, DIFF, METRIC, true, T0), "all fields verify");
    }

    function test_Anchor_EmitsEventIndexedByResearcherCommitParent() public {
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAnchorRegistry.LineageAnchored(victim, COMMIT, PARENT, DIFF, METRIC, false, T0);
        vm.prank(victim);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, false);
    }

    function test_VerifyLineage_RejectsEachAlteredField() public {
        vm.prank(victim);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        vm.assertFalse(registry.verifyLineage(victim, COMMIT, COMMIT, DIFF, METRIC, true, T0), "parent");
        vm.assertFalse(registry.verifyLineage(victim, COMMIT, PARENT, METRIC, METRIC, true, T0), "diff");
        vm.assertFalse(registry.verifyLineage(victim, COMMIT, PARENT, DIFF, DIFF, true, T0), "metric");
        vm.assertFalse(registry.verifyLineage(victim, COMMIT, PARENT, DIFF, METRIC, false, T0), "kept");
        vm.assertFalse(registry.verifyLineage(stranger, COMMIT, PARENT, DIFF, METRIC, true, T0), "researcher");
        vm.assertFalse(registry.verifyLineage(victim, COMMIT, PARENT, DIFF, METRIC, true, T0 + 1), "timestamp");
    }

    function test_RevertIf_ResearcherAnchorsTheSameCommitTwice() public {
        vm.prank(victim);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        vm.expectRevert(abi.encodeWithSelector(LineageAlreadyAnchored.selector, victim, COMMIT));
        vm.prank(victim);
        registry.anchor(COMMIT, bytes32(0), bytes32(0), bytes32(0), false);
    }

    function test_RevertIf_LineageCommitIsZero() public {
        vm.expectRevert(abi.encodeWithSelector(ZeroKey.selector));
        registry.anchor(bytes32(0), PARENT, DIFF, METRIC, true);
    }

    function test_LineageRecord_ZeroForUnknown() public view {
        (bytes20 commitment, uint48 blockNumber,) = registry.lineageRecord(victim, COMMIT);
        vm.assertEq(bytes32(commitment), bytes32(0), "commitment");
        vm.assertEq(uint256(blockNumber), 0, "block");
        vm.assertFalse(registry.verifyLineage(victim, COMMIT, PARENT, DIFF, METRIC, true, T0), "unknown verifies");
    }

    // ---------------------------------------------------------------- front-running

    /// @notice A stranger who saw the victim's commit id anchors it first, with the victim's fields and
    ///         with other ones: the victim's own write still succeeds, and the records stay distinct.
    function test_FrontRun_StrangerCannotTakeBlockOrOverwriteTheVictimsCommit() public {
        vm.prank(stranger);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true); // the victim's exact fields
        address other = address(0xBAD);
        vm.prank(other);
        registry.anchor(COMMIT, bytes32(0), keccak256("forged"), keccak256("forged"), false); // other fields
        vm.roll(101);
        vm.warp(T0 + 12);
        vm.prank(victim);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        vm.assertTrue(registry.verifyLineage(victim, COMMIT, PARENT, DIFF, METRIC, true, T0 + 12), "victim's record");
        vm.assertTrue(registry.verifyLineage(stranger, COMMIT, PARENT, DIFF, METRIC, true, T0), "stranger's own");
        vm.assertFalse(registry.verifyLineage(victim, COMMIT, PARENT, DIFF, METRIC, true, T0), "not the stranger's");
        (, uint48 victimBlock,) = registry.lineageRecord(victim, COMMIT);
        (, uint48 strangerBlock,) = registry.lineageRecord(stranger, COMMIT);
        vm.assertEq(uint256(victimBlock), 101, "victim's block");
        vm.assertEq(uint256(strangerBlock), 100, "stranger's block");
    }

    /// @notice A signed record seen in the mempool and submitted first by someone else still lands under
    ///         the signer: front-running a relayed write changes who pays, never whose record it is.
    function test_FrontRun_CopiedSignatureStillRecordsTheSigner() public {
        (uint8 v, bytes32 r, bytes32 s) = _sign(VICTIM_KEY, victim, COMMIT, true, DEADLINE);
        vm.prank(stranger);
        registry.anchorBySig(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE, v, r, s);
        vm.assertTrue(registry.verifyLineage(victim, COMMIT, PARENT, DIFF, METRIC, true, T0), "under the signer");
        vm.expectRevert(abi.encodeWithSelector(LineageAlreadyAnchored.selector, victim, COMMIT));
        vm.prank(RELAYER);
        registry.anchorBySig(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE, v, r, s);
    }

    // ---------------------------------------------------------------- signed records

    function test_AnchorBySig_TheSignerNotThePayerIsTheResearcher() public {
        (uint8 v, bytes32 r, bytes32 s) = _sign(VICTIM_KEY, victim, COMMIT, true, DEADLINE);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAnchorRegistry.LineageAnchored(victim, COMMIT, PARENT, DIFF, METRIC, true, T0);
        vm.prank(RELAYER);
        registry.anchorBySig(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE, v, r, s);
        vm.assertTrue(registry.verifyLineage(victim, COMMIT, PARENT, DIFF, METRIC, true, T0), "signer's record");
        vm.assertFalse(registry.verifyLineage(RELAYER, COMMIT, PARENT, DIFF, METRIC, true, T0), "not the payer's");
    }

    function test_LineageDigest_IsEIP712OverChainAndRegistry() public view {
        bytes32 domain = keccak256(
            abi.encode(
                keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"),
                keccak256("AnchorRegistry"),
                keccak256("4"),
                block.chainid,
                address(registry)
            )
        );
        vm.assertEq(registry.DOMAIN_SEPARATOR(), domain, "domain separator");
        bytes32 structHash =
            keccak256(abi.encode(registry.LINEAGE_TYPEHASH(), victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE));
        vm.assertEq(
            registry.lineageDigest(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE),
            keccak256(abi.encodePacked("\x19\x01", domain, structHash)),
            "typed-data digest"
        );
    }

    function test_RevertIf_BySigReplayedOnAnotherChain() public {
        (uint8 v, bytes32 r, bytes32 s) = _sign(VICTIM_KEY, victim, COMMIT, true, DEADLINE);
        vm.chainId(8453);
        bytes32 there = registry.lineageDigest(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE);
        vm.expectRevert(_wrongSigner(victim, there, v, r, s));
        registry.anchorBySig(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE, v, r, s);
        vm.assertFalse(registry.verifyLineage(victim, COMMIT, PARENT, DIFF, METRIC, true, T0), "nothing written");
    }

    function test_RevertIf_BySigReplayedOnAnotherRegistry() public {
        (uint8 v, bytes32 r, bytes32 s) = _sign(VICTIM_KEY, victim, COMMIT, true, DEADLINE);
        AnchorRegistry other = new AnchorRegistry();
        address recovered =
            ecrecover(other.lineageDigest(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE), v, r, s);
        vm.expectRevert(abi.encodeWithSelector(WrongSigner.selector, victim, recovered));
        other.anchorBySig(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE, v, r, s);
    }

    function test_RevertIf_BySigAfterTheDeadline() public {
        (uint8 v, bytes32 r, bytes32 s) = _sign(VICTIM_KEY, victim, COMMIT, true, DEADLINE);
        vm.warp(DEADLINE + 1);
        vm.expectRevert(abi.encodeWithSelector(SignatureExpired.selector, DEADLINE));
        registry.anchorBySig(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE, v, r, s);
    }

    function test_AnchorBySig_AcceptedAtTheDeadlineItself() public {
        (uint8 v, bytes32 r, bytes32 s) = _sign(VICTIM_KEY, victim, COMMIT, true, DEADLINE);
        vm.warp(DEADLINE);
        registry.anchorBySig(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE, v, r, s);
        (, uint48 blockNumber,) = registry.lineageRecord(victim, COMMIT);
        vm.assertEq(uint256(blockNumber), 100, "anchored");
    }

    function test_RevertIf_BySigHasHighS() public {
        (uint8 v, bytes32 r, bytes32 s) = _sign(VICTIM_KEY, victim, COMMIT, true, DEADLINE);
        bytes32 highS = bytes32(N - uint256(s)); // the malleable twin: same signer, other bytes
        uint8 flipped = v == 27 ? 28 : 27;
        vm.expectRevert(abi.encodeWithSelector(MalformedSignature.selector));
        registry.anchorBySig(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE, flipped, r, highS);
    }

    function test_RevertIf_BySigHasABadV() public {
        (, bytes32 r, bytes32 s) = _sign(VICTIM_KEY, victim, COMMIT, true, DEADLINE);
        vm.expectRevert(abi.encodeWithSelector(MalformedSignature.selector));
        registry.anchorBySig(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE, 29, r, s);
    }

    function test_RevertIf_BySigSignerIsNotTheClaimedResearcher() public {
        (uint8 v, bytes32 r, bytes32 s) = _sign(STRANGER_KEY, victim, COMMIT, true, DEADLINE);
        vm.expectRevert(abi.encodeWithSelector(WrongSigner.selector, victim, stranger));
        registry.anchorBySig(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE, v, r, s);
    }

    function test_RevertIf_BySigFieldAlteredAfterSigning() public {
        (uint8 v, bytes32 r, bytes32 s) = _sign(VICTIM_KEY, victim, COMMIT, true, DEADLINE);
        bytes32 flippedKept = registry.lineageDigest(victim, COMMIT, PARENT, DIFF, METRIC, false, DEADLINE);
        vm.expectRevert(_wrongSigner(victim, flippedKept, v, r, s));
        registry.anchorBySig(victim, COMMIT, PARENT, DIFF, METRIC, false, DEADLINE, v, r, s);
        bytes32 laterDeadline = registry.lineageDigest(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE + 1);
        vm.expectRevert(_wrongSigner(victim, laterDeadline, v, r, s));
        registry.anchorBySig(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE + 1, v, r, s);
    }

    function test_RevertIf_BySigCommitIsZero() public {
        (uint8 v, bytes32 r, bytes32 s) = _sign(VICTIM_KEY, victim, bytes32(0), true, DEADLINE);
        vm.expectRevert(abi.encodeWithSelector(ZeroKey.selector));
        registry.anchorBySig(victim, bytes32(0), PARENT, DIFF, METRIC, true, DEADLINE, v, r, s);
    }

    // ---------------------------------------------------------------- gas, as a receipt would show it

    /// @dev Intrinsic gas of a transaction carrying `data` (EIP-2028: 4 per zero byte, 16 otherwise).
    function _intrinsic(bytes memory data) internal pure returns (uint256 gas) {
        gas = 21_000;
        for (uint256 i; i < data.length; ++i) {
            gas += data[i] == 0 ? 4 : 16;
        }
    }

    /// @dev Receipt-equivalent gas of one call: the intrinsic cost of its calldata plus what the call
    ///      itself executed (forge's own count, without our CALL overhead), on a fresh slot, as on chain.
    function _receiptGas(bytes memory data) internal returns (uint256) {
        (bool ok,) = address(registry).call(data);
        require(ok, "call reverted");
        return _intrinsic(data) + vm.lastCallGas().gasTotalUsed;
    }

    function test_Gas_DirectLineageRecordWithin50k() public {
        bytes32 commit = keccak256("gas-direct");
        bytes memory data = abi.encodeCall(registry.anchor, (commit, PARENT, DIFF, METRIC, true));
        vm.assertLe(_receiptGas(data), 50_000, "direct lineage record");
    }

    function test_Gas_SignedLineageRecordWithin58k() public {
        bytes32 commit = keccak256("gas-signed");
        (uint8 v, bytes32 r, bytes32 s) = _sign(VICTIM_KEY, victim, commit, true, DEADLINE);
        bytes memory data =
            abi.encodeCall(registry.anchorBySig, (victim, commit, PARENT, DIFF, METRIC, true, DEADLINE, v, r, s));
        vm.assertLe(_receiptGas(data), 58_000, "signed lineage record");
    }

    function test_Gas_BatchRootWithin46500() public {
        bytes memory data = abi.encodeCall(registry.anchorRoot, (keccak256("gas-root")));
        vm.assertLe(_receiptGas(data), 46_500, "batch root");
    }

    // ---------------------------------------------------------------- roots, keyed by (submitter, root)

    function test_AnchorRoot_RecordsTimestampAndBlockUnderItsSubmitter() public {
        bytes32 root = keccak256("root");
        vm.expectEmit(true, true, false, false, address(registry));
        emit IAnchorRegistry.RootAnchored(root, stranger);
        vm.prank(stranger);
        registry.anchorRoot(root);
        (uint48 timestamp, uint48 blockNumber,,) = registry.rootRecord(stranger, root);
        vm.assertEq(uint256(timestamp), T0, "timestamp");
        vm.assertEq(uint256(blockNumber), 100, "block");
        vm.assertTrue(registry.isAnchored(stranger, root), "isAnchored");
        vm.assertFalse(registry.isAnchored(victim, root), "anchored by nobody else");
        (timestamp, blockNumber,,) = registry.rootRecord(victim, root);
        vm.assertEq(uint256(timestamp) + uint256(blockNumber), 0, "no record of the victim's");
    }

    /// @notice A one-item batch's root is computable from a public digest, and any root can be
    ///         copied from the mempool. On the retired v2 the stranger who anchored it first owned it and the
    ///         victim's anchor reverted; here the stranger's record is the stranger's, and the victim's goes in.
    function test_FrontRun_StrangerWhoAnchorsTheVictimsRootFirstNeitherBlocksNorOwnsIt() public {
        bytes32 item = keccak256("a public manifest digest");
        bytes32 root = keccak256(bytes.concat(keccak256(abi.encode(item)))); // its one-item batch
        vm.prank(stranger);
        registry.anchorRoot(root); // seen in the mempool, sent with a higher fee
        vm.roll(101);
        vm.prank(victim);
        registry.anchorRoot(root);
        (, uint48 victimsBlock,,) = registry.rootRecord(victim, root);
        (, uint48 strangersBlock,,) = registry.rootRecord(stranger, root);
        vm.assertEq(uint256(victimsBlock), 101, "the victim's own record");
        vm.assertEq(uint256(strangersBlock), 100, "the stranger's, untouched");
        bytes32[] memory none = new bytes32[](0);
        vm.assertTrue(registry.verifyInclusion(victim, root, none, item), "included under the victim's root");
        vm.assertTrue(registry.verifyInclusion(stranger, root, none, item), "and under the stranger's, as theirs");
        vm.assertFalse(registry.verifyInclusion(RELAYER, root, none, item), "never under one who did not anchor it");
    }

    function test_RevertIf_SubmitterAnchorsTheSameRootTwice() public {
        bytes32 root = keccak256("root");
        registry.anchorRoot(root);
        vm.expectRevert(abi.encodeWithSelector(RootAlreadyAnchored.selector, address(this), root));
        registry.anchorRoot(root);
    }

    function test_RevertIf_RootIsZero() public {
        vm.expectRevert(abi.encodeWithSelector(ZeroKey.selector));
        registry.anchorRoot(bytes32(0));
    }

    function test_VerifyInclusion_FalseForAFlippedItemOrAnUnanchoredRoot() public {
        bytes32 a = keccak256("a");
        bytes32 b = keccak256("b");
        bytes32 leafA = keccak256(bytes.concat(keccak256(abi.encode(a))));
        bytes32 leafB = keccak256(bytes.concat(keccak256(abi.encode(b))));
        bytes32 root = leafA < leafB ? keccak256(abi.encode(leafA, leafB)) : keccak256(abi.encode(leafB, leafA));
        bytes32[] memory proof = new bytes32[](1);
        proof[0] = leafB;
        vm.assertFalse(registry.verifyInclusion(victim, root, proof, a), "not anchored yet");
        vm.prank(victim);
        registry.anchorRoot(root);
        vm.assertTrue(registry.verifyInclusion(victim, root, proof, a), "a is in");
        vm.assertFalse(registry.verifyInclusion(victim, root, proof, b ^ bytes32(uint256(1))), "a flipped item");
    }

    function test_Version() public view {
        vm.assertEq(registry.version(), "4.0.0", "version");
    }

    // ---------------------------------------------------------------- retraction

    bytes32 internal constant REASON = keccak256("the metric was computed on the training split");

    function test_Retract_MarksTheRootRetractedAndKeepsTheRecord() public {
        bytes32 item = keccak256("a manifest digest");
        bytes32 root = MerkleReference.leafOf(item); // its one-item batch
        vm.prank(victim);
        registry.anchorRoot(root);
        vm.roll(107);
        vm.warp(T0 + 84);
        vm.expectEmit(true, true, false, true, address(registry));
        emit IAnchorRegistry.RootRetracted(root, victim, REASON);
        vm.prank(victim);
        registry.retract(root, REASON);
        (uint48 timestamp, uint48 blockNumber, uint48 retractedAt, uint48 retractedBlock) =
            registry.rootRecord(victim, root);
        vm.assertEq(uint256(timestamp), T0, "anchor time kept");
        vm.assertEq(uint256(blockNumber), 100, "anchor block kept");
        vm.assertEq(uint256(retractedAt), T0 + 84, "retraction time");
        vm.assertEq(uint256(retractedBlock), 107, "retraction block");
        vm.assertTrue(registry.isAnchored(victim, root), "still anchored: a retraction never deletes");
        vm.assertTrue(registry.verifyInclusion(victim, root, new bytes32[](0), item), "inclusion unchanged");
    }

    /// @notice Whoever is not the record's submitter cannot retract it: a stranger's retraction of the
    ///         victim's root reverts (the stranger has no record of it) and leaves the victim's record as it was.
    function test_RevertIf_AStrangerRetractsTheVictimsRoot() public {
        bytes32 root = keccak256("root");
        vm.prank(victim);
        registry.anchorRoot(root);
        vm.expectRevert(abi.encodeWithSelector(RootNotAnchored.selector, stranger, root));
        vm.prank(stranger);
        registry.retract(root, REASON);
        (,, uint48 retractedAt, uint48 retractedBlock) = registry.rootRecord(victim, root);
        vm.assertEq(uint256(retractedAt) + uint256(retractedBlock), 0, "the victim's record is not retracted");
    }

    /// @notice A stranger who anchors the victim's root too and retracts their own record retracts only theirs.
    function test_FrontRun_AStrangersRetractionOfTheSameRootIsTheirsAlone() public {
        bytes32 root = keccak256("root");
        vm.prank(victim);
        registry.anchorRoot(root);
        vm.startPrank(stranger);
        registry.anchorRoot(root);
        registry.retract(root, REASON);
        vm.stopPrank();
        (,,, uint48 victims) = registry.rootRecord(victim, root);
        (,,, uint48 strangers) = registry.rootRecord(stranger, root);
        vm.assertEq(uint256(victims), 0, "the victim's record untouched");
        vm.assertEq(uint256(strangers), 100, "the stranger's own record retracted");
    }

    function test_RevertIf_RootRetractedTwice() public {
        bytes32 root = keccak256("root");
        vm.startPrank(victim);
        registry.anchorRoot(root);
        registry.retract(root, REASON);
        vm.roll(101);
        vm.expectRevert(abi.encodeWithSelector(AlreadyRetracted.selector, victim, root, uint48(100)));
        registry.retract(root, keccak256("another reason"));
        vm.stopPrank();
        (,,, uint48 retractedBlock) = registry.rootRecord(victim, root);
        vm.assertEq(uint256(retractedBlock), 100, "the first retraction stands");
    }

    function test_RevertIf_RetractionHasNoReason() public {
        bytes32 root = keccak256("root");
        vm.startPrank(victim);
        registry.anchorRoot(root);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        vm.expectRevert(abi.encodeWithSelector(ZeroReason.selector));
        registry.retract(root, bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ZeroReason.selector));
        registry.retractLineage(COMMIT, bytes32(0));
        vm.stopPrank();
    }

    function test_RetractLineage_MarksTheRecordAndKeepsItsFields() public {
        vm.prank(victim);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        vm.roll(103);
        vm.expectEmit(true, true, false, true, address(registry));
        emit IAnchorRegistry.LineageRetracted(victim, COMMIT, REASON);
        vm.prank(victim);
        registry.retractLineage(COMMIT, REASON);
        (bytes20 commitment, uint48 blockNumber, uint48 retractedBlock) = registry.lineageRecord(victim, COMMIT);
        bytes32 full = keccak256(abi.encode(victim, COMMIT, PARENT, DIFF, METRIC, true, T0));
        vm.assertEq(bytes32(commitment), _prefix(full), "commitment kept");
        vm.assertEq(uint256(blockNumber), 100, "record block kept");
        vm.assertEq(uint256(retractedBlock), 103, "retraction block");
        vm.assertTrue(registry.verifyLineage(victim, COMMIT, PARENT, DIFF, METRIC, true, T0), "fields still verify");
    }

    function test_RevertIf_AStrangerRetractsTheVictimsLineage() public {
        vm.prank(victim);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        vm.expectRevert(abi.encodeWithSelector(LineageNotAnchored.selector, stranger, COMMIT));
        vm.prank(stranger);
        registry.retractLineage(COMMIT, REASON);
        (,, uint48 retractedBlock) = registry.lineageRecord(victim, COMMIT);
        vm.assertEq(uint256(retractedBlock), 0, "not retracted");
    }

    function test_RevertIf_LineageRetractedTwice() public {
        vm.startPrank(victim);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        registry.retractLineage(COMMIT, REASON);
        vm.expectRevert(abi.encodeWithSelector(AlreadyRetracted.selector, victim, COMMIT, uint48(100)));
        registry.retractLineage(COMMIT, REASON);
        vm.stopPrank();
    }

    function _signRetraction(uint256 key, address researcher, bytes32 commit, bytes32 reason, uint256 deadline)
        internal
        view
        returns (uint8 v, bytes32 r, bytes32 s)
    {
        return vm.sign(key, registry.retractionDigest(researcher, commit, reason, deadline));
    }

    function test_RetractLineageBySig_TheSignerNotThePayerRetracts() public {
        vm.prank(victim);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        (uint8 v, bytes32 r, bytes32 s) = _signRetraction(VICTIM_KEY, victim, COMMIT, REASON, DEADLINE);
        vm.expectEmit(true, true, false, true, address(registry));
        emit IAnchorRegistry.LineageRetracted(victim, COMMIT, REASON);
        vm.prank(RELAYER);
        registry.retractLineageBySig(victim, COMMIT, REASON, DEADLINE, v, r, s);
        (,, uint48 retractedBlock) = registry.lineageRecord(victim, COMMIT);
        vm.assertEq(uint256(retractedBlock), 100, "retracted under the signer");
    }

    function test_RevertIf_RetractionBySigIsAStrangersOrAltered() public {
        vm.prank(victim);
        registry.anchor(COMMIT, PARENT, DIFF, METRIC, true);
        (uint8 v, bytes32 r, bytes32 s) = _signRetraction(STRANGER_KEY, victim, COMMIT, REASON, DEADLINE);
        vm.expectRevert(abi.encodeWithSelector(WrongSigner.selector, victim, stranger));
        registry.retractLineageBySig(victim, COMMIT, REASON, DEADLINE, v, r, s);
        (v, r, s) = _signRetraction(VICTIM_KEY, victim, COMMIT, REASON, DEADLINE);
        bytes32 otherReason = registry.retractionDigest(victim, COMMIT, keccak256("other"), DEADLINE);
        vm.expectRevert(_wrongSigner(victim, otherReason, v, r, s));
        registry.retractLineageBySig(victim, COMMIT, keccak256("other"), DEADLINE, v, r, s);
        vm.warp(DEADLINE + 1);
        vm.expectRevert(abi.encodeWithSelector(SignatureExpired.selector, DEADLINE));
        registry.retractLineageBySig(victim, COMMIT, REASON, DEADLINE, v, r, s);
        (,, uint48 retractedBlock) = registry.lineageRecord(victim, COMMIT);
        vm.assertEq(uint256(retractedBlock), 0, "nothing retracted");
    }

    /// @notice A lineage signature cannot be replayed as a retraction: the two typed messages differ.
    function test_RetractionDigest_IsEIP712AndDiffersFromTheLineageDigest() public view {
        bytes32 structHash = keccak256(abi.encode(registry.RETRACTION_TYPEHASH(), victim, COMMIT, REASON, DEADLINE));
        vm.assertEq(
            registry.retractionDigest(victim, COMMIT, REASON, DEADLINE),
            keccak256(abi.encodePacked("\x19\x01", registry.DOMAIN_SEPARATOR(), structHash)),
            "typed-data digest"
        );
        vm.assertEq(
            registry.RETRACTION_TYPEHASH(),
            keccak256("LineageRetraction(address researcher,bytes32 commit,bytes32 reason,uint256 deadline)"),
            "type"
        );
        vm.assertTrue(
            registry.retractionDigest(victim, COMMIT, REASON, DEADLINE)
                != registry.lineageDigest(victim, COMMIT, PARENT, DIFF, METRIC, true, DEADLINE),
            "distinct messages"
        );
    }

    function test_Gas_RootRetractionWithin30k() public {
        vm.assertLe(_receiptGas(abi.encodeCall(registry.retract, (GAS_ROOT, REASON))), 30_000, "root retraction");
    }

    function test_Gas_LineageRetractionWithin30k() public {
        bytes memory data = abi.encodeCall(registry.retractLineage, (GAS_COMMIT, REASON));
        vm.assertLe(_receiptGas(data), 30_000, "lineage retraction");
    }

    function test_Gas_SignedLineageRetractionWithin40k() public {
        (uint8 v, bytes32 r, bytes32 s) = _signRetraction(VICTIM_KEY, victim, GAS_COMMIT, REASON, DEADLINE);
        bytes memory data =
            abi.encodeCall(registry.retractLineageBySig, (victim, GAS_COMMIT, REASON, DEADLINE, v, r, s));
        vm.assertLe(_receiptGas(data), 40_000, "signed lineage retraction");
    }

    // ---------------------------------------------------------------- inclusion, against OpenZeppelin's tree

    // Golden vector produced by @openzeppelin/merkle-tree 1.0.8:
    // StandardMerkleTree.of([[0x..01], [0x..02], [0x..03]], ["bytes32"]).
    bytes32 internal constant OZ_ROOT = 0x6115218373392d12cc18a3d50ad2a53a2c99b391060070dfc0ebbbbe158ec944;

    function test_VerifyInclusion_OpenZeppelinGoldenVector() public {
        registry.anchorRoot(OZ_ROOT);
        bytes32[] memory items = _items3();
        (bytes32[] memory tree, uint256[] memory idx) = MerkleReference.build(items);
        vm.assertEq(tree[0], OZ_ROOT, "reference root equals OpenZeppelin root");
        for (uint256 i; i < 3; ++i) {
            vm.assertTrue(
                registry.verifyInclusion(address(this), OZ_ROOT, MerkleReference.proof(tree, idx[i]), items[i]),
                "item included"
            );
        }
    }

    function test_VerifyInclusion_SingleLeafTreeHasEmptyProof() public {
        bytes32 item = keccak256("only");
        bytes32 root = MerkleReference.leafOf(item);
        registry.anchorRoot(root);
        vm.assertTrue(registry.verifyInclusion(address(this), root, new bytes32[](0), item), "single leaf");
    }

    function testFuzz_RandomTreeProofsVerify(uint256 seed, uint256 size) public {
        (uint256 n, bytes32[] memory items, bytes32[] memory tree, uint256[] memory idx) = _anchoredTree(seed, size);
        uint256 step = n / 16 + 1; // every 1..16th leaf, always including the first and the last
        for (uint256 i; i < n; i += step) {
            vm.assertTrue(
                registry.verifyInclusion(address(this), tree[0], MerkleReference.proof(tree, idx[i]), items[i]), "leaf"
            );
        }
        vm.assertTrue(
            registry.verifyInclusion(address(this), tree[0], MerkleReference.proof(tree, idx[n - 1]), items[n - 1]),
            "last leaf"
        );
    }

    function testFuzz_TamperedProofOrItemFails(uint256 seed, uint256 size, uint256 pick, uint256 bit) public {
        (uint256 n, bytes32[] memory items, bytes32[] memory tree, uint256[] memory idx) = _anchoredTree(seed, size);
        uint256 k = bound(pick, 0, n - 1);
        bytes32 flip = bytes32(uint256(1) << bound(bit, 0, 255));
        bytes32[] memory proof = MerkleReference.proof(tree, idx[k]);
        vm.assertFalse(registry.verifyInclusion(address(this), tree[0], proof, items[k] ^ flip), "tampered item");
        if (proof.length > 0) {
            uint256 at = bound(pick >> 128, 0, proof.length - 1);
            proof[at] = proof[at] ^ flip;
            vm.assertFalse(registry.verifyInclusion(address(this), tree[0], proof, items[k]), "tampered proof");
        }
    }

    function testFuzz_OnlyTheOwnerRetracts(address owner, address other, bytes32 root, bytes32 reason) public {
        vm.assume(owner != other && root != bytes32(0) && reason != bytes32(0));
        vm.prank(owner);
        registry.anchorRoot(root);
        vm.expectRevert(abi.encodeWithSelector(RootNotAnchored.selector, other, root));
        vm.prank(other);
        registry.retract(root, reason);
        vm.prank(owner);
        registry.retract(root, reason);
        (,,, uint48 retractedBlock) = registry.rootRecord(owner, root);
        vm.assertEq(uint256(retractedBlock), 100, "the owner's retraction");
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

    // ---------------------------------------------------------------- fuzz

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

    function testFuzz_AnchorBySig_AnySignerAnyFields(uint256 key, bytes32 commit, bytes32 parent, bool kept, uint32 ttl)
        public
    {
        key = bound(key, 1, N - 1);
        vm.assume(commit != bytes32(0));
        Signed memory x = Signed(vm.addr(key), commit, parent, kept, block.timestamp + ttl, 0, 0, 0);
        (x.v, x.r, x.s) =
            vm.sign(key, registry.lineageDigest(x.researcher, commit, parent, DIFF, METRIC, kept, x.deadline));
        vm.prank(RELAYER);
        registry.anchorBySig(x.researcher, x.commit, x.parent, DIFF, METRIC, x.kept, x.deadline, x.v, x.r, x.s);
        vm.assertTrue(registry.verifyLineage(x.researcher, commit, parent, DIFF, METRIC, kept, T0), "signed record");
        vm.assertFalse(registry.verifyLineage(RELAYER, commit, parent, DIFF, METRIC, kept, T0), "relayer's record");
    }

    function testFuzz_OneCommitTwoResearchersAreTwoRecords(address a, address b, bytes32 commit, bool keptA) public {
        vm.assume(a != b && commit != bytes32(0));
        vm.prank(a);
        registry.anchor(commit, PARENT, DIFF, METRIC, keptA);
        vm.prank(b);
        registry.anchor(commit, PARENT, DIFF, METRIC, !keptA);
        vm.assertTrue(registry.verifyLineage(a, commit, PARENT, DIFF, METRIC, keptA, T0), "a's record");
        vm.assertTrue(registry.verifyLineage(b, commit, PARENT, DIFF, METRIC, !keptA, T0), "b's record");
        vm.assertFalse(registry.verifyLineage(a, commit, PARENT, DIFF, METRIC, !keptA, T0), "not b's fields");
    }

    function testFuzz_OneRootTwoSubmittersAreTwoRecords(address a, address b, bytes32 root, uint16 later) public {
        vm.assume(a != b && root != bytes32(0));
        vm.prank(a);
        registry.anchorRoot(root);
        vm.roll(100 + uint256(later));
        vm.prank(b);
        registry.anchorRoot(root);
        (, uint48 blockA,,) = registry.rootRecord(a, root);
        (, uint48 blockB,,) = registry.rootRecord(b, root);
        vm.assertEq(uint256(blockA), 100, "a's record");
        vm.assertEq(uint256(blockB), 100 + uint256(later), "b's record");
    }
}
