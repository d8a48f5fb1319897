#!/usr/bin/env bash
# dpop.sh - the cost of DPoP (issue 26's acceptance), against the same route with a bearer token,
# in one run. Prints:
#   1) user-space instructions per request (callgrind; N requests over one keep-alive connection
#      with curl), bearer vs DPoP, and the share of the DPoP requests' instructions spent signing
#      the proof (inclusive cost of EVP_DigestSign, which wraps the ES256 signature).
#   2) c50 requests/s and the sidecar's CPU per request, bearer vs DPoP (Benchmarks/intercept.py in
#      plain mode, 2 client processes, SECONDS_EACH each; both in the same run, one worker).
# The tokens come from Tests/ProxyTests/Fixtures/dpop_server.py (a verifying authorization
# server: bearer without a proof, DPoP-bound with one); the upstream is nginx on loopback, so the
# difference is what the sidecar does per request (a fresh ES256 proof, ath, nonce lookup).
# Env: SIDECAR_BIN (default .build/release/token-sidecar: `make release`), N (2000),
#      SECONDS_EACH (5), SKIP_INSTR=1.
# Loopback only; every wait is bounded; everything it starts is stopped on exit.
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh" dpop-bench
HERE="$BENCH_DIR"
BIN="$(find_sidecar_bin)"
N="${N:-2000}"; SECONDS_EACH="${SECONDS_EACH:-5}"
[ -x "$BIN" ] || { echo "dpop.sh: no binary at $BIN (run make release)" >&2; exit 1; }

B=$(free_port); P=$(free_port)
nginx_conf backend "    server { listen 127.0.0.1:$B; location / { return 200 \"ok\\n\"; } }"
start_nginx backend "$B"

mkdir -p "$TMP/as"
printf '{"client_id": "bench", "client_secret": "bench-secret", "expires_in": 86400, "iat_window": 3600}\n' > "$TMP/as/policy.json"
start_bg "$TMP/as.out" python3 "$REPO/Tests/ProxyTests/Fixtures/dpop_server.py" --dir "$TMP/as"
for _ in $(seq 1 200); do grep -q '^PORT ' "$TMP/as.out" 2>/dev/null && break; sleep 0.05; done
A=$(awk '/^PORT /{print $2; exit}' "$TMP/as.out")
[ -n "$A" ] || { echo "dpop.sh: the token server did not start: $(cat "$TMP/as.out")" >&2; exit 1; }

cat > "$TMP/sidecar.yaml" <<CONF
listen: "127.0.0.1:$P"
admin: "127.0.0.1:0"
accessLog: false
logLevel: warning
workers: 1
credentials:
  bearer: {type: oauth2, tokenUrl: "http://127.0.0.1:$A/token", clientId: bench, secret: bench-secret}
  bound: {type: oauth2, tokenUrl: "http://127.0.0.1:$A/token", clientId: bench, secret: bench-secret, dpop: true}
routes:
  - host: "bearer.test"
    upstream: "http://127.0.0.1:$B"
    credential: bearer
  - host: "dpop.test"
    upstream: "http://127.0.0.1:$B"
    credential: bound
CONF

run_curl() { curl -s -x "http://127.0.0.1:$P" "http://$1/?i=[1-$2]" -o /dev/null; }

if [ -z "${SKIP_INSTR:-}" ]; then
  # valgrind 3.19 cannot read the debug info of the static build: count a stripped copy.
  start_bg "$TMP/valgrind.log" valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out.%p" \
    "$(nodebug_copy "$BIN" "$TMP/token-sidecar-stripped")" run --config "$TMP/sidecar.yaml"
  VG=$LAST_PID
  wait_port "$P" "$VG" 60 || { echo "dpop.sh: the sidecar under valgrind did not start" >&2; exit 1; }
  measure() {  # measure HOST -> "instructions_per_request sign_share_percent"
    run_curl "$1" 200
    callgrind_control -z "$VG" > /dev/null 2>&1
    run_curl "$1" "$N"
    callgrind_control -d "$VG" > /dev/null 2>&1; sleep 1
    local file total sign
    file=$(ls -t "$TMP"/cg.out.*.[0-9]* | head -1)
    total=$(awk '/^(summary|totals):/{print $2; exit}' "$file")
    sign=$(callgrind_annotate --inclusive=yes "$file" 2>/dev/null | awk '/EVP_DigestSign[^A-Za-z_]/{gsub(",","",$1); print $1; exit}')
    rm -f "$TMP"/cg.out.*.[0-9]*
    echo "$(( total / N )) $(awk -v s="${sign:-0}" -v t="$total" 'BEGIN{printf "%.1f", 100*s/t}')"
  }
  read -r bearer_instr _ <<< "$(measure bearer.test)"
  read -r dpop_instr sign_share <<< "$(measure dpop.test)"
  echo "instructions/request: bearer $bearer_instr, DPoP $dpop_instr ($(awk -v a="$dpop_instr" -v b="$bearer_instr" 'BEGIN{printf "%.2f", a/b}')x); signing the proof: ${sign_share}% of the DPoP requests' instructions"
  stop_pid "$VG"
fi

start_bg "$TMP/sidecar.log" "$BIN" run --config "$TMP/sidecar.yaml"
S=$LAST_PID
wait_port "$P" "$S" 10 || { echo "dpop.sh: the sidecar did not start: $(cat "$TMP/sidecar.log")" >&2; exit 1; }
cpu() { awk '{print $14 + $15}' "/proc/$S/stat"; }
load() {  # load HOST -> "rps cpu_us_per_request errors"
  local before after out
  before=$(cpu)
  out=$(python3 "$HERE/intercept.py" --proxy "$P" --mode plain --target "http://$1/" -c 50 --seconds "$SECONDS_EACH" 2>"$TMP/load-$1.err")
  after=$(cpu)
  python3 -c 'import json,sys,os; r=json.loads(sys.argv[1]); t=(int(sys.argv[3])-int(sys.argv[2]))/os.sysconf("SC_CLK_TCK"); print(r["rps"], round(t*1e6/max(r["requests"],1),1), r["errors"])' "$out" "$before" "$after"
}
run_curl bearer.test 10; run_curl dpop.test 10   # both tokens fetched before timing
read -r bearer_rps bearer_cpu bearer_err <<< "$(load bearer.test)"
read -r dpop_rps dpop_cpu dpop_err <<< "$(load dpop.test)"
ratio=$(awk -v a="$dpop_rps" -v b="$bearer_rps" 'BEGIN{printf "%.2f", a/b}')
echo "c50 requests/s: bearer $bearer_rps, DPoP $dpop_rps (${ratio}x, target >= 0.5x); errors $bearer_err / $dpop_err"
echo "sidecar CPU per request: bearer ${bearer_cpu} us, DPoP ${dpop_cpu} us"
awk -v r="$ratio" 'BEGIN{exit !(r >= 0.5)}'
