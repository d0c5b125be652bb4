"""The research runtime: an autoresearch keep/reset loop in which every attempt is a git commit,
measured under identical bounds by the harness, written to a hash-chained ledger and anchored."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from anchor.research.claim import ClaimExport, ClaimVerdict, check_claim, export_claim
    from anchor.research.report import SearchReport, report_search
    from anchor.research.session import SearchOptions, SearchRun, run_search
    from anchor.research.verdict import SearchVerdict, verify_search

_WHERE = {
    "ClaimExport": "claim",
    "ClaimVerdict": "claim",
    "check_claim": "claim",
    "export_claim": "claim",
    "SearchVerdict": "verdict",
    "verify_search": "verdict",
    "SearchReport": "report",
    "report_search": "report",
    "SearchOptions": "session",
    "SearchRun": "session",
    "run_search": "session",
}
__all__ = [
    "ClaimExport",
    "ClaimVerdict",
    "SearchOptions",
    "SearchReport",
    "SearchRun",
    "SearchVerdict",
    "check_claim",
    "export_claim",
    "report_search",
    "run_search",
    "verify_search",
]


def __getattr__(name: str) -> object:
    """`anchor.research.run_search`, `.verify_search`, ...: imported when first used (the runtime's
    modules stay cheap)."""
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"anchor.research.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'anchor.research' has no attribute {name!r}")
