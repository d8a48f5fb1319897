#!/usr/bin/env python3
"""proxyclient.py — minimal raw-socket HTTP/1.1 client that talks to an HTTP forward
proxy with absolute-form targets (python3 stdlib only). Used by bench.sh and bigbody.sh.

Subcommands (all print one JSON object on stdout; exit 1 on error):
  seq      --proxy H:P --url URL -n N          N sequential keep-alive GETs on ONE connection
  download --proxy H:P --url URL                GET, streaming SHA-256 of the body (CL/chunked/close)
  upload   --proxy H:P --url URL --size N --mode cl|chunked
                                                POST a deterministic N-byte stream, hashed as sent
  hold     --proxy H:P --url URL -n N --pids P1,P2  open N keep-alive connections, one GET on each,
                                                keep them open and idle: RSS (VmRSS summed over the
                                                PIDs) before and after, and the growth per connection
Common: --timeout SEC (overall deadline, default 120; every socket op also times out).
Use --direct to send origin-form requests straight to H:P (no proxy), for reference runs.

Examples:
  python3 proxyclient.py seq --proxy 127.0.0.1:8080 --url http://api.test/ -n 2000
  python3 proxyclient.py download --proxy 127.0.0.1:8080 --url 'http://api.test/download?size=1073741824&mode=chunked'
  python3 proxyclient.py upload --proxy 127.0.0.1:8080 --url http://api.test/upload --size 1073741824 --mode cl
"""

import argparse
import hashlib
import json
import select
import socket
import sys
import time
from urllib.parse import urlsplit

RECV = 256 * 1024
UPLOAD_BLOCK_SIZE = 1 << 20
UPLOAD_CHUNK = 256 * 1024


class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def check(self):
        if time.monotonic() > self.end:
            raise TimeoutError("overall deadline exceeded")


class Conn:
    def __init__(self, hostport, timeout, deadline):
        host, _, port = hostport.rpartition(":")
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout=min(timeout, 30))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.scratch = bytearray(RECV)
        self.smv = memoryview(self.scratch)
        self.deadline = deadline

    def fill(self):
        self.deadline.check()
        n = self.sock.recv_into(self.scratch)
        if n == 0:
            return False
        self.buf += self.smv[:n]
        return True

    def readline(self):
        start = 0
        while True:
            i = self.buf.find(b"\n", start)
            if i >= 0:
                line = bytes(self.buf[:i]).rstrip(b"\r")
                del self.buf[:i + 1]
                return line
            if len(self.buf) > 1 << 20:
                raise ValueError("line too long")
            start = len(self.buf)
            if not self.fill():
                raise ConnectionError("EOF while reading line")

    def read_head(self):
        """Returns (status, headers) skipping 1xx interim responses."""
        for _ in range(16):
            line = self.readline()
            parts = line.split(b" ", 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
                raise ValueError("bad status line %r" % line[:200])
            status = int(parts[1])
            headers = []
            for _ in range(1000):
                h = self.readline()
                if not h:
                    break
                k, _, v = h.partition(b":")
                headers.append((k.decode("latin-1").lower(), v.strip().decode("latin-1")))
            if 100 <= status < 200 and status != 101:
                continue
            return status, headers
        raise ValueError("too many interim responses")

    def read_body(self, method, status, headers, sink):
        """Feeds the body to sink(bytes-like). Returns (framing, keep_alive_possible)."""
        hd = {}
        for k, v in headers:
            hd.setdefault(k, []).append(v)
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return "none", True
        te = ",".join(hd.get("transfer-encoding", [])).lower()
        if "chunked" in te:
            for _ in range(1 << 40):
                line = self.readline()
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    break
                self._read_exact(size, sink)
                if self.readline() != b"":
                    raise ValueError("missing CRLF after chunk")
            for _ in range(1000):  # trailers
                if not self.readline():
                    break
            return "chunked", True
        if "content-length" in hd:
            self._read_exact(int(hd["content-length"][0]), sink)
            return "content-length", True
        # close-delimited
        if self.buf:
            sink(bytes(self.buf))
            self.buf.clear()
        while True:
            self.deadline.check()
            n = self.sock.recv_into(self.scratch)
            if n == 0:
                return "close", False
            sink(self.smv[:n])

    def _read_exact(self, n, sink):
        if self.buf:
            k = min(n, len(self.buf))
            sink(bytes(self.buf[:k]))
            del self.buf[:k]
            n -= k
        while n > 0:
            self.deadline.check()
            got = self.sock.recv_into(self.scratch, min(n, RECV))
            if got == 0:
                raise ConnectionError("EOF with %d body bytes outstanding" % n)
            sink(self.smv[:got])
            n -= got



def write_json(path, obj):
    """Writes `obj` to `path` as indented, key-sorted JSON."""
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)


def percentile(values, p):
    """Nearest-rank percentile `p` (0-100) of `values`; None when there are none."""
    if not values:
        return None
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))]


def scrape_metrics(admin):
    """The sidecar's /metrics at `admin` (host:port) as {"name{labels}": value}, buckets left out."""
    import urllib.request
    with urllib.request.urlopen("http://%s/metrics" % admin, timeout=2) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and "_bucket" not in line:
            key, _, value = line.rpartition(" ")
            try:
                out[key] = float(value)
            except ValueError:
                pass
    return out

def request_line(method, url, direct):
    u = urlsplit(url)
    host = u.netloc
    if direct:
        target = (u.path or "/") + ("?" + u.query if u.query else "")
    else:
        target = url
    return "%s %s HTTP/1.1\r\nHost: %s\r\n" % (method, target, host)


