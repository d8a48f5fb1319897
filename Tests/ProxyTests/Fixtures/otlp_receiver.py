#!/usr/bin/env python3
"""An OpenTelemetry trace receiver (OTLP/HTTP, binary protobuf) for token-sidecar's trace-export
tests: it decodes what the sidecar exports with the official schema and keeps every request and
every span where a test can read them.

Independent of the code under test: the request is parsed with opentelemetry-proto's generated
classes (opentelemetry.proto.collector.trace.v1.trace_service_pb2, from PyPI, in the test-only
virtual environment .build-otel: `make otel-venv`, interpreter OTelPython.path); the rest is the
standard library.

    otlp_receiver.py --dir DIR [--fail-first N] [--port P]

--port P listens on that port (a test that stops the receiver and brings it back on the same
address); without it, an ephemeral port.

Listens on 127.0.0.1 (an ephemeral port), then prints "PORT <port>" on stdout and flushes.
Nothing else is written to stdout; stderr gets only real errors (a malformed HTTP request line,
an unreadable control file, an exception in a handler), never a line per request. HTTP/1.1 with
persistent connections; every response has a Content-Length; one daemon thread per connection.

  POST /v1/traces   an ExportTraceServiceRequest. In order:
      1. the body is read: Content-Length, or Transfer-Encoding: chunked (chunk extensions and
         trailers ignored); a malformed chunked body -> 400 and the connection is closed; neither
         header -> an empty body. At most 64 MiB (413, connection closed).
      2. Content-Type must be application/x-protobuf (any case, parameters ignored), else 415.
      3. Content-Encoding: gzip (or x-gzip) -> gunzipped (at most 64 MiB out); not valid gzip ->
         400. identity or none -> as is; any other coding -> 415.
      4. ExportTraceServiceRequest.FromString; a failure -> 400, text/plain, the reason.
      5. --fail-first N: the first N requests that got this far are answered 503 with
         "Retry-After: 1" and an empty body, whatever DIR/control.json says; spans not stored.
      6. otherwise the mode of DIR/control.json (below) answers.
    200 (mode ok or slow): Content-Type application/x-protobuf, the serialized empty
    ExportTraceServiceResponse (zero bytes, so Content-Length: 0); its spans were appended to
    DIR/spans.jsonl before the response was sent, so a client that has the 200 can read them.
    Other methods on /v1/traces: 405 (Allow: POST). Not logged.
  GET /spans        200 application/json: the array of every line of DIR/spans.jsonl.
  GET /requests     200 application/json: the array of every line of DIR/requests.jsonl.
  Anything else     404 text/plain.

DIR/control.json, read on every export request (write it atomically: a temporary file, then
rename); a missing file is {"mode": "ok"}:
  {"mode": "ok"}                 200, spans stored.
  {"mode": "status", "status": S, "retry_after": R}
                                 answer S (an integer 200..599) with an empty body and
                                 Content-Type application/x-protobuf (zero bytes are a valid empty
                                 google.rpc.Status); R optional: a number of seconds (or a string,
                                 sent as is) in a Retry-After header. Spans are NOT stored, even
                                 for S = 200; the request is logged.
  {"mode": "slow", "delay": D}   sleep D seconds (a number), then as ok.
  {"mode": "close"}              close the connection without answering (logged, status null).
  Not JSON, not an object, an unknown mode or a bad field -> 500 text/plain, a line on stderr.

Logs (JSON lines, appended; one write per request, under a lock):
  DIR/requests.jsonl, one per POST /v1/traces (whatever the outcome, 415 and 400 included):
    time (Unix seconds, float, when the body had been read), mode (the control mode that
    answered: "ok", "status", "slow", "close", "fail-first", or the mode read when an earlier
    step refused the request, "invalid" for a bad control file), status (the status answered,
    null for close), content_encoding, content_type (the header values, null when absent),
    headers ({lower-cased name: value}, every request header; a repeated one joined with ", "),
    span_count (spans in the request; null when it was not decoded), body_bytes (length of the
    body as received, before gunzip), chunked (bool), error (why it was refused, else null).
  DIR/spans.jsonl, one per span of every export answered 200:
    trace_id (hex of the bytes: 32 lowercase digits for a valid id), span_id (16), parent_span_id
    (16, or "" for a root span), trace_state, name, kind (the enum name, "SPAN_KIND_SERVER"; an
    int for a value the schema does not name), start_ns, end_ns (ints), attributes, events
    ([{name, time_ns, attributes}]), links ([{trace_id, span_id, trace_state, attributes}]),
    status ({code: "STATUS_CODE_UNSET" | "STATUS_CODE_OK" | "STATUS_CODE_ERROR", message}),
    flags (int), dropped_attributes_count, dropped_events_count, dropped_links_count, resource
    (the resource's attributes), scope ({name, version}).
    Attributes are {key: value}: string -> str, int -> int, double -> float (NaN and infinities
    as the strings "NaN", "Infinity", "-Infinity", so the line stays strict JSON), bool -> bool,
    array -> list (of converted values), kvlist -> dict, bytes -> {"bytes": hex}, unset -> null;
    a repeated key keeps its last value.
"""
import argparse
import json
import math
import os
import socket
import sys
import threading
import time
import traceback
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTraceServiceRequest,
                                                                        ExportTraceServiceResponse)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

