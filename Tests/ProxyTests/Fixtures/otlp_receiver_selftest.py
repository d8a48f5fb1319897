#!/usr/bin/env python3
"""Self-test for otlp_receiver.py: it accepts OTLP/HTTP protobuf trace exports plain, gzipped and
chunked, records every span exactly as sent, refuses what a collector refuses, and answers the
way DIR/control.json and --fail-first say.

    .build-otel/bin/python3 Tests/ProxyTests/Fixtures/otlp_receiver_selftest.py

Needs opentelemetry-proto (`make otel-venv`; run it with that interpreter, OTelPython.path in
the Swift tests). Starts the receiver (same interpreter, 127.0.0.1 only) with its own temporary
directory, builds ExportTraceServiceRequests with the official generated classes (two spans: a
server span with an error status, an event and attributes of every value type, and a client
child span with a link), sends them with urllib (http.client for a persistent connection), and
compares spans.jsonl and GET /spans with the values it put in, written out here independently of
the receiver's conversion. Prints "PASS name" / "FAIL name: why" per case and a summary
("OK: ..." or "FAILED: ..."); exits 1 on any failure. Every request has a 5 s timeout and the
whole run is bounded by a 60 s alarm.
"""
import gzip
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTraceServiceRequest,
                                                                        ExportTraceServiceResponse)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

HERE = os.path.dirname(os.path.abspath(__file__))
RECEIVER = os.path.join(HERE, "otlp_receiver.py")
PROTOBUF = "application/x-protobuf"

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SERVER_SPAN_ID = "00f067aa0ba902b7"
CLIENT_SPAN_ID = "a1b2c3d4e5f60718"
PARENT_SPAN_ID = "0102030405060708"
LINKED_TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
LINKED_SPAN_ID = "b7ad6b7169203331"
START = 1_700_000_000_123_456_789

results = []


def record(name, ok, detail=""):
    results.append(bool(ok))
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, detail)), flush=True)


# ---------------------------------------------------------------- what is sent, and what must come back

def kv(key, **value):
    return KeyValue(key=key, value=AnyValue(**value))


def export_request(name_suffix=""):
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend([
        kv("service.name", string_value="token-sidecar"),
        kv("service.instance.id", string_value="selftest-1"),
        kv("process.pid", int_value=4242),
    ])
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "token-sidecar"
    scope_spans.scope.version = "0.9.1"

    server = scope_spans.spans.add()
    server.trace_id = bytes.fromhex(TRACE_ID)
    server.span_id = bytes.fromhex(SERVER_SPAN_ID)
    server.parent_span_id = bytes.fromhex(PARENT_SPAN_ID)
    server.trace_state = "vendor=x,other=y"
    server.name = "GET /orders" + name_suffix
    server.kind = Span.SPAN_KIND_SERVER
    server.start_time_unix_nano = START
    server.end_time_unix_nano = START + 2_500_000
    server.flags = 0x301
    server.dropped_attributes_count = 2
    server.attributes.extend([
        kv("http.request.method", string_value="GET"),
        kv("http.response.status_code", int_value=502),
        kv("token_sidecar.fetch_seconds", double_value=0.125),
        kv("token_sidecar.cache_hit", bool_value=False),
        kv("token_sidecar.scopes", array_value=ArrayValue(values=[AnyValue(string_value="read"),
                                                                  AnyValue(string_value="write")])),
        kv("token_sidecar.mixed", array_value=ArrayValue(values=[AnyValue(int_value=-7),
                                                                 AnyValue(double_value=1.5),
                                                                 AnyValue(bool_value=True)])),
        kv("token_sidecar.upstream", kvlist_value=KeyValueList(values=[kv("host", string_value="api.test"),
                                                                       kv("port", int_value=443)])),
        kv("token_sidecar.digest", bytes_value=b"\x00\xff\x10"),
        kv("token_sidecar.large", int_value=2**62),
    ])
    event = server.events.add()
    event.name = "exception"
    event.time_unix_nano = START + 1_000_000
    event.attributes.extend([kv("exception.type", string_value="UpstreamTimeout"),
                             kv("exception.escaped", bool_value=True)])
    server.status.code = Status.STATUS_CODE_ERROR
    server.status.message = "upstream timed out"

    client = scope_spans.spans.add()
    client.trace_id = bytes.fromhex(TRACE_ID)
    client.span_id = bytes.fromhex(CLIENT_SPAN_ID)
    client.parent_span_id = bytes.fromhex(SERVER_SPAN_ID)
    client.name = "token fetch" + name_suffix
    client.kind = Span.SPAN_KIND_CLIENT
    client.start_time_unix_nano = START + 100
    client.end_time_unix_nano = START + 900_100
    client.flags = 0x1
    client.status.code = Status.STATUS_CODE_OK
    link = client.links.add()
    link.trace_id = bytes.fromhex(LINKED_TRACE_ID)
    link.span_id = bytes.fromhex(LINKED_SPAN_ID)
    link.trace_state = "congo=t61rcWkgMzE"
    link.attributes.extend([kv("link.reason", string_value="batch"), kv("link.index", int_value=3)])
    return request


