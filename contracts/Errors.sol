// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

// The registry's errors, in one file (as eas-contracts keeps its shared errors in Common.sol): the
// registry and its signature base revert with them, and tests and readers decode them from here.

/// @notice `researcher` already has a lineage record for `commit`.
/// @param researcher The researcher the record belongs to.
/// @param commit The attempt's commit.
error LineageAlreadyAnchored(address researcher, bytes32 commit);

/// @notice `submitter` already anchored this batch root.
/// @param submitter Who anchored it.
/// @param root The batch root.
error RootAlreadyAnchored(address submitter, bytes32 root);

/// @notice `submitter` has no record of `root` to retract: only the submitter of a record can retract it.
/// @param submitter Who asked to retract.
/// @param root The batch root.
error RootNotAnchored(address submitter, bytes32 root);

/// @notice `researcher` has no lineage record of `commit` to retract.
/// @param researcher Who asked to retract (the signer, for a signed retraction).
/// @param commit The attempt's commit.
error LineageNotAnchored(address researcher, bytes32 commit);

/// @notice The record was retracted already: a retraction is write-once, like the record.
/// @param account The record's submitter or researcher.
/// @param key The root or commit.
/// @param retractedBlock The block the retraction was written in.
error AlreadyRetracted(address account, bytes32 key, uint48 retractedBlock);

/// @notice A zero key (commit or root) can never be anchored: zero means "absent" in storage.
error ZeroKey();

/// @notice A retraction names why, as the 32-byte digest of its reason: zero is no reason.
error ZeroReason();

/// @notice The signed message's deadline has passed.
/// @param deadline The deadline the researcher signed (Unix seconds).
error SignatureExpired(uint256 deadline);

/// @notice The signature is malformed: `s` in the upper half of the curve order (malleable) or `v` not 27/28.
error MalformedSignature();

/// @notice The signature does not recover to the researcher it claims.
/// @param researcher The researcher named in the call.
/// @param recovered The address the signature recovers to (zero if none).
error WrongSigner(address researcher, address recovered);
