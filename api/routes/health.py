from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import RedirectResponse

from anchor import __version__
from api.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/health", operation_id="health")
async def health() -> Health:
    """Liveness: the process answers. It does not touch the chain."""
    return Health(status="ok", version=__version__)


@router.get("/", include_in_schema=False)
async def root() -> RedirectResponse:
    """A person who opens the service's address lands on the explorer's home page."""
    return RedirectResponse("/explorer/")
