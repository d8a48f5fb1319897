#!/usr/bin/env bash
# bench.sh — throughput/latency comparison: direct vs nginx reverse proxy vs token-sidecar.
#
# All on 127.0.0.1. Backend: nginx (1 worker) returning a fixed 100-byte body with
# keep-alive. Compared, each with wrk -t1 at c=50 (throughput) and c=1 (added latency):
#   (a) direct       wrk -> backend
#   (b) nginx-proxy  wrk -> nginx reverse proxy (1 worker, injects Authorization,
#                    upstream keepalive 32) -> backend
#   (c) sidecar      wrk (absolute-form "GET http://api.test/", Host: api.test)
#                    -> token-sidecar (forward proxy, route api.test) -> backend
# Prints req/s, p50, p99 per run and the ratios sidecar/nginx-proxy, sidecar/direct.
#
# Run:   Benchmarks/bench.sh [--counts]
#   --counts  also measure, for the sidecar only: syscalls/request (strace -c -f -p PID
#             during COUNT_N sequential keep-alive requests) and instructions/request
#             (valgrind --tool=callgrind; two runs with WARM and WARM+COUNT_N requests,
#             difference / COUNT_N, so start-up cost cancels out).
# Env:   DURATION=seconds per wrk run (10)   WARMUP=seconds (1)   CONNS=50
#        SIDECAR_BIN (default: the repository's .build/release/token-sidecar, else
#        token-sidecar on PATH)
#        COUNT_N=2000  WARM=200   KEEP_TMP=1 keeps the temp dir
# If SIDECAR_BIN does not exist, only (a) and (b) run (to test the script itself;
# SIDECAR_BIN=Benchmarks/standin-sidecar.py exercises (c) and --counts with nginx).
# Note: wrk, backend and proxy share the machine's cores; compare ratios, not absolutes.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT="$HERE/proxyclient.py"
DURATION="${DURATION:-10}"
WARMUP="${WARMUP:-1}"
CONNS="${CONNS:-50}"
COUNT_N="${COUNT_N:-2000}"
WARM="${WARM:-200}"
COUNTS=0
for arg in "$@"; do
  case "$arg" in
    --counts) COUNTS=1 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "wrk not found" >&2; exit 1; }

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh" bench
SIDECAR_BIN="$(find_sidecar_bin)"
[[ -x "$NGINX" ]] || { echo "nginx not found at $NGINX" >&2; exit 1; }
# ---- backend: fixed 100-byte body ------------------------------------------
BODY="$(python3 -c 'print(("token-sidecar-bench-" * 6)[:99])')"   # + "\n" = 100 bytes
BPORT="$(free_port)"
nginx_conf backend "    server {
        listen 127.0.0.1:$BPORT;
        location / { default_type text/plain; return 200 \"$BODY\n\"; }
    }"
start_nginx backend "$BPORT"
got="$(curl -sS --max-time 5 "http://127.0.0.1:$BPORT/" | wc -c)"
[[ "$got" = 100 ]] || { echo "backend body is $got bytes, expected 100"; exit 1; }

# ---- (b) nginx reverse proxy -------------------------------------------------
PPORT="$(free_port)"
nginx_conf nproxy "    upstream backend { server 127.0.0.1:$BPORT; keepalive 32; }
    server {
        listen 127.0.0.1:$PPORT;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_set_header Authorization \"Bearer abc\";
        }
    }"
