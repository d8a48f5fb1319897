#!/usr/bin/env python3
"""trace_outage.py - trace export must not hurt requests when the OTLP receiver is down or slow
(`make trace-check`; run by the .build-otel interpreter, which the receiver fixture needs).

    trace_outage.py --binary .build/release/token-sidecar

The acceptance of trace export: with the receiver down, slow (3 s per export) or answering
503 + Retry-After, requests are unaffected (p50 of 200 sequential keep-alive requests <= 1.2 x the
p50 with tracing off + 2 ms), spans are dropped and counted (token_sidecar_trace_spans_dropped_total),
none is counted exported while nothing accepted them, and the sidecar's RSS stays under 64 MiB;
when the receiver comes back (or answers 200 again), spans of new requests reach it within 10 s.

Phases, all on 127.0.0.1:
  1. backend (Tests/ProxyTests/Fixtures/backend.py); a receiver (otlp_receiver.py) is started
     for a free port P, then stopped: nothing listens on P.
  2. sidecar A, tracing off: 50 warm-up, then 200 timed requests (one keep-alive connection,
     absolute-form GETs, time.perf_counter per request): the baseline p50 / p99.
  3. sidecar B, tracing on to P (OTEL_BSP_SCHEDULE_DELAY=100, MAX_QUEUE_SIZE=256,
     MAX_EXPORT_BATCH_SIZE=64: the down receiver overflows the queue): the same; then metrics:
     dropped (queue_full + export_failed) > 0 within 5 s, exported == 0; RSS < 64 MiB.
  4. the receiver back on P; a request to /back-N every 0.5 s (20 at most): a span with
     url.path /back-N must be in spans.jsonl within 10 s of the receiver listening (the
     exporter's backoff is capped at 5 s; while the queue is still full of old spans, new ones
     are dropped, hence the steady trickle rather than one burst).
  5. receiver slow (3 s before each answer): 200 timed requests; p50 bound; RSS < 64 MiB.
  6. receiver answering 503 + Retry-After: 1: 200 timed requests; p50 bound; then back to ok:
     spans of new requests (/ok-N) within 10 s.

Prints a table and "trace-check: OK", or "trace-check: FAILED: <reasons>" and exits 1. Bounded:
every wait has a timeout, every socket a timeout; every process started is killed at exit.
Standard library only.
"""
import argparse
import atexit
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import http.client

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "Tests", "ProxyTests", "Fixtures")
RSS_LIMIT_KIB = 64 * 1024
TIMED = 200
WARMUP = 50
RESUME_LIMIT = 10.0

procs = []
failures = []


def log(text):
    print(text, flush=True)


def fail(reason):
    failures.append(reason)
    log("  FAIL: " + reason)


# ---------------------------------------------------------------- processes

def kill_all():
    for proc in procs:
        if proc.poll() is None:
            try:
                proc.kill()
            except OSError:
                pass
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def on_signal(signum, frame):
    raise SystemExit(128 + signum)


def read_port_line(proc, what, timeout=10.0):
    """The port of the "PORT <n>" line a fixture prints first; None if it exited first."""
    deadline = time.monotonic() + timeout
    buffer = b""
    fd = proc.stdout.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, min(0.2, deadline - time.monotonic())))
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                return None  # exited
            buffer += chunk
            if b"\n" in buffer:
                match = re.match(rb"PORT (\d+)\n", buffer)
                if not match:
                    raise RuntimeError("%s printed %r" % (what, buffer[:200]))
                return int(match.group(1))
        elif proc.poll() is not None:
            return None
    raise RuntimeError("%s printed no PORT line within %.0f s" % (what, timeout))


def start_fixture(argv, what, stderr_path):
    err = open(stderr_path, "ab")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, cwd=ROOT)
    err.close()
    procs.append(proc)
    port = read_port_line(proc, what)
    return proc, port


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        raise RuntimeError("process %d did not exit after SIGKILL" % proc.pid)


