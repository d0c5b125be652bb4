// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

import {MalformedSignature, SignatureExpired, WrongSigner} from "./Errors.sol";

/// @title ResearcherSignatures
/// @notice EIP-712 messages a researcher signs and anyone relays: a lineage record and its retraction.
/// @dev One base for every signed path, so the domain, the deadline, the malleability and the signer
///      checks are written once. No immutables: the domain separator is recomputed per call (about 200
///      gas) so that the runtime code, and so its hash, is the same at every address and on every chain;
///      readers recognise the registry by that hash.
abstract contract ResearcherSignatures {
    /// @notice EIP-712 type of a signed lineage record.
    bytes32 public constant LINEAGE_TYPEHASH = keccak256(
        "Lineage(address researcher,bytes32 commit,bytes32 parent,bytes32 diffHash,bytes32 metricHash,bool kept,uint256 deadline)"
    );
    /// @notice EIP-712 type of a signed retraction of a lineage record.
    bytes32 public constant RETRACTION_TYPEHASH =
        keccak256("LineageRetraction(address researcher,bytes32 commit,bytes32 reason,uint256 deadline)");
    bytes32 private constant _DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant _NAME_HASH = keccak256("AnchorRegistry");
    bytes32 private constant _VERSION_HASH = keccak256("4");
    /// @dev secp256k1n / 2: a larger `s` is the malleable twin of a valid signature (EIP-2).
    uint256 private constant _HALF_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    /// @notice The EIP-712 domain separator: name "AnchorRegistry", version "4", this chain id and address.
    /// @return The domain separator.
    // forge-lint: disable-next-line(mixed-case-function) -- the EIP-712 spelling tools expect
    function DOMAIN_SEPARATOR() external view returns (bytes32) {
        return _domainSeparator();
    }

    /// @dev Reverts unless `researcher` signed the typed message `structHash` and its deadline is not past.
    function _requireSigned(address researcher, bytes32 structHash, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        internal
        view
    {
        // forge-lint: disable-next-line(block-timestamp) -- a deadline in hours or days; a few seconds of skew is moot
        if (block.timestamp > deadline) revert SignatureExpired(deadline);
        if (uint256(s) > _HALF_ORDER || (v != 27 && v != 28)) revert MalformedSignature();
        address recovered = ecrecover(_typedDigest(structHash), v, r, s);
        if (recovered == address(0) || recovered != researcher) revert WrongSigner(researcher, recovered);
    }

    function _typedDigest(bytes32 structHash) internal view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", _domainSeparator(), structHash));
    }

    function _lineageStruct(
        address researcher,
        bytes32 commit,
        bytes32 parent,
        bytes32 diffHash,
        bytes32 metricHash,
        bool kept,
        uint256 deadline
    ) internal pure returns (bytes32) {
        return keccak256(abi.encode(LINEAGE_TYPEHASH, researcher, commit, parent, diffHash, metricHash, kept, deadline));
    }

    function _retractionStruct(address researcher, bytes32 commit, bytes32 reason, uint256 deadline)
        internal
        pure
        returns (bytes32)
    {
        return keccak256(abi.encode(RETRACTION_TYPEHASH, researcher, commit, reason, deadline));
    }

    function _domainSeparator() private view returns (bytes32) {
        return keccak256(abi.encode(_DOMAIN_TYPEHASH, _NAME_HASH, _VERSION_HASH, block.chainid, address(this)));
    }
}
