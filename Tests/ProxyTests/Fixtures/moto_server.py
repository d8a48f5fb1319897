#!/usr/bin/env python3
"""moto in server mode as a real SigV4 verifier for the AWS signing tests: IAM authentication on
(every request's signature checked against the IAM user's or assumed role's secret, as AWS does).

    moto_server.py DIR [CERT KEY] [--credentials-lifetime SECONDS]

Run with the interpreter of `.build-aws` (moto[server], boto3). Before authentication is turned
on, creates an IAM user `app-user` with an access key and an allow-all policy (written to
DIR/real.id and DIR/real.secret) and a role `app-role` that web identities may assume (its ARN
in DIR/role.arn). Listens on 127.0.0.1 (an ephemeral port; TLS with CERT and KEY; connections
on threads, moto called for one request at a time) and prints "PORT <n>".

DIR/log.jsonl gets one line per request: method, host, path, status, whether a header or the
query carried the placeholder access key id (AKIDTOKENSIDECAR0001), the access key id it was
signed with, its x-amz-content-sha256, framing and body size, and moto's error code for a
refused one. Never a secret.

S3 verifies a signature over the path as it was sent (RFC 3986 escapes kept, nothing decoded);
moto 5.2.1 verifies over the path it decoded, so it refuses even boto3's own direct requests for
keys with `+`, `%` or non-ASCII characters. The fixture hands moto's S3 check the path as sent.

GET /v1/credentials is a container credentials endpoint (EKS Pod Identity's form): with
`Authorization` equal to DIR/container.token it answers a second access key of `app-user` as
JSON, else 401. With --credentials-lifetime, that answer's and AssumeRoleWithWebIdentity's
Expiration say SECONDS from now (moto keeps accepting the keys: only the refresh is tested).

STS AssumeRoleWithWebIdentity is unsigned on AWS; moto's authentication would demand a signature
of it, so it is let through unauthenticated (and logged with the web identity token's digest).
"""
import hashlib
import io
import json
import math
import os
import re
import sys
import threading
import time
from urllib.parse import parse_qsl

os.environ.setdefault("MOTO_ALLOW_NONEXISTENT_REGION", "true")
os.environ["AWS_ACCESS_KEY_ID"] = "bootstrap"
os.environ["AWS_SECRET_ACCESS_KEY"] = "bootstrap"

import boto3
from moto import settings
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

DIR = sys.argv[1]
LIFETIME = int(sys.argv[sys.argv.index("--credentials-lifetime") + 1]) if "--credentials-lifetime" in sys.argv else None
PLACEHOLDER = "AKIDTOKENSIDECAR0001"
ROLE_POLICY = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
TRUST = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Federated": "oidc.test"},
                                                             "Action": "sts:AssumeRoleWithWebIdentity"}]})
lock = threading.Lock()
moto_lock = threading.Lock()
app = DomainDispatcherApplication(create_backend_app)
current = threading.local()

from moto.iam import access_control

s3_request = access_control.S3IAMRequest._create_aws_request


def s3_request_as_sent(self):
    self._path = getattr(current, "raw_uri", None) or self._path
    return s3_request(self)


access_control.S3IAMRequest._create_aws_request = s3_request_as_sent


def log(entry):
    entry["time"] = time.time()
    with lock, open(os.path.join(DIR, "log.jsonl"), "a") as f:
        f.write(json.dumps(entry) + "\n")


def expiration():
    import datetime
    return (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=LIFETIME or 3600)).strftime("%Y-%m-%dT%H:%M:%SZ")


def container_credentials(environ, start_response):
    with open(os.path.join(DIR, "container.token")) as f:
        expected = f.read().strip()
    given = environ.get("HTTP_AUTHORIZATION", "")
    ok = given == expected
    log({"method": environ["REQUEST_METHOD"], "path": environ.get("PATH_INFO"), "container": True, "status": 200 if ok else 401,
         "authorization": hashlib.sha256(given.encode()).hexdigest()[:12]})
    if not ok:
        start_response("401 Unauthorized", [("Content-Type", "application/json")])
        return [b'{"code": "AccessDenied"}']
    with open(os.path.join(DIR, "container.id")) as f:
        key_id = f.read().strip()
    with open(os.path.join(DIR, "container.secret")) as f:
        secret = f.read().strip()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps({"AccessKeyId": key_id, "SecretAccessKey": secret, "Token": "", "Expiration": expiration()}).encode()]


