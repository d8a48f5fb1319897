#!/usr/bin/env python3
"""soak.py — mixed load, sampler and verdict for Benchmarks/soak.sh (python3 stdlib only).

  load    --proxy H:P --backend H:P --seconds S --rate R --workers W --out FILE
          W threads issue about R operations per second in all, for S seconds, through the proxy
          (absolute-form). Two routes: api.test (static token "abc") and oauth.test (oauth2 token
          from token_server.py); every request carries r=a / r=o in its query so the backend's log
          says which route it came through. Operations (weights in OPS below):
            get        small GET, on the worker's keep-alive connection or a new one; the backend's
                       echo must show exactly one Authorization with that route's token
            download   1 MiB, Content-Length or chunked, keep-alive or new; SHA-256 checked
            upload     1 MiB or 10 KiB POST, Content-Length or chunked; the backend's SHA-256 checked
            reject     GET /reject?token=abc on api.test: the backend answers 401 to the injected
                       static token (provoked; on api.test only, because a 401 to the oauth2 token
                       would make the proxy refetch and spoil the token count)
            status5xx  GET /status/500|502|503: the backend's 5xx (provoked)
            abort      1 MiB download on a new connection, closed (FIN or RST) after 64 KiB
                       (provoked; the head must still be a 200)
          Errors the load did not provoke: a status other than the expected one, a connection
          failure, a timeout, a wrong body hash, a wrong Authorization, a keep-alive connection that
          the proxy closed before answering.
  sample  --pid P --admin H:P --seconds S --interval 5 --out FILE
          VmRSS, open descriptors, client and upstream connections every --interval s.
  report  --dir DIR --seconds S --expires-in E ...   the verdict (see soak.sh).
"""

import argparse
import collections
import hashlib
import json
import os
import random
import re
import socket
import struct
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ left in Benchmarks/
import proxyclient  # noqa: E402  (Benchmarks/proxyclient.py: Conn, Deadline, upload_block)

MIB = 1 << 20
OP_TIMEOUT = 30.0
# (name, weight); keep-alive / route / framing are drawn per operation.
OPS = [("get", 40), ("download", 15), ("upload_big", 12), ("upload_small", 8), ("reject", 7),
       ("status5xx", 10), ("abort", 8)]


def now():
    return time.monotonic()


pct = proxyclient.percentile


dump = proxyclient.write_json


# ---------------------------------------------------------------- load -----------------------

class Unprovoked(Exception):
    """An outcome the load did not ask for."""


class StaleKeepAlive(Exception):
    """The proxy closed a kept-alive connection before answering."""


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = collections.Counter()          # op -> outcomes as expected
        self.provoked = collections.Counter()    # e.g. "401 from backend", "abort mid-response"
        self.errors = collections.Counter()      # category -> count
        self.examples = collections.defaultdict(list)
        self.latency = collections.defaultdict(list)
        self.closes = collections.Counter()      # the proxy said Connection: close after ...

    def good(self, key, ms, provoked=None):
        with self.lock:
            self.ok[key] += 1
            self.latency[key].append(ms)
            if provoked:
                self.provoked[provoked] += 1

    def bad(self, key, category, detail, t):
        with self.lock:
            self.errors["%s: %s" % (key, category)] += 1
            ex = self.examples["%s: %s" % (key, category)]
            if len(ex) < 3:
                ex.append("t=%.1fs %s" % (t, detail[:300]))


