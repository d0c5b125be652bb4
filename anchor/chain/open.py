"""Open the configured chain and its recorded registry: the one place where settings become a live
connection. Reads never start a chain; only writes pass `start_local=True`."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from anchor.errors import ChainUnreachable

if TYPE_CHECKING:
    from web3 import Web3

    from anchor.chain.node import ChainStatus, LocalChain
    from anchor.chain.registry import Registry
    from anchor.chain.rpc import Rpc
    from anchor.settings.session import Settings


class ChainHandle:
    """One reachable chain: `rpc` reads (no web3 imported); `w3`, built on first use, writes."""

    def __init__(self, rpc: Rpc, chain_id: int, rpc_url: str, local: bool) -> None:
        self.rpc, self.chain_id, self.rpc_url, self.local = rpc, chain_id, rpc_url, local

    @cached_property
    def w3(self) -> Web3:
        from anchor.chain.connection import web3_for

        return web3_for(self.rpc)


def open_chain(settings: Settings, *, start_local: bool = False) -> ChainHandle:
    """Connect to `settings.rpc_url`, or to the embedded anvil. Only commands that must write pass
    `start_local=True`; a read (verify, lookup, status, every GET route) never starts or stops a chain."""
    from anchor.chain.connection import reach
    from anchor.chain.node import LocalChain

    if settings.rpc_url:
        rpc, chain_id = reach(settings.rpc_url, settings.env)
        return ChainHandle(rpc, chain_id, settings.rpc_url, local=False)
    chain = LocalChain(settings.data_dir, settings.local_port)
    status = chain.status()
    if status.pid is not None and not status.running:
        from anchor.chain.node import BUSY_WAIT_S, _port_taken

        if _port_taken(chain.port):  # ours and listening, too busy for the probe (a loaded machine): waited for
            status = chain.answer_within(BUSY_WAIT_S)
            if not status.running:
                raise ChainUnreachable(
                    f"the local chain of this data dir (anvil pid {status.pid}) listens at {chain.rpc_url} but did"
                    f" not answer within {BUSY_WAIT_S:.0f} s; restart it with `anchor chain down` and"
                    " `anchor chain up`",
                    detail={"rpc_url": chain.rpc_url, "pid": status.pid, "waited_s": BUSY_WAIT_S},
                )
    if start_local and not status.running:
        status = _start(settings, chain)
    if not status.running:
        from anchor.chain.node import _port_taken, port_taken_message

        if _port_taken(chain.port):  # `chain up` could not work: say who holds the port
            said = port_taken_message(chain.port, settings.data_dir)
            raise ChainUnreachable(f"the local chain of this data dir is not running, and {said}")
        raise ChainUnreachable("the local chain is not running; start it with `anchor chain up`")
    rpc, chain_id = reach(chain.rpc_url, settings.env)
    return ChainHandle(rpc, chain_id, chain.rpc_url, local=True)


def _start(settings: Settings, chain: LocalChain) -> ChainStatus:
    """Start the data dir's chain for a write, as `settings.local_chain_start` allows: a library call
    refuses (unless `start_chain=True`, which stops it at interpreter exit); the command line starts it
    and leaves it running, and says so."""
    import logging  # a start's message only: a read never starts the chain

    how = settings.local_chain_start
    if how not in ("until_exit", "keep_running"):
        raise ChainUnreachable(
            f"the local chain of data dir {settings.data_dir} is not running, and a library call does not start"
            " one unasked (it would outlive this program): pass start_chain=True (stopped when this interpreter"
            " exits), or start one to keep with `anchor chain up`",
            detail={"setting": "start_chain", "data_dir": str(settings.data_dir)},
        )
    status = chain.up()
    said = f"started the local chain at {chain.rpc_url} (anvil pid {status.pid}, state in {settings.layout.chain})"
    if how == "until_exit":
        import atexit

        atexit.register(chain.stop_if_ours, status.pid)
        logging.getLogger("anchor.progress").info(f"{said}; stopped when this program exits (start_chain=True)")
    else:
        logging.getLogger("anchor.progress").info(
            f"{said}; it keeps running after this command, for the next one: stop it with `anchor chain down`"
        )
    return status


def open_registry(settings: Settings, handle: ChainHandle) -> Registry:
    """This chain's registry: the deployment recorded in the data dir, else the canonical one (the same
    address on every chain, trusted by derivation: its code hash is checked before every read). Raises
    `NotDeployed` when neither is there."""
    from anchor.chain.deployment import load_deployment
    from anchor.chain.registry import Registry
    from anchor.errors import NotDeployed

    try:
        deployment = load_deployment(settings.data_dir, handle.chain_id)
    except NotDeployed:
        registry = canonical_registry(handle)
        if registry is None:
            raise
        return registry
    return Registry(handle.rpc, handle.chain_id, deployment.address, deployment.code_hash, deployment.block_number)


def canonical_registry(handle: ChainHandle) -> Registry | None:
    """The canonical registry on this chain, if its code is there (None: nobody deployed it here yet)."""
    from anchor.chain.canonical import canonical_address, canonical_code_hash
    from anchor.chain.deployment import code_hash_at
    from anchor.chain.registry import Registry

    address = canonical_address()
    if code_hash_at(handle.rpc, address) != canonical_code_hash():
        return None
    return Registry(handle.rpc, handle.chain_id, address, canonical_code_hash(), 0)
