#!/usr/bin/env bash
# soak.sh — mixed load for SOAK_SECONDS; does token-sidecar stay flat and correct?
#
# Starts Tests/ProxyTests/Fixtures/backend.py (the recording backend), the token server
# Tests/TokenManagerTests/Fixtures/token_server.py (expires_in EXPIRES_IN = 25 s, so with the
# default refreshAt 80% the proxy fetches a token every ~20 s) and token-sidecar with two routes:
#   api.test   -> backend, static token "abc"
#   oauth.test -> backend, oauth2 client-credentials token from the token server
# Then Benchmarks/soak.py load runs SOAK_RATE operations/s (SOAK_WORKERS threads) for
# SOAK_SECONDS: keep-alive and new connections; small GETs; 1 MiB downloads and uploads with
# Content-Length and chunked framing (hashes checked); 10 KiB uploads; backend 401s (api.test
# only: a 401 to the oauth2 token would trigger a refetch and spoil the token count) and 5xx;
# client aborts (FIN or RST) mid-response. Meanwhile soak.py sample reads the proxy's VmRSS and
# open descriptors every 5 s.
#
# Verdict (exit 1 on any):
#   - an error the load did not provoke (unexpected status, connection failure, timeout, body
#     hash mismatch, wrong Authorization in the backend's echo, keep-alive connection closed by
#     the proxy before an answer)
#   - a request at the backend without exactly its route's token, or with an expired oauth2 token
#   - RSS or descriptors not flat: least-squares slope over the samples after the warm-up (the
#     first 20% of the run) above RSS_SLOPE_LIMIT KiB/min (256) or FD_SLOPE_LIMIT fds/min (2),
#     AND more than 3 standard errors above zero (a burst near the end must not fail a run, a
#     steady climb must; 256 KiB/min is 2.5 MiB over a 10-minute run, ~200 bytes per operation)
#   - descriptors or client connections not back to the idle count within 15 s after the load
#   - token fetches not within +-TOKEN_TOLERANCE (1) of 1 + (time since the first fetch) / 20 s
#   - the proxy died
#
# Run:   Benchmarks/soak.sh            (SOAK_SECONDS=600 by default)
# Env:   SOAK_SECONDS (600)  SOAK_RATE (20 ops/s)  SOAK_WORKERS (6)  EXPIRES_IN (25)
#        RSS_SLOPE_LIMIT (256)  FD_SLOPE_LIMIT (2)  TOKEN_TOLERANCE (1)
#        BIN or SIDECAR_BIN (default: the repository's .build/release/token-sidecar)
#        KEEP_TMP=1 keeps the temp dir (logs, samples, configs)
# CPU: the load is ~20 ops/s with ~6 MiB/s of bodies each way; the proxy uses a few % of a core.
# Loopback only; every step is bounded (`timeout` around each process that could hang).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BACKEND="$ROOT/Tests/ProxyTests/Fixtures/backend.py"
TOKEN_SERVER="$ROOT/Tests/TokenManagerTests/Fixtures/token_server.py"
SOAK="$HERE/soak.py"
SOAK_SECONDS="${SOAK_SECONDS:-600}"
SOAK_RATE="${SOAK_RATE:-20}"
SOAK_WORKERS="${SOAK_WORKERS:-6}"
EXPIRES_IN="${EXPIRES_IN:-25}"
RSS_SLOPE_LIMIT="${RSS_SLOPE_LIMIT:-256}"
FD_SLOPE_LIMIT="${FD_SLOPE_LIMIT:-2}"
TOKEN_TOLERANCE="${TOKEN_TOLERANCE:-1}"
SAMPLE_INTERVAL=5
[[ -n "${BIN:-}" ]] && SIDECAR_BIN="$BIN"

# shellcheck source=Benchmarks/common.sh
source "$HERE/common.sh" soak
SIDECAR_BIN="$(find_sidecar_bin)"
[[ -x "$SIDECAR_BIN" ]] || { echo "soak.sh: sidecar binary not found: $SIDECAR_BIN (set BIN)" >&2; exit 2; }

# start_py NAME SCRIPT ARGS...: a fixture that prints "PORT n" first; sets PORT.
start_py() {
  local name="$1" word
  shift
  mkfifo "$TMP/$name.fifo"
  python3 "$@" >"$TMP/$name.fifo" 2>"$TMP/$name.err" &
  PIDS+=($!)
  exec {fd}<"$TMP/$name.fifo"
  read -r -t 10 word PORT <&"$fd" || { echo "$name failed to start:"; cat "$TMP/$name.err"; exit 2; }
  [[ "$word" = PORT ]] || { echo "$name: unexpected output '$word'"; exit 2; }
  # keep reading its stdout in the background, so a chatty fixture never blocks on the fifo
  cat <&"$fd" >/dev/null &
  PIDS+=($!)
}

