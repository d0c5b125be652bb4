"""What Anchor knows about the chains it is used on: one table, read by the journal (confirmation
depth), the explorer links and every verdict (the chain's name).

The depths are how many blocks on top of the anchoring block the journal waits for before it calls an
anchoring confirmed (ANCHOR_CONFIRMATIONS overrides): on Base, an L2, 10 blocks (~20 s) make a reorg of
the sequencer's order very unlikely; Base Sepolia 5; Ethereum 12. Finality proper (`safe`,
`finalized`) is read from the chain itself by `verify --min-finality`.
"""

from __future__ import annotations

from dataclasses import dataclass

from anchor.record import Value


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ChainPreset(Value):
    chain_id: int
    name: str
    explorer: str | None
    confirmations: int
    etherscan_chain: str | None = None
    """`forge verify-contract --chain` name, for chains with an Etherscan-style explorer."""
    public_rpc: str | None = None
    """A public RPC endpoint to suggest when none is given (rate-limited; a provider's URL is better)."""

    @property
    def registry(self) -> str:
        """The registry's address on this chain: the canonical one, the same on every chain (docs/registry.md)."""
        from anchor.chain.canonical import canonical_address

        return canonical_address()

    @property
    def registry_code_hash(self) -> str:
        """The runtime code hash a verifier checks at `registry` (`cast keccak $(cast code ADDRESS)`)."""
        from anchor.chain.canonical import canonical_code_hash

        return canonical_code_hash()


PRESETS: dict[int, ChainPreset] = {
    p.chain_id: p
    for p in (
        ChainPreset(31337, "local development chain", None, 0),
        ChainPreset(1, "Ethereum", "https://etherscan.io", 12, "mainnet", "https://ethereum-rpc.publicnode.com"),
        ChainPreset(
            11155111,
            "Sepolia",
            "https://sepolia.etherscan.io",
            6,
            "sepolia",
            "https://ethereum-sepolia-rpc.publicnode.com",
        ),
        ChainPreset(8453, "Base", "https://basescan.org", 10, "base", "https://mainnet.base.org"),
        ChainPreset(
            84532, "Base Sepolia", "https://sepolia.basescan.org", 5, "base-sepolia", "https://sepolia.base.org"
        ),
    )
}
DEFAULT_CONFIRMATIONS = 12


def rpc_hint(chain_id: int) -> str:
    """What to give to read `chain_id` (the input `rpc_url`, which a door says its own way): its public
    endpoint when one is known, else a placeholder."""
    preset = PRESETS.get(chain_id)
    return f"rpc_url {preset.public_rpc}" if preset and preset.public_rpc else "rpc_url URL"


def chain_name(chain_id: int) -> str:
    preset = PRESETS.get(chain_id)
    return f"{preset.name} ({chain_id})" if preset else f"chain {chain_id}"


def verify_contract_command(chain_id: int, address: str, contract: str, solc: str, runs: int, evm: str) -> str | None:
    """The `forge verify-contract` line that publishes the deployed registry's source on the chain's
    explorer (run from foundry/, with ETHERSCAN_API_KEY set); None for chains without one."""
    preset = PRESETS.get(chain_id)
    if preset is None or preset.etherscan_chain is None:
        return None
    return (
        f"forge verify-contract {address} {contract} --chain {preset.etherscan_chain} --compiler-version {solc}"
        f" --optimizer-runs {runs} --evm-version {evm} --watch"
    )
