"""Every door that reads a proof file answers a hostile one with a typed error: the library an
`anchor.errors` error that is not the internal one, the CLI that error's exit code (never 1, never a
traceback), the REST API a 4xx with its code (never a 5xx), the browser's sealed check its own
`SealedError` (never an uncaught exception).

Hypothesis makes the proofs from real ones of each form (tests/hostile/proofs.py): the library and the
CLI offline against the golden sealed proof, the CLI online and the REST API against a tree anchored and
sealed on the test's chain. `make test` runs 5,000 proofs across those doors, and 1,000 sealed sections
through the browser's check; `make fuzz` runs ANCHOR_FUZZ_SCALE times as many, each run with fresh
randomness (`make test` is derandomised: the same ones every time). The named inputs below, the ones
that once broke a door, run in the fast tier.
"""

from __future__ import annotations

import collections
import json
import os
import tracemalloc
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import anchor
from anchor.errors import AnchorError, ExitCode
from anchor.sealing.check import offline_settings
from anchor.settings.session import Settings
from tests.api_server import serving_api
from tests.cli import run_anchor
from tests.conftest import Chain
from tests.hostile.proofs import (
    GOLDEN_BLOCK,
    STATEMENTS,
    VECTORS,
    deep_json,
    deep_rlp,
    golden,
    hostile_proof_bytes,
    mutated_json,
    per_file_seed,
)
from tests.hostile.proofs import seeds as proof_seeds

SCALE = int(os.environ.get("ANCHOR_FUZZ_SCALE", "1"))
"""`make fuzz` sets it (nightly-sized runs); `make test` runs the counts below once."""

LIBRARY_EXAMPLES, CLI_EXAMPLES, REST_EXAMPLES, ONLINE_CLI_EXAMPLES = (n * SCALE for n in (2_400, 1_200, 1_000, 400))
"""5,000 hostile proofs in all under `make test`; the library is the cheapest door to ask."""

PEAK_BYTES = 256 << 20
"""No named hostile input may make the library allocate more than this (each is < 1 MiB on disk)."""


def _fuzz_settings(examples: int) -> Any:
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        derandomize=SCALE == 1,
        suppress_health_check=list(HealthCheck),
    )


@pytest.fixture(scope="module")
def forms(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], Path]]:
    """Each seed proof form, with the path it proves (the golden tree, or its one file)."""
    where = tmp_path_factory.mktemp("per-file")
    found = {name: (proof, VECTORS / "work") for name, proof in proof_seeds().items()}
    found["per-file"] = (per_file_seed(where), where / "work" / "a.txt")
    return found


def _cases(forms: dict[str, tuple[dict[str, Any], Path]]) -> st.SearchStrategy[tuple[str, bytes]]:
    return st.sampled_from(sorted(forms)).flatmap(
        lambda name: st.tuples(st.just(name), hostile_proof_bytes(forms[name][0]))
    )


def _offline(data: Path) -> Settings:
    return offline_settings(Settings.from_env(data), [GOLDEN_BLOCK], None)


def _library_door(data: Path) -> Callable[[Path, Path | None], str]:
    """`anchor.verify(path, proof=str)` offline: "ok", or the typed error's code; an untyped one raises."""
    chosen = _offline(data)

    def door(target: Path, proof: Path | None) -> str:
        try:
            anchor.verify(str(target), proof=None if proof is None else str(proof), settings=chosen)
        except AnchorError as exc:
            assert exc.exit_code != ExitCode.INTERNAL, (type(exc).__name__, exc.message)
            return exc.code
        return "ok"

    return door


def _cli_door(env: dict[str, str], *options: str) -> Callable[[Path, Path | None], str]:
    """`anchor verify PATH [--proof FILE] OPTIONS`: its exit code, never 1 nor a traceback, and a line
    on stderr naming the cause of a refusal."""

    def door(target: Path, proof: Path | None) -> str:
        said = run_anchor(["verify", str(target), *([] if proof is None else ["--proof", str(proof)]), *options], env)
        assert said.returncode != ExitCode.INTERNAL and "Traceback" not in said.stderr, said.stderr[-2000:]
        assert said.returncode == ExitCode.OK or said.stderr.strip(), "a refusal that says nothing"
        return str(said.returncode)

    return door


