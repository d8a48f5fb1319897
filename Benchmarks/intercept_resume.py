#!/usr/bin/env python3
"""intercept_resume.py PORT AUTHORITY CAFILE [tls1.2] - six TLS connections to AUTHORITY through the
proxy's intercepted tunnels, each after the first offering the previous session; prints how many resumed."""
import socket, ssl, sys
port, authority, cafile = int(sys.argv[1]), sys.argv[2], sys.argv[3]
host = authority.rsplit(":", 1)[0]
context = ssl.create_default_context(cafile=cafile)
if len(sys.argv) > 4: context.maximum_version = ssl.TLSVersion.TLSv1_2
session, reused = None, 0
for _ in range(6):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head: head += sock.recv(1)
    tls = context.wrap_socket(sock, server_hostname=host, session=session)
    tls.sendall(f"GET / HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n".encode())
    while tls.recv(65536): pass
    reused += tls.session_reused
    session = tls.session
    tls.close()
print(reused)
