# Shared by the benchmark scripts (sourced, not run): a temp dir, process bookkeeping that
# cleans up on every exit path, and small helpers.
# Usage: source "$(dirname "$0")/common.sh" NAME   -> sets TMP=/tmp/NAME.XXXXXX and PIDS=()

TMP="$(mktemp -d "/tmp/${1:-bench}.XXXXXX")"
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]:-}"; do [[ -n "$p" ]] && kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]:-}"; do [[ -n "$p" ]] && wait "$p" 2>/dev/null || true; done
  if [[ "${KEEP_TMP:-0}" = 1 ]]; then echo "temp dir kept: $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# bgrun CMD...: run CMD in the background and wait for it, so a SIGINT/SIGTERM to this
# script is handled at once (bash defers traps while a foreground child runs).
bgrun() {
  local p rc=0
  "$@" &
  p=$!
  PIDS+=("$p")
  wait "$p" || rc=$?
  unset 'PIDS[${#PIDS[@]}-1]'
  return $rc
}

# free_port: an unused TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
