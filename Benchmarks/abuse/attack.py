#!/usr/bin/env python3
"""attack.py — abusive clients, the canary and the proxy watcher for Benchmarks/abuse/run.sh.

python3 standard library only. Every subcommand is bounded by --seconds (plus a few seconds of
connect / read timeouts) and writes one JSON document to --out.

  canary      one small GET through the proxy every --interval s, each on a NEW connection with
              an overall --timeout; records latency (connect -> response complete) and failures
              (exception, timeout, or a status other than 200).
  slowloris   keeps --conns connections each sending a request head that never ends: the request
              line and Host at once, then one more header line every --interval s.
  slowpost    keeps --conns connections each sending a complete POST head (Content-Length
              --body-size) and then dripping --drip bytes of body every --interval s.
  slowread    keeps --conns connections, each with a tiny SO_RCVBUF (set before connect, so the
              advertised window stays small), asking for a large response and, once its head
              has arrived, reading --drip bytes every --interval s.
  churn       opens --total connections at an even rate over --seconds and drops each as soon as
              it is connected: a third with FIN (close), a third with RST (SO_LINGER 0), a third
              after sending a partial request head (then RST).
  bigheaders  keeps --conns connections each sending one GET with --fields header fields of
              --field-size bytes (100 x 8 KiB by default, far beyond the proxy's 64 KiB / 100
              field limits), while reading what the proxy answers; a new one replaces each
              finished one (at most --rate per second).
  watch       samples the proxy every 0.5 s (VmRSS, open descriptors, open client connections,
              upstream connections by state) and records the peaks.
  metrics     snapshot of the proxy's counters (requests by code, errors by Proxy-Status type).
  settle      waits (at most --seconds) until the proxy holds no client connection and no leased
              upstream connection; records what it still holds.

The slow attackers (slowloris, slowpost, slowread) reconnect when the proxy ends a connection,
like slowhttptest does, up to --max-total connections. For every connection they record what
the proxy did: the status of its first response (if any), how long after connecting it came,
and how the connection ended (eof = the proxy closed it, reset = RST, held = still open when the
attack stopped).
"""

import argparse
import collections
import errno
import heapq
import json
import os
import re
import selectors
import socket
import struct
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import proxyclient  # noqa: E402  (Benchmarks/proxyclient.py)

CONNECT_TIMEOUT = 2.0
STATUS_RE = re.compile(rb"^HTTP/1\.[01] (\d{3})")


def now():
    return time.monotonic()


pct = proxyclient.percentile


dump = proxyclient.write_json


def hostport(s):
    host, _, port = s.rpartition(":")
    return host, int(port)


# ---------------------------------------------------------------- canary ---------------------

def paced(seconds, interval, once):
    """Calls once() -> (ok, detail) every `interval` s for `seconds` s, on a fixed schedule: slots
    missed while a call was stuck are skipped, not bunched up. Returns the samples, each
    [t_since_start, ms, ok, detail], ms = how long that call took. (h2attack.py's canary too.)"""
    start = now()
    end = start + seconds
    samples = []  # [t_since_start, ms, ok, detail]
    next_t = start
    for _ in range(int(seconds / interval) + 2):
        t = now()
        if t >= end:
            break
        if t < next_t:
            time.sleep(next_t - t)
        t0 = now()
        ok, detail = once()
        ms = (now() - t0) * 1000.0
        samples.append([round(t0 - start, 3), round(ms, 3), ok, detail])
        next_t += interval
        if next_t < now():
            next_t = now()
    return samples


def recv_by(sock, deadline, timeout):
    """sock.recv(65536), waiting no later than `deadline`: a canary's whole answer is due within
    `timeout` s (TimeoutError once that has passed). (h2attack.py's canary too.)"""
    left = deadline - now()
    if left <= 0:
        raise TimeoutError("no complete response within %.1f s" % timeout)
    sock.settimeout(left)
    return sock.recv(65536)


