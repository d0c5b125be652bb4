#!/usr/bin/env bash
# Regenerate docs/screenshots/ from a real demo run: the explorer pages as headless Chromium shows them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
anchor="$root/.venv/bin/anchor"
export ANCHOR_DATA_DIR="$(mktemp -d)/demo" ANCHOR_LOCAL_PORT=18690
bash "$root/examples/demo.sh" > /dev/null
"$anchor" chain up > /dev/null
(cd "$root" && .venv/bin/uvicorn api.app:create_app --factory --port 18691 --log-level warning) &
server=$!
trap 'kill $server; "$anchor" chain down > /dev/null' EXIT
sleep 3
champion="$("$anchor" --json research report | python3 -c 'import json,sys; print(json.load(sys.stdin)["researchers"]["r0"]["champion"])')"
digest="$(python3 -c "import json; print(json.load(open('$ANCHOR_DATA_DIR/bundle.anchor.json'))['manifest_digest'])")"
shot() {
  chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
    --window-size=1200,"$3" --screenshot="$root/docs/screenshots/$1.png" "http://127.0.0.1:18691$2" 2>/dev/null
}
mkdir -p "$root/docs/screenshots"
shot home "/explorer/" 1100
shot lineage "/explorer/lineage/$champion" 660
shot attempt "/explorer/attempt/$champion" 560
shot bundle "/explorer/bundle/$digest" 560
echo "wrote $root/docs/screenshots/{home,lineage,attempt,bundle}.png"
# the chain-only explorer (anchor index) and the verification done in the browser
(cd "$root" && .venv/bin/python examples/screenshots_chain_only.py)
