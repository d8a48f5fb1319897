#!/usr/bin/env bash
# intercept.sh - the cost of HTTPS interception, against the same route reached with plain HTTP,
# in one run (issue 25's acceptance). Prints:
#   1) user-space instructions per request (callgrind; 2000 requests over one keep-alive
#      connection with curl): plain absolute-form request vs the same request inside an
#      intercepted tunnel (curl with an https:// URL through the proxy). Both go on to nginx
#      over TLS, so the difference is the TLS server side toward the app.
#   2) c50 requests/s and the sidecar's CPU seconds per request, plain vs intercepted
#      (Benchmarks/intercept.py, 2 client processes, SECONDS each; both forms in the same run).
#   3) TLS sessions toward the app resumed (openssl s_client -reconnect through the proxy),
#      leaves minted (from /metrics).
#   4) a SIZE download (1 GiB) through an intercepted tunnel: SHA-256 intact, the sidecar's
#      peak RSS (VmHWM) against RSS_LIMIT_MIB.
# Env: SIDECAR_BIN (default .build/release/token-sidecar: build it with `make release`), N (2000),
#      SECONDS_EACH (5), SIZE (1073741824), RSS_LIMIT_MIB (64), SKIP_INSTR=1, SKIP_BIG=1.
# Loopback only; every wait is bounded; everything it starts is stopped on exit.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BIN="${SIDECAR_BIN:-$ROOT/.build/release/token-sidecar}"
N="${N:-2000}"; SECONDS_EACH="${SECONDS_EACH:-5}"; SIZE="${SIZE:-1073741824}"; RSS_LIMIT_MIB="${RSS_LIMIT_MIB:-64}"
TMP="$(mktemp -d /tmp/intercept.XXXXXX)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
[ -x "$BIN" ] || { echo "intercept.sh: no binary at $BIN (run make release)" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 "${2:-200}"); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 never opened" >&2; exit 1; }

# nginx over TLS with its own test CA (localhost), a small answer and a SIZE file.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$TMP/backend-ca.key" \
  -out "$TMP/backend-ca.pem" -subj "/CN=bench backend CA" -days 1 -addext basicConstraints=critical,CA:TRUE 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$TMP/localhost.key" -out "$TMP/localhost.csr" \
  -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost\n' > "$TMP/san.ext"
openssl x509 -req -in "$TMP/localhost.csr" -CA "$TMP/backend-ca.pem" -CAkey "$TMP/backend-ca.key" -CAcreateserial \
  -out "$TMP/localhost.pem" -days 1 -extfile "$TMP/san.ext" 2>/dev/null
mkdir -p "$TMP/www" "$TMP/nginx"; chmod 0755 "$TMP" "$TMP/www"   # nginx workers (nobody) read the file
[ -n "${SKIP_BIG:-}" ] || truncate -s "$SIZE" "$TMP/www/big"
B=$(free_port); P=$(free_port)
cat > "$TMP/nginx/nginx.conf" <<CONF
worker_processes 1; pid $TMP/nginx/nginx.pid; error_log $TMP/nginx/error.log;
events { worker_connections 1024; }
http { access_log off; keepalive_requests 1000000; client_body_temp_path $TMP/nginx;
  server { listen 127.0.0.1:$B ssl; ssl_certificate $TMP/localhost.pem; ssl_certificate_key $TMP/localhost.key;
    root $TMP/www; location = / { return 200 "ok\n"; } location /big { } } }
CONF
nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" -g "daemon off;" & PIDS+=($!)
wait_port "$B"

cat > "$TMP/sidecar.yaml" <<CONF
listen: "127.0.0.1:$P"
admin: "127.0.0.1:0"
accessLog: false
logLevel: warning
workers: 1
intercept: {caCertFile: $TMP/ca.crt}
credentials:
  bench: {type: static, token: "bench-token"}
routes:
  - host: "plain.test"
    upstream: "https://localhost:$B"
    caFile: $TMP/backend-ca.pem
    credential: bench
  - host: "localhost:$B"
    intercept: true
    caFile: $TMP/backend-ca.pem
    credential: bench
CONF

plain_curl() { curl -s -x "http://127.0.0.1:$P" "http://plain.test/?i=[1-$1]" -o /dev/null; }
intercept_curl() { curl -s -x "http://127.0.0.1:$P" --cacert "$TMP/ca.crt" "https://localhost:$B/?i=[1-$1]" -o /dev/null; }

