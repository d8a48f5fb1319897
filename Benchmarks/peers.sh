#!/usr/bin/env bash
# peers.sh — token-sidecar side by side with nginx and HAProxy, all in ONE run on this machine.
#
# Starts on 127.0.0.1 (ports from free_port; every process pinned with taskset to CPU $SUT_CPU):
#   backend        nginx, 1 worker: / = fixed 100-byte body, /1m = 1 MiB static file,
#                  POST /up = reads a 1 MiB body completely (in memory, then an internal hop)
#                  and answers 200, /echo-auth = the Authorization header it received;
#                  two TLS servers (CA and certificate made with openssl at run time), the second
#                  closing every connection (keepalive_requests 1)
#   direct         wrk straight to the backend
#   nginx          reverse proxy injecting "Authorization: Bearer abc" (1 worker, upstream
#                  keepalive NGINX_KEEPALIVE=64, proxy_http_version 1.1, access_log off)
#   HAProxy        forward proxy for absolute-form requests injecting the same header (nbthread 1)
#   token-sidecar  forward proxy ("GET http://api.test/ HTTP/1.1"), static token "abc",
#                  route api.test -> backend, accessLog false, workers 1
# checks that every proxy delivers the header, the bodies and a 1 MiB upload, then measures:
#   c50 req/s (wrk -t1 -c50 on /; ROUNDS rounds round-robin, best of the rounds),
#   c1 added p50 latency (p50 at -c1 minus direct's), CPU µs per request at c50 (utime+stime of
#   the proxy's processes from /proc/PID/stat over the run ÷ requests), 1 MiB responses and
#   1 MiB uploads (wrk -c8) ÷ direct, syscalls per request (strace -c -f on the running proxy,
#   sequential keep-alive requests; nginx: its worker), user-space instructions per request
#   (callgrind, runs with WARM and WARM+COUNT_N requests, difference ÷ COUNT_N; nginx,
#   HAProxy and token-sidecar), idle RSS and RSS per idle keep-alive client connection (HOLD_N connections),
#   c50 with access logs on, token-sidecar workers: 2 ÷ workers: 1 (pinned to WORKERS_CPUS),
#   token-sidecar to an HTTPS backend ÷ plain HTTP, and its TLS session resumption rate when the
#   backend closes every connection (admin /metrics, and the backend's $ssl_session_reused).
# Prints a markdown table and writes it (with machine, date and command) to
# Benchmarks/results/peers-latest.md, the raw numbers to peers-latest.json, and the chart
# docs/bench/peers.png (Benchmarks/peers-report.py + Benchmarks/peers-chart.gp).
#
# Run:   make bench-peers            (builds the release binary first; ~10 minutes)
#        Benchmarks/peers.sh         (binary: $SIDECAR_BIN, else .build/release/token-sidecar,
#                                     else token-sidecar on PATH)
# Quick: DURATION=2 ROUNDS=1 COUNT_N=300 SKIP=callgrind,tls,workers Benchmarks/peers.sh
# Env:   DURATION=8 s per wrk run (after WARMUP=1 s)   ROUNDS=2   COUNT_N=2000  WARM=200
#        SKIP=comma list of: c1,big,upload,rss,accesslog,workers,tls,syscalls,callgrind
#        CPU_MODE=shared (everything on SUT_CPU=0) | split (wrk on LOAD_CPU=1) | none
#        NGINX_KEEPALIVE=64 (idle upstream connections nginx keeps; below the 50 wrk connections
#        nginx reconnects to the backend for the rest: 32 costs it ~35% of its c50 req/s here)
#        WORKERS_CPUS=0,1   HOLD_N=500   RESUME_N=200   MAX_TOTAL_S=590 (runs that would
#        overrun it are skipped)   QUIET_WAIT=30 (s to wait for a quiet machine first)
#        RESULTS_DIR=Benchmarks/results   CHART=docs/bench/peers.png   KEEP_TMP=1
# Needs: wrk nginx haproxy curl python3 openssl taskset; for some rows gnuplot, valgrind,
#        strace (installed with apt-get when missing and run as root; it says so).
# Loopback only; every wait and run is bounded; every process it starts is stopped on exit.
set -uo pipefail

ORIG_ENV=()
for v in SIDECAR_BIN DURATION WARMUP ROUNDS COUNT_N WARM SKIP CPU_MODE SUT_CPU LOAD_CPU WORKERS_CPUS \
  NGINX_KEEPALIVE HOLD_N RESUME_N MAX_TOTAL_S QUIET_WAIT RESULTS_DIR CHART; do
  [[ -n "${!v+x}" ]] && ORIG_ENV+=("$v=${!v}")
done
for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,45p' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg (see --help)" >&2; exit 2 ;;
  esac
done

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh" peers

