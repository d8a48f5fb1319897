#!/usr/bin/env bash
# grpcio unary calls/s direct to a grpcio server and through token-sidecar (prior knowledge to the
# listener, upstreamProtocol: h2c), in one run, at concurrency 1 and 20: `make bench-grpc`.
# DURATION (default 5) seconds per measurement; SIDECAR_CPU pins the sidecar (default: CPU 0),
# the server and the client share the other CPU. Prints a markdown table. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5}
SIDECAR_CPU=${SIDECAR_CPU:-0}
PY=${PEERS_PYTHON:-.build-peers/bin/python3}
BIN=${BIN:-.build/release/token-sidecar}
DIR=$(mktemp -d /tmp/bench-grpc.XXXXXX)
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$DIR"; }
PIDS=()
trap cleanup EXIT

"$PY" Tests/ProxyTests/Fixtures/grpc_peer.py server > "$DIR/server.out" &
PIDS+=($!)
for _ in $(seq 1 100); do grep -q '^PORT' "$DIR/server.out" 2>/dev/null && break; sleep 0.1; done
SERVER_PORT=$(awk '/^PORT/ {print $2}' "$DIR/server.out")
PROXY_PORT=18470
cat > "$DIR/sidecar.yaml" <<YAML
listen: "127.0.0.1:$PROXY_PORT"
admin: "127.0.0.1:18471"
logLevel: warning
credentials:
  orders: {type: static, token: "bench-token"}
routes:
  - host: "orders.test"
    upstream: "http://127.0.0.1:$SERVER_PORT"
    upstreamProtocol: h2c
    credential: orders
YAML
taskset -c "$SIDECAR_CPU" "$BIN" run --config "$DIR/sidecar.yaml" > "$DIR/sidecar.log" 2>&1 &
PIDS+=($!)
SIDECAR_PID=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:18471/readyz" > /dev/null 2>&1 && break; sleep 0.1; done

echo "| concurrency | direct calls/s | through the sidecar calls/s | ratio | sidecar CPU µs/call |"
echo "|---|---|---|---|---|"
for c in 1 20; do
  direct=$("$PY" Benchmarks/grpc_calls.py "127.0.0.1:$SERVER_PORT" orders.test "$DURATION" "$c" | awk '{print $6}')
  before=$(awk '{print $14 + $15}' "/proc/$SIDECAR_PID/stat")
  line=$("$PY" Benchmarks/grpc_calls.py "127.0.0.1:$PROXY_PORT" orders.test "$DURATION" "$c")
  after=$(awk '{print $14 + $15}' "/proc/$SIDECAR_PID/stat")
  via=$(echo "$line" | awk '{print $6}')
  calls=$(echo "$line" | awk '{print $2}')
  ticks=$(getconf CLK_TCK)
  # The CPU window includes the 1 s warm-up: divided by the counted calls it slightly overstates.
  cpu=$(awk -v t=$((after - before)) -v hz="$ticks" -v n="$calls" -v d="$DURATION" 'BEGIN { printf "%.0f", t / hz * 1e6 / (n * (d + 1) / d) }')
  ratio=$(awk -v a="$via" -v b="$direct" 'BEGIN { printf "%.2f", a / b }')
  echo "| $c | $direct | $via | $ratio | $cpu |"
done
