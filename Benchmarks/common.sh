# shellcheck shell=bash
# Shared by the benchmark scripts (sourced, not run): a temp dir, process bookkeeping that
# cleans up on every exit path, and helpers to start nginx / token-sidecar, find the binary,
# install missing tools, and count syscalls (strace) and instructions (callgrind) per request.
# Usage: source "$(dirname "$0")/common.sh" NAME
#   -> sets TMP=/tmp/NAME.XXXXXX, PIDS=(), BENCH_DIR (this folder), REPO (the repository root)
# Every process started with start_bg / start_nginx / bgrun is in PIDS and stopped on exit
# (its whole process tree: SIGTERM, then SIGKILL after STOP_WAIT seconds).

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$BENCH_DIR/.." && pwd)"
TMP="$(mktemp -d "/tmp/${1:-bench}.XXXXXX")"
PIDS=()
PIN=()            # command prefix for start_bg / start_nginx, e.g. PIN=(taskset -c 0)
STOP_WAIT="${STOP_WAIT:-10}"

# tree_pids PID...: the PIDs and all their descendants (parents first).
tree_pids() {
  local p
  for p in "$@"; do
    [[ -d "/proc/$p" ]] || continue
    echo "$p"
    # shellcheck disable=SC2046
    tree_pids $(ps -o pid= --ppid "$p" 2>/dev/null)
  done
}

# stop_pids PID...: SIGTERM each (and, after STOP_WAIT s, SIGKILL what is left of their trees).
stop_pids() {
  local all p i alive=1
  all="$(tree_pids "$@")"
  [[ -n "$all" ]] || return 0
  for p in "$@"; do kill "$p" 2>/dev/null || true; done
  for ((i = 0; i < STOP_WAIT * 20; i++)); do
    alive=0
    for p in $all; do [[ -d "/proc/$p" ]] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && alive=1 && break; done
    [[ $alive = 0 ]] && break
    sleep 0.05
  done
  # shellcheck disable=SC2086
  [[ $alive = 1 ]] && kill -9 $all 2>/dev/null
  for p in "$@"; do wait "$p" 2>/dev/null || true; done
  return 0
}
stop_pid() { stop_pids "$1"; }   # stop_pid PID

