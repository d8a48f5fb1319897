#!/usr/bin/env python3
"""An OAuth 2.0 token endpoint that verifies client authentication the way a real
authorization server does, for token-sidecar's client-authentication tests.

Independent of the code under test: signatures are checked with Python's `cryptography`
(RSA PKCS#1 v1.5, ECDSA P-256 from the raw r||s of RFC 7518 §3.4, HMAC-SHA-256 from the
standard library), claims by hand. Works with cryptography 38 (Debian 12) and newer.

    client_auth_server.py --log LOG --policy POLICY.json
                          [--tls-cert PEM --tls-key PEM [--client-ca PEM]]

Listens on 127.0.0.1 (an ephemeral port), prints "PORT <n>", and appends one JSON line per
request to LOG: method, path, time, headers ([[name, value]]), body, form ({name: value}),
verdict ("ok" or why the request was refused), token (issued, or null) and peer_cn (the CN of
the verified TLS client certificate, or null). With --client-ca the server asks for (but does
not require) a client certificate verified against that CA.

The policy file is read on every request (a test may replace it between requests):

  method        private_key_jwt | client_secret_jwt | assertion_file | tls_client_auth |
                mca_certificate | jwt_bearer | google
                jwt_bearer: the grant is an RFC 7523 §2.1 assertion (form assertion) verified with
                public_key, iss = issuer, sub = subject, aud = audience, scope (form) = scope when
                given; the client authenticates per client_auth: "none" (no Authorization, no
                secret, client_id absent or client_id) or "basic" (Basic client_id:secret).
                google: a Google service-account assertion as Google's token_uri checks it: kid,
                iss = issuer, no sub, aud = audience, exp - iat <= 3600, and the scope claim =
                scope or the target_audience claim = target_audience (then the answer is
                {"id_token"} alone, as Google answers); no client authentication.
  client_id     the expected client id (form client_id)
  public_key    PEM public key or certificate: the client's key (private_key_jwt) or the
                external issuer's (assertion_file); RSA allows RS256 only, EC P-256 ES256 only
  secret        the HS256 key (client_secret_jwt)
  audience      the expected aud (a string, or contained in a list)
  issuer, subject   expected iss / sub of an assertion_file token (checked when given)
  kid           the required JWS kid (when given)
  lifetime      the required exp - iat in seconds (when given)
  subject_cn    the required CN of the TLS client certificate (tls_client_auth)
  mca_path      the required request path (mca_certificate)
  trusted_ca    PEM CA that must have issued the x5c certificate (mca_certificate)
  expires_in    the issued token's lifetime (3600); token_prefix ("tok-")
  attacker_replays_first   when true, every request is first verified once as if an attacker who
                captured it had sent it a moment earlier (logged with verdict "attacker: ..."),
                then verified for real: a one-time assertion must then fail as "jti replayed"

A success is 200 {"access_token", "token_type": "Bearer", "expires_in"}; anything else is
400 {"error": "invalid_client", "error_description": <reason>}.
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SKEW = 5

lock = threading.Lock()
issued = [0]
seen_jti = set()


class Refused(Exception):
    pass


def b64url_decode(part):
    if "=" in part or not part:
        raise Refused("malformed JWS part")
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except Exception:
        raise Refused("malformed JWS part")


def load_public_key(path):
    with open(path, "rb") as f:
        data = f.read()
    if b"CERTIFICATE" in data:
        return x509.load_pem_x509_certificate(data).public_key()
    return serialization.load_pem_public_key(data)


def algorithm_for(key):
    if isinstance(key, rsa.RSAPublicKey):
        return "RS256"
    if isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1":
        return "ES256"
    raise Refused("unsupported key type")


def verify_signature(alg, key, signing_input, signature):
    try:
        if alg == "RS256":
            key.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
        elif alg == "ES256":
            if len(signature) != 64:
                raise Refused("bad signature: ES256 wants the raw 64-byte r||s")
            r = int.from_bytes(signature[:32], "big")
            s = int.from_bytes(signature[32:], "big")
            key.verify(encode_dss_signature(r, s), signing_input, ec.ECDSA(hashes.SHA256()))
        elif alg == "HS256":
            expected = hmac.new(key, signing_input, hashlib.sha256).digest()
            if not hmac.compare_digest(expected, signature):
                raise Refused("bad signature")
        else:
            raise Refused("unsupported alg")
    except InvalidSignature:
        raise Refused("bad signature")


def parse_jws(token):
    parts = token.split(".")
    if len(parts) != 3:
        raise Refused("client_assertion is not a compact JWS")
    try:
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
    except (ValueError, UnicodeDecodeError):
        raise Refused("client_assertion is not JSON")
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise Refused("client_assertion is not a JSON object")
    return header, claims, (parts[0] + "." + parts[1]).encode(), b64url_decode(parts[2])


def check_audience(claims, policy):
    expected = policy.get("audience")
    if expected is None:
        return
    aud = claims.get("aud")
    if aud != expected and not (isinstance(aud, list) and expected in aud):
        raise Refused("wrong aud")


GRANT_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def verify_grant_assertion(headers, form, policy, kind):
    if form.get("grant_type") != GRANT_JWT_BEARER:
        raise Refused("grant_type is not jwt-bearer")
    if "client_assertion" in form or "client_secret" in form:
        raise Refused("a client credential beside the grant")
    client_auth = policy.get("client_auth", "none")
    if kind == "google" or client_auth == "none":
        if "authorization" in headers:
            raise Refused("an Authorization header without client authentication")
        if "client_id" in form and form["client_id"] != policy.get("client_id"):
            raise Refused("wrong client_id")
    else:
        expected = "Basic " + base64.b64encode(("%s:%s" % (policy["client_id"], policy["secret"])).encode()).decode()
        if headers.get("authorization") != expected:
            raise Refused("wrong client authentication")
    header, claims, signing_input, signature = parse_jws(form.get("assertion", ""))
    key = load_public_key(policy["public_key"])
    alg = algorithm_for(key)
    if header.get("alg") != alg:
        raise Refused("alg %r not accepted (want %s)" % (header.get("alg"), alg))
    if "kid" in policy and header.get("kid") != policy["kid"]:
        raise Refused("wrong kid")
    verify_signature(alg, key, signing_input, signature)
    now = time.time()
    exp, iat = claims.get("exp"), claims.get("iat")
    if not isinstance(exp, int) or not isinstance(iat, int) or exp <= now or iat > now + SKEW:
        raise Refused("exp or iat missing or out of range")
    if not 1 <= exp - iat <= 3600:
        raise Refused("exp - iat out of range")
    if claims.get("iss") != policy.get("issuer"):
        raise Refused("wrong iss")
    check_audience(claims, policy)
    jti = claims.get("jti")
    if kind == "google":
        if "sub" in claims:
            raise Refused("a sub claim (no delegation asked for)")
        if "target_audience" in policy:
            if claims.get("target_audience") != policy["target_audience"] or "scope" in claims:
                raise Refused("wrong target_audience")
        elif claims.get("scope") != policy.get("scope"):
            raise Refused("wrong scope claim")
        return
    if claims.get("sub") != policy.get("subject"):
        raise Refused("wrong sub")
    if "scope" in policy and form.get("scope") != policy["scope"]:
        raise Refused("wrong scope")
    if not isinstance(jti, str) or len(jti) < 16:
        raise Refused("jti missing or too short")
    with lock:
        if jti in seen_jti:
            raise Refused("jti replayed")
        seen_jti.add(jti)


def check_form(form, policy):
    if form.get("grant_type") != "client_credentials":
        raise Refused("grant_type is not client_credentials")
    if form.get("client_id") != policy.get("client_id"):
        raise Refused("wrong client_id")


def verify_jwt_client(headers, form, policy, method):
    if "authorization" in headers:
        raise Refused("an Authorization header with a client assertion")
    if "client_secret" in form:
        raise Refused("client_secret with a client assertion")
    if form.get("client_assertion_type") != JWT_BEARER:
        raise Refused("wrong client_assertion_type")
    header, claims, signing_input, signature = parse_jws(form.get("client_assertion", ""))
    if method == "client_secret_jwt":
        alg, key = "HS256", policy.get("secret", "").encode()
    else:
        key = load_public_key(policy["public_key"])
        alg = algorithm_for(key)
    if header.get("alg") != alg:
        raise Refused("alg %r not accepted (want %s)" % (header.get("alg"), alg))
    if method != "assertion_file" and header.get("typ") != "JWT":
        raise Refused("typ is not JWT")
    if "kid" in policy and header.get("kid") != policy["kid"]:
        raise Refused("wrong kid")
    verify_signature(alg, key, signing_input, signature)
    jti = claims.get("jti")
    replayed = False
    if method != "assertion_file" and isinstance(jti, str):
        with lock:  # remembered once signed, even when a later check refuses the request
            replayed = jti in seen_jti
            seen_jti.add(jti)
    now = time.time()
    exp = claims.get("exp")
    if not isinstance(exp, int) or isinstance(exp, bool):
        raise Refused("exp missing or not an integer")
    if exp <= now:
        raise Refused("assertion expired")
    check_audience(claims, policy)
    if method == "assertion_file":
        for name in ("issuer", "subject"):
            claim = "iss" if name == "issuer" else "sub"
            if name in policy and claims.get(claim) != policy[name]:
                raise Refused("wrong " + claim)
        return
    client_id = policy.get("client_id")
    if claims.get("iss") != client_id or claims.get("sub") != client_id:
        raise Refused("iss and sub must be the client_id")
    iat = claims.get("iat")
    if not isinstance(iat, int) or isinstance(iat, bool) or iat > now + SKEW:
        raise Refused("iat missing or in the future")
    if not 1 <= exp - iat <= 300:
        raise Refused("exp - iat out of range")
    if "lifetime" in policy and exp - iat != policy["lifetime"]:
        raise Refused("exp - iat is not %s" % policy["lifetime"])
    if not isinstance(jti, str) or len(jti) < 16:
        raise Refused("jti missing or too short")
    if replayed:
        raise Refused("jti replayed")


def verify_tls_client(headers, form, policy, peer_cn):
    if peer_cn is None:
        raise Refused("no client certificate")
    if peer_cn != policy.get("subject_cn"):
        raise Refused("certificate CN mismatch")
    if "authorization" in headers or "client_secret" in form or "client_assertion" in form:
        raise Refused("tls_client_auth with another credential")


def verify_ca_issued(certificate, ca_path):
    with open(ca_path, "rb") as f:
        ca = x509.load_pem_x509_certificate(f.read())
    if certificate.issuer != ca.subject:
        raise Refused("certificate not issued by the trusted CA")
    key = ca.public_key()
    try:
        if isinstance(key, rsa.RSAPublicKey):
            key.verify(certificate.signature, certificate.tbs_certificate_bytes, padding.PKCS1v15(),
                       certificate.signature_hash_algorithm)
        else:
            key.verify(certificate.signature, certificate.tbs_certificate_bytes,
                       ec.ECDSA(certificate.signature_hash_algorithm))
    except InvalidSignature:
        raise Refused("certificate not signed by the trusted CA")
    if hasattr(certificate, "not_valid_before_utc"):
        now = datetime.datetime.now(datetime.timezone.utc)
        window = certificate.not_valid_before_utc, certificate.not_valid_after_utc
    else:
        now = datetime.datetime.utcnow()
        window = certificate.not_valid_before, certificate.not_valid_after
    if not window[0] <= now <= window[1]:
        raise Refused("certificate outside its validity")


def verify_mca(path, headers, form, policy):
    if "mca_path" in policy and path != policy["mca_path"]:
        raise Refused("wrong path")
    value = headers.get("authorization", "")
    if not value.startswith("IMFCert "):
        raise Refused("no IMFCert authorization")
    header, claims, signing_input, signature = parse_jws(value[len("IMFCert "):])
    if header.get("alg") != "RS256":
        raise Refused("alg is not RS256")
    chain = header.get("x5c")
    if not isinstance(chain, list) or len(chain) != 1:
        raise Refused("x5c must hold exactly one certificate")
    try:
        certificate = x509.load_der_x509_certificate(base64.b64decode(chain[0], validate=True))
    except Exception:
        raise Refused("x5c is not a DER certificate")
    key = certificate.public_key()
    if not isinstance(key, rsa.RSAPublicKey):
        raise Refused("the certificate key is not RSA")
    verify_signature("RS256", key, signing_input, signature)
    if "trusted_ca" in policy:
        verify_ca_issued(certificate, policy["trusted_ca"])
    timestamp = claims.get("timestamp")
    if not isinstance(timestamp, int) or isinstance(timestamp, bool):
        raise Refused("timestamp missing or not an integer")
    if abs(timestamp / 1000.0 - time.time()) > 60:
        raise Refused("stale timestamp")


def verify(method, path, headers, form, policy, peer_cn):
    if method != "POST":
        raise Refused("method is not POST")
    if headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        raise Refused("not a form")
    kind = policy.get("method")
    if kind in ("jwt_bearer", "google"):
        verify_grant_assertion(headers, form, policy, kind)
        return
    check_form(form, policy)
    if kind in ("private_key_jwt", "client_secret_jwt", "assertion_file"):
        verify_jwt_client(headers, form, policy, kind)
    elif kind == "tls_client_auth":
        verify_tls_client(headers, form, policy, peer_cn)
    elif kind == "mca_certificate":
        verify_mca(path, headers, form, policy)
    else:
        raise Refused("unknown policy method")


def peer_common_name(connection):
    getpeercert = getattr(connection, "getpeercert", None)
    peer = getpeercert() if getpeercert else None
    if not peer:
        return None
    for rdn in peer.get("subject", ()):
        for name, value in rdn:
            if name == "commonName":
                return value
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode("utf-8", "replace")
        form = dict(parse_qsl(body, keep_blank_values=True))
        headers = {k.lower(): v for k, v in self.headers.items()}
        with open(self.server.policy_path) as f:
            policy = json.load(f)
        peer_cn = peer_common_name(self.connection)
        if policy.get("attacker_replays_first"):
            try:
                verify(self.command, self.path, headers, form, policy, peer_cn)
                stolen = "attacker: ok"
            except Refused as refused:
                stolen = "attacker: %s" % refused
            self.log_request_line(body, form, stolen, None, peer_cn)
        token = None
        try:
            verify(self.command, self.path, headers, form, policy, peer_cn)
            with lock:
                issued[0] += 1
                token = "%s%d" % (policy.get("token_prefix", "tok-"), issued[0])
            verdict = "ok"
        except Refused as refused:
            verdict = str(refused)
        except (OSError, ValueError, KeyError) as error:
            verdict = "server policy problem: %s" % type(error).__name__
        self.log_request_line(body, form, verdict, token, peer_cn)
        if token and policy.get("method") == "google" and "target_audience" in policy:
            status, doc = 200, {"id_token": token}
        elif token:
            status, doc = 200, {"access_token": token, "token_type": "Bearer",
                                "expires_in": policy.get("expires_in", 3600)}
        else:
            status, doc = 400, {"error": "invalid_client", "error_description": verdict}
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    do_GET = do_PUT = do_PATCH = do_DELETE = do_POST  # refused by verify(), still logged

    def log_request_line(self, body, form, verdict, token, peer_cn):
        with lock, open(self.server.log_path, "a") as log:
            log.write(json.dumps({
                "method": self.command, "path": self.path, "time": time.time(),
                "headers": [[k, v] for k, v in self.headers.items()], "body": body, "form": form,
                "verdict": verdict, "token": token, "peer_cn": peer_cn,
            }) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--policy", required=True)
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--client-ca")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        if args.client_ca:
            context.load_verify_locations(args.client_ca)
            context.verify_mode = ssl.CERT_OPTIONAL
        server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    server.log_path = args.log
    server.policy_path = args.policy
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