def start_receiver(python, directory, port, stderr_path, retry_for=0.0):
    """A receiver on `port` (0: ephemeral); binding is retried for `retry_for` seconds."""
    argv = [python, os.path.join(FIXTURES, "otlp_receiver.py"), "--dir", directory]
    if port:
        argv += ["--port", str(port)]
    deadline = time.monotonic() + retry_for
    while True:
        proc, got = start_fixture(argv, "otlp_receiver", stderr_path)
        if got is not None:
            return proc, got
        stop(proc)
        if time.monotonic() >= deadline:
            raise RuntimeError("otlp_receiver could not listen on port %d (see %s)" % (port, stderr_path))
        time.sleep(0.2)


def start_sidecar(binary, config_path, log_path, env):
    out = open(log_path, "ab")
    proc = subprocess.Popen([binary, "run", "--config", config_path], stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env, cwd=ROOT)
    out.close()
    procs.append(proc)
    deadline = time.monotonic() + 15
    listen = admin = None
    while time.monotonic() < deadline and (listen is None or admin is None):
        if proc.poll() is not None:
            raise RuntimeError("sidecar exited with %s:\n%s" % (proc.returncode, tail(log_path)))
        for record in json_lines(log_path):
            if not isinstance(record, dict):
                continue
            if record.get("msg") == "listening":
                listen = port_of(record.get("address"))
            elif record.get("msg") == "admin listening":
                admin = port_of(record.get("address"))
        time.sleep(0.05)
    if listen is None or admin is None:
        raise RuntimeError("sidecar did not log its listening addresses within 15 s:\n" + tail(log_path))
    return proc, listen, admin


def json_lines(path):
    """The JSON records of a JSON-lines file being written: a line not yet complete is skipped,
    a file not yet there has none."""
    try:
        with open(path, "rb") as f:
            for line in f:
                try:
                    yield json.loads(line)
                except ValueError:
                    continue
    except FileNotFoundError:
        return


def port_of(address):
    return int(str(address).rsplit(":", 1)[1])


def tail(path, lines=20):
    try:
        with open(path, "rb") as f:
            return b"".join(f.readlines()[-lines:]).decode("utf-8", "replace")
    except OSError:
        return ""


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS for pid %d" % pid)


# ---------------------------------------------------------------- requests and metrics

class Client:
    """One keep-alive connection to the proxy. http.client writes the URL given to request() into
    the request line as is, so these are absolute-form requests (the server spans' url.scheme,
    present only for absolute-form targets, is checked below)."""

    def __init__(self, proxy_port):
        self.conn = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=10)
        self.conn.connect()
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def get(self, path):
        self.conn.request("GET", "http://api.test" + path, headers={"Host": "api.test"})
        response = self.conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError("GET %s: %d %r" % (path, response.status, body[:200]))
        if response.will_close:
            raise RuntimeError("GET %s: the proxy closed the keep-alive connection" % path)
        return body

    def close(self):
        self.conn.close()


