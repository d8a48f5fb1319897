#!/usr/bin/env python3
"""A backend that misbehaves the way real ones do, for the proxy's edge tests.

Usage: misbehaving_backend.py LOGFILE [RCVBUF]   (prints "PORT <n>" once listening on 127.0.0.1;
RCVBUF, if given, is the receive buffer of every accepted connection — small, uploads back up fast)

Every connection and request is appended to LOGFILE as one JSON object per line:
  {"event": "connect", "conn": N}
  {"event": "request", "conn": N, "method", "path", "authorization", "body_len", "body_sha256"}
  {"event": "closed", "conn": N, "path", "at": unix-time}   (when sending/reading hit the proxy's close)

Paths:
  /ok                 200, body "fine <path>"
  /extra              200 with Content-Length: 5 "hello", then at once a complete second response
                      (Content-Length: 6 "LEAKED") in the same write; keeps the connection
  /head-with-body     HEAD: 200 head with Content-Length: 5 and then 5 bytes anyway
  /304-with-body      304 followed by 5 stray bytes; /204-with-body likewise
  /bad-chunk-size     chunked head and "zz\\r\\n" as the first chunk size, in one write
  /bad-chunk-crlf     chunked head and "5\\r\\nhelloXX" (data not followed by CRLF)
  /bad-chunk-late     chunked head and a good chunk; 300 ms later a malformed chunk size
  /short-cl-close     Content-Length: 100, 10 bytes, close
  /401-always         401 with WWW-Authenticate to every request (after reading its body)
  /401-once           401 to every request whose Authorization is the first one this path saw;
                      200 (JSON: method, body length and SHA-256, Authorization) to any other
  /dpop-nonce-always  401 WWW-Authenticate: DPoP error="use_dpop_nonce" with a new DPoP-Nonce to
                      every request, whatever nonce it carries
  /revocable          401 with WWW-Authenticate when the Authorization was revoked (/revoke),
                      else 200 (JSON: Authorization)
  /revoke             revokes the Authorization it carries (for /revocable from now on); 200
  /flood              200 with Content-Length: 64 MiB, sent as fast as the socket takes it until it
                      takes nothing for 1 s; then logs {"event": "flood", "conn", "queued": bytes
                      handed to the kernel} and waits for the proxy's close
  /infinite           200 chunked, a 16 KiB chunk every 10 ms until the proxy closes
  /trickle            200 chunked, a 16 KiB chunk every 2 s until the proxy closes (noticed at once:
                      it waits for EOF between chunks)
  /hang               reads the request, never answers; notices at once when the proxy closes
  /stall              reads the request head, never reads its body nor answers (an upload backs up)
  /slow-upload        reads the request body 16 KiB every 20 ms until the proxy closes
"""
import hashlib
import json
import os
import select
import socket
import sys
import threading
import time

LOG = sys.argv[1]
log_lock = threading.Lock()
state_lock = threading.Lock()
rejected_once = set()
revoked = set()
conn_counter = [0]


def log(obj):
    with log_lock:
        with open(LOG, "a") as f:
            f.write(json.dumps(obj) + "\n")


