"""The research runtime: an autoresearch keep/reset loop in which every attempt is a git commit,
measured under identical bounds by the harness, written to a hash-chained ledger and anchored."""
