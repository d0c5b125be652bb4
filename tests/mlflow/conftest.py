"""The MLflow bridge's module fixtures: a real `mlflow server` over each backend store (every test of a
module runs against SQLite and against PostgreSQL), and a deployed anvil of the module's own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import Chain, deployed
from tests.mlflow_server import BACKENDS, TrackingServer, backend_server


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrackingServer]:
    with backend_server(request.param, tmp_path_factory.mktemp("mlflow"), request) as served:
        yield served


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    with deployed(tmp_path_factory.mktemp("mlflow-chain")) as started:
        yield started