def timed_run(proxy_port, path, warmup, count, pause=0.0, window=None):
    """Seconds per request of `count` sequential requests after `warmup` untimed ones and `pause`
    seconds; `window` gets the wall-clock start and end of the timed requests."""
    client = Client(proxy_port)
    try:
        for i in range(warmup):
            client.get("%s-warm-%d" % (path, i))
        time.sleep(pause)
        times = []
        if window is not None:
            window["start"] = time.time()
        for i in range(count):
            start = time.perf_counter()
            client.get("%s-%d" % (path, i))
            times.append(time.perf_counter() - start)
        if window is not None:
            window["end"] = time.time()
        return times
    finally:
        client.close()


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def metrics(admin_port):
    conn = http.client.HTTPConnection("127.0.0.1", admin_port, timeout=5)
    try:
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        if response.status != 200:
            raise RuntimeError("GET /metrics: %d" % response.status)
    finally:
        conn.close()
    values = {}
    for line in text.splitlines():
        if line.startswith("token_sidecar_trace_"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def trace_counts(admin_port):
    m = metrics(admin_port)

    def get(name):
        if name not in m:
            raise RuntimeError("metric %s missing from /metrics" % name)
        return int(m[name])

    return {
        "queue_full": get('token_sidecar_trace_spans_dropped_total{reason="queue_full"}'),
        "export_failed": get('token_sidecar_trace_spans_dropped_total{reason="export_failed"}'),
        "exported": get("token_sidecar_trace_spans_exported_total"),
        "accepted": get('token_sidecar_trace_exports_total{outcome="accepted"}'),
        "failed": get('token_sidecar_trace_exports_total{outcome="failed"}'),
        "queued": get("token_sidecar_trace_queued_spans"),
    }


def spans_with_paths(spans_path, prefix):
    found = {}
    for span in json_lines(spans_path):
        path = span.get("attributes", {}).get("url.path")
        if isinstance(path, str) and path.startswith(prefix):
            found[path] = span
    return found


def await_record(directory, predicate, timeout):
    """The first line of the receiver's requests.jsonl that satisfies `predicate`, waiting up to
    `timeout` seconds; None if none did."""
    deadline = time.monotonic() + max(0.0, timeout)
    path = os.path.join(directory, "requests.jsonl")
    while True:
        for record in json_lines(path):
            if predicate(record):
                return record
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def write_control(directory, control):
    tmp = os.path.join(directory, "control.json.tmp")
    with open(tmp, "w") as f:
        json.dump(control, f)
    os.rename(tmp, os.path.join(directory, "control.json"))


def await_spans(proxy_port, spans_path, prefix, since, count=20, interval=0.5):
    """Sends GET prefix-N every `interval` s (at most `count`) until a span of one of them is in
    spans.jsonl; seconds from `since` to the first seen (None: none within RESUME_LIMIT), and
    how many of the requests sent had arrived by the end."""
    client = Client(proxy_port)
    sent = []
    seen_at = None
    try:
        next_send = time.monotonic()
        while time.monotonic() - since < RESUME_LIMIT:
            now = time.monotonic()
            if len(sent) < count and now >= next_send:
                path = "%s%d" % (prefix, len(sent))
                client.get(path)
                sent.append(path)
                next_send = now + interval
            found = spans_with_paths(spans_path, prefix)
            if any(path in found for path in sent):
                seen_at = time.monotonic() - since
                break
            time.sleep(0.02)
    finally:
        client.close()
    found = spans_with_paths(spans_path, prefix)
    return seen_at, sum(1 for path in sent if path in found), len(sent), found


# ---------------------------------------------------------------- the check

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, spans)")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    if not os.access(binary, os.X_OK):
        log("trace-check: FAILED: no executable at %s" % binary)
        return 1

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    atexit.register(kill_all)
    work = tempfile.mkdtemp(prefix="trace-check-")
    keep = args.keep
    started = time.monotonic()
    rows = []
    numbers = {}
    try:
        return run(binary, work, rows, numbers, started)
    except Exception as error:  # a harness failure is a failure too
        keep = True
        fail("%s: %s" % (type(error).__name__, error))
        report(rows, numbers, started)
        log("work directory kept: %s" % work)
        log("trace-check: FAILED: " + "; ".join(failures))
        return 1
    finally:
        kill_all()
        if not keep and not failures:
            shutil.rmtree(work, ignore_errors=True)
        elif not keep:
            log("work directory kept: %s" % work)


