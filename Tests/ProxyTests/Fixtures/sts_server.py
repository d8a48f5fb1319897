#!/usr/bin/env python3
"""A Security Token Service (OAuth 2.0 token endpoint with RFC 8693 token exchange) that verifies
like a real one, and a protected backend that accepts only the tokens it issued, for
token-sidecar's token-exchange tests.

Independent of the code under test: JWS signatures are checked with the standard library
(HMAC-SHA-256) and Python's `cryptography` (RSA PKCS#1 v1.5), claims by hand. Works with
cryptography 38 (Debian 12) and newer.

    sts_server.py --dir DIR

One process, two listeners, both on 127.0.0.1 (ephemeral ports). It generates an RSA-2048
issuer key, writes its public key to DIR/issuer_public.pem and the backend's port to
DIR/backend_port (atomically), then prints "PORT <sts port>" (the STS). Nothing is ever
logged raw that could be used: tokens and secrets appear as the first 16 hex digits of their
SHA-256 ("fingerprint").

STS listener
  POST /token   application/x-www-form-urlencoded. Client authentication first (401
                {"error": "invalid_client"} when wrong, with WWW-Authenticate: Basic when the
                client tried an Authorization header), then:
                grant_type=client_credentials: an opaque random token for sub = client_id
                  (the exact scope, audience and resource it was asked with are kept).
                grant_type=urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693 §2.1):
                  subject_token + subject_token_type required (invalid_request), the type in
                  accepted_token_types (invalid_request); the subject token must be a JWS this
                  issuer signed (alg exactly signing_alg, signature, iss == issuer, integer exp in
                  the future, nbf not in the future, aud containing subject_audience when set)
                  and its sub not in refuse_subjects (400 invalid_grant with error_description);
                  actor_token (+ actor_token_type, else invalid_request) verified the same way,
                  against actor_issuer_secret / actor_issuer when set (invalid_grant); with
                  require_actor and no actor_token: invalid_request; every audience in
                  allowed_audiences and every resource in allowed_resources when those are set
                  (invalid_target). audience and resource may be repeated (then kept as lists).
                  200 {"access_token", "issued_token_type": access_token URN, "token_type":
                  "Bearer", "expires_in"} (plus "scope" when asked for).
                Other grant types: 400 unsupported_grant_type; a repeated parameter other than
                audience/resource: 400 invalid_request.
  POST /mint    test helper (form): sub, ttl (seconds, negative for an expired token), optional
                iss (default: the policy's issuer, or actor_issuer for an actor), aud, nbf
                (seconds from now), kind=subject|actor (default subject), forge=1 (sign with a
                key nobody trusts). Answers the compact JWS as text/plain; 400 on a bad form.
                Claims: iss, sub, iat, exp, jti, plus aud / nbf when given. Not logged.

Backend listener: any method, any path. The body is read (Content-Length or chunked) and counted.
  Authorization: Bearer <a token the STS issued, unexpired> -> 200 {"sub", "aud", "scope", "act",
  "client_id", "path", "method", "body_length"}; an unknown or expired token -> 401 with
  WWW-Authenticate: Bearer error="invalid_token"; no Bearer token -> 401 with
  WWW-Authenticate: Bearer. backend_reject_all -> 401 invalid_token for every request.

Logs (JSON lines, appended):
  DIR/token_requests.jsonl, one per POST /token: time, path, status, grant_type, client_id,
    client_auth (the method the client used: basic, post or none), verdict ("ok" or the OAuth
    error code), reason (why, or null), form (every parameter; subject_token, actor_token,
    client_secret, client_assertion replaced by their fingerprint), token_sha256 (of the issued
    token), sub, act, aud, scope, resource, requested_token_type, subject_token_type,
    subject_jti, subject_sha256, actor_sha256, expires_in.
  DIR/backend_requests.jsonl, one per request: time, method, path, status, known (an unexpired
    token the STS issued), expired, token_sha256, sub, act, aud, scope, client_id,
    authorization_scheme (the first word of Authorization, or null), header_names (every header
    name in order, as received), sidecar_headers ([[name, value]] of every header whose name
    starts with "token-sidecar-", any case), body_length, chunked.

DIR/policy.json is read on every request (a test may replace it between requests); every key is
optional:
  client_auth          client_secret_basic | client_secret_post | none (default: client_secret_basic
                       when client_secret is set, else none). basic: RFC 6749 §2.3.1, id and
                       secret form-urlencoded before base64; a form client_id must then agree and
                       a form client_secret is refused. post: client_id + client_secret in the
                       form, no Authorization header. none: no secret anywhere; client_id optional
                       (when given and the policy names one, they must agree).
  client_id, client_secret   the expected client credentials
  issuer               the iss of subject (and actor) tokens ("https://sts.test")
  issuer_secret        the HS256 key ("sts-fixture-issuer-secret")
  signing_alg          HS256 | RS256 (HS256): the one alg accepted, and what /mint signs with;
                       RS256 uses the generated key (DIR/issuer_public.pem)
  actor_issuer         the iss of actor tokens (default: issuer)
  actor_issuer_secret  when set, actor tokens are HS256 with this key (minted and verified)
  accepted_token_types subject/actor token types accepted (the access_token and jwt URNs)
  require_actor        an actor_token is required (false)
  allowed_audiences, allowed_resources   when set, what audience / resource may name
  subject_audience     when set, the subject token's aud must be or contain it
  expires_in           the issued token's lifetime (3600)
  cap_to_subject       expires_in is at most the subject token's remaining life (true)
  delay_ms             sleep this long before answering a /token request (0)
  refuse_subjects      subject sub values refused with invalid_grant ([])
  fail_status          answer every /token request with this status and
                       {"error": "temporarily_unavailable"} (after delay_ms; logged)
  backend_reject_all   the backend answers 401 invalid_token to everything (false)
"""
import argparse
import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote_plus

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt"
DEFAULT_ISSUER = "https://sts.test"
DEFAULT_SECRET = "sts-fixture-issuer-secret"
SECRET_FIELDS = ("subject_token", "actor_token", "client_secret", "client_assertion")
REPEATABLE = ("audience", "resource")