DURATION="${DURATION:-8}"
WARMUP="${WARMUP:-1}"
ROUNDS="${ROUNDS:-2}"
COUNT_N="${COUNT_N:-2000}"
WARM="${WARM:-200}"
SKIP="${SKIP:-}"
CPU_MODE="${CPU_MODE:-shared}"
SUT_CPU="${SUT_CPU:-0}"
LOAD_CPU="${LOAD_CPU:-1}"
WORKERS_CPUS="${WORKERS_CPUS:-0,1}"
NGINX_KEEPALIVE="${NGINX_KEEPALIVE:-64}"
HOLD_N="${HOLD_N:-500}"
RESUME_N="${RESUME_N:-200}"
MAX_TOTAL_S="${MAX_TOTAL_S:-590}"
QUIET_WAIT="${QUIET_WAIT:-30}"
RESULTS_DIR="${RESULTS_DIR:-$REPO/Benchmarks/results}"
CHART="${CHART:-$REPO/docs/bench/peers.png}"
SIDECAR_BIN="$(find_sidecar_bin)"
CLIENT="$BENCH_DIR/proxyclient.py"
LUA="$BENCH_DIR/wrk-peers.lua"
CLK_TCK="$(getconf CLK_TCK)"
T_START="$(date +%s)"
TOKEN=abc

log() { printf '[%3ds] %s\n' "$(($(date +%s) - T_START))" "$*"; }
warn() { local m="$*"; m="${m//$'\n'/ }"; log "WARNING: $m"; WARNINGS+=("$m"); }
die() { log "ERROR: $*"; exit 1; }
skipped() { [[ ",$SKIP," = *",$1,"* ]]; }
elapsed() { echo $(($(date +%s) - T_START)); }
fits() { (($(elapsed) + $1 + 15 <= MAX_TOTAL_S)); }   # 15 s reserve for the report and cleanup
WARNINGS=()
for s in ${SKIP//,/ }; do
  case "$s" in c50|c1|big|upload|rss|accesslog|workers|tls|syscalls|callgrind) ;; *) die "unknown SKIP section: $s" ;; esac
done
case "$CPU_MODE" in
  shared) PIN=(taskset -c "$SUT_CPU"); WRK_CPUS="$SUT_CPU" ;;
  split) PIN=(taskset -c "$SUT_CPU"); WRK_CPUS="$LOAD_CPU" ;;
  none) PIN=(); WRK_CPUS=""; WORKERS_CPUS="" ;;
  *) die "CPU_MODE must be shared, split or none" ;;
esac
SUT_PIN=("${PIN[@]}")

# ---- tools ---------------------------------------------------------------------------
need_tools wrk:wrk nginx:nginx-light haproxy:haproxy curl:curl openssl:openssl taskset:util-linux \
  || die "required tools missing"
need_tools gnuplot:gnuplot-nox valgrind:valgrind strace:strace objcopy:binutils || true
have strace || { skipped syscalls || SKIP+=",syscalls"; warn "strace missing: syscall rows skipped"; }
have valgrind || { skipped callgrind || SKIP+=",callgrind"; warn "valgrind missing: instruction rows skipped"; }
[[ -x /usr/bin/time ]] || die "/usr/bin/time missing (apt-get install time)"
NGINX="$(tool_path nginx)"
HAPROXY="$(tool_path haproxy)"
[[ -x "$SIDECAR_BIN" ]] || die "token-sidecar binary not found: $SIDECAR_BIN (make release, or set SIDECAR_BIN)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
mkdir -p "$TMP/wrk"
chmod 0755 "$TMP"   # nginx workers may run as another user

# ---- a quiet machine first (other users' builds distort everything) -------------------
busy_pct() { # machine-wide CPU busy % over 1 s
  local a b
  a="$(awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)"; sleep 1
  b="$(awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)"
  awk -v a="$a" -v b="$b" 'BEGIN{split(a,x," ");split(b,y," "); t=y[2]-x[2]; print (t>0)?int((y[1]-x[1])*100/t):0}'
}
for ((i = 0; i < QUIET_WAIT; i++)); do
  b="$(busy_pct)"
  ((b < 20)) && break
  ((i % 10 == 0)) && log "machine ${b}% busy (other users): waiting up to ${QUIET_WAIT}s for < 20%"
done
START_BUSY="$(busy_pct)"

# new_port VAR: a free port not handed out before in this run (free_port alone may repeat one)
USED_PORTS=" "
BPORT="" TPORT="" T1PORT="" p="" ap=""
new_port() {
  local _np
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    _np="$(free_port)"
    [[ "$USED_PORTS" = *" $_np "* ]] || break
  done
  USED_PORTS+="$_np "
  printf -v "$1" '%s' "$_np"
}

