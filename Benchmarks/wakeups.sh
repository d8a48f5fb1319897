#!/usr/bin/env bash
# wakeups.sh — what a proxy costs the processes around it at c50 on one CPU.
#
# Starts a backend nginx (1 worker, 100-byte body), token-sidecar (BIN, or .build/release) and,
# when it is installed, HAProxy as an absolute-form forward proxy injecting the same bearer
# token; BIN_B adds a second token-sidecar build to compare. Everything — backend, proxies and
# wrk — is pinned to CPU 0 (CPU_LIST), so a process that is woken takes the CPU from another.
# For ROUNDS rounds (interleaved), each target gets 1 s of warm-up and SECONDS_EACH s of wrk c50
# (1 thread); prints per run: requests/s, the CPU time per request of the proxy, the backend
# and wrk (user+sys), and the context switches per request of the proxy, the backend and wrk —
# how often each was woken.
#
# Run:  Benchmarks/wakeups.sh            (release build first: make release)
# Env:  BIN, BIN_B, ROUNDS (3), SECONDS_EACH (5), CPU_LIST (0)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/token-sidecar}
ROUNDS=${ROUNDS:-3}; SECS=${SECONDS_EACH:-5}; CPUS=${CPU_LIST:-0}
for tool in nginx wrk taskset /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "wakeups.sh needs $tool" >&2; exit 2; }
done
[[ -x "$BIN" ]] || { echo "no token-sidecar at $BIN (make release)" >&2; exit 2; }
TMP=$(mktemp -d /tmp/wakeups.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; exit 2; }
BP=$(free_port)
mkdir -p "$TMP/backend"
USER_LINE=""; [[ "$(id -u)" = 0 ]] && USER_LINE="user root root;"
cat >"$TMP/backend/nginx.conf" <<EOF
$USER_LINE
daemon off;
worker_processes 1;
pid $TMP/backend/nginx.pid;
error_log $TMP/backend/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $TMP/backend/body;
    proxy_temp_path $TMP/backend/proxy;
    fastcgi_temp_path $TMP/backend/fastcgi;
    uwsgi_temp_path $TMP/backend/uwsgi;
    scgi_temp_path $TMP/backend/scgi;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$BP backlog=4096;
        location = / { return 200 "backend-ok 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEF\n"; }
    }
}
EOF
taskset -c "$CPUS" nginx -p "$TMP/backend" -e "$TMP/backend/error.log" -c "$TMP/backend/nginx.conf" &
PIDS+=($!); BACKEND_MASTER=$!
wait_port "$BP"
BACKEND=$(pgrep -P "$BACKEND_MASTER" nginx | head -1); BACKEND=${BACKEND:-$BACKEND_MASTER}

NAMES=(); PORTS=(); TPIDS=()
start_sidecar() {  # NAME BINARY
  local port; port=$(free_port)
  cat >"$TMP/$1.yaml" <<EOF
listen: "127.0.0.1:$port"
admin: "127.0.0.1:0"
accessLog: false
logLevel: warning
workers: 1
credentials:
  bench:
    type: static
    token: "test-token-123"
routes:
  - host: "127.0.0.1:$BP"
    credential: bench
EOF
  taskset -c "$CPUS" "$2" run --config "$TMP/$1.yaml" >"$TMP/$1.log" 2>&1 &
  PIDS+=($!); TPIDS+=($!); NAMES+=("$1"); PORTS+=("$port")
  wait_port "$port"
}
start_sidecar sidecar "$BIN"
[[ -n "${BIN_B:-}" ]] && start_sidecar sidecar-b "$BIN_B"
if command -v haproxy >/dev/null; then
  port=$(free_port)
  cat >"$TMP/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 4096
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend fe
    bind 127.0.0.1:$port
    http-request deny unless { url_ip 127.0.0.1 } { url_port $BP }
    http-request set-header Authorization "Bearer test-token-123"
    default_backend be
backend be
    http-request set-dst url_ip
    http-request set-dst-port url_port
    server fwd 0.0.0.0:0
EOF
  taskset -c "$CPUS" haproxy -db -f "$TMP/haproxy.cfg" >"$TMP/haproxy.log" 2>&1 &
  PIDS+=($!); TPIDS+=($!); NAMES+=(haproxy); PORTS+=("$port")
  wait_port "$port"
fi

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
switches() { cat /proc/"$1"/task/*/status | awk '/^(non)?voluntary_ctxt_switches/ {s += $2} END {print s}'; }
TICK=$(getconf CLK_TCK)
LUA="$TMP/abs.lua"
echo "wrk.path = \"http://127.0.0.1:$BP/\"; wrk.headers[\"Host\"] = \"127.0.0.1:$BP\"" >"$LUA"
printf '%-10s %9s %14s %16s %12s %14s %16s %12s\n' target 'req/s' 'proxy µs/req' 'backend µs/req' 'wrk µs/req' 'proxy cs/req' 'backend cs/req' 'wrk cs/req'
for round in $(seq "$ROUNDS"); do
  for i in "${!NAMES[@]}"; do
    url="http://127.0.0.1:${PORTS[$i]}/"; pid=${TPIDS[$i]}
    taskset -c "$CPUS" wrk -t1 -c50 -d1s -s "$LUA" "$url" >/dev/null
    p0=$(cpu_ticks "$pid"); b0=$(cpu_ticks "$BACKEND"); s0=$(switches "$BACKEND"); q0=$(switches "$pid")
    out=$(/usr/bin/time -f 'TIME %U %S %c %w' taskset -c "$CPUS" wrk -t1 -c50 -d"${SECS}s" -s "$LUA" "$url" 2>&1)
    p1=$(cpu_ticks "$pid"); b1=$(cpu_ticks "$BACKEND"); s1=$(switches "$BACKEND"); q1=$(switches "$pid")
    requests=$(echo "$out" | awk '/requests in/ {print $1}')
    echo "$out" | awk -v name="${NAMES[$i]}" -v n="$requests" -v secs="$SECS" -v tick="$TICK" \
      -v pc=$((p1 - p0)) -v bc=$((b1 - b0)) -v bs=$((s1 - s0)) -v ps=$((q1 - q0)) '/^TIME/ {
        printf "%-10s %9.0f %14.2f %16.2f %12.2f %14.3f %16.3f %12.3f\n", name, n / secs, pc * 1e6 / tick / n,
          bc * 1e6 / tick / n, ($2 + $3) * 1e6 / n, ps / n, bs / n, ($4 + $5) / n }'
  done
done
