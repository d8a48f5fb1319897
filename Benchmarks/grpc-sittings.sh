#!/usr/bin/env bash
# issue 65's gRPC lines over several sittings: runs ../shared/bench/grpc/grpc_peers.sh (defaults,
# HAProxy, nghttpx and the sidecar) SITTINGS times, one after the other, and prints each sitting's
# ratios to the best peer and, per line, in how many sittings it held. One sitting is not a verdict:
# the same binary's c=50 calls/s moved 25% between two rounds of one sitting, and its c=1 p50 ratio
# between 1.045 and 1.12 in one afternoon (Benchmarks/results/hot-code-2026-11-30.md).
#
#   bash Benchmarks/grpc-sittings.sh                              # make release's binary, 3 sittings (~6 min)
#   SITTINGS=5 SIDECAR_BIN=/tmp/sc bash Benchmarks/grpc-sittings.sh
#
# The lines (issue 65): at c=50 calls/s >= 0.9x and proxy CPU per call <= 1.25x the best peer's,
# at c=1 p50 <= 1.1x the best peer's; no failed call. Loopback only, as grpc_peers.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
SITTINGS=${SITTINGS:-3}
RUN=${RUN_DIR:-/tmp/grpc-sittings}
case $RUN in /tmp/?*) ;; *) echo "RUN_DIR must be under /tmp (it is wiped)" >&2; exit 2 ;; esac
SHARED=${SHARED:-$(cd .. && pwd)/shared/bench/grpc}
rm -rf "$RUN"; mkdir -p "$RUN"
if [ -z "${SIDECAR_BIN:-}" ]; then
    [ -x .build/release/token-sidecar ] || { echo "make release first" >&2; exit 1; }
    strip -o "$RUN/token-sidecar" .build/release/token-sidecar; SIDECAR_BIN=$RUN/token-sidecar
fi
for i in $(seq 1 "$SITTINGS"); do
    echo "[sitting $i/$SITTINGS] grpc_peers.sh" >&2
    ONLY=haproxy,nghttpx,sidecar SIDECAR_BIN="$SIDECAR_BIN" RUN_DIR="$RUN/sitting-$i" bash "$SHARED/grpc_peers.sh" \
        > "$RUN/sitting-$i.log" 2>&1 || { echo "sitting $i failed (see $RUN/sitting-$i.log)" >&2; exit 1; }
done
python3 - "$RUN" "$SITTINGS" <<'PY'
import sys
run, sittings = sys.argv[1], int(sys.argv[2])

def rows(report):
    """The unary rows of grpc_peers.sh's main table: {(target, c): (p50 µs, failed, calls/s ÷ best
    peer, proxy CPU ÷ best peer)} (the ratios as the report computed them, from unrounded values)."""
    out = {}
    for line in open(report):
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 12 and cells[1] == 'unary' and cells[2].isdigit():
            window, outside = (int(x) for x in cells[9].split('/'))
            out[(cells[0], int(cells[2]))] = (float(cells[4]), window + outside, float(cells[10]), float(cells[11]))
    return out

lines = [('c=50 calls/s >= 0.9x', lambda r: r[0] >= 0.9), ('c=50 CPU <= 1.25x', lambda r: r[1] <= 1.25),
         ('c=1 p50 <= 1.1x', lambda r: r[2] <= 1.1), ('no failed call', lambda r: r[3] == 0)]
held = [0] * len(lines)
print('| sitting | c=50 calls/s ÷ best | c=50 proxy CPU ÷ best | c=1 p50 ÷ best | failed calls (sidecar) |')
print('|--:|--:|--:|--:|--:|')
for i in range(1, sittings + 1):
    t = rows(f'{run}/sitting-{i}/report.md')
    peers = ('haproxy', 'nghttpx')
    calls, cpu = t[('sidecar', 50)][2], t[('sidecar', 50)][3]
    p50 = t[('sidecar', 1)][0] / min(t[(p, 1)][0] for p in peers)
    failed = t[('sidecar', 50)][1] + t[('sidecar', 1)][1]
    ratios = (calls, cpu, p50, failed)
    for k, (_, holds) in enumerate(lines):
        held[k] += holds(ratios)
    print(f'| {i} | {calls:.2f} | {cpu:.2f} | {p50:.3f} | {failed} |')
print()
for (name, _), n in zip(lines, held):
    print(f'- {name}: held in {n} of {sittings} sittings')
PY
