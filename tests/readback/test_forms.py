"""Every proof form decodes once into one typed `Proof(subject, anchors)` (anchor.readback.forms), each
anchor carrying its evidence, and decoding is where a malformed file is refused: a typed error naming
the field, never a raw exception. No chain here: the golden sealed vector is the proof every form wraps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anchor.errors import BadInput, ProofFormatError, Tampered
from anchor.readback import forms
from anchor.readback.statements import CHAIN_ANCHOR, STATEMENT_TYPE
from tests.conftest import ROOT

VECTOR = ROOT / "tests" / "vectors" / "sealed" / "work.anchor.json"
SERVICE = "https://calendar.example"


def golden() -> dict[str, Any]:
    return dict(json.loads(VECTOR.read_text()))


def receipt_for(proof: dict[str, Any], url: str = SERVICE) -> dict[str, Any]:
    """A receipt as the file holds it (its signature is checked by the checklist, not by decoding)."""
    anchor = proof["anchor"]
    signed = {"service": "a calendar", "signer": "0x" + "ab" * 20, "manifest_digest": proof["manifest_digest"]}
    at = {"chain_id": anchor["chain_id"], "registry": anchor["registry"], "accepted_at": 1_700_000_000}
    return {"url": url, **signed, **at, "signature": "0x" + "11" * 65}


def written(tmp_path: Path, document: dict[str, Any], name: str = "p.anchor.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def test_a_sealed_single_anchor_proof_is_one_anchor_with_its_chain_and_sealed_evidence() -> None:
    proof = forms.load(VECTOR)
    assert proof.form == "single" and len(proof.anchors) == 1
    (anchor,) = proof.anchors
    assert anchor.service is None and anchor.evidence == ("chain", "sealed")
    assert anchor.chain is not None and anchor.chain.tx_hash == golden()["anchor"]["tx_hash"]


def test_a_proof_stamped_through_services_lists_every_anchor_and_a_receipt_still_pending(tmp_path: Path) -> None:
    document = golden()
    unsealed = {k: v for k, v in document["anchor"].items() if k != "sealed"}
    document["anchors"] = [{"service": SERVICE, "batch": document["batch"], "anchor": unsealed}]
    document["receipts"] = [receipt_for(document), receipt_for(document, "https://slow.example")]
    proof = forms.load(written(tmp_path, document))
    assert proof.form == "multi"
    assert [(a.service, a.evidence) for a in proof.anchors] == [
        ("local key", ("chain", "sealed")),
        (SERVICE, ("chain", "receipt")),
        ("https://slow.example", ("receipt",)),
    ]


def test_a_pending_proof_is_its_receipts_alone(tmp_path: Path) -> None:
    document = golden()
    kept = {k: document[k] for k in ("manifest", "files", "manifest_digest")}
    pending = {"format": "anchor/pending", "version": 1, **kept, "receipts": [receipt_for(document)]}
    proof = forms.load(written(tmp_path, pending))
    assert proof.form == "pending" and proof.file is None
    assert [(a.service, a.evidence) for a in proof.anchors] == [(SERVICE, ("receipt",))]


def statements_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    stated = {"manifestDigest": document["manifest_digest"], "batchRoot": document["batch"]["root"]}
    predicate = {**stated, "manifest": document["manifest"], "proof": document}
    return [{"_type": STATEMENT_TYPE, "subject": [], "predicateType": CHAIN_ANCHOR, "predicate": predicate}]


def test_in_toto_statements_are_the_proof_their_predicate_carries_with_the_statements_kept(tmp_path: Path) -> None:
    lines = statements_of(golden())
    path = tmp_path / "work.intoto.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in lines))
    proof = forms.from_statements(path)
    assert proof.form == "statements" and proof.statements == tuple(lines)
    assert len(proof.anchors) == 1 and proof.anchors[0].evidence == ("chain", "sealed")
    assert proof.name == f"{path}: predicate.proof"


@pytest.mark.parametrize("field", ["manifestDigest", "batchRoot", "manifest"])
def test_a_statement_that_states_other_than_its_proof_is_refused_naming_the_field(tmp_path: Path, field: str) -> None:
    lines = statements_of(golden())
    lines[0]["predicate"][field] = "0x" + "00" * 32
    path = tmp_path / "work.intoto.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in lines))
    with pytest.raises(Tampered) as caught:
        forms.from_statements(path)
    assert caught.value.detail == {"field": field}


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["batch"].update(root="0x12"), "batch.root"),
        (lambda d: d["anchor"].update(chain_id="one"), "anchor.chain_id"),
        (lambda d: d["anchor"]["sealed"].update(index=-1), "anchor.sealed.index"),
        (lambda d: d.update(receipts=[{"url": SERVICE}]), "receipts"),
    ],
)
def test_a_malformed_proof_file_is_refused_when_decoded_naming_the_field(tmp_path: Path, edit: Any, field: str) -> None:
    document = golden()
    edit(document)
    with pytest.raises(ProofFormatError) as caught:
        forms.load(written(tmp_path, document))
    assert str(caught.value.detail["field"]).startswith(field), caught.value.message


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("not json\n", ":1"),
        (json.dumps({"_type": STATEMENT_TYPE, "subject": []}) + "\n", "no predicateType"),
        (
            json.dumps({"_type": STATEMENT_TYPE, "subject": [], "predicateType": CHAIN_ANCHOR, "predicate": 7}) + "\n",
            "predicate is not an object",
        ),
    ],
)
def test_malformed_statements_are_refused_when_decoded_naming_where(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "work.intoto.jsonl"
    path.write_text(text)
    with pytest.raises(BadInput) as caught:
        forms.from_statements(path)
    assert said in caught.value.message


def test_every_receipt_of_the_file_is_one_anchors_evidence_even_two_of_one_service(tmp_path: Path) -> None:
    """Two receipts naming one URL (one of them perhaps forged) are both kept, for the checklist to check
    each: a typed view that kept one receipt per service would let the other pass unread."""
    document = golden()
    document["service"] = SERVICE
    document["receipts"] = [receipt_for(document), {**receipt_for(document), "accepted_at": 1_800_000_000}]
    proof = forms.load(written(tmp_path, document))
    kept = [a.receipt.accepted_at for a in proof.anchors if a.receipt is not None]
    assert sorted(kept) == [1_700_000_000, 1_800_000_000]
    assert [a.evidence for a in proof.anchors] == [("chain", "sealed", "receipt"), ("receipt",)]


@pytest.mark.parametrize(
    "subjects",
    [
        "not a list",
        [{"name": ["a"], "digest": {}}],
        [{"name": "metrics.json", "digest": {"blake3": "00"}}, {"name": "metrics.json", "digest": {"blake3": "11"}}],
    ],
)
def test_subjects_a_reader_could_take_two_ways_are_tampered_not_a_crash(tmp_path: Path, subjects: Any) -> None:
    """Subjects are compared with what the proof binds only when each is one named entry: a list-valued name
    raised TypeError, and a name listed twice let the first say one digest while the second matched."""
    from anchor.proof.file import load_proof
    from anchor.readback.statements import check_subjects

    statement = {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": CHAIN_ANCHOR, "predicate": {}}
    with pytest.raises(Tampered) as caught:
        check_subjects((statement,), load_proof(VECTOR), None, tmp_path / "work.intoto.jsonl")
    assert caught.value.detail == {"field": "subject"}
