#!/usr/bin/env python3
"""Self-test for sts_server.py: the STS accepts good token requests and refuses bad ones the way a
real one does, the backend accepts only what the STS issued, and no log holds a raw token.

    python3 Tests/ProxyTests/Fixtures/sts_server_selftest.py

Starts the fixture (same interpreter, 127.0.0.1 only) with its own temporary directory and sends
requests directly with http.client, rewriting the policy file between cases. Subject and actor
tokens are minted through /mint, and also signed here independently (HS256 with the policy
secret), so the verifier is checked against tokens the fixture did not make. Prints
"PASS name" / "FAIL name: why" per case and a summary; exits 1 on any failure. Every request
has a 5 s timeout and the whole run is bounded by a 30 s alarm. Run by STSServerSelfTests.
"""
import base64
import hashlib
import hmac
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from urllib.parse import quote_plus, urlencode

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "sts_server.py")
EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS = "urn:ietf:params:oauth:token-type:access_token"
JWT = "urn:ietf:params:oauth:token-type:jwt"
ISSUER = "https://issuer.selftest"
SECRET = "selftest-issuer-secret"
CLIENT_ID, CLIENT_SECRET = "app:1", "s3cret +%&:x"  # characters RFC 6749 §2.3.1 wants encoded
AUDIENCE = "https://api.selftest"

results = []
raw_secrets = set()  # every raw token and secret used: none may appear in a log


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256(claims, secret=SECRET, header=None):
    header = header or {"alg": "HS256", "typ": "JWT"}
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    signature = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64url(signature)


def claims(sub="alice", ttl=300, **extra):
    now = int(time.time())
    doc = {"iss": ISSUER, "sub": sub, "iat": now, "exp": now + ttl, "jti": os.urandom(8).hex()}
    doc.update(extra)
    return {k: v for k, v in doc.items() if v is not None}


