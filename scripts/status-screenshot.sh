#!/usr/bin/env bash
# status-screenshot.sh - regenerate docs/img/status-page.png: runs `token-sidecar demo` on loopback,
# sends a few requests through it (and one to an unrouted host), then has headless Chromium
# (Debian `chromium`) photograph the status page at / on the admin port.
#
#   scripts/status-screenshot.sh            # binary: $SIDECAR_BIN, else the newer of .build/{release,debug}
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${SIDECAR_BIN:-}"
if [[ -z "$bin" ]]; then
  for candidate in .build/release/token-sidecar .build/debug/token-sidecar; do
    [[ -x "$candidate" && ( -z "$bin" || "$candidate" -nt "$bin" ) ]] && bin="$candidate"
  done
fi
[[ -n "$bin" ]] || { echo "no token-sidecar binary: run 'make release' or set SIDECAR_BIN" >&2; exit 1; }
command -v chromium >/dev/null || { echo "chromium is not installed (apt-get install chromium)" >&2; exit 1; }

out="$(mktemp)"
"$bin" demo >"$out" 2>&1 &
demo=$!
trap 'kill "$demo" 2>/dev/null || true; rm -f "$out"' EXIT
admin="" proxy=""
for _ in $(seq 1 100); do
  admin="$(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$out" | head -1 | sed 's|/metrics||')" || true
  proxy="$(grep -o 'curl -s -x http://127.0.0.1:[0-9]*' "$out" | head -1 | sed 's|curl -s -x ||')" || true
  [[ -n "$admin" && -n "$proxy" ]] && break
  sleep 0.1
done
[[ -n "$admin" && -n "$proxy" ]] || { echo "the demo did not start:" >&2; cat "$out" >&2; exit 1; }
for _ in $(seq 1 40); do curl -s -o /dev/null -x "$proxy" http://demo.local/hello; done
curl -s -o /dev/null -x "$proxy" http://not-routed.test/ || true
mkdir -p docs/img
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,700 \
  --screenshot=docs/img/status-page.png "$admin/" 2>/dev/null
echo "wrote docs/img/status-page.png from $admin/"
