"""Hostile proof files, made by hypothesis from real ones: whoever edits a proof file controls every byte
of it, so every door must answer every one of these with a typed error (or, where the edit changed
nothing that matters, the verdict the original gets), never a traceback.

The seeds are real proofs of each form: the golden sealed proof (tests/vectors/sealed, verifiable with
no network), the same anchor unsealed, a multi-anchor proof, a pending proof with a signed receipt, and
a per-file proof. The mutations are what an adversary or a broken tool writes: a value of the wrong
type, a number past any width, hex with an odd length or a letter past f, a key dropped or added, an
extra or empty Merkle-Patricia node, RLP nested thousands deep or claiming a length it does not have,
JSON nested past any parser's stack, truncated or with its bytes flipped.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

VECTORS = Path(__file__).resolve().parent.parent / "vectors" / "sealed"
GOLDEN_BLOCK = "2:0x1723685d556beb264e849a1430f6f1b2f57e276cc37f15fd773b42d1b28b7294"
"""The block the golden proof is sealed in, trusted by hash: the offline verdict needs no chain."""

RECEIPT_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
"""A well-known development key (anvil's second account): the pending seed's receipt is signed, by
no service anyone trusts."""


def golden() -> dict[str, Any]:
    return dict(json.loads((VECTORS / "work.anchor.json").read_text()))


def _receipt(proof: dict[str, Any]) -> dict[str, Any]:
    from eth_account import Account
    from eth_account.messages import encode_typed_data

    from anchor.proof.receipt import typed_data

    fields = {
        "chain_id": 31337,
        "registry": proof["anchor"]["registry"],
        "manifest_digest": proof["manifest_digest"],
        "accepted_at": 1796000000,
        "service": "hostile service",
    }
    message = typed_data(
        fields["chain_id"], fields["registry"], fields["manifest_digest"], fields["accepted_at"], fields["service"]
    )
    signed = Account.sign_message(encode_typed_data(full_message=message), RECEIPT_KEY)
    return {
        **fields,
        "url": "http://127.0.0.1:9/",
        "signer": Account.from_key(RECEIPT_KEY).address,
        "signature": "0x" + bytes(signed.signature).hex(),
    }


def seeds() -> dict[str, dict[str, Any]]:
    """One real proof of each form, by name (the per-file form is made from the golden tree by
    `per_file_seed`, which needs a directory to write in)."""
    sealed = golden()
    unsealed = copy.deepcopy(sealed)
    del unsealed["anchor"]["sealed"]
    multi = copy.deepcopy(sealed)
    multi["anchors"] = [
        {
            "service": "http://127.0.0.1:9/",
            "batch": copy.deepcopy(sealed["batch"]),
            "anchor": copy.deepcopy(unsealed["anchor"]),
        }
    ]
    pending = {
        "format": "anchor/pending",
        "version": 1,
        "manifest": sealed["manifest"],
        "files": sealed["files"],
        "annotations": sealed.get("annotations", {}),
        "manifest_digest": sealed["manifest_digest"],
        "receipts": [_receipt(sealed)],
    }
    return {"sealed": sealed, "unsealed": unsealed, "multi-anchor": multi, "pending": pending}


def per_file_seed(where: Path) -> dict[str, Any]:
    """The golden tree's one file's own proof (`anchor prove a.txt --in work`), sealed section and all."""
    import shutil

    from anchor.anchoring.prove import write_file_proof

    shutil.copytree(VECTORS, where, dirs_exist_ok=True)
    proof, path = write_file_proof(where / "work" / "a.txt", where / "work", out=where / "a.txt.anchor.json")
    return dict(json.loads(path.read_text()))


# -- hostile values -------------------------------------------------------------------------------------------


def rlp_list(payload: bytes) -> bytes:
    """An RLP list header for `payload` (Ethereum's encoding: short form under 56 bytes, else long)."""
    if len(payload) < 56:
        return bytes([0xC0 + len(payload)]) + payload
    size = len(payload).to_bytes((len(payload).bit_length() + 7) // 8, "big")
    return bytes([0xF7 + len(size)]) + size + payload


@functools.lru_cache(maxsize=64)
def deep_rlp(depth: int) -> str:
    """A well-formed RLP value nested `depth` lists deep: a decoder that recurses per level overflows."""
    payload = b""
    for _ in range(depth):
        payload = rlp_list(payload)
    return "0x" + payload.hex()


def deep_json(depth: int, opener: str = "[") -> str:
    if opener == "[":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


RLP_ODDITIES = [
    "0x",
    "0x80",
    "0xc0",
    "0x00",
    "0xc180",
    "0xc3808080",
    "0xbf",
    "0xb8",
    "0xb801",
    "0xf8",
    "0xf800",
    "0xbbffffffff",
    "0xfbffffffff",
    "0xbfffffffffffffffff",
    "0xffffffffffffffffff",
    "0x8100",
    "0xb800",
    "0xc2c0",
    "0xe1a0" + "00" * 32,
    "0xf90000",
    "0xc5" + "83" + "616263" + "80",
]
"""Short RLP items a trie walker meets at the edges: empty, the empty string and list, a non-canonical
single byte, headers promising 4 GiB or 2^64 bytes, truncated long forms, a 17-less branch."""

HOSTILE_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**63,
    2**64,
    2**256,
    -(2**256),
    10**400,
    0.5,
    1e308,
    -0.0,
    "",
    "0x",
    "0X00",
    "0xzz",
    "0x0",
    "0x" + "0" * 63,
    "0x" + "f" * 65,
    "0x" + "g" * 64,
    "0x" + "AB" * 32,
    "x" * 20_000,
    "0x" + "00" * 300_000,
    "\u0000",
    "../../etc/passwd",
    "\ud83d\ude00" * 10,
    [],
    {},
    [None],
    [[[]]],
    {"": {}},
    ["0x"] * 65,
    ["0x80"] * 200,
]


DEEP_RLP = st.sampled_from([1, 2, 30, 1_000, 5_000]).map(lambda depth: deep_rlp(depth))
"""RLP lists nested that deep: one is a node, thousands overflow a decoder that recurses per level."""

OUTSIZED_VALUES = [
    deep_json(100_000),
    deep_json(20_000, "{"),
    "9" * 100_000,
    "-" + "1" * 5_000,
    "1e99999",
    "NaN",
    "Infinity",
    "-Infinity",
    "1" * 4_301,
    "0." + "1" * 5_000,
]
"""JSON text put in place of a value: nesting past any parser's stack, numbers past Python's 4,300-digit
limit on int(), and the non-JSON literals Python's json module accepts."""


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every location in a JSON value (the root included)."""
    found = [here]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*here, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _paths(v, (*here, i))
    return found


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    _get(value, path[:-1])[path[-1]] = new
    return value


def _hex_edit(text: str, how: int, at: int, data: bytes) -> str:
    body = text[2:] if text[:2].lower() == "0x" else text
    at = at % (len(body) + 1)
    edits = [
        lambda: text[:2] + body[:at] + ("0" if body[at : at + 1] != "0" else "1") + body[at + 1 :],  # a nibble
        lambda: text[:2] + body[:at],  # truncated (maybe to an odd length)
        lambda: text[:2] + body + data.hex(),  # bytes appended
        lambda: text[:2] + data.hex() + body,  # bytes prepended
        lambda: text.upper(),
        lambda: body,  # no 0x
        lambda: text[:2] + body[:at] + "g" + body[at:],  # a letter past f
        lambda: text + "0",  # odd length
        lambda: text[:2] + body[:at] + body[at + 2 :],  # a byte dropped
    ]
    return str(edits[how % len(edits)]())


@st.composite
def mutated_json(draw: st.DrawFn, seed: dict[str, Any]) -> Any:
    """`seed` after one to four structural edits: a value replaced, a key dropped or added, a hex string
    edited, a list grown, shrunk or reordered (trie nodes, RLP, paths)."""
    value = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(value)
        path = draw(st.sampled_from(paths))
        target = _get(value, path)
        op = draw(st.integers(0, 7))
        if op == 0 or not path:
            replacement = draw(st.one_of(st.sampled_from(HOSTILE_VALUES), st.sampled_from(RLP_ODDITIES), DEEP_RLP))
            value = _set(value, path, copy.deepcopy(replacement))
        elif op == 1 and isinstance(_get(value, path[:-1]), dict):
            del _get(value, path[:-1])[path[-1]]
        elif op == 2 and isinstance(target, dict):
            key = draw(st.sampled_from(["sealed", "state", "file", "files", "anchors", "receipts", "x", "", "version"]))
            target[key] = copy.deepcopy(draw(st.sampled_from(HOSTILE_VALUES)))
        elif op == 3 and isinstance(target, str):
            value = _set(
                value,
                path,
                _hex_edit(target, draw(st.integers(0, 20)), draw(st.integers(0, 10**6)), draw(st.binary(max_size=40))),
            )
        elif op == 4 and isinstance(target, list):
            node = draw(st.one_of(st.sampled_from(RLP_ODDITIES), DEEP_RLP, st.sampled_from(target or ["0x"])))
            target.insert(draw(st.integers(0, len(target))), node)
        elif op == 5 and isinstance(target, list) and target:
            del target[draw(st.integers(0, len(target) - 1))]
        elif op == 6 and isinstance(target, list) and len(target) > 1:
            target.reverse()
        elif op == 7 and isinstance(target, int) and not isinstance(target, bool):
            value = _set(value, path, draw(st.sampled_from([-1, 2**31, 2**32, 2**64, 2**256, 10**100, target + 1])))
    return value


STATEMENTS = "statements"
"""The key of a statements seed (`anchor attest`'s NAME.intoto.jsonl): its lines, one JSON object each."""


@st.composite
def hostile_proof_bytes(draw: st.DrawFn, seed: dict[str, Any], indent: int | None = 2) -> bytes:
    """The bytes of a hostile proof file: a structurally mutated seed, or the seed's text truncated,
    flipped, spliced, nested deep or made of numbers no parser should widen. A statements seed has one
    of its lines made hostile (`indent` None: the others stay one a line)."""
    if STATEMENTS in seed:
        lines = [json.dumps(line) for line in seed[STATEMENTS]]
        at = draw(st.integers(0, len(lines) - 1))
        lines[at] = draw(hostile_proof_bytes(seed[STATEMENTS][at], indent=None)).decode("utf-8", "replace")
        return ("\n".join(lines) + "\n").encode()
    kind = draw(st.integers(0, 9))
    text = json.dumps(seed, indent=indent)
    if kind <= 5:
        return json.dumps(draw(mutated_json(seed)), indent=indent).encode()
    if kind == 6:  # truncated, or a byte changed
        raw = bytearray(text.encode())
        at = draw(st.integers(0, len(raw) - 1))
        if draw(st.booleans()):
            return bytes(raw[:at])
        raw[at] = draw(st.integers(0, 255))
        return bytes(raw)
    if kind == 7:  # a value replaced by JSON nested past the stack, or a number of 10^5 digits
        paths = [p for p in _paths(seed) if p]
        path = draw(st.sampled_from(paths))
        marker = "\u2603HOSTILE\u2603"
        body = json.dumps(_set(copy.deepcopy(seed), path, marker))
        deep = draw(st.sampled_from(OUTSIZED_VALUES))
        return body.replace(json.dumps(marker), deep, 1).encode()
    if kind == 8:  # whole-file oddities
        whole = [
            b"",
            b"null",
            b"[]",
            b"{}",
            b"0",
            b'"x"',
            b"\xef\xbb\xbf" + text.encode(),
            text.encode("utf-16"),
            b"\xff\xfe\x00",
            text.encode() + b"\x00garbage",
            deep_json(100_000).encode(),
            text.replace('"anchor"', '"anchor":1,"anchor"', 1).encode(),
        ]
        return draw(st.sampled_from(whole))
    # spliced: a sealed section's hex field given another field's value
    value = copy.deepcopy(seed)
    hexes = [p for p in _paths(value) if isinstance(_get(value, p), str) and _get(value, p).startswith("0x")]
    if len(hexes) >= 2:
        a, b = draw(st.sampled_from(hexes)), draw(st.sampled_from(hexes))
        value = _set(value, a, _get(value, b))
    return json.dumps(value).encode()
