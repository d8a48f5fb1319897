#!/usr/bin/env bash
# peers-slowread.sh — the slow-read abuse scenario against nginx and HAProxy as the proxy, in the
# same run and with the same backend, attacker and canary as run.sh, so token-sidecar's slow-read
# numbers have peers to be read against.
#
#   nginx    reverse proxy with its defaults for responses: proxy_buffering on, temporary files
#            up to proxy_max_temp_file_size (1 GiB) per response, no upstream connection limit
#   haproxy  absolute-form forward proxy (as in Benchmarks/peers.sh): streams, no disk, no
#            server maxconn (a backend connection per client)
#
# Prints, per proxy: the canary's n, p50, p99 and failures over a baseline and over the attack
# (same rule as run.sh: PASS = p99 < 2 x baseline p99 and no failure).
# Env: ABUSE_SECONDS (30)  BASELINE_SECONDS (10)  SLOW_CONNS (1000)  SLOWREAD_SIZE (64M)
#      SLOWREAD_RATE (500)  PEERS ("nginx haproxy")
# Loopback only; every phase is bounded by timeout(1).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ATTACK="$HERE/attack.py"
ABUSE_SECONDS="${ABUSE_SECONDS:-30}"
BASELINE_SECONDS="${BASELINE_SECONDS:-10}"
SLOW_CONNS="${SLOW_CONNS:-1000}"
PEERS="${PEERS:-nginx haproxy}"
# shellcheck source=Benchmarks/common.sh disable=SC1091
source "$HERE/../common.sh" abuse-peers
HAPROXY="$(tool_path haproxy)"
[[ -x "$NGINX" ]] || { echo "peers-slowread.sh: nginx not found" >&2; exit 2; }
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

BPORT="$(free_port)"
mkdir -p "$TMP/www"
truncate -s "${SLOWREAD_SIZE:-64M}" "$TMP/www/big"
nginx_conf backend "    server {
        listen 127.0.0.1:$BPORT;
        location = /big { root $TMP/www; }
        location / { default_type text/plain; return 200 \"ok\n\"; }
    }"
start_nginx backend "$BPORT"

# canary_and_attack NAME PORT: baseline canary, then canary + slow readers; prints one line.
canary_and_attack() {
  local name="$1" port="$2" limit=$((ABUSE_SECONDS + 30)) apid
  timeout -k 5 $((BASELINE_SECONDS + 30)) python3 "$ATTACK" canary --proxy "127.0.0.1:$port" \
    --seconds "$BASELINE_SECONDS" --out "$TMP/$name.baseline.json"
  timeout -k 5 "$limit" python3 "$ATTACK" slowread --proxy "127.0.0.1:$port" --conns "$SLOW_CONNS" --interval 1 \
    --drip 1 --rcvbuf 4096 --rate "${SLOWREAD_RATE:-500}" --seconds "$ABUSE_SECONDS" \
    --out "$TMP/$name.attack.json" >"$TMP/$name.attack.err" 2>&1 &
  apid=$!; PIDS+=("$apid")
  timeout -k 5 "$limit" python3 "$ATTACK" canary --proxy "127.0.0.1:$port" --seconds "$ABUSE_SECONDS" \
    --out "$TMP/$name.canary.json" || true
  wait "$apid" || true
  python3 - "$name" "$TMP/$name.baseline.json" "$TMP/$name.canary.json" <<'PY'
import json, sys
def stats(path):
    d = json.load(open(path))
    ok = sorted(s[1] for s in d["samples"] if s[2])
    fails = sum(1 for s in d["samples"] if not s[2])
    def pct(p):
        if not ok: return float("nan")
        return ok[min(len(ok) - 1, int(round(p / 100.0 * (len(ok) - 1))))]
    return len(d["samples"]), pct(50), pct(99), fails
name = sys.argv[1]
bn, b50, b99, bf = stats(sys.argv[2])
n, p50, p99, f = stats(sys.argv[3])
verdict = "PASS" if p99 < 2 * b99 and f == 0 and bf == 0 else "FAIL"
print("%-8s baseline n %3d p50 %7.2f p99 %7.2f fails %d | slowread n %3d p50 %8.2f p99 %8.2f fails %3d  %s"
      % (name, bn, b50, b99, bf, n, p50, p99, f, verdict))
PY
}

for peer in $PEERS; do
  port="$(free_port)"
  case "$peer" in
    nginx)
      nginx_conf nproxy "    upstream backend { server 127.0.0.1:$BPORT; keepalive 32; }
    server {
        listen 127.0.0.1:$port backlog=4096;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_set_header Authorization \"Bearer abc\";
        }
    }"
      start_nginx nproxy "$port"
      canary_and_attack nginx "$port"
      kill "$LAST_PID" 2>/dev/null || true ;;
    haproxy)
      [[ -x "$HAPROXY" ]] || { echo "haproxy not found; skipped"; continue; }
      mkdir -p "$TMP/haproxy"
      cat >"$TMP/haproxy/haproxy.cfg" <<CFG
global
    nbthread 1
    maxconn 4096
defaults
    mode http
    option http-keep-alive
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend fe
    bind 127.0.0.1:$port
    http-request set-header Authorization "Bearer abc"
    default_backend be
backend be
    server b 127.0.0.1:$BPORT
CFG
      start_bg "$TMP/haproxy/stdout" "$HAPROXY" -db -f "$TMP/haproxy/haproxy.cfg"
      wait_port "$port" "$LAST_PID" 10 || { echo "haproxy failed: $(tail -5 "$TMP/haproxy/stdout")"; continue; }
      canary_and_attack haproxy "$port"
      kill "$LAST_PID" 2>/dev/null || true ;;
    *) echo "unknown peer $peer" >&2; exit 2 ;;
  esac
  sleep 3
done
