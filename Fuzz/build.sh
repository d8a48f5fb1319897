#!/usr/bin/env bash
# Builds the libFuzzer targets with AddressSanitizer into .build-fuzz/ (relative to the repo):
# HTTP1, then the fuzz checks (Tests/HTTP1Fuzzing), then one executable per Fuzz/Fuzz*.swift.
#
# swiftc is driven directly because SwiftPM links executables with `--defsym main=<Target>_main`
# (for testable executables), and under `-parse-as-library` — which libFuzzer needs so that its
# own `main` is the entry point — that symbol does not exist and the link fails
# (swiftlang/swift-package-manager#8731).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.build-fuzz
mkdir -p "$OUT"
FLAGS=(-O -g -sanitize=fuzzer,address -parse-as-library -swift-version 6 -use-ld=lld -I "$OUT")

swiftc "${FLAGS[@]}" -emit-library -static -emit-module -module-name HTTP1 \
    -emit-module-path "$OUT/HTTP1.swiftmodule" -o "$OUT/libHTTP1.a" Sources/HTTP1/*.swift
swiftc "${FLAGS[@]}" -emit-library -static -emit-module -module-name HTTP1Fuzzing \
    -emit-module-path "$OUT/HTTP1Fuzzing.swiftmodule" -o "$OUT/libHTTP1Fuzzing.a" Tests/HTTP1Fuzzing/*.swift
for source in Fuzz/Fuzz*.swift; do
    name=$(basename "$source" .swift)
    swiftc "${FLAGS[@]}" -L "$OUT" -lHTTP1Fuzzing -lHTTP1 -o "$OUT/$name" "$source"
    echo "built $OUT/$name"
done