def expected_spans(name_suffix=""):
    resource = {"service.name": "token-sidecar", "service.instance.id": "selftest-1", "process.pid": 4242}
    scope = {"name": "token-sidecar", "version": "0.9.1"}
    return [
        {"trace_id": TRACE_ID, "span_id": SERVER_SPAN_ID, "parent_span_id": PARENT_SPAN_ID,
         "trace_state": "vendor=x,other=y", "name": "GET /orders" + name_suffix, "kind": "SPAN_KIND_SERVER",
         "start_ns": START, "end_ns": START + 2_500_000,
         "attributes": {"http.request.method": "GET", "http.response.status_code": 502,
                        "token_sidecar.fetch_seconds": 0.125, "token_sidecar.cache_hit": False,
                        "token_sidecar.scopes": ["read", "write"], "token_sidecar.mixed": [-7, 1.5, True],
                        "token_sidecar.upstream": {"host": "api.test", "port": 443},
                        "token_sidecar.digest": {"bytes": "00ff10"}, "token_sidecar.large": 2**62},
         "events": [{"name": "exception", "time_ns": START + 1_000_000,
                     "attributes": {"exception.type": "UpstreamTimeout", "exception.escaped": True}}],
         "links": [],
         "status": {"code": "STATUS_CODE_ERROR", "message": "upstream timed out"},
         "flags": 0x301, "dropped_attributes_count": 2, "dropped_events_count": 0, "dropped_links_count": 0,
         "resource": resource, "scope": scope},
        {"trace_id": TRACE_ID, "span_id": CLIENT_SPAN_ID, "parent_span_id": SERVER_SPAN_ID,
         "trace_state": "", "name": "token fetch" + name_suffix, "kind": "SPAN_KIND_CLIENT",
         "start_ns": START + 100, "end_ns": START + 900_100, "attributes": {}, "events": [],
         "links": [{"trace_id": LINKED_TRACE_ID, "span_id": LINKED_SPAN_ID, "trace_state": "congo=t61rcWkgMzE",
                    "attributes": {"link.reason": "batch", "link.index": 3}}],
         "status": {"code": "STATUS_CODE_OK", "message": ""},
         "flags": 1, "dropped_attributes_count": 0, "dropped_events_count": 0, "dropped_links_count": 0,
         "resource": resource, "scope": scope},
    ]


