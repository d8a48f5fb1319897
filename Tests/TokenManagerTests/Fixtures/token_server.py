#!/usr/bin/env python3
"""A tiny OAuth 2.0 token endpoint for TokenManager's integration tests (stdlib only).

Listens on 127.0.0.1 (an ephemeral port unless --port), prints "PORT <n>" on stdout, and
appends one JSON line per request to --log: method, path, headers (list of [name, value]) and
body. Behaviour is read from the --control JSON file on every request (missing keys use the
defaults below), so a test can change it at runtime:

  status         HTTP status (200)
  expires_in     number, string or null for "absent" (3600)
  token_prefix   tokens are <prefix><n>, n counting requests ("tok-")
  token_type     "Bearer"; null to omit
  framing        "content-length" | "chunked" | "close"
  delay          seconds to sleep before answering (0)
  error          OAuth error code for non-200 answers (omitted when null)
  error_description
  retry_after    Retry-After header value (omitted when null)
  body           a raw body string that replaces the JSON document

A form with Action=AssumeRoleWithWebIdentity is answered as AWS STS does (XML): the access key
id is the token, the secret and session token are it with "-secret" and "-session" appended.

With --tls-cert/--tls-key it serves HTTPS (a failed handshake logs nothing: no request was read).
Each log line also has "time" (epoch seconds) and "token" (the token this request was answered with,
when it was a success).
"""
import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULTS = {
    "status": 200, "expires_in": 3600, "token_prefix": "tok-", "token_type": "Bearer",
    "framing": "content-length", "delay": 0, "error": None, "error_description": None,
    "retry_after": None, "body": None,
}

lock = threading.Lock()
counter = [0]


def control(path):
    settings = dict(DEFAULTS)
    if path:
        try:
            with open(path) as f:
                settings.update(json.load(f))
        except FileNotFoundError:
            pass
    return settings


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode("utf-8", "replace")
        with lock:
            counter[0] += 1
            n = counter[0]
            with open(self.server.log_path, "a") as log:
                log.write(json.dumps({
                    "method": self.command, "path": self.path, "time": time.time(),
                    "token": f"{control(self.server.control_path)['token_prefix']}{n}",
                    "headers": [[k, v] for k, v in self.headers.items()], "body": body,
                }) + "\n")
        settings = control(self.server.control_path)
        if settings["delay"]:
            time.sleep(settings["delay"])
        status = settings["status"]
        if settings["body"] is not None:
            payload = settings["body"]
        elif status == 200 and "Action=AssumeRoleWithWebIdentity" in body:
            # AWS STS: temporary keys named after the token (the key id), expiring in expires_in.
            key = f"{settings['token_prefix']}{n}"
            expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + (settings["expires_in"] or 3600)))
            payload = ("<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
                       f"<AccessKeyId>{key}</AccessKeyId><SecretAccessKey>{key}-secret</SecretAccessKey>"
                       f"<SessionToken>{key}-session</SessionToken><Expiration>{expires}</Expiration>"
                       "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>")
        elif status == 200:
            doc = {"access_token": f"{settings['token_prefix']}{n}"}
            if settings["token_type"] is not None:
                doc["token_type"] = settings["token_type"]
            if settings["expires_in"] is not None:
                doc["expires_in"] = settings["expires_in"]
            payload = json.dumps(doc)
        else:
            doc = {}
            if settings["error"] is not None:
                doc["error"] = settings["error"]
            if settings["error_description"] is not None:
                doc["error_description"] = settings["error_description"]
            payload = json.dumps(doc)
        data = payload.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if settings["retry_after"] is not None:
            self.send_header("Retry-After", str(settings["retry_after"]))
        framing = settings["framing"]
        if framing == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            half = len(data) // 2
            for piece in (data[:half], data[half:]):
                if piece:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        elif framing == "close":
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        self.wfile.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", required=True)
    parser.add_argument("--control")
    parser.add_argument("--tls-cert", help="serve HTTPS with this PEM certificate chain")
    parser.add_argument("--tls-key", help="private key for --tls-cert")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    if args.tls_cert:
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    server.log_path = args.log
    server.control_path = args.control
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
