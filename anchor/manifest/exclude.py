"""What a file tree leaves out: gitignore-syntax rules, bound into the manifest when they matter.

Why bound: a verifier must re-hash exactly what was anchored. When a rule excluded anything, the
rules are recorded in the filetree identity (`exclude`, in order, docs/manifest.md section 3), so they
are covered by the digest; a verifier applies those rules and no others (never the .anchorignore it
finds on disk, which is itself hashed content). When nothing was excluded the identity has no
`exclude` field and is what it always was.

Rules, in order: `.git/` and `*.anchor.json` (unless defaults are turned off: a repository's internals
and a proof file are not a result; the second is recorded only when it matched), the lines of
`.anchorignore` at the root, and `--exclude` patterns. Pure: no web3, no I/O but reading the ignore file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from anchor.errors import BadInput

if TYPE_CHECKING:
    import pathspec

IGNORE_FILE = ".anchorignore"
PROOF_FILES = "*.anchor.json"
"""A proof `anchor stamp FILE` wrote beside a file inside the tree: about the result, not part of it
(stamping a file and then its folder must not bind the file's proof into the folder). Recorded only
when it left something out, so a tree without proof files has the digest it always had."""
DEFAULT_EXCLUDES = (".git/", PROOF_FILES)
MAX_RULES = 1000
MAX_RULE_CHARS = 256


def check_rules(rules: object, where: str) -> tuple[str, ...]:
    """Rules as recorded in a manifest: a list of one-line, bounded strings, in their order (in gitignore
    syntax order matters: `*.tmp` then `!keep.tmp` keeps keep.tmp, the other way round does not)."""
    if not isinstance(rules, list) or not rules or len(rules) > MAX_RULES:
        raise BadInput(
            f"{where}: exclude must be a non-empty list of at most {MAX_RULES} rules", detail={"field": where}
        )
    for rule in rules:
        if not isinstance(rule, str) or not 0 < len(rule) <= MAX_RULE_CHARS or any(c in rule for c in "\0\n\r"):
            raise BadInput(
                f"{where}: {rule!r} is not a rule (1-{MAX_RULE_CHARS} chars, one line)", detail={"field": where}
            )
    return tuple(rules)


def _gitignore(patterns: Sequence[str]) -> pathspec.GitIgnoreSpec:
    """pathspec, imported when rules are first matched: a single file's verify never does (18 ms)."""
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(patterns)


class Rules:
    """A set of gitignore-syntax rules, matched against paths relative to the tree's root."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(patterns)  # in order: the last matching rule decides

    @cached_property
    def _spec(self) -> pathspec.GitIgnoreSpec:
        return _gitignore(self.patterns)

    @cached_property
    def _any_of(self) -> Callable[[str], object] | None:
        """Without a negated rule (`!keep`), a path is left out exactly when some rule matches it, so the
        rules are joined into one regular expression, tried once per path, skipping GitIgnoreSpec's
        ranking of every match (a third of the walk's time at 100,000 files) and a Python call per rule.
        With a negated rule, None: the spec decides; rules whose expressions cannot be joined (a bracket
        expression) are tried one by one.

        The joined expression is each rule's own (pathspec's), its one named group unnamed, since a name
        may appear once in an expression: the group marks a directory match, and only whether the whole
        matches is asked here."""
        active = [pattern for pattern in self._spec.patterns if pattern.include is not None]
        if any(not pattern.include for pattern in active):
            return None
        one_by_one = tuple(pattern.match_file for pattern in active)

        def each(path: str) -> object:
            return next((True for match in one_by_one if match(path) is not None), None)

        expressions = [pattern.regex for pattern in active if pattern.regex is not None]
        if "[" in "".join(self.patterns) or len(expressions) != len(active) or len({e.flags for e in expressions}) > 1:
            # a bracket's contents are copied into the expression as written, where the group's name may
            # stand: renaming it there would change the rule, so such rules are tried one by one
            return each
        joined = "|".join(f"(?:{e.pattern.replace('(?P<ps_d>', '(')})" for e in expressions)
        try:
            return re.compile(joined, expressions[0].flags).match if expressions else each
        except re.error:
            return each

    def excludes(self, rel: str, is_dir: bool) -> bool:
        if not self.patterns:
            return False
        path = rel + "/" if is_dir else rel
        tried = self._any_of
        if tried is None:
            return bool(self._spec.match_file(path))
        return tried(path) is not None

    def recorded(self, excluded: Sequence[str]) -> tuple[str, ...]:
        """The rules a manifest records after `excluded` (as the walk named them) were left out: none if
        nothing was; the proof-file default only if it matched one of them (see PROOF_FILES)."""
        if not excluded:
            return ()
        if PROOF_FILES in self.patterns:
            only = _gitignore([PROOF_FILES])
            if not any(only.match_file(rel) for rel in excluded):
                return tuple(p for p in self.patterns if p != PROOF_FILES)
        return self.patterns

    @classmethod
    def for_root(cls, root: Path, extra: Sequence[str] = (), defaults: bool = True) -> Rules:
        """The rules in effect when anchoring `root`: defaults, its .anchorignore, then `extra`."""
        lines = list(DEFAULT_EXCLUDES) if defaults else []
        ignore = root / IGNORE_FILE
        if root.is_dir() and ignore.is_file() and not ignore.is_symlink():
            try:
                text = ignore.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise BadInput(f"{ignore}: cannot be read as UTF-8 ({exc})", detail={"path": str(ignore)}) from None
            lines += [line.rstrip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
        lines += list(extra)
        if len(lines) > MAX_RULES or any(len(line) > MAX_RULE_CHARS for line in lines):
            raise BadInput(
                f"{root}: more than {MAX_RULES} exclude rules, or one longer than {MAX_RULE_CHARS} chars",
                detail={"path": str(root)},
            )
        return cls(lines)
