#!/usr/bin/env python3
"""Reads a server-sent events stream through the proxy and reports how late each event came.

Usage: sse_client.py --proxy PORT --url URL [--cafile CA]
http:// URLs go in absolute form; https:// URLs through a CONNECT tunnel (intercepted: --cafile
is the sidecar's CA). Prints one JSON object: the events received and their delays (ms).
"""
import argparse
import http.client
import json
import ssl
import time
from urllib.parse import urlparse


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--proxy", type=int, required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--cafile")
    args = parser.parse_args()
    url = urlparse(args.url)
    if url.scheme == "https":
        conn = http.client.HTTPSConnection("127.0.0.1", args.proxy, timeout=30,
                                           context=ssl.create_default_context(cafile=args.cafile))
        conn.set_tunnel(url.hostname, url.port or 443)
        conn.request("GET", url.path + ("?" + url.query if url.query else ""))
    else:
        conn = http.client.HTTPConnection("127.0.0.1", args.proxy, timeout=30)
        conn.request("GET", args.url)
    response = conn.getresponse()
    delays = []
    while True:
        line = response.readline()
        if not line:
            break
        if line.startswith(b"data: "):
            delays.append((time.time() - float(line[6:])) * 1000)
    delays.sort()
    p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))] if delays else None
    print(json.dumps({"status": response.status, "events": len(delays), "p99_ms": p99,
                      "max_ms": delays[-1] if delays else None}))


if __name__ == "__main__":
    main()
