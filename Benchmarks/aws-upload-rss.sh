#!/usr/bin/env bash
# aws-upload-rss.sh — the sidecar's peak RSS while boto3 uploads one SIZE-byte object (1 GiB by
# default) with S3 PutObject through it, re-signed: botocore's default upload over HTTPS
# (`aws-chunked` with a CRC32 trailer, x-amz-content-sha256 STREAMING-UNSIGNED-PAYLOAD-TRAILER),
# so the sidecar signs the head and streams the body untouched. The app signs with placeholder
# keys (boto3 from .build-aws, `make aws-venv`), through HTTPS_PROXY with the sidecar's
# interception CA; the upstream is a TLS sink (Benchmarks/s3_sink.py) that reads and discards the
# body and logs the key id it was signed with. Prints the bytes the sink read, the key it saw,
# the elapsed time and the sidecar's peak RSS (VmHWM); exit 1 when a check fails or the peak is
# RSS_LIMIT_MIB (64) or more.
#
#   make release aws-venv && bash Benchmarks/aws-upload-rss.sh        # SIZE=bytes to change it
#
# Loopback only; the upload is bounded by TRANSFER_TIMEOUT (300 s).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${SIZE:-1073741824}
RSS_LIMIT_MIB=${RSS_LIMIT_MIB:-64}
TRANSFER_TIMEOUT=${TRANSFER_TIMEOUT:-300}
PYTHON=${AWS_PYTHON:-.build-aws/bin/python3}
BIN=${SIDECAR_BIN:-.build/release/token-sidecar}
[ -x "$BIN" ] || { echo "make release first"; exit 2; }
[ -x "$PYTHON" ] || { echo "make aws-venv first"; exit 2; }
RUN=$(mktemp -d /tmp/aws-upload-rss-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$RUN"; }
trap cleanup EXIT


# A CA and a certificate for localhost (the sink's).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=bench CA" \
    -keyout "$RUN/ca.key" -out "$RUN/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -keyout "$RUN/sink.key" -out "$RUN/sink.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost\n' > "$RUN/ext"
openssl x509 -req -in "$RUN/sink.csr" -CA "$RUN/ca.pem" -CAkey "$RUN/ca.key" -CAcreateserial -days 1 \
    -extfile "$RUN/ext" -out "$RUN/sink.pem" 2>/dev/null

python3 Benchmarks/s3_sink.py --cert "$RUN/sink.pem" --key "$RUN/sink.key" --log "$RUN/sink.jsonl" > "$RUN/sink.out" &
pids+=($!)
for _ in $(seq 50); do grep -q '^PORT' "$RUN/sink.out" 2>/dev/null && break; sleep 0.1; done
SINK_PORT=$(awk '/^PORT/ {print $2}' "$RUN/sink.out")

printf 'AKIAREALUPLOADKEY001\n' > "$RUN/aws.id"
printf 'realUploadSecretKey000000000000000000000\n' > "$RUN/aws.secret"
cat > "$RUN/sidecar.yaml" <<YAML
listen: "127.0.0.1:0"
admin: "127.0.0.1:0"
accessLog: false
logLevel: info
workers: 1
intercept:
  caCertFile: $RUN/sidecar-ca.pem
credentials:
  aws: {type: aws, placeholderAccessKeyId: AKIDTOKENSIDECAR0001, accessKeyIdFile: $RUN/aws.id, secretAccessKeyFile: $RUN/aws.secret}
routes:
  - host: "*.amazonaws.com:443"
    intercept: true
    upstream: "https://localhost:$SINK_PORT"
    caFile: $RUN/ca.pem
    credential: aws
    inject: {sigv4: {allowedRegions: [us-east-1], allowedServices: [s3]}}
YAML
"$BIN" run --config "$RUN/sidecar.yaml" > "$RUN/sidecar.out" 2>&1 &
SPID=$!
pids+=($SPID)
for _ in $(seq 100); do grep -q '"msg":"listening"' "$RUN/sidecar.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(grep -o '"msg":"listening","address":"127.0.0.1:[0-9]*"' "$RUN/sidecar.out" | grep -o '[0-9]*"$' | tr -d '"')
[ -n "$PORT" ] || { cat "$RUN/sidecar.out"; exit 1; }

# SIZE bytes of zeros in a sparse file: seekable (botocore rewinds a body to retry), read from
# the page cache, nothing of it held by the client.
truncate -s "$SIZE" "$RUN/object.bin"
start=$(date +%s.%N)
HTTPS_PROXY="http://127.0.0.1:$PORT" AWS_CA_BUNDLE="$RUN/sidecar-ca.pem" AWS_ACCESS_KEY_ID=AKIDTOKENSIDECAR0001 \
AWS_SECRET_ACCESS_KEY=placeholder AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null NO_PROXY= \
timeout "$TRANSFER_TIMEOUT" "$PYTHON" - "$RUN/object.bin" <<'PY'
import sys, boto3
from botocore.config import Config
s3 = boto3.client("s3", region_name="us-east-1", config=Config(retries={"max_attempts": 1}))
with open(sys.argv[1], "rb") as body:
    s3.put_object(Bucket="bench-bucket", Key="one-gib.bin", Body=body)
PY
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
hwm_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$SPID/status")
line=$(tail -1 "$RUN/sink.jsonl")
echo "sink: $line"
echo "upload of $SIZE bytes in $elapsed s; sidecar peak RSS $((hwm_kb / 1024)) MiB (VmHWM $hwm_kb kB)"
ok=1
echo "$line" | grep -q '"signedWith": "AKIAREALUPLOADKEY001"' || { echo "FAIL: not signed with the real key"; ok=0; }
echo "$line" | grep -q '"placeholder": false' || { echo "FAIL: the placeholder reached the sink"; ok=0; }
echo "$line" | grep -q '"payload": "STREAMING-UNSIGNED-PAYLOAD-TRAILER"' || { echo "FAIL: not a streaming-trailer upload"; ok=0; }
[ $((hwm_kb / 1024)) -lt "$RSS_LIMIT_MIB" ] || { echo "FAIL: peak RSS at or over $RSS_LIMIT_MIB MiB"; ok=0; }
[ "$ok" = 1 ]
