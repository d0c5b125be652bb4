from __future__ import annotations

from fastapi import APIRouter

from anchor import __version__
from api.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/health", operation_id="health")
async def health() -> Health:
    """Liveness: the process answers. It does not touch the chain."""
    return Health(status="ok", version=__version__)
