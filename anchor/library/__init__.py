"""The library's face: the `Verifier` every door calls (`verifier`), above read-back and the
statements it checks. The `Stamper` is anchoring's (anchor.anchoring.stamper), one layer lower, since
research and missions take one. `import anchor` exposes both, lazily (anchor/__init__.py)."""
