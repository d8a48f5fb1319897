#!/usr/bin/env bash
# backend_selftest.sh — self-test for backend.py (the recording test backend).
#
# Starts backend.py on an ephemeral 127.0.0.1 port with a JSON-lines log and
# exercises every endpoint DIRECTLY (no proxy) with curl (plus a few raw-socket
# python checks where exact bytes matter), then checks the log and that SIGTERM
# exits promptly. Prints "PASS name" / "FAIL name" lines and exits 1 on any failure.
#
# Run:   Tests/ProxyTests/Fixtures/backend_selftest.sh
# Needs: python3, curl, sha256sum. Loopback only; every step has a timeout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BACKEND="$HERE/backend.py"
TMP="$(mktemp -d /tmp/backend-selftest.XXXXXX)"
BPID=""
cleanup() {
  if [[ -n "$BPID" ]] && kill -0 "$BPID" 2>/dev/null; then kill "$BPID" 2>/dev/null || true; wait "$BPID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

FAILS=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: ${2:-}"; FAILS=$((FAILS + 1)); }
check() { # check NAME CONDITION-COMMAND...
  local name="$1"; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}
C() { curl -sS --max-time 30 "$@"; }
jget() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(eval("d"+sys.argv[1]))' "$1"; }

# ---- start backend ---------------------------------------------------------
LOG="$TMP/backend.log"
mkfifo "$TMP/out"
python3 "$BACKEND" --port 0 --log "$LOG" >"$TMP/out" 2>"$TMP/backend.err" &
BPID=$!
exec 3<"$TMP/out"
if ! read -r -t 10 word PORT <&3 || [[ "$word" != "PORT" ]]; then
  echo "backend did not print PORT line"; cat "$TMP/backend.err"; exit 1
fi
B="http://127.0.0.1:$PORT"
echo "backend pid $BPID port $PORT"

# ---- default endpoint -------------------------------------------------------
out="$(C -H 'X-Test-Case: Hello' -H 'x-lower: v' "$B/some/path?a=1&b=2")"
check default.method [ "$(jget '["method"]' <<<"$out")" = GET ]
check default.target [ "$(jget '["target"]' <<<"$out")" = "/some/path?a=1&b=2" ]
check default.header-case-order [ "$(jget '["headers"][-2:]' <<<"$out")" = "[['X-Test-Case', 'Hello'], ['x-lower', 'v']]" ]
check default.body-empty [ "$(jget '["body_sha256"]' <<<"$out")" = "$(printf '' | sha256sum | cut -d' ' -f1)" ]

# keep-alive: two requests in one curl invocation share one connection
out="$(C "$B/a" "$B/b" | python3 -c 'import sys,json; d=json.JSONDecoder(); s=sys.stdin.read(); a,i=d.raw_decode(s); b,_=d.raw_decode(s[i:].lstrip()); print(a["conn"], b["conn"])')"
read -r c1 c2 <<<"$out"
check keepalive.same-conn [ "$c1" = "$c2" ]
# Connection: close honoured (curl reports the connection closed -> new conn next time)
h="$(C -D - -o /dev/null -H 'Connection: close' "$B/x")"
check connection-close.response-header grep -qi '^Connection: close' <<<"$h"

# ---- request bodies ---------------------------------------------------------
head -c 3000000 /dev/urandom >"$TMP/up.bin"
want="$(sha256sum "$TMP/up.bin" | cut -d' ' -f1)"
out="$(C --data-binary @"$TMP/up.bin" -H 'Content-Type: application/octet-stream' "$B/echo")"
check body.cl.sha [ "$(jget '["body_sha256"]' <<<"$out")" = "$want" ]
check body.cl.len [ "$(jget '["body_len"]' <<<"$out")" = 3000000 ]
out="$(C --data-binary @"$TMP/up.bin" -H 'Transfer-Encoding: chunked' "$B/upload")"
check upload.chunked.sha [ "$(jget '["body_sha256"]' <<<"$out")" = "$want" ]
out="$(C -T "$TMP/up.bin" -X POST "$B/upload")"
check upload.cl.sha [ "$(jget '["body_sha256"]' <<<"$out")" = "$want" ]

# chunked with extensions + trailers, raw bytes
out="$(python3 - "$PORT" <<'EOF'
import socket, sys, json
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
          b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n")
buf = b""
while b"}" not in buf:
    d = s.recv(65536)
    if not d: break
    buf += d
print(json.loads(buf.split(b"\r\n\r\n", 1)[1])["body_sha256"])
EOF
)"
check body.chunked-ext-trailer [ "$out" = "$(printf 'hello world' | sha256sum | cut -d' ' -f1)" ]

# ---- downloads --------------------------------------------------------------
for size in 0 1 65536 5000001; do
  want="$(C "$B/download-sha?size=$size")"
  for mode in cl chunked close; do
    got="$(C "$B/download?size=$size&mode=$mode" | sha256sum | cut -d' ' -f1)"
    check "download.$mode.$size" [ "$got" = "$want" ]
  done
