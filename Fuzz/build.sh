#!/usr/bin/env bash
# Builds the libFuzzer targets with AddressSanitizer into .build-fuzz/ (relative to the repo):
# HTTP1, then the fuzz checks (Tests/HTTP1Fuzzing), HTTP2 and its checks (Tests/HTTP2Fuzzing), then one
# executable per Fuzz/Fuzz*.swift.
#
# swiftc is driven directly because SwiftPM links executables with `--defsym main=<Target>_main`
# (for testable executables), and under `-parse-as-library` — which libFuzzer needs so that its
# own `main` is the entry point — that symbol does not exist and the link fails
# (swiftlang/swift-package-manager#8731).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.build-fuzz
mkdir -p "$OUT"
# Nothing to do when every target is newer than everything it is built from (`make test` builds
# them as its AddressSanitizer suite ends; `make fuzz` then only runs them).
targets=()
for source in Fuzz/Fuzz*.swift; do targets+=("$OUT/$(basename "$source" .swift)"); done
if ls "${targets[@]}" >/dev/null 2>&1; then
    oldest=$(ls -t "${targets[@]}" | tail -1)
    if [ -z "$(find Sources/HTTP1 Sources/HTTP2 Sources/CNghttp2 Tests/HTTP1Fuzzing Tests/HTTP2Fuzzing Fuzz/build.sh \
               Fuzz/Fuzz*.swift -newer "$oldest" -print -quit)" ]; then
        echo "fuzz targets up to date in $OUT"
        exit 0
    fi
fi
# (Gone before they are built again: a build that fails leaves none to run stale.)
rm -f "${targets[@]}"
FLAGS=(-O -g -sanitize=fuzzer,address -parse-as-library -swift-version 6 -use-ld=lld -I "$OUT")

swiftc "${FLAGS[@]}" -emit-library -static -emit-module -module-name HTTP1 \
    -emit-module-path "$OUT/HTTP1.swiftmodule" -o "$OUT/libHTTP1.a" Sources/HTTP1/*.swift
swiftc "${FLAGS[@]}" -emit-library -static -emit-module -module-name HTTP1Fuzzing \
    -emit-module-path "$OUT/HTTP1Fuzzing.swiftmodule" -o "$OUT/libHTTP1Fuzzing.a" Tests/HTTP1Fuzzing/*.swift
# HTTP2 (nghttp2 through its system module) and its checks, for FuzzHTTP2.
swiftc "${FLAGS[@]}" -I Sources/CNghttp2 -emit-library -static -emit-module -module-name HTTP2 \
    -emit-module-path "$OUT/HTTP2.swiftmodule" -o "$OUT/libHTTP2.a" Sources/HTTP2/*.swift
swiftc "${FLAGS[@]}" -I Sources/CNghttp2 -emit-library -static -emit-module -module-name HTTP2Fuzzing \
    -emit-module-path "$OUT/HTTP2Fuzzing.swiftmodule" -o "$OUT/libHTTP2Fuzzing.a" Tests/HTTP2Fuzzing/*.swift
for source in Fuzz/Fuzz*.swift; do
    name=$(basename "$source" .swift)
    case $name in
        FuzzHTTP2|FuzzHTTP2Head) libraries=(-I Sources/CNghttp2 -lHTTP2Fuzzing -lHTTP2 -lHTTP1 -lnghttp2) ;;
        *) libraries=(-lHTTP1Fuzzing -lHTTP1) ;;
    esac
    swiftc "${FLAGS[@]}" -L "$OUT" "${libraries[@]}" -o "$OUT/$name" "$source"
    echo "built $OUT/$name"
done