# ---- backend ---------------------------------------------------------------------------
BPORT="" TPORT="" T1PORT=""
new_port BPORT; new_port TPORT; new_port T1PORT
BODY="$(python3 -c 'print(("token-sidecar-bench-" * 6)[:99])')"   # + "\n" = 100 bytes
mkdir -p "$TMP/backend/www" "$TMP/tls"
head -c 1048576 /dev/urandom >"$TMP/backend/www/1m"
chmod 0755 "$TMP/backend" "$TMP/backend/www"; chmod 0644 "$TMP/backend/www/1m"
(
  cd "$TMP/tls" || exit 1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem \
    -days 2 -subj /CN=peers-bench-ca -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key -out srv.csr -subj /CN=127.0.0.1
  printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >srv.ext
  openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile srv.ext
) >"$TMP/tls/openssl.log" 2>&1 || die "openssl failed: $(tail -3 "$TMP/tls/openssl.log")"
chmod 0644 "$TMP/tls/"*
BACKEND_LOCATIONS="
        root $TMP/backend/www;
        location = / { default_type text/plain; return 200 \"$BODY\n\"; }
        location = /1m { }
        location = /echo-auth { default_type text/plain; return 200 \"\$http_authorization\"; }
        # the whole body is read into memory before the internal hop (proxy request buffering),
        # which answers with the request length nginx read (line + head + body)
        location = /up {
            client_max_body_size 2m;
            client_body_buffer_size 2m;
            proxy_pass http://upsink/upsink;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_pass_request_body off;
            proxy_set_header Content-Length \"\";
            proxy_set_header X-Read \$request_length;
        }
        location = /upsink { default_type text/plain; return 200 \"\$http_x_read\n\"; }"
nginx_conf backend "    sendfile on;
    tcp_nodelay on;
    ssl_session_cache shared:SSL:1m;
    log_format reused '\$ssl_session_reused';
    upstream upsink { server 127.0.0.1:$BPORT; keepalive 16; }
    server {
        listen 127.0.0.1:$BPORT backlog=4096;$BACKEND_LOCATIONS
    }
    server {
        listen 127.0.0.1:$TPORT ssl backlog=4096;
        ssl_certificate $TMP/tls/srv.pem;
        ssl_certificate_key $TMP/tls/srv.key;$BACKEND_LOCATIONS
    }
    server {
        listen 127.0.0.1:$T1PORT ssl;
        ssl_certificate $TMP/tls/srv.pem;
        ssl_certificate_key $TMP/tls/srv.key;
        keepalive_requests 1;
        access_log $TMP/backend/tls-close.log reused;$BACKEND_LOCATIONS
    }"
start_nginx backend "$BPORT"
BACKEND_PID="$LAST_PID"
BACKEND_CPUS="$SUT_CPU"
if ! wait_port "$TPORT" "$BACKEND_PID" 5 || ! wait_port "$T1PORT" "$BACKEND_PID" 5; then die "backend TLS ports not listening"; fi
log "backend nginx pid $BACKEND_PID on 127.0.0.1:$BPORT (TLS :$TPORT, TLS closing every connection :$T1PORT)"

# ---- targets ---------------------------------------------------------------------------
declare -A FORM PORT ABS PID CPUS OK IDLE_RSS
NAMES=()
add_target() { # add_target NAME FORM PORT ABS-AUTHORITY PID WRK-CPUS
  NAMES+=("$1"); FORM[$1]="$2"; PORT[$1]="$3"; ABS[$1]="$4"; PID[$1]="$5"; CPUS[$1]="$6"; OK[$1]=0
}
add_target direct origin "$BPORT" "" "" "$WRK_CPUS"

nginx_proxy() { # nginx_proxy NAME PORT [SERVER-EXTRA] [MAIN]
  nginx_conf "$1" "    tcp_nodelay on;
    upstream backend { server 127.0.0.1:$BPORT; keepalive $NGINX_KEEPALIVE; }
    server {
        listen 127.0.0.1:$2 backlog=4096;${3:-}
        client_max_body_size 2m;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_set_header Authorization \"Bearer $TOKEN\";
            # stream bodies both ways (as HAProxy and token-sidecar do): no spooling to disk
            proxy_request_buffering off;
            proxy_max_temp_file_size 0;
        }
    }" "${4:-}"
}
start_haproxy() { # start_haproxy NAME PORT LOG(0|1) -> LAST_PID
  haproxy_cfg "$1" "$2" "$3"
  "$HAPROXY" -c -q -f "$TMP/$1/haproxy.cfg" >"$TMP/$1/check.log" 2>&1 || die "haproxy config: $(cat "$TMP/$1/check.log")"
  start_bg "$TMP/$1/stdout" "$HAPROXY" -db -f "$TMP/$1/haproxy.cfg"
  wait_port "$2" "$LAST_PID" 10 || die "$1 failed to start: $(tail -5 "$TMP/$1/stdout")"
}
start_sidecar() { # start_sidecar NAME PORT (config from SC_* variables) -> LAST_PID
  local d="$TMP/$1"
  mkdir -p "$d"
  sidecar_config "$2" "$d/token-sidecar.yaml"
  "$SIDECAR_BIN" check --config "$d/token-sidecar.yaml" >"$d/check.log" 2>&1 \
    || die "token-sidecar check rejected the $1 config: $(tail -5 "$d/check.log")"
  start_bg "$d/out.log" "$SIDECAR_BIN" run --config "$d/token-sidecar.yaml"
  wait_port "$2" "$LAST_PID" 15 || die "$1 failed to start: $(tail -5 "$d/out.log")"
}

new_port p; nginx_proxy nginx "$p"; start_nginx nginx "$p"; add_target nginx origin "$p" "" "$LAST_PID" "$WRK_CPUS"
new_port p; start_haproxy haproxy "$p" 0; add_target haproxy absolute "$p" "127.0.0.1:$BPORT" "$LAST_PID" "$WRK_CPUS"
new_port p; start_sidecar sidecar "$p"; add_target sidecar absolute "$p" "api.test" "$LAST_PID" "$WRK_CPUS"
MAIN=(nginx haproxy sidecar)
if ! skipped accesslog; then
  new_port p; nginx_proxy nginx-log "$p" "
        access_log $TMP/nginx-log/access.log;"; start_nginx nginx-log "$p"
  add_target nginx-log origin "$p" "" "$LAST_PID" "$WRK_CPUS"
  new_port p; start_haproxy haproxy-log "$p" 1; add_target haproxy-log absolute "$p" "127.0.0.1:$BPORT" "$LAST_PID" "$WRK_CPUS"
  new_port p; SC_ACCESS_LOG=true start_sidecar sidecar-log "$p"
  add_target sidecar-log absolute "$p" "api.test" "$LAST_PID" "$WRK_CPUS"
fi
if ! skipped workers; then
  [[ -n "$WORKERS_CPUS" ]] && PIN=(taskset -c "$WORKERS_CPUS")
  for w in 1 2; do
    new_port p; SC_WORKERS=$w start_sidecar "sidecar-w$w" "$p"
    add_target "sidecar-w$w" absolute "$p" "api.test" "$LAST_PID" "$WORKERS_CPUS"
  done
  PIN=("${SUT_PIN[@]}")
fi
TLS_ADMIN=""
if ! skipped tls; then
  new_port p; new_port ap; TLS_ADMIN="127.0.0.1:$ap"
  SC_ADMIN="$TLS_ADMIN" SC_ROUTES="  - host: \"api-tls.test\"
    upstream: \"https://127.0.0.1:$TPORT\"
    caFile: \"$TMP/tls/ca.pem\"
    credential: api
  - host: \"api-tls-close.test\"
    upstream: \"https://127.0.0.1:$T1PORT\"
    caFile: \"$TMP/tls/ca.pem\"
    credential: api" start_sidecar sidecar-tls "$p"
  add_target sidecar-tls absolute "$p" "api-tls.test" "$LAST_PID" "$WRK_CPUS"
fi

# ---- idle RSS, right after start (before any request) -----------------------------------------
FACTS="$TMP/facts.tsv"; : >"$FACTS"
fact() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$FACTS"; }   # fact KIND TARGET VALUE
pids_of() { [[ -n "${PID[$1]}" ]] && tree_pids "${PID[$1]}"; }
rss_kib() { local p s=0 v; for p in "$@"; do v="$(awk '$1=="VmRSS:"{print $2}' "/proc/$p/status" 2>/dev/null)"; s=$((s + ${v:-0})); done; echo "$s"; }
if ! skipped rss; then
  sleep 0.5
  for t in "${MAIN[@]}"; do
    # shellcheck disable=SC2046
    r="$(rss_kib $(pids_of "$t"))"; fact idle_rss_kib "$t" "$r"
    IDLE_RSS[$t]="$r"
  done
fi

# via TARGET PATH [CURL-ARGS...]: a request through TARGET to the backend's PATH; prints the body
via() {
  local t="$1" path="$2"
  shift 2
  if [[ ${FORM[$t]} = absolute ]]; then
    curl -sS --max-time 10 --noproxy '' -x "http://127.0.0.1:${PORT[$t]}" "$@" "http://${ABS[$t]}$path"
  else
    curl -sS --max-time 10 --noproxy '*' "$@" "http://127.0.0.1:${PORT[$t]}$path"
  fi
}
# verify TARGET: 100-byte body, the injected header, the 1 MiB file, a 1 MiB upload read completely
verify() {
  local t="$1" b a m u
  b="$(via "$t" / | wc -c)"
  a="$(via "$t" /echo-auth)"
  m="$(via "$t" /1m | cmp -s - "$TMP/backend/www/1m" && echo same)"
  u="$(via "$t" /up -X POST -H 'Expect:' -H 'Content-Type: application/octet-stream' \
    --data-binary "@$TMP/backend/www/1m" -w ' %{http_code}' | tr -s '\n' ' ')"
  read -r ulen ucode <<<"$u"
  if [[ "$b" = 100 && "$m" = same && "$ucode" = 200 && "${ulen:-0}" -gt 1048576 ]] \
    && { [[ $t = direct ]] || [[ "$a" = "Bearer $TOKEN" ]]; }; then
    OK[$t]=1
    log "  $t ok: / = 100 B, /1m = 1 MiB, POST /up 1 MiB -> 200 (backend read $ulen B)${a:+, backend got Authorization: $a}"
  else
    warn "$t failed its checks (/ = $b B, /echo-auth = '$a', /1m ${m:-differs}, upload -> '${u}'): not measured"
  fi
}
log "checking every target"
for t in "${NAMES[@]}"; do verify "$t"; done
[[ ${OK[direct]} = 1 ]] || die "the backend itself fails its checks"
if [[ -n "${PID[sidecar-tls]:-}" && ${OK[sidecar-tls]} = 1 ]]; then
  ABS[sidecar-tls]=api-tls-close.test
  a="$(via sidecar-tls /echo-auth)"
  ABS[sidecar-tls]=api-tls.test
  [[ "$a" = "Bearer $TOKEN" ]] || warn "sidecar -> TLS backend closing every connection: got '$a'"
fi

cpu_ticks() { # utime+stime (all threads, incl. exited ones) summed over PIDS
  local p s=0 st f
  for p in "$@"; do
    st="$(cat "/proc/$p/stat" 2>/dev/null)" || continue
    read -ra f <<<"${st##*) }"
    s=$((s + f[11] + f[12]))
  done
  echo "$s"
}
busy_ticks() { # user+nice+system ticks of the CPUs in the list "0,1" (all CPUs when empty)
  if [[ -z "$1" ]]; then awk '/^cpu /{print $2+$3+$4; exit}' /proc/stat
  else awk -v l=",$1," '$1 ~ /^cpu[0-9]+$/ && index(l, "," substr($1, 4) ",") {s += $2+$3+$4} END{print s+0}' /proc/stat; fi
}
ncpus_of() { if [[ -z "$1" ]]; then nproc; else awk -F, '{print NF}' <<<"$1"; fi; }
repin_backend() { # repin_backend CPUS
  [[ -z "$1" || "$1" = "$BACKEND_CPUS" ]] && return 0
  local p
  for p in $(tree_pids "$BACKEND_PID"); do taskset -a -p -c "$1" "$p" >/dev/null 2>&1; done
  BACKEND_CPUS="$1"
}

# ---- idle RSS and RSS per idle keep-alive connection -------------------------------------------
if ! skipped rss; then
  log "idle RSS (right after start), and RSS per idle keep-alive client connection ($HOLD_N connections)"
  for t in "${MAIN[@]}"; do
    [[ ${OK[$t]} = 1 ]] || continue
    r="${IDLE_RSS[$t]}"
    pl="$(pids_of "$t" | paste -sd, -)"
    if [[ ${FORM[$t]} = absolute ]]; then args=(--url "http://${ABS[$t]}/")
    else args=(--url "http://127.0.0.1:${PORT[$t]}/" --direct); fi
    if bgrun timeout 60 python3 "$CLIENT" hold --proxy "127.0.0.1:${PORT[$t]}" "${args[@]}" -n "$HOLD_N" \
      --pids "$pl" --timeout 50 >"$TMP/hold-$t.json" 2>&1; then
      per="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["per_connection_kib"])' "$TMP/hold-$t.json")"
      fact conn_rss_kib "$t" "$per"
      log "  $t: idle RSS $((r / 1024)).$(((r % 1024) * 10 / 1024)) MiB, +$per KiB per idle connection"
    else
      warn "$t: holding $HOLD_N connections failed: $(head -c 300 "$TMP/hold-$t.json")"
    fi
  done
  sleep 0.5
fi

# ---- wrk runs ------------------------------------------------------------------------------------
RUNS="$TMP/runs.tsv"; : >"$RUNS"
NSKIPPED=0
run_case() { # run_case ROUND TARGET SCENARIO
  local r="$1" t="$2" s="$3" c=50 path=/ up=0 url abs="" out tf wpin=() cpus pids=() bpids=()
  local pt0 pt1 bt0 bt1 mt0 mt1 line wu ws ww other pticks
  case "$s" in c1) c=1 ;; big) c=8 path=/1m ;; upload) c=8 path=/up up=1048576 ;; esac
  [[ ${OK[$t]} = 1 ]] || return 0
  [[ -z "${PID[$t]}" || -d "/proc/${PID[$t]}" ]] || { warn "$t is gone (crashed?): $s not measured"; OK[$t]=0; return 0; }
  if ! fits $((WARMUP + DURATION + 2)); then NSKIPPED=$((NSKIPPED + 1)); return 0; fi
  if [[ ${FORM[$t]} = absolute ]]; then url="http://127.0.0.1:${PORT[$t]}/"; abs="http://${ABS[$t]}$path"
  else url="http://127.0.0.1:${PORT[$t]}$path"; fi
  cpus="${CPUS[$t]}"
  [[ -n "$cpus" ]] && wpin=(taskset -c "$cpus")
  if [[ $CPU_MODE != none ]]; then
    if [[ $s = workers ]]; then repin_backend "$WORKERS_CPUS"; else repin_backend "$SUT_CPU"; fi
  fi
  out="$TMP/wrk/r$r-$t-$s.txt"; tf="$out.time"
  if [[ $WARMUP != 0 ]]; then
    bgrun timeout -k 2 $((WARMUP + 15)) env ABS_URL="$abs" UPLOAD_BYTES="$up" "${wpin[@]}" \
      wrk -t1 -c"$c" -d"${WARMUP}s" --timeout 5s -s "$LUA" "$url" >/dev/null 2>&1
  fi
  read -ra pids <<<"$(pids_of "$t" | tr '\n' ' ')"
  read -ra bpids <<<"$(tree_pids "$BACKEND_PID" | tr '\n' ' ')"
  pt0="$(cpu_ticks "${pids[@]}")"; bt0="$(cpu_ticks "${bpids[@]}")"; mt0="$(busy_ticks "$cpus")"
  bgrun /usr/bin/time -f '%U %S %e' -o "$tf" timeout -k 2 $((DURATION + 15)) \
    env ABS_URL="$abs" UPLOAD_BYTES="$up" "${wpin[@]}" \
    wrk -t1 -c"$c" -d"${DURATION}s" --latency --timeout 5s -s "$LUA" "$url" >"$out" 2>&1
  pt1="$(cpu_ticks "${pids[@]}")"; bt1="$(cpu_ticks "${bpids[@]}")"; mt1="$(busy_ticks "$cpus")"
  line="$(grep '^WRK ' "$out" | tail -1)"
  if [[ -z "$line" ]]; then warn "no result from wrk for $t/$s (round $r): $(tail -3 "$out" | tr '\n' ' ')"; return 0; fi
  local requests duration_us bytes p50_us p90_us p99_us err_connect err_read err_write err_timeout non2xx
  local kv
  for kv in ${line#WRK }; do printf -v "${kv%%=*}" '%s' "${kv#*=}"; done
  read -r wu ws ww <"$tf"
  pticks=-; [[ -n "${PID[$t]}" ]] && pticks=$((pt1 - pt0))
  # share of the measured CPUs used by other processes (other users of the machine) during the run
  other="$(awk -v m=$((mt1 - mt0)) -v p=$((pt1 - pt0)) -v b=$((bt1 - bt0)) -v wu="$wu" -v ws="$ws" -v ww="$ww" \
    -v t="$CLK_TCK" -v n="$(ncpus_of "$cpus")" 'BEGIN{o=(m-p-b-(wu+ws)*t)/(ww*t*n)*100; if(o<0)o=0; printf "%.1f", o}')"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$t" "$s" "$c" "$requests" "$duration_us" \
    "$bytes" "$p50_us" "$p90_us" "$p99_us" $((err_connect + err_write + err_timeout)) "$non2xx" \
    "$pticks" $((bt1 - bt0)) "$(awk -v u="$wu" -v s="$ws" 'BEGIN{print u+s}')" "$other" >>"$RUNS"
  awk -v t="$t" -v s="$s" -v c="$c" -v q="$requests" -v d="$duration_us" -v p50="$p50_us" -v p99="$p99_us" \
    -v e=$((err_connect + err_write + err_timeout)) -v x="$non2xx" -v o="$other" -v pt=$((pt1 - pt0)) -v tck="$CLK_TCK" -v hp="${PID[$t]}" \
    'BEGIN{printf "  %-12s %-8s c%-3d %9.0f req/s  p50 %8.1f us  p99 %8.1f us%s  other load %s%%%s\n", t, s, c, q/(d/1e6), p50, p99,
      (hp != "") ? sprintf("  cpu %5.1f us/req", pt*1e6/tck/q) : "", o, (e+x > 0) ? sprintf("  !! %d socket errors, %d non-2xx", e, x) : ""}'
  [[ $((err_connect + err_write + err_timeout + non2xx)) = 0 ]] \
    || warn "$t/$s round $r: $((err_connect + err_write + err_timeout)) socket errors ($err_read read errors), $non2xx non-2xx"
}