def _offline_cli_door(data: Path) -> Callable[[Path, Path | None], str]:
    """`anchor verify PATH --proof FILE --offline --trusted-block N:HASH`, in a data dir of its own."""
    env = {"PATH": os.environ["PATH"], "HOME": str(data), "ANCHOR_DATA_DIR": str(data)}
    return _cli_door(env, "--offline", "--trusted-block", GOLDEN_BLOCK)


def _fuzz(
    door: Callable[[Path, Path | None], str], forms: dict[str, tuple[dict[str, Any], Path]], where: Path, examples: int
) -> collections.Counter[str]:
    """Feed `examples` hostile proofs to `door`; what it answered, counted."""
    answers: collections.Counter[str] = collections.Counter()
    proof = where / "hostile.anchor.json"

    @_fuzz_settings(examples)
    @given(_cases(forms))
    def one(case: tuple[str, bytes]) -> None:
        name, raw = case
        if name == STATEMENTS:  # the statements file is the path verified: it carries its own proof
            forms[name][1].write_bytes(raw)
            answers[door(forms[name][1], None)] += 1
            return
        proof.write_bytes(raw)
        answers[door(forms[name][1], proof)] += 1

    one()
    return answers


LOCAL_DOORS = {"library": (_library_door, LIBRARY_EXAMPLES, "ok"), "cli": (_offline_cli_door, CLI_EXAMPLES, "0")}
"""Each door with no server: how it is asked, how many hostile proofs it gets, and what it says when the
proof holds (the golden one must: a door that refused everything would pass this test)."""


@pytest.mark.soak
@pytest.mark.parametrize("door_name", sorted(LOCAL_DOORS))
def test_hostile_proofs_given_to_the_library_and_the_cli_are_typed_errors(
    door_name: str, forms: dict[str, tuple[dict[str, Any], Path]], tmp_path: Path
) -> None:
    make, examples, verified = LOCAL_DOORS[door_name]
    door = make(tmp_path / "data")
    (tmp_path / "seed.anchor.json").write_text(json.dumps(golden()))
    assert door(VECTORS / "work", tmp_path / "seed.anchor.json") == verified
    answers = _fuzz(door, forms, tmp_path, examples)
    print(f"{door_name}: {sum(answers.values())} hostile proofs, answered {dict(answers.most_common())}")
    assert sum(answers.values()) >= examples and answers[verified] < sum(answers.values()) / 2, answers


@pytest.fixture(scope="module")
def api_url(deployed_chain: Chain) -> Iterator[str]:
    with serving_api(deployed_chain.env()) as url:
        yield url