class Worker(threading.Thread):
    def __init__(self, n, a, stats, start_t, upload_big, shas):
        super().__init__(daemon=True)
        self.n, self.a, self.stats, self.start_t = n, a, stats, start_t
        self.rnd = random.Random(1000 + n)
        self.conn = None          # the keep-alive connection to the proxy
        self.conn_used = 0
        self.upload_big = upload_big
        self.shas = shas

    # -- connections
    def fresh(self):
        c = proxyclient.Conn(self.a.proxy, OP_TIMEOUT, proxyclient.Deadline(OP_TIMEOUT))
        return c

    def keepalive(self):
        if self.conn is None:
            self.conn = self.fresh()
            self.conn_used = 0
        self.conn.deadline = proxyclient.Deadline(OP_TIMEOUT)
        return self.conn

    def drop(self):
        if self.conn is not None:
            try:
                self.conn.sock.close()
            except OSError:
                pass
        self.conn = None

    # -- one exchange
    def exchange(self, ka, method, path, route, body=None, chunked=False, sink=None, close_after=None):
        """Sends one request; returns (status, headers, body bytes or None). close_after: read the
        head and that many body bytes, then close (abort)."""
        host = "api.test" if route == "a" else "oauth.test"
        sep = "&" if "?" in path else "?"
        target = "http://%s%s%sr=%s" % (host, path, sep, route)
        c = self.keepalive() if ka else self.fresh()
        reused = ka and self.conn_used > 0
        head = "%s %s HTTP/1.1\r\nHost: %s\r\n" % (method, target, host)
        if body is not None:
            head += "Content-Type: application/octet-stream\r\n"
            head += "Transfer-Encoding: chunked\r\n" if chunked else "Content-Length: %d\r\n" % len(body)
        if not ka:
            head += "Connection: close\r\n"
        head += "\r\n"
        try:
            try:
                c.sock.sendall(head.encode())
                if body is not None:
                    mv = memoryview(body)
                    step = 256 * 1024
                    for off in range(0, len(body), step):
                        piece = mv[off:off + step]
                        c.sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n" if chunked else piece)
                    if chunked:
                        c.sock.sendall(b"0\r\n\r\n")
                status, headers = c.read_head()
            except (ConnectionError, OSError) as e:
                if reused and not isinstance(e, socket.timeout):
                    raise StaleKeepAlive("%s: %s (connection used %d times)" % (type(e).__name__, e, self.conn_used))
                raise
            if close_after is not None:
                got = 0
                if c.buf:
                    got += len(c.buf)
                    c.buf.clear()
                for _ in range(1000):
                    if got >= close_after:
                        break
                    k = c.sock.recv(65536)
                    if not k:
                        raise ConnectionError("EOF after %d body bytes (before the abort)" % got)
                    got += len(k)
                return status, headers, None
            out = bytearray() if sink is None else None
            framing, keep = c.read_body(method, status, headers, sink or out.extend)
            closing = (not keep) or any(k == "connection" and "close" in v.lower() for k, v in headers)
            if ka:
                self.conn_used += 1
                if closing:
                    with self.stats.lock:
                        self.stats.closes["after %d" % status] += 1
                    self.drop()
            return status, headers, out
        finally:
            if not ka:
                if close_after is not None and self.rnd.random() < 0.5:
                    # RST instead of FIN: SO_LINGER 0
                    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.sock.close()

    def run(self):
        a = self.a
        rate = a.rate / a.workers
        next_t = self.start_t + self.rnd.random() / rate
        end = self.start_t + a.seconds
        names = [o for o, _ in OPS]
        weights = [w for _, w in OPS]
        for _ in range(int(a.seconds * rate * 2) + 10):
            t = now()
            if t >= end:
                break
            if t < next_t:
                time.sleep(min(next_t - t, end - t))
                continue
            next_t += 1.0 / rate
            if next_t < now() - 1.0:
                next_t = now()  # fell behind: do not burst
            op = self.rnd.choices(names, weights)[0]
            try:
                self.one(op)
            except Exception as e:  # noqa: BLE001 — every failure is counted
                self.drop()
                cat = "keep-alive connection closed by the proxy before a response" \
                    if isinstance(e, StaleKeepAlive) else \
                    (str(e).split(":")[0] if isinstance(e, Unprovoked) else type(e).__name__)
                self.stats.bad(op, cat, "%s: %s" % (type(e).__name__, e), now() - self.start_t)
        self.drop()

    def check_status(self, status, want, what):
        if status != want:
            raise Unprovoked("status %d (want %d): %s" % (status, want, what))

    def one(self, op):
        r = self.rnd
        route = "a" if r.random() < 0.5 else "o"
        ka = r.random() < 0.6
        t0 = now()
        key = op
        provoked = None
        if op == "get":
            key = "get %s" % ("keep-alive" if ka else "new-conn")
            status, _, body = self.exchange(ka, "GET", "/", route)
            self.check_status(status, 200, "GET /")
            echo = json.loads(bytes(body))
            auth = [v for k, v in echo["headers"] if k.lower() == "authorization"]
            if route == "a" and auth != ["Bearer abc"]:
                raise Unprovoked("wrong Authorization: %r" % auth)
            if route == "o" and (len(auth) != 1 or not auth[0].startswith("Bearer tok-")):
                raise Unprovoked("wrong Authorization: %r" % auth)
        elif op == "download":
            mode = r.choice(("cl", "chunked"))
            key = "download 1MiB %s" % mode
            h = hashlib.sha256()
            n = [0]

            def sink(b):
                h.update(b)
                n[0] += len(b)
            status, headers, _ = self.exchange(ka, "GET", "/download?size=%d&mode=%s" % (MIB, mode), route, sink=sink)
            self.check_status(status, 200, "download")
            if n[0] != MIB or h.hexdigest() != self.shas[MIB]:
                raise Unprovoked("body mismatch: %d bytes, sha %s" % (n[0], h.hexdigest()[:16]))
        elif op in ("upload_big", "upload_small"):
            chunked = r.random() < 0.5
            big = op == "upload_big"
            data = self.upload_big if big else self.upload_big[:10 * 1024]
            key = "upload %s %s" % ("1MiB" if big else "10KiB", "chunked" if chunked else "content-length")
            status, _, body = self.exchange(ka, "POST", "/upload", route, body=data, chunked=chunked)
            self.check_status(status, 200, "upload")
            resp = json.loads(bytes(body))
            want = hashlib.sha256(data).hexdigest() if not big else self.shas["upload"]
            if resp.get("body_len") != len(data) or resp.get("body_sha256") != want:
                raise Unprovoked("backend got a different body: %r" % resp)
        elif op == "reject":
            status, _, _ = self.exchange(ka, "GET", "/reject?token=abc", "a")
            self.check_status(status, 401, "backend 401 to the static token")
            provoked = "401 from the backend"
        elif op == "status5xx":
            code = r.choice((500, 502, 503))
            status, _, _ = self.exchange(ka, "GET", "/status/%d" % code, route)
            self.check_status(status, code, "backend /status/%d" % code)
            provoked = "%d from the backend" % code
        elif op == "abort":
            mode = r.choice(("cl", "chunked"))
            status, _, _ = self.exchange(False, "GET", "/download?size=%d&mode=%s" % (MIB, mode), route,
                                         close_after=64 * 1024)
            self.check_status(status, 200, "download before the abort")
            provoked = "client abort mid-response"
        self.stats.good(key, (now() - t0) * 1000.0, provoked)


