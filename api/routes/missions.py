"""`POST /v1/missions`: the dispatcher's door for clients (bearer token), the same checks as
`anchor mission submit` (anchor.missions.dispatch), nothing stored unless every one passes."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from anchor.ingest.untrusted_json import parse_json
from anchor.manifest.validation import validated
from anchor.missions.dispatch import StoredMission, SubmissionRequest, pin_verifier, submit
from api.deps import ClientDep, SettingsDep
from api.offload import decode
from api.routes.submit import WRITE_ERRORS

router = APIRouter(prefix="/v1", tags=["missions"])

_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": SubmissionRequest.model_json_schema()}},
    }
}


def _body(raw: bytes) -> SubmissionRequest:
    """Decoded under the service's bounds (depth, size), validated naming the first bad field."""
    return validated(SubmissionRequest, parse_json(raw, "body"), "body")


@router.post("/missions", operation_id="submit_mission", status_code=201, responses=WRITE_ERRORS, openapi_extra=_BODY)
async def submit_mission(request: Request, client: ClientDep, settings: SettingsDep) -> Mapping[str, object]:
    """Submit a mission: its document and claimed digest, the snapshot (reference and SHA-256), the image
    by digest, a new output identity, a declared resource profile and, optionally, a resume pin."""
    body = await decode(request.app, _body, await request.body())

    record: StoredMission = await run_in_threadpool(
        submit, body, settings.data_dir, pin_verifier(settings), False, settings.journal_url
    )
    return record