start_nginx nproxy "$PPORT"
[[ "$(curl -sS --max-time 5 "http://127.0.0.1:$PPORT/" | wc -c)" = 100 ]] || { echo "nginx proxy check failed"; exit 1; }

# ---- (c) sidecar ------------------------------------------------------------------
HAVE_SIDECAR=0
SPORT="" SPID=""
if [[ -x "$SIDECAR_BIN" ]]; then
  HAVE_SIDECAR=1
  SPORT="$(free_port)"
  mkdir -p "$TMP/sidecar"
  sidecar_config "$SPORT" "$TMP/sidecar/token-sidecar.yaml"
  "$SIDECAR_BIN" run --config "$TMP/sidecar/token-sidecar.yaml" >"$TMP/sidecar/out.log" 2>&1 &
  SPID=$!
  PIDS+=("$SPID")
  wait_port "$SPORT" "$SPID" 15 || { echo "sidecar failed to start:"; tail -20 "$TMP/sidecar/out.log"; exit 1; }
  [[ "$(curl -sS --max-time 5 -x "http://127.0.0.1:$SPORT" http://api.test/ | wc -c)" = 100 ]] \
    || { echo "sidecar check failed: GET http://api.test/ via proxy did not return the 100-byte body"; exit 1; }
  cat >"$TMP/sidecar.lua" <<'EOF'
wrk.path = "http://api.test/"
wrk.headers["Host"] = "api.test"
EOF
else
  echo "NOTE: sidecar binary not found at $SIDECAR_BIN — running only (a) direct and (b) nginx-proxy."
  echo "      Build it (swift build -c release) or set SIDECAR_BIN to compare token-sidecar."
fi
echo "backend 127.0.0.1:$BPORT  nginx-proxy 127.0.0.1:$PPORT${SPORT:+  sidecar 127.0.0.1:$SPORT (pid $SPID)}"
echo "wrk -t1 --latency, ${DURATION}s per run (+${WARMUP}s warm-up), c=$CONNS and c=1"
echo

# ---- wrk runs ------------------------------------------------------------------
# run_wrk NAME CONNS URL [LUA] -> appends "NAME CONNS rps p50us p99us errors" to $TMP/results
run_wrk() {
  local name="$1" c="$2" url="$3" lua="${4:-}" out="$TMP/wrk-$1-c$2.txt"
  local args=(-t1 -c"$c" --latency --timeout 5s)
  [[ -n "$lua" ]] && args+=(-s "$lua")
  if [[ "$WARMUP" != 0 ]]; then bgrun timeout 60 wrk "${args[@]}" -d"${WARMUP}s" "$url" >/dev/null 2>&1 || true; fi
  bgrun timeout $((DURATION + 60)) wrk "${args[@]}" -d"${DURATION}s" "$url" >"$out" 2>&1 || { echo "wrk failed for $name:"; cat "$out"; exit 1; }
  local rps p50 p99 errs
  rps="$(awk '/^Requests\/sec:/ {print $2}' "$out")"
  p50="$(to_us "$(awk '$1 == "50%" {print $2}' "$out")")"
  p99="$(to_us "$(awk '$1 == "99%" {print $2}' "$out")")"
  errs="$(grep -E 'Non-2xx|Socket errors' "$out" | tr -s ' ' | paste -sd';' - || true)"
  echo "$name $c $rps $p50 $p99 ${errs:-ok}" >>"$TMP/results"
  printf '  %-12s c=%-3s %10s req/s  p50 %9s us  p99 %9s us  %s\n' "$name" "$c" "$rps" "$p50" "$p99" "${errs:-}"
}
: >"$TMP/results"
for c in "$CONNS" 1; do
  run_wrk direct "$c" "http://127.0.0.1:$BPORT/"
  run_wrk nginx-proxy "$c" "http://127.0.0.1:$PPORT/"
  if [[ $HAVE_SIDECAR = 1 ]]; then run_wrk sidecar "$c" "http://127.0.0.1:$SPORT/" "$TMP/sidecar.lua"; fi
done

echo
python3 - "$TMP/results" <<'EOF'
import sys
rows = [l.split(None, 5) for l in open(sys.argv[1]) if l.strip()]
res = {(r[0], int(r[1])): (float(r[2]), float(r[3]), float(r[4]), r[5].strip()) for r in rows}
conns = sorted({c for _, c in res}, reverse=True)
print("%-12s %5s %12s %12s %12s" % ("name", "conns", "req/s", "p50 (us)", "p99 (us)"))
print("-" * 57)
for c in conns:
    for n in ("direct", "nginx-proxy", "sidecar"):
        if (n, c) in res:
            rps, p50, p99, err = res[(n, c)]
            print("%-12s %5d %12.0f %12.1f %12.1f%s" % (n, c, rps, p50, p99, "" if err == "ok" else "  !! " + err))
print()
for c in conns:
    if ("sidecar", c) not in res:
        continue
    s = res[("sidecar", c)]
    for base in ("nginx-proxy", "direct"):
        b = res[(base, c)]
        print("c=%-3d sidecar/%-11s  req/s x%.2f   p50 x%.2f   p99 x%.2f" % (
            c, base, s[0] / b[0], s[1] / b[1] if b[1] else float("nan"), s[2] / b[2] if b[2] else float("nan")))
    d, s1 = res[("direct", c)], s
    print("c=%-3d sidecar added latency: p50 +%.1f us, p99 +%.1f us (vs direct)" % (c, s1[1] - d[1], s1[2] - d[2]))
if not any(n == "sidecar" for n, _ in res):
    print("(sidecar not run; ratio nginx-proxy/direct: " + ", ".join(
        "c=%d req/s x%.2f" % (c, res[("nginx-proxy", c)][0] / res[("direct", c)][0]) for c in conns) + ")")
EOF

# ---- --counts --------------------------------------------------------------------
[[ $COUNTS = 1 ]] || exit 0
if [[ $HAVE_SIDECAR = 0 ]]; then echo; echo "--counts skipped: no sidecar binary"; exit 0; fi
echo
echo "== counts (sidecar, $COUNT_N sequential keep-alive requests on one connection) =="

need_tools strace:strace valgrind:valgrind || true
if command -v strace >/dev/null; then
  timeout 30 python3 "$CLIENT" seq --proxy "127.0.0.1:$SPORT" --url http://api.test/ -n "$WARM" >/dev/null
  if strace_count "$SPID" "$TMP/strace.txt" timeout 120 python3 "$CLIENT" seq --proxy "127.0.0.1:$SPORT" \
    --url http://api.test/ -n "$COUNT_N"; then
    strace_summary "$TMP/strace.txt" "$COUNT_N" || true
  fi
else
  echo "strace not available; skipping syscall counts"
fi

# callgrind: stop the benchmark sidecar, run it twice under valgrind.
stop_pid "$SPID"
if ! command -v valgrind >/dev/null; then echo "valgrind not available; skipping"; exit 0; fi
cg_client() { timeout 300 python3 "$CLIENT" seq --proxy "127.0.0.1:$1" --url http://api.test/ -n "$2" --timeout 280; }
sidecar_cg() { # sidecar_cg TAG NREQ -> sets CG_IR (instructions of the whole run)
  local port dir="$TMP/cg-$1"
  mkdir -p "$dir"
  port="$(free_port)"
  sidecar_config "$port" "$dir/token-sidecar.yaml"
  cg_run "$dir" "$port" "$2" cg_client "$VG_BIN" run --config "$dir/token-sidecar.yaml"
}
VG_BIN="$(nodebug_copy "$SIDECAR_BIN" "$TMP/sidecar-nodebug")"
echo "running callgrind ($WARM and $((WARM + COUNT_N)) requests; slow)..."
ir1="" ir2=""
if sidecar_cg a "$WARM"; then ir1="$CG_IR"; fi
if [[ -n "$ir1" ]] && sidecar_cg b "$((WARM + COUNT_N))"; then ir2="$CG_IR"; fi
if [[ -n "$ir1" && -n "$ir2" ]]; then
  python3 -c "
a, b, n = $ir1, $ir2, $COUNT_N
print('instructions/request: %.0f  (callgrind Ir: %d for $WARM req, %d for %d req)' % ((b - a) / n, a, b, $WARM + n))"
else
  echo "callgrind measurement failed"
fi
