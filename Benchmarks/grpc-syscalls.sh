#!/usr/bin/env bash
# System calls per unary gRPC call, by name: grpc-go's load client (grpcbench, ../shared/bench/grpc)
# at concurrency C for SECONDS through each proxy (h2c both sides, each injecting the token with
# ../shared/bench/grpc/conf's config) to grpc-go's server. `strace -c -f` is attached to the proxy
# (every thread) after a warm-up and detached after the measured load; the counts are divided by
# the calls the client completed meanwhile. What a call costs in the kernel (and in latency at
# c=1, where nothing batches) does not drift like calls/s on this 2-core VM.
#
#   bash Benchmarks/grpc-syscalls.sh                       # sidecar (make release), nghttpx, haproxy
#   C=50 ONLY=sidecar SIDECAR_BIN=/tmp/sc bash Benchmarks/grpc-syscalls.sh
#
# Loopback only (127.0.0.1:18480 server, 18490+ proxies); every load is bounded by SECONDS.
set -euo pipefail
cd "$(dirname "$0")/.."
C=${C:-1}; SECS=${SECONDS_LOAD:-5}; ONLY=${ONLY:-sidecar,nghttpx,haproxy}
SHARED=${SHARED:-$(cd .. && pwd)/shared/bench/grpc}
RUN=${RUN_DIR:-/tmp/grpc-syscalls}; rm -rf "$RUN"; mkdir -p "$RUN"
TOKEN=test-token-123; BACKEND=18480
command -v strace > /dev/null || { echo "grpc-syscalls.sh needs strace" >&2; exit 2; }
if [ -z "${SIDECAR_BIN:-}" ]; then
    [ -x .build/release/token-sidecar ] || { echo "make release first"; exit 1; }
    SIDECAR_BIN=.build/release/token-sidecar
fi
G=$(bash "$SHARED/build.sh")
cleanup() { pkill -f "$RUN/" 2>/dev/null || true; [ -n "${SP:-}" ] && kill "$SP" 2>/dev/null || true; }
trap cleanup EXIT
"$G" server -listen 127.0.0.1:$BACKEND -token $TOKEN > "$RUN/server.log" 2>&1 & SP=$!

conf() {   # TEMPLATE NAME PORT: the config with its placeholders filled
    mkdir -p "$RUN/$2"
    sed -e "s#@PORT@#$3#g" -e "s#@TOKEN@#$TOKEN#g" -e "s#@AUTHORITY@#127.0.0.1:$BACKEND#g" -e "s#@BACKEND_PORT@#$BACKEND#g" \
        -e "s#@RUN@#$RUN/$2#g" "$SHARED/conf/$1" > "$RUN/$2/conf"
    echo "$RUN/$2/conf"
}

measure() {   # NAME PORT COMMAND...: prints the syscalls per call, total and by name
    local name=$1 port=$2; shift 2
    "$@" > "$RUN/$name/stdout.log" 2>&1 &
    local pp=$!
    for _ in $(seq 1 100); do ss -ltn | grep -q ":$port " && break; sleep 0.1; done
    "$G" load -target 127.0.0.1:$port -authority 127.0.0.1:$BACKEND -c "$C" -d 1 -warmup 0.5 > "$RUN/$name/warm.json" 2>/dev/null
    # Every process of the proxy's tree (nginx-style masters fork their workers).
    local pids; pids=$(pgrep -f "$RUN/$name/" | tr '\n' ' ')
    local args=(); for p in $pids; do args+=(-p "$p"); done
    strace -c -f -qq -o "$RUN/$name/strace.txt" "${args[@]}" &
    local sp=$!
    sleep 0.5
    "$G" load -target 127.0.0.1:$port -authority 127.0.0.1:$BACKEND -c "$C" -d "$SECS" -warmup 0 > "$RUN/$name/load.json" 2>/dev/null
    kill -INT $sp 2>/dev/null || true; wait $sp 2>/dev/null || true
    pkill -f "$RUN/$name/" 2>/dev/null || true; kill $pp 2>/dev/null || true; wait $pp 2>/dev/null || true
    local calls errors
    calls=$(python3 -c "import json;print(json.load(open('$RUN/$name/load.json'))['calls'])")
    errors=$(python3 -c "import json;print(json.load(open('$RUN/$name/load.json'))['errors'])")
    python3 - "$RUN/$name/strace.txt" "$name" "$C" "$calls" "$errors" <<'PY'
import sys
path, name, c, calls, errors = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
rows = []
for line in open(path):
    p = line.split()
    if len(p) >= 5 and p[0][0].isdigit() and p[-1] != 'total':
        rows.append((p[-1], int(p[3])))
total = sum(n for _, n in rows)
by = ', '.join(f'{s} {n / calls:.2f}' for s, n in sorted(rows, key=lambda r: -r[1]) if n / calls >= 0.01)
print(f'{name:8s} c={c:<3s} calls {calls:7d} errors {errors} syscalls/call {total / calls:.2f}: {by}')
PY
}

IFS=, read -ra names <<< "$ONLY"
for n in "${names[@]}"; do
    case $n in
        sidecar) c=$(conf sidecar-grpc.conf sidecar 18490); measure sidecar 18490 "$SIDECAR_BIN" run --config "$c" ;;
        nghttpx) c=$(conf nghttpx-grpc.conf nghttpx 18491); measure nghttpx 18491 nghttpx --conf="$c" ;;
        haproxy) c=$(conf haproxy-grpc.cfg haproxy 18492); measure haproxy 18492 haproxy -db -f "$c" ;;
        *) echo "unknown target $n"; exit 2 ;;
    esac
done