def upload_block():
    out = bytearray()
    for i in range(UPLOAD_BLOCK_SIZE // 32):
        out += hashlib.sha256(b"token-sidecar-upload-v1" + i.to_bytes(8, "big")).digest()
    return bytes(out)


def cmd_seq(a):
    dl = Deadline(a.timeout)
    c = Conn(a.proxy, a.timeout, dl)
    req = (request_line("GET", a.url, a.direct) + "\r\n").encode()
    t0 = time.monotonic()
    total = 0
    for i in range(a.n):
        c.sock.sendall(req)
        status, headers = c.read_head()
        n = [0]

        def sink(b):
            n[0] += len(b)
        framing, keep = c.read_body("GET", status, headers, sink)
        if status != 200:
            raise RuntimeError("request %d: status %d" % (i, status))
        if not keep or any(k == "connection" and "close" in v.lower() for k, v in headers):
            raise RuntimeError("request %d: connection not kept alive" % i)
        total += n[0]
    dt = time.monotonic() - t0
    return {"requests": a.n, "seconds": round(dt, 4), "req_per_s": round(a.n / dt, 1),
            "body_bytes": total}


def cmd_download(a):
    dl = Deadline(a.timeout)
    c = Conn(a.proxy, a.timeout, dl)
    h = hashlib.sha256()
    n = [0]

    def sink(b):
        h.update(b)
        n[0] += len(b)
    t0 = time.monotonic()
    c.sock.sendall((request_line("GET", a.url, a.direct) + "Connection: close\r\n\r\n").encode())
    status, headers = c.read_head()
    framing, _ = c.read_body("GET", status, headers, sink)
    dt = time.monotonic() - t0
    return {"status": status, "framing": framing, "bytes": n[0], "sha256": h.hexdigest(),
            "seconds": round(dt, 3), "mb_per_s": round(n[0] / dt / 1e6, 1)}


def cmd_upload(a):
    dl = Deadline(a.timeout)
    c = Conn(a.proxy, a.timeout, dl)
    block = upload_block()
    bmv = memoryview(block)
    h = hashlib.sha256()
    head = request_line("POST", a.url, a.direct) + "Content-Type: application/octet-stream\r\n"
    if a.mode == "chunked":
        head += "Transfer-Encoding: chunked\r\n"
    else:
        head += "Content-Length: %d\r\n" % a.size
    head += "Connection: close\r\n\r\n"
    t0 = time.monotonic()
    c.sock.sendall(head.encode())
    left, off, sent, early = a.size, 0, 0, False
    while left > 0:
        dl.check()
        k = min(left, UPLOAD_CHUNK, UPLOAD_BLOCK_SIZE - off)
        piece = bmv[off:off + k]
        h.update(piece)
        if a.mode == "chunked":
            c.sock.sendall(b"%x\r\n" % k + piece + b"\r\n")
        else:
            c.sock.sendall(piece)
        left -= k
        sent += k
        off = (off + k) % UPLOAD_BLOCK_SIZE
        if select.select([c.sock], [], [], 0)[0]:
            early = True  # the peer answered (or closed) before the body was complete
            break
    if a.mode == "chunked" and not early:
        c.sock.sendall(b"0\r\n\r\n")
    status, headers = c.read_head()
    body = bytearray()
    c.read_body("POST", status, headers, body.extend)
    dt = time.monotonic() - t0
    try:
        resp = json.loads(body)
    except ValueError:
        resp = body[:500].decode("latin-1")
    return {"status": status, "sent": sent, "complete": not early, "sha256": h.hexdigest(),
            "seconds": round(dt, 3), "mb_per_s": round(sent / dt / 1e6, 1), "response": resp}


def rss_kib(pids):
    total = 0
    for pid in pids:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def cmd_hold(a):
    dl = Deadline(a.timeout)
    pids = [int(p) for p in a.pids.split(",") if p]
    req = (request_line("GET", a.url, a.direct) + "\r\n").encode()
    before = rss_kib(pids)
    conns = []
    try:
        for i in range(a.n):
            c = Conn(a.proxy, a.timeout, dl)
            c.sock.sendall(req)
            status, headers = c.read_head()
            framing, keep = c.read_body("GET", status, headers, lambda b: None)
            if status != 200 or not keep:
                raise RuntimeError("connection %d: status %d, keep-alive %s" % (i, status, keep))
            conns.append(c.sock)  # keep only the socket (not the 256 KiB receive buffer)
        time.sleep(a.settle)
        after = rss_kib(pids)
    finally:
        for s in conns:
            s.close()
    return {"connections": a.n, "rss_before_kib": before, "rss_after_kib": after,
            "per_connection_kib": round((after - before) / a.n, 2)}


def main():
    ap = argparse.ArgumentParser(description="raw HTTP/1.1 client via a forward proxy")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("seq", "download", "upload", "hold"):
        p = sub.add_parser(name)
        p.add_argument("--proxy", required=True, help="HOST:PORT of the proxy")
        p.add_argument("--url", required=True, help="absolute URL, e.g. http://api.test/")
        p.add_argument("--timeout", type=float, default=120.0)
        p.add_argument("--direct", action="store_true", help="origin-form, no proxy")
        if name in ("seq", "hold"):
            p.add_argument("-n", type=int, default=1000)
        if name == "hold":
            p.add_argument("--pids", required=True, help="comma-separated PIDs whose VmRSS is summed")
            p.add_argument("--settle", type=float, default=0.5, help="seconds to wait before measuring")
        if name == "upload":
            p.add_argument("--size", type=int, required=True)
            p.add_argument("--mode", choices=("cl", "chunked"), default="cl")
    a = ap.parse_args()
    try:
        out = {"seq": cmd_seq, "download": cmd_download, "upload": cmd_upload, "hold": cmd_hold}[a.cmd](a)
    except Exception as e:  # noqa: BLE001 — report any failure as JSON + exit 1
        print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