cleanup() {
  local p live=()
  for p in "${PIDS[@]:-}"; do [[ -n "$p" && -d "/proc/$p" ]] && live+=("$p"); done
  # newest first: load generators and clients stop before the servers they talk to
  if [[ ${#live[@]} -gt 0 ]]; then
    local i rev=()
    for ((i = ${#live[@]} - 1; i >= 0; i--)); do rev+=("${live[i]}"); done
    stop_pids "${rev[@]}"
  fi
  PIDS=()
  if [[ "${KEEP_TMP:-0}" = 1 ]]; then echo "temp dir kept: $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# bgrun CMD...: run CMD in the background and wait for it, so a SIGINT/SIGTERM to this
# script is handled at once (bash defers traps while a foreground child runs).
bgrun() {
  local p rc=0
  "$@" &
  p=$!
  PIDS+=("$p")
  wait "$p" || rc=$?
  unset 'PIDS[${#PIDS[@]}-1]'
  return $rc
}

# start_bg LOGFILE CMD...: start CMD (prefixed with PIN) in the background, output to LOGFILE;
# sets LAST_PID (the PID of CMD itself: taskset execs it).
start_bg() {
  local log="$1"; shift
  "${PIN[@]}" "$@" >"$log" 2>&1 </dev/null &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}

# free_port: an unused TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_port PORT PID SECONDS: until 127.0.0.1:PORT accepts; fails early if PID exits.
wait_port() {
  local i
  for ((i = 0; i < $3 * 20; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    [[ -z "$2" ]] || kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# to_us 85.00us|1.23ms|2.00s: a wrk latency in microseconds.
to_us() {
  python3 -c 'import sys,re
m=re.match(r"([0-9.]+)(us|ms|s)$", sys.argv[1])
print(round(float(m.group(1))*{"us":1,"ms":1e3,"s":1e6}[m.group(2)],1) if m else "nan")' "$1"
}

# find_sidecar_bin: $SIDECAR_BIN, else the repository's release build, else token-sidecar on
# PATH; prints the repository path when none exists (for the error message).
find_sidecar_bin() {
  if [[ -n "${SIDECAR_BIN:-}" ]]; then echo "$SIDECAR_BIN"
  elif [[ -x "$REPO/.build/release/token-sidecar" ]]; then echo "$REPO/.build/release/token-sidecar"
  elif command -v token-sidecar >/dev/null 2>&1; then command -v token-sidecar
  else echo "$REPO/.build/release/token-sidecar"; fi
}

# have CMD: CMD on PATH or in /usr/sbin, /sbin (nginx, haproxy live there; not on a user's PATH).
have() { command -v "$1" >/dev/null 2>&1 || [[ -x "/usr/sbin/$1" || -x "/sbin/$1" ]]; }
tool_path() { command -v "$1" 2>/dev/null || { [[ -x "/usr/sbin/$1" ]] && echo "/usr/sbin/$1"; } || echo "/sbin/$1"; }

# need_tools CMD:PACKAGE...: when some CMD is missing and we run as root with apt-get, install
# the packages (saying which); returns 1 (listing them) when any is still missing.
need_tools() {
  local t missing=() pkgs=()
  for t in "$@"; do have "${t%%:*}" || { missing+=("${t%%:*}"); pkgs+=("${t#*:}"); }; done
  [[ ${#missing[@]} = 0 ]] && return 0
  if [[ "$(id -u)" = 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "installing missing tools: apt-get install -y ${pkgs[*]}"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >"$TMP/apt.log" 2>&1; then
      echo "  (apt-get update first)"
      apt-get update -qq >>"$TMP/apt.log" 2>&1 || true
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >>"$TMP/apt.log" 2>&1 || tail -5 "$TMP/apt.log"
    fi
  fi
  local still=()
  for t in "$@"; do have "${t%%:*}" || still+=("${t%%:*} (package ${t#*:})"); done
  [[ ${#still[@]} = 0 ]] && return 0
  echo "missing: ${still[*]}" >&2
  return 1
}

# ---- nginx --------------------------------------------------------------------------
NGINX="${NGINX:-$(tool_path nginx)}"
USER_LINE=""
[[ "$(id -u)" = 0 ]] && USER_LINE="user root root;"

# nginx_conf NAME HTTP-BLOCK-BODY [MAIN-DIRECTIVES] -> writes $TMP/NAME/nginx.conf
# (one worker, no access log, temp paths in $TMP/NAME; MAIN defaults to "daemon off;").
nginx_conf() {
  local d="$TMP/$1"
  mkdir -p "$d"
  cat >"$d/nginx.conf" <<EOF
$USER_LINE
${3:-daemon off;}
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $d/body;
    proxy_temp_path $d/proxy;
    fastcgi_temp_path $d/fastcgi;
    uwsgi_temp_path $d/uwsgi;
    scgi_temp_path $d/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
$2
}
EOF
}
start_nginx() { # start_nginx NAME PORT -> sets LAST_PID (the master)
  local d="$TMP/$1"
  start_bg "$d/stdout" "$NGINX" -p "$d" -e "$d/error.log" -c "$d/nginx.conf"
  wait_port "$2" "$LAST_PID" 10 || { echo "$1 nginx failed to start:"; cat "$d/error.log" "$d/stdout"; exit 1; }
}

# ---- token-sidecar ------------------------------------------------------------------
# sidecar_config PORT FILE: token-sidecar as forward proxy on 127.0.0.1:PORT, static token "abc",
# route api.test -> http://127.0.0.1:$BPORT. Settings from variables (set them on the call,
# e.g. SC_WORKERS=2 sidecar_config ...): SC_ADMIN (127.0.0.1:0), SC_ACCESS_LOG (false),
# SC_WORKERS (1), SC_CREDENTIALS (more YAML entries under credentials:, indented 2),
# SC_ROUTES (more YAML list items under routes:).
sidecar_config() {
  cat >"$2" <<EOF
listen: "127.0.0.1:$1"
admin: "${SC_ADMIN:-127.0.0.1:0}"
otherHosts: deny
# Like the nginx peers (access_log off): measure the proxy, not the logger.
accessLog: ${SC_ACCESS_LOG:-false}
workers: ${SC_WORKERS:-1}
drainTimeout: 2s
credentials:
  api:
    type: static
    token: "abc"
${SC_CREDENTIALS:-}
routes:
  - host: "api.test"
    upstream: "http://127.0.0.1:$BPORT"
    credential: api
${SC_ROUTES:-}
EOF
}

# haproxy_defaults: the defaults section of the HAProxy configurations (haproxy_cfg, abuse/h2.sh): HTTP,
# connections kept alive and reused, 5 s to connect, 60 s idle.
haproxy_defaults() {
  cat <<'EOF'
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 60s
EOF
}

# haproxy_cfg NAME PORT LOG(0|1): HAProxy as the forward proxy for absolute-form requests to the
# backend on $BPORT, injecting "Authorization: Bearer $TOKEN" -> writes $TMP/NAME/haproxy.cfg.
haproxy_cfg() { # haproxy_cfg NAME PORT LOG(0|1)
  local d="$TMP/$1" g="" df=""
  mkdir -p "$d"
  [[ $3 = 1 ]] && g="    log stdout format raw local0 info" && df="    log global
    option httplog"
  cat >"$d/haproxy.cfg" <<EOF
# forward proxy for absolute-form requests ("GET http://127.0.0.1:$BPORT/ HTTP/1.1"): the
# destination comes from the URI (only the backend is allowed); injects the header; reuses connections
global
    nbthread 1
    maxconn 4096
$g
$(haproxy_defaults)
$df
frontend fe
    bind 127.0.0.1:$2
    http-request deny unless { url_ip 127.0.0.1 } { url_port $BPORT }
    http-request set-header Authorization "Bearer $TOKEN"
    default_backend be

backend be
    http-request set-dst url_ip
    http-request set-dst-port url_port
    server fwd 0.0.0.0:0
EOF
}
# nodebug_copy BIN DEST: valgrind 3.19 cannot parse the DWARF 5 debug info newer Swift toolchains
# emit ("unhandled dwarf2 abbrev form"): profile a copy without debug sections (the symbol table
# stays, instruction counts are unchanged). Prints the binary to profile.
nodebug_copy() {
  if command -v objcopy >/dev/null && objcopy --strip-debug "$1" "$2" 2>/dev/null; then echo "$2"; else echo "$1"; fi
}

# ---- counting -----------------------------------------------------------------------
# strace_count PID OUT CMD...: strace -c -f attached to PID (all its threads) while CMD runs
# (a command or function that bounds its own time); strace's summary goes to OUT.
strace_count() {
  local pid="$1" out="$2" st rc=0 i
  shift 2
  strace -c -f -p "$pid" -o "$out" 2>"$out.err" &
  st=$!
  PIDS+=("$st")
  sleep 1   # let strace attach to all threads
  bgrun "$@" >"$out.client" 2>&1 || rc=$?
  sleep 0.2
  kill -INT "$st" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do kill -0 "$st" 2>/dev/null || break; sleep 0.05; done
  wait "$st" 2>/dev/null || true
  [[ $rc = 0 ]] || { echo "client failed: $(head -c 300 "$out.client")"; return 1; }
}
# strace_summary OUT N [JSON]: prints syscalls per request (and the top calls); JSON gets
# {"per_request": X, "total": T, "requests": N, "calls": {name: per_request}}.
strace_summary() {
  python3 - "$1" "$2" "${3:-}" <<'EOF'
import json, sys
n = int(sys.argv[2])
rows, total = [], None
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[0].replace(".", "").isdigit() and not line.startswith("---"):
        calls = int(f[3])
        if f[-1] == "total":
            total = calls
        else:
            rows.append((calls, f[-1]))
if total is None:
    print("strace: no summary found"); sys.exit(1)
rows.sort(reverse=True)
print("syscalls/request: %.2f  (total %d over %d requests, incl. idle wake-ups)" % (total / n, total, n))
print("  top: " + ", ".join("%s %.2f" % (name, c / n) for c, name in rows[:8]))
if sys.argv[3]:
    json.dump({"per_request": total / n, "total": total, "requests": n,
               "calls": {name: round(c / n, 3) for c, name in rows}}, open(sys.argv[3], "w"))
EOF
}

# cg_run DIR PORT NREQ CLIENT CMD...: run CMD under callgrind (prefixed with PIN; CMD must listen on 127.0.0.1:PORT),
# then `CLIENT PORT NREQ` (a function sending NREQ requests, bounded), then stop CMD; sets CG_IR to the
# instruction count (Ir) of the whole process lifetime (all callgrind files summed).
cg_run() {
  local dir="$1" port="$2" nreq="$3" client="$4" vpid f sum=0 v
  shift 4
  CG_IR=""
  mkdir -p "$dir"
  "${PIN[@]}" valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$dir/callgrind.out.%p" \
    "$@" >"$dir/valgrind.log" 2>&1 &
  vpid=$!
  PIDS+=("$vpid")
  if ! wait_port "$port" "$vpid" 90; then
    echo "under valgrind: failed to start:"; tail -20 "$dir/valgrind.log"; stop_pid "$vpid"; return 1
  fi
  if ! bgrun "$client" "$port" "$nreq" >"$dir/client.out" 2>&1; then
    echo "client failed: $(head -c 300 "$dir/client.out")"; stop_pid "$vpid"; return 1
  fi
  STOP_WAIT=60 stop_pid "$vpid"   # callgrind writes its profile when the process exits
  for f in "$dir"/callgrind.out.*; do
    [[ -f "$f" ]] || continue
    v="$(awk '/^(summary|totals):/ {print $2; exit}' "$f")"
    [[ "$v" =~ ^[0-9]+$ ]] && sum=$((sum + v))
  done
  [[ $sum -gt 0 ]] || { echo "no callgrind output in $dir (did the process exit on SIGTERM?)"; return 1; }
  # shellcheck disable=SC2034  # read by the caller
  CG_IR=$sum
}
