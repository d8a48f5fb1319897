#!/usr/bin/env bash
# User-space instructions per HTTP/1.1 request for each way a credential goes into a request,
# with ../shared/bench/instr.sh (callgrind, one keep-alive connection, curl as the client) on the
# release build: the default `Authorization: Bearer` (the ruler's own config), a header placement
# (`inject: {header: x-api-key}`), and a placeholder the app sends in `x-api-key` swapped for the
# token (the placeholder scan of every request and the edit of the head), and a request curl signs
# with placeholder AWS keys (`--aws-sigv4`) that the sidecar signs again with the real ones
# (`type: aws`, `inject: {sigv4: …}`: the policy, the canonical request, two SHA-256 and five
# HMACs, the edited head). nginx in the same run for the ratio. The app's extra header and curl's
# signing come from a .curlrc (instr.sh's curl reads $HOME's).
#
#   make release && bash Benchmarks/placement-instr.sh          # N=2000 requests each (instr.sh's default)
#
# Loopback only (instr.sh's ports 18180/18190); each run is bounded by N.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-$(cd .. && pwd)/shared/bench}
RUN=$(mktemp -d /tmp/placement-instr-XXXXXX)
trap 'rm -rf "$RUN"' EXIT
[ -x .build/release/token-sidecar ] || { echo "make release first"; exit 1; }
# valgrind 3.19 cannot read the DWARF 5 of a Swift 6 build: a stripped copy.
strip -o "$RUN/token-sidecar" .build/release/token-sidecar
PLACEHOLDER=tsp_benchPlaceholder0123456789abcdef

write_conf() {   # NAME EXTRA-CREDENTIAL-LINE EXTRA-ROUTE-LINE
    sed -e "s#^    token: \"@TOKEN@\"#    token: \"@TOKEN@\"\n$2#" -e "s#^    credential: bench#    credential: bench\n$3#" \
        "$SHARED/conf/sidecar.conf" > "$RUN/$1.yaml"
}
write_conf default "" ""
write_conf header "" "    inject: {header: x-api-key}"
write_conf placeholder "    placeholder: \"$PLACEHOLDER\"" ""
printf 'AKIAREALBENCHKEY0001\n' > "$RUN/aws.id"
printf 'realBenchSecretKey0000000000000000000000\n' > "$RUN/aws.secret"
sed -e "s#^    type: static#    type: aws\n    placeholderAccessKeyId: AKIDTOKENSIDECAR0001\n    accessKeyIdFile: $RUN/aws.id\n    secretAccessKeyFile: $RUN/aws.secret#" \
    -e '/^    token: "@TOKEN@"/d' -e "s#^    credential: bench#    credential: bench\n    inject: {sigv4: {allowedRegions: [us-east-1], allowedServices: [s3]}}#" \
    "$SHARED/conf/sidecar.conf" > "$RUN/sigv4.yaml"
mkdir -p "$RUN/home-plain" "$RUN/home-placeholder" "$RUN/home-sigv4"
printf 'header = "x-api-key: %s"\n' "$PLACEHOLDER" > "$RUN/home-placeholder/.curlrc"
printf 'aws-sigv4 = "aws:amz:us-east-1:s3"\nuser = "AKIDTOKENSIDECAR0001:placeholder-secret"\n' > "$RUN/home-sigv4/.curlrc"

measure() {   # NAME HOME CONF
    CMD="$RUN/token-sidecar run --config @CONF@" FORM=absolute CONF_TEMPLATE="$3" HOME="$2" \
        bash "$SHARED/instr.sh" "sidecar-$1" | awk -v n="$1" '/instructions\/request/ {print n, $4}
            /auth header at backend/ && n == "sigv4" {print "sigv4: the backend saw " substr($0, 25, 60) "…" > "/dev/stderr"}'
}
nginx=$(HOME="$RUN/home-plain" bash "$SHARED/instr.sh" nginx | awk '/instructions\/request/ {print $4}')
results=$(measure default "$RUN/home-plain" "$RUN/default.yaml"
          measure header "$RUN/home-plain" "$RUN/header.yaml"
          measure placeholder "$RUN/home-placeholder" "$RUN/placeholder.yaml"
          measure sigv4 "$RUN/home-sigv4" "$RUN/sigv4.yaml")
base=$(echo "$results" | awk '$1 == "default" {print $2}')
echo "nginx: $nginx instructions/request"
echo "$results" | while read -r name value; do
    awk -v n="$name" -v v="$value" -v g="$nginx" -v b="$base" \
        'BEGIN {printf "%-12s %8d instructions/request  %.3fx nginx  %+d against the default\n", n, v, v / g, v - b}'
done
