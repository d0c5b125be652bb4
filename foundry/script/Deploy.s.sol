// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

import {TestBase} from "../test/lib/Vm.sol";
import {AnchorRegistryV3} from "../contracts/AnchorRegistryV3.sol";

/// @notice Deploy the registry (v3, the version `anchor deploy` deploys) with forge alone:
///         forge script script/Deploy.s.sol --rpc-url URL --private-key KEY --broadcast
/// @dev No constructor arguments and no admin: the deployer gets no rights over the registry.
contract Deploy is TestBase {
    function run() external returns (AnchorRegistryV3 registry) {
        vm.startBroadcast();
        registry = new AnchorRegistryV3();
        vm.stopBroadcast();
    }
}
