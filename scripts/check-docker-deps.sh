#!/usr/bin/env bash
# check-docker-deps.sh — verify the Dockerfile's runtime stage installs every shared
# library the token-sidecar binary needs (no Docker engine required).
#
# Run:   scripts/check-docker-deps.sh [BINARY]
#          BINARY     default: .build/release/token-sidecar (relative to the repo root)
#        env DOCKERFILE=path   default: Dockerfile in the repo root
#
# How: `ldd BINARY` -> each resolved library -> its Debian package (`dpkg -S`, also
# trying the realpath and the /lib <-> /usr/lib usrmerge twin). Every package must be
# listed between "# runtime-packages-begin" and "# runtime-packages-end" in the
# Dockerfile (one per line), except packages always present in debian:bookworm-slim
# (BASE_PACKAGES below). Swift runtime libraries from the toolchain (libswift*,
# Foundation*, libdispatch, libBlocksRuntime — present when the binary was built
# WITHOUT --static-swift-stdlib, e.g. by a plain `swift build`) are accepted only if the
# Dockerfile builds with scripts/release-build.sh and its flags have --static-swift-stdlib,
# which links them into the binary.
# Exit 0 = covered; 1 = something missing (listed), "not found" in ldd, a library no
# Debian package owns, or an unreadable Dockerfile/marker list; 2 = usage error.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BINARY="${1:-$ROOT/.build/release/token-sidecar}"
DOCKERFILE="${DOCKERFILE:-$ROOT/Dockerfile}"
# Always installed in debian:bookworm-slim (libc6 is essential; libgcc-s1 is a
# dependency of libc6). Everything else must be listed explicitly.
BASE_PACKAGES=(libc6 libgcc-s1)