def load(a):
    with urllib.request.urlopen("http://%s/download-sha?size=%d" % (a.backend, MIB), timeout=10) as r:
        shas = {MIB: r.read().decode().strip()}
    block = proxyclient.upload_block()
    data = bytes(block[:MIB])
    shas["upload"] = hashlib.sha256(data).hexdigest()
    stats = Stats()
    start = now()
    ws = [Worker(i, a, stats, start, data, shas) for i in range(a.workers)]
    for w in ws:
        w.start()
    for w in ws:
        w.join(a.seconds + OP_TIMEOUT + 10)
    lat = {k: {"n": len(v), "p50_ms": round(pct(v, 50), 2), "p99_ms": round(pct(v, 99), 2)}
           for k, v in sorted(stats.latency.items())}
    dump(a.out, {"seconds": round(now() - start, 1), "ok": dict(stats.ok), "provoked": dict(stats.provoked),
                 "errors": dict(stats.errors), "examples": dict(stats.examples), "latency": lat,
                 "proxy_closed_keepalive": dict(stats.closes), "workers": a.workers, "rate": a.rate})


# ---------------------------------------------------------------- sampler --------------------

def scrape(admin):
    return proxyclient.scrape_metrics(admin)


def sample(a):
    t0 = time.time()
    rows = []
    for i in range(int(a.seconds / a.interval) + 2):
        target = t0 + i * a.interval
        if target > t0 + a.seconds:
            break
        time.sleep(max(0.0, target - time.time()))
        try:
            with open("/proc/%d/status" % a.pid) as f:
                rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
            fds = len(os.listdir("/proc/%d/fd" % a.pid))
        except (OSError, StopIteration):
            rows.append({"t": round(time.time() - t0, 2), "died": True})
            break
        row = {"t": round(time.time() - t0, 2), "rss_kib": rss, "fds": fds}
        try:
            m = scrape(a.admin)
            row["client_connections"] = int(m.get("token_sidecar_client_connections", 0))
            for k, v in m.items():
                if k.startswith("token_sidecar_upstream_connections{"):
                    s = re.search(r'state="([^"]*)"', k)
                    row["up_" + (s.group(1) if s else "?")] = row.get("up_" + (s.group(1) if s else "?"), 0) + int(v)
        except Exception:  # noqa: BLE001 — the sample still has RSS and fds
            pass
        rows.append(row)
        with open(a.out, "w") as f:  # rewritten each time: the report sees what there is
            json.dump(rows, f)


# ---------------------------------------------------------------- report ---------------------

def slope(points):
    """Least squares y = a + b x; returns (b, standard error of b) or (None, None)."""
    n = len(points)
    if n < 3:
        return None, None
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None, None
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    a0 = my - b * mx
    resid = sum((y - a0 - b * x) ** 2 for x, y in points)
    se = (resid / (n - 2) / sxx) ** 0.5
    return b, se


