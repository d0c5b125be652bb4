"""What the README shows runs, or names something that exists. Its tour and its MLP example run as
written elsewhere (tests/project/test_docs_examples.py, tests/research/test_mlp_example.py), and every `anchor …`
it shows is checked there against the CLI; here: its public-tools check runs as written against a chain,
every registry call the docs show is a function the registry has (a retired signature once stayed in the
README after the registry changed), every `make` target it names exists, and its layout lists every part
of the package."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT, Chain
from tests.newcomer import block_after, run_block, workspace

README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]


def _filled(block: str, values: dict[str, str]) -> str:
    """The block with each `<placeholder>` the reader is told to fill in filled in; none left over."""
    for name, value in values.items():
        block = block.replace(f"<{name}>", value)
    assert not re.findall(r"<[\w.]+>", block), block
    return block


@pytest.mark.chain
def test_the_public_tools_check_runs_as_written_and_says_false_of_another_digest(
    deployed_chain: Chain, bundle: Path, tmp_path: Path
) -> None:
    """README's "Checking a proof with public tools only": `cast receipt` of the proof's transaction, the
    submitter read from its RootAnchored log as the README says (topics[2]), then the registry's own
    `verifyInclusion` with cast. `true` for the proof's digest, `false` for any other."""
    proof = json.loads(deployed_chain.cli("stamp", str(bundle), "--json", check=True).stdout)["proof"]
    receipt_line, call = block_after(README, "### Checking a proof with public tools only").split("\ncast call", 1)
    call = "cast call" + call
    url = f"http://127.0.0.1:{deployed_chain.port}"
    work, env = workspace(tmp_path)
    values = {
        "anchor.tx_hash": proof["anchor"]["tx_hash"],
        "url": url,
        "registry": proof["anchor"]["registry"],
        "batch.root": proof["batch"]["root"],
        "batch.proof...": ",".join(proof["batch"]["proof"]),
        "manifest_digest": proof["manifest_digest"],
    }
    receipt = run_block(_filled(receipt_line, values), work, env).stdout
    logs = json.loads(re.search(r"^logs\s+(\[.*\])$", receipt, flags=re.M).group(1))  # type: ignore[union-attr]
    [anchored] = [log for log in logs if log["address"].lower() == proof["anchor"]["registry"].lower()]
    assert anchored["topics"][1] == proof["batch"]["root"]
    values["submitter"] = "0x" + anchored["topics"][2][-40:]
    assert run_block(_filled(call, values), work, env).stdout.strip() == "true"
    values["manifest_digest"] = "0x" + "00" * 32
    assert run_block(_filled(call, values), work, env).stdout.strip() == "false"


def _registry_functions() -> set[str]:
    from anchor.chain.artifact import registry_abi

    return {
        f"{f['name']}({','.join(i['type'] for i in f['inputs'])})({','.join(o['type'] for o in f['outputs'])})"
        for f in registry_abi()
        if f["type"] == "function"
    }


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_registry_call_the_docs_show_is_a_function_of_the_registry(doc: Path) -> None:
    shown = re.findall(r"cast (?:call|send) \S+ \"(\w+\([\w,\[\]]*\)(?:\([\w,\[\]]*\))?)\"", doc.read_text())
    functions = _registry_functions()
    inputs_only = {f[: f.index(")") + 1] for f in functions}  # `cast send` names no outputs
    assert [s for s in shown if s not in functions and s not in inputs_only] == []


def test_every_make_target_the_readme_shows_exists() -> None:
    targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), flags=re.M))
    shown = set(re.findall(r"(?<![\w-])make ([a-z][\w-]*)", README.read_text()))
    assert len(shown) >= 5 and shown - targets == set()


def test_the_readme_layout_lists_every_part_of_the_package() -> None:
    listed = set(re.findall(r"`anchor/(\w+)(?:/|\.py)`", README.read_text()))
    parts = {p.parent.name for p in (ROOT / "anchor").glob("*/__init__.py")}
    parts |= {p.stem for p in (ROOT / "anchor").glob("*.py")} - {"__init__", "__main__"}
    assert parts - listed == set()
