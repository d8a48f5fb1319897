#!/usr/bin/env bash
# peers-slowread.sh — the slow-read abuse scenario against nginx and HAProxy as the proxy, in the
# same run and with the same backend, attacker and canary as run.sh, so token-sidecar's slow-read
# numbers have peers to be read against.
#
#   nginx    reverse proxy with its defaults for responses: proxy_buffering on, temporary files
#            up to proxy_max_temp_file_size (1 GiB) per response, no upstream connection limit
#   haproxy  absolute-form forward proxy (as in Benchmarks/peers.sh): streams, no disk, no
#            server maxconn (a backend connection per client)
#   direct   no proxy: the canary and the slow readers talk to the backend itself (it takes the
#            absolute-form requests as they are), so what the backend alone does under the attack
#            is the floor every proxy is read against
#
# Prints, per proxy: the canary's n, p50, p99 and failures over a baseline and over the attack
# (same rule as run.sh: PASS = p99 < 2 x baseline p99 and no failure).
# Env: ABUSE_SECONDS (30)  BASELINE_SECONDS (10)  SLOW_CONNS (1000)  SLOWREAD_SIZE (64M)
#      SLOWREAD_RATE (500)  PEERS ("nginx haproxy"; add "direct" for the backend alone)
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

# shellcheck source=Benchmarks/abuse/backend.sh disable=SC1091
source "$HERE/backend.sh"

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
  python3 - "$HERE" "$name" "$TMP/$name.baseline.json" "$TMP/$name.canary.json" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import report  # the same statistics and rule as run.sh's report
name, base, attack = sys.argv[2], report.canary_stats(report.load(sys.argv[3])), report.canary_stats(report.load(sys.argv[4]))
passed = attack["p99"] is not None and attack["p99"] < 2 * base["p99"] and not attack["fails"] and not base["fails"]
print("%-8s baseline n %3d p50 %s p99 %s fails %d | slowread n %3d p50 %s p99 %s fails %3d  %s" % (
    name, base["n"], report.fmt_ms(base["p50"]), report.fmt_ms(base["p99"]), len(base["fails"]),
    attack["n"], report.fmt_ms(attack["p50"]), report.fmt_ms(attack["p99"]), len(attack["fails"]),
    "PASS" if passed else "FAIL"))
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
    direct) canary_and_attack direct "$BPORT" ;;
    *) echo "unknown peer $peer" >&2; exit 2 ;;
  esac
  sleep 3
done