def logging_app(environ, start_response):
    if environ.get("PATH_INFO") == "/v1/credentials":
        return container_credentials(environ, start_response)
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length:
        body = environ["wsgi.input"].read(length)
    elif environ.get("wsgi.input_terminated"):
        # A chunked request body (werkzeug de-chunks it): read to its end.
        body = environ["wsgi.input"].read()
        environ["CONTENT_LENGTH"] = str(len(body))
    else:
        body = b""
    environ["wsgi.input"] = io.BytesIO(body)
    headers = {k: v for k, v in environ.items() if k.startswith("HTTP_")}
    current.raw_uri = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    query = environ.get("QUERY_STRING", "")
    form = dict(parse_qsl(body.decode("utf-8", "replace"))) if b"Action=" in body else {}
    action = form.get("Action") or dict(parse_qsl(query)).get("Action")
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    signed_with = (re.search(r"Credential=([A-Z0-9]+)/", authorization) or [None, None])[1]
    carries = PLACEHOLDER in query or any(PLACEHOLDER in v for v in headers.values()) or PLACEHOLDER.encode() in body
    status = {}

    def capture(code, response_headers, exc_info=None):
        # Answered once the body is known (it may be edited: its length with it).
        status["code"] = int(code.split()[0])
        status["line"] = code
        status["headers"] = [(k, v) for k, v in response_headers if k.lower() != "content-length"]
        return lambda data: None

    unsigned_web_identity = action == "AssumeRoleWithWebIdentity" and not authorization
    # moto one request at a time: the web identity call turns authentication off for itself.
    with moto_lock:
        if unsigned_web_identity:
            settings.INITIAL_NO_AUTH_ACTION_COUNT = math.inf
        try:
            chunks = list(app(environ, capture))
        finally:
            if unsigned_web_identity:
                settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    text = b"".join(chunks)
    if unsigned_web_identity and LIFETIME:
        text = re.sub(rb"<Expiration>[^<]*</Expiration>", b"<Expiration>" + expiration().encode() + b"</Expiration>", text)
    error = None
    if status.get("code", 500) >= 400:
        found = re.search(rb"<Code>([^<]+)</Code>", text) or re.search(rb'"__type":\s*"[^"#]*#?([^"]+)"', text)
        error = found.group(1).decode() if found else text[:120].decode("utf-8", "replace")
    entry = {"method": environ["REQUEST_METHOD"], "host": environ.get("HTTP_HOST"), "path": environ.get("PATH_INFO"),
             "query": query, "action": action or headers.get("HTTP_X_AMZ_TARGET"), "status": status.get("code"),
             "placeholder": carries, "signedWith": signed_with, "error": error,
             "securityToken": "HTTP_X_AMZ_SECURITY_TOKEN" in environ, "payload": environ.get("HTTP_X_AMZ_CONTENT_SHA256"),
             "chunked": "chunked" in environ.get("HTTP_TRANSFER_ENCODING", ""), "bodyBytes": len(body)}
    if unsigned_web_identity:
        entry["webIdentity"] = hashlib.sha256(form.get("WebIdentityToken", "").encode()).hexdigest()[:12]
        entry["duration"] = form.get("DurationSeconds")
    log(entry)
    start_response(status["line"], status["headers"] + [("Content-Length", str(len(text)))])
    return [text]


tls = tuple(sys.argv[2:4]) if len(sys.argv) >= 4 else None
server = make_server("127.0.0.1", 0, logging_app, threaded=True, ssl_context=tls)
port = server.server_port
endpoint = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
threading.Thread(target=server.serve_forever, daemon=True).start()

iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1", verify=False)
iam.create_user(UserName="app-user")
iam.put_user_policy(UserName="app-user", PolicyName="all", PolicyDocument=ROLE_POLICY)
key = iam.create_access_key(UserName="app-user")["AccessKey"]
second = iam.create_access_key(UserName="app-user")["AccessKey"]
role = iam.create_role(RoleName="app-role", AssumeRolePolicyDocument=TRUST)["Role"]
iam.put_role_policy(RoleName="app-role", PolicyName="all", PolicyDocument=ROLE_POLICY)
for name, value in (("real.id", key["AccessKeyId"]), ("real.secret", key["SecretAccessKey"]), ("role.arn", role["Arn"]),
                    ("container.id", second["AccessKeyId"]), ("container.secret", second["SecretAccessKey"])):
    with open(os.path.join(DIR, name), "w") as f:
        f.write(value + "\n")
open(os.path.join(DIR, "log.jsonl"), "w").close()
settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
print(f"PORT {port}", flush=True)
threading.Event().wait()