done
h="$(C -D - -o /dev/null "$B/download?size=10&mode=chunked")"
check download.chunked.header grep -qi '^Transfer-Encoding: chunked' <<<"$h"
h="$(C -D - -o /dev/null "$B/download?size=10&mode=close")"
check download.close.no-cl bash -c '! grep -qiE "^(content-length|transfer-encoding):" <<<"$1"' _ "$h"
# speed: 1 GiB content-length download must exceed 500 MB/s
t0=$(date +%s.%N)
n="$(C "$B/download?size=1073741824&mode=cl" -o /dev/null -w '%{size_download}')"
t1=$(date +%s.%N)
rate="$(python3 -c "print(int(1073741824/($t1-$t0)/1e6))")"
echo "     1 GiB download: $rate MB/s"
check download.speed [ "$n" = 1073741824 -a "$rate" -gt 500 ]
t0=$(date +%s.%N)
n="$(C "$B/download?size=1073741824&mode=chunked" -o /dev/null -w '%{size_download}')"
t1=$(date +%s.%N)
rate="$(python3 -c "print(int(1073741824/($t1-$t0)/1e6))")"
echo "     1 GiB chunked download: $rate MB/s"
check download.chunked.speed [ "$n" = 1073741824 -a "$rate" -gt 500 ]
sha1g="$(C --max-time 60 "$B/download-sha?size=1073741824")"
check download-sha.1g [ ${#sha1g} = 64 ]

# ---- status -----------------------------------------------------------------
check status.404 [ "$(C -o /dev/null -w '%{http_code}' "$B/status/404")" = 404 ]
check status.503 [ "$(C -o /dev/null -w '%{http_code}' "$B/status/503")" = 503 ]
check status.204.nobody [ "$(C -o "$TMP/s204" -w '%{http_code}:%{size_download}' "$B/status/204")" = "204:0" ]
check status.304.nobody [ "$(C -o "$TMP/s304" -w '%{http_code}:%{size_download}' "$B/status/304")" = "304:0" ]

# ---- failure endpoints -----------------------------------------------------
rc=0; C -o "$TMP/trunc" "$B/truncate?size=100000" 2>/dev/null || rc=$?
check truncate.curl-error [ "$rc" = 18 ]
check truncate.half [ "$(stat -c %s "$TMP/trunc")" = 50000 ]

raw() { python3 - "$PORT" "$1" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % sys.argv[2]).encode())
buf = b""; deadline = time.time() + 10
while time.time() < deadline:
    d = s.recv(65536)
    if not d: break
    buf += d
sys.stdout.write(repr(buf))
EOF
}
check malformed.bytes [ "$(raw /malformed)" = "b'HTTP/1.1 200 OK\\r\\nContent-Length: 5\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\nhello'" ]
check garbage.bytes [ "$(raw /garbage)" = "b'NOT HTTP AT ALL\\r\\n\\r\\n'" ]
nocl="$(raw /nocl)"
check nocl.no-length bash -c '[[ "$1" != *Content-Length* && "$1" != *Transfer-Encoding* && "$1" == *"close-delimited body"* ]]' _ "$nocl"

t0=$(date +%s%N); C -o /dev/null "$B/slow?ms=300"; t1=$(date +%s%N)
check slow.300ms [ $(((t1 - t0) / 1000000)) -ge 300 ]
h="$(C -D - -o /dev/null "$B/close-after")"
check close-after.header grep -qi '^Connection: close' <<<"$h"
ca="$(raw /close-after)"
check close-after.closes bash -c '[[ "$1" == *"\"conn\""* ]]' _ "$ca"

# /continue: 100 Continue comes first
v="$(C -v -H 'Expect: 100-continue' --data-binary @"$TMP/up.bin" "$B/continue" 2>&1)"
check continue.100 grep -q '< HTTP/1.1 100 Continue' <<<"$v"
check continue.sha grep -q "$(sha256sum "$TMP/up.bin" | cut -d' ' -f1)" <<<"$v"

# bad request -> 400 + close
check bad-request.400 bash -c '[[ "$1" == *"HTTP/1.1 400 Bad Request"* && "$1" == *"Connection: close"* ]]' _ "$(python3 - "$PORT" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"GET /x HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
buf = b""
while True:
    d = s.recv(65536)
    if not d: break
    buf += d
print(repr(buf))
EOF
)"

# ---- log --------------------------------------------------------------------
sleep 0.3
check log.valid-and-complete python3 - "$LOG" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
kinds = {e["event"] for e in ev}
assert {"connect", "request", "close"} <= kinds, kinds
conns = {e["conn"] for e in ev if e["event"] == "connect"}
closes = {e["conn"]: e["bytes"] for e in ev if e["event"] == "close"}
assert conns == set(closes), (conns - set(closes))
# the first request: exact header order/case from the raw curl request
r = next(e for e in ev if e["event"] == "request")
assert r["target"] == "/some/path?a=1&b=2" and r["version"] == "HTTP/1.1", r
names = [h[0] for h in r["headers"]]
assert names[0] == "Host" and names[-2:] == ["X-Test-Case", "x-lower"], names
# bytes received >= request bytes for the 3 MB upload connections
ups = [e for e in ev if e["event"] == "request" and e["body_len"] == 3000000]
assert len(ups) >= 3
for u in ups:
    assert closes[u["conn"]] > 3000000, closes[u["conn"]]
EOF

# ---- SIGTERM ----------------------------------------------------------------
# hold an idle keep-alive connection open, then SIGTERM must still exit promptly
python3 -c "import socket,time; s=socket.create_connection(('127.0.0.1',$PORT)); time.sleep(5)" &
holder=$!
sleep 0.2
t0=$(date +%s%N); kill -TERM "$BPID"
for _ in $(seq 1 50); do kill -0 "$BPID" 2>/dev/null || break; sleep 0.05; done
t1=$(date +%s%N)
if kill -0 "$BPID" 2>/dev/null; then fail sigterm "still running"; else pass "sigterm ($(((t1 - t0) / 1000000)) ms)"; fi
wait "$BPID" 2>/dev/null || true
BPID=""
kill "$holder" 2>/dev/null || true; wait "$holder" 2>/dev/null || true

echo
if [[ $FAILS -eq 0 ]]; then echo "backend self-test: ALL PASSED"; else echo "backend self-test: $FAILS FAILED"; exit 1; fi
