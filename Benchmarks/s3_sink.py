#!/usr/bin/env python3
"""A TLS sink that answers S3 PutObject for the AWS upload benchmark (aws-upload-rss.sh): answers
`Expect: 100-continue`, reads each request's body (Content-Length or chunked) to its end without
keeping it, and answers 200 with an ETag. One JSON line per request to --log: method, path, the access key id of its
signature, whether the placeholder appeared, x-amz-content-sha256, and the bytes read.

    s3_sink.py --cert CERT --key KEY --log FILE     prints "PORT <n>"

Loopback only (127.0.0.1, an ephemeral port).
"""
import argparse
import json
import re
import socket
import ssl
import threading

PLACEHOLDER = b"AKIDTOKENSIDECAR0001"


def serve(connection, log_path, lock):
    reader = connection.makefile("rb", buffering=1 << 20)
    try:
        while True:
            line = reader.readline()
            if not line:
                return
            method, path, _ = line.decode("latin-1").split(" ", 2)
            headers, raw = {}, line
            while True:
                field = reader.readline()
                raw += field
                if field in (b"\r\n", b""):
                    break
                name, _, value = field.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            received = 0
            if headers.get("expect", "").lower() == "100-continue":
                connection.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")    # as S3 does: botocore waits for it
            if "content-length" in headers:
                left = int(headers["content-length"])
                while left:
                    chunk = reader.read(min(left, 1 << 20))
                    if not chunk:
                        return
                    received += len(chunk)
                    left -= len(chunk)
            elif "chunked" in headers.get("transfer-encoding", ""):
                while True:
                    size = int(reader.readline().split(b";")[0], 16)
                    if size == 0:
                        while reader.readline() not in (b"\r\n", b""):
                            pass
                        break
                    left = size
                    while left:
                        chunk = reader.read(min(left, 1 << 20))
                        received += len(chunk)
                        left -= len(chunk)
                    reader.readline()
            key = re.search(r"Credential=([A-Z0-9]+)/", headers.get("authorization", ""))
            with lock, open(log_path, "a") as log:
                log.write(json.dumps({"method": method, "path": path, "signedWith": key.group(1) if key else None,
                                      "placeholder": PLACEHOLDER in raw, "payload": headers.get("x-amz-content-sha256"),
                                      "bytes": received}) + "\n")
            connection.sendall(b'HTTP/1.1 200 OK\r\nETag: "0123456789abcdef0123456789abcdef"\r\nContent-Length: 0\r\n\r\n')
    except (OSError, ValueError):
        return
    finally:
        connection.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    listener = socket.create_server(("127.0.0.1", 0))
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    lock = threading.Lock()
    while True:
        connection, _ = listener.accept()
        try:
            tls = context.wrap_socket(connection, server_side=True)
        except (OSError, ssl.SSLError):
            connection.close()
            continue
        threading.Thread(target=serve, args=(tls, args.log, lock), daemon=True).start()


if __name__ == "__main__":
    main()
