#!/usr/bin/env bash
# Fails unless the installed nghttp2 is at least the newest Debian 12 security update the
# proxy's HTTP/2 relies on: 1.52.0-1+deb12u3 (CVE-2026-27135, an assertion failure a peer can
# trigger; deb12u1/u2 brought the Rapid Reset and CONTINUATION-flood fixes). Run by CI after
# its apt-get install, and by both Dockerfile stages, so the build, the tests and the image all
# use it.
#
#   scripts/check-nghttp2.sh            check libnghttp2-14 (the library the binary loads)
set -euo pipefail
MIN="1.52.0-1+deb12u3"
have="$(dpkg-query -W -f='${Version}' libnghttp2-14 2>/dev/null || true)"
if [[ -z "$have" ]]; then
  echo "check-nghttp2: libnghttp2-14 is not installed" >&2; exit 1
fi
if ! dpkg --compare-versions "$have" ge "$MIN"; then
  echo "check-nghttp2: libnghttp2-14 is $have; need $MIN or newer (apt-get update, and bookworm-security in the sources)" >&2
  exit 1
fi
echo "check-nghttp2: libnghttp2-14 $have (>= $MIN)"
