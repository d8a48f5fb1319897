#!/usr/bin/env bash
# Runs the XCTest suite built under a scratch path (`.build-asan`, `.build-tsan`, `.build`) in two
# processes side by side, each printed whole when both have ended; fails when either does.
#
# Why two: about half the suite's time is spent waiting on clocks -- token lifetimes, refreshes
# ahead of expiry, Redis outages, fleets of sidecars, rates held for seconds -- with the CPU idle.
# Those classes (WAITING below) run in one process, everything else in the other, so the waits
# overlap the work. A class not listed runs in the second process: a new class needs no edit here.
#
# The bundle is run directly (what `swift test --skip-build` runs, with the same environment):
# `swift test` holds a lock on its scratch path, so two of them on one build would take turns.
#
# Usage: scripts/run-tests.sh SCRATCH_PATH   (the bundle must be built: `swift build --build-tests`)
set -euo pipefail
scratch=${1:?usage: scripts/run-tests.sh SCRATCH_PATH}
bundle=$(ls -d "$scratch"/debug/*PackageTests.xctest 2>/dev/null | head -1 || true)
[ -n "$bundle" ] || { echo "run-tests: no test bundle under $scratch/debug (build with --build-tests first)" >&2; exit 2; }

# Classes whose time is mostly waiting (seconds each in the last CI log; say why when adding one).
WAITING=(
  RefreshTokenFleetTests SharedCacheOutageTests TokenIntegrationTests FleetLimitsTests
  SharedCacheFleetTests RouteLimitsProxyTests AWSTemporaryCredentialsTests PrivateKeyJWTTests
  TraceExportTests LifecycleTests STSTests CredentialEndpointsRefreshTests UnauthorizedStormTests
  ManagedCredentialTests JWTBearerGrantTests
)

classes=$("$bundle" --list-tests | sed -n 's|^\([A-Za-z0-9_]*\.[A-Za-z0-9_]*\)/.*|\1|p' | sort -u)
[ -n "$classes" ] || { echo "run-tests: $bundle lists no tests" >&2; exit 2; }
waiting=() others=()
for class in $classes; do
  name=${class#*.}
  if printf '%s\n' "${WAITING[@]}" | grep -qx "$name"; then waiting+=("$class"); else others+=("$class"); fi
done
for name in "${WAITING[@]}"; do
  printf '%s\n' "${waiting[@]}" | grep -q "\.$name\$" || echo "run-tests: note: $name (in WAITING) is not in the suite" >&2
done

logs=$(mktemp -d)
waiting_pid= others_pid=
# Stopped (CI's timeout, Ctrl-C): the two processes stop too, and the sidecars and servers they
# started with them.
trap 'kill $waiting_pid $others_pid 2>/dev/null || true; rm -rf "$logs"' EXIT
trap 'exit 130' INT TERM
join() { local IFS=,; echo "$*"; }
start=$SECONDS
"$bundle" "$(join "${waiting[@]}")" >"$logs/waiting.log" 2>&1 & waiting_pid=$!
"$bundle" "$(join "${others[@]}")" >"$logs/others.log" 2>&1 & others_pid=$!
rc_waiting=0 rc_others=0
wait $waiting_pid || rc_waiting=$?
wait $others_pid || rc_others=$?
cat "$logs/others.log" "$logs/waiting.log"
echo "run-tests: $scratch: ${#others[@]} classes (exit $rc_others) beside ${#waiting[@]} that mostly wait (exit $rc_waiting), $((SECONDS - start)) s"
[ $rc_waiting -eq 0 ] && [ $rc_others -eq 0 ]
