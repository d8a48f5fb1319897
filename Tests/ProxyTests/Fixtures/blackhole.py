#!/usr/bin/env python3
"""A TCP server that accepts connections and never sends anything (pure python3 stdlib).

Every accepted socket is held open (and whatever arrives is read and discarded) until the
peer closes it or the process is killed, so a TLS handshake or HTTP exchange never completes.

Usage:
    python3 blackhole.py [--port 0] [--host 127.0.0.1]

Prints exactly "PORT <n>\\n" on stdout (flushed) once listening; SIGTERM / SIGINT exit immediately.
"""

import argparse
import os
import signal
import socket
import sys
import threading


def hold(conn):
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass
    finally:
        conn.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: os._exit(0))
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((args.host, args.port))
    server.listen(128)
    sys.stdout.write("PORT %d\n" % server.getsockname()[1])
    sys.stdout.flush()
    while True:
        conn, _ = server.accept()
        threading.Thread(target=hold, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
