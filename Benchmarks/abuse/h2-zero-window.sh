#!/usr/bin/env bash
# abuse/h2-zero-window.sh — the zero-window attack, over TLS (an intercepted tunnel) and over h2c:
# does one app connection whose streams never open a window slow down everybody else?
#
# One attacker connection sets SETTINGS_INITIAL_WINDOW_SIZE to 0 and opens STREAMS streams, each
# for an 8 MiB file, and never opens a window (Benchmarks/abuse/zero_window.py). Beside it a
# CANARY sends a GET through the sidecar (HTTP/1.1, keep-alive, to a plain route and a backend of
# its own) every 10 ms, each latency counted from when its request was due:
# SECONDS before the attack (its baseline), then SECONDS while the attack holds. Two rows:
#   tls  CONNECT zw.test:443, TLS with the sidecar's leaf (ALPN h2), the route intercepting to a
#        TLS nginx (HTTP/1.1)
#   h2c  HTTP/2 with prior knowledge on the listener, the route to a plain nginx (HTTP/1.1)
# Verdict per row: canary p99 during the attack <= max(20 ms, 2 x its baseline p99), no canary
# failure. Exit 0 when both pass, 1 when one fails, 2 on a set-up problem.
#
# Run:   make release && Benchmarks/abuse/h2-zero-window.sh      (~45 s)
# Env:   SECONDS_EACH (10)  STREAMS (100)  WAYS ("tls h2c")  SIDECAR_BIN (the release build)
#        KEEP_TMP=1 keeps the temp dir (configs, logs)
set -euo pipefail
# shellcheck source=../common.sh
source "$(cd "$(dirname "$0")/.." && pwd)/common.sh" h2-zero-window
SECONDS_EACH="${SECONDS_EACH:-10}"
STREAMS="${STREAMS:-100}"
WAYS="${WAYS:-tls h2c}"
SIDECAR_BIN="$(find_sidecar_bin)"
[[ -x "$SIDECAR_BIN" ]] || { echo "no $SIDECAR_BIN: make release first" >&2; exit 2; }
need_tools nginx:nginx-light openssl:openssl || exit 2

# ---- a CA and the backend's certificate -------------------------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "/CN=zero-window test CA" \
  -keyout "$TMP/ca.key" -out "$TMP/ca.pem" 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=127.0.0.1" \
  -keyout "$TMP/backend.key" -out "$TMP/backend.csr" 2>/dev/null
printf 'basicConstraints=critical,CA:FALSE\nsubjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$TMP/backend.ext"
openssl x509 -req -in "$TMP/backend.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" -set_serial 7 -days 1 \
  -extfile "$TMP/backend.ext" -out "$TMP/backend.pem" 2>/dev/null

# ---- backends: nginx, plain and TLS, HTTP/1.1; the canary's of its own -----------------------------
# (Sharing one would measure the backend: a single nginx worker encrypting 100 x 8 MiB answers the
# canary hundreds of milliseconds late whoever forwards to it.)
mkdir -p "$TMP/www"
head -c $((8 << 20)) /dev/zero >"$TMP/www/big8m"
PLAIN_PORT="$(free_port)"
TLS_PORT="$(free_port)"
nginx_conf backend "
    server {
        listen 127.0.0.1:$PLAIN_PORT;
        listen 127.0.0.1:$TLS_PORT ssl;
        ssl_certificate $TMP/backend.pem;
        ssl_certificate_key $TMP/backend.key;
        location / { root $TMP/www; default_type application/octet-stream; }
    }"
start_nginx backend "$PLAIN_PORT"
CANARY_PORT="$(free_port)"
nginx_conf canary "
    server {
        listen 127.0.0.1:$CANARY_PORT;
        location = /canary { default_type text/plain; return 200 \"ok\n\"; }
    }"
start_nginx canary "$CANARY_PORT"

# ---- the sidecar --------------------------------------------------------------------------------
PORT="$(free_port)"
cat >"$TMP/sidecar.yaml" <<EOF
listen: "127.0.0.1:$PORT"
admin: "127.0.0.1:0"
accessLog: false
intercept: {caCertFile: $TMP/sidecar-ca.pem}
credentials:
  api: {type: static, token: "abc"}
routes:
  - host: "zw.test:443"
    intercept: true
    upstream: "https://127.0.0.1:$TLS_PORT"
    caFile: $TMP/ca.pem
    credential: api
  - host: "zw.test"
    upstream: "http://127.0.0.1:$PLAIN_PORT"
    credential: api
  - host: "canary.test"
    upstream: "http://127.0.0.1:$CANARY_PORT"
    credential: api
EOF
start_bg "$TMP/sidecar.log" "$SIDECAR_BIN" run --config "$TMP/sidecar.yaml"
wait_port "$PORT" "$LAST_PID" 10 || { cat "$TMP/sidecar.log"; echo "the sidecar did not start" >&2; exit 2; }

echo "token-sidecar (make release of $(git -C "$REPO" log -1 --format=%h 2>/dev/null || echo "?")); $STREAMS streams x 8 MiB, window 0, ${SECONDS_EACH} s baseline + ${SECONDS_EACH} s attack per row"
echo
echo "| way | canary baseline p50 / p99 (ms) | canary under attack p50 / p99 / max (ms) | failures | attacker heads / resets | verdict |"
echo "|---|---|---|---|---|---|"
rc=0
for way in $WAYS; do
  case "$way" in
    tls) args=(zw.test:443 /big8m --tls "$TMP/sidecar-ca.pem") ;;
    h2c) args=(zw.test /big8m --h2c) ;;
    *) echo "unknown way $way" >&2; exit 2 ;;
  esac
  out="$(bgrun python3 "$BENCH_DIR/abuse/zero_window.py" "$PORT" "${args[@]}" --streams "$STREAMS" --seconds "$SECONDS_EACH")" \
    || { echo "zero_window.py failed ($way)" >&2; tail -5 "$TMP/sidecar.log"; exit 2; }
  line="$(python3 - "$out" <<'EOF'
import json, sys
r = json.loads(sys.argv[1])
b, a, t = r["baseline"], r["attack"], r["attacker"]
bound = max(20.0, 2 * (b["p99_ms"] or 0))
ok = a["p99_ms"] is not None and a["p99_ms"] <= bound and a["failures"] == 0 and b["failures"] == 0
print("| %s | %s / %s | %s / %s / %s | %d | %d / %d | %s (p99 <= %.1f ms) |" % (
    r["way"], b["p50_ms"], b["p99_ms"], a["p50_ms"], a["p99_ms"], a["max_ms"], a["failures"] + b["failures"],
    t["heads"], t["resets"], "PASS" if ok else "FAIL", bound))
EOF
)"
  echo "$line"
  [[ "$line" == *"| PASS "* ]] || rc=1
done
exit $rc
