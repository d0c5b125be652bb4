"""The proof formats as `anchor.record` records (a read without pydantic): what they accept,
what they refuse and by which field, and that a proof reads back as it was written."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from anchor.batch.merkle import BatchTree, leaf_of
from anchor.chain.deployment import Deployment, load_deployment
from anchor.errors import BadInput, ProofFormatError
from anchor.manifest.filetree import hash_tree
from anchor.proof.file import BatchPath, ChainAnchor, ProofFile, parse_any, parse_proof
from anchor.record import RecordError

RECEIPT = {
    "url": "http://127.0.0.1:8000",
    "service": "calendar",
    "signer": "0x" + "ab" * 20,
    "manifest_digest": "0x" + "cd" * 32,
    "chain_id": 31337,
    "registry": "0x" + "12" * 20,
    "accepted_at": 1_700_000_000,
    "signature": "0x" + "ef" * 65,
}


def _proof(tmp_path: Path) -> ProofFile:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "metrics.json").write_text('{"accuracy": 0.93}\n')
    tree = hash_tree(tmp_path / "results")
    digest = tree.digest
    return ProofFile(
        manifest=tree.identity(),
        files=tuple(tree.files_json()),
        manifest_digest="0x" + digest.hex(),
        batch=BatchPath(
            item="0x" + digest.hex(),
            leaf="0x" + leaf_of(digest).hex(),
            proof=("0x" + "77" * 32,),
            root="0x" + BatchTree.build([digest]).root.hex(),
        ),
        anchor=ChainAnchor(
            chain_id=31337,
            registry="0x" + "12" * 20,
            code_hash="0x" + "34" * 32,
            tx_hash="0x" + "56" * 32,
            block_number=7,
        ),
        receipts=({**RECEIPT, "manifest_digest": "0x" + digest.hex()},),  # type: ignore[arg-type]
    )


def test_a_written_proof_reads_back_equal_and_writes_the_same_bytes(tmp_path: Path) -> None:
    proof = _proof(tmp_path)
    text = proof.dumps()
    again = parse_proof(text.encode(), "p.anchor.json")
    assert again == proof and again.dumps() == text
    assert isinstance(again.receipts[0].signer, str) and again.batch.proof == ("0x" + "77" * 32,)  # typed, nested
    assert "service" not in json.loads(text)  # absent stays absent: nulls are not written


def test_a_proof_is_written_as_the_standard_librarys_indented_sorted_json(tmp_path: Path) -> None:
    """The fast writer's bytes are the documented form (`json.dumps(indent=2, sort_keys=True,
    ensure_ascii=False)`), names outside ASCII and annotations included; an integer past 64 bits, which
    the fast writer refuses, is still written, by the standard library."""
    proof = dataclasses.replace(_proof(tmp_path), annotations={"note": 'é \u2028 \\ "', "step": 2**63 - 1})
    document = proof.model_dump(mode="json", exclude_none=True)
    assert proof.dumps() == json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    huge = dataclasses.replace(proof, annotations={"step": 2**70})
    assert json.loads(huge.dumps())["annotations"]["step"] == 2**70


def _set(document: dict[str, Any], where: str, value: Any) -> None:
    *path, last = where.split(".")
    for part in path:
        document = document[int(part)] if part.isdigit() else document[part]  # type: ignore[index]
    if value is KeyError:
        del document[last]
    else:
        document[int(last) if last.isdigit() else last] = value  # type: ignore[index]


@pytest.mark.parametrize(
    ("where", "value", "named"),
    [
        ("manifest_digest", "0x" + "ab" * 32 + "\n", "manifest_digest"),  # `$` before a newline is not the end
        ("manifest_digest", "0x" + "AB" * 32, "manifest_digest"),
        ("anchor.chain_id", True, "anchor.chain_id"),  # a boolean is not a number here
        ("anchor.chain_id", "31337", "anchor.chain_id"),  # nor is a string of digits
        ("anchor.chain_id", 0, "anchor.chain_id"),
        ("anchor.block_number", -1, "anchor.block_number"),
        ("anchor.block_number", 7.0, "anchor.block_number"),
        ("batch.proof", ["0x" + "77" * 32] * 65, "batch.proof"),
        ("batch.proof.0", 5, "batch.proof.0"),
        ("batch", KeyError, "batch"),
        ("evil", "extra", "evil"),
        ("anchor.evil", 1, "anchor.evil"),
        ("version", 1.0, "version"),
        ("service", "s" * 2001, "service"),
        ("receipts.0.signature", "0x12", "receipts.0.signature"),
        ("receipts.0.accepted_at", 1 << 64, "receipts.0.accepted_at"),
        ("annotations", ["not", "an", "object"], "annotations"),
        ("files.0", "not an object", "files.0"),
    ],
)
def test_a_bad_field_is_refused_naming_it(tmp_path: Path, where: str, value: Any, named: str) -> None:
    document = json.loads(_proof(tmp_path).dumps())
    _set(document, where, value)
    with pytest.raises(ProofFormatError) as info:
        parse_any(json.dumps(document).encode(), "p.anchor.json")
    assert info.value.detail["field"] == named, info.value.message
    assert info.value.message.startswith(f"p.anchor.json: field '{named}': ")


def test_a_record_is_checked_when_made_in_code_and_cannot_be_changed(tmp_path: Path) -> None:
    with pytest.raises(RecordError) as info:
        ChainAnchor(chain_id=1, registry="0x" + "12" * 20, code_hash="0x12", tx_hash="0x" + "56" * 32, block_number=1)
    assert info.value.loc == ("code_hash",)
    proof = _proof(tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        proof.manifest_digest = "0x" + "00" * 32  # type: ignore[misc]
    with pytest.raises(RecordError):
        proof.model_copy(update={"anchor": {"chain_id": -1}})  # a copy is checked like any record


def test_model_dump_excludes_and_copies_as_the_callers_use_it(tmp_path: Path) -> None:
    proof = _proof(tmp_path)
    dumped = proof.model_dump(mode="json", exclude={"files"}, exclude_none=True)
    assert "files" not in dumped and "anchors" not in dumped and isinstance(dumped["batch"]["proof"], list)
    assert proof.model_dump()["batch"]["proof"] == ("0x" + "77" * 32,)  # python mode keeps tuples
    single = proof.model_copy(update={"files": None})
    assert single.files is None and proof.files is not None and single.anchor is proof.anchor


def test_a_corrupt_deployment_record_is_bad_input_naming_the_file(tmp_path: Path) -> None:
    good = {
        "chain_id": 31337,
        "address": "0x" + "12" * 20,
        "code_hash": "0x" + "34" * 32,
        "tx_hash": "0x" + "56" * 32,
        "block_number": 1,
        "deployer": "0x" + "78" * 20,
        "registry_version": "3.0.0",
        "compiler": {},
    }
    records = tmp_path / "deployments"
    records.mkdir()
    (records / "31337.json").write_text(json.dumps(good))
    assert load_deployment(tmp_path, 31337) == Deployment(**good)
    for broken in ("{not json", json.dumps({**good, "block_number": "1"}), json.dumps({**good, "extra": 1})):
        (records / "31337.json").write_text(broken)
        with pytest.raises(BadInput) as info:
            load_deployment(tmp_path, 31337)
        assert info.value.detail["file"].endswith("31337.json") and "corrupt deployment record" in info.value.message


def test_a_value_compares_hashes_and_prints_as_a_generated_dataclass_would() -> None:
    """`Value` stands in for the eq, hash and repr a frozen dataclass would generate (they cost start-up
    time): two classes alike but for that must agree on every pair of values."""
    from anchor.record import Value

    @dataclasses.dataclass(frozen=True, slots=True, eq=False, repr=False)
    class Ours(Value):
        a: int
        b: tuple[str, ...] = ()
        note: str = dataclasses.field(default="", compare=False)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Theirs:
        a: int
        b: tuple[str, ...] = ()
        note: str = dataclasses.field(default="", compare=False)

    pairs = [((1, ("x",), ""), (1, ("x",), "other")), ((1, ()), (2, ())), ((1, ("x",)), (1, ("y",)))]
    for left, right in pairs:
        assert (Ours(*left) == Ours(*right)) is (Theirs(*left) == Theirs(*right))
        assert (Ours(*left) != Ours(*right)) is (Theirs(*left) != Theirs(*right))
        assert (hash(Ours(*left)) == hash(Ours(*right))) is (hash(Theirs(*left)) == hash(Theirs(*right)))
    assert repr(Ours(1, ("x",), "n")) == repr(Theirs(1, ("x",), "n")).replace("Theirs", "Ours")
    assert Ours(1) != Theirs(1) and Ours(1) != (1, (), "")  # another class is never equal
    assert len({Ours(1), Ours(1, (), "n"), Ours(2)}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        Ours(1).a = 2  # type: ignore[misc]


def test_every_frozen_dataclass_of_the_package_takes_its_eq_and_repr_from_value() -> None:
    """A new value class declared the generated way costs every command's start-up its eq, hash and
    repr (each an `exec` at import): the package declares them with `Value`'s."""
    import ast

    root = Path(__file__).resolve().parents[2]
    generated = []
    for path in [*root.joinpath("anchor").rglob("*.py"), *root.joinpath("api").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith("dataclass"):
                    said = {k.arg: ast.unparse(k.value) for k in decorator.keywords}
                    if said.get("frozen") == "True" and "eq" not in said and node.bases:
                        continue  # a subclass of a Value class: see its base
                    if said.get("frozen") == "True" and (said.get("eq"), said.get("repr")) != ("False", "False"):
                        generated.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    assert generated == []


def test_annotations_past_64_kib_are_refused_naming_them_as_a_submissions_are(tmp_path: Path) -> None:
    """docs/manifest.md bounds a proof's annotations at 64 KiB of JSON; decoding did not, so a file with
    1 MiB of them verified OK at every door while the same annotations were refused at submission."""
    from anchor.proof.file import parse_any

    proof = json.loads(_proof(tmp_path).dumps())
    proof["annotations"] = {"note": "x" * (60 * 1024)}
    assert parse_any(json.dumps(proof).encode(), "p.anchor.json").annotations == proof["annotations"]
    proof["annotations"] = {"note": "x" * (70 * 1024)}
    with pytest.raises(ProofFormatError) as refused:
        parse_any(json.dumps(proof).encode(), "p.anchor.json")
    assert refused.value.detail["field"] == "annotations" and "annotations:" in refused.value.message


@pytest.mark.parametrize(
    "extra",
    [
        {"annotations": {"big": 2**70}},  # past 64 bits: orjson refuses it, the standard library reads it
        {"annotations": {"score": float("nan")}},  # NaN: the same
        {},
    ],
)
def test_the_head_of_a_proof_about_to_be_replaced_is_what_the_standard_library_reads(
    tmp_path: Path, extra: dict[str, Any]
) -> None:
    """A stamp asks of the file it will replace whether it is a proof, and what to name the copy it keeps:
    decoded by orjson for speed, and by the standard library where orjson refuses, the answer must be
    `json.loads`'s whatever the JSON holds."""
    from anchor.proof.file import proof_head

    data = json.loads(_proof(tmp_path).dumps()) | extra
    target = tmp_path / "results.anchor.json"
    target.write_text(json.dumps(data, indent=2, sort_keys=True))
    assert proof_head(target) == (True, data["manifest_digest"], data["anchor"]["chain_id"], 7)
    target.write_text(json.dumps({**data, "format": "someone/else"}))
    assert proof_head(target)[0] is False
    target.write_text('{"format": "anchor/proof", "oops"')
    assert proof_head(target) == (False, None, None, None)


@pytest.mark.parametrize(("block", "name"), [(7, "31337-7-"), (2**64 + 1, "unnumbered-"), (10**400, "unnumbered-")])
def test_a_superseded_proof_is_kept_whatever_number_its_block_claims(tmp_path: Path, block: int, name: str) -> None:
    """Its name is made of digits and hex only, and of a block a chain can have: a block past 64 bits
    (which orjson reads as a float) or of 400 digits (a name too long for the filesystem) is kept by
    digest alone, never refused or crashed on."""
    from anchor.anchoring.stamp import keep_superseded

    data = json.loads(_proof(tmp_path).dumps())
    data["anchor"]["block_number"] = block
    target = tmp_path / "results.anchor.json"
    target.write_text(json.dumps(data, indent=2, sort_keys=True))
    kept = keep_superseded(target, "0x" + "00" * 32)
    assert kept is not None and kept.name == f"{name}{data['manifest_digest'][2:14]}.anchor.json"
    assert kept.read_bytes() == target.read_bytes()


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 18446744073709551617}',  # past 64 bits
        '{"a": -99999999999999999999}',
        '{"a": [1, NaN]}',
        '{"a": "0x12345678901234567890"}',
        '{"a": 18446744073709551615}',  # the last integer orjson reads exactly
        '{"a": 1e30}',
    ],
)
def test_json_read_fast_is_what_the_standard_library_reads_or_says_it_is_not(text: str) -> None:
    """`decode_json` gives what `json.loads` gives, or `past_64_bits` says it may not (repr tells an
    integer from the float orjson makes of it)."""
    from anchor.proof.file import decode_json, past_64_bits

    for given in (text, text.encode()):
        found, expected = decode_json(given), json.loads(text)
        assert repr(found) == repr(expected) or past_64_bits(found), given
        assert not past_64_bits(found) or abs(expected["a"]) >= 2**64, given
