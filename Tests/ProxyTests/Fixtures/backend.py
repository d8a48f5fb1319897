#!/usr/bin/env python3
"""Recording HTTP/1.1 test backend for token-sidecar (pure python3 stdlib).

Raw-socket server, one thread per connection, with exact control of bytes and
framing (deliberately NOT http.server).

Usage:
    python3 backend.py [--port 0] [--host 127.0.0.1] [--log FILE] [--idle-timeout SEC]

Prints exactly "PORT <n>\\n" on stdout (flushed) once listening, then serves
until killed (SIGTERM / SIGINT exit immediately).

Log (--log FILE): one JSON object per line, flushed per line, thread-safe:
    {"event":"connect","conn":N}
    {"event":"request","conn":N,"method":..,"target":..,"version":..,
     "headers":[[name,value],...],"body_len":n,"body_sha256":hex}
    {"event":"close","conn":N,"bytes":total_bytes_received_on_conn}
    {"event":"bad_request","conn":N,"reason":..}   (unparseable request; 400 + close)
Header names/values are decoded as latin-1, so they round-trip byte-exactly.

Endpoints (path taken from the request target; origin- or absolute-form):
    (default)                 200 application/json {"method","target","headers","body_len","body_sha256","conn"}
    /download?size=N&mode=cl|chunked|close
                              N bytes of the deterministic stream (see stream_block()),
                              Content-Length / chunked (64 KiB chunks) / close-delimited
    /reject?token=T[&delay_ms=N]  401 + WWW-Authenticate (after N ms) when Authorization is exactly "Bearer T", else default
    /download-sha?size=N      text/plain hex SHA-256 of what /download sends for size N
    /upload                   200 {"body_len","body_sha256"} (streaming hash)
    /status/NNN               status NNN with a small body (none for 1xx/204/304/HEAD)
    /truncate?size=N          Content-Length: N but only N/2 bytes, then close
    /malformed                "Content-Length: 5" + "Transfer-Encoding: chunked" + "hello", close
    /garbage                  "NOT HTTP AT ALL\\r\\n\\r\\n", close
    /slow?ms=N                sleeps N ms (max 120000) then the default response
    /close-after              default response with "Connection: close", then close
    /nocl                     200 small body, no Content-Length/Transfer-Encoding, close
    /echo-stream              (chunked request) the response head at once, then each line of the
                              body answered with "echo <line>\\n" once complete; close after
    /continue                 if "Expect: 100-continue": sends "HTTP/1.1 100 Continue" first,
                              then reads the body and answers like /upload
Request bodies: Content-Length or chunked (chunk extensions and trailers accepted).
If both are present, chunked wins and the connection is closed after the response
(RFC 9112 6.3). Only /continue sends 100 Continue; other paths simply read the body.
"""

import argparse
import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

RECV_SIZE = 256 * 1024
MAX_HEAD = 64 * 1024          # request line + headers
MAX_LINE = 8 * 1024           # chunk-size line / single header line
BLOCK_SIZE = 1 << 20          # period of the deterministic download stream
CHUNK_SIZE = 64 * 1024        # chunk size for mode=chunked
SEED = b"token-sidecar-backend-v1"


