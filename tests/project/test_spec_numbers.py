"""The numbers docs/manifest.md and docs/registry.md give an independent implementer (header field
indexes, the event's topic count, the events' signatures and indexed parameters, the registry's storage
slots) are read from the docs and compared with the code and the compiled ABI, so the two cannot drift:
each was once guessed right only by reading the code."""

from __future__ import annotations

import re

from anchor.chain.artifact import LATEST, registry_abi
from anchor.sealing import check, encoding
from tests.conftest import ROOT

MANIFEST = (ROOT / "docs" / "manifest.md").read_text()
REGISTRY = (ROOT / "docs" / "registry.md").read_text()


def _events() -> dict[str, list[tuple[str, bool]]]:
    return {
        e["name"]: [(i["type"], bool(i["indexed"])) for i in e["inputs"]]
        for e in registry_abi(LATEST)
        if e["type"] == "event"
    }


def test_the_documented_header_field_numbers_are_the_ones_the_code_reads() -> None:
    said = re.findall(r"(\w+) (?:is )?field (\d+)", MANIFEST) + re.findall(r"(\w+) \(field (\d+)", MANIFEST)
    assert "numbered from 0" in MANIFEST
    code = {
        "stateRoot": check.STATE_ROOT,
        "receiptsRoot": encoding.RECEIPTS_ROOT,
        "number": encoding.NUMBER,
        "timestamp": encoding.TIMESTAMP,
    }
    assert {name for name, _ in said if name in code} == set(code)
    assert [(name, int(n)) for name, n in said if name in code and int(n) != code[name]] == []
    listed = re.search(r"the 15 fields every header has \(([^)]*)\)", MANIFEST)
    assert listed is not None
    names = [n.strip() for n in listed.group(1).split(",")]
    assert len(names) == len(encoding.HEADER_FIELDS) == 15
    assert {name: names.index(name) for name in code} == code


def test_the_documented_topic_count_and_event_signature_are_the_registrys() -> None:
    count = re.search(r"topics are exactly (\d+)", MANIFEST)
    assert count is not None
    root_anchored = _events()["RootAnchored"]
    assert int(count.group(1)) == 1 + sum(indexed for _, indexed in root_anchored) == check.ROOT_ANCHORED_TOPICS
    assert f'keccak256("{check.ROOT_ANCHORED}")' in MANIFEST
    assert "RootAnchored(" + ",".join(t for t, _ in root_anchored) + ")" == check.ROOT_ANCHORED


def test_the_documented_events_and_their_indexed_parameters_are_the_compiled_abis() -> None:
    rows = re.findall(r"^\| `(\w+)\(([^)]*)\)` \| keccak256\(\"(\w+)\(([^)]*)\)\"\)", REGISTRY, re.MULTILINE)
    documented = {}
    for name, params, hashed_name, hashed_types in rows:
        parsed = [(p.split()[0], "indexed" in p.split()) for p in params.split(",")]
        assert hashed_name == name and hashed_types == ",".join(t for t, _ in parsed), name
        documented[name] = parsed
    assert documented == _events()


def test_the_documented_storage_slots_are_the_contracts_declaration_order() -> None:
    source = (ROOT / "contracts" / "AnchorRegistry.sol").read_text()
    declared = re.findall(r"^\s*mapping\(.*\) private (\w+);", source, re.MULTILINE)
    assert declared == ["_lineage", "_roots"]  # state variables in order: slot 0, slot 1
    assert "Storage slot 0 is `_lineage`" in REGISTRY and "storage slot 1 is `_roots`" in REGISTRY
    assert f"`_roots` mapping is storage slot {check.ROOTS_SLOT}" in MANIFEST
    assert declared.index("_roots") == check.ROOTS_SLOT