SCEN_MAIN=()
for s in c50 c1 big upload; do skipped "$s" || SCEN_MAIN+=("$s"); done
per_round=$((${#SCEN_MAIN[@]} * 4))
skipped accesslog || per_round=$((per_round + 3))
skipped workers || per_round=$((per_round + 2))
skipped tls || per_round=$((per_round + 1))
planned=$((ROUNDS * per_round))
log "plan: $planned wrk runs of ${WARMUP}+${DURATION} s (~$((planned * (WARMUP + DURATION + 1))) s), $ROUNDS round(s) round-robin; then counts; budget ${MAX_TOTAL_S} s"
for ((r = 1; r <= ROUNDS; r++)); do
  log "round $r/$ROUNDS"
  for s in "${SCEN_MAIN[@]}"; do
    for t in direct "${MAIN[@]}"; do run_case "$r" "$t" "$s"; done
  done
  skipped accesslog || for t in nginx-log haproxy-log sidecar-log; do run_case "$r" "$t" log; done
  skipped workers || for t in sidecar-w1 sidecar-w2; do run_case "$r" "$t" workers; done
  skipped tls || run_case "$r" sidecar-tls tls
done
[[ $CPU_MODE != none ]] && repin_backend "$SUT_CPU"
[[ $NSKIPPED = 0 ]] || warn "$NSKIPPED wrk runs skipped: they would overrun MAX_TOTAL_S=$MAX_TOTAL_S"

# ---- TLS session resumption (backend closes every connection) -----------------------------------------
metric_sum() { # metric_sum NAME [LABEL]: sum over the label sets (with LABEL, e.g. resumed="true") in the sidecar-tls /metrics, or empty
  curl -sS --max-time 5 --noproxy '*' "http://$TLS_ADMIN/metrics" 2>/dev/null \
    | awk -v n="$1" -v l="${2:-}" '($1 == n || index($1, n "{") == 1) && (l == "" || index($1, l) > 0) {s += $NF; f = 1} END{if (f) printf "%d\n", s}'
}
if ! skipped tls && [[ ${OK[sidecar-tls]:-0} = 1 ]] && fits 20; then
  log "TLS session resumption: $RESUME_N sequential requests via token-sidecar to a TLS backend closing every connection"
  h0="$(metric_sum token_sidecar_upstream_tls_handshakes_total)"; s0="$(metric_sum token_sidecar_upstream_tls_handshakes_total 'resumed="true"')"
  lines0="$(wc -l <"$TMP/backend/tls-close.log" 2>/dev/null || echo 0)"
  if bgrun timeout 60 python3 "$CLIENT" seq --proxy "127.0.0.1:${PORT[sidecar-tls]}" --url http://api-tls-close.test/ \
    -n "$RESUME_N" --timeout 50 >"$TMP/resume.json" 2>&1; then
    h1="$(metric_sum token_sidecar_upstream_tls_handshakes_total)"; s1="$(metric_sum token_sidecar_upstream_tls_handshakes_total 'resumed="true"')"
    if [[ -n "$h1" && -n "$s1" && -n "$h0" && -n "$s0" ]]; then
      fact tls_resume_metric sidecar "$((s1 - s0)) $((h1 - h0))"
      log "  sidecar metrics: $((s1 - s0)) of $((h1 - h0)) upstream TLS handshakes resumed"
    else
      fact tls_resume_metric sidecar "missing"
      log "  sidecar metrics: token_sidecar_upstream_tls_handshakes_total missing"
    fi
    sleep 0.3
    read -r seen reused < <(tail -n +"$((lines0 + 1))" "$TMP/backend/tls-close.log" | awk '{n++; if ($1 == "r") r++} END{print n+0, r+0}')
    fact tls_resume_backend sidecar "$reused $seen"
    log "  backend: $reused of $seen TLS connections resumed a session (\$ssl_session_reused)"
  else
    warn "TLS resumption run failed: $(head -c 300 "$TMP/resume.json")"
  fi
fi

# ---- syscalls per request ------------------------------------------------------------------------------------
# seq_client TARGET PATH N: N sequential keep-alive GETs on one connection through TARGET
seq_client() {
  local t="$1"
  if [[ ${FORM[$t]} = absolute ]]; then
    python3 "$CLIENT" seq --proxy "127.0.0.1:${PORT[$t]}" --url "http://${ABS[$t]}$2" -n "$3" --timeout 100
  else
    python3 "$CLIENT" seq --proxy "127.0.0.1:${PORT[$t]}" --url "http://127.0.0.1:${PORT[$t]}$2" --direct -n "$3" --timeout 100
  fi
}
BIG_N=$((COUNT_N / 10 > 20 ? COUNT_N / 10 : 20))
if ! skipped syscalls; then
  log "syscalls per request (strace -c -f; $COUNT_N x 100 B and $BIG_N x 1 MiB sequential keep-alive requests)"
  for t in "${MAIN[@]}"; do
    [[ ${OK[$t]} = 1 ]] || continue
    fits 15 || { warn "syscalls for $t skipped (time budget)"; continue; }
    sp="${PID[$t]}"
    [[ $t = nginx ]] && sp="$(ps -o pid= --ppid "${PID[$t]}" | head -1 | tr -d ' ')"   # the worker
    bgrun seq_client "$t" / "$WARM" >/dev/null 2>&1
    for kind in 100 1m; do
      if [[ $kind = 100 ]]; then n=$COUNT_N path=/; else n=$BIG_N path=/1m; fi
      if o="$(strace_count "$sp" "$TMP/strace-$t-$kind.txt" seq_client "$t" "$path" "$n" \
        && strace_summary "$TMP/strace-$t-$kind.txt" "$n" "$TMP/strace-$t-$kind.json")"; then
        fact "syscalls_$kind" "$t" "$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["per_request"], 2))' "$TMP/strace-$t-$kind.json")"
        cp "$TMP/strace-$t-$kind.json" "$TMP/calls-$t-$kind.json"
        log "  $t ($kind): $(tr '\n' ' ' <<<"$o")"
      else
        warn "strace for $t ($kind) failed: $o $(grep -v -e attached -e detached "$TMP/strace-$t-$kind.txt.err" 2>/dev/null | head -c 200)"
      fi
    done
  done
fi

# ---- user-space instructions per request (callgrind) --------------------------------------------------------
# Two runs per proxy, with WARM and WARM+COUNT_N requests: the difference ÷ COUNT_N (start-up and
# shutdown cancel out). nginx runs as one process (master_process off); HAProxy too (-db).
cg_client_nginx() { python3 "$CLIENT" seq --proxy "127.0.0.1:$1" --url "http://127.0.0.1:$1/" --direct -n "$2" --timeout 280; }
cg_client_haproxy() { python3 "$CLIENT" seq --proxy "127.0.0.1:$1" --url "http://127.0.0.1:$BPORT/" -n "$2" --timeout 280; }
cg_client_sidecar() { python3 "$CLIENT" seq --proxy "127.0.0.1:$1" --url "http://api.test/" -n "$2" --timeout 280; }
cg_target() { # cg_target NAME TAG NREQ -> CG_IR
  local port d
  new_port port
  d="$TMP/cg-$1-$2"
  if [[ $1 = haproxy ]]; then
    haproxy_cfg "cg-$1-$2" "$port" 0
    cg_run "$d/out" "$port" "$3" cg_client_haproxy "$HAPROXY" -db -f "$d/haproxy.cfg"
  elif [[ $1 = nginx ]]; then
    nginx_proxy "cg-$1-$2" "$port" "" "daemon off;
master_process off;"
    cg_run "$d/out" "$port" "$3" cg_client_nginx \
      "$NGINX" -p "$d" -e "$d/error.log" -c "$d/nginx.conf"
  else
    mkdir -p "$d"
    sidecar_config "$port" "$d/token-sidecar.yaml"
    cg_run "$d/out" "$port" "$3" cg_client_sidecar "$VG_BIN" run --config "$d/token-sidecar.yaml"
  fi
}
if ! skipped callgrind; then
  VG_BIN="$(nodebug_copy "$SIDECAR_BIN" "$TMP/token-sidecar-nodebug")"
  log "instructions per request under callgrind ($WARM and $((WARM + COUNT_N)) requests; slow)"
  for t in "${MAIN[@]}"; do
    [[ ${OK[$t]} = 1 ]] || continue
    fits 60 || { warn "callgrind for $t skipped (time budget)"; continue; }
    a="" b=""
    cg_target "$t" a "$WARM" && a="$CG_IR"
    [[ -n "$a" ]] && cg_target "$t" b "$((WARM + COUNT_N))" && b="$CG_IR"
    if [[ -n "$a" && -n "$b" ]]; then
      per=$(((b - a) / COUNT_N))
      fact instructions "$t" "$per"
      log "  $t: $per instructions/request (Ir $a for $WARM requests, $b for $((WARM + COUNT_N)))"
    else
      warn "callgrind for $t failed"
    fi
  done
fi

# ---- report -------------------------------------------------------------------------------------------------------
log "stopping the servers"
for t in "${NAMES[@]}"; do [[ -n "${PID[$t]}" ]] && stop_pid "${PID[$t]}"; done
stop_pid "$BACKEND_PID"

if [[ -n "${MAKELEVEL:-}" ]]; then cmd="make bench-peers"; else cmd="Benchmarks/peers.sh"; fi
[[ ${#ORIG_ENV[@]} -gt 0 ]] && cmd="${ORIG_ENV[*]} $cmd"
versions="nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'), $("$HAPROXY" -v 2>&1 | head -1 | awk '{print "HAProxy", $3}'), $(wrk -v 2>&1 | head -1 | awk '{print "wrk", $2}')"
git_rev="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
mkdir -p "$RESULTS_DIR" "$(dirname "$CHART")"
python3 "$BENCH_DIR/peers-report.py" --runs "$RUNS" --facts "$FACTS" --tmp "$TMP" \
  --md "$RESULTS_DIR/peers-latest.md" --json "$RESULTS_DIR/peers-latest.json" --chart-data "$TMP/chart.dat" \
  --meta "date=$(date '+%Y-%m-%d %H:%M %Z')" --meta "arch=$(uname -m)" \
  --meta "cpu=$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)" --meta "nproc=$(nproc)" \
  --meta "command=$cmd" --meta "rev=$git_rev" --meta "binary=${SIDECAR_BIN#"$REPO"/}" --meta "versions=$versions" \
  --meta "duration=$DURATION" --meta "warmup=$WARMUP" --meta "rounds=$ROUNDS" --meta "count_n=$COUNT_N" --meta "warm=$WARM" \
  --meta "cpu_mode=$CPU_MODE" --meta "sut_cpu=$SUT_CPU" --meta "load_cpu=$LOAD_CPU" --meta "workers_cpus=$WORKERS_CPUS" \
  --meta "nginx_keepalive=$NGINX_KEEPALIVE" --meta "hold_n=$HOLD_N" --meta "resume_n=$RESUME_N" --meta "clk_tck=$CLK_TCK" --meta "start_busy=$START_BUSY" \
  --meta "elapsed_s=$(elapsed)" \
  --meta "skip=$SKIP" --meta "warnings=$(printf '%s\n' "${WARNINGS[@]:-}")" \
  || die "report failed"
if have gnuplot; then
  if gnuplot -e "datafile='$TMP/chart.dat'; outfile='$CHART'; subtitlefile='$TMP/chart.subtitle'" \
    "$BENCH_DIR/peers-chart.gp" 2>"$TMP/gnuplot.err"; then
    log "chart: ${CHART#"$REPO"/}"
  else
    warn "gnuplot failed: $(head -c 300 "$TMP/gnuplot.err")"
  fi
else
  warn "gnuplot missing: no chart"
fi
log "done in $(elapsed) s: ${RESULTS_DIR#"$REPO"/}/peers-latest.md, peers-latest.json"
