#!/usr/bin/env bash
# The main job on the embedded local chain, as `make demo` runs it:
#  1. a result bundle: hash, anchor, verify by reading the registry back, look it up;
#  2. a real small research search (examples/research): every attempt ledgered and anchored, the
#     champion's lineage record read back from the chain;
#  3. a mission (examples/mission/demo-mission.toml): dispatched, run against its verified snapshot,
#     its result bundle and milestones anchored and verified.
# Run it again: the chain state is reloaded and nothing is anchored twice.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
anchor="$root/.venv/bin/anchor"
data="${ANCHOR_DATA_DIR:?set by make demo}"
proof="$data/bundle.anchor.json"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "local chain and registry"
"$anchor" chain up
"$anchor" deploy

step "result bundle: examples/bundle"
"$anchor" hash "$root/examples/bundle"
"$anchor" stamp "$root/examples/bundle" --out "$proof"
"$anchor" verify "$root/examples/bundle" --proof "$proof"
"$anchor" lookup "$root/examples/bundle"

step "research search: examples/research (tiny logistic regression, keep/reset loop)"
repo="$data/research-repo"
if [ ! -d "$repo/.git" ]; then  # a fixed identity and date: the same repository on every machine
  mkdir -p "$repo"
  cp "$here/research/train.py" "$here/research/params.json" "$here/research/data.csv" "$repo/"
  export GIT_AUTHOR_NAME=anchor-demo GIT_AUTHOR_EMAIL=demo@anchor.invalid
  export GIT_COMMITTER_NAME=anchor-demo GIT_COMMITTER_EMAIL=demo@anchor.invalid
  export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z
  git -C "$repo" init -q && git -C "$repo" add -A && git -C "$repo" commit -qm "example research repo"
fi
"$anchor" research run --repo "$repo" --contract "$here/research/contract.toml" --max-attempts 12 --seed 1
"$anchor" research verify
"$anchor" research report
champion="$("$anchor" --json research report | python3 -c 'import json,sys; print(json.load(sys.stdin)["researchers"]["r0"]["champion"])')"
"$anchor" lineage "$champion"

step "the champion's lineage record, read back from the chain"
"$anchor" lookup "$champion"

step "a mission: dispatched, run against its verified snapshot, its result bundle anchored"
mission="$here/mission/demo-mission.toml"
snapshot="$here/mission/prices.csv"
# no container runtime here: the runner runs on this host (the proof says ran_on: host), and the image
# named is a marker for that, pinned like any image (docs/missions.md)
image="local.invalid/this-host@sha256:$(printf 'anchor demo: ran on this host, no container image' | sha256sum | cut -c1-64)"
result="$data/missions/demo-momentum/result"
if [ ! -f "$data/missions/demo-momentum/result.anchor.json" ]; then
  "$anchor" snapshot add "$snapshot"
  digest="$("$anchor" --json mission check "$mission" | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')"
  "$anchor" mission submit --mission "$mission" --mission-digest "$digest" --snapshot "$snapshot" \
    --snapshot-sha256 "$(sha256sum "$snapshot" | cut -c1-64)" --image "$image" --output demo-momentum --profile small
  "$anchor" mission run demo-momentum
fi
"$anchor" verify "$result"

"$anchor" chain down
cat <<NEXT

Everything above was read back from the local chain. Proofs: $proof (the bundle),
$data/missions/demo-momentum/result.anchor.json (the mission).

Next:
  make explore        serve these records: the explorer at http://127.0.0.1:8000/explorer/,
                      the REST API at http://127.0.0.1:8000/docs (Ctrl-C stops it; it starts the
                      demo's chain and stops it again when it ends)
  README.md's tour    the same commands one at a time, on your own data dir (.anchor/, not the
                      demo's $data)
  docs/quickstart-base-sepolia.md   anchor on a public test chain, and have a colleague verify it
NEXT