lock = threading.Lock()
issued = {}  # access token -> what it was issued for
state = {}   # "rsa": the issuer key, "forger": a key nobody trusts, paths


class OAuthError(Exception):
    def __init__(self, error, reason, status=400):
        Exception.__init__(self, reason)
        self.error, self.reason, self.status = error, reason, status


def fingerprint(value):
    if value is None:
        return None
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(part, what):
    if not part or "=" in part:
        raise OAuthError("invalid_grant", "%s: malformed JWS part" % what)
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise OAuthError("invalid_grant", "%s: malformed JWS part" % what)


def read_policy():
    try:
        with open(state["policy"]) as f:
            policy = json.load(f)
    except FileNotFoundError:
        return {}
    return policy if isinstance(policy, dict) else {}


# ---------------------------------------------------------------- JWS

def signing_key(policy, kind, forge=False):
    """(alg, key) /mint signs a `kind` token with, and the verifier checks it against."""
    if forge:
        if policy.get("signing_alg", "HS256") == "RS256" and not (kind == "actor" and policy.get("actor_issuer_secret")):
            return "RS256", state["forger"]
        return "HS256", b"not-the-issuer-secret-" + secrets.token_bytes(8)
    if kind == "actor" and policy.get("actor_issuer_secret"):
        return "HS256", str(policy["actor_issuer_secret"]).encode()
    alg = policy.get("signing_alg", "HS256")
    if alg == "RS256":
        return "RS256", state["rsa"]
    if alg == "HS256":
        return "HS256", str(policy.get("issuer_secret", DEFAULT_SECRET)).encode()
    raise OAuthError("server_error", "policy signing_alg %r is neither HS256 nor RS256" % alg, 500)


def expected_issuer(policy, kind):
    if kind == "actor" and "actor_issuer" in policy:
        return policy["actor_issuer"]
    return policy.get("issuer", DEFAULT_ISSUER)


def sign_jws(claims, alg, key):
    header = {"alg": alg, "typ": "JWT"}
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    if alg == "HS256":
        signature = hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
    else:
        signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return signing_input + "." + b64url(signature)