def run(binary, work, rows, numbers, started):
    python = sys.executable
    receiver_dir = os.path.join(work, "receiver")
    os.makedirs(receiver_dir)
    spans_path = os.path.join(receiver_dir, "spans.jsonl")

    # 1. backend; receiver started for a port, then stopped.
    backend, backend_port = start_fixture(["python3", os.path.join(FIXTURES, "backend.py"), "--port", "0"],
                                          "backend", os.path.join(work, "backend.err"))
    if backend_port is None:
        raise RuntimeError("backend exited before listening")
    receiver, receiver_port = start_receiver(python, receiver_dir, 0, os.path.join(work, "receiver.err"))
    stop(receiver)
    log("backend :%d, receiver port %d (stopped)" % (backend_port, receiver_port))

    config_path = os.path.join(work, "sidecar.yaml")
    with open(config_path, "w") as f:
        f.write('listen: "127.0.0.1:0"\nadmin: "127.0.0.1:0"\naccessLog: false\n'
                'credentials:\n  api: {type: static, token: "abc"}\n'
                'routes:\n  - host: "api.test"\n    upstream: "http://127.0.0.1:%d"\n    credential: api\n'
                % backend_port)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}

    def phase(name, times, rss=None, counts=None):
        p50, p99 = percentile(times, 0.5), percentile(times, 0.99)
        rows.append((name, p50, p99, rss, counts))
        log("%-26s p50 %.3f ms  p99 %.3f ms%s" % (name, p50 * 1e3, p99 * 1e3,
                                                  "" if rss is None else "  RSS %.1f MiB" % (rss / 1024)))
        return p50

    # 2. tracing off.
    a, a_port, _ = start_sidecar(binary, config_path, os.path.join(work, "sidecar-a.log"), base_env)
    p50_a = phase("A tracing off", timed_run(a_port, "/a", WARMUP, TIMED), rss_kib(a.pid))
    stop(a)
    bound = 1.2 * p50_a + 0.002
    numbers["bound"] = bound

    def check_p50(name, p50):
        if p50 > bound:
            fail("%s: p50 %.3f ms > 1.2 x %.3f ms + 2 ms = %.3f ms" % (name, p50 * 1e3, p50_a * 1e3, bound * 1e3))

    def check_rss(name, pid):
        rss = rss_kib(pid)
        if rss >= RSS_LIMIT_KIB:
            fail("%s: RSS %.1f MiB >= 64 MiB" % (name, rss / 1024))
        return rss

    def check_dropped(name, before, after):
        dropped = lambda c: c["queue_full"] + c["export_failed"]
        if dropped(after) <= dropped(before):
            fail("%s: no span counted dropped (before %s, after %s)" % (name, json.dumps(before), json.dumps(after)))

    # 3. tracing on, receiver down.
    env = dict(base_env,
               OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:%d" % receiver_port,
               OTEL_BSP_SCHEDULE_DELAY="100",
               OTEL_BSP_MAX_QUEUE_SIZE="256",
               OTEL_BSP_MAX_EXPORT_BATCH_SIZE="64")
    b, b_port, b_admin = start_sidecar(binary, config_path, os.path.join(work, "sidecar-b.log"), env)
    times = timed_run(b_port, "/down", WARMUP, TIMED)
    deadline = time.monotonic() + 5
    while True:
        counts = trace_counts(b_admin)
        if counts["queue_full"] + counts["export_failed"] > 0 or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    rss = check_rss("receiver down", b.pid)
    check_p50("receiver down", phase("B receiver down", times, rss, counts))
    numbers["down"] = counts
    log("  metrics: %s" % json.dumps(counts))
    if counts["queue_full"] + counts["export_failed"] == 0:
        fail("receiver down: no span counted dropped within 5 s (%s)" % json.dumps(counts))
    if counts["exported"] != 0:
        fail("receiver down: %d spans counted exported with nothing listening" % counts["exported"])

    # 4. the receiver comes back on the same port.
    receiver, port = start_receiver(python, receiver_dir, receiver_port, os.path.join(work, "receiver.err"),
                                    retry_for=5.0)
    listening_at = time.monotonic()
    resumed, arrived, sent, found = await_spans(b_port, spans_path, "/back-", listening_at)
    numbers["resume"] = resumed
    log("receiver back on :%d: first /back- span after %s (%d of %d /back- requests' spans arrived)"
        % (port, "never" if resumed is None else "%.2f s" % resumed, arrived, sent))
    if resumed is None:
        fail("receiver back: no span of the /back- requests within %.0f s of the receiver listening "
             "(%s)" % (RESUME_LIMIT, json.dumps(trace_counts(b_admin))))
    else:
        span = next(iter(found.values()))
        if span["attributes"].get("url.scheme") != "http":
            fail("the requests were not absolute-form (server span attributes %s)" % json.dumps(span["attributes"]))

    # 5. slow receiver. A few requests first, so that an export (sleeping 3 s in the receiver)
    # is under way while the timed ones run; checked afterwards from the receiver's log.
    before = trace_counts(b_admin)
    write_control(receiver_dir, {"mode": "slow", "delay": 3})
    window = {}
    times = timed_run(b_port, "/slow", 10, TIMED, pause=0.3, window=window)
    rss = check_rss("receiver slow", b.pid)
    counts = trace_counts(b_admin)
    numbers["slow"] = counts
    check_p50("receiver slow", phase("B receiver slow (3 s)", times, rss, counts))
    log("  metrics: %s" % json.dumps(counts))
    check_dropped("receiver slow", before, counts)
    # The export under way ends (3 s) before its line is written.
    overlap = await_record(receiver_dir, lambda r: r.get("mode") == "slow" and r.get("time") is not None
                           and r["time"] <= window["end"] and r["time"] + 3 >= window["start"],
                           window["end"] + 5 - time.time())
    if overlap is None:
        fail("receiver slow: no slow export was under way while the timed requests ran "
             "(the phase proved nothing; receiver log %s)" % os.path.join(receiver_dir, "requests.jsonl"))
    else:
        log("  a slow export was under way during the timed requests (sent at %+.2f s of the window)"
            % (overlap["time"] - window["start"]))

    # 6. 503 + Retry-After, then ok again. The timed requests start once the receiver has
    # answered 503 (the slow export under way ends first), so the exporter is backing off.
    control_at = time.time()
    write_control(receiver_dir, {"mode": "status", "status": 503, "retry_after": 1})
    first_503 = await_record(receiver_dir, lambda r: r.get("status") == 503 and r.get("time", 0) >= control_at - 0.01, 8)
    if first_503 is None:
        raise RuntimeError("the receiver answered no export with 503 within 8 s of being told to")
    before = trace_counts(b_admin)
    times = timed_run(b_port, "/unavail", 10, TIMED)
    rss = check_rss("receiver 503", b.pid)
    counts = trace_counts(b_admin)
    numbers["503"] = counts
    check_p50("receiver 503", phase("B receiver 503", times, rss, counts))
    log("  metrics: %s" % json.dumps(counts))
    check_dropped("receiver 503", before, counts)
    if counts["exported"] != before["exported"]:
        fail("receiver 503: %d spans counted exported while every export was refused"
             % (counts["exported"] - before["exported"]))
    write_control(receiver_dir, {"mode": "ok"})
    ok_at = time.monotonic()
    resumed_ok, arrived, sent, _ = await_spans(b_port, spans_path, "/ok-", ok_at)
    numbers["resume_ok"] = resumed_ok
    log("receiver ok again: first /ok- span after %s (%d of %d /ok- requests' spans arrived)"
        % ("never" if resumed_ok is None else "%.2f s" % resumed_ok, arrived, sent))
    if resumed_ok is None:
        fail("receiver ok after 503: no span of the /ok- requests within %.0f s (%s)"
             % (RESUME_LIMIT, json.dumps(trace_counts(b_admin))))
    numbers["final"] = trace_counts(b_admin)
    numbers["rss_final"] = check_rss("end", b.pid)
    if b.poll() is not None:
        fail("sidecar B exited (%s)" % b.returncode)

    report(rows, numbers, started)
    if failures:
        log("trace-check: FAILED: " + "; ".join(failures))
        return 1
    log("trace-check: OK")
    return 0


