// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

import {TestBase} from "../test/lib/Vm.sol";
import {AnchorRegistry} from "../contracts/AnchorRegistry.sol";

/// @notice Deploy the registry with forge alone:
///         forge script script/Deploy.s.sol --rpc-url URL --private-key KEY --broadcast
/// @dev No constructor arguments and no admin: the deployer gets no rights over the registry.
contract Deploy is TestBase {
    function run() external returns (AnchorRegistry registry) {
        vm.startBroadcast();
        registry = new AnchorRegistry();
        vm.stopBroadcast();
    }
}