[[ $# -le 1 ]] || { echo "usage: $0 [BINARY]" >&2; exit 2; }
[[ -e "$BINARY" ]] || { echo "check-docker-deps: binary not found: $BINARY" >&2; exit 2; }
[[ -r "$DOCKERFILE" ]] || { echo "check-docker-deps: Dockerfile not readable: $DOCKERFILE" >&2; exit 1; }
command -v ldd >/dev/null && command -v dpkg >/dev/null || { echo "check-docker-deps: needs ldd and dpkg" >&2; exit 1; }

# ---- runtime package list from the Dockerfile ------------------------------------
LIST_TEXT="$(awk '
  /^[[:space:]]*#[[:space:]]*runtime-packages-begin/ {inside=1; seen=1; next}
  /^[[:space:]]*#[[:space:]]*runtime-packages-end/   {inside=0; ended=1; next}
  inside {
    sub(/#.*/, ""); gsub(/\\/, ""); gsub(/^[[:space:]]+|[[:space:]]+$/, "")
    if ($0 != "") { n = split($0, w, /[[:space:]]+/); for (i = 1; i <= n; i++) print w[i] }
  }
  END { if (!seen || !ended) exit 3 }' "$DOCKERFILE")" || {
  echo "check-docker-deps: no '# runtime-packages-begin' ... '# runtime-packages-end' block in $DOCKERFILE" >&2; exit 1; }
LISTED=()
[[ -n "$LIST_TEXT" ]] && mapfile -t LISTED <<<"$LIST_TEXT"
declare -A IN_LIST=()
for p in "${LISTED[@]}"; do
  p="${p%%=*}"; p="${p%%:*}"            # drop version pins (pkg=ver) and :arch
  IN_LIST["$p"]=1
done
declare -A IN_BASE=()
for p in "${BASE_PACKAGES[@]}"; do IN_BASE["$p"]=1; done
STATIC_STDLIB=0
# The image builds with scripts/release-build.sh (the one place of the release flags), which
# must link the Swift runtime statically.
RELEASE_BUILD="$ROOT/scripts/release-build.sh"
grep -Eq '^[^#]*(RUN|&&)[[:space:]]+scripts/release-build\.sh' "$DOCKERFILE" \
  && grep -Eq '^RELEASE_FLAGS=\(.*--static-swift-stdlib' "$RELEASE_BUILD" && STATIC_STDLIB=1

echo "binary:     $BINARY"
echo "dockerfile: $DOCKERFILE"
echo "listed runtime packages: ${LISTED[*]:-(none)}"
echo

# ---- ldd ----------------------------------------------------------------------------
LDD_OUT="$(ldd "$BINARY" 2>&1)" || true
if grep -q 'not a dynamic executable\|statically linked' <<<"$LDD_OUT"; then
  echo "statically linked: no runtime libraries needed"; exit 0
fi

owner() { # owner PATH -> package name(s) owning PATH, or nothing
  local cand c out
  cand=("$1")
  c="$(readlink -f "$1" 2>/dev/null || true)"; [[ -n "$c" ]] && cand+=("$c")
  for c in "${cand[@]}"; do
    case "$c" in
      /usr/lib/*|/usr/lib64/*) cand+=("${c#/usr}") ;;
      /lib/*|/lib64/*)         cand+=("/usr$c") ;;
    esac
  done
  for c in "${cand[@]}"; do
    if out="$(dpkg -S "$c" 2>/dev/null)"; then
      # "pkg1:amd64, pkg2: /path" (diversions list several) -> first package, no arch
      out="${out%%: /*}"; out="${out%%,*}"; echo "${out%%:*}"; return 0
    fi
  done
  return 1
}
is_swift_runtime() { # PATH -> toolchain Swift runtime library?
  local b; b="$(basename "$1")"
  [[ "$1" == */swift/linux/* ]] && return 0
  [[ "$b" =~ ^(libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|libXCTest|libTesting) ]]
}

FAILS=0
declare -A NEED=()
printf '%-38s %-26s %s\n' "library" "package" "status"
while IFS= read -r line; do
  line="${line#"${line%%[![:space:]]*}"}"
  [[ -z "$line" ]] && continue
  name="${line%% *}"
  if [[ "$line" == *"=> not found"* ]]; then
    printf '%-38s %-26s %s\n' "$name" "-" "MISSING: not found by the dynamic loader"; FAILS=$((FAILS + 1)); continue
  fi
  if [[ "$line" == *"=> "* ]]; then
    path="${line#*=> }"; path="${path%% (*}"
  elif [[ "$name" == /* ]]; then
    path="$name"; name="$(basename "$name")"
  else
    continue   # linux-vdso.so.1 and friends: provided by the kernel
  fi
  [[ "$path" == /* ]] || continue
  if pkg="$(owner "$path")"; then
    if [[ -n "${IN_BASE[$pkg]:-}" ]]; then status="ok (in bookworm-slim base)"
    elif [[ -n "${IN_LIST[$pkg]:-}" ]]; then status="ok (listed)"
    else status="MISSING from runtime-packages list"; NEED["$pkg"]=1; FAILS=$((FAILS + 1)); fi
  elif is_swift_runtime "$path"; then
    pkg="(swift toolchain)"
    if [[ $STATIC_STDLIB = 1 ]]; then status="ok (linked statically by --static-swift-stdlib in the image build)"
    else status="MISSING: Dockerfile does not build with --static-swift-stdlib"; FAILS=$((FAILS + 1)); fi
  else
    pkg="-"; status="MISSING: $path belongs to no Debian package"; FAILS=$((FAILS + 1))
  fi
  printf '%-38s %-26s %s\n' "$name" "$pkg" "$status"
done <<<"$LDD_OUT"

echo
if [[ $FAILS -ne 0 ]]; then
  if [[ ${#NEED[@]} -gt 0 ]]; then
    echo "add to the Dockerfile runtime-packages list:"
    for p in $(printf '%s\n' "${!NEED[@]}" | sort); do echo "      $p \\"; done
  fi
  echo "check-docker-deps: FAIL ($FAILS problem(s))"
  exit 1
fi
echo "check-docker-deps: OK — the runtime stage covers every library of $(basename "$BINARY")"