def strictly_equal(a, b):
    """Equal with the same JSON types (True is not 1, 1.0 is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strictly_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strictly_equal(x, y) for x, y in zip(a, b))
    return a == b


# ---------------------------------------------------------------- the receiver and HTTP

class Receiver:
    def __init__(self, *extra):
        self.directory = tempfile.mkdtemp(prefix="otlp-selftest-")
        self.process = subprocess.Popen([sys.executable, RECEIVER, "--dir", self.directory] + list(extra),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.process.kill()
            raise SystemExit("receiver did not start: %r %s" % (line, self.process.stderr.read()))
        self.port = int(line.split()[1])
        self.url = "http://127.0.0.1:%d" % self.port

    def control(self, document):
        temporary = os.path.join(self.directory, "control.json.tmp")
        with open(temporary, "w") as f:
            f.write(document if isinstance(document, str) else json.dumps(document))
        os.replace(temporary, os.path.join(self.directory, "control.json"))

    def log(self, name):
        try:
            with open(os.path.join(self.directory, name)) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def stop(self):
        """(stdout after the PORT line, stderr)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        out, err = self.process.stdout.read(), self.process.stderr.read()
        shutil.rmtree(self.directory, ignore_errors=True)
        return out, err


def post(rx, body, content_type=PROTOBUF, encoding=None, path="/v1/traces", extra=None):
    """(status, headers {lowercase: value}, body bytes, seconds) of a urllib POST; status None and
    the error text as body when no response came. A non-bytes body (an iterable of chunks) goes
    chunked."""
    headers = dict(extra or {})
    if content_type is not None:
        headers["Content-Type"] = content_type
    if encoding:
        headers["Content-Encoding"] = encoding
    request = urllib.request.Request(rx.url + path, data=body, headers=headers, method="POST")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            answer = response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    except urllib.error.HTTPError as e:
        answer = e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()
    except (OSError, http.client.HTTPException) as e:
        answer = None, {}, ("%s: %s" % (type(e).__name__, e)).encode()
    return answer + (time.monotonic() - started,)


def get_json(rx, path):
    with urllib.request.urlopen(rx.url + path, timeout=5) as response:
        return response.status, response.headers.get("Content-Type"), json.loads(response.read())


def ok_answer(answer):
    status, headers, body, _ = answer
    if status != 200 or headers.get("content-type") != PROTOBUF:
        return False
    try:
        ExportTraceServiceResponse.FromString(body)
    except Exception:
        return False
    return headers.get("content-length") == str(len(body))


# ---------------------------------------------------------------- cases

def accepted_cases(rx):
    plain = export_request().SerializeToString()
    answer = post(rx, plain, extra={"User-Agent": "selftest/1", "X-Custom": "a"})
    record("plain export: 200, protobuf ExportTraceServiceResponse", ok_answer(answer), answer[:3])
    spans = rx.log("spans.jsonl")
    record("plain export: spans.jsonl decodes exactly", strictly_equal(spans, expected_spans()),
           json.dumps(spans, indent=1)[:3000])

    zipped = gzip.compress(export_request(" gz").SerializeToString())
    answer = post(rx, zipped, encoding="gzip")
    record("gzip export: 200", ok_answer(answer), answer[:3])

    chunks = [plain[:10], plain[10:200], plain[200:]]
    answer = post(rx, iter(chunks), content_type="Application/X-Protobuf; charset=binary")
    record("chunked export (media type any case, with a parameter): 200", ok_answer(answer), answer[:3])

    want = expected_spans() + expected_spans(" gz") + expected_spans()
    spans = rx.log("spans.jsonl")
    record("spans.jsonl: 6 spans in order, exact", strictly_equal(spans, want), [s["name"] for s in spans])
    status, content_type, body = get_json(rx, "/spans")
    record("GET /spans: the same array", status == 200 and content_type == "application/json"
           and strictly_equal(body, want), (status, content_type, len(body)))

    requests = rx.log("requests.jsonl")
    good = len(requests) == 3 and all(r["status"] == 200 and r["mode"] == "ok" and r["span_count"] == 2
                                      and r["error"] is None for r in requests)
    first, second, third = (requests + [{}, {}, {}])[:3]
    good = good and first.get("body_bytes") == len(plain) and first.get("content_encoding") is None \
        and first.get("chunked") is False and first["headers"].get("user-agent") == "selftest/1" \
        and first["headers"].get("x-custom") == "a" and first["headers"].get("content-type") == PROTOBUF \
        and first.get("content_type") == PROTOBUF and isinstance(first.get("time"), float)
    good = good and second.get("body_bytes") == len(zipped) and second.get("content_encoding") == "gzip" \
        and second["headers"].get("content-encoding") == "gzip"
    good = good and third.get("chunked") is True and third.get("body_bytes") == len(plain) \
        and third["headers"].get("transfer-encoding") == "chunked"
    record("requests.jsonl: 3 records (status, sizes, encoding, headers lower-cased)", good,
           json.dumps(requests)[:2000])
    status, _, body = get_json(rx, "/requests")
    record("GET /requests: the same array", status == 200 and body == rx.log("requests.jsonl"), len(body))

    empty = post(rx, b"")
    record("empty request (no spans): 200", ok_answer(empty), empty[:3])

    # Two exports on one persistent connection, as an exporter's connection pool sends them.
    connection = http.client.HTTPConnection("127.0.0.1", rx.port, timeout=5)
    try:
        statuses = []
        for _ in range(2):
            connection.request("POST", "/v1/traces", body=plain, headers={"Content-Type": PROTOBUF})
            response = connection.getresponse()
            response.read()
            statuses.append((response.status, response.getheader("Connection")))
        record("two exports on one keep-alive connection", statuses == [(200, None), (200, None)], statuses)
    finally:
        connection.close()