MAX_BODY = 64 * 1024 * 1024
PROTOBUF = "application/x-protobuf"

lock = threading.Lock()
state = {"fail_first": 0, "failed": 0}  # plus the paths, set in main


class BadBody(Exception):
    def __init__(self, status, reason):
        Exception.__init__(self, reason)
        self.status, self.reason = status, reason


class BadControl(Exception):
    pass


def error(text):
    sys.stderr.write("otlp_receiver: %s\n" % text)
    sys.stderr.flush()


# ---------------------------------------------------------------- control and logs

def read_control():
    """The control document; BadControl when it is unusable."""
    try:
        with open(state["control"]) as f:
            text = f.read()
    except FileNotFoundError:
        return {"mode": "ok"}
    except OSError as e:
        raise BadControl("control.json unreadable: %s" % e)
    try:
        control = json.loads(text)
    except ValueError as e:
        raise BadControl("control.json is not JSON: %s" % e)
    if not isinstance(control, dict):
        raise BadControl("control.json is not an object")
    mode = control.get("mode", "ok")
    if mode not in ("ok", "status", "slow", "close"):
        raise BadControl("control.json: unknown mode %r" % (mode,))
    if mode == "status":
        status = control.get("status")
        if not isinstance(status, int) or isinstance(status, bool) or not 200 <= status <= 599:
            raise BadControl("control.json: status %r is not an integer 200..599" % (status,))
        retry = control.get("retry_after")
        if retry is not None and (isinstance(retry, bool) or not isinstance(retry, (int, float, str))):
            raise BadControl("control.json: retry_after %r is neither a number nor a string" % (retry,))
    if mode == "slow":
        delay = control.get("delay", 0)
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or delay < 0:
            raise BadControl("control.json: delay %r is not a non-negative number" % (delay,))
    return control


def append(path, records):
    if not records:
        return
    text = "".join(json.dumps(record, allow_nan=False) + "\n" for record in records)
    with lock:
        with open(path, "a") as f:
            f.write(text)
            f.flush()


def read_lines(path):
    with lock:
        try:
            with open(path) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []


# ---------------------------------------------------------------- protobuf -> JSON

def any_value(value):
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        number = value.double_value
        if math.isnan(number):
            return "NaN"
        if math.isinf(number):
            return "Infinity" if number > 0 else "-Infinity"
        return number
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return {"bytes": value.bytes_value.hex()}
    return None  # a oneof member newer than this receiver


def attributes(key_values):
    return {kv.key: any_value(kv.value) for kv in key_values}


def enum_name(enum, number):
    try:
        return enum.Name(number)
    except ValueError:
        return number


def span_records(request):
    records = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = {"name": scope_spans.scope.name, "version": scope_spans.scope.version}
            for span in scope_spans.spans:
                records.append({
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "trace_state": span.trace_state,
                    "name": span.name,
                    "kind": enum_name(Span.SpanKind, span.kind),
                    "start_ns": span.start_time_unix_nano,
                    "end_ns": span.end_time_unix_nano,
                    "attributes": attributes(span.attributes),
                    "events": [{"name": event.name, "time_ns": event.time_unix_nano,
                                "attributes": attributes(event.attributes)} for event in span.events],
                    "links": [{"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex(),
                               "trace_state": link.trace_state, "attributes": attributes(link.attributes)}
                              for link in span.links],
                    "status": {"code": enum_name(Status.StatusCode, span.status.code),
                               "message": span.status.message},
                    "flags": span.flags,
                    "dropped_attributes_count": span.dropped_attributes_count,
                    "dropped_events_count": span.dropped_events_count,
                    "dropped_links_count": span.dropped_links_count,
                    "resource": resource,
                    "scope": scope,
                })
    return records