def report(a):
    d = a.dir
    fails = []
    ld = json.load(open(os.path.join(d, "load.json")))
    rows = json.load(open(os.path.join(d, "samples.json")))
    print()
    print("load: %.0f s, %d workers, ~%s ops/s" % (ld["seconds"], ld["workers"], ld["rate"]))
    total_ok = sum(ld["ok"].values())
    print("  %-32s %7s %9s %9s" % ("operation (as expected)", "count", "p50 ms", "p99 ms"))
    for k, v in sorted(ld["latency"].items()):
        print("  %-32s %7d %9.2f %9.2f" % (k, v["n"], v["p50_ms"], v["p99_ms"]))
    print("  %-32s %7d" % ("total", total_ok))
    if ld["provoked"]:
        print("  provoked on purpose: " + ", ".join("%s x%d" % kv for kv in sorted(ld["provoked"].items())))
    if ld.get("proxy_closed_keepalive"):
        print("  proxy closed a keep-alive connection (Connection: close) " +
              ", ".join("%s x%d" % kv for kv in sorted(ld["proxy_closed_keepalive"].items())))
    nerr = sum(ld["errors"].values())
    print("unprovoked errors: %d" % nerr)
    for k, v in sorted(ld["errors"].items(), key=lambda kv: -kv[1]):
        print("  %s x%d" % (k, v))
        for ex in ld["examples"].get(k, []):
            print("      e.g. %s" % ex)
    if nerr:
        fails.append("%d unprovoked errors" % nerr)

    # -- backend's view: every request carried exactly its route's token, never an expired one
    issued = {}
    fetch_times = []
    for line in open(os.path.join(d, "token.log")):
        e = json.loads(line)
        if e["time"] > a.t_end:
            continue  # a refresh after the load ended (the proxy was still running)
        fetch_times.append(e["time"])
        issued[e["token"]] = e["time"]
    bad_auth = collections.Counter()
    used = collections.Counter()
    late = 0
    n_o = n_a = 0
    succ = sorted(issued.items(), key=lambda kv: kv[1])
    next_issue = {succ[i][0]: succ[i + 1][1] for i in range(len(succ) - 1)}
    for line in open(os.path.join(d, "backend.log")):
        e = json.loads(line)
        if e.get("event") != "request":
            continue
        r = re.search(r"[?&]r=([ao])\b", e["target"])
        if not r:
            continue
        auth = [v for k, v in e["headers"] if k.lower() == "authorization"]
        if r.group(1) == "a":
            n_a += 1
            if auth != ["Bearer abc"]:
                bad_auth["api.test: %r" % auth[:2]] += 1
            continue
        n_o += 1
        tok = auth[0][7:] if len(auth) == 1 and auth[0].startswith("Bearer ") else None
        if tok not in issued:
            bad_auth["oauth.test: %r" % auth[:2]] += 1
            continue
        used[tok] += 1
        if e["time"] > issued[tok] + a.expires_in:
            bad_auth["oauth.test: expired token used"] += 1
        if tok in next_issue and e["time"] > next_issue[tok] + 2.0:
            late += 1
    print("backend saw %d api.test and %d oauth.test requests; %d distinct oauth2 tokens used"
          % (n_a, n_o, len(used)))
    if bad_auth:
        fails.append("wrong or expired Authorization at the backend")
        for k, v in bad_auth.items():
            print("  WRONG: %s x%d" % (k, v))
    if late:
        print("  note: %d requests used a token more than 2 s after its successor was issued" % late)

    # -- token fetches vs lifetime
    period = a.refresh_at * a.expires_in
    fetch_times.sort()
    span = a.t_end - fetch_times[0] if fetch_times else 0
    expected = 1 + int(span // period) if fetch_times else 1
    gaps = [y - x for x, y in zip(fetch_times, fetch_times[1:])]
    ok_tokens = fetch_times and abs(len(fetch_times) - expected) <= a.token_tolerance
    print("token fetches: %d, expected %d (1 + %.0f s / %.1f s refresh period) +- %d: %s"
          % (len(fetch_times), expected, span, period, a.token_tolerance, "ok" if ok_tokens else "MISMATCH"))
    if gaps:
        print("  intervals between fetches: min %.1f s, median %.1f s, max %.1f s"
              % (min(gaps), pct(gaps, 50), max(gaps)))
    if not ok_tokens:
        fails.append("token fetch count")

    # -- RSS / descriptors
    live = [r for r in rows if "rss_kib" in r]
    if any(r.get("died") for r in rows):
        fails.append("proxy died")
        print("PROXY DIED at t=%.0f s" % [r for r in rows if r.get("died")][0]["t"])
    warm = a.seconds * 0.2
    tail = [r for r in live if r["t"] >= warm and r["t"] <= a.seconds + 1]
    print("samples: %d every %.0f s; after the %.0f s warm-up: %d" % (len(live), a.interval, warm, len(tail)))
    if live:
        print("  RSS: first %.1f MiB, min %.1f, max %.1f, last %.1f MiB; descriptors: first %d, min %d, max %d, last %d"
              % (live[0]["rss_kib"] / 1024, min(r["rss_kib"] for r in live) / 1024,
                 max(r["rss_kib"] for r in live) / 1024, live[-1]["rss_kib"] / 1024, live[0]["fds"],
                 min(r["fds"] for r in live), max(r["fds"] for r in live), live[-1]["fds"]))
    for what, key, unit, scale, limit in (("RSS", "rss_kib", "KiB/min", 1.0, a.rss_slope_limit),
                                          ("descriptors", "fds", "fds/min", 1.0, a.fd_slope_limit)):
        b, se = slope([(r["t"] / 60.0, r[key] * scale) for r in tail])
        if b is None:
            print("  %s slope: too few samples" % what)
            fails.append("too few samples")
            continue
        # Non-flat = above the limit AND clearly so (more than 3 standard errors above zero):
        # a few samples after a burst must not fail a run, a steady climb must.
        bad = b > limit and b > 3 * se
        print("  %s slope: %+.1f %s (+- %.1f standard error); limit %.0f %s: %s"
              % (what, b, unit, se, limit, unit, "NOT FLAT" if bad else "flat"))
        if bad:
            fails.append("%s slope" % what)
    st = json.load(open(os.path.join(d, "settle.json")))
    print("after the load: %s (client connections %s, fds %s, allowed %s = idle proxy %s + pooled %s)"
          % ("back to idle" if st["settled"] else "NOT back to idle", st["client_connections"], st["fds"],
             st["allowed_fds"], st["fd0"], st["pooled"]))
    if not st["settled"]:
        fails.append("descriptors or connections left after the load")
    print()
    if fails:
        print("soak: FAILED: " + "; ".join(fails))
        return 1
    print("soak: passed")
    return 0


def settle(a):
    """Waits (at most --seconds) until the proxy holds no client connection and its descriptors
    are back to the idle count (+ pooled backend connections): a closed client's descriptor stays
    during the proxy's lingering close (up to ~6 s)."""
    t0 = now()
    res = {}
    for _ in range(int(a.seconds / 0.25) + 2):
        cc, pooled = None, 0
        try:
            m = scrape(a.admin)
            cc = int(m.get("token_sidecar_client_connections", 0))
            pooled = sum(int(v) for k, v in m.items() if k.startswith("token_sidecar_upstream_connections{"))
        except Exception:  # noqa: BLE001
            pass
        fds = len(os.listdir("/proc/%d/fd" % a.pid))
        allowed = a.fd0 + pooled
        res = {"client_connections": cc, "fds": fds, "allowed_fds": allowed, "fd0": a.fd0, "pooled": pooled,
               "settled": cc == 0 and fds <= allowed, "seconds": round(now() - t0, 2)}
        if res["settled"] or now() - t0 >= a.seconds:
            break
        time.sleep(0.25)
    dump(a.out, res)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("load")
    p.add_argument("--proxy", required=True)
    p.add_argument("--backend", required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--rate", type=float, default=20)
    p.add_argument("--workers", type=int, default=6)
    p.add_argument("--out", required=True)
    p = sub.add_parser("sample")
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--admin", required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--interval", type=float, default=5)
    p.add_argument("--out", required=True)
    p = sub.add_parser("settle")
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--admin", required=True)
    p.add_argument("--fd0", type=int, required=True)
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--out", required=True)
    p = sub.add_parser("report")
    p.add_argument("--dir", required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--interval", type=float, default=5)
    p.add_argument("--expires-in", type=float, required=True)
    p.add_argument("--refresh-at", type=float, default=0.8)
    p.add_argument("--t-end", type=float, required=True, help="epoch seconds when fetches were counted")
    p.add_argument("--token-tolerance", type=int, default=1)
    p.add_argument("--rss-slope-limit", type=float, default=256)
    p.add_argument("--fd-slope-limit", type=float, default=2)
    a = ap.parse_args()
    if a.cmd == "report":
        sys.exit(report(a))
    {"load": load, "sample": sample, "settle": settle}[a.cmd](a)


if __name__ == "__main__":
    main()