def verify_jws(token, policy, kind):
    """The claims of a `kind` ("subject" or "actor") token this STS trusts, or OAuthError."""
    what = "%s_token" % kind
    parts = token.split(".")
    if len(parts) != 3:
        raise OAuthError("invalid_grant", "%s is not a compact JWS" % what)
    try:
        header = json.loads(b64url_decode(parts[0], what))
        claims = json.loads(b64url_decode(parts[1], what))
    except (ValueError, UnicodeDecodeError):
        raise OAuthError("invalid_grant", "%s is not JSON" % what)
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise OAuthError("invalid_grant", "%s is not a JSON object" % what)
    signature = b64url_decode(parts[2], what)
    signing_input = (parts[0] + "." + parts[1]).encode()
    alg, key = signing_key(policy, kind)
    if header.get("alg") != alg:
        raise OAuthError("invalid_grant", "%s: alg %r not accepted (want %s)" % (what, header.get("alg"), alg))
    if alg == "HS256":
        if not hmac.compare_digest(hmac.new(key, signing_input, hashlib.sha256).digest(), signature):
            raise OAuthError("invalid_grant", "%s: bad signature" % what)
    else:
        try:
            key.public_key().verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            raise OAuthError("invalid_grant", "%s: bad signature" % what)
    if claims.get("iss") != expected_issuer(policy, kind):
        raise OAuthError("invalid_grant", "%s: wrong iss" % what)
    now = time.time()
    exp = claims.get("exp")
    if not isinstance(exp, int) or isinstance(exp, bool):
        raise OAuthError("invalid_grant", "%s: exp missing or not an integer" % what)
    if exp <= now:
        raise OAuthError("invalid_grant", "%s: expired" % what)
    nbf = claims.get("nbf")
    if nbf is not None:
        if not isinstance(nbf, (int, float)) or isinstance(nbf, bool):
            raise OAuthError("invalid_grant", "%s: nbf not a number" % what)
        if nbf > now:
            raise OAuthError("invalid_grant", "%s: not yet valid (nbf)" % what)
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise OAuthError("invalid_grant", "%s: sub missing" % what)
    if kind == "subject" and "subject_audience" in policy:
        aud = claims.get("aud")
        wanted = policy["subject_audience"]
        if aud != wanted and not (isinstance(aud, list) and wanted in aud):
            raise OAuthError("invalid_grant", "%s: wrong aud" % what)
    return claims


# ---------------------------------------------------------------- HTTP bodies

