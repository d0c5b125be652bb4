"""The peer of benchmarks/api_bench.py and hostile_bench.py: bare FastAPI routes with our path shapes."""

from typing import Any

from fastapi import Depends, FastAPI, Header, HTTPException

app = FastAPI()


@app.get("/v1/verify/{manifest_digest}")
async def verify(manifest_digest: str) -> dict[str, object]:
    return {"verified": True, "manifest_digest": manifest_digest}


def _token(authorization: str = Header("")) -> None:
    if authorization != "Bearer peer-token":
        raise HTTPException(401, "a bearer token is required")


@app.post("/v1/manifests", dependencies=[Depends(_token)])
async def submit(body: list[Any]) -> dict[str, object]:
    """FastAPI's default shape for an authenticated write: the body is parsed before the dependency runs."""
    return {"items": len(body)}