if [ -z "${SKIP_INSTR:-}" ]; then
  # valgrind 3.19 cannot read the debug info of the static build: count a stripped copy.
  objcopy --strip-debug "$BIN" "$TMP/token-sidecar-stripped"
  valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out.%p" "$TMP/token-sidecar-stripped" run --config "$TMP/sidecar.yaml" > "$TMP/valgrind.log" 2>&1 &
  VG=$!; PIDS+=($VG)
  wait_port "$P" 1200
  for _ in $(seq 1 100); do [ -s "$TMP/ca.crt" ] && break; sleep 0.1; done
  measure() {  # measure NAME FUNCTION
    "$2" 200
    callgrind_control -z "$VG" > /dev/null 2>&1
    "$2" "$N"
    callgrind_control -d "$VG" > /dev/null 2>&1; sleep 1
    local total; total=$(for f in "$TMP"/cg.out.*.[0-9]*; do awk '/^(summary|totals):/{print $2; exit}' "$f"; done | tail -1)
    rm -f "$TMP"/cg.out.*.[0-9]*
    echo $(( total / N ))
  }
  plain_instr=$(measure plain plain_curl); intercept_instr=$(measure intercept intercept_curl)
  echo "instructions/request: plain $plain_instr, intercepted $intercept_instr ($(awk -v a="$intercept_instr" -v b="$plain_instr" 'BEGIN{printf "%.2f", a/b}')x)"
  kill "$VG"; wait "$VG" 2>/dev/null || true
fi

sed -i 's/^logLevel: warning/logLevel: info/' "$TMP/sidecar.yaml"   # for the "admin listening" line
"$BIN" run --config "$TMP/sidecar.yaml" > "$TMP/sidecar.log" 2>&1 & S=$!; PIDS+=($S)
wait_port "$P"
for _ in $(seq 1 100); do [ -s "$TMP/ca.crt" ] && break; sleep 0.1; done
cpu() { awk '{print $14 + $15}' "/proc/$S/stat"; }
load() {  # load MODE TARGET -> "rps cpu_us_per_request errors"
  local before after out
  before=$(cpu)
  out=$(python3 "$HERE/intercept.py" --proxy "$P" --mode "$1" --target "$2" --cafile "$TMP/ca.crt" -c 50 --seconds "$SECONDS_EACH" 2>"$TMP/load-$1.err")
  after=$(cpu)
  python3 -c 'import json,sys,os; r=json.loads(sys.argv[1]); t=(int(sys.argv[3])-int(sys.argv[2]))/os.sysconf("SC_CLK_TCK"); print(r["rps"], round(t*1e6/max(r["requests"],1),1), r["errors"])' "$out" "$before" "$after"
}
read -r plain_rps plain_cpu plain_err <<< "$(load plain http://plain.test/)"
read -r int_rps int_cpu int_err <<< "$(load intercept "https://localhost:$B/")"
echo "c50 requests/s: plain $plain_rps, intercepted $int_rps ($(awk -v a="$int_rps" -v b="$plain_rps" 'BEGIN{printf "%.2f", a/b}')x); errors $plain_err / $int_err"
echo "sidecar CPU per request: plain ${plain_cpu} us, intercepted ${int_cpu} us"

resumed13=$(timeout 30 python3 "$HERE/intercept_resume.py" "$P" "localhost:$B" "$TMP/ca.crt")
resumed12=$(timeout 30 python3 "$HERE/intercept_resume.py" "$P" "localhost:$B" "$TMP/ca.crt" tls1.2)
echo "TLS to the app: of 5 reconnections each, resumed $resumed13 (TLS 1.3) and $resumed12 (TLS 1.2), with session tickets"
admin=$(python3 -c 'import json,sys
for line in open(sys.argv[1]):
    try: o=json.loads(line)
    except Exception: continue
    if o.get("msg")=="admin listening": print(o["address"].rsplit(":",1)[1])' "$TMP/sidecar.log" | head -1)
[ -n "$admin" ] && curl -s "http://127.0.0.1:$admin/metrics" | grep '^token_sidecar_intercept_certificates_minted_total' || true

if [ -z "${SKIP_BIG:-}" ]; then
  expected=$(head -c "$SIZE" /dev/zero | sha256sum | cut -d' ' -f1)
  got=$(set -o pipefail; timeout 300 curl -sS -x "http://127.0.0.1:$P" --cacert "$TMP/ca.crt" "https://localhost:$B/big" 2>"$TMP/big.err" \
    | tee >(wc -c > "$TMP/big.count") | sha256sum | cut -d' ' -f1) || echo "curl: $(cat "$TMP/big.err")" >&2
  sleep 0.2
  echo "received $(cat "$TMP/big.count" 2>/dev/null) bytes"
  peak=$(awk '/VmHWM/{print int($2/1024)}' "/proc/$S/status")
  echo "$(( SIZE / 1048576 )) MiB through an intercepted tunnel: sha256 $([ "$got" = "$expected" ] && echo intact || echo MISMATCH), sidecar peak RSS $peak MiB (limit $RSS_LIMIT_MIB)"
  [ "$got" = "$expected" ] && [ "$peak" -le "$RSS_LIMIT_MIB" ] || exit 1
fi
