#!/usr/bin/env python3
"""A WebSocket client for the upgrade tests: the `websockets` package's sync client (run with
the test-only virtual environment's python, `make peers-venv`), through token-sidecar.

Usage: ws_client.py --proxy PORT --url URL --how HOW --scenario NAME [--cafile CA]

HOW is how the app reaches the proxy:
  connect    the package's own proxy support: CONNECT host:port, then the handshake inside
             (what `websockets` does for ws:// and wss:// behind HTTP_PROXY / HTTPS_PROXY)
  absolute   a plain connection to the proxy and the handshake in absolute form,
             `GET ws-as-http://host/path` (what aiohttp and Node's proxy agents send)
Scenarios (each prints one JSON object on its last line):
  messages   10,000 text and 10,000 binary messages echoed in order, then 10,000 pushed by the server
  big        a 16 MiB message each way
  ping       a ping from the client answered, and one from the server
  close-client / close-server   a close with code 4000 / 4001 from that side
  slow-read  asks for 64 MiB and does not read for 3 s (prints STALLED first), then reads it all
  idle       waits (up to 5 s) for the proxy to end a silent connection
  lifetime   asks for 1,000,000 small messages and reads until the connection closes
  handshake  opens and closes (or reports the refusal)
"""
import argparse
import json
import socket
import struct
import sys
import time

from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.protocol import CONNECTING
from websockets.sync.client import ClientConnection, connect


def absolute_form(url):
    """A connection class whose handshake request names the whole URL (absolute form)."""
    target = "http" + url[len("ws"):] if url.startswith("ws") else url

    class AbsoluteFormConnection(ClientConnection):
        def handshake(self, additional_headers=None, user_agent_header=None, timeout=None):
            self.request = self.protocol.connect()
            self.request.path = target
            with self.send_context(expected_state=CONNECTING):
                self.protocol.send_request(self.request)
            if not self.response_rcvd.wait(timeout):
                raise TimeoutError("timed out while waiting for handshake response")
            if self.protocol.handshake_exc is not None:
                raise self.protocol.handshake_exc

    return AbsoluteFormConnection


def open_connection(args):
    options = dict(max_size=None, compression=None, ping_interval=None, open_timeout=10, close_timeout=5)
    if args.cafile:
        import ssl
        options["ssl"] = ssl.create_default_context(cafile=args.cafile)
    if args.how == "connect":
        return connect(args.url, proxy=f"http://127.0.0.1:{args.proxy}", **options)
    sock = socket.create_connection(("127.0.0.1", args.proxy), timeout=10)
    return connect(args.url, sock=sock, proxy=None, create_connection=absolute_form(args.url), **options)


def scenario_messages(ws):
    errors = []
    for kind in ("text", "binary"):
        for index in range(10_000):
            ws.send(f"message {index}" if kind == "text" else struct.pack(">I", index) + b"\x00" * 12)
            # Read every 100 sends: enough in flight to interleave, never a stall.
            if index % 100 == 99:
                for back in range(index - 99, index + 1):
                    got = ws.recv(timeout=10)
                    want = f"message {back}" if kind == "text" else struct.pack(">I", back) + b"\x00" * 12
                    if got != want and len(errors) < 5:
                        errors.append(f"{kind} {back}: {got[:20]!r}")
    ws.send("send 10000 64")
    for index in range(10_000):
        got = ws.recv(timeout=10)
        if (not isinstance(got, bytes) or struct.unpack(">I", got[:4])[0] != index or len(got) != 64) and len(errors) < 5:
            errors.append(f"pushed {index}: {got[:8]!r}")
    return {"ok": not errors, "errors": errors, "echoed": 20_000, "pushed": 10_000}


def scenario_big(ws):
    payload = bytes(range(256)) * (16 * 1024 * 1024 // 256)
    ws.send(payload)
    got = ws.recv(timeout=60)
    return {"ok": got == payload, "sent": len(payload), "received": len(got)}


def scenario_ping(ws):
    started = time.monotonic()
    ws.ping().wait(10)
    client_rtt = time.monotonic() - started
    ws.send("ping")
    answer = ws.recv(timeout=10)
    return {"ok": answer == "pong-received", "client_ping_seconds": round(client_rtt, 4), "server_ping": answer}


def scenario_close(ws, side):
    if side == "client":
        ws.close(4000, "closed by the app")
        return {"ok": True, "sent_code": 4000}
    ws.send("close 4001")
    try:
        ws.recv(timeout=10)
        return {"ok": False, "error": "no close"}
    except ConnectionClosed as closed:
        return {"ok": closed.rcvd is not None and closed.rcvd.code == 4001,
                "received_code": closed.rcvd.code if closed.rcvd else None}


def scenario_slow_read(ws):
    total = 64 * 1024 * 1024
    ws.send(f"flood {total}")
    time.sleep(0.5)
    print("STALLED", flush=True)
    time.sleep(3)
    got = 0
    while got < total:
        got += len(ws.recv(timeout=30))
    return {"ok": got == total, "received": got}


def scenario_idle(ws):
    started = time.monotonic()
    try:
        ws.recv(timeout=5)
        return {"ok": False, "error": "a message arrived"}
    except TimeoutError:
        return {"ok": False, "error": "still open after 5 s"}
    except ConnectionClosed as closed:
        return {"ok": True, "closed_after": round(time.monotonic() - started, 2),
                "received_code": closed.rcvd.code if closed.rcvd else None}


def scenario_lifetime(ws):
    ws.send("send 1000000 32")
    started = time.monotonic()
    received = 0
    try:
        while True:
            got = ws.recv(timeout=10)
            if struct.unpack(">I", got[:4])[0] != received or len(got) != 32:
                return {"ok": False, "error": f"message {received} damaged: {got[:8]!r}"}
            received += 1
    except ConnectionClosed as closed:
        return {"ok": closed.rcvd is not None and closed.rcvd.code == 1001, "received": received,
                "received_code": closed.rcvd.code if closed.rcvd else None,
                "closed_after": round(time.monotonic() - started, 2)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--proxy", type=int, required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--how", choices=["connect", "absolute"], required=True)
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--cafile")
    args = parser.parse_args()
    try:
        ws = open_connection(args)
    except InvalidStatus as refused:
        print(json.dumps({"ok": False, "handshake_status": refused.response.status_code}))
        return 0
    with ws:
        if args.scenario == "messages":
            result = scenario_messages(ws)
        elif args.scenario == "big":
            result = scenario_big(ws)
        elif args.scenario == "ping":
            result = scenario_ping(ws)
        elif args.scenario in ("close-client", "close-server"):
            result = scenario_close(ws, args.scenario.split("-")[1])
        elif args.scenario == "slow-read":
            result = scenario_slow_read(ws)
        elif args.scenario == "idle":
            result = scenario_idle(ws)
        elif args.scenario == "lifetime":
            result = scenario_lifetime(ws)
        else:
            result = {"ok": True}
        result["subprotocol_headers"] = dict(ws.response.headers) if ws.response else {}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
