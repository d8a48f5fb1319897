#!/usr/bin/env bash
# wakeups.sh — what a proxy costs the processes around it at c50 on one CPU.
#
# Starts a backend nginx (1 worker, 100-byte body), token-sidecar (BIN, or the release build) and,
# when it is installed, HAProxy as an absolute-form forward proxy injecting the same bearer
# token; BIN_B adds a second token-sidecar build to compare. Everything — backend, proxies and
# wrk — is pinned to CPU_LIST (one CPU), so a process that is woken takes the CPU from another.
# For ROUNDS rounds (interleaved), each target gets 1 s of warm-up and SECONDS_EACH s of wrk c50
# (1 thread); prints per run: requests/s, the CPU time per request of the proxy, the backend
# and wrk (user+sys), and the context switches per request of the proxy, the backend and wrk —
# how often each was woken or preempted.
#
# Run:  Benchmarks/wakeups.sh            (release build first: make release)
# Env:  BIN, BIN_B, ROUNDS (3), SECONDS_EACH (5), CPU_LIST (0)
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh" wakeups
ROUNDS=${ROUNDS:-3}; SECS=${SECONDS_EACH:-5}
PIN=(taskset -c "${CPU_LIST:-0}")
BIN=${BIN:-$(find_sidecar_bin)}
for tool in nginx wrk taskset /usr/bin/time; do
  have "$tool" || { echo "wakeups.sh needs $tool" >&2; exit 2; }
done
[[ -x "$BIN" ]] || { echo "no token-sidecar at $BIN (make release)" >&2; exit 2; }
TOKEN=abc

BPORT=$(free_port)
nginx_conf backend "    server {
        listen 127.0.0.1:$BPORT backlog=4096;
        location = / { return 200 \"backend-ok 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEF\\n\"; }
    }"
start_nginx backend "$BPORT"
BACKEND_MASTER=$LAST_PID
BACKEND=$(pgrep -P "$BACKEND_MASTER" nginx | head -1 || true); BACKEND=${BACKEND:-$BACKEND_MASTER}

NAMES=(); PORTS=(); TPIDS=(); URLS=()
add_sidecar() {  # add_sidecar NAME BINARY: route api.test -> the backend
  local port; port=$(free_port)
  sidecar_config "$port" "$TMP/$1.yaml"
  start_bg "$TMP/$1.log" "$2" run --config "$TMP/$1.yaml"
  wait_port "$port" "$LAST_PID" 10 || { echo "$1 did not start: $(tail -3 "$TMP/$1.log")" >&2; exit 2; }
  NAMES+=("$1"); PORTS+=("$port"); TPIDS+=("$LAST_PID"); URLS+=("http://api.test/")
}
add_sidecar sidecar "$BIN"
[[ -n "${BIN_B:-}" ]] && add_sidecar sidecar-b "$BIN_B"
if have haproxy; then
  port=$(free_port)
  haproxy_cfg haproxy "$port" 0
  start_bg "$TMP/haproxy/stdout" "$(tool_path haproxy)" -db -f "$TMP/haproxy/haproxy.cfg"
  wait_port "$port" "$LAST_PID" 10 || { echo "haproxy did not start" >&2; exit 2; }
  NAMES+=(haproxy); PORTS+=("$port"); TPIDS+=("$LAST_PID"); URLS+=("http://127.0.0.1:$BPORT/")
fi

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
switches() { cat /proc/"$1"/task/*/status | awk '/^(non)?voluntary_ctxt_switches/ {s += $2} END {print s}'; }
TICK=$(getconf CLK_TCK)
printf '%-10s %9s %14s %16s %12s %14s %16s %12s\n' target 'req/s' 'proxy µs/req' 'backend µs/req' 'wrk µs/req' \
  'proxy cs/req' 'backend cs/req' 'wrk cs/req'
for round in $(seq "$ROUNDS"); do
  for i in "${!NAMES[@]}"; do
    # The absolute-form target the proxy expects ("GET http://host/ HTTP/1.1", Host: host).
    lua="$TMP/${NAMES[$i]}.lua"
    echo "wrk.path = \"${URLS[$i]}\"; wrk.headers[\"Host\"] = \"${URLS[$i]#http://}\"" | sed 's#/"$#"#' >"$lua"
    url="http://127.0.0.1:${PORTS[$i]}/"; pid=${TPIDS[$i]}
    "${PIN[@]}" wrk -t1 -c50 -d1s -s "$lua" "$url" >/dev/null
    p0=$(cpu_ticks "$pid"); b0=$(cpu_ticks "$BACKEND"); s0=$(switches "$BACKEND"); q0=$(switches "$pid")
    out=$(/usr/bin/time -f 'TIME %U %S %c %w' "${PIN[@]}" wrk -t1 -c50 -d"${SECS}s" -s "$lua" "$url" 2>&1)
    p1=$(cpu_ticks "$pid"); b1=$(cpu_ticks "$BACKEND"); s1=$(switches "$BACKEND"); q1=$(switches "$pid")
    requests=$(echo "$out" | awk '/requests in/ {print $1}')
    errors=$(echo "$out" | awk '/Non-2xx|Socket errors/' || true)
    [[ -z "$errors" ]] || echo "${NAMES[$i]}: $errors" >&2
    echo "$out" | awk -v name="${NAMES[$i]}" -v n="$requests" -v secs="$SECS" -v tick="$TICK" \
      -v pc=$((p1 - p0)) -v bc=$((b1 - b0)) -v bs=$((s1 - s0)) -v ps=$((q1 - q0)) '/^TIME/ {
        printf "%-10s %9.0f %14.2f %16.2f %12.2f %14.3f %16.3f %12.3f\n", name, n / secs, pc * 1e6 / tick / n,
          bc * 1e6 / tick / n, ($2 + $3) * 1e6 / n, ps / n, bs / n, ($4 + $5) / n }'
  done
done
