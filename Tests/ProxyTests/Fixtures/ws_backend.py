#!/usr/bin/env python3
"""A WebSocket backend for the upgrade tests: the `websockets` package's server (run with the
test-only virtual environment's python, `make peers-venv`), on 127.0.0.1.

Usage: ws_backend.py --log FILE [--control FILE] [--accept TOKEN ...] [--tls-cert F --tls-key F]

A handshake is accepted only with `Authorization: Bearer T` where T is an --accept token, or a
token the test token server issued (`tok-N`) that the control file ({"revoked": [...]}, read at
each handshake) does not list; anything else gets 401. Each handshake is logged as a JSON line:
path, every Authorization line, Upgrade, Connection, Via, and the status given.

After the handshake every message is echoed back, in order, except these text commands:
  "close CODE"       the server closes with CODE
  "send N SIZE"      N binary messages of SIZE bytes (the first 4 bytes: the index, big-endian)
  "flood BYTES"      BYTES in binary messages of 64 KiB, as fast as the connection takes them
  "ping"             the server pings the client and answers "pong-received" once it gets the pong
Prints `PORT n` once listening. Runs until killed.
"""
import argparse
import asyncio
import json
import ssl
import struct
import sys
import time
from http import HTTPStatus

from websockets.asyncio.server import serve


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--control")
    parser.add_argument("--accept", action="append", default=[])
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    args = parser.parse_args()

    def revoked():
        if not args.control:
            return []
        try:
            with open(args.control) as f:
                return json.load(f).get("revoked", [])
        except (OSError, ValueError):
            return []

    def log(entry):
        with open(args.log, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def process_request(connection, request):
        authorizations = request.headers.get_all("Authorization")
        token = authorizations[0][len("Bearer "):] if len(authorizations) == 1 and authorizations[0].startswith("Bearer ") else None
        valid = token is not None and (token in args.accept or (token.startswith("tok-") and token not in revoked()))
        log({"event": "handshake", "path": request.path, "authorization": authorizations,
             "upgrade": request.headers.get_all("Upgrade"), "connection": request.headers.get_all("Connection"),
             "via": request.headers.get_all("Via"), "status": 101 if valid else 401, "time": time.time()})
        if not valid:
            return connection.respond(HTTPStatus.UNAUTHORIZED, "token refused\n")
        return None

    async def handler(websocket):
        try:
            await serve_messages(websocket)
        finally:
            log({"event": "closed", "code": websocket.close_code, "time": time.time()})

    async def serve_messages(websocket):
        async for message in websocket:
            if isinstance(message, str) and message.startswith("close "):
                await websocket.close(int(message.split()[1]), "closed by the backend")
                return
            if isinstance(message, str) and message.startswith("send "):
                _, count, size = message.split()
                for index in range(int(count)):
                    await websocket.send(struct.pack(">I", index) + bytes(max(0, int(size) - 4)))
                continue
            if isinstance(message, str) and message.startswith("flood "):
                left = int(message.split()[1])
                chunk = bytes(64 * 1024)
                while left > 0:
                    await websocket.send(chunk[:min(left, len(chunk))])
                    left -= len(chunk)
                continue
            if message == "ping":
                waiter = await websocket.ping()
                await asyncio.wait_for(waiter, 10)
                await websocket.send("pong-received")
                continue
            await websocket.send(message)

    async def run():
        context = None
        if args.tls_cert:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(args.tls_cert, args.tls_key)
        async with serve(handler, "127.0.0.1", 0, process_request=process_request, max_size=None,
                         ping_interval=None, ssl=context, compression=None) as server:
            port = server.sockets[0].getsockname()[1]
            print(f"PORT {port}", flush=True)
            await asyncio.Future()

    asyncio.run(run())


if __name__ == "__main__":
    sys.exit(main())
