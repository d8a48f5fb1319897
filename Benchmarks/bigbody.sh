#!/usr/bin/env bash
# bigbody.sh — 1 GiB streaming acceptance check for token-sidecar.
#
# Starts Tests/ProxyTests/Fixtures/backend.py and token-sidecar (route api.test ->
# backend, static token), then through the proxy (absolute-form requests, python
# client Benchmarks/proxyclient.py):
#   1) SIZE-byte download, Content-Length     2) SIZE-byte download, chunked
#   3) SIZE-byte upload,   Content-Length     4) SIZE-byte upload,   chunked
# Downloads: client-side SHA-256 vs backend /download-sha?size=SIZE (fetched directly).
# Uploads:   SHA-256 of the generated stream as sent vs backend's body_sha256.
# Also checks (backend log) that every proxied request carried exactly one
# "Authorization: Bearer <token>". Finally reads the proxy's peak RSS (VmHWM).
# Exit 1 if any hash/status/header check fails or peak RSS >= RSS_LIMIT_MIB.
#
# Run:   Benchmarks/bigbody.sh
# Env:   SIZE=bytes (default 1073741824)   TRANSFER_TIMEOUT=sec per transfer (120)
#        SIDECAR_BIN (default: the repository's .build/release/token-sidecar, else
#        token-sidecar on PATH)
#        RSS_LIMIT_MIB (64)   KEEP_TMP=1 keeps the temp dir (logs, config)
# Test the script without the real binary: SIDECAR_BIN=Benchmarks/standin-sidecar.py
# Loopback only; every wait and transfer is bounded.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BACKEND="$ROOT/Tests/ProxyTests/Fixtures/backend.py"
CLIENT="$HERE/proxyclient.py"
SIZE="${SIZE:-1073741824}"
TRANSFER_TIMEOUT="${TRANSFER_TIMEOUT:-120}"
RSS_LIMIT_MIB="${RSS_LIMIT_MIB:-64}"
TOKEN="bigbody-token-$$"

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh" bigbody
SIDECAR_BIN="$(find_sidecar_bin)"
if [[ ! -x "$SIDECAR_BIN" ]]; then
  echo "bigbody.sh: sidecar binary not found or not executable: $SIDECAR_BIN" >&2
  echo "  build it (swift build -c release) or set SIDECAR_BIN." >&2
  echo "  To test this script alone: SIDECAR_BIN=$HERE/standin-sidecar.py $0" >&2
  exit 2
fi

# ---- backend ---------------------------------------------------------------
mkfifo "$TMP/backend.out"
python3 "$BACKEND" --port 0 --log "$TMP/backend.log" >"$TMP/backend.out" 2>"$TMP/backend.err" &
PIDS+=($!)
exec 4<"$TMP/backend.out"
read -r -t 10 word BPORT <&4 || { echo "backend failed to start"; cat "$TMP/backend.err"; exit 1; }
[[ "$word" = PORT ]] || { echo "backend: unexpected output '$word'"; exit 1; }

# ---- sidecar ---------------------------------------------------------------
SPORT="$(free_port)"
cat >"$TMP/token-sidecar.yaml" <<EOF
listen: "127.0.0.1:$SPORT"
admin: "127.0.0.1:0"
otherHosts: deny
credentials:
  api:
    type: static
    token: "$TOKEN"
routes:
  - host: "api.test"
    upstream: "http://127.0.0.1:$BPORT"
    credential: api
EOF
"$SIDECAR_BIN" run --config "$TMP/token-sidecar.yaml" >"$TMP/sidecar.out" 2>&1 &
SPID=$!
PIDS+=("$SPID")
if ! wait_port "$SPORT" "$SPID" 15; then
  echo "sidecar did not start listening on 127.0.0.1:$SPORT"; tail -20 "$TMP/sidecar.out"; exit 1
fi
echo "backend 127.0.0.1:$BPORT  sidecar pid $SPID 127.0.0.1:$SPORT  size $SIZE bytes"