@pytest.fixture(scope="module")
def chain_forms(
    deployed_chain: Chain, forms: dict[str, tuple[dict[str, Any], Path]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[dict[str, Any], Path]]:
    """The seeds, and a tree anchored on this chain, plain and sealed (with the registry's record as of
    a later block): a hostile edit of these reaches the chain reads, not only the decoder."""
    where = tmp_path_factory.mktemp("anchored")
    tree = where / "results"
    (tree / "outputs").mkdir(parents=True)
    (tree / "outputs" / "metrics.json").write_text('{"acc": 0.9}\n')
    (tree / "README.md").write_text("a result\n")
    deployed_chain.cli("stamp", str(tree), check=True)
    plain = json.loads((where / "results.anchor.json").read_text())
    deployed_chain.cli("seal", str(tree), check=True)
    sealed = json.loads((where / "results.anchor.json").read_text())
    assert "state" in sealed["anchor"]["sealed"], sealed["anchor"]["sealed"].keys()
    deployed_chain.cli("attest", str(tree), check=True)
    statements = where / "results.intoto.jsonl"
    lines = [json.loads(line) for line in statements.read_text().splitlines() if line.strip()]
    return {
        **forms,
        "anchored": (plain, tree),
        "anchored-sealed": (sealed, tree),
        STATEMENTS: ({STATEMENTS: lines}, statements),
    }


def _post_proof(url: str, raw: bytes) -> tuple[int, dict[str, Any]]:
    """POST /v1/verify/proof with `raw` as the uploaded file: (status, JSON body)."""
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="proof"; filename="p.anchor.json"\r\n'
            "Content-Type: application/json\r\n\r\n"
        ).encode()
        + raw
        + f"\r\n--{boundary}--\r\n".encode()
    )
    request = urllib.request.Request(
        f"{url}/v1/verify/proof",
        data=body,
        method="POST",
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:  # noqa: S310 - loopback
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def _rest_door(url: str) -> Callable[[Path, Path | None], str]:
    def door(target: Path, proof: Path | None) -> str:
        status, body = _post_proof(url, (proof or target).read_bytes())
        assert status < 500 and (status == 200 or body.get("code")), (status, body)  # noqa: PLR2004
        return str(status)

    return door


@pytest.mark.soak
@pytest.mark.parametrize("door_name", ["cli, online", "rest"])
def test_hostile_proofs_read_against_the_chain_by_the_cli_and_the_rest_api_are_typed_errors(
    door_name: str,
    chain_forms: dict[str, tuple[dict[str, Any], Path]],
    deployed_chain: Chain,
    api_url: str,
    tmp_path: Path,
) -> None:
    door, examples, verified = (
        (_rest_door(api_url), REST_EXAMPLES, "200")
        if door_name == "rest"
        else (_cli_door(deployed_chain.env()), ONLINE_CLI_EXAMPLES, "0")
    )
    seed, tree = chain_forms["anchored-sealed"]
    (tmp_path / "seed.anchor.json").write_text(json.dumps(seed))
    assert door(tree, tmp_path / "seed.anchor.json") == verified
    if door_name != "rest":  # the API verifies proof files; a statements file is the CLI's path to verify
        assert door(chain_forms[STATEMENTS][1], None) == verified
    answers = _fuzz(door, chain_forms, tmp_path, examples)
    print(f"{door_name}: {sum(answers.values())} hostile proofs, answered {dict(answers.most_common())}")
    assert sum(answers.values()) >= examples and answers[verified] < sum(answers.values()) / 2, answers


# -- the named inputs: each once broke a door ------------------------------------------------------------------


def _sealed_with(edit: Callable[[dict[str, Any]], None]) -> bytes:
    proof = golden()
    edit(proof)
    return json.dumps(proof).encode()


def _node(at: int, node: str) -> bytes:
    """The golden proof with `node` put among its receipt's trie nodes at `at`."""
    return _sealed_with(lambda p: p["anchor"]["sealed"]["proof"].insert(at, node))


def _sealed(**fields: Any) -> bytes:
    return _sealed_with(lambda p: p["anchor"]["sealed"].update(fields))


def _text(before: str, after: str) -> bytes:
    return json.dumps(golden()).replace(before, after).encode()


NAMED: dict[str, bytes] = {
    "an extra empty trie node": _node(99, "0x"),
    "an empty trie node first": _node(0, "0x80"),
    "a trie node of RLP nested 5,000 deep": _node(99, deep_rlp(5_000)),
    "a trie node claiming 2^64 bytes": _node(0, "0xffffffffffffffffff"),
    "a receipt of RLP nested 5,000 deep": _sealed(receipt=deep_rlp(5_000)),
    "a header of RLP nested 2,600 deep": _sealed(header=deep_rlp(2_600)),
    "an odd-length hex receipt": _sealed(receipt=golden()["anchor"]["sealed"]["receipt"] + "0"),
    "a transaction index of 2^256": _sealed(index=2**256),
    "a proof list that is a string": _sealed(proof="0x80"),
    "a block number of 10^400": _sealed_with(lambda p: p["anchor"].update(block_number=10**400)),
    "a block number of 2^64": _sealed_with(lambda p: p["anchor"].update(block_number=2**64)),
    "a sealed section that is a list": _sealed_with(lambda p: p["anchor"].update(sealed=[])),
    "JSON nested 100,000 deep": deep_json(100_000).encode(),
    "a number of 100,000 digits": _text('"block_number": 2', '"block_number": ' + "9" * 100_000),
    "NaN for the block number": _text('"block_number": 2', '"block_number": NaN'),
    "UTF-16": json.dumps(golden()).encode("utf-16"),
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_hostile_proofs_are_typed_errors_at_the_library_and_the_cli(name: str, tmp_path: Path) -> None:
    proof = tmp_path / "hostile.anchor.json"
    proof.write_bytes(NAMED[name])
    library, cli = _library_door(tmp_path / "data"), _offline_cli_door(tmp_path / "data")
    tracemalloc.start()
    try:
        said = library(VECTORS / "work", proof)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert said != "ok" and peak < PEAK_BYTES, (said, peak)
    assert cli(VECTORS / "work", proof) in {str(int(code)) for code in (ExitCode.BAD_INPUT, ExitCode.TAMPERED)}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_hostile_proofs_posted_to_the_rest_api_are_4xx(name: str, api_url: str) -> None:
    status, body = _post_proof(api_url, NAMED[name])
    assert 400 <= status < 500 and body["code"] not in ("internal", "http_error"), (status, body)  # noqa: PLR2004


def test_a_str_is_taken_for_every_path_by_the_verifier_as_by_anchor_verify(tmp_path: Path) -> None:
    """`Verifier.verify("work", proof="x.json")` raised AttributeError ('str' has no 'parent'), and
    `Verifier.offline(trusted_blocks="file")` ('str' has no 'read_text')."""
    from anchor.library.verifier import Verifier

    verifier = Verifier(_offline(tmp_path / "data"))
    verdict = verifier.verify(str(VECTORS / "work"), proof=str(VECTORS / "work.anchor.json"))
    assert verdict.manifest_digest == golden()["manifest_digest"]
    assert anchor.verify(VECTORS / "work", proof=VECTORS / "work.anchor.json", settings=verifier.settings) == verdict
    listed = Verifier.offline(trusted_blocks=str(VECTORS / "trusted-blocks.txt"), data_dir=str(tmp_path / "data"))
    assert listed.verify(str(VECTORS / "work")).manifest_digest == verdict.manifest_digest


# -- the browser's check ---------------------------------------------------------------------------------------

BROWSER_EXAMPLES = 1_000 * SCALE


def test_hostile_sealed_sections_given_to_the_browsers_check_are_its_typed_refusals() -> None:
    """/verify's offline check (api/static/sealed-check.js, the code the page runs, in node as
    tests/explorer/test_browser_sealed.py runs it) given hostile sealed sections: each is a `SealedError` with its
    status, or the verdict the golden one gets; never an uncaught exception, which would leave the page's
    verdict unsaid."""
    from tests.explorer.test_browser_sealed import _case, _golden, _run_in_node

    proof, trusted = _golden()
    seed = {
        "sealed": proof["anchor"]["sealed"],
        "root": proof["batch"]["root"],
        "registry": proof["anchor"]["registry"],
    }
    cases: list[dict[str, Any]] = []

    @_fuzz_settings(BROWSER_EXAMPLES)
    @given(mutated_json(seed))
    def collect(hostile: Any) -> None:
        fields = hostile if isinstance(hostile, dict) else {"sealed": hostile}
        cases.append(
            _case(proof, trusted, **{k: fields.get(k) for k in ("sealed", "root", "registry")})
        )  # dropped: null

    collect()
    answers = _run_in_node([_case(proof, trusted), *cases])
    assert "ok" in answers[0], answers[0]  # the check verifies what is sound
    uncaught = [(case, answer) for case, answer in zip(cases, answers[1:], strict=True) if "uncaught" in str(answer)]
    assert not uncaught, uncaught[:3]
    refused = collections.Counter(str(a.get("error", "ok")) for a in answers[1:])
    print(f"browser check: {len(cases)} hostile sealed sections, answered {dict(refused.most_common())}")
    assert len(cases) >= BROWSER_EXAMPLES and refused["ok"] < len(cases) / 2, refused


STATEMENT_EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "a null predicate": lambda s: s.update(predicate=None),
    "a subject named by a number": lambda s: s["subject"][0].update(name=7),
    "a subject that is a string": lambda s: s.update(subject=["a.txt"]),
    "a predicate type that is a list": lambda s: s.update(predicateType=[]),
}
"""Statements lines the fuzz found raising TypeError or AttributeError (exit 1) before they were typed."""


@pytest.mark.parametrize("name", sorted(STATEMENT_EDITS))
def test_named_hostile_statements_are_bad_input_naming_the_line_and_field(
    name: str, chain_forms: dict[str, tuple[dict[str, Any], Path]], deployed_chain: Chain, tmp_path: Path
) -> None:
    lines = [json.loads(json.dumps(line)) for line in chain_forms[STATEMENTS][0][STATEMENTS]]
    STATEMENT_EDITS[name](lines[0])
    statements = tmp_path / "results.intoto.jsonl"
    statements.write_text("".join(json.dumps(line) + "\n" for line in lines))
    said = run_anchor(["verify", str(statements)], deployed_chain.env())
    assert said.returncode == ExitCode.BAD_INPUT and f"{statements}:1: " in said.stderr, said.stderr
