#!/usr/bin/env python3
"""A one-leaf stand-in for the interceptor, for the Chromium check.

Usage: tls_proxy.py LEAF.pem LEAF.key PORTFILE LOGFILE MARKER

Listens on 127.0.0.1 (ephemeral port, written to PORTFILE) as an HTTP proxy. Every CONNECT, to
whatever host or IP, is answered "200" and the tunnel is terminated right here with LEAF -- so
Chromium checks LEAF against the name it asked for (https://10.9.8.7/ or https://[::1]/ included)
while no packet ever leaves 127.0.0.1. A GET that arrives inside the tunnel means Chromium accepted
the certificate: it is logged to LOGFILE and answered with a page holding MARKER. Exits by itself
after 60 s.
"""
import os
import socket
import ssl
import sys
import threading
import time

leaf, key, portfile, logfile, marker = sys.argv[1:6]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(leaf, key)
lock = threading.Lock()


def log(line):
    with lock, open(logfile, "a") as f:
        f.write(line + "\n")


def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.decode("latin-1")


def handle(conn):
    conn.settimeout(10)
    try:
        head = read_head(conn)
        first = head.split("\r\n", 1)[0]
        if not first.startswith("CONNECT "):
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        target = first.split()[1]
        conn.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        try:
            tls = ctx.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError) as error:  # Chromium refused the certificate mid-handshake
            log(f"HANDSHAKE-FAIL {target} {getattr(error, 'reason', None) or error}")
            return
        request = read_head(tls).split("\r\n", 1)[0]
        log(f"REQUEST {target} {request}")
        body = f"<html><body><p id=m>{marker}</p></body></html>".encode()
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
                    b"Content-Length: %d\r\n\r\n" % len(body) + body)
        tls.close()
    except OSError as error:
        log(f"ERROR {error}")
    finally:
        conn.close()


server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(16)
server.settimeout(1)
with open(portfile + ".tmp", "w") as f:
    f.write(str(server.getsockname()[1]))
os.replace(portfile + ".tmp", portfile)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        conn, _ = server.accept()
    except socket.timeout:
        continue
    threading.Thread(target=handle, args=(conn,), daemon=True).start()
