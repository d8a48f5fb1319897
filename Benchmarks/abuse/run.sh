#!/usr/bin/env bash
# abuse/run.sh — does an abusive client on the proxy port hurt everybody else?
#
# Starts nginx (backend, 1 worker) and token-sidecar (static token "abc", one route
# api.test -> nginx, default limits and timeouts). A CANARY (attack.py canary) sends one small
# GET http://api.test/canary through the proxy every 100 ms, on a new connection each time,
# with a 2 s overall timeout, and records latency and failures:
#   baseline    BASELINE_SECONDS with no abuse, then each scenario for ABUSE_SECONDS:
#   slowloris   SLOW_CONNS connections dripping a request head (one header line every 5 s)
#               — timeouts.clientHeader (10 s) should end each with 408
#   slowpost    SLOW_CONNS connections with a complete POST head (Content-Length 1 MiB),
#               dripping 8 body bytes every 5 s (bodyIdle is 60 s: they count as progress)
#   slowread    SLOW_CONNS connections with a 4 KiB SO_RCVBUF asking for a 64 MiB file and
#               reading 1 byte per second
#   churn       CHURN_TOTAL (10,000) connections opened at an even rate and dropped at once
#               (FIN, RST, or RST after a partial head)
#   bigheaders  4 connections at a time, each a GET with 100 header fields of 8 KiB
#               (the proxy's limits are 64 KiB / 100 fields: it should answer 431 quickly)
# All attackers share the canary's upstream pool (maxConnectionsPerUpstream, default 256).
# Between scenarios the attackers' sockets are closed and the script waits (bounded) until the
# proxy holds no client and no leased upstream connection, so scenarios do not bleed into
# each other (and a proxy that never lets go is reported).
#
# Prints one row per scenario: canary count, p50, p99 (successful canaries), failures,
# p99 / baseline p99, and PASS only when p99 < 2 x baseline p99 and there was no canary failure;
# then what the proxy did to the attackers (its answers, closes, RSS and descriptors).
# Exit 1 when any scenario FAILs (or the proxy died), 2 on a setup problem.
#
# Run:   Benchmarks/abuse/run.sh          (about 3.5 min with the defaults)
# Env:   ABUSE_SECONDS (30)  BASELINE_SECONDS (10)  SLOW_CONNS (1000)  CHURN_TOTAL (10000)  REST_SECONDS (5)
#        SCENARIOS ("slowloris slowpost slowread churn bigheaders")
#        BIN or SIDECAR_BIN (default: the repository's .build/release/token-sidecar)
#        KEEP_TMP=1 keeps the temp dir (configs, logs, per-phase JSON)
# Loopback only; every phase is bounded by its own deadline and a `timeout` around it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ATTACK="$HERE/attack.py"
ABUSE_SECONDS="${ABUSE_SECONDS:-30}"
BASELINE_SECONDS="${BASELINE_SECONDS:-10}"
SLOW_CONNS="${SLOW_CONNS:-1000}"
CHURN_TOTAL="${CHURN_TOTAL:-10000}"
SCENARIOS="${SCENARIOS:-slowloris slowpost slowread churn bigheaders}"
SETTLE_SECONDS="${SETTLE_SECONDS:-15}"
# RSS is read again this long after the proxy settled (freed memory goes back to the system later).
REST_SECONDS="${REST_SECONDS:-5}"
[[ -n "${BIN:-}" ]] && SIDECAR_BIN="$BIN"

# shellcheck source=Benchmarks/common.sh disable=SC1091
source "$HERE/../common.sh" abuse
SIDECAR_BIN="$(find_sidecar_bin)"
if [[ ! -x "$SIDECAR_BIN" ]]; then
  echo "abuse/run.sh: sidecar binary not found: $SIDECAR_BIN (set BIN)" >&2; exit 2
fi
[[ -x "$NGINX" ]] || { echo "abuse/run.sh: nginx not found at $NGINX (apt-get install nginx-light)" >&2; exit 2; }
# the attackers hold ~1000 sockets each; the proxy itself raises its own limit
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# ---- backend: nginx (BPORT) -----------------------------------------------------------
# shellcheck source=Benchmarks/abuse/backend.sh disable=SC1091
source "$HERE/backend.sh"

