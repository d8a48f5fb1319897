#!/usr/bin/env bash
# Do the interception CA's Name Constraints hold in Go's crypto/x509 and in a browser (Chromium),
# not only in OpenSSL? Builds CAs the way token-sidecar does (openssl req -addext nameConstraints),
# signs leaves for names inside and outside the routes, and asks three verifiers:
#   openssl   `openssl verify -x509_strict -purpose sslserver -verify_hostname|-verify_ip`
#   Go        x509.Certificate.Verify (verify.go, standard library only)
#   Chromium  headless Chromium trusting the CA through an NSS db, loading https://HOST/ through
#             tls_proxy.py, a CONNECT proxy on 127.0.0.1 that terminates TLS with the leaf itself,
#             so IP names (10.9.8.7, ::1) are checked too and nothing leaves 127.0.0.1.
#             ACCEPT = the page (with a per-case marker) was dumped by --dump-dom AND the proxy
#             saw the GET inside the tunnel; REJECT = Chromium reported "Page load failed:
#             net::ERR_CERT_*"; the net log (netlog_why.py) says why.
# Cell suffix: /nc = the verifier blamed the name constraints, /host = the hostname check.
# Prints a table; exits 1 if a counted row differs: ACCEPT expected and not given, or REJECT
# expected and not given as REJECT/nc (a rejection for another reason would prove nothing).
# Rows expecting "accept?"/"reject?" are report-only: the "open" CA (no constraints; shows that
# the rejections elsewhere come from the constraints) and "closed0", the IP-only CA with DNS
# closed by an empty excluded dNSName instead of `invalid` (variant_ca.py).
# Usage: bash Benchmarks/name-constraints/run.sh   (root; Debian 12; ~1-2 minutes)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

if ! command -v go >/dev/null || ! command -v chromium >/dev/null || ! command -v certutil >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go chromium libnss3-tools >/dev/null
fi
python3 -c 'import cryptography' 2>/dev/null || python3 -m pip install -q cryptography

