#!/usr/bin/env bash
# abuse/h2.sh — the HTTP/2 half of `make abuse`: do abusive HTTP/2 clients hurt everybody else?
#
# Each TARGET in turn — token-sidecar, nginx 1.22 and HAProxy 2.6, each taking HTTP/2 with prior
# knowledge (h2c) on 127.0.0.1 and forwarding over HTTP/1.1 to the same nginx backend with
# "Authorization: Bearer abc" added — gets a baseline phase (BASELINE_SECONDS, canary only), then
# every attack for ATTACK_SECONDS, one after the other, on its app side:
#   rapid-reset         HEADERS + RST_STREAM(CANCEL) pairs, batched, as fast as possible (CVE-2023-44487)
#   continuation-flood  HEADERS without END_HEADERS, then endless CONTINUATIONs of junk (CVE-2024-27316)
#   ping-flood          PINGs as fast as possible, never reading, 4 KiB SO_RCVBUF (CVE-2019-9512)
#   settings-flood      SETTINGS frames the same way (CVE-2019-9515)
#   reset-flood         malformed requests (an upper-case field name) the target must reset, never
#                       reading (CVE-2019-9514)
#   empty-frames        POST HEADERS, then floods of empty DATA frames (CVE-2019-9518)
#   madeyoureset        valid GETs each followed by WINDOW_UPDATE 0 on the stream, or by an empty
#                       DATA after END_STREAM: the SERVER resets them (CVE-2025-8671)
#   header-limits       one request with 200 fields x 8 KiB (over CONTINUATIONs), one with a single
#                       66,000-byte field, over and over: what comes back for each stream
#   no-read             50 connections x 100 streams for a 1 MiB file, SETTINGS_INITIAL_WINDOW_SIZE
#                       4096, never reading
# (details and the attackers' knobs: Benchmarks/abuse/h2attack.py). 4 attacker connections
# (header-limits 4 at a time, one request each; no-read 50), one Python process per attack; a
# connection the target ends is replaced (at most 50 new ones per second, 2000 in all).
#
# A CANARY on other connections sends one GET /canary every 100 ms, each on a NEW h2c connection
# (h2's H2Connection), 2 s timeout; ok = 200 with the backend's "ok\n" (the backend answers /canary
# only when it carries "Bearer abc", so this also checks the injection). For each (target, attack):
# canary count, p50, p99, failures; the target's CPU (utime+stime of its process tree from /proc)
# as % of the attack's wall time; its RSS (VmRSS summed over the tree, every 0.25 s): just before
# the attack, the peak during it and REST_SECONDS after the attacker closed its connections; the
# GOAWAYs (code) the attack connections got; requests that reached the backend for the attack's
# paths (/rr/, /cf/, /rf/, /ef/, /myr/, /hl/, /nr/: counted in the backend's access log, REST_SECONDS
# after the attack); for token-sidecar also its token_sidecar_http2_* counters (and h2 requests)
# before/after each phase, from the admin port's /metrics. Prints a markdown table per target and a
# combined one (also in $TMP/report.md with KEEP_TMP=1).
#
# Verdicts (token-sidecar rows; nginx and HAProxy rows get the same rules, printed in parentheses,
# for information only): canary p99 <= 2 x the target's baseline p99 or <= 20 ms; no canary failure;
# CPU <= 60% of wall time; peak RSS <= +64 MiB and RSS 5 s after <= +16 MiB over the RSS just before
# the attack; continuation-flood, ping-flood, settings-flood, reset-flood, empty-frames and
# madeyoureset: every attack connection (that lived >= 1 s, or that the target ended) got a GOAWAY;
# rapid-reset: no /rr/ request reached the backend; header-limits: no stream got a 2xx.
# Exit 0 when every sidecar row passes, 1 when one fails (or the sidecar died), 2 on a set-up problem.
#
# Peers' configurations are those of the shared h2c peer benchmark (nginx: `listen ... http2`,
# keepalive_requests 1000000 — so no GOAWAY every 1000 requests —, proxy_max_temp_file_size 0, an
# upstream pool of 1024; HAProxy: `bind ... proto h2`, http-request set-header), with connection
# limits raised so 5,000 no-read streams fit (nginx worker_connections 16384, HAProxy maxconn (descriptor limit - 200) / 2, at most 20000).
# token-sidecar: common.sh's sidecar_config (1 worker, default limits and timeouts, access log off)
# plus the h2 route `host: "127.0.0.1:<backend port>"` (an h2 request is routed by :authority; every
# request here has :authority 127.0.0.1:<backend port>) and the admin port.
#
# Run:   Benchmarks/abuse/h2.sh                  (~7 min: 3 targets x (5 s + 9 x ~14.5 s))
#        TARGETS=sidecar ATTACKS="rapid-reset no-read" ATTACK_SECONDS=3 Benchmarks/abuse/h2.sh
# Env:   TARGETS ("sidecar nginx haproxy")  ATTACKS (all nine, in the order above)
#        ATTACK_SECONDS (8)  BASELINE_SECONDS (5)  REST_SECONDS (5)
#        BIN or SIDECAR_BIN (default: the repository's .build/release/token-sidecar, as run.sh)
#        H2_VERSION (default: the Makefile's)  KEEP_TMP=1 keeps the temp dir (configs, logs, JSON)
# Needs: nginx (nginx-light), haproxy (installed with apt-get when missing and root), python3 with
# venv; the `h2` package (PyPI, pinned: H2_VERSION in the Makefile) goes into the test-only virtual
# environment .build-h2attack, made here when missing (python3 -m venv + pip).
# Loopback only; every phase is bounded by its own deadline and a `timeout` around it, and every
# process started here is stopped on exit (common.sh).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ATTACKER="$HERE/h2attack.py"
ATTACK_SECONDS="${ATTACK_SECONDS:-8}"
BASELINE_SECONDS="${BASELINE_SECONDS:-5}"
REST_SECONDS="${REST_SECONDS:-5}"
TARGETS="${TARGETS:-sidecar nginx haproxy}"
ALL_ATTACKS="rapid-reset continuation-flood ping-flood settings-flood reset-flood empty-frames madeyoureset header-limits no-read"
ATTACKS="${ATTACKS:-$ALL_ATTACKS}"
TOKEN=abc
[[ -n "${BIN:-}" ]] && SIDECAR_BIN="$BIN"

