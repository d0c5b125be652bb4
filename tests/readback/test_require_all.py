"""`--require all` counts the services the file names, and offline no receipt says whose account anchored.

A proof whose first anchor is named `https://a.example` and which lists a copy of it under
`https://b.example`, with no receipt at all, met `--require all` ("2 of 2 verified"): the services it
named were taken from its receipts and its down-at-stamp-time list only, both empty. Every service the
file names is one `all` asks for now."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anchor.errors import Pending
from anchor.library.verifier import Verifier
from tests.conftest import Chain


def test_require_all_is_not_met_by_service_names_typed_into_a_file_with_no_receipt(
    deployed_chain: Chain, tmp_path: Path
) -> None:
    data = tmp_path / "results"
    data.mkdir()
    (data / "metrics.json").write_text('{"accuracy": 0.9}\n')
    deployed_chain.cli("stamp", str(data), check=True)
    proof = json.loads((tmp_path / "results.anchor.json").read_text())
    copy = {"service": "https://b.example", "batch": proof["batch"], "anchor": proof["anchor"]}
    edited = tmp_path / "named.anchor.json"
    edited.write_text(json.dumps({**proof, "service": "https://a.example", "anchors": [copy]}))
    verifier = Verifier(deployed_chain.settings)
    assert verifier.verify(data, proof=edited, require="any").manifest_digest == proof["manifest_digest"]
    with pytest.raises(Pending) as refused:
        verifier.verify(data, proof=edited, require="all")
    assert "https://a.example" in refused.value.message or "https://b.example" in refused.value.message