class Fixture:
    def __init__(self, directory):
        self.directory = directory
        self.set_policy({})
        self.process = subprocess.Popen([sys.executable, SERVER, "--dir", directory], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.process.kill()
            raise SystemExit("server did not start: %r %s" % (line, self.process.stderr.read()))
        self.port = int(line.split()[1])
        with open(os.path.join(directory, "backend_port")) as f:
            self.backend_port = int(f.read())

    def set_policy(self, policy):
        temporary = os.path.join(self.directory, "policy.json.tmp")
        with open(temporary, "w") as f:
            json.dump(policy, f)
        os.replace(temporary, os.path.join(self.directory, "policy.json"))

    def log(self, name):
        try:
            with open(os.path.join(self.directory, name)) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def text(self, name):
        try:
            with open(os.path.join(self.directory, name)) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.stderr.read()


def request(port, method, path, body=None, headers=None, chunked=False):
    """(status, headers {lowercase: value}, body bytes), or (None, {}, error text)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        if chunked:
            connection.putrequest(method, path)
            for name, value in (headers or {}).items():
                connection.putheader(name, value)
            connection.putheader("Transfer-Encoding", "chunked")
            connection.endheaders()
            for piece in body:
                connection.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            connection.send(b"0\r\n\r\n")
        else:
            connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    except (OSError, http.client.HTTPException) as error:
        return None, {}, ("%s: %s" % (type(error).__name__, error)).encode()
    finally:
        connection.close()


def token(fx, form, basic=(CLIENT_ID, CLIENT_SECRET), headers=None):
    """(status, document, response headers) of POST /token."""
    all_headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if basic:
        pair = "%s:%s" % (quote_plus(basic[0]), quote_plus(basic[1]))
        all_headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    all_headers.update(headers or {})
    status, response_headers, body = request(fx.port, "POST", "/token", urlencode(form, doseq=True), all_headers)
    try:
        document = json.loads(body)
    except ValueError:
        document = body.decode("utf-8", "replace")
    if isinstance(document, dict) and "access_token" in document:
        raw_secrets.add(document["access_token"])
    return status, document, response_headers


def mint(fx, sub="alice", ttl=300, **form):
    form.update(sub=sub, ttl=str(ttl))
    status, _, body = request(fx.port, "POST", "/mint", urlencode(form),
                              {"Content-Type": "application/x-www-form-urlencoded"})
    jws = body.decode()
    if status != 200 or jws.count(".") != 2:
        raise SystemExit("mint failed: %s %s" % (status, jws))
    raw_secrets.add(jws)
    return jws


def backend(fx, access_token, method="GET", path="/resource", body=None, headers=None, chunked=False):
    all_headers = {"Authorization": "Bearer %s" % access_token} if access_token else {}
    all_headers.update(headers or {})
    status, response_headers, data = request(fx.backend_port, method, path, body, all_headers, chunked)
    try:
        document = json.loads(data)
    except ValueError:
        document = data
    return status, document, response_headers


def exchange_form(subject, **extra):
    form = {"grant_type": EXCHANGE, "subject_token": subject, "subject_token_type": JWT,
            "audience": AUDIENCE, "scope": "read write"}
    form.update(extra)
    return {k: v for k, v in form.items() if v is not None}


def record(name, ok, detail=""):
    results.append(bool(ok))
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, detail)), flush=True)


def expect_ok(name, answer, expires_in=None):
    status, doc, _ = answer
    good = (status == 200 and isinstance(doc, dict) and doc.get("access_token")
            and doc.get("issued_token_type") == ACCESS and doc.get("token_type") == "Bearer"
            and isinstance(doc.get("expires_in"), int)
            and (expires_in is None or expires_in(doc["expires_in"])))
    record(name, good, "%s %s" % (status, doc))
    return doc.get("access_token") if good else None


def expect_error(name, answer, error, status=400, reason=None):
    got_status, doc, _ = answer
    good = (got_status == status and isinstance(doc, dict) and doc.get("error") == error
            and (reason is None or reason in doc.get("error_description", "")))
    record(name, good, "%s %s (want %d %s %r)" % (got_status, doc, status, error, reason))


def last_token_log(fx):
    entries = fx.log("token_requests.jsonl")
    return entries[-1] if entries else {}


# ---------------------------------------------------------------- the cases

def exchange_cases(fx):
    base = {"client_auth": "client_secret_basic", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
            "issuer": ISSUER, "issuer_secret": SECRET, "allowed_audiences": [AUDIENCE, "https://other.selftest"]}
    raw_secrets.update([CLIENT_SECRET, SECRET])
    fx.set_policy(base)

    subject = mint(fx, "alice", 300)
    issued = expect_ok("exchange: valid minted subject", token(fx, exchange_form(subject, resource="https://r.selftest")),
                       lambda n: 290 <= n <= 300)
    entry = last_token_log(fx)
    record("exchange: log line", entry.get("verdict") == "ok" and entry.get("sub") == "alice"
           and entry.get("aud") == AUDIENCE and entry.get("scope") == "read write" and entry.get("act") is None
           and entry.get("resource") == "https://r.selftest" and entry.get("client_id") == CLIENT_ID
           and entry.get("client_auth") == "basic"
           and entry.get("token_sha256") == hashlib.sha256(issued.encode()).hexdigest()[:16]
           and entry["form"].get("subject_token") == hashlib.sha256(subject.encode()).hexdigest()[:16]
           and entry.get("subject_sha256") == entry["form"].get("subject_token"), entry)
    status, doc, _ = backend(fx, issued, "GET", "/items?x=1", headers={"Token-Sidecar-Debug": "leak", "X-Other": "1"})
    record("backend: accepts the exchanged token", status == 200 and doc.get("sub") == "alice"
           and doc.get("aud") == AUDIENCE and doc.get("scope") == "read write" and doc.get("act") is None
           and doc.get("path") == "/items?x=1" and doc.get("method") == "GET" and doc.get("body_length") == 0,
           "%s %s" % (status, doc))
    seen = fx.log("backend_requests.jsonl")[-1]
    record("backend: log line", seen.get("known") is True and seen.get("sub") == "alice"
           and seen.get("authorization_scheme") == "Bearer" and "Token-Sidecar-Debug" in seen.get("header_names", [])
           and "X-Other" in seen["header_names"] and seen.get("sidecar_headers") == [["Token-Sidecar-Debug", "leak"]]
           and seen.get("token_sha256") == hashlib.sha256(issued.encode()).hexdigest()[:16], seen)
    status, doc, _ = backend(fx, issued, "PUT", "/upload", body=b"x" * 1000)
    record("backend: Content-Length body counted", status == 200 and doc.get("body_length") == 1000, doc)
    status, doc, _ = backend(fx, issued, "POST", "/upload", body=[b"abc", b"x" * 500], chunked=True)
    record("backend: chunked body counted", status == 200 and doc.get("body_length") == 503
           and fx.log("backend_requests.jsonl")[-1].get("chunked") is True, doc)
    status, doc, _ = backend(fx, issued, "PROPFIND", "/odd")
    record("backend: any method", status == 200 and doc.get("method") == "PROPFIND", doc)
    status, doc, headers = backend(fx, "sts-not-issued")
    record("backend: unknown token 401 invalid_token", status == 401
           and headers.get("www-authenticate") == 'Bearer error="invalid_token"'
           and fx.log("backend_requests.jsonl")[-1].get("known") is False, "%s %s" % (status, headers))
    status, doc, headers = backend(fx, None)
    record("backend: no token 401", status == 401 and headers.get("www-authenticate") == "Bearer"
           and fx.log("backend_requests.jsonl")[-1].get("authorization_scheme") is None, "%s %s" % (status, headers))
    status, doc, headers = backend(fx, subject)
    record("backend: the subject token itself is not an issued token", status == 401, status)

    independent = hs256(claims("bob", 600))
    raw_secrets.add(independent)
    expect_ok("exchange: subject signed independently (not minted)", token(fx, exchange_form(independent)))
    expect_ok("exchange: access_token subject type", token(fx, exchange_form(mint(fx), subject_token_type=ACCESS)))
    expect_ok("exchange: repeated audience", token(fx, exchange_form(mint(fx), audience=[AUDIENCE,
                                                                                         "https://other.selftest"])))
    record("exchange: repeated audience kept as a list",
           last_token_log(fx).get("aud") == [AUDIENCE, "https://other.selftest"], last_token_log(fx))

    expect_error("exchange: expired subject (minted)", token(fx, exchange_form(mint(fx, "alice", -10))),
                 "invalid_grant", reason="expired")
    expect_error("exchange: expired subject (signed here)", token(fx, exchange_form(hs256(claims(ttl=-1)))),
                 "invalid_grant", reason="expired")
    expect_error("exchange: bad signature (forged mint)", token(fx, exchange_form(mint(fx, forge="1"))),
                 "invalid_grant", reason="bad signature")
    expect_error("exchange: bad signature (other secret)",
                 token(fx, exchange_form(hs256(claims(), secret="not-the-secret"))), "invalid_grant",
                 reason="bad signature")
    good = mint(fx, "alice", 300)
    head, payload, signature = good.split(".")
    tampered_claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    tampered_claims["sub"] = "mallory"
    tampered = head + "." + b64url(json.dumps(tampered_claims).encode()) + "." + signature
    raw_secrets.add(tampered)
    expect_error("exchange: tampered payload", token(fx, exchange_form(tampered)), "invalid_grant",
                 reason="bad signature")
    unsigned = hs256(claims(), header={"alg": "none", "typ": "JWT"}).rsplit(".", 1)[0] + "."
    expect_error("exchange: alg none", token(fx, exchange_form(unsigned)), "invalid_grant")
    expect_error("exchange: wrong iss", token(fx, exchange_form(mint(fx, iss="https://evil.selftest"))),
                 "invalid_grant", reason="iss")
    expect_error("exchange: nbf in the future", token(fx, exchange_form(mint(fx, nbf="60"))), "invalid_grant",
                 reason="nbf")
    expect_ok("exchange: nbf in the past", token(fx, exchange_form(mint(fx, nbf="-5"))))
    expect_error("exchange: exp not an integer", token(fx, exchange_form(hs256(claims(exp=time.time() + 60.5)))),
                 "invalid_grant", reason="exp")
    expect_error("exchange: not a JWS", token(fx, exchange_form("opaque-token")), "invalid_grant")
    expect_error("exchange: wrong audience", token(fx, exchange_form(mint(fx), audience="https://evil.selftest")),
                 "invalid_target")
    expect_error("exchange: one audience of two not allowed", token(fx, exchange_form(
        mint(fx), audience=[AUDIENCE, "https://evil.selftest"])), "invalid_target")
    expect_error("exchange: subject_token missing", token(fx, exchange_form(None)), "invalid_request")
    expect_error("exchange: subject_token_type missing", token(fx, exchange_form(mint(fx), subject_token_type=None)),
                 "invalid_request")
    expect_error("exchange: subject_token_type not accepted", token(fx, exchange_form(
        mint(fx), subject_token_type="urn:ietf:params:oauth:token-type:saml2")), "invalid_request")
    expect_error("exchange: repeated scope", token(fx, dict(exchange_form(mint(fx)), scope=["a", "b"])),
                 "invalid_request", reason="repeated")
    expect_error("unsupported grant_type", token(fx, {"grant_type": "password"}), "unsupported_grant_type")

    status, doc, headers = token(fx, exchange_form(mint(fx)), basic=(CLIENT_ID, "wrong"))
    record("client_secret_basic: wrong secret 401 invalid_client", status == 401 and doc.get("error") == "invalid_client"
           and headers.get("www-authenticate", "").startswith("Basic"), "%s %s %s" % (status, doc, headers))
    expect_error("client_secret_basic: wrong client_id", token(fx, exchange_form(mint(fx)), basic=("app:2", CLIENT_SECRET)),
                 "invalid_client", 401)
    unencoded = "%s:%s" % (CLIENT_ID, CLIENT_SECRET)  # RFC 6749 §2.3.1 wants both form-urlencoded first
    expect_error("client_secret_basic: secret not form-urlencoded", token(fx, exchange_form(mint(fx)), basic=None, headers={
        "Authorization": "Basic " + base64.b64encode(unencoded.encode()).decode()}), "invalid_client", 401)
    expect_error("client_secret_basic: no Authorization", token(fx, exchange_form(
        mint(fx), client_id=CLIENT_ID, client_secret=CLIENT_SECRET), basic=None), "invalid_client", 401)
    expect_error("client_secret_basic: secret in the form as well", token(fx, exchange_form(
        mint(fx), client_secret=CLIENT_SECRET)), "invalid_client", 401)

    fx.set_policy(dict(base, client_auth="client_secret_post"))
    expect_ok("client_secret_post: valid", token(fx, exchange_form(mint(fx), client_id=CLIENT_ID,
                                                                   client_secret=CLIENT_SECRET), basic=None))
    record("client_secret_post: client_secret logged as a fingerprint",
           last_token_log(fx)["form"].get("client_secret") == hashlib.sha256(CLIENT_SECRET.encode()).hexdigest()[:16],
           last_token_log(fx)["form"])
    expect_error("client_secret_post: wrong secret", token(fx, exchange_form(
        mint(fx), client_id=CLIENT_ID, client_secret="wrong"), basic=None), "invalid_client", 401)
    expect_error("client_secret_post: Basic instead", token(fx, exchange_form(mint(fx))), "invalid_client", 401)

    fx.set_policy(dict(base, client_auth="none"))
    expect_ok("none: public client without client_id", token(fx, exchange_form(mint(fx)), basic=None))
    expect_ok("none: public client with its client_id", token(fx, exchange_form(mint(fx), client_id=CLIENT_ID),
                                                              basic=None))
    expect_error("none: another client_id", token(fx, exchange_form(mint(fx), client_id="app:2"), basic=None),
                 "invalid_client", 401)
    expect_error("none: a secret anyway", token(fx, exchange_form(mint(fx)), basic=(CLIENT_ID, CLIENT_SECRET)),
                 "invalid_client", 401)

    fx.set_policy(dict(base, expires_in=120))
    expect_ok("expires_in from the policy, below the subject's life", token(fx, exchange_form(mint(fx, ttl=600))),
              lambda n: n == 120)
    expect_ok("expires_in capped to the subject's life", token(fx, exchange_form(mint(fx, ttl=30))),
              lambda n: 28 <= n <= 30)
    fx.set_policy(dict(base, expires_in=120, cap_to_subject=False))
    expect_ok("expires_in not capped when cap_to_subject is false", token(fx, exchange_form(mint(fx, ttl=30))),
              lambda n: n == 120)

    fx.set_policy(dict(base, refuse_subjects=["eve"]))
    expect_error("refuse_subjects", token(fx, exchange_form(mint(fx, "eve"))), "invalid_grant", reason="refused")
    expect_ok("refuse_subjects: others pass", token(fx, exchange_form(mint(fx, "alice"))))

    fx.set_policy(dict(base, subject_audience="https://sts.selftest"))
    expect_ok("subject_audience: matching aud", token(fx, exchange_form(mint(fx, aud="https://sts.selftest"))))
    expect_error("subject_audience: other aud", token(fx, exchange_form(mint(fx, aud="https://else"))),
                 "invalid_grant", reason="aud")

    fx.set_policy(dict(base, allowed_resources=["https://r.selftest"]))
    expect_error("allowed_resources: other resource", token(fx, exchange_form(mint(fx), resource="https://x")),
                 "invalid_target")


def actor_cases(fx):
    base = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "issuer": ISSUER, "issuer_secret": SECRET}
    fx.set_policy(dict(base, require_actor=True))
    subject, actor = mint(fx, "alice"), mint(fx, "svc-a", kind="actor")
    issued = expect_ok("actor: valid", token(fx, exchange_form(subject, actor_token=actor, actor_token_type=JWT)))
    record("actor: act logged", last_token_log(fx).get("act") == "svc-a"
           and last_token_log(fx)["form"].get("actor_token") == hashlib.sha256(actor.encode()).hexdigest()[:16],
           last_token_log(fx))
    status, doc, _ = backend(fx, issued)
    record("actor: backend answers act", status == 200 and doc.get("act") == "svc-a" and doc.get("sub") == "alice", doc)
    expect_error("actor: required but missing", token(fx, exchange_form(mint(fx))), "invalid_request", reason="actor")
    expect_error("actor: expired actor", token(fx, exchange_form(mint(fx), actor_token=mint(fx, "svc-a", -5, kind="actor"),
                                                                 actor_token_type=JWT)), "invalid_grant", reason="actor")
    expect_error("actor: forged actor", token(fx, exchange_form(mint(fx), actor_token=mint(fx, "svc-a", kind="actor",
                                                                                        forge="1"),
                                                                actor_token_type=JWT)), "invalid_grant")
    expect_error("actor: token without its type", token(fx, exchange_form(mint(fx), actor_token=mint(fx, kind="actor"))),
                 "invalid_request")
    fx.set_policy(dict(base, actor_issuer="https://actors.selftest", actor_issuer_secret="actor-secret"))
    raw_secrets.add("actor-secret")
    actor = mint(fx, "svc-b", kind="actor")
    expect_ok("actor_issuer_secret: minted actor", token(fx, exchange_form(mint(fx), actor_token=actor,
                                                                           actor_token_type=JWT)))
    expect_error("actor_issuer_secret: an actor signed with the issuer secret", token(fx, exchange_form(
        mint(fx), actor_token=mint(fx, "svc-b", kind="subject", iss="https://actors.selftest"), actor_token_type=JWT)),
        "invalid_grant", reason="actor_token")
    expect_ok("actor optional when not required", token(fx, exchange_form(mint(fx))))


def rs256_cases(fx):
    fx.set_policy({"issuer": ISSUER, "signing_alg": "RS256"})
    subject = mint(fx, "carol")
    with open(os.path.join(fx.directory, "issuer_public.pem"), "rb") as f:
        public = serialization.load_pem_public_key(f.read())
    head, payload, signature = subject.split(".")
    try:
        public.verify(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)),
                      (head + "." + payload).encode(), padding.PKCS1v15(), hashes.SHA256())
        verified = json.loads(base64.urlsafe_b64decode(head + "==")).get("alg") == "RS256"
    except Exception as error:  # noqa: BLE001 - reported as a failure
        verified = error
    record("RS256: minted token verifies with issuer_public.pem", verified is True, verified)
    expect_ok("RS256: valid exchange", token(fx, exchange_form(subject), basic=None))
    expect_error("RS256: forged", token(fx, exchange_form(mint(fx, forge="1")), basic=None), "invalid_grant",
                 reason="bad signature")
    expect_error("RS256: an HS256 token refused (no alg confusion)", token(fx, exchange_form(
        hs256(claims(), secret="sts-fixture-issuer-secret")), basic=None), "invalid_grant", reason="alg")


def client_credentials_cases(fx):
    fx.set_policy({"client_auth": "client_secret_post", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET})
    scope = "api://x/.default  read:items+write%20 é"
    issued = expect_ok("client_credentials: valid", token(fx, {
        "grant_type": "client_credentials", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "scope": scope,
        "audience": "https://cc.selftest", "resource": "https://res.selftest"}, basic=None), lambda n: n == 3600)
    entry = last_token_log(fx)
    record("client_credentials: exact scope, audience and resource recorded", entry.get("scope") == scope
           and entry["form"].get("scope") == scope and entry.get("aud") == "https://cc.selftest"
           and entry.get("resource") == "https://res.selftest" and entry.get("sub") == CLIENT_ID, entry)
    status, doc, _ = backend(fx, issued)
    record("client_credentials: backend answers the exact scope", status == 200 and doc.get("scope") == scope
           and doc.get("sub") == CLIENT_ID, doc)
    expect_ok("client_credentials: no scope", token(fx, {"grant_type": "client_credentials", "client_id": CLIENT_ID,
                                                         "client_secret": CLIENT_SECRET}, basic=None))
    record("client_credentials: absent scope recorded as null", last_token_log(fx).get("scope") is None
           and "scope" not in last_token_log(fx)["form"], last_token_log(fx))
    expect_error("client_credentials: wrong secret", token(fx, {
        "grant_type": "client_credentials", "client_id": CLIENT_ID, "client_secret": "nope"}, basic=None),
        "invalid_client", 401)


def behaviour_cases(fx):
    base = {"issuer": ISSUER, "issuer_secret": SECRET}
    fx.set_policy(dict(base, delay_ms=400))
    started = time.time()
    expect_ok("delay_ms: still answers", token(fx, exchange_form(mint(fx)), basic=None))
    record("delay_ms: waited", time.time() - started >= 0.4, time.time() - started)
    fx.set_policy(dict(base, fail_status=503))
    before = len(fx.log("token_requests.jsonl"))
    expect_error("fail_status 503", token(fx, exchange_form(mint(fx)), basic=None), "temporarily_unavailable", 503)
    record("fail_status: logged", len(fx.log("token_requests.jsonl")) == before + 1
           and last_token_log(fx).get("status") == 503, last_token_log(fx))
    fx.set_policy(dict(base, expires_in=1))
    short = expect_ok("short-lived token", token(fx, exchange_form(mint(fx)), basic=None), lambda n: n == 1)
    status, _, _ = backend(fx, short)
    record("backend: short-lived token accepted at first", status == 200, status)
    time.sleep(1.2)
    status, _, headers = backend(fx, short)
    entry = fx.log("backend_requests.jsonl")[-1]
    record("backend: expired token 401 invalid_token", status == 401
           and headers.get("www-authenticate") == 'Bearer error="invalid_token"'
           and entry.get("known") is False and entry.get("expired") is True, "%s %s" % (status, entry))
    fx.set_policy(base)
    good = expect_ok("token for backend_reject_all", token(fx, exchange_form(mint(fx)), basic=None))
    fx.set_policy(dict(base, backend_reject_all=True))
    status, _, headers = backend(fx, good)
    record("backend_reject_all: 401 even for a known token", status == 401
           and headers.get("www-authenticate") == 'Bearer error="invalid_token"', status)
    fx.set_policy(base)
    status, _, _ = backend(fx, good)
    record("backend_reject_all off again: 200", status == 200, status)
    status, _, body = request(fx.port, "GET", "/token")
    record("GET /token: 405", status == 405, status)
    status, _, body = request(fx.port, "POST", "/mint", "sub=x&ttl=1&kind=bogus",
                              {"Content-Type": "application/x-www-form-urlencoded"})
    record("mint: bad kind 400", status == 400, status)
    expect_error("token: JSON body refused", token(fx, {"grant_type": "client_credentials"}, basic=None,
                                                   headers={"Content-Type": "application/json"}), "invalid_request")


def log_cases(fx):
    texts = fx.text("token_requests.jsonl") + fx.text("backend_requests.jsonl")
    leaked = [s for s in raw_secrets if s and s in texts]
    record("logs hold no raw token or secret (%d checked)" % len(raw_secrets), not leaked and len(raw_secrets) > 20,
           [s[:12] + "..." for s in leaked])
    entries = fx.log("token_requests.jsonl")
    consistent = all((e["verdict"] == "ok") == (e["status"] == 200) == (e["token_sha256"] is not None) for e in entries)
    record("token log: ok iff 200 iff a token fingerprint", entries and consistent, len(entries))
    with open(os.path.join(fx.directory, "backend_port")) as f:
        record("backend_port file", int(f.read()) == fx.backend_port and fx.backend_port != fx.port)


def main():
    signal.alarm(30)
    started = time.time()
    directory = tempfile.mkdtemp(prefix="sts-selftest-")
    fx = None
    try:
        fx = Fixture(directory)
        exchange_cases(fx)
        actor_cases(fx)
        rs256_cases(fx)
        client_credentials_cases(fx)
        behaviour_cases(fx)
        log_cases(fx)
    finally:
        if fx is not None:
            stderr = fx.stop()
            if stderr.strip():
                record("server stderr empty", False, stderr.strip()[-2000:])
        shutil.rmtree(directory, ignore_errors=True)
    failed = results.count(False)
    print("%s: %d passed, %d failed in %.1f s (Python %s)" % (
        "OK" if not failed else "FAILED", len(results) - failed, failed, time.time() - started,
        sys.version.split()[0]))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