# shellcheck source=Benchmarks/common.sh disable=SC1091
source "$HERE/../common.sh" abuse-h2
setup_fail() { echo "abuse/h2.sh: $*" >&2; exit 2; }

for t in $TARGETS; do case "$t" in sidecar|nginx|haproxy) ;; *) setup_fail "unknown target $t (sidecar nginx haproxy)" ;; esac; done
for a in $ATTACKS; do [[ " $ALL_ATTACKS " = *" $a "* ]] || setup_fail "unknown attack $a ($ALL_ATTACKS)"; done
[[ "$ATTACK_SECONDS" =~ ^[0-9]+$ && "$BASELINE_SECONDS" =~ ^[0-9]+$ && "$REST_SECONDS" =~ ^[0-9]+$ ]] ||
  setup_fail "ATTACK_SECONDS, BASELINE_SECONDS and REST_SECONDS are whole seconds"

if [[ " $TARGETS " = *" sidecar "* ]]; then
  SIDECAR_BIN="$(find_sidecar_bin)"
  [[ -x "$SIDECAR_BIN" ]] || setup_fail "sidecar binary not found: $SIDECAR_BIN (set BIN, or make release)"
fi
tools=(nginx:nginx-light)
[[ " $TARGETS " = *" haproxy "* ]] && tools+=(haproxy:haproxy)
need_tools "${tools[@]}" || setup_fail "missing tools"
NGINX="$(tool_path nginx)"
HAPROXY="$(tool_path haproxy)"

# ---- the attacker's virtual environment (h2 from PyPI, pinned in the Makefile) ----------------
H2_VERSION="${H2_VERSION:-$(sed -n 's/^H2_VERSION[[:space:]]*:=[[:space:]]*//p' "$REPO/Makefile")}"
[[ -n "$H2_VERSION" ]] || setup_fail "H2_VERSION is not set and not found in $REPO/Makefile"
VENV="$REPO/.build-h2attack"
if [[ ! -f "$VENV/.installed-$H2_VERSION" || ! -x "$VENV/bin/python3" ]]; then
  echo "making $VENV (h2==$H2_VERSION from PyPI)"
  python3 -m venv "$VENV" || setup_fail "python3 -m venv failed (apt-get install python3-venv)"
  "$VENV/bin/pip" install -q "h2==$H2_VERSION" || setup_fail "pip install h2==$H2_VERSION failed"
  rm -f "$VENV"/.installed-*
  touch "$VENV/.installed-$H2_VERSION"
fi
PY="$VENV/bin/python3"
"$PY" "$ATTACKER" selftest >/dev/null || setup_fail "h2attack.py selftest failed"

# 50 x 100 no-read streams: each proxy holds ~5,000 backend connections; so does the backend
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE="$(ulimit -n)"
[[ "$NOFILE" -ge 12000 ]] || echo "warning: ulimit -n is $NOFILE: no-read's 5,000 streams may run out of descriptors"
# HAProxy wants 2 descriptors per connection of maxconn (and refuses to start beyond the limit)
HAPROXY_MAXCONN=$(( (NOFILE - 200) / 2 < 20000 ? (NOFILE - 200) / 2 : 20000 ))

