#!/usr/bin/env python3
"""intercept.py - c50 load for Benchmarks/intercept.sh (python3 stdlib only).

  intercept.py --proxy PORT --mode plain     --target http://plain.test/   -c 50 --seconds 5
  intercept.py --proxy PORT --mode intercept --target https://localhost:B/ --cafile ca.crt -c 50 --seconds 5

Opens C keep-alive connections through the proxy (plain: absolute-form requests; intercept:
CONNECT, then TLS with the sidecar's CA and origin-form requests inside) spread over 2 processes,
sends GETs back to back for SECONDS and prints {"requests": N, "seconds": S, "rps": R, "errors": E}.
Every socket operation times out; the run is bounded by SECONDS + 10.
"""
import argparse, json, multiprocessing, socket, ssl, sys, threading, time
from urllib.parse import urlsplit


def read_response(sock, buffer):
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        rest += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        raise ConnectionError(head.split(b"\r\n")[0].decode())
    return rest[length:]


def connection(args, deadline, counts, index):
    url = urlsplit(args.target)
    try:
        sock = socket.create_connection(("127.0.0.1", args.proxy), timeout=10)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if args.mode == "intercept":
            authority = url.netloc
            sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                head += sock.recv(1)
            context = ssl.create_default_context(cafile=args.cafile)
            sock = context.wrap_socket(sock, server_hostname=url.hostname)
            request = f"GET {url.path or '/'} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode()
        else:
            request = f"GET {args.target} HTTP/1.1\r\nHost: {url.netloc}\r\n\r\n".encode()
        buffer = b""
        while time.monotonic() < deadline:
            sock.sendall(request)
            buffer = read_response(sock, buffer)
            counts[index] += 1
    except Exception as error:  # counted, not fatal: the totals say how many
        counts[-1] += 1
        print(f"connection {index}: {error}", file=sys.stderr)


def worker(args, connections, start, queue):
    deadline = start + args.seconds
    counts = [0] * (connections + 1)
    threads = [threading.Thread(target=connection, args=(args, deadline, counts, i)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(args.seconds + 10)
    queue.put((sum(counts[:-1]), counts[-1]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--proxy", type=int, required=True)
    parser.add_argument("--mode", choices=["plain", "intercept"], required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--cafile")
    parser.add_argument("-c", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    queue = multiprocessing.Queue()
    start = time.monotonic() + 0.5
    per = [args.c // args.processes + (1 if i < args.c % args.processes else 0) for i in range(args.processes)]
    processes = [multiprocessing.Process(target=worker, args=(args, n, start, queue)) for n in per]
    for process in processes:
        process.start()
    results = [queue.get(timeout=args.seconds + 20) for _ in processes]
    for process in processes:
        process.join(5)
    requests = sum(r[0] for r in results)
    print(json.dumps({"requests": requests, "seconds": args.seconds, "rps": round(requests / args.seconds),
                      "errors": sum(r[1] for r in results)}))


if __name__ == "__main__":
    main()