WORK=$(mktemp -d /tmp/nc-bench.XXXXXX)   # keys live here only; removed on exit
PROXY_PID=
cleanup() { [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
printf '[req]\ndistinguished_name=dn\n[dn]\n' >"$WORK/min.cnf"   # no default extensions sneak in
export OPENSSL_CONF="$WORK/min.cnf"

# --- 1. CAs -------------------------------------------------------------------------------
mkca() {  # NAME [NAMECONSTRAINTS]
  local nc=()
  [ -n "${2:-}" ] && nc=(-addext "nameConstraints=critical,$2")
  openssl req -config "$WORK/min.cnf" -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$WORK/$1.key" -out "$WORK/$1.pem" -days 30 -subj "/CN=token-sidecar interception CA" \
    -addext basicConstraints=critical,CA:TRUE,pathlen:0 -addext keyUsage=critical,keyCertSign,cRLSign \
    -addext subjectKeyIdentifier=hash "${nc[@]}" 2>/dev/null
}
H128=ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff
mkca dns   "permitted;DNS:api.test,permitted;DNS:.wild.test,excluded;IP:0.0.0.0/0.0.0.0,excluded;IP:::/::"
mkca ip    "permitted;DNS:invalid,permitted;IP:127.0.0.1/255.255.255.255,excluded;IP:::/::"
mkca mixed "permitted;DNS:api.test,permitted;IP:127.0.0.1/255.255.255.255,permitted;IP:::1/$H128"
mkca open                                                   # control: no name constraints
python3 "$HERE/variant_ca.py" "$WORK/closed0.pem" "$WORK/closed0.key"

# --- 2. cases: CA  id  expected  host  SANs (comma-separated) ------------------------------
CASES=$(cat <<'EOF'
dns     api        ACCEPT   api.test      DNS:api.test
dns     wild-sub   ACCEPT   x.wild.test   DNS:x.wild.test
dns     wild-apex  REJECT   wild.test     DNS:wild.test
dns     other      REJECT   other.test    DNS:other.test
dns     other-UC   REJECT   OTHER.Test    DNS:OTHER.Test
dns     other-dot  REJECT   other.test.   DNS:other.test.
dns     ip10       REJECT   10.9.8.7      IP:10.9.8.7
dns     ip127.2    REJECT   127.0.0.2     IP:127.0.0.2
dns     ip6        REJECT   ::1           IP:::1
ip      ip127      ACCEPT   127.0.0.1     IP:127.0.0.1
ip      api        REJECT   api.test      DNS:api.test
ip      ip+dns     REJECT   127.0.0.1     IP:127.0.0.1,DNS:api.test
ip      other      REJECT   other.test    DNS:other.test
ip      other-UC   REJECT   OTHER.Test    DNS:OTHER.Test
ip      other-dot  REJECT   other.test.   DNS:other.test.
ip      ip10       REJECT   10.9.8.7      IP:10.9.8.7
ip      ip127.2    REJECT   127.0.0.2     IP:127.0.0.2
ip      ip6        REJECT   ::1           IP:::1
mixed   api        ACCEPT   api.test      DNS:api.test
mixed   API-UC     ACCEPT   API.Test      DNS:API.Test
mixed   ip127      ACCEPT   127.0.0.1     IP:127.0.0.1
mixed   ip6        ACCEPT   ::1           IP:::1
mixed   ip+dns     ACCEPT   127.0.0.1     IP:127.0.0.1,DNS:api.test
mixed   other      REJECT   other.test    DNS:other.test
mixed   other-UC   REJECT   OTHER.Test    DNS:OTHER.Test
mixed   other-dot  REJECT   other.test.   DNS:other.test.
mixed   ip10       REJECT   10.9.8.7      IP:10.9.8.7
mixed   ip127.2    REJECT   127.0.0.2     IP:127.0.0.2
open    other      accept?  other.test    DNS:other.test
open    other-UC   accept?  OTHER.Test    DNS:OTHER.Test
open    other-dot  accept?  other.test.   DNS:other.test.
open    wild-apex  accept?  wild.test     DNS:wild.test
open    ip10       accept?  10.9.8.7      IP:10.9.8.7
open    ip6        accept?  ::1           IP:::1
closed0 ip127      accept?  127.0.0.1     IP:127.0.0.1
closed0 api        reject?  api.test      DNS:api.test
closed0 ip+dns     reject?  127.0.0.1     IP:127.0.0.1,DNS:api.test
closed0 other      reject?  other.test    DNS:other.test
closed0 ip10       reject?  10.9.8.7      IP:10.9.8.7
closed0 ip6        reject?  ::1           IP:::1
EOF
)

# Chromium trusts one CA per NSS db, each in its own HOME (the CAs share a subject name).
for ca in dns ip mixed open closed0; do
  mkdir -p "$WORK/home-$ca/.pki/nssdb"
  certutil -d "sql:$WORK/home-$ca/.pki/nssdb" -N --empty-password
  certutil -d "sql:$WORK/home-$ca/.pki/nssdb" -A -t "C,," -n "nc-$ca" -i "$WORK/$ca.pem"
done

# Go reports a SAN like "other.test." as "cannot parse dnsName" from its constraint check only
# (the "open" CA's leaf for it passes), so that counts as a name-constraint rejection too.
tag() {  # VERDICT REASON -> VERDICT or VERDICT/nc, VERDICT/host, VERDICT/other
  if [ "$1" != REJECT ]; then echo "$1"
  elif grep -qiE 'name constraint|subtree violation|not authorized to sign|cannot parse dnsName' <<<"$2"; then echo "$1/nc"
  elif grep -qiE 'mismatch|valid for|COMMON_NAME_INVALID' <<<"$2"; then echo "$1/host"
  else echo "$1/other"; fi
}

chromium_verdict() {  # CA LEAFBASE HOST -> "VERDICT<TAB>reason"
  local ca=$1 leaf=$2 host=$3 marker="nc-ok-$RANDOM$RANDOM" url
  if [[ $host == *:* ]]; then url="https://[$host]/"; else url="https://$host/"; fi
  rm -rf "$WORK/ud" "$WORK/port" "$WORK/proxy.log" "$WORK/nl.json"
  python3 "$HERE/tls_proxy.py" "$leaf.pem" "$leaf.key" "$WORK/port" "$WORK/proxy.log" "$marker" &
  PROXY_PID=$!
  for _ in $(seq 50); do [ -s "$WORK/port" ] && break; sleep 0.1; done
  # Every request goes to the proxy (loopback too: <-loopback>); any direct lookup fails.
  HOME="$WORK/home-$ca" timeout 30 chromium --headless=new --no-sandbox --disable-gpu \
    --user-data-dir="$WORK/ud" --no-first-run --no-default-browser-check --disable-sync \
    --disable-background-networking --disable-component-update \
    --proxy-server="http://127.0.0.1:$(cat "$WORK/port")" --proxy-bypass-list='<-loopback>' \
    --host-resolver-rules='MAP * ~NOTFOUND, EXCLUDE 127.0.0.1' --log-net-log="$WORK/nl.json" \
    --dump-dom "$url" >"$WORK/dom.html" 2>"$WORK/chromium.err" || true
  kill "$PROXY_PID" 2>/dev/null || true; wait "$PROXY_PID" 2>/dev/null || true; PROXY_PID=
  local why failed
  why=$(python3 "$HERE/netlog_why.py" "$WORK/nl.json" "$host" 2>&1 || true)
  failed=$(grep -o 'Page load failed: net::ERR_[A-Z_]*' "$WORK/chromium.err" | head -1 || true)
  if grep -q "$marker" "$WORK/dom.html"; then
    if grep -q '^REQUEST .* GET / ' "$WORK/proxy.log" 2>/dev/null; then printf 'ACCEPT\t%s\n' "$why"
    else printf 'UNSURE\tpage shown but the proxy logged no GET; %s\n' "$why"; fi
  elif [[ $failed == *ERR_CERT_* ]]; then printf 'REJECT\t%s\n' "$why"
  else printf 'ERROR\t%s; %s\n' "${failed:-no page and no error}" "$why"; fi
}

# --- 3. leaves, openssl and Chromium per case; Go in one batch ------------------------------
: >"$WORK/go.in"; : >"$WORK/rows"
n=0
while read -r ca id expect host sans <&3; do
  n=$((n + 1)); leaf="$WORK/leaf$n"
  openssl req -config "$WORK/min.cnf" -new -x509 -CA "$WORK/$ca.pem" -CAkey "$WORK/$ca.key" \
    -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$leaf.key" -out "$leaf.pem" -days 7 \
    -subj "/" -addext basicConstraints=critical,CA:FALSE -addext keyUsage=critical,digitalSignature \
    -addext extendedKeyUsage=serverAuth -addext authorityKeyIdentifier=keyid \
    -addext "subjectAltName=critical,$sans" 2>/dev/null
  if [[ $host =~ ^[0-9.]+$|: ]]; then check=(-verify_ip "$host"); else check=(-verify_hostname "$host"); fi
  if out=$(timeout 20 openssl verify -x509_strict -purpose sslserver "${check[@]}" \
             -CAfile "$WORK/$ca.pem" "$leaf.pem" 2>&1); then os=ACCEPT; else os=REJECT; fi
  os_why=$(grep -E 'error|OK' <<<"$out" | sed "s|$leaf.pem: ||; s|error $leaf.pem||" | tr '\n' ' ')
  printf '%s\t%s\t%s\t%s\n' "$n" "$WORK/$ca.pem" "$leaf.pem" "$host" >>"$WORK/go.in"
  IFS=$'\t' read -r cr cr_why < <(chromium_verdict "$ca" "$leaf" "$host")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$ca:$id" "$expect" "$sans" "$host" \
    "$os" "$os_why" "$cr" "$cr_why" >>"$WORK/rows"
done 3<<<"$CASES"

mkdir -p /tmp/nc-gopath /tmp/nc-gocache
GO111MODULE=off GOPATH=/tmp/nc-gopath GOCACHE=/tmp/nc-gocache GOFLAGS= \
  timeout 300 go run "$HERE/verify.go" <"$WORK/go.in" >"$WORK/go.out"

# --- 4. table ---------------------------------------------------------------------------------
echo "openssl: $(openssl version)"
echo "Go:      $(go version)"
echo "Chrome:  $(chromium --version 2>/dev/null | head -1); NSS $(dpkg-query -W -f='${Version}' libnss3)"
echo
fmt='%-18s %-9s %-14s %-14s %-14s %s\n'
printf "$fmt" case expected openssl Go Chromium ''
bad=0; details=
while IFS=$'\t' read -r n name expect sans host os os_why cr cr_why; do
  go_line=$(awk -F'\t' -v n="$n" '$1 == n' "$WORK/go.out")
  gv=$(cut -f2 <<<"$go_line"); go_why=$(cut -f3 <<<"$go_line")
  cells=("$(tag "$os" "$os_why")" "$(tag "${gv:-ERROR}" "$go_why")" "$(tag "$cr" "$cr_why")")
  mark='' want=$(tr a-z A-Z <<<"${expect%\?}")
  for v in "${cells[@]}"; do
    case "$want:$v" in
      ACCEPT:ACCEPT | REJECT:REJECT/nc) ;;
      *) if [[ $expect == *'?' ]]; then mark='(differs; report only)'; else mark='<-- MISMATCH'; fi ;;
    esac
  done
  [ "$mark" = '<-- MISMATCH' ] && bad=$((bad + 1))
  printf "$fmt" "$name" "$expect" "${cells[@]}" "$mark"
  details+=$(printf '\n%s [SAN %s, host %s]\n  openssl:  %s\n  Go:       %s\n  Chromium: %s' \
    "$name" "$sans" "$host" "$os_why" "${go_why:-ok}" "$cr_why")
done <"$WORK/rows"
echo; echo "Reasons:$details"; echo
if [ "$bad" -gt 0 ]; then echo "FAIL: $bad case(s) where a verifier disagrees with the expected verdict"; exit 1; fi
echo "OK: every verifier gave the expected verdict on every counted case"
