"""grpcio unary calls per second against one address (`make bench-grpc` runs it direct and
through the sidecar): `grpc_calls.py HOST:PORT AUTHORITY SECONDS CONCURRENCY`.

One channel, CONCURRENCY threads each calling /test.Orders/Get (Tests/ProxyTests/Fixtures/
grpc_peer.py's server) back to back for SECONDS after a 1 s warm-up; prints
"calls <n> seconds <s> calls_per_second <r> failures <f>". Bounded in time and count.
"""
import sys, threading, time

import grpc

address, authority, seconds, concurrency = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
channel = grpc.insecure_channel(address, options=[("grpc.default_authority", authority)])
call = channel.unary_unary("/test.Orders/Get")
lock = threading.Lock()
counts = {"calls": 0, "failures": 0}
limit = 2_000_000


def worker(stop_at, counting):
    while time.monotonic() < stop_at:
        try:
            call(b"order", timeout=5)
            ok = True
        except grpc.RpcError:
            ok = False
        if counting:
            with lock:
                counts["calls" if ok else "failures"] += 1
                if counts["calls"] >= limit:
                    return


for counting, duration in ((False, 1.0), (True, seconds)):
    stop_at = time.monotonic() + duration
    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(stop_at, counting)) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
print("calls %d seconds %.1f calls_per_second %.0f failures %d" % (counts["calls"], elapsed, counts["calls"] / elapsed,
                                                                  counts["failures"]))
