#!/usr/bin/env bash
# anchor -> verify -> lookup against a real chain (`make e2e`; not part of `make test`).
# Needs ANCHOR_RPC_URL and a funded key (ANCHOR_PRIVATE_KEY or ANCHOR_KEYSTORE + _PASSWORD); without
# them it says so and exits 0. Uses a fresh data directory under $TMPDIR and leaves it for inspection.
set -euo pipefail
if [[ -z "${ANCHOR_RPC_URL:-}" || ( -z "${ANCHOR_PRIVATE_KEY:-}" && -z "${ANCHOR_KEYSTORE:-}" ) ]]; then
  echo "e2e: skipped: set ANCHOR_RPC_URL and a funded key (ANCHOR_PRIVATE_KEY, or ANCHOR_KEYSTORE and"
  echo "     ANCHOR_KEYSTORE_PASSWORD) to anchor, verify and look up against a real chain"
  exit 0
fi
ANCHOR=${ANCHOR:-.venv/bin/anchor}
work=$(mktemp -d "${TMPDIR:-/tmp}/anchor-e2e.XXXXXX")
export ANCHOR_DATA_DIR="$work/data"
mkdir -p "$work/results"
date -u +%FT%TZ > "$work/results/when.txt"
head -c 4096 /dev/urandom > "$work/results/sample.bin"
echo "e2e: data directory $ANCHOR_DATA_DIR"
if [[ -n "${ANCHOR_REGISTRY:-}" ]]; then
  echo "e2e: using the registry at $ANCHOR_REGISTRY (no deploy)"
else
  "$ANCHOR" deploy
fi
"$ANCHOR" anchor "$work/results"
verify=("$ANCHOR" verify "$work/results" --min-finality 1)
[[ -n "${ANCHOR_REGISTRY:-}" ]] && verify+=(--registry "$ANCHOR_REGISTRY")
"${verify[@]}"
"$ANCHOR" lookup "$work/results"
echo "e2e: OK"
