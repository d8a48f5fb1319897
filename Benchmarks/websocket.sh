#!/usr/bin/env bash
# websocket.sh - a WebSocket echo through token-sidecar and through nginx, side by side: the
# proxy's CPU per message (utime+stime from /proc, the only number that does not depend on the
# Python peers) and the messages per second the peers reached. Each proxy injects the same
# bearer token; the backend (Tests/ProxyTests/Fixtures/ws_backend.py) refuses a handshake without it.
#
#   make release && make peers-venv && bash Benchmarks/websocket.sh
#   MESSAGES=50000 SIZES="64 16384 1048576" ROUNDS=2 bash Benchmarks/websocket.sh   (the defaults but 1 MiB)
set -euo pipefail
source "$(dirname "$0")/common.sh" websocket
MESSAGES="${MESSAGES:-50000}"
SIZES="${SIZES:-64 16384}"
ROUNDS="${ROUNDS:-2}"
PY="$REPO/.build-peers/bin/python3"
[[ -x "$PY" ]] || { echo "needs the test peers' python: make peers-venv" >&2; exit 1; }
BIN="$(find_sidecar_bin)"
NGINX="$(tool_path nginx)"
TOKEN=bench-token

# The backend: one process, both proxies' handshakes (it logs nothing the benchmark reads).
BACKEND_PORT="$(free_port)"
start_bg "$TMP/backend.out" "$PY" "$REPO/Tests/ProxyTests/Fixtures/ws_backend.py" --log "$TMP/backend.jsonl" --accept "$TOKEN"
backend_pid=$LAST_PID
for _ in $(seq 1 100); do grep -q '^PORT ' "$TMP/backend.out" 2>/dev/null && break; sleep 0.1; done
BACKEND_PORT="$(awk '/^PORT/{print $2}' "$TMP/backend.out")"
[[ -n "$BACKEND_PORT" ]] || { echo "the backend did not start"; cat "$TMP/backend.out"; exit 1; }

# nginx: the WebSocket proxying its documentation gives, one worker.
NGINX_PORT="$(free_port)"
mkdir -p "$TMP/nginx/logs"
cat > "$TMP/nginx/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $TMP/nginx/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $TMP/nginx; proxy_temp_path $TMP/nginx; fastcgi_temp_path $TMP/nginx;
  uwsgi_temp_path $TMP/nginx; scgi_temp_path $TMP/nginx;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location / {
      proxy_pass http://127.0.0.1:$BACKEND_PORT;
      proxy_http_version 1.1;
      proxy_set_header Upgrade \$http_upgrade;
      proxy_set_header Connection "upgrade";
      proxy_set_header Authorization "Bearer $TOKEN";
      proxy_read_timeout 3600s;
    }
  }
}
CONF
start_nginx nginx "$NGINX_PORT"
nginx_pid=$LAST_PID

# token-sidecar: one worker, a route by the Host the client sends.
SIDECAR_PORT="$(free_port)"
cat > "$TMP/sidecar.yaml" <<CONF
listen: "127.0.0.1:$SIDECAR_PORT"
workers: 1
logLevel: warning
credentials:
  bench: {type: static, token: "$TOKEN"}
routes:
  - host: "127.0.0.1:$SIDECAR_PORT"
    upstream: "http://127.0.0.1:$BACKEND_PORT"
    credential: bench
CONF
start_bg "$TMP/sidecar.out" "$BIN" run --config "$TMP/sidecar.yaml"
sidecar_pid=$LAST_PID
wait_port "$SIDECAR_PORT" "$sidecar_pid" 10 || { echo "token-sidecar failed to start"; cat "$TMP/sidecar.out"; exit 1; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK="$(getconf CLK_TCK)"

echo "| proxy | message bytes | messages | peers' msg/s | proxy CPU µs/message |"
echo "|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
  for size in $SIZES; do
    count=$MESSAGES
    (( size >= 1048576 )) && count=$(( MESSAGES / 200 > 20 ? MESSAGES / 200 : 20 ))
    (( size >= 16384 && size < 1048576 )) && count=$(( MESSAGES / 4 ))
    for target in sidecar nginx; do
      if [[ $target = sidecar ]]; then port=$SIDECAR_PORT; pid=$sidecar_pid; else port=$NGINX_PORT; pid=$nginx_pid; fi
      before="$(cpu_ticks "$pid")"
      result="$("$PY" "$BENCH_DIR/websocket_driver.py" --url "ws://127.0.0.1:$port/ws" --messages "$count" --size "$size")"
      after="$(cpu_ticks "$pid")"
      rate="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["per_second"])' "$result")"
      cpu="$(python3 -c 'import sys; t,hz,n=map(float,sys.argv[1:]); print(round(t/hz*1e6/n, 1))' "$((after - before))" "$TICK" "$count")"
      echo "| $target (round $round) | $size | $count | $rate | $cpu |"
    done
  done
done
grep -c '"status": 401' "$TMP/backend.jsonl" >/dev/null && { echo "a handshake was refused: the token did not arrive" >&2; exit 1; } || true