# ---- backend: nginx, HTTP/1.1, with an access log of "<uri> <status>" ---------------------------
BPORT="$(free_port)"
AUTHORITY="127.0.0.1:$BPORT"
BLOG="$TMP/backend/access.log"
mkdir -p "$TMP/www" "$TMP/backend"
head -c $((1 << 20)) /dev/zero >"$TMP/www/big1m"
USER_LINE=""
[[ "$(id -u)" = 0 ]] && USER_LINE="user root root;"
nginx_main() { # nginx_main DIR: the main context and the http block's start (one worker, temp paths in DIR)
  cat <<EOF
$USER_LINE
daemon off;
worker_processes 1;
worker_rlimit_nofile $NOFILE;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 16384; }
http {
    access_log off;
    client_body_temp_path $1/body;
    proxy_temp_path $1/proxy;
    fastcgi_temp_path $1/fastcgi;
    uwsgi_temp_path $1/uwsgi;
    scgi_temp_path $1/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
EOF
}
{
  nginx_main "$TMP/backend"
  cat <<EOF
    log_format paths '\$request_uri \$status';
    server {
        listen 127.0.0.1:$BPORT backlog=4096;
        access_log $BLOG paths;
        client_max_body_size 0;
        location = /canary {
            default_type text/plain;
            if (\$http_authorization != "Bearer $TOKEN") { return 403 "no token\n"; }
            return 200 "ok\n";
        }
        location ^~ /nr/ { root $TMP/www; default_type application/octet-stream; try_files /big1m =404; }
        location / { default_type text/plain; return 200 "ok\n"; }
    }
}
EOF
} >"$TMP/backend/nginx.conf"
start_bg "$TMP/backend/stdout" "$NGINX" -p "$TMP/backend" -e "$TMP/backend/error.log" -c "$TMP/backend/nginx.conf"
wait_port "$BPORT" "$LAST_PID" 10 || { cat "$TMP/backend/error.log" "$TMP/backend/stdout"; setup_fail "backend nginx did not start"; }
touch "$BLOG"

# ---- targets ------------------------------------------------------------------------------
# start_target NAME: renders its configuration, starts it (foreground process, in PIDS), waits for
# its port; sets TPID, TPORT, TADMIN (sidecar) and writes $TMP/NAME/meta.json.
start_target() {
  local t="$1" d="$TMP/$1" describe
  mkdir -p "$d"
  TPORT="$(free_port)"
  TADMIN=""
  case "$t" in
    sidecar)
      TADMIN="127.0.0.1:$(free_port)"
      SC_ADMIN="$TADMIN" SC_ROUTES="  - host: \"$AUTHORITY\"
    upstream: \"http://$AUTHORITY\"
    credential: api" sidecar_config "$TPORT" "$d/sidecar.yaml"
      start_bg "$d/log" "$SIDECAR_BIN" run --config "$d/sidecar.yaml"
      describe="${SIDECAR_BIN#"$REPO"/}, h2c on the plain listener, 1 worker, default limits (sidecar.yaml in the temp dir)"
      ;;
    nginx)
      {
        nginx_main "$d"
        cat <<EOF
    server_tokens off;
    upstream backend {
        server $AUTHORITY;
        keepalive 1024;
        keepalive_requests 1000000;
        keepalive_timeout 60s;
    }
    server {
        listen 127.0.0.1:$TPORT http2 backlog=4096;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$http_host;
            proxy_set_header Authorization "Bearer $TOKEN";
            proxy_max_temp_file_size 0;
        }
    }
}
EOF
      } >"$d/nginx.conf"
      start_bg "$d/log" "$NGINX" -p "$d" -e "$d/error.log" -c "$d/nginx.conf"
      describe="$("$NGINX" -v 2>&1 | sed 's/.*: //'), listen ... http2 (h2c), 1 worker, h2 defaults"
      ;;
    haproxy)
      cat >"$d/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn $HAPROXY_MAXCONN
$(haproxy_defaults)
frontend fe
    bind 127.0.0.1:$TPORT proto h2
    http-request set-header Authorization "Bearer $TOKEN"
    default_backend be
backend be
    server backend $AUTHORITY
