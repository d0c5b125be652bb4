// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

/// @notice The subset of Foundry's cheatcodes these tests use.
/// @dev forge-std is not installable offline here; the cheatcode ABI is stable, so we declare what we use.
interface Vm {
    struct Gas {
        uint64 gasLimit;
        uint64 gasTotalUsed;
        uint64 gasMemoryUsed;
        int64 gasRefunded;
        uint64 gasRemaining;
    }

    function prank(address sender) external;
    function startPrank(address sender) external;
    function stopPrank() external;
    function warp(uint256 newTimestamp) external;
    function roll(uint256 newHeight) external;
    function expectRevert(bytes calldata revertData) external;
    function expectEmit(bool checkTopic1, bool checkTopic2, bool checkTopic3, bool checkData) external;
    function expectEmit(bool checkTopic1, bool checkTopic2, bool checkTopic3, bool checkData, address emitter) external;
    function assume(bool condition) external pure;
    function assertTrue(bool condition, string calldata error) external pure;
    function assertFalse(bool condition, string calldata error) external pure;
    function assertEq(bytes32 left, bytes32 right, string calldata error) external pure;
    function assertEq(uint256 left, uint256 right, string calldata error) external pure;
    function assertEq(address left, address right, string calldata error) external pure;
    function assertEq(string calldata left, string calldata right, string calldata error) external pure;
    function assertLe(uint256 left, uint256 right, string calldata error) external pure;
    function addr(uint256 privateKey) external pure returns (address);
    function sign(uint256 privateKey, bytes32 digest) external pure returns (uint8 v, bytes32 r, bytes32 s);
    function chainId(uint256 newChainId) external;
    function lastCallGas() external view returns (Gas memory gas);
    function startBroadcast() external;
    function stopBroadcast() external;
}

/// @notice Minimal test base: the cheatcode handle and invariant target selection.
abstract contract TestBase {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    address[] private _targetContracts;

    /// @dev Map any fuzzed value into [min, max] (inclusive) without discarding runs.
    function bound(uint256 x, uint256 min, uint256 max) internal pure returns (uint256) {
        require(min <= max, "bound: min > max");
        uint256 size = max - min + 1;
        if (size == 0) return x; // full uint256 range
        return min + (x % size);
    }

    function targetContract(address target) internal {
        _targetContracts.push(target);
    }

    /// @dev Read by forge's invariant runner to pick the contracts whose functions it calls.
    function targetContracts() public view returns (address[] memory) {
        return _targetContracts;
    }
}