def report(rows, numbers, started):
    log("")
    log("| phase | p50 ms | p99 ms | RSS MiB | dropped queue_full | dropped export_failed | exported | exports ok/failed |")
    log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, p50, p99, rss, counts in rows:
        c = counts or {}
        log("| %s | %.3f | %.3f | %s | %s | %s | %s | %s |" % (
            name, p50 * 1e3, p99 * 1e3, "-" if rss is None else "%.1f" % (rss / 1024),
            c.get("queue_full", "-"), c.get("export_failed", "-"), c.get("exported", "-"),
            "-" if not c else "%d/%d" % (c["accepted"], c["failed"])))
    if "bound" in numbers:
        log("p50 bound (1.2 x A + 2 ms): %.3f ms" % (numbers["bound"] * 1e3))

    def seconds(key):
        value = numbers.get(key, "n/a")
        return value if isinstance(value, str) else ("never" if value is None else "%.2f s" % value)

    log("export resumed after the receiver came back: %s; after 503 -> ok: %s" % (seconds("resume"), seconds("resume_ok")))
    if "final" in numbers:
        log("final metrics: %s; RSS %.1f MiB" % (json.dumps(numbers["final"]), numbers["rss_final"] / 1024))
    log("total %.1f s" % (time.monotonic() - started))


if __name__ == "__main__":
    sys.exit(main())
