#!/usr/bin/env python3
"""A stand-in for the APIs vendor SDKs call, accepting only the real key, each in its own place.

Usage:
    python3 key_api.py CERT|- KEY|- LOG NAME=KEY...

Serves HTTPS with CERT and KEY (plain HTTP when both are "-") on 127.0.0.1 and prints
"PORT <n>" once listening. Keys are given per API (openai, anthropic, azure, maps, billing);
each path expects its API's key where that API reads it:
    POST /v1/chat/completions               Authorization: Bearer KEY      (OpenAI)
    POST /v1/messages                       x-api-key: KEY                 (Anthropic)
    POST /openai/deployments/D/chat/...     api-key: KEY                   (Azure OpenAI)
    GET  /maps                              ?key=KEY                       (a Google-style key)
    GET  /billing                           Authorization: Basic KEY:      (Stripe-style Basic)
    GET  /bearer/NAME                       Authorization: Bearer KEY of NAME (any OAuth API)
and further: the key exactly once in the whole head (field values, a Basic pair decoded, the
target), no placeholder (`tsp_` or the ones given with --placeholder) and no value the app held
itself ("app-own") anywhere. Otherwise 401.

LOG gets one JSON line per request: {"path": ..., "ok": bool, "why": ...}, never a key.
"""
import base64
import http.server
import json
import ssl
import sys
import threading
import urllib.parse

cert, key, log_path = sys.argv[1], sys.argv[2], sys.argv[3]
keys = dict(arg.split("=", 1) for arg in sys.argv[4:])
lock = threading.Lock()

RESPONSES = {
    "openai": {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello from openai"},
                            "finish_reason": "stop"}]},
    "anthropic": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                  "content": [{"type": "text", "text": "hello from anthropic"}], "stop_reason": "end_turn",
                  "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}},
}


def api_of(path):
    if path.startswith("/v1/chat/completions"):
        return "openai"
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith("/openai/deployments/"):
        return "azure"
    if path.startswith("/maps"):
        return "maps"
    if path.startswith("/billing"):
        return "billing"
    if path.startswith("/bearer/"):
        return path[len("/bearer/"):].split("?")[0].split("/")[0]
    return None


def decoded_basic(value):
    if value.lower().startswith("basic "):
        try:
            return base64.b64decode(value[6:].strip()).decode("latin-1")
        except Exception:
            return ""
    return ""


def check(handler):
    api = api_of(handler.path)
    if api is None or api not in keys:
        return "unknown path"
    real = keys[api]
    headers = handler.headers
    texts = [handler.path] + [v for _, v in headers.items()] + [decoded_basic(v) for _, v in headers.items()]
    joined = "\n".join(texts)
    if "tsp_" in joined or "app-own" in joined or "placeholder" in joined:
        return "a placeholder or the app's own value arrived"
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(handler.path).query)
    if api == "openai" or handler.path.startswith("/bearer/"):
        ok = headers.get_all("Authorization") == ["Bearer " + real]
    elif api == "anthropic":
        ok = headers.get_all("x-api-key") == [real]
    elif api == "azure":
        ok = headers.get_all("api-key") == [real]
    elif api == "maps":
        ok = query.get("key") == [real]
    else:
        ok = headers.get_all("Authorization") == ["Basic " + base64.b64encode((real + ":").encode()).decode()]
    if not ok:
        return "the key is not where " + api + " reads it"
    count = sum(text.count(real) for text in texts)
    if count != 1:
        return "the key arrived %d times" % count
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        why = check(self)
        with lock, open(log_path, "a") as log:
            log.write(json.dumps({"path": urllib.parse.urlsplit(self.path).path, "ok": why is None, "why": why}) + "\n")
        api = api_of(self.path)
        if why is None:
            body = json.dumps(RESPONSES.get("openai" if api == "azure" else api, {"ok": True})).encode()
            self.send_response(200)
        else:
            body = json.dumps({"error": {"type": "authentication_error", "message": why}}).encode()
            self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = handle_any


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
if cert != "-":
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
print("PORT %d" % server.server_address[1], flush=True)
server.serve_forever()
