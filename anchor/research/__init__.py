"""The research runtime: an autoresearch keep/reset loop in which every attempt is a git commit,
measured under identical bounds by the harness, written to a hash-chained ledger and anchored."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from anchor.research.verdict import SearchVerdict, verify_search

__all__ = ["SearchVerdict", "verify_search"]


def __getattr__(name: str) -> object:
    """`anchor.research.verify_search`, imported when first used (the runtime's modules stay cheap)."""
    if name in __all__:
        from anchor.research import verdict

        return getattr(verdict, name)
    raise AttributeError(f"module 'anchor.research' has no attribute {name!r}")
