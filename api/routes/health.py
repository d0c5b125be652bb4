from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse

from anchor import __version__
from anchor.journal import reads
from api.deps import ReaderDep, in_journal
from api.routes.verify import ERRORS
from api.schemas import Health, Ready

router = APIRouter(tags=["health"])


@router.get("/health", operation_id="health")
async def health() -> Health:
    """Liveness: the process answers. It does not touch the chain."""
    return Health(status="ok", version=__version__)


@router.get("/ready", operation_id="ready", responses=ERRORS)
async def ready(request: Request, reader: ReaderDep) -> Ready:
    """Readiness: the registry's code on chain is the recorded code (read now, not from a cache) and
    the journal answers. A load balancer or Kubernetes sends traffic only to a replica that passes;
    a failure is the typed error, never a 2xx (503: chain or journal out of reach; 502: no registry
    recorded or deployed; 409: the code at the address is not the recorded code)."""
    from anchor.chain.deployment import check_code

    def chain_check() -> tuple[int, str, int]:
        registry = reader.registry()
        check_code(registry.rpc, registry.address, registry.code_hash)
        return registry.chain_id, registry.address, registry.rpc.block_number()

    chain_id, address, block = await run_in_threadpool(chain_check)
    backend = await in_journal(request.app, reads.ping)
    return Ready(status="ready", version=__version__, chain_id=chain_id, registry=address, block=block, journal=backend)


@router.get("/", include_in_schema=False)
async def root() -> RedirectResponse:
    """A person who opens the service's address lands on the explorer's home page."""
    return RedirectResponse("/explorer/")