class Reader:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exactly(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def read_request(rd):
    request_line = rd.line().decode("latin-1")
    method, target, _ = request_line.split(" ", 2)
    headers = []
    while True:
        line = rd.line()
        if not line:
            break
        name, value = line.decode("latin-1").split(":", 1)
        headers.append((name.strip().lower(), value.strip()))
    return method, target, dict(headers)


def read_body(rd, sock, headers, slow=False):
    body = b""
    if headers.get("expect", "").lower() == "100-continue":
        sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int(rd.line().split(b";")[0], 16)
            if size == 0:
                while rd.line():
                    pass
                return body
            body += rd.exactly(size)
            rd.line()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        if slow:
            time.sleep(0.02)
        take = min(16384, length - len(body))
        if len(rd.buf) == 0:
            rd.fill()
        piece, rd.buf = rd.buf[:take], rd.buf[take:]
        body += piece
    return body


def wait_for_close(sock, conn, path, seconds):
    """Waits up to `seconds` for the proxy to close the connection; logs and returns True if it did."""
    readable, _, _ = select.select([sock], [], [], seconds)
    if readable:
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            log({"event": "closed", "conn": conn, "path": path, "at": time.time()})
            return True
    return False


def respond(sock, status, reason, headers, body=b""):
    head = "HTTP/1.1 %d %s\r\n" % (status, reason)
    for name, value in headers:
        head += "%s: %s\r\n" % (name, value)
    sock.sendall(head.encode() + b"\r\n" + body)


def handle(sock, conn):
    rd = Reader(sock)
    path = None
    try:
        while True:
            method, target, headers = read_request(rd)
            path = target.split("?")[0]
            if path == "/stall":
                time.sleep(30)
                return
            slow = path == "/slow-upload"
            try:
                body = read_body(rd, sock, headers, slow=slow)
            except (EOFError, OSError):
                log({"event": "closed", "conn": conn, "path": path, "at": time.time()})
                return
            auth = headers.get("authorization")
            log({"event": "request", "conn": conn, "method": method, "path": path, "authorization": auth,
                 "body_len": len(body), "body_sha256": hashlib.sha256(body).hexdigest()})
            if path == "/extra":
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
                             b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nLEAKED")
            elif path == "/head-with-body":
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            elif path == "/304-with-body":
                sock.sendall(b"HTTP/1.1 304 Not Modified\r\n\r\nhello")
            elif path == "/204-with-body":
                sock.sendall(b"HTTP/1.1 204 No Content\r\n\r\nhello")
            elif path == "/bad-chunk-size":
                sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")
            elif path == "/bad-chunk-crlf":
                sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX")
            elif path == "/bad-chunk-late":
                sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
                time.sleep(0.3)
                sock.sendall(b"zz\r\nmore\r\n")
            elif path == "/short-cl-close":
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
                return
            elif path == "/401-always":
                payload = b'{"error":"invalid_token"}'
                respond(sock, 401, "Unauthorized", [("WWW-Authenticate", 'Bearer error="invalid_token"'),
                                                    ("Content-Type", "application/json"),
                                                    ("Content-Length", str(len(payload)))], payload)
            elif path == "/dpop-nonce-always":
                # A resource server that demands a new DPoP nonce of every request, whatever it
                # carries: a client that retried until satisfied would never stop.
                payload = b'{"error":"use_dpop_nonce"}'
                respond(sock, 401, "Unauthorized", [("WWW-Authenticate", 'DPoP error="use_dpop_nonce", error_description="a nonce is required"'),
                                                    ("DPoP-Nonce", "n-" + os.urandom(8).hex()),
                                                    ("Content-Length", str(len(payload)))], payload)
            elif path == "/401-once":
                with state_lock:
                    if not rejected_once:
                        rejected_once.add(auth)
                    reject = auth in rejected_once
                if reject:
                    payload = b'{"error":"invalid_token"}'
                    respond(sock, 401, "Unauthorized", [("WWW-Authenticate", 'Bearer error="invalid_token"'),
                                                        ("Content-Length", str(len(payload)))], payload)
                else:
                    payload = json.dumps({"method": method, "body_len": len(body), "authorization": auth,
                                          "body_sha256": hashlib.sha256(body).hexdigest()}).encode()
                    respond(sock, 200, "OK", [("Content-Type", "application/json"),
                                              ("Content-Length", str(len(payload)))], payload)
            elif path == "/revoke":
                with state_lock:
                    revoked.add(auth)
                respond(sock, 200, "OK", [("Content-Length", "7")], b"revoked")
            elif path == "/revocable":
                with state_lock:
                    reject = auth in revoked
                if reject:
                    payload = b'{"error":"invalid_token"}'
                    respond(sock, 401, "Unauthorized", [("WWW-Authenticate", 'Bearer error="invalid_token"'),
                                                        ("Content-Length", str(len(payload)))], payload)
                else:
                    payload = json.dumps({"authorization": auth}).encode()
                    respond(sock, 200, "OK", [("Content-Type", "application/json"),
                                              ("Content-Length", str(len(payload)))], payload)
            elif path == "/hang":
                wait_for_close(sock, conn, path, 30)
                return
            elif path == "/trickle":
                sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                chunk = b"%x\r\n" % 16384 + b"x" * 16384 + b"\r\n"
                try:
                    for _ in range(30):
                        sock.sendall(chunk)
                        if wait_for_close(sock, conn, path, 2):
                            return
                except OSError:
                    log({"event": "closed", "conn": conn, "path": path, "at": time.time()})
                return
            elif path == "/flood":
                size = 64 << 20
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
                sock.setblocking(False)
                block = b"x" * 65536
                queued = 0
                while queued < size:
                    _, writable, _ = select.select([], [sock], [], 1.0)
                    if not writable:
                        break
                    try:
                        queued += sock.send(block[:size - queued])
                    except BlockingIOError:
                        continue
                    except OSError:
                        break
                log({"event": "flood", "conn": conn, "queued": queued})
                sock.setblocking(True)
                wait_for_close(sock, conn, path, 30)
                return
            elif path == "/infinite":
                sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                chunk = b"%x\r\n" % 16384 + b"x" * 16384 + b"\r\n"
                try:
                    while True:
                        sock.sendall(chunk)
                        time.sleep(0.01)
                except OSError:
                    log({"event": "closed", "conn": conn, "path": path, "at": time.time()})
                    return
            else:
                payload = ("fine " + path).encode()
                respond(sock, 200, "OK", [("Content-Length", str(len(payload)))], payload)
    except (EOFError, OSError):
        if path == "/slow-upload":
            log({"event": "closed", "conn": conn, "path": path, "at": time.time()})
    finally:
        try:
            sock.close()
        except OSError:
            pass


def main():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if len(sys.argv) > 2:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(sys.argv[2]))
    server.bind(("127.0.0.1", 0))
    server.listen(256)
    print("PORT %d" % server.getsockname()[1], flush=True)
    while True:
        sock, _ = server.accept()
        conn_counter[0] += 1
        log({"event": "connect", "conn": conn_counter[0]})
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=handle, args=(sock, conn_counter[0]), daemon=True).start()


if __name__ == "__main__":
    main()