start_py backend "$BACKEND" --port 0 --log "$TMP/backend.log"
BPORT="$PORT"
echo "{\"expires_in\": $EXPIRES_IN}" >"$TMP/token-control.json"
start_py token "$TOKEN_SERVER" --log "$TMP/token.log" --control "$TMP/token-control.json"
TPORT="$PORT"

SPORT="$(free_port)"
APORT="$(free_port)"
# Access log on (the default); refreshAt 80% (the default): a new token every 0.8 x $EXPIRES_IN s.
SC_ADMIN="127.0.0.1:$APORT" SC_ACCESS_LOG=true SC_CREDENTIALS="  idp:
    type: oauth2
    tokenUrl: \"http://127.0.0.1:$TPORT/token\"
    clientId: \"soak\"
    secret: \"soak-secret\"" SC_ROUTES="  - host: \"oauth.test\"
    upstream: \"http://127.0.0.1:$BPORT\"
    credential: idp" sidecar_config "$SPORT" "$TMP/sidecar.yaml"
: >"$TMP/token.log"
start_bg "$TMP/sidecar.log" "$SIDECAR_BIN" run --config "$TMP/sidecar.yaml"
SPID="$LAST_PID"
wait_port "$SPORT" "$SPID" 15 || { echo "sidecar did not start:"; tail -20 "$TMP/sidecar.log"; exit 2; }
# Ready = listening and the oauth2 token fetched. urllib sends Connection: close, so the admin
# server closes first and no lingering descriptor is left behind for the idle count below.
ready=0
for ((i = 0; i < 50; i++)); do
  if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
       "http://127.0.0.1:$APORT/readyz" 2>/dev/null; then ready=1; break; fi
  sleep 0.2
done
[[ $ready = 1 ]] || { echo "sidecar not ready within 10 s:"; tail -20 "$TMP/sidecar.log"; exit 2; }
FD0="$(find "/proc/$SPID/fd" -mindepth 1 -maxdepth 1 | wc -l)"
echo "backend.py 127.0.0.1:$BPORT  token server 127.0.0.1:$TPORT (expires_in $EXPIRES_IN s)"
echo "token-sidecar pid $SPID 127.0.0.1:$SPORT (admin $APORT, $FD0 fds idle)  ${SIDECAR_BIN#"$REPO"/}"
echo "load: ${SOAK_SECONDS}s at ~$SOAK_RATE ops/s with $SOAK_WORKERS workers; samples every ${SAMPLE_INTERVAL}s"

timeout -k 5 $((SOAK_SECONDS + 30)) python3 "$SOAK" sample --pid "$SPID" --admin "127.0.0.1:$APORT" \
  --seconds "$SOAK_SECONDS" --interval "$SAMPLE_INTERVAL" --out "$TMP/samples.json" &
SAMPLER=$!
PIDS+=("$SAMPLER")
rc=0
bgrun timeout -k 5 $((SOAK_SECONDS + 90)) python3 "$SOAK" load --proxy "127.0.0.1:$SPORT" \
  --backend "127.0.0.1:$BPORT" --seconds "$SOAK_SECONDS" --rate "$SOAK_RATE" --workers "$SOAK_WORKERS" \
  --out "$TMP/load.json" || rc=$?
[[ $rc = 0 ]] || { echo "load generator failed (exit $rc):"; exit 1; }
T_END="$(date +%s.%N)"
wait "$SAMPLER" || true
if ! kill -0 "$SPID" 2>/dev/null; then echo "token-sidecar died:"; tail -20 "$TMP/sidecar.log"; exit 1; fi
bgrun timeout -k 5 30 python3 "$SOAK" settle --pid "$SPID" --admin "127.0.0.1:$APORT" --fd0 "$FD0" \
  --seconds 15 --out "$TMP/settle.json"

# warning-or-worse lines the proxy logged (informational: the verdict is the report's)
python3 - "$TMP/sidecar.log" <<'EOF'
import collections, json, sys
c = collections.Counter()
for line in open(sys.argv[1], errors="replace"):
    try:
        e = json.loads(line)
    except ValueError:
        c["(non-JSON) " + line.strip()[:100]] += 1
        continue
    if e.get("level") in ("warning", "error", "critical"):
        c["%s: %s" % (e["level"], e.get("msg"))] += 1
print("proxy log, warning or worse: " + ("; ".join("%s x%d" % kv for kv in c.most_common(8)) if c else "none"))
EOF
python3 "$SOAK" report --dir "$TMP" --seconds "$SOAK_SECONDS" --interval "$SAMPLE_INTERVAL" \
  --expires-in "$EXPIRES_IN" --t-end "$T_END" --token-tolerance "$TOKEN_TOLERANCE" \
  --rss-slope-limit "$RSS_SLOPE_LIMIT" --fd-slope-limit "$FD_SLOPE_LIMIT" || rc=$?
exit "$rc"