EOF
      start_bg "$d/log" "$HAPROXY" -db -f "$d/haproxy.cfg"
      describe="HAProxy $("$HAPROXY" -v 2>&1 | awk 'NR == 1 {print $3}'), bind ... proto h2 (h2c), 1 thread, h2 defaults"
      ;;
  esac
  TPID="$LAST_PID"
  wait_port "$TPORT" "$TPID" 15 || { tail -20 "$d/log" "$d/error.log" 2>/dev/null || true; setup_fail "$t did not start"; }
  if [[ -n "$TADMIN" ]]; then wait_port "${TADMIN##*:}" "$TPID" 5 || setup_fail "$t: admin port did not open"; fi
  local got
  got="$(timeout -k 2 10 "$PY" "$ATTACKER" canary --once --target "127.0.0.1:$TPORT" --authority "$AUTHORITY" 2>&1 || true)"
  [[ "$got" = ok ]] || { tail -20 "$d/log" "$d/error.log" 2>/dev/null || true; setup_fail "$t: an h2c GET /canary did not get 200 ok: $got"; }
  python3 -c 'import json,sys; json.dump({"target": sys.argv[1], "port": int(sys.argv[2]), "pid": int(sys.argv[3]),
"describe": sys.argv[4]}, open(sys.argv[5], "w"))' "$t" "$TPORT" "$TPID" "$describe" "$d/meta.json"
  echo "$t: pid $TPID on 127.0.0.1:$TPORT — $describe"
}

# drop_pid PID: forget a finished child (so the exit trap never signals a reused PID).
drop_pid() { local p keep=(); for p in "${PIDS[@]}"; do [[ "$p" = "$1" ]] || keep+=("$p"); done; PIDS=("${keep[@]}"); }

# phase TARGET NAME: baseline (canary only) or attack NAME, with the canary and the watcher; then
# REST_SECONDS for the RSS after it, the backend's count and the sidecar's counters.
phase() {
  local t="$1" name="$2" d="$TMP/$1" secs="$ATTACK_SECONDS" apid="" wpid limit boff
  [[ "$name" = baseline ]] && secs="$BASELINE_SECONDS"
  limit=$((secs + 20))
  if ! kill -0 "$TPID" 2>/dev/null; then echo '{"died": true}' >"$d/$name.died.json"; echo "  $name: target is gone"; return 0; fi
  printf '  %-19s ... ' "$name"
  [[ -z "$TADMIN" ]] || "$PY" "$ATTACKER" metrics --admin "$TADMIN" --out "$d/$name.m0.json"
  boff="$(stat -c %s "$BLOG")"
  "$PY" "$ATTACKER" rss --pid "$TPID" --out "$d/$name.rss0.json"
  timeout -k 5 "$limit" "$PY" "$ATTACKER" watch --pid "$TPID" --seconds "$secs" --out "$d/$name.watch.json" &
  wpid=$!; PIDS+=("$wpid")
  if [[ "$name" != baseline ]]; then
    timeout -k 5 "$limit" "$PY" "$ATTACKER" "$name" --target "127.0.0.1:$TPORT" --authority "$AUTHORITY" \
      --seconds "$secs" --out "$d/$name.attack.json" >"$d/$name.attack.err" 2>&1 &
    apid=$!; PIDS+=("$apid")
  fi
  bgrun timeout -k 5 "$limit" "$PY" "$ATTACKER" canary --target "127.0.0.1:$TPORT" --authority "$AUTHORITY" \
    --seconds "$secs" --out "$d/$name.canary.json" || echo -n "(canary exited $?) "
  if [[ -n "$apid" ]]; then
    wait "$apid" || echo -n "(attacker exited $?: $(tail -c 300 "$d/$name.attack.err" | tr '\n' ' ')) "
    drop_pid "$apid"
  fi
  wait "$wpid" || true
  drop_pid "$wpid"
  bgrun timeout -k 5 $((REST_SECONDS + 10)) "$PY" "$ATTACKER" rest --pid "$TPID" --seconds "$REST_SECONDS" \
    --out "$d/$name.rest.json" || true
  "$PY" "$ATTACKER" backend --log "$BLOG" --from "$boff" --out "$d/$name.backend.json" || true
  [[ -z "$TADMIN" ]] || "$PY" "$ATTACKER" metrics --admin "$TADMIN" --out "$d/$name.m1.json" || true
  kill -0 "$TPID" 2>/dev/null || { echo '{"died": true}' >"$d/$name.died.json"; echo -n "TARGET DIED "; }
  echo "done"
}

echo "backend nginx 127.0.0.1:$BPORT; targets: $TARGETS; baseline ${BASELINE_SECONDS}s, then each attack ${ATTACK_SECONDS}s + ${REST_SECONDS}s rest: $ATTACKS"
for t in $TARGETS; do
  start_target "$t"
  phase "$t" baseline
  for a in $ATTACKS; do phase "$t" "$a"; done
  if kill -0 "$TPID" 2>/dev/null; then stop_pid "$TPID"; else echo "$t (pid $TPID) is no longer running:"; tail -5 "$TMP/$t/log" || true; fi
  drop_pid "$TPID"
done

rc=0
"$PY" "$ATTACKER" report --dir "$TMP" --targets "$TARGETS" --attacks "$ATTACKS" --md "$TMP/report.md" || rc=$?
exit "$rc"
