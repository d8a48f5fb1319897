#!/usr/bin/env python3
"""Drives a WebSocket echo through a proxy and prints what it measured (one JSON line).

Usage: websocket_driver.py --url ws://127.0.0.1:PORT/ws --messages N --size BYTES --window W
Sends N binary messages of BYTES, keeping at most W unanswered (the echo server answers each),
checks every echo, and prints elapsed seconds and messages per second. Run with the test peers'
python (`make peers-venv`: the `websockets` package).
"""
import argparse
import json
import time

from websockets.sync.client import connect


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--window", type=int, default=64)
    args = parser.parse_args()
    payload = bytes(range(256)) * (args.size // 256) + bytes(args.size % 256)
    with connect(args.url, proxy=None, max_size=None, compression=None, ping_interval=None) as ws:
        started = time.monotonic()
        sent = received = 0
        while received < args.messages:
            while sent < args.messages and sent - received < args.window:
                ws.send(payload)
                sent += 1
            if ws.recv(timeout=30) != payload:
                raise SystemExit("a damaged echo")
            received += 1
        elapsed = time.monotonic() - started
    print(json.dumps({"messages": args.messages, "size": args.size, "seconds": round(elapsed, 3),
                      "per_second": round(args.messages / elapsed)}))


if __name__ == "__main__":
    main()