# ---- token-sidecar ------------------------------------------------------------------
SPORT="$(free_port)"
APORT="$(free_port)"
# Default limits and timeouts on purpose (clientHeader 10s, idle 60s, bodyIdle 60s,
# maxConnectionsPerUpstream 256, maxClientConnections from the descriptor limit), access log on.
SC_ADMIN="127.0.0.1:$APORT" SC_ACCESS_LOG=true sidecar_config "$SPORT" "$TMP/sidecar.yaml"
start_bg "$TMP/sidecar.log" "$SIDECAR_BIN" run --config "$TMP/sidecar.yaml"
SPID="$LAST_PID"
wait_port "$SPORT" "$SPID" 15 || { echo "sidecar did not start:"; tail -20 "$TMP/sidecar.log"; exit 2; }
wait_port "$APORT" "$SPID" 5 || { echo "sidecar admin did not start:"; tail -20 "$TMP/sidecar.log"; exit 2; }
# Descriptors of the idle proxy (before any client): after each phase we wait until it is back
# there (plus its pooled backend connections), because the proxy keeps a closed client's
# descriptor during its lingering close, and that must not spill into the next phase.
FD0="$(find "/proc/$SPID/fd" -mindepth 1 -maxdepth 1 | wc -l)"
got="$(curl -sS --max-time 5 -x "http://127.0.0.1:$SPORT" http://api.test/canary || true)"
[[ "$got" = ok ]] || { echo "proxy -> backend does not work (got '$got'):"; tail -20 "$TMP/sidecar.log"; exit 2; }
echo "nginx 127.0.0.1:$BPORT  token-sidecar pid $SPID 127.0.0.1:$SPORT (admin $APORT)  $SIDECAR_BIN"
echo "baseline ${BASELINE_SECONDS}s, then each scenario ${ABUSE_SECONDS}s: $SCENARIOS"

P="127.0.0.1:$SPORT"
A="127.0.0.1:$APORT"
py() { bgrun timeout -k 5 "$1" python3 "$ATTACK" "${@:2}"; }
# drop_pid PID: forget a finished child (so the exit trap never signals a reused PID).
drop_pid() { local p keep=(); for p in "${PIDS[@]}"; do [[ "$p" = "$1" ]] || keep+=("$p"); done; PIDS=("${keep[@]}"); }

# phase NAME [ATTACK-SUBCOMMAND ARGS...]: attacker (if any) + watcher in the background, canary
# in the foreground, all for the phase's seconds; then wait for the proxy to settle.
phase() {
  local name="$1" secs="$ABUSE_SECONDS" apid="" wpid limit
  shift
  [[ "$name" = baseline ]] && secs="$BASELINE_SECONDS"
  limit=$((${secs%.*} + 30))
  kill -0 "$SPID" 2>/dev/null || { echo "proxy is gone before $name"; return 0; }
  printf '%-11s ... ' "$name"
  python3 "$ATTACK" metrics --admin "$A" --out "$TMP/$name.m0.json" || echo '{}' >"$TMP/$name.m0.json"
  wc -c <"$TMP/sidecar.log" >"$TMP/$name.log0"
  timeout -k 5 "$limit" python3 "$ATTACK" watch --admin "$A" --pid "$SPID" --seconds "$secs" \
    --out "$TMP/$name.watch.json" &
  wpid=$!; PIDS+=("$wpid")
  if [[ $# -gt 0 ]]; then
    timeout -k 5 "$limit" python3 "$ATTACK" "$@" --proxy "$P" --seconds "$secs" \
      --out "$TMP/$name.attack.json" >"$TMP/$name.attack.err" 2>&1 &
    apid=$!; PIDS+=("$apid")
  fi
  py "$limit" canary --proxy "$P" --seconds "$secs" --out "$TMP/$name.canary.json" || echo "canary exited $?"
  [[ -z "$apid" ]] || wait "$apid" || echo "attacker exited $? ($(tail -c 300 "$TMP/$name.attack.err"))"
  wait "$wpid" || true
  drop_pid "$wpid"; [[ -z "$apid" ]] || drop_pid "$apid"
  if kill -0 "$SPID" 2>/dev/null; then
    py $((SETTLE_SECONDS + REST_SECONDS + 10)) settle --admin "$A" --pid "$SPID" --seconds "$SETTLE_SECONDS" \
      --max-fds $((FD0 + 2)) --rest "$REST_SECONDS" --out "$TMP/$name.settle.json" || true
    python3 "$ATTACK" metrics --admin "$A" --out "$TMP/$name.m1.json" || echo '{}' >"$TMP/$name.m1.json"
  else
    echo '{"died": true}' >"$TMP/$name.settle.json"
  fi
  wc -c <"$TMP/sidecar.log" >"$TMP/$name.log1"
  echo "done"
}

phase baseline
for s in $SCENARIOS; do
  case "$s" in
    slowloris)  phase slowloris slowloris --conns "$SLOW_CONNS" --interval 5 ;;
    slowpost)   phase slowpost slowpost --conns "$SLOW_CONNS" --interval 5 --drip 8 ;;
    slowread)   phase slowread slowread --conns "$SLOW_CONNS" --interval 1 --drip 1 --rcvbuf 4096 --rate "${SLOWREAD_RATE:-500}" ;;
    churn)      phase churn churn --total "$CHURN_TOTAL" ;;
    bigheaders) phase bigheaders bigheaders --conns 4 --rate 50 --fields 100 --field-size 8192 ;;
    *) echo "unknown scenario $s" >&2; exit 2 ;;
  esac
done

rc=0
python3 "$HERE/report.py" "$TMP" "$SCENARIOS" "$TMP/sidecar.log" || rc=$?
kill -0 "$SPID" 2>/dev/null || { echo "token-sidecar (pid $SPID) is no longer running:"; tail -5 "$TMP/sidecar.log"; rc=1; }
exit "$rc"