# ---- transfers -------------------------------------------------------------
FAILS=0
want_dl="$(curl -sS --max-time "$TRANSFER_TIMEOUT" "http://127.0.0.1:$BPORT/download-sha?size=$SIZE")"
run_client() { # run_client OUTFILE args...
  local out="$1"; shift
  bgrun timeout -k 5 "$((TRANSFER_TIMEOUT + 10))" python3 "$CLIENT" "$@" --proxy "127.0.0.1:$SPORT" \
    --timeout "$TRANSFER_TIMEOUT" >"$out" 2>&1 || true
}
field() { python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1]))
except Exception: print(""); sys.exit(0)
for k in sys.argv[2].split("."): d=d.get(k,"") if isinstance(d,dict) else ""
print(d)' "$1" "$2"; }

report() { # report NAME FILE EXPECTED_SHA GOT_SHA BYTES_FIELD
  local name="$1" f="$2" want="$3" got="$4" st
  st="$(field "$f" status)"
  if [[ "$st" = 200 && -n "$got" && "$got" = "$want" && "$(field "$f" "$5")" = "$SIZE" ]]; then
    printf '%-24s OK    %8s MB/s  %7ss  sha256 %s\n' "$name" "$(field "$f" mb_per_s)" "$(field "$f" seconds)" "${got:0:16}…"
  else
    printf '%-24s FAIL  status=%s want=%s got=%s\n' "$name" "$st" "${want:0:16}" "${got:0:16}"
    echo "    client: $(head -c 600 "$f")"
    FAILS=$((FAILS + 1))
  fi
}

run_client "$TMP/dl-cl.json" download --url "http://api.test/download?size=$SIZE&mode=cl"
report "download content-length" "$TMP/dl-cl.json" "$want_dl" "$(field "$TMP/dl-cl.json" sha256)" bytes
run_client "$TMP/dl-ch.json" download --url "http://api.test/download?size=$SIZE&mode=chunked"
report "download chunked" "$TMP/dl-ch.json" "$want_dl" "$(field "$TMP/dl-ch.json" sha256)" bytes
run_client "$TMP/up-cl.json" upload --url "http://api.test/upload" --size "$SIZE" --mode cl
report "upload content-length" "$TMP/up-cl.json" "$(field "$TMP/up-cl.json" sha256)" "$(field "$TMP/up-cl.json" response.body_sha256)" response.body_len
run_client "$TMP/up-ch.json" upload --url "http://api.test/upload" --size "$SIZE" --mode chunked
report "upload chunked" "$TMP/up-ch.json" "$(field "$TMP/up-ch.json" sha256)" "$(field "$TMP/up-ch.json" response.body_sha256)" response.body_len

# ---- injected header check (backend log) ------------------------------------
if python3 - "$TMP/backend.log" "$TOKEN" <<'EOF'; then echo "auth header              OK    exactly one 'Authorization: Bearer <token>' on every proxied request"; else FAILS=$((FAILS + 1)); fi
import json, sys
reqs = [e for e in map(json.loads, open(sys.argv[1])) if e["event"] == "request"
        and e["target"].split("?")[0].endswith(("/download", "/upload"))]
ok = len(reqs) >= 4
for r in reqs:
    auth = [v for k, v in r["headers"] if k.lower() == "authorization"]
    if auth != ["Bearer " + sys.argv[2]]:
        ok = False
        print("auth header              FAIL  %s %s -> %r" % (r["method"], r["target"], auth))
if len(reqs) < 4:
    print("auth header              FAIL  only %d proxied requests reached the backend" % len(reqs))
sys.exit(0 if ok else 1)
EOF

# ---- peak RSS ----------------------------------------------------------------
if [[ -r "/proc/$SPID/status" ]]; then
  hwm_kb="$(awk '/^VmHWM:/ {print $2}' "/proc/$SPID/status")"
  rss_mib="$(python3 -c "print(f'{$hwm_kb/1024:.1f}')")"
  echo "peak RSS: $rss_mib MiB"
  if (( hwm_kb >= RSS_LIMIT_MIB * 1024 )); then
    echo "FAIL: peak RSS $rss_mib MiB >= limit $RSS_LIMIT_MIB MiB"; FAILS=$((FAILS + 1))
  fi
else
  echo "FAIL: sidecar process $SPID is gone (crashed?); output:"; tail -20 "$TMP/sidecar.out"
  FAILS=$((FAILS + 1))
fi

if [[ $FAILS -ne 0 ]]; then echo "bigbody: $FAILS check(s) FAILED"; exit 1; fi
echo "bigbody: all checks passed"