def span_count(request):
    return sum(len(scope_spans.spans) for resource_spans in request.resource_spans
               for scope_spans in resource_spans.scope_spans)


# ---------------------------------------------------------------- HTTP

def media_type(value):
    return (value or "").split(";", 1)[0].strip().lower()


def gunzip(body):
    """The gunzipped body (every member, RFC 1952 §2.2); BadBody when it is not gzip."""
    out = bytearray()
    rest = body
    try:
        while True:
            decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out += decompressor.decompress(rest, MAX_BODY + 1 - len(out))
            if len(out) > MAX_BODY:
                raise BadBody(413, "gunzipped body over %d bytes" % MAX_BODY)
            if not decompressor.eof:
                raise BadBody(400, "bad gzip body: truncated")
            rest = decompressor.unused_data
            if not rest:
                return bytes(out)
    except zlib.error as e:
        raise BadBody(400, "bad gzip body: %s" % e)


class ReceiverHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "otlp-receiver"

    def version_string(self):
        return self.server_version

    def log_message(self, format, *args):
        pass  # no line per request

    def log_error(self, format, *args):
        error("%s: %s" % (self.address_string(), format % args))

    # -- responses

    def respond(self, status, body=b"", content_type="text/plain; charset=utf-8", headers=(), close=False):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if body:
            self.wfile.write(body)
        self.wfile.flush()

    def text(self, status, message, **options):
        self.respond(status, (message + "\n").encode("utf-8"), **options)

    def hang_up(self):
        """Close the connection without a byte of response."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- request bodies

    def read_body(self):
        """(bytes, chunked); BadBody (the connection is not reusable after it)."""
        coding = self.headers.get("Transfer-Encoding")
        if coding is not None:
            if coding.strip().lower() != "chunked":
                raise BadBody(400, "unsupported Transfer-Encoding %r" % coding)
            body = bytearray()
            while True:
                line = self.rfile.readline(65537)
                if not line.endswith(b"\n"):
                    raise BadBody(400, "truncated chunk size line")
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise BadBody(400, "bad chunk size line %r" % line[:40])
                if size < 0:
                    raise BadBody(400, "negative chunk size")
                if size == 0:
                    while True:
                        trailer = self.rfile.readline(65537)
                        if trailer in (b"\r\n", b"\n"):
                            return bytes(body), True
                        if not trailer.endswith(b"\n"):
                            raise BadBody(400, "truncated trailers")
                if len(body) + size > MAX_BODY:
                    raise BadBody(413, "body over %d bytes" % MAX_BODY)
                piece = self.rfile.read(size)
                if len(piece) != size:
                    raise BadBody(400, "truncated chunk")
                body += piece
                if self.rfile.readline(3) not in (b"\r\n", b"\n"):
                    raise BadBody(400, "chunk not followed by CRLF")
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            return b"", False
        try:
            length = int(length_header.strip())
        except ValueError:
            raise BadBody(400, "bad Content-Length %r" % length_header)
        if length < 0:
            raise BadBody(400, "negative Content-Length")
        if length > MAX_BODY:
            raise BadBody(413, "body over %d bytes" % MAX_BODY)
        body = self.rfile.read(length) if length else b""
        if len(body) != length:
            raise BadBody(400, "body shorter than Content-Length")
        return body, False

    # -- methods

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/spans":
            name = state["spans"]
        elif path == "/requests":
            name = state["requests"]
        elif path == "/v1/traces":
            return self.text(405, "POST only", headers=[("Allow", "POST")])
        else:
            return self.text(404, "not found")
        self.respond(200, json.dumps(read_lines(name)).encode(), content_type="application/json")

    def do_POST(self):
        if self.path.split("?", 1)[0] != "/v1/traces":
            self.drain_quietly()
            return self.text(404, "not found")
        try:
            self.export()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:
            error("export handler failed:\n" + traceback.format_exc())
            try:
                self.text(500, "receiver error", close=True)
            except OSError:
                self.close_connection = True

    def drain_quietly(self):
        try:
            self.read_body()
        except BadBody:
            self.close_connection = True

    def do_other(self):
        if self.path.split("?", 1)[0] == "/v1/traces":
            self.drain_quietly()
            return self.text(405, "POST only", headers=[("Allow", "POST")])
        self.drain_quietly()
        self.text(404, "not found")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_other

    def export(self):
        headers = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = headers[key] + ", " + value if key in headers else value
        record = {"time": None, "mode": None, "status": None,
                  "content_encoding": self.headers.get("Content-Encoding"),
                  "content_type": self.headers.get("Content-Type"),
                  "headers": headers, "span_count": None, "body_bytes": 0, "chunked": False, "error": None}

        def refuse(status, reason, close=False):
            record.update(status=status, error=reason)
            append(state["requests"], [record])
            self.text(status, reason, close=close)

        try:
            control = read_control()
            record["mode"] = control.get("mode", "ok")
        except BadControl as e:
            control = None
            record["mode"] = "invalid"
            control_error = str(e)
        try:
            body, record["chunked"] = self.read_body()
        except BadBody as e:
            record["time"] = time.time()
            return refuse(e.status, e.reason, close=True)
        record.update(time=time.time(), body_bytes=len(body))

        if media_type(self.headers.get("Content-Type")) != PROTOBUF:
            return refuse(415, "Content-Type must be %s, not %r" % (PROTOBUF, self.headers.get("Content-Type")))
        encoding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding in ("gzip", "x-gzip"):
            try:
                body = gunzip(body)
            except BadBody as e:
                return refuse(e.status, e.reason)
        elif encoding != "identity":
            return refuse(415, "unsupported Content-Encoding %r" % self.headers.get("Content-Encoding"))
        try:
            request = ExportTraceServiceRequest.FromString(body)
        except (DecodeError, ValueError, RuntimeError) as e:
            return refuse(400, "not an ExportTraceServiceRequest: %s" % (e or type(e).__name__))
        record["span_count"] = span_count(request)

        with lock:
            fail = state["failed"] < state["fail_first"]
            if fail:
                state["failed"] += 1
        if fail:
            record.update(mode="fail-first", status=503)
            append(state["requests"], [record])
            return self.respond(503, content_type=PROTOBUF, headers=[("Retry-After", "1")])
        if control is None:
            error(control_error)
            return refuse(500, control_error)

        mode = control.get("mode", "ok")
        if mode == "close":
            append(state["requests"], [record])
            return self.hang_up()
        if mode == "status":
            status = control["status"]
            retry = control.get("retry_after")
            extra = []
            if retry is not None:
                if isinstance(retry, float) and retry.is_integer():
                    retry = int(retry)
                extra.append(("Retry-After", str(retry)))
            record["status"] = status
            append(state["requests"], [record])
            return self.respond(status, content_type=PROTOBUF, headers=extra)
        if mode == "slow":
            time.sleep(control.get("delay", 0))
        record["status"] = 200
        append(state["spans"], span_records(request))
        append(state["requests"], [record])
        self.respond(200, ExportTraceServiceResponse().SerializeToString(), content_type=PROTOBUF)


class ReceiverServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        kind = sys.exc_info()[0]
        if kind is not None and issubclass(kind, (ConnectionError, socket.timeout)):
            return  # a client that went away
        error("connection from %s failed:\n%s" % (client_address, traceback.format_exc()))


def main():
    parser = argparse.ArgumentParser(description="OTLP/HTTP protobuf trace receiver (test fixture)")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--fail-first", type=int, default=0, metavar="N")
    parser.add_argument("--port", type=int, default=0, help="listen on this port (default: an ephemeral one)")
    args = parser.parse_args()
    directory = args.dir
    os.makedirs(directory, exist_ok=True)
    state.update(control=os.path.join(directory, "control.json"),
                 requests=os.path.join(directory, "requests.jsonl"),
                 spans=os.path.join(directory, "spans.jsonl"),
                 fail_first=max(0, args.fail_first))
    server = ReceiverServer(("127.0.0.1", args.port), ReceiverHandler)
    print("PORT %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
