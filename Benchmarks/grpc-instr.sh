#!/usr/bin/env bash
# What a unary gRPC call costs a proxy, counted in what does not drift from run to run (calls/s
# on this 2-core VM moves ±15% between runs): grpc-go's load client (grpcbench,
# ../shared/bench/grpc) at concurrency C for SECONDS through each proxy (h2c both sides, each
# injecting the token with ../shared/bench/grpc/conf's config) to grpc-go's server.
#
# MODE=instr (default): user-space instructions per call, under callgrind — the instructions of
# the proxy's process tree from a zeroed counter to a dump around the measured load, divided by
# the calls the client completed in it. A proxy under callgrind runs ~50× slower, so its calls
# batch less than at full speed: compare proxies in one run, not with grpc_peers.sh.
# MODE=syscalls: system calls per call, by name — `strace -c -f` attached to the proxy's every
# process and thread after the warm-up and detached after the measured load (at C=1, where
# nothing batches, what a call costs in the kernel).
#
#   bash Benchmarks/grpc-instr.sh                         # sidecar (make release, stripped), nghttpx, haproxy
#   C=1 ONLY=sidecar SIDECAR_BIN=/tmp/sc bash Benchmarks/grpc-instr.sh
#   MODE=syscalls C=1 bash Benchmarks/grpc-instr.sh
#   HOT_CODE=1 ONLY=sidecar,nghttpx bash Benchmarks/grpc-instr.sh   # and the code a call runs through
#
# HOT_CODE=1 (MODE=instr): callgrind also records instruction addresses, and after each target's
# line comes Benchmarks/instr-breakdown.py --hot-code: the KiB and pages of code that ran at least
# once every two calls, by object (what the instruction caches and TLBs must hold for a call).
#
# Loopback only (127.0.0.1:18480 server, 18490+ proxies); every load is bounded by SECONDS.
set -euo pipefail
cd "$(dirname "$0")/.."
C=${C:-50}; SECS=${SECONDS_LOAD:-5}; ONLY=${ONLY:-sidecar,nghttpx,haproxy}; MODE=${MODE:-instr}
case $MODE in
    instr) ;;
    syscalls) command -v strace > /dev/null || { echo "MODE=syscalls needs strace" >&2; exit 2; } ;;
    *) echo "MODE is instr or syscalls" >&2; exit 2 ;;
esac
SHARED=${SHARED:-$(cd .. && pwd)/shared/bench/grpc}
RUN=${RUN_DIR:-/tmp/grpc-instr}; rm -rf "$RUN"; mkdir -p "$RUN"
TOKEN=test-token-123; BACKEND=18480
if [ -z "${SIDECAR_BIN:-}" ]; then
    [ -x .build/release/token-sidecar ] || { echo "make release first"; exit 1; }
    # valgrind 3.19 cannot read the DWARF 5 of a Swift 6 build: a stripped copy.
    strip -o "$RUN/token-sidecar" .build/release/token-sidecar; SIDECAR_BIN=$RUN/token-sidecar
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

measure() {   # NAME PORT COMMAND...: per MODE
    if [ "$MODE" = syscalls ]; then measure_syscalls "$@"; else measure_instr "$@"; fi
}

measure_instr() {   # NAME PORT COMMAND...: prints "NAME calls instr/call"
    local name=$1 port=$2; shift 2
    local record=()
    [ "${HOT_CODE:-0}" = 1 ] && record=(--dump-instr=yes)
    valgrind --tool=callgrind --trace-children=yes "${record[@]}" --callgrind-out-file="$RUN/$name/cg.%p" "$@" > "$RUN/$name/stdout.log" 2>&1 &
    local vp=$!
    for _ in $(seq 1 150); do ss -ltn | grep -q ":$port " && break; sleep 0.2; done
    "$G" load -target 127.0.0.1:$port -authority 127.0.0.1:$BACKEND -c "$C" -d 2 -warmup 0.5 > "$RUN/$name/warm.json" 2>/dev/null
    callgrind_control -z > /dev/null 2>&1
    "$G" load -target 127.0.0.1:$port -authority 127.0.0.1:$BACKEND -c "$C" -d "$SECS" -warmup 0 > "$RUN/$name/load.json" 2>/dev/null
    callgrind_control -d > /dev/null 2>&1
    sleep 1
    pkill -f "$RUN/$name/" 2>/dev/null || true; kill $vp 2>/dev/null || true; wait $vp 2>/dev/null || true
    local calls errors ir=0
    calls=$(python3 -c "import json;print(json.load(open('$RUN/$name/load.json'))['calls'])")
    errors=$(python3 -c "import json;print(json.load(open('$RUN/$name/load.json'))['errors'])")
    # The dumps (`.1` files) of every process of the tree, summed.
    for f in "$RUN/$name"/cg.*.1; do
        [ -e "$f" ] || continue
        ir=$(( ir + $(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}') ))
    done
    printf '%-8s c=%-3s calls %7s errors %s instructions/call %s\n' "$name" "$C" "$calls" "$errors" $(( ir / calls ))
    if [ "${HOT_CODE:-0}" = 1 ]; then
        # The process that served the calls: the largest dump (a master's is nearly empty).
        local biggest
        biggest=$(ls -S "$RUN/$name"/cg.*.1 | head -1)
        python3 Benchmarks/instr-breakdown.py --hot-code "$biggest" "$calls"
    fi
}

measure_syscalls() {   # NAME PORT COMMAND...: prints the syscalls per call, total and by name
    local name=$1 port=$2; shift 2
    "$@" > "$RUN/$name/stdout.log" 2>&1 &
    local pp=$!
    for _ in $(seq 1 100); do ss -ltn | grep -q ":$port " && break; sleep 0.1; done
    "$G" load -target 127.0.0.1:$port -authority 127.0.0.1:$BACKEND -c "$C" -d 1 -warmup 0.5 > "$RUN/$name/warm.json" 2>/dev/null
    # Every process of the proxy's tree (nginx-style masters fork their workers).
    local args=() p
    for p in $(pgrep -f "$RUN/$name/"); do args+=(-p "$p"); done
    strace -c -f -qq -o "$RUN/$name/strace.txt" "${args[@]}" &
    local sp=$!
    sleep 0.5
    "$G" load -target 127.0.0.1:$port -authority 127.0.0.1:$BACKEND -c "$C" -d "$SECS" -warmup 0 > "$RUN/$name/load.json" 2>/dev/null
    kill -INT $sp 2>/dev/null || true; wait $sp 2>/dev/null || true
    pkill -f "$RUN/$name/" 2>/dev/null || true; kill $pp 2>/dev/null || true; wait $pp 2>/dev/null || true
    python3 - "$RUN/$name/strace.txt" "$RUN/$name/load.json" "$name" "$C" <<'PY'
import json, sys
path, load, name, c = sys.argv[1:5]
result = json.load(open(load))
calls, errors = result['calls'], result['errors']
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
