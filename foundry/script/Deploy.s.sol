// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

import {TestBase} from "../test/lib/Vm.sol";
import {AnchorRegistry} from "../contracts/AnchorRegistry.sol";

/// @notice Deploy the registry at its canonical address with forge alone:
///         forge script script/Deploy.s.sol --rpc-url URL --private-key KEY --broadcast
/// @dev `new ...{salt: SALT}` in a broadcast is sent through the deterministic deployment proxy
///      (0x4e59b44847b379578588920cA78FbF26c0B4956C), so the address is
///      keccak256(0xff ++ proxy ++ SALT ++ keccak256(init code))[12:], the same on every chain and for every
///      deployer (`anchor deploy` sends the same transaction). No constructor and no admin.
contract Deploy is TestBase {
    /// @notice The fixed salt of the canonical deployment (docs/registry.md).
    bytes32 internal constant SALT = bytes32(0);

    function run() external returns (AnchorRegistry registry) {
        vm.startBroadcast();
        registry = new AnchorRegistry{salt: SALT}();
        vm.stopBroadcast();
    }
}