def stream_block():
    """The /download stream is this 1 MiB block repeated: byte i = block[i % 1 MiB].

    block = SHA-256(SEED || counter_be64) for counter = 0, 1, 2, ... concatenated.
    """
    out = bytearray()
    for i in range(BLOCK_SIZE // 32):
        out += hashlib.sha256(SEED + i.to_bytes(8, "big")).digest()
    return bytes(out)


BLOCK = stream_block()
BLOCK_MV = memoryview(BLOCK)
# Pre-framed 64 KiB chunks covering one block (BLOCK_SIZE is a multiple of CHUNK_SIZE).
CHUNK_FRAMES = [
    b"%x\r\n" % CHUNK_SIZE + BLOCK[o:o + CHUNK_SIZE] + b"\r\n"
    for o in range(0, BLOCK_SIZE, CHUNK_SIZE)
]
_sha_cache = {}
_sha_lock = threading.Lock()


def stream_sha256(size):
    with _sha_lock:
        if size in _sha_cache:
            return _sha_cache[size]
    h = hashlib.sha256()
    full, rest = divmod(size, BLOCK_SIZE)
    for _ in range(full):
        h.update(BLOCK)
    h.update(BLOCK_MV[:rest])
    hx = h.hexdigest()
    with _sha_lock:
        _sha_cache[size] = hx
    return hx


class Log:
    def __init__(self, path):
        self.lock = threading.Lock()
        self.f = open(path, "a", encoding="utf-8") if path else None

    def write(self, obj):
        if self.f is None:
            return
        line = json.dumps(obj, separators=(",", ":")) + "\n"
        with self.lock:
            self.f.write(line)
            self.f.flush()


class BadRequest(Exception):
    pass


class PeerClosed(Exception):
    pass


class Reader:
    """Buffered reader over a socket that counts every byte received."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()
        self.scratch = bytearray(RECV_SIZE)
        self.smv = memoryview(self.scratch)
        self.total = 0

    def _recv(self):
        n = self.sock.recv_into(self.scratch)
        self.total += n
        return n

    def fill(self):
        n = self._recv()
        if n == 0:
            return False
        self.buf += self.smv[:n]
        return True

    def readline(self, limit):
        """Returns one line without its terminator (CRLF or bare LF)."""
        start = 0
        while True:
            i = self.buf.find(b"\n", start)
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 1]
                if line.endswith(b"\r"):
                    line = line[:-1]
                return line
            if len(self.buf) > limit:
                raise BadRequest("line too long")
            start = len(self.buf)
            if not self.fill():
                raise PeerClosed()

    def pieces(self, n):
        """Yields memoryviews totalling exactly n bytes (the last one may be reused storage)."""
        if self.buf and n > 0:
            k = min(n, len(self.buf))
            piece = bytes(self.buf[:k])
            del self.buf[:k]
            n -= k
            yield piece
        while n > 0:
            want = min(n, RECV_SIZE)
            got = self.sock.recv_into(self.scratch, want)
            if got == 0:
                raise PeerClosed()
            self.total += got
            n -= got
            yield self.smv[:got]


class Body:
    def __init__(self):
        self.h = hashlib.sha256()
        self.n = 0

    def update(self, data):
        self.h.update(data)
        self.n += len(data)


def header_get_all(headers, name):
    name = name.lower()
    return [v for (k, v) in headers if k.lower() == name]


def conn_tokens(headers):
    toks = set()
    for v in header_get_all(headers, "connection"):
        for t in v.split(","):
            t = t.strip().lower()
            if t:
                toks.add(t)
    return toks


def read_request_head(rd):
    """Returns (method, target, version, headers) or None on clean EOF before a request."""
    # Skip (at most a few) empty lines before the request line (RFC 9112 2.2).
    line = None
    for _ in range(4):
        try:
            line = rd.readline(MAX_LINE)
        except PeerClosed:
            if not rd.buf:
                return None
            raise BadRequest("eof in request line")
        if line:
            break
    if not line:
        raise BadRequest("empty request line")
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[0] or not parts[1]:
        raise BadRequest("bad request line %r" % line[:200])
    method, target, version = (p.decode("latin-1") for p in parts)
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise BadRequest("bad version %r" % version)
    headers = []
    size = len(line)
    while True:
        try:
            hl = rd.readline(MAX_HEAD)
        except PeerClosed:
            raise BadRequest("eof in headers")
        if not hl:
            break
        size += len(hl) + 2
        if size > MAX_HEAD:
            raise BadRequest("headers too large")
        if hl[:1] in (b" ", b"\t"):
            raise BadRequest("obsolete line folding")
        if b":" not in hl:
            raise BadRequest("header without colon")
        k, v = hl.split(b":", 1)
        if not k or k != k.strip() or any(c in k for c in b" \t"):
            raise BadRequest("bad header name %r" % k[:100])
        headers.append([k.decode("latin-1"), v.strip(b" \t").decode("latin-1")])
    return method, target, version, headers


def body_framing(headers):
    """Returns ('chunked', None, both_present) or ('length', n, False)."""
    te = header_get_all(headers, "transfer-encoding")
    cl = header_get_all(headers, "content-length")
    if te:
        codings = [c.strip().lower() for v in te for c in v.split(",") if c.strip()]
        if not codings or codings[-1] != "chunked":
            raise BadRequest("unsupported transfer-encoding %r" % te)
        return "chunked", None, bool(cl)
    if cl:
        vals = set()
        for v in cl:
            for x in v.split(","):
                x = x.strip()
                if not x.isdigit():
                    raise BadRequest("bad content-length %r" % v)
                vals.add(int(x))
        if len(vals) != 1:
            raise BadRequest("conflicting content-length %r" % cl)
        return "length", vals.pop(), False
    return "length", 0, False


def read_body(rd, kind, length, body):
    if kind == "length":
        for p in rd.pieces(length):
            body.update(p)
        return
    # chunked
    for _ in range(1 << 40):  # bounded by data; each iteration consumes a chunk
        try:
            line = rd.readline(MAX_LINE)
        except PeerClosed:
            raise BadRequest("eof in chunk size")
        size_s = line.split(b";", 1)[0].strip()
        try:
            size = int(size_s, 16)
        except ValueError:
            raise BadRequest("bad chunk size %r" % line[:100])
        if size_s.startswith((b"-", b"+", b"0x", b"0X")) or size < 0:
            raise BadRequest("bad chunk size %r" % line[:100])
        if size == 0:
            break
        try:
            for p in rd.pieces(size):
                body.update(p)
            crlf = rd.readline(MAX_LINE)
        except PeerClosed:
            raise BadRequest("eof in chunk data")
        if crlf != b"":
            raise BadRequest("missing CRLF after chunk data")
    # trailers
    total = 0
    while True:
        try:
            t = rd.readline(MAX_HEAD)
        except PeerClosed:
            raise BadRequest("eof in trailers")
        if not t:
            return
        total += len(t)
        if total > MAX_HEAD:
            raise BadRequest("trailers too large")


def reason(code):
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return "Status"


def head_bytes(code, headers):
    out = ["HTTP/1.1 %d %s\r\n" % (code, reason(code))]
    for k, v in headers:
        out.append("%s: %s\r\n" % (k, v))
    out.append("\r\n")
    return "".join(out).encode("latin-1")


class Server:
    def __init__(self, log, idle_timeout):
        self.log = log
        self.idle_timeout = idle_timeout
        self.next_id = 0
        self.id_lock = threading.Lock()

    def new_conn_id(self):
        with self.id_lock:
            self.next_id += 1
            return self.next_id

    def handle(self, sock, conn_id):
        rd = Reader(sock)
        try:
            sock.settimeout(self.idle_timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.log.write({"event": "connect", "conn": conn_id})
            for _ in range(10_000_000):
                if not self.one_request(sock, rd, conn_id):
                    break
        except (OSError, PeerClosed):
            pass
        finally:
            try:
                sock.close()
            except OSError:
                pass
            self.log.write({"event": "close", "conn": conn_id, "bytes": rd.total})

    def one_request(self, sock, rd, conn_id):
        """Handles one request; returns True to keep the connection open."""
        try:
            head = read_request_head(rd)
            if head is None:
                return False
            method, target, version, headers = head
            kind, length, both = body_framing(headers)
        except BadRequest as e:
            self.bad_request(sock, conn_id, str(e))
            return False

        if target.startswith("/"):
            path, _, query = target.partition("?")
        else:
            u = urlsplit(target)
            path, query = (u.path or "/"), u.query
        q = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}

        toks = conn_tokens(headers)
        if version == "HTTP/1.1":
            keep = "close" not in toks
        else:
            keep = "keep-alive" in toks
        if both:
            keep = False

        if path == "/continue":
            expect = [v.lower() for v in header_get_all(headers, "expect")]
            if "100-continue" in expect:
                sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")

        if path == "/echo-stream" and kind == "chunked":
            # A conversation: the response head at once, then each line of the body answered
            # ("echo " + the line) as soon as it is complete. Lines, not chunks: a proxy may
            # split or join chunks (HTTP gives their boundaries no meaning).
            sock.sendall(head_bytes(200, [("Content-Type", "text/plain"), ("Transfer-Encoding", "chunked"),
                                          ("Connection", "close")]))
            pending = b""
            try:
                for _ in range(1 << 20):  # bounded by data; one chunk per iteration
                    size = int(rd.readline(MAX_LINE).split(b";", 1)[0].strip(), 16)
                    if size == 0:
                        break
                    pending += b"".join(rd.pieces(size))
                    rd.readline(MAX_LINE)
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        reply = b"echo " + line + b"\n"
                        sock.sendall(b"%x\r\n%s\r\n" % (len(reply), reply))
                sock.sendall(b"0\r\n\r\n")
            except (PeerClosed, ValueError):
                pass
            return False

        body = Body()
        try:
            read_body(rd, kind, length, body)
        except BadRequest as e:
            self.bad_request(sock, conn_id, str(e))
            return False
        body_sha = body.h.hexdigest()
        self.log.write({
            "event": "request", "conn": conn_id, "method": method, "target": target,
            "version": version, "headers": headers, "body_len": body.n,
            "body_sha256": body_sha, "time": time.time(),
        })
        is_head = method == "HEAD"
        conn_hdr = [] if keep else [("Connection", "close")]
        if keep and version == "HTTP/1.0":
            conn_hdr = [("Connection", "keep-alive")]

        def send_simple(code, ctype, payload, extra=(), close=False):
            hdrs = [("Content-Type", ctype), ("Content-Length", str(len(payload)))]
            hdrs += list(extra)
            hdrs += [("Connection", "close")] if close and keep else conn_hdr
            sock.sendall(head_bytes(code, hdrs) + (b"" if is_head else payload))

        def default_payload():
            return json.dumps({
                "method": method, "target": target, "headers": headers,
                "body_len": body.n, "body_sha256": body_sha, "conn": conn_id,
            }).encode()

        def int_arg(name, default, lo=0, hi=1 << 50):
            try:
                return max(lo, min(hi, int(q.get(name, default))))
            except ValueError:
                return default

        if path == "/reject":
            # 401 (RFC 6750) when the request carries the bearer token named in ?token=.
            auth = [v for v in header_get_all(headers, "authorization")]
            if auth == ["Bearer " + q.get("token", "")]:
                time.sleep(int_arg("delay_ms", 0, hi=10000) / 1000.0)
                send_simple(401, "application/json", b'{"error":"invalid_token"}',
                            extra=[("WWW-Authenticate", 'Bearer error="invalid_token"')])
                return keep
            send_simple(200, "application/json", default_payload())
            return keep

        if path == "/download":
            size = int_arg("size", 0)
            mode = q.get("mode", "cl")
            if mode == "close" or (mode == "chunked" and version == "HTTP/1.0"):
                mode, keep = "close", False
                hdrs = [("Content-Type", "application/octet-stream"), ("Connection", "close")]
            elif mode == "chunked":
                hdrs = [("Content-Type", "application/octet-stream"),
                        ("Transfer-Encoding", "chunked")] + conn_hdr
            else:
                mode = "cl"
                hdrs = [("Content-Type", "application/octet-stream"),
                        ("Content-Length", str(size))] + conn_hdr
            sock.sendall(head_bytes(200, hdrs))
            if is_head:
                return keep
            if mode == "chunked":
                self.send_chunked_stream(sock, size)
            else:
                self.send_stream(sock, size)
            return keep
        if path == "/download-sha":
            send_simple(200, "text/plain", stream_sha256(int_arg("size", 0)).encode())
            return keep
        if path in ("/upload", "/continue"):
            send_simple(200, "application/json",
                        json.dumps({"body_len": body.n, "body_sha256": body_sha}).encode())
            return keep
        if path.startswith("/status/"):
            try:
                code = int(path[len("/status/"):])
                if not 100 <= code <= 999:
                    raise ValueError
            except ValueError:
                send_simple(400, "text/plain", b"bad status\n")
                return keep
            if code < 200 or code in (204, 304):
                hdrs = ([("Content-Length", "0")] if code == 304 else []) + conn_hdr
                sock.sendall(head_bytes(code, hdrs))
            else:
                send_simple(code, "text/plain", b"status %d\n" % code)
            return keep
        if path == "/truncate":
            size = int_arg("size", 0)
            sock.sendall(head_bytes(200, [("Content-Type", "application/octet-stream"),
                                          ("Content-Length", str(size))]))
            self.send_stream(sock, size // 2)
            return False
        if path == "/malformed":
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\nhello")
            return False
        if path == "/garbage":
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            return False
        if path == "/slow":
            time.sleep(int_arg("ms", 0, 0, 120_000) / 1000.0)
            send_simple(200, "application/json", default_payload())
            return keep
        if path == "/close-after":
            send_simple(200, "application/json", default_payload(), close=True)
            return False
        if path == "/nocl":
            sock.sendall(head_bytes(200, [("Content-Type", "text/plain"),
                                          ("Connection", "close")])
                         + (b"" if is_head else b"close-delimited body\n"))
            return False
        send_simple(200, "application/json", default_payload())
        return keep

    @staticmethod
    def send_stream(sock, size):
        off = 0
        while size > 0:
            k = min(size, BLOCK_SIZE - off)
            sock.sendall(BLOCK_MV[off:off + k])
            size -= k
            off = (off + k) % BLOCK_SIZE

    @staticmethod
    def send_chunked_stream(sock, size):
        # Stream offset is always a multiple of CHUNK_SIZE before the final partial chunk.
        idx = 0
        per_block = len(CHUNK_FRAMES)
        while size >= CHUNK_SIZE:
            sock.sendall(CHUNK_FRAMES[idx])
            idx = (idx + 1) % per_block
            size -= CHUNK_SIZE
        tail = b""
        if size:
            o = idx * CHUNK_SIZE
            tail = b"%x\r\n" % size + BLOCK[o:o + size] + b"\r\n"
        sock.sendall(tail + b"0\r\n\r\n")

    def bad_request(self, sock, conn_id, why):
        self.log.write({"event": "bad_request", "conn": conn_id, "reason": why})
        try:
            payload = (why + "\n").encode("latin-1", "replace")
            sock.sendall(head_bytes(400, [("Content-Type", "text/plain"),
                                          ("Content-Length", str(len(payload))),
                                          ("Connection", "close")]) + payload)
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--log", default=None)
    ap.add_argument("--idle-timeout", type=float, default=300.0,
                    help="close a connection after this many idle seconds (default 300)")
    args = ap.parse_args()

    def die(signum, frame):
        os._exit(0)

    signal.signal(signal.SIGTERM, die)
    signal.signal(signal.SIGINT, die)

    log = Log(args.log)
    fam = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((args.host, args.port))
    ls.listen(1024)
    srv = Server(log, args.idle_timeout)
    sys.stdout.write("PORT %d\n" % ls.getsockname()[1])
    sys.stdout.flush()
    while True:
        try:
            s, _ = ls.accept()
        except OSError:
            continue
        cid = srv.new_conn_id()
        threading.Thread(target=srv.handle, args=(s, cid), daemon=True).start()


if __name__ == "__main__":
    main()