def canary_once(host, port, req, timeout):
    """One request `req` on a new connection, complete within `timeout` s: (ok, detail)."""
    ok, detail = False, ""
    sock = None
    try:
        deadline = now() + timeout
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.sendall(req)
        buf = bytearray()
        while True:
            chunk = recv_by(sock, deadline, timeout)
            if not chunk:
                break
            buf += chunk
            if len(buf) > 1 << 20:
                raise ValueError("response too large")
        m = STATUS_RE.match(buf)
        if not m:
            detail = "no HTTP status (%d bytes)" % len(buf)
        elif m.group(1) != b"200":
            detail = "status %s" % m.group(1).decode()
        elif not buf.endswith(b"ok\n"):
            detail = "200 with unexpected body %r" % bytes(buf[-20:])
        else:
            ok = True
    except (OSError, ValueError) as e:  # socket.timeout and TimeoutError are OSErrors
        detail = "%s: %s" % (type(e).__name__, e)
    finally:
        if sock is not None:
            sock.close()
    return ok, detail


def canary(a):
    host, port = hostport(a.proxy)
    req = ("GET http://%s/canary HTTP/1.1\r\nHost: %s\r\nUser-Agent: canary\r\nConnection: close\r\n\r\n"
           % (a.host, a.host)).encode()
    # One untimed request first: the very first one pays for python's lazy set-up (~5 ms), which
    # would otherwise be the p99 of every phase.
    try:
        with socket.create_connection((host, port), timeout=a.timeout) as s:
            s.sendall(req)
            while s.recv(65536):
                pass
    except OSError:
        pass
    samples = paced(a.seconds, a.interval, lambda: canary_once(host, port, req, a.timeout))
    dump(a.out, {"samples": samples, "interval": a.interval, "timeout": a.timeout})


# ---------------------------------------------------------------- attack engine --------------

class Conn:
    __slots__ = ("sock", "idx", "t_open", "t_conn", "t_head", "status", "connected", "out",
                 "head", "head_done", "events", "sent", "recvd", "done", "recv_size", "sent_at_head",
                 "send_error")

    def __init__(self, sock, idx):
        self.sock = sock
        self.idx = idx
        self.t_open = now()
        self.t_conn = None
        self.t_head = None
        self.status = None
        self.connected = False
        self.out = bytearray()
        self.head = bytearray()
        self.head_done = False
        self.events = 0
        self.sent = 0
        self.recvd = 0
        self.done = False
        self.recv_size = 65536
        self.sent_at_head = None
        self.send_error = None


class Connections:
    """Non-blocking connections to one host:port, all on one selector (epoll; cheap on CPU when
    idle): what Engine shares with h2attack.py's engine. A connection has sock, connected, done
    and events (what it is registered for). Subclass hooks: wanted(c) (the events c waits for
    now), on_connect(c) (its connect completed), on_connect_error(c) (it failed), got(c, data),
    flush(c) and finish(c, how); a read that sees the peer reset or close ends the connection
    with how = END_RESET or END_EOF."""
    END_RESET, END_EOF = "reset", "eof"

    def __init__(self, target):
        self.host, self.port = hostport(target)
        self.sel = selectors.DefaultSelector()
        self.conns = {}
        self.opened = 0
        self.max_open = 0
        self.connect_errors = collections.Counter()

    def connect(self, c):
        """Starts c's connect (c.sock non-blocking, its options set); False when it failed at once."""
        self.opened += 1
        err = c.sock.connect_ex((self.host, self.port))
        if err not in (0, errno.EINPROGRESS):
            self.connect_errors[errno.errorcode.get(err, str(err))] += 1
            c.sock.close()
            return False
        self.conns[c.sock.fileno()] = c
        self.max_open = max(self.max_open, len(self.conns))
        self.update(c)
        return True

    def update(self, c):
        """(Re)registers c for the events it waits for now."""
        if c.done:
            return
        ev = self.wanted(c)
        if ev == c.events:
            return
        if c.events == 0:
            self.sel.register(c.sock, ev, c)
        elif ev == 0:
            self.sel.unregister(c.sock)
        else:
            self.sel.modify(c.sock, ev, c)
        c.events = ev

    def read(self, c, size=65536):
        try:
            d = c.sock.recv(size)
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionResetError:
            self.finish(c, self.END_RESET)
            return
        except OSError as e:
            self.finish(c, errno.errorcode.get(e.errno, str(e.errno)))
            return
        if not d:
            self.finish(c, self.END_EOF)
            return
        self.got(c, d)

    def on_event(self, c, mask):
        if c.done:
            return
        if not c.connected:
            if mask & selectors.EVENT_WRITE:
                err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    self.connect_errors[errno.errorcode.get(err, str(err))] += 1
                    self.on_connect_error(c)
                    return
                c.connected = True
                self.on_connect(c)
            return
        if mask & selectors.EVENT_READ:
            self.read(c)
        if not c.done and mask & selectors.EVENT_WRITE:
            self.flush(c)