def refused_cases(rx):
    before = len(rx.log("spans.jsonl"))
    plain = export_request().SerializeToString()
    for content_type in ("application/json", "application/x-protobuffer"):
        answer = post(rx, plain, content_type=content_type)
        record("Content-Type %s: 415" % content_type, answer[0] == 415, answer[:3])
    # urllib sends application/x-www-form-urlencoded when none is given: http.client sends none.
    connection = http.client.HTTPConnection("127.0.0.1", rx.port, timeout=5)
    try:
        connection.request("POST", "/v1/traces", body=plain)
        response = connection.getresponse()
        status = response.status
        response.read()
    finally:
        connection.close()
    record("no Content-Type: 415", status == 415, status)
    answer = post(rx, gzip.compress(plain), encoding="br")
    record("Content-Encoding br: 415", answer[0] == 415, answer[:3])

    answer = post(rx, b"\x0a\xff\xff\xff\xff\x0fgarbage")
    record("garbage protobuf: 400 with a reason", answer[0] == 400
           and b"ExportTraceServiceRequest" in answer[2], answer[:3])
    answer = post(rx, b"this is not gzip", encoding="gzip")
    record("bad gzip: 400", answer[0] == 400 and b"gzip" in answer[2], answer[:3])
    answer = post(rx, gzip.compress(plain)[:-6], encoding="gzip")
    record("truncated gzip: 400", answer[0] == 400, answer[:3])

    answer = post(rx, plain, path="/v1/metrics")
    record("POST /v1/metrics: 404", answer[0] == 404, answer[:3])
    try:
        urllib.request.urlopen(rx.url + "/v1/traces", timeout=5)
        status = 200
    except urllib.error.HTTPError as e:
        status = (e.code, e.headers.get("Allow"))
    record("GET /v1/traces: 405, Allow: POST", status == (405, "POST"), status)

    requests = rx.log("requests.jsonl")[-7:]
    record("refusals logged with status, reason, span_count null",
           [r["status"] for r in requests] == [415, 415, 415, 415, 400, 400, 400]
           and all(r["span_count"] is None and r["error"] for r in requests)
           and requests[2]["content_type"] is None and "content-type" not in requests[2]["headers"]
           and requests[3]["content_encoding"] == "br",
           json.dumps(requests)[:2000])
    record("refusals stored no span", len(rx.log("spans.jsonl")) == before)


