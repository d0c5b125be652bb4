"""The peer of benchmarks/api_bench.py: a bare `async def` FastAPI route with the same path shape."""

from fastapi import FastAPI

app = FastAPI()


@app.get("/v1/verify/{manifest_digest}")
async def verify(manifest_digest: str) -> dict[str, object]:
    return {"verified": True, "manifest_digest": manifest_digest}
