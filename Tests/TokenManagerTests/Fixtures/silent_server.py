#!/usr/bin/env python3
"""A server that accepts connections, reads everything and never answers (a hung Redis).

Listens on 127.0.0.1 (ephemeral port), prints "PORT <n>" on stdout, serves until killed.
"""
import socket
import threading


def drain(conn):
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass


def main():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    print("PORT %d" % server.getsockname()[1], flush=True)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=drain, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