def read_body(handler):
    """(bytes, chunked) of the request body: Content-Length or chunked transfer coding."""
    coding = handler.headers.get("Transfer-Encoding", "")
    if coding:
        if coding.strip().lower() != "chunked":
            raise ValueError("unsupported Transfer-Encoding")
        body = bytearray()
        while True:
            line = handler.rfile.readline(65537)
            size = int(line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while handler.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return bytes(body), True
            body += handler.rfile.read(size)
            handler.rfile.readline(3)  # CRLF after the chunk
    length = int(handler.headers.get("Content-Length", "0") or "0")
    return (handler.rfile.read(length) if length > 0 else b""), False


def parse_form(body):
    """{name: value}, or {name: [values]} for a repeated audience/resource; ValueError when
    another parameter is repeated (RFC 6749 §3.2)."""
    form = {}
    for name, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
        if name in form:
            if name not in REPEATABLE:
                raise ValueError("parameter %s repeated" % name)
            form[name] = (form[name] if isinstance(form[name], list) else [form[name]]) + [value]
        else:
            form[name] = value
    return form


def redacted(form):
    return {name: (fingerprint(value) if name in SECRET_FIELDS and isinstance(value, str) else value)
            for name, value in form.items()}


def values(value):
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


# ---------------------------------------------------------------- the STS

def authenticate_client(headers, form, policy):
    """(client_id or None, method used). OAuthError invalid_client (401) when wrong."""
    method = policy.get("client_auth") or ("client_secret_basic" if "client_secret" in policy else "none")
    expected_id, expected_secret = policy.get("client_id"), policy.get("client_secret")
    authorization = headers.get("authorization")
    used_basic = authorization is not None

    def refuse(reason):
        error = OAuthError("invalid_client", reason, 401)
        error.basic_challenge = used_basic
        raise error

    if method == "client_secret_basic":
        if authorization is None:
            refuse("no Authorization header (client_secret_basic)")
        scheme, _, credentials = authorization.partition(" ")
        if scheme.lower() != "basic":
            refuse("Authorization scheme is not Basic")
        try:
            decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            refuse("malformed Basic credentials")
        if ":" not in decoded:
            refuse("malformed Basic credentials")
        raw_id, _, raw_secret = decoded.partition(":")
        client_id, secret = unquote_plus(raw_id), unquote_plus(raw_secret)
        if "client_secret" in form:
            refuse("client_secret in the form as well as Basic")
        if "client_id" in form and form["client_id"] != client_id:
            refuse("form client_id differs from the Basic one")
        if client_id != expected_id:
            refuse("wrong client_id")
        if expected_secret is None or not hmac.compare_digest(secret.encode(), str(expected_secret).encode()):
            refuse("wrong client_secret")
        return client_id, "basic"
    if method == "client_secret_post":
        if authorization is not None:
            refuse("an Authorization header with client_secret_post")
        client_id, secret = form.get("client_id"), form.get("client_secret")
        if client_id is None or secret is None:
            refuse("client_id or client_secret missing from the form")
        if client_id != expected_id:
            refuse("wrong client_id")
        if expected_secret is None or not hmac.compare_digest(secret.encode(), str(expected_secret).encode()):
            refuse("wrong client_secret")
        return client_id, "post"
    if method == "none":
        if authorization is not None:
            refuse("an Authorization header from a public client")
        if "client_secret" in form or "client_assertion" in form:
            refuse("a client credential from a public client")
        client_id = form.get("client_id")
        if client_id is not None and expected_id is not None and client_id != expected_id:
            refuse("wrong client_id")
        return client_id, "none"
    raise OAuthError("server_error", "unknown policy client_auth %r" % method, 500)


def token_request(headers, form, policy, record):
    """The 200 document for a /token request, filling `record`; OAuthError otherwise."""
    client_id, used = authenticate_client(headers, form, policy)
    record.update(client_id=client_id, client_auth=used)
    grant = form.get("grant_type")
    scope, audience, resource = form.get("scope"), form.get("audience"), form.get("resource")
    record.update(scope=scope, aud=audience, resource=resource,
                  requested_token_type=form.get("requested_token_type"))
    if not grant:
        raise OAuthError("invalid_request", "grant_type missing")
    now = time.time()
    expires_in = int(policy.get("expires_in", 3600))
    if grant == "client_credentials":
        sub, act, subject_claims = client_id, None, None
    elif grant == TOKEN_EXCHANGE:
        subject_token, subject_type = form.get("subject_token"), form.get("subject_token_type")
        record.update(subject_token_type=subject_type, subject_sha256=fingerprint(subject_token))
        if not subject_token or not subject_type:
            raise OAuthError("invalid_request", "subject_token and subject_token_type are required")
        accepted = policy.get("accepted_token_types", [ACCESS_TOKEN_TYPE, JWT_TOKEN_TYPE])
        if subject_type not in accepted:
            raise OAuthError("invalid_request", "subject_token_type %s not accepted" % subject_type)
        subject_claims = verify_jws(subject_token, policy, "subject")
        sub = subject_claims["sub"]
        record.update(sub=sub, subject_jti=subject_claims.get("jti"))
        if sub in policy.get("refuse_subjects", []):
            raise OAuthError("invalid_grant", "subject %s refused" % sub)
        actor_token, actor_type = form.get("actor_token"), form.get("actor_token_type")
        act = None
        if actor_token is not None or actor_type is not None:
            record["actor_sha256"] = fingerprint(actor_token)
            if not actor_token or not actor_type:
                raise OAuthError("invalid_request", "actor_token and actor_token_type go together")
            if actor_type not in accepted:
                raise OAuthError("invalid_request", "actor_token_type %s not accepted" % actor_type)
            act = verify_jws(actor_token, policy, "actor")["sub"]
            record["act"] = act
        elif policy.get("require_actor"):
            raise OAuthError("invalid_request", "actor_token required")
        allowed = policy.get("allowed_audiences")
        if allowed is not None:
            for value in values(audience):
                if value not in allowed:
                    raise OAuthError("invalid_target", "audience %s not allowed" % value)
        allowed = policy.get("allowed_resources")
        if allowed is not None:
            for value in values(resource):
                if value not in allowed:
                    raise OAuthError("invalid_target", "resource %s not allowed" % value)
        if policy.get("cap_to_subject", True):
            expires_in = min(expires_in, int(subject_claims["exp"] - now))
    else:
        raise OAuthError("unsupported_grant_type", "grant_type %s not supported" % grant)
    token = "sts-" + secrets.token_urlsafe(32)
    with lock:
        issued[token] = {"sub": sub, "act": act, "aud": audience, "scope": scope, "resource": resource,
                         "client_id": client_id, "grant_type": grant,
                         "subject_jti": subject_claims.get("jti") if subject_claims else None,
                         "subject_sha256": record.get("subject_sha256"),
                         "issued_at": now, "expires_at": now + expires_in}
    record.update(sub=sub, act=act, token_sha256=fingerprint(token), expires_in=expires_in)
    document = {"access_token": token, "issued_token_type": ACCESS_TOKEN_TYPE, "token_type": "Bearer",
                "expires_in": expires_in}
    if scope is not None:
        document["scope"] = scope
    return document


def mint(form, policy):
    kind = form.get("kind", "subject")
    if kind not in ("subject", "actor"):
        raise OAuthError("invalid_request", "kind must be subject or actor")
    sub = form.get("sub")
    if not isinstance(sub, str) or not sub:
        raise OAuthError("invalid_request", "sub missing")
    try:
        ttl = int(form.get("ttl", "300"))
        nbf = int(form["nbf"]) if "nbf" in form else None
    except (TypeError, ValueError):
        raise OAuthError("invalid_request", "ttl and nbf are integers")
    now = int(time.time())
    claims = {"iss": form.get("iss", expected_issuer(policy, kind)), "sub": sub, "iat": now,
              "exp": now + ttl, "jti": secrets.token_hex(12)}
    if form.get("aud") is not None:
        claims["aud"] = form["aud"]
    if nbf is not None:
        claims["nbf"] = now + nbf
    alg, key = signing_key(policy, kind, forge=form.get("forge") in ("1", "true"))
    return sign_jws(claims, alg, key)


class Common(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The head and the body are two writes: without TCP_NODELAY the body waits for the peer's
    # delayed ACK (40 ms per keep-alive response).
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def __getattr__(self, name):  # every method, not just the common ones
        if name.startswith("do_"):
            return self.handle_any
        raise AttributeError(name)

    def answer(self, status, body, content_type="application/json", extra=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()

    def append(self, path, entry):
        with lock, open(path, "a") as log:
            log.write(json.dumps(entry) + "\n")


class STSHandler(Common):
    def handle_any(self):
        try:
            body, _ = read_body(self)
        except ValueError:
            self.close_connection = True
            return self.answer(400, {"error": "invalid_request", "error_description": "unreadable body"})
        path = self.path.split("?", 1)[0]
        if path not in ("/token", "/mint"):
            return self.answer(404, {"error": "not_found"})
        if self.command != "POST":
            return self.answer(405, {"error": "invalid_request", "error_description": "POST only"},
                               extra=[("Allow", "POST")])
        policy = read_policy()
        if path == "/mint":
            try:
                return self.answer(200, mint(parse_form(body), policy).encode(), "text/plain")
            except (OAuthError, ValueError) as error:
                return self.answer(400, {"error": "invalid_request", "error_description": str(error)})
        self.token(body, policy)

    def token(self, body, policy):
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = {"time": time.time(), "path": self.path, "grant_type": None, "client_id": None,
                  "client_auth": None, "status": None, "verdict": None, "reason": None, "form": {},
                  "token_sha256": None, "sub": None, "act": None, "aud": None, "scope": None,
                  "resource": None, "requested_token_type": None, "subject_token_type": None,
                  "subject_jti": None, "subject_sha256": None, "actor_sha256": None, "expires_in": None}
        delay = policy.get("delay_ms", 0)
        if delay:
            time.sleep(delay / 1000.0)
        challenge = ()
        try:
            if headers.get("content-type", "").split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
                raise OAuthError("invalid_request", "not application/x-www-form-urlencoded")
            try:
                form = parse_form(body)
            except ValueError as error:
                raise OAuthError("invalid_request", str(error))
            record["form"] = redacted(form)
            record["grant_type"] = form.get("grant_type")
            if policy.get("fail_status"):
                raise OAuthError("temporarily_unavailable", "policy fail_status", int(policy["fail_status"]))
            status, document = 200, token_request(headers, form, policy, record)
            record.update(verdict="ok")
        except OAuthError as error:
            status, document = error.status, {"error": error.error, "error_description": error.reason}
            record.update(verdict=error.error, reason=error.reason)
            if getattr(error, "basic_challenge", False):
                challenge = [("WWW-Authenticate", 'Basic realm="sts"')]
        except (KeyError, TypeError, ValueError) as error:
            status, document = 500, {"error": "server_error", "error_description": type(error).__name__}
            record.update(verdict="server_error", reason="%s: %s" % (type(error).__name__, error))
        record["status"] = status
        self.append(state["token_log"], record)
        self.answer(status, document, extra=challenge)


class BackendHandler(Common):
    def handle_any(self):
        record = {"time": time.time(), "method": self.command, "path": self.path,
                  "header_names": [name for name, _ in self.headers.items()],
                  "sidecar_headers": [[name, value] for name, value in self.headers.items()
                                      if name.lower().startswith("token-sidecar-")],
                  "authorization_scheme": None, "token_sha256": None, "known": False, "expired": False,
                  "sub": None, "act": None, "aud": None, "scope": None, "client_id": None,
                  "body_length": None, "chunked": False, "status": None}
        try:
            body, chunked = read_body(self)
            record.update(body_length=len(body), chunked=chunked)
        except ValueError:
            self.close_connection = True
            record["status"] = 400
            self.append(state["backend_log"], record)
            return self.answer(400, {"error": "unreadable body"})
        policy = read_policy()
        authorization = self.headers.get("Authorization")
        token = None
        if authorization is not None:
            scheme, _, rest = authorization.strip().partition(" ")
            record["authorization_scheme"] = scheme
            if scheme.lower() == "bearer" and rest.strip():
                token = rest.strip()
                record["token_sha256"] = fingerprint(token)
        with lock:
            grant = issued.get(token) if token else None
        if grant is not None:
            record["expired"] = grant["expires_at"] <= time.time()
            record["known"] = not record["expired"]
            for name in ("sub", "act", "aud", "scope", "client_id"):
                record[name] = grant[name]
        if token is None:
            status, document, challenge = 401, {"error": "no bearer token"}, "Bearer"
        elif policy.get("backend_reject_all") or not record["known"]:
            status, document = 401, {"error": "invalid_token"}
            challenge = 'Bearer error="invalid_token"'
        else:
            status, challenge = 200, None
            document = {name: grant[name] for name in ("sub", "aud", "scope", "act", "client_id")}
            document.update(path=self.path, method=self.command, body_length=len(body))
        record["status"] = status
        self.append(state["backend_log"], record)
        self.answer(status, document, extra=[("WWW-Authenticate", challenge)] if challenge else ())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    args = parser.parse_args()
    directory = args.dir
    state.update(policy=os.path.join(directory, "policy.json"),
                 token_log=os.path.join(directory, "token_requests.jsonl"),
                 backend_log=os.path.join(directory, "backend_requests.jsonl"),
                 rsa=rsa.generate_private_key(65537, 2048), forger=rsa.generate_private_key(65537, 2048))
    with open(os.path.join(directory, "issuer_public.pem"), "wb") as f:
        f.write(state["rsa"].public_key().public_bytes(serialization.Encoding.PEM,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo))
    sts = ThreadingHTTPServer(("127.0.0.1", 0), STSHandler)
    backend = ThreadingHTTPServer(("127.0.0.1", 0), BackendHandler)
    for server in (sts, backend):
        server.daemon_threads = True
    temporary = os.path.join(directory, "backend_port.tmp")
    with open(temporary, "w") as f:
        f.write("%d\n" % backend.server_address[1])
    os.replace(temporary, os.path.join(directory, "backend_port"))
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    print("PORT %d" % sts.server_address[1], flush=True)
    sts.serve_forever()


if __name__ == "__main__":
    main()
