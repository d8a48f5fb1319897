#!/usr/bin/env python3
"""An HTTP/1.1 backend that closes every connection right after its first response (pure python3 stdlib).

Each response is "200 OK" with a small Content-Length body and deliberately NO "Connection: close",
so a client that pools the connection only learns that it is gone when it tries to reuse it.

Usage:
    python3 closing_backend.py [--port 0] [--host 127.0.0.1] [--log FILE]

Prints exactly "PORT <n>\\n" on stdout (flushed) once listening; SIGTERM / SIGINT exit immediately.

Log (--log FILE): one JSON object per line, flushed per line, thread-safe:
    {"event":"connect","conn":N}
    {"event":"request","conn":N,"method":..,"target":..,"body_len":n,"count":k}
        (count = how many times this target has been received so far, including this one)
    {"event":"close","conn":N}
    {"event":"bad_request","conn":N,"reason":..}
A request is logged after its body was read and before the response is sent.
Request bodies: Content-Length or chunked.
"""

import argparse
import json
import os
import signal
import socket
import sys
import threading

MAX_HEAD = 64 * 1024

log_lock = threading.Lock()
log_file = None
counts = {}
next_conn = [0]


def log(event):
    with log_lock:
        if event.get("event") == "request":
            counts[event["target"]] = counts.get(event["target"], 0) + 1
            event["count"] = counts[event["target"]]
        if log_file is not None:
            log_file.write(json.dumps(event) + "\n")
            log_file.flush()


class Reader:
    def __init__(self, conn):
        self.conn = conn
        self.buf = b""

    def fill(self):
        data = self.conn.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def until(self, marker, limit):
        while marker not in self.buf:
            if len(self.buf) > limit:
                raise ValueError("line or head too long")
            self.fill()
        index = self.buf.index(marker)
        out, self.buf = self.buf[:index], self.buf[index + len(marker):]
        return out

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def read_body(reader, headers):
    chunked = any(k == "transfer-encoding" and "chunked" in v.lower() for k, v in headers)
    if chunked:
        total = 0
        while True:
            size = int(reader.until(b"\r\n", 8192).split(b";")[0].strip(), 16)
            if size == 0:
                while reader.until(b"\r\n", 8192):
                    pass
                return total
            reader.take(size)
            reader.take(2)
            total += size
    for k, v in headers:
        if k == "content-length":
            n = int(v.strip())
            reader.take(n)
            return n
    return 0


def serve(conn, number):
    log({"event": "connect", "conn": number})
    try:
        reader = Reader(conn)
        head = reader.until(b"\r\n\r\n", MAX_HEAD).decode("latin-1")
        lines = head.split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            raise ValueError("bad request line")
        method, target, _ = parts
        headers = []
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers.append((name.strip().lower(), value.strip()))
        body_len = read_body(reader, headers)
        log({"event": "request", "conn": number, "method": method, "target": target, "body_len": body_len})
        body = ("ok %s\n" % target).encode("latin-1")
        response = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body)
        conn.sendall(response + (b"" if method == "HEAD" else body))
    except EOFError:
        pass
    except (ValueError, UnicodeError) as error:
        log({"event": "bad_request", "conn": number, "reason": str(error)})
    except OSError:
        pass
    finally:
        # Close right away, without announcing it: the next request on this connection fails.
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        conn.close()
        log({"event": "close", "conn": number})


def main():
    global log_file
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--log")
    args = parser.parse_args()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: os._exit(0))
    if args.log:
        log_file = open(args.log, "a", encoding="utf-8")
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((args.host, args.port))
    server.listen(512)
    sys.stdout.write("PORT %d\n" % server.getsockname()[1])
    sys.stdout.flush()
    while True:
        conn, _ = server.accept()
        next_conn[0] += 1
        threading.Thread(target=serve, args=(conn, next_conn[0]), daemon=True).start()


if __name__ == "__main__":
    main()