def mode_cases(rx):
    plain = export_request().SerializeToString()
    before = len(rx.log("spans.jsonl"))

    rx.control({"mode": "status", "status": 503, "retry_after": 7})
    answer = post(rx, plain)
    record("mode status 503: 503 with Retry-After: 7", answer[0] == 503
           and answer[1].get("retry-after") == "7", answer[:3])
    rx.control({"mode": "status", "status": 429})
    answer = post(rx, plain)
    record("mode status 429 without retry_after: no Retry-After", answer[0] == 429
           and "retry-after" not in answer[1], answer[:3])
    rx.control({"mode": "status", "status": 400, "retry_after": 2.0})
    answer = post(rx, plain)
    record("mode status 400, retry_after 2.0: Retry-After: 2", answer[0] == 400
           and answer[1].get("retry-after") == "2", answer[:3])
    last = rx.log("requests.jsonl")[-3:]
    record("status mode: logged (mode, status, span_count), no span stored",
           [(r["mode"], r["status"], r["span_count"]) for r in last]
           == [("status", 503, 2), ("status", 429, 2), ("status", 400, 2)]
           and len(rx.log("spans.jsonl")) == before, last)

    rx.control({"mode": "slow", "delay": 1.2})
    answer = post(rx, plain)
    record("mode slow 1.2 s: 200 after >= 1.2 s", ok_answer(answer) and answer[3] >= 1.2, (answer[0], answer[3]))
    record("slow mode: spans stored", len(rx.log("spans.jsonl")) == before + 2)

    rx.control({"mode": "close"})
    answer = post(rx, plain)
    record("mode close: no response", answer[0] is None, answer[:3])
    last = rx.log("requests.jsonl")[-1]
    record("close mode: logged with status null, no span stored", last["mode"] == "close"
           and last["status"] is None and len(rx.log("spans.jsonl")) == before + 2, last)

    rx.control("{not json")
    answer = post(rx, plain)
    record("unreadable control.json: 500", answer[0] == 500 and b"control.json" in answer[2], answer[:3])

    os.remove(os.path.join(rx.directory, "control.json"))
    answer = post(rx, plain)
    record("control.json removed: back to ok", ok_answer(answer), answer[:3])
    rx.control({"mode": "ok"})
    answer = post(rx, gzip.compress(plain), encoding="gzip")
    record("mode ok: 200", ok_answer(answer), answer[:3])


def fail_first_cases():
    rx = Receiver("--fail-first", "2")
    try:
        rx.control({"mode": "ok"})
        plain = export_request().SerializeToString()
        answer = post(rx, b"\xff\xff", extra={})
        record("fail-first: garbage still 400 (not counted)", answer[0] == 400, answer[:3])
        answers = [post(rx, plain) for _ in range(3)]
        record("fail-first 2: 503 Retry-After: 1, twice, then 200",
               [(a[0], a[1].get("retry-after")) for a in answers[:2]] == [(503, "1"), (503, "1")]
               and ok_answer(answers[2]), [a[:2] for a in answers])
        modes = [(r["mode"], r["status"]) for r in rx.log("requests.jsonl")]
        record("fail-first: logged, spans of the 200 only",
               modes == [("ok", 400), ("fail-first", 503), ("fail-first", 503), ("ok", 200)]
               and strictly_equal(rx.log("spans.jsonl"), expected_spans()), modes)
    finally:
        out, err = rx.stop()
        record("fail-first receiver: nothing on stdout or stderr", not out and not err.strip(), (out, err[-2000:]))


def main():
    signal.alarm(60)
    started = time.time()
    rx = Receiver()
    try:
        accepted_cases(rx)
        refused_cases(rx)
        mode_cases(rx)
    finally:
        out, err = rx.stop()
        record("nothing on stdout after PORT", not out, out[-2000:])
        errors = [line for line in err.splitlines() if line.strip()]
        record("stderr: only the bad control file", len(errors) == 1 and "control.json is not JSON" in errors[0],
               err[-2000:])
    fail_first_cases()
    failed = results.count(False)
    print("%s: %d passed, %d failed in %.1f s (Python %s)" % (
        "OK" if not failed else "FAILED", len(results) - failed, failed, time.time() - started,
        sys.version.split()[0]))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
