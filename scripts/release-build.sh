#!/usr/bin/env bash
# The one release build of token-sidecar: the flags that `make release` (so CI's example checks
# and every benchmark), and the Dockerfile's build stage use, so what ships is what was measured.
#
#   scripts/release-build.sh            build the token-sidecar product
#   scripts/release-build.sh bin-path   print where it is
#   scripts/release-build.sh flags      print the flags
#
# --static-swift-stdlib: the image's runtime stage carries no Swift runtime
# (scripts/check-docker-deps.sh checks the rest). --experimental-lto-mode=full: link-time
# optimization across the whole program, the libraries included (34.3k -> 33.2k instructions
# per proxied request when it came in; the build takes about a minute longer). Package.swift adds
# the per-module release settings (exclusivity checks off, cross-module optimization).
set -euo pipefail
SWIFT="${SWIFT:-swift}"
RELEASE_FLAGS=(-c release --static-swift-stdlib --experimental-lto-mode=full)
case "${1:-build}" in
  build) exec "$SWIFT" build "${RELEASE_FLAGS[@]}" --product token-sidecar ;;
  bin-path) exec "$SWIFT" build "${RELEASE_FLAGS[@]}" --show-bin-path ;;
  flags) echo "${RELEASE_FLAGS[*]}" ;;
  *) echo "usage: $0 [build|bin-path|flags]" >&2; exit 2 ;;
esac