class Engine(Connections):
    """One selector loop for all attack connections.

    Behaviour hooks: connected(c), timer(c) via self.at(), head(c), want_read(c).
    """

    def __init__(self, a, behaviour):
        super().__init__(a.proxy)
        self.a = a
        self.b = behaviour
        self.timers = []
        self.seq = 0
        self.ends = collections.Counter()
        self.statuses = collections.Counter()
        self.t_head = collections.defaultdict(list)
        self.t_life = []
        self.sent_before_head = []
        self.recvd_total = 0
        self.start = now()
        self.deadline = self.start + a.seconds

    # -- timers
    def at(self, t, c, fn):
        self.seq += 1
        heapq.heappush(self.timers, (t, self.seq, c, fn))

    # -- connections
    def open(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        self.b.before_connect(s)
        c = Conn(s, self.opened)
        if self.connect(c):
            self.at(c.t_open + CONNECT_TIMEOUT, c, self.connect_timeout)

    def connect_timeout(self, c):
        if not c.done and not c.connected:
            self.connect_errors["connect timeout %.0fs" % CONNECT_TIMEOUT] += 1
            self.finish(c, None, count=False)

    def wanted(self, c):
        ev = 0
        if not c.connected or c.out:
            ev |= selectors.EVENT_WRITE
        if c.connected and self.b.want_read(c):
            ev |= selectors.EVENT_READ
        return ev

    def finish(self, c, how, count=True, rst=False):
        if c.done:
            return
        c.done = True
        if c.events:
            self.sel.unregister(c.sock)
            c.events = 0
        self.conns.pop(c.sock.fileno(), None)
        if rst:
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.sock.close()
        if not count:
            return
        st = str(c.status) if c.status else "no-response"
        self.statuses[st] += 1
        self.ends["%s, then %s" % (st, how)] += 1
        if c.t_head is not None and c.t_conn is not None:
            self.t_head[st].append(c.t_head - c.t_conn)
            if c.sent_at_head is not None:
                self.sent_before_head.append(c.sent_at_head)
        if c.t_conn is not None:
            self.t_life.append(now() - c.t_conn)
        self.recvd_total += c.recvd

    def send(self, c, data):
        c.out += data
        self.flush(c)

    def flush(self, c):
        if c.done or not c.connected:
            return
        try:
            while c.out:
                n = c.sock.send(c.out)
                if n <= 0:
                    break
                del c.out[:n]
                c.sent += n
        except BlockingIOError:
            pass
        except OSError as e:
            # The proxy closed (or reset) while we were still sending: collect what it answered.
            c.send_error = errno.errorcode.get(e.errno, str(e.errno))
            c.out.clear()
            self.drain_after_error(c)
            return
        self.update(c)

    def drain_after_error(self, c):
        for _ in range(64):
            try:
                d = c.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            if not d:
                break
            self.got(c, d)
            if c.done:
                return
        self.finish(c, "reset while sending (%s)" % c.send_error)

    def got(self, c, d):
        c.recvd += len(d)
        if not c.head_done:
            c.head += d[:16384]
            m = STATUS_RE.match(c.head)
            if m and c.status is None:
                c.status = int(m.group(1))
            if b"\r\n\r\n" in c.head or len(c.head) >= 16384:
                c.head_done = True
                c.t_head = now()
                c.sent_at_head = c.sent
                self.b.head(c)
                if not c.done:
                    self.update(c)

    def read(self, c, size=None):
        super().read(c, size or c.recv_size)

    def on_connect(self, c):
        c.t_conn = now()
        self.b.connected(c)
        if not c.done:
            self.update(c)

    def on_connect_error(self, c):
        self.finish(c, None, count=False)

    def run(self):
        next_open = self.start
        rate = max(1.0, float(self.a.rate))
        for _ in range(100_000_000):  # bounded by the deadline below
            t = now()
            if t >= self.deadline:
                break
            # open new connections, paced at --rate per second, up to the behaviour's target
            while (t >= next_open and self.b.should_open(self) and self.opened < self.a.max_total):
                self.open()
                next_open += 1.0 / rate
                if next_open < t - 0.05:  # we fell behind (busy loop): do not burst to catch up
                    next_open = t - 0.05
            if next_open < t - 0.05:
                next_open = t - 0.05  # idle at the target: do not bank opens for a later burst
            wake = min(self.deadline, next_open if self.b.should_open(self) else self.deadline)
            if self.timers:
                wake = min(wake, self.timers[0][0])
            timeout = max(0.0, min(0.05, wake - now()))
            for key, mask in self.sel.select(timeout):
                self.on_event(key.data, mask)
            t = now()
            while self.timers and self.timers[0][0] <= t:
                _, _, c, fn = heapq.heappop(self.timers)
                if not c.done:
                    fn(c)
        held = list(self.conns.values())
        for c in held:
            self.finish(c, "held (still open at the end)" if c.connected else None,
                        count=c.connected)
        return self.summary()

    def summary(self):
        heads = {st: {"n": len(v), "p50_s": round(pct(v, 50), 3), "max_s": round(max(v), 3)}
                 for st, v in self.t_head.items()}
        out = {
            "attack": self.b.name, "seconds": self.a.seconds, "opened": self.opened,
            "max_open": self.max_open, "connect_errors": dict(self.connect_errors),
            "statuses": dict(self.statuses), "ends": dict(self.ends), "time_to_response": heads,
            "bytes_received": self.recvd_total,
        }
        if self.sent_before_head:
            out["bytes_sent_before_response"] = {
                "min": min(self.sent_before_head), "p50": pct(self.sent_before_head, 50),
                "max": max(self.sent_before_head)}
        out.update(self.b.extra())
        return out


class Behaviour:
    name = "?"

    def __init__(self, a, eng_ref):
        self.a = a
        self.eng = eng_ref

    def before_connect(self, s):
        pass

    def should_open(self, eng):
        return len(eng.conns) < self.a.conns

    def want_read(self, c):
        return True

    def connected(self, c):
        pass

    def head(self, c):
        pass

    def extra(self):
        return {}


class Slowloris(Behaviour):
    name = "slowloris"

    def connected(self, c):
        e = self.eng[0]
        e.send(c, ("GET http://%s/ HTTP/1.1\r\nHost: %s\r\nUser-Agent: slowloris\r\n"
                   % (self.a.host, self.a.host)).encode())
        e.at(now() + self.a.interval, c, self.drip)

    def drip(self, c):
        e = self.eng[0]
        e.send(c, b"X-Drip-%d: %d\r\n" % (c.sent % 100000, c.idx))
        if not c.done:
            e.at(now() + self.a.interval, c, self.drip)


class SlowPost(Behaviour):
    name = "slowpost"

    def connected(self, c):
        e = self.eng[0]
        e.send(c, ("POST http://%s/upload HTTP/1.1\r\nHost: %s\r\nUser-Agent: slowpost\r\n"
                   "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n"
                   % (self.a.host, self.a.host, self.a.body_size)).encode())
        e.at(now() + self.a.interval, c, self.drip)

    def drip(self, c):
        e = self.eng[0]
        e.send(c, b"a" * self.a.drip)
        if not c.done:
            e.at(now() + self.a.interval, c, self.drip)


class SlowRead(Behaviour):
    name = "slowread"

    def before_connect(self, s):
        # Before connect, so the window scale negotiated in the handshake stays small too.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.a.rcvbuf)

    def connected(self, c):
        c.recv_size = 512  # the head arrives at once; do not swallow body bytes with it
        self.eng[0].send(c, ("GET http://%s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: slowread\r\n\r\n"
                             % (self.a.host, self.a.path, self.a.host)).encode())

    def want_read(self, c):
        # After a 200 head only the slow timer reads; an error answer (503 ...) is read at once,
        # so its connection's end is seen and counted like in the other attacks.
        return not c.head_done or c.status != 200

    def head(self, c):
        if c.status == 200:
            self.eng[0].at(now() + self.a.interval, c, self.slow)
        else:
            c.recv_size = 65536

    def slow(self, c):
        e = self.eng[0]
        e.read(c, self.a.drip)
        if not c.done:
            e.at(now() + self.a.interval, c, self.slow)


class Churn(Behaviour):
    name = "churn"

    def __init__(self, a, eng_ref):
        super().__init__(a, eng_ref)
        self.modes = collections.Counter()

    def should_open(self, eng):
        return True  # paced by --rate only, up to --total

    def want_read(self, c):
        return False

    def connected(self, c):
        e = self.eng[0]
        mode = c.idx % 3
        if mode == 0:
            self.modes["close (FIN) at once"] += 1
            e.finish(c, "dropped by client", count=False)
        elif mode == 1:
            self.modes["reset (RST) at once"] += 1
            e.finish(c, "dropped by client", count=False, rst=True)
        else:
            try:
                c.sock.send(("GET http://%s/ HTTP/1.1\r\nHo" % self.a.host).encode())
            except OSError:
                pass
            self.modes["partial head, then RST"] += 1
            e.finish(c, "dropped by client", count=False, rst=True)

    def extra(self):
        return {"dropped": dict(self.modes), "dropped_total": sum(self.modes.values())}


class BigHeaders(Behaviour):
    name = "bigheaders"

    def __init__(self, a, eng_ref):
        super().__init__(a, eng_ref)
        lines = ["GET http://%s/ HTTP/1.1\r\nHost: %s\r\n" % (a.host, a.host)]
        for i in range(a.fields):
            name = "X-Big-%03d: " % i
            lines.append(name + "v" * (a.field_size - len(name) - 2) + "\r\n")
        lines.append("\r\n")
        self.req = "".join(lines).encode()

    def connected(self, c):
        e = self.eng[0]
        e.send(c, self.req)
        # whatever happens, this connection is given up after --timeout s
        e.at(now() + self.a.timeout, c, lambda c: e.finish(c, "client gave up after %.0fs" % self.a.timeout))

    def head(self, c):
        # stop sending (the proxy answered); keep reading to see whether it closes
        c.out.clear()

    def extra(self):
        return {"request_bytes": len(self.req)}


def attack(a, cls):
    ref = []
    b = cls(a, ref)
    e = Engine(a, b)
    ref.append(e)
    dump(a.out, e.run())


# ---------------------------------------------------------------- proxy observation ----------

def proc_status(pid):
    rss = None
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        fds = len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None, None
    return rss, fds


def proc_cpu(pid):
    """utime + stime of the whole process (all threads), in seconds."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def scrape(admin):
    return proxyclient.scrape_metrics(admin)


def upstream_states(m):
    st = collections.Counter()
    for k, v in m.items():
        if k.startswith("token_sidecar_upstream_connections{"):
            s = re.search(r'state="([^"]*)"', k)
            st[s.group(1) if s else "?"] += int(v)
    return st


def watch(a):
    end = now() + a.seconds
    peak = {"rss_kib": 0, "fds": 0, "client_connections": 0, "upstream_active": 0}
    first = None
    cpu0, t0 = proc_cpu(a.pid), now()
    n = 0
    for _ in range(int(a.seconds / 0.5) + 2):
        if now() >= end:
            break
        rss, fds = proc_status(a.pid)
        if rss is None:
            peak["died"] = True
            break
        cc = ul = None
        try:
            m = scrape(a.admin)
            cc = int(m.get("token_sidecar_client_connections", 0))
            ul = upstream_states(m).get("active", 0)
        except Exception:  # the admin port may be slow under attack; RSS/fds still count
            peak["scrape_failures"] = peak.get("scrape_failures", 0) + 1
        if first is None:
            first = {"rss_kib": rss, "fds": fds}
        for k, v in (("rss_kib", rss), ("fds", fds), ("client_connections", cc), ("upstream_active", ul)):
            if v is not None:
                peak[k] = max(peak[k], v)
        n += 1
        time.sleep(max(0.0, min(0.5, end - now())))
    cpu1 = proc_cpu(a.pid)
    if cpu0 is not None and cpu1 is not None:
        peak["cpu_percent"] = round(100.0 * (cpu1 - cpu0) / max(0.001, now() - t0), 1)
    dump(a.out, {"peak": peak, "first": first, "samples": n})


def metrics(a):
    m = scrape(a.admin)
    keep = {k: v for k, v in m.items()
            if k.startswith(("token_sidecar_requests_total", "token_sidecar_upstream_errors_total",
                             "token_sidecar_accept_errors_total", "token_sidecar_upstream_discarded_total",
                             "token_sidecar_spooled_responses_total", "token_sidecar_stalled_clients_cut_total"))}
    dump(a.out, keep)


def settle(a):
    """Until no client connection, no active upstream connection and at most --max-fds open
    descriptors (the proxy keeps a closed client's descriptor during its lingering close)."""
    t0 = now()
    end = t0 + a.seconds
    cc = ul = fds = None
    idle = 0
    t_conns = None
    for _ in range(int(a.seconds / 0.2) + 2):
        try:
            m = scrape(a.admin)
            cc = int(m.get("token_sidecar_client_connections", 0))
            ul = upstream_states(m).get("active", 0)
            idle = upstream_states(m).get("idle", 0)  # pooled backend connections hold fds too
        except Exception:
            pass
        _, fds = proc_status(a.pid)
        if cc == 0 and ul == 0 and t_conns is None:
            t_conns = round(now() - t0, 2)
        if cc == 0 and ul == 0 and (not a.max_fds or (fds is not None and fds <= a.max_fds + idle)):
            break
        if now() >= end:
            break
        time.sleep(0.2)
    rss, fds = proc_status(a.pid)
    settled = cc == 0 and ul == 0 and (not a.max_fds or (fds is not None and fds <= a.max_fds + idle))
    seconds = round(now() - t0, 2)
    # Memory freed when the connections went may be given back to the system a little later.
    rested = None
    if a.rest > 0:
        time.sleep(a.rest)
        rested, _ = proc_status(a.pid)
    dump(a.out, {"client_connections": cc, "upstream_active": ul, "settled": settled,
                 "conns_seconds": t_conns, "max_fds": a.max_fds + idle, "upstream_idle": idle,
                 "seconds": seconds, "rss_kib": rss, "fds": fds, "rest_seconds": a.rest, "rested_rss_kib": rested})


# ---------------------------------------------------------------- main -----------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p):
        p.add_argument("--proxy", required=True, help="127.0.0.1:PORT")
        p.add_argument("--host", default="api.test", help="routed host name (absolute-form target)")
        p.add_argument("--seconds", type=float, required=True)
        p.add_argument("--out", required=True)
        return p

    p = common(sub.add_parser("canary"))
    p.add_argument("--interval", type=float, default=0.1)
    p.add_argument("--timeout", type=float, default=2.0)

    for name, conns, interval in (("slowloris", 1000, 5.0), ("slowpost", 1000, 5.0),
                                  ("slowread", 1000, 1.0), ("bigheaders", 4, 0.0)):
        p = common(sub.add_parser(name))
        p.add_argument("--conns", type=int, default=conns, help="connections kept open")
        p.add_argument("--rate", type=float, default=500, help="new connections per second at most")
        p.add_argument("--max-total", type=int, default=50_000, help="connections at most, in all")
        p.add_argument("--interval", type=float, default=interval, help="seconds between drips")
        p.add_argument("--drip", type=int, default=1 if name == "slowread" else 8,
                       help="bytes sent (slowpost) or read (slowread) per interval")
        p.add_argument("--body-size", type=int, default=1 << 20, help="slowpost Content-Length")
        p.add_argument("--rcvbuf", type=int, default=4096, help="slowread SO_RCVBUF")
        p.add_argument("--path", default="/big", help="slowread path (a large response)")
        p.add_argument("--fields", type=int, default=100, help="bigheaders: header fields")
        p.add_argument("--field-size", type=int, default=8192, help="bigheaders: bytes per field line")
        p.add_argument("--timeout", type=float, default=5.0, help="bigheaders: per-request limit")

    p = common(sub.add_parser("churn"))
    p.add_argument("--total", type=int, default=10_000)
    p.add_argument("--rate", type=float, default=0, help="per second (default: total / seconds)")
    p.add_argument("--max-total", type=int, default=0)

    for name in ("watch", "settle", "metrics"):
        p = sub.add_parser(name)
        p.add_argument("--admin", required=True)
        p.add_argument("--pid", type=int, default=0)
        p.add_argument("--seconds", type=float, default=10)
        p.add_argument("--max-fds", type=int, default=0, help="settle: descriptors at most")
        p.add_argument("--rest", type=float, default=0, help="settle: RSS once more after this many seconds")
        p.add_argument("--out", required=True)

    a = ap.parse_args()
    if a.cmd == "canary":
        canary(a)
    elif a.cmd == "churn":
        a.rate = a.rate or a.total / a.seconds
        a.max_total = a.total
        attack(a, Churn)
    elif a.cmd in ("slowloris", "slowpost", "slowread", "bigheaders"):
        attack(a, {"slowloris": Slowloris, "slowpost": SlowPost, "slowread": SlowRead,
                   "bigheaders": BigHeaders}[a.cmd])
    else:
        {"watch": watch, "settle": settle, "metrics": metrics}[a.cmd](a)


if __name__ == "__main__":
    main()
