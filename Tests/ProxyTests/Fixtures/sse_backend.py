#!/usr/bin/env python3
"""A server-sent events backend on 127.0.0.1 (plain, or TLS with --tls-cert/--tls-key).

GET /sse?n=N&interval=MS        N events, one every MS ms, chunked
GET /sse-close?n=N&interval=MS  the same without a length: the body ends when the server closes
Each event is `data: <send time, Unix seconds>\\n\\n`, written when it is due (TCP_NODELAY), so a
client can measure how long each took to reach it. Prints `PORT n`; runs until killed.
"""
import argparse
import socket
import ssl
import threading
import time
from urllib.parse import parse_qs, urlparse


def serve(sock):
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        head = b""
        while b"\r\n\r\n" not in head:
            data = sock.recv(4096)
            if not data:
                return
            head += data
        target = head.split(b"\r\n")[0].split(b" ")[1].decode()
        url = urlparse(target)
        query = parse_qs(url.query)
        count = int(query.get("n", ["20"])[0])
        interval = int(query.get("interval", ["100"])[0]) / 1000
        chunked = url.path == "/sse"
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     + (b"Transfer-Encoding: chunked\r\n" if chunked else b"Connection: close\r\n") + b"\r\n")
        for _ in range(count):
            time.sleep(interval)
            event = b"data: %.6f\n\n" % time.time()
            sock.sendall(b"%x\r\n%s\r\n" % (len(event), event) if chunked else event)
        if chunked:
            sock.sendall(b"0\r\n\r\n")
    except OSError:
        pass
    finally:
        sock.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    args = parser.parse_args()
    context = None
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    print("PORT %d" % server.getsockname()[1], flush=True)
    while True:
        sock, _ = server.accept()
        if context:
            try:
                sock = context.wrap_socket(sock, server_side=True)
            except (OSError, ssl.SSLError):
                sock.close()
                continue
        threading.Thread(target=serve, args=(sock,), daemon=True).start()


if __name__ == "__main__":
    main()
