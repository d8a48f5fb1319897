#!/usr/bin/env python3
"""An authorization server and a resource server that verify sender-constrained tokens like real
ones: DPoP (RFC 9449) proofs and key-bound tokens, and certificate-bound tokens (RFC 8705 §3), for
token-sidecar's DPoP and mTLS tests.

Independent of the code under test: proofs are parsed and checked by hand, signatures verified
with Python's `cryptography` (ES256 from the raw r||s of RFC 7518 §3.4, RS256 PKCS#1 v1.5, PS256
PSS with a 32-byte salt), thumbprints computed per RFC 7638 and RFC 8705 §3.1 here. Works with
cryptography 38 (Debian 12) and newer.

    dpop_server.py --dir DIR [--tls-cert PEM --tls-key PEM [--client-ca PEM] [--tls-on both|as|rs]]

One process, two listeners, both on 127.0.0.1 (ephemeral ports): the authorization server (AS)
and the resource server (RS). Writes the RS port to DIR/backend_port (atomically), then prints
"PORT <AS port>". With --tls-cert both listeners speak HTTPS (only the one named by --tls-on when
given); with --client-ca they ask for (but do not require) a client certificate verified against
that bundle. A self-signed client certificate (self_signed_tls_client_auth) is accepted by the
TLS layer only when it is in the bundle too. The handshake runs in the connection's thread.

Nothing is ever logged that could be used: tokens and secrets appear as the first 16 hex digits
of their SHA-256 ("fingerprint"); proofs never (only their jti); key and certificate thumbprints
(public) as they are.

DPoP proof checks (RFC 9449 §4.3), in this order, on both listeners; any failure is
invalid_dpop_proof with a reason: exactly one DPoP header; a compact JWS (three base64url parts,
no padding, JSON objects, no repeated member); typ "dpop+jwt"; alg ES256, RS256 or PS256 (never
none or HS*); no crit; a "jwk" header member holding a public key that fits alg (EC P-256 for
ES256, RSA of at least 2048 bits for RS256/PS256) and no private member; the signature verifies
with it; jti a non-empty string, htm and htu strings, iat a number; htm == the request method;
htu == the request URI (see below); |now - iat| <= iat_window; jti not seen before on this
listener (remembered once the signature verified); at the RS, ath == base64url(SHA-256(the
access token)) and the key's thumbprint == the token's cnf.jkt; then the nonce (use_dpop_nonce).

The request URI is scheme://authority/path: the scheme of the listener (http, or https with
TLS), the authority of the Host header (or of an absolute-form request target), the path of the
request target; htu and it are compared without query and fragment after RFC 3986 §6.2.2
normalization (scheme and host lowercase, default port dropped, percent-encoding uppercase, the
unreserved characters decoded, an empty path "/").

AS listener
  POST /token   application/x-www-form-urlencoded, grant_type=client_credentials (other grant
                types: 400 unsupported_grant_type). Client authentication (401 invalid_client when
                wrong): an Authorization: Basic header -> client_secret_basic (RFC 6749 §2.3.1,
                id and secret form-urlencoded first) against client_id / client_secret; else a
                TLS client certificate -> self_signed_tls_client_auth when it is self-signed
                (its x5t#S256 must be in tls_client_x5t), otherwise tls_client_auth (CA-verified
                by the TLS layer; its CN must equal tls_client_cn when set); either way the form
                client_id must equal the policy client_id (RFC 8705 §2); else, when the policy
                has no client_secret, a public client (form client_id optional, must agree).
                Then the DPoP header, when present, is verified as above (htm POST, htu the token
                URL) and the token is bound to its key (cnf.jkt, token_type "DPoP"); the nonce
                is required when the policy sets one: a missing or wrong one is 400
                {"error": "use_dpop_nonce"} with DPoP-Nonce: <nonce>. Without a DPoP header: a
                Bearer token, or 400 invalid_dpop_proof with require_dpop. With a client
                certificate and bind_certificate the token is also bound to it (cnf["x5t#S256"],
                base64url SHA-256 of the DER). 200 {"access_token", "token_type", "expires_in"}
                (plus "scope" when asked for). Other paths 404, other methods 405.

RS listener: any method, any path. The body is read (Content-Length or chunked) and counted.
  No Authorization -> 401, WWW-Authenticate: DPoP algs="ES256 RS256 PS256".
  A token the AS did not issue, or expired -> 401 invalid_token.
  A DPoP-bound token: the scheme must be DPoP (Bearer -> 401 invalid_token) and the proof is
    verified as above with htm = the request method, htu = the request URI, ath and the key's
    thumbprint == cnf.jkt (401 invalid_dpop_proof); then the nonce (rs_nonce): a missing or wrong
    one -> 401 use_dpop_nonce with DPoP-Nonce.
  A token not bound to a DPoP key presented with the DPoP scheme -> 401 invalid_token.
  A certificate-bound token (either scheme): the TLS client certificate's x5t#S256 must equal
    cnf["x5t#S256"] (401 invalid_token: no certificate, or another one).
  Success: 200 {"sub", "client_id", "scope", "method", "path", "body_length",
    "bound": "dpop" | "mtls" | "dpop+mtls" | "bearer"}.
  Errors carry WWW-Authenticate: <the scheme used> error="...", error_description="..." (DPoP for
  a DPoP-bound token used as Bearer; algs="ES256 RS256 PS256" on DPoP challenges) and a JSON body
  {"error", "error_description"}.

Nonces: with <as|rs>_nonce set (non-empty) that fixed value is required in every proof on that
listener. With <as|rs>_nonce_every_request true, the listener answers every response with a fresh
DPoP-Nonce and requires, in the next proof, the one it issued last (the first one required is
<x>_nonce when set, otherwise a random one nobody has seen yet); an older nonce is refused with
use_dpop_nonce and the new one. Requests that carry no proof still rotate it.

Logs (JSON lines, appended; one per request):
  DIR/as_requests.jsonl: time, method, path, status, verdict ("ok" or why it was refused), error
    (the OAuth error code or null), grant_type, client_id, client_auth (client_secret_basic,
    tls_client_auth, self_signed_tls_client_auth, none), form (client_secret as a fingerprint),
    dpop_headers (how many), jkt (the proof key's thumbprint), proof_jti, proof_htu, nonce_sent
    (the nonce in the client's proof), nonce_issued (the DPoP-Nonce this response carries),
    peer_cert_x5t, token_sha256 (of the issued token), token_type, cnf, expires_in.
  DIR/rs_requests.jsonl: time, method, path, status, verdict, error, scheme (of Authorization),
    token_sha256, known, expired, sub, token_jkt (the token's cnf.jkt), token_x5t (its
    cnf["x5t#S256"]), dpop_headers, jkt (the proof key's thumbprint), proof_jti, proof_htu,
    nonce_sent, nonce_issued, peer_cert_x5t, bound, body_length, chunked.

DIR/policy.json is read on every request (a test may replace it between requests); every key is
optional:
  client_id, client_secret   the client's credentials (no client_secret: public clients allowed)
  client_auth          allow only this method: client_secret_basic | tls_client_auth |
                       self_signed_tls_client_auth | none (default: whichever the request uses)
  tls_client_cn        the CN a tls_client_auth certificate must have (any when unset)
  tls_client_x5t       x5t#S256 (string or list) of the registered self-signed certificates
  require_dpop         a token request without a DPoP proof is refused (false)
  bind_certificate     bind tokens to the TLS client certificate when one is presented (false)
  expires_in           the issued token's lifetime in seconds (3600)
  iat_window           how far a proof's iat may be from now, either way, in seconds (60)
  as_nonce, rs_nonce   the nonce the AS / RS requires ("" or absent: none)
  as_nonce_every_request, rs_nonce_every_request   rotate the nonce on every response (false)
"""
import argparse
import base64
import binascii
import hashlib
import hmac
import json
import math
import os
import re
import secrets
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote_plus, urlsplit

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.x509.oid import NameOID

ALGS = ("ES256", "RS256", "PS256")
ALGS_CHALLENGE = 'algs="%s"' % " ".join(ALGS)
PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")
DEFAULT_PORTS = {"http": 80, "https": 443}
UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

lock = threading.Lock()
issued = {}      # access token -> grant
seen_jti = {}    # (listener, jti) -> time first seen
nonces = {}      # listener -> the nonce required next in rotating mode
state = {}       # paths


class Refused(Exception):
    """A refused request: the OAuth error code, the reason, the HTTP status."""

    def __init__(self, error, reason, status=400):
        Exception.__init__(self, reason)
        self.error, self.reason, self.status = error, reason, status


def fingerprint(value):
    if value is None:
        return None
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(part, what="DPoP proof"):
    if not isinstance(part, str) or not part or not re.fullmatch(r"[A-Za-z0-9_-]+", part):
        raise Refused("invalid_dpop_proof", "%s: malformed base64url" % what)
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise Refused("invalid_dpop_proof", "%s: malformed base64url" % what)


def read_policy():
    try:
        with open(state["policy"]) as f:
            policy = json.load(f)
    except FileNotFoundError:
        return {}
    return policy if isinstance(policy, dict) else {}


def jwk_thumbprint(jwk):
    """RFC 7638: base64url SHA-256 of the required members, lexicographic, no whitespace."""
    if jwk.get("kty") == "EC":
        members = ("crv", "kty", "x", "y")
    elif jwk.get("kty") == "RSA":
        members = ("e", "kty", "n")
    else:
        raise Refused("invalid_dpop_proof", "jwk kty %r not supported" % jwk.get("kty"))
    canonical = json.dumps({name: jwk[name] for name in members}, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode()).digest())


def certificate_thumbprint(der):
    """RFC 8705 §3.1 x5t#S256: base64url SHA-256 of the DER certificate."""
    return b64url(hashlib.sha256(der).digest()) if der else None


# ---------------------------------------------------------------- URIs

def normalize_percent(path):
    def fix(match):
        character = chr(int(match.group(1), 16))
        return character if character in UNRESERVED else "%" + match.group(1).upper()
    return re.sub(r"%([0-9A-Fa-f]{2})", fix, path)


def normalize_uri(uri):
    """scheme://host[:port]/path of an http(s) URI without query and fragment, normalized; None
    when it is not one."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or "@" in parts.netloc:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = "[%s]" % host
    authority = host if port is None or port == DEFAULT_PORTS[scheme] else "%s:%d" % (host, port)
    return "%s://%s%s" % (scheme, authority, normalize_percent(parts.path or "/"))


def request_uri(handler):
    """The URI of the request as this listener sees it (no query, no fragment)."""
    target = handler.path
    if "://" in target.split("?", 1)[0]:  # absolute-form
        return target.split("?", 1)[0].split("#", 1)[0]
    host = handler.headers.get("Host") or "%s:%d" % handler.server.server_address[:2]
    path = target.split("?", 1)[0].split("#", 1)[0]
    return "%s://%s%s" % (handler.server.scheme, host.strip(), path)


# ---------------------------------------------------------------- DPoP proofs

def unique_object(pairs):
    result = {}
    for name, value in pairs:
        if name in result:
            raise ValueError("member %s repeated" % name)
        result[name] = value
    return result


def public_key_of(jwk, alg):
    if not isinstance(jwk, dict):
        raise Refused("invalid_dpop_proof", "jwk missing or not an object")
    private = [name for name in PRIVATE_MEMBERS if name in jwk]
    if private:
        raise Refused("invalid_dpop_proof", "jwk holds private members %s" % ",".join(private))
    kty = jwk.get("kty")
    try:
        if alg == "ES256":
            if kty != "EC" or jwk.get("crv") != "P-256":
                raise Refused("invalid_dpop_proof", "alg ES256 needs an EC P-256 jwk")
            x, y = b64url_decode(jwk.get("x"), "jwk x"), b64url_decode(jwk.get("y"), "jwk y")
            if len(x) != 32 or len(y) != 32:
                raise Refused("invalid_dpop_proof", "jwk x and y must be 32 bytes")
            return ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"),
                                                 ec.SECP256R1()).public_key()
        if kty != "RSA":
            raise Refused("invalid_dpop_proof", "alg %s needs an RSA jwk" % alg)
        n, e = b64url_decode(jwk.get("n"), "jwk n"), b64url_decode(jwk.get("e"), "jwk e")
        key = rsa.RSAPublicNumbers(int.from_bytes(e, "big"), int.from_bytes(n, "big")).public_key()
    except ValueError:
        raise Refused("invalid_dpop_proof", "jwk is not a valid public key")
    if key.key_size < 2048:
        raise Refused("invalid_dpop_proof", "RSA jwk shorter than 2048 bits")
    return key


def verify_signature(key, alg, signature, signing_input):
    try:
        if alg == "ES256":
            if len(signature) != 64:
                raise Refused("invalid_dpop_proof", "bad signature (ES256 wants 64 bytes r||s)")
            der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
            key.verify(der, signing_input, ec.ECDSA(hashes.SHA256()))
        elif alg == "RS256":
            key.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
        else:
            key.verify(signature, signing_input, padding.PSS(padding.MGF1(hashes.SHA256()), 32), hashes.SHA256())
    except InvalidSignature:
        raise Refused("invalid_dpop_proof", "bad signature")


class Proof:
    """What a request's DPoP proof said, filled in as far as it was read (for the log)."""

    def __init__(self):
        self.count, self.jkt, self.jti, self.htu, self.nonce = 0, None, None, None, None


def verify_proof(handler, listener, policy, proof, access_token=None, bound_jkt=None):
    """Checks the request's DPoP proof up to (not including) the nonce; fills `proof`."""
    headers = handler.headers.get_all("DPoP") or []
    proof.count = len(headers)
    if len(headers) != 1:
        raise Refused("invalid_dpop_proof", "%d DPoP headers (want exactly one)" % len(headers))
    parts = headers[0].strip().split(".")
    if len(parts) != 3:
        raise Refused("invalid_dpop_proof", "not a compact JWS")
    try:
        header = json.loads(b64url_decode(parts[0], "header"), object_pairs_hook=unique_object)
        claims = json.loads(b64url_decode(parts[1], "payload"), object_pairs_hook=unique_object)
    except (ValueError, UnicodeDecodeError) as error:
        raise Refused("invalid_dpop_proof", "header or payload is not JSON (%s)" % error)
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise Refused("invalid_dpop_proof", "header or payload is not a JSON object")
    if header.get("typ") != "dpop+jwt":
        raise Refused("invalid_dpop_proof", "typ %r is not dpop+jwt" % header.get("typ"))
    alg = header.get("alg")
    if alg not in ALGS:
        raise Refused("invalid_dpop_proof", "alg %r not accepted" % alg)
    if "crit" in header:
        raise Refused("invalid_dpop_proof", "crit not understood")
    jwk = header.get("jwk")
    key = public_key_of(jwk, alg)
    verify_signature(key, alg, b64url_decode(parts[2], "signature"), (parts[0] + "." + parts[1]).encode())
    proof.jkt = jwk_thumbprint(jwk)
    jti, htm, htu, iat = claims.get("jti"), claims.get("htm"), claims.get("htu"), claims.get("iat")
    proof.jti = jti if isinstance(jti, str) else None
    proof.htu = htu if isinstance(htu, str) else None
    proof.nonce = claims.get("nonce")
    if not isinstance(jti, str) or not jti:
        raise Refused("invalid_dpop_proof", "jti missing or not a string")
    if not isinstance(htm, str) or not isinstance(htu, str):
        raise Refused("invalid_dpop_proof", "htm or htu missing")
    if not isinstance(iat, (int, float)) or isinstance(iat, bool) or not math.isfinite(iat):
        raise Refused("invalid_dpop_proof", "iat missing or not a number")
    if htm != handler.command:
        raise Refused("invalid_dpop_proof", "htm mismatch (%s, request %s)" % (htm, handler.command))
    expected = request_uri(handler)
    if normalize_uri(htu) is None or normalize_uri(htu) != normalize_uri(expected):
        raise Refused("invalid_dpop_proof", "htu mismatch (%s, request %s)" % (htu, expected))
    now = time.time()
    window = float(policy.get("iat_window", 60))
    if abs(now - iat) > window:
        raise Refused("invalid_dpop_proof", "iat outside %g s of now (%+.0f s)" % (window, iat - now))
    with lock:
        if (listener, jti) in seen_jti:
            raise Refused("invalid_dpop_proof", "jti replayed")
        seen_jti[(listener, jti)] = now
        if len(seen_jti) > 100000:  # older ones fail the iat check anyway
            for old in [k for k, t in seen_jti.items() if t < now - 2 * window - 60]:
                del seen_jti[old]
    if access_token is not None:
        ath = claims.get("ath")
        if not isinstance(ath, str):
            raise Refused("invalid_dpop_proof", "ath missing")
        if not hmac.compare_digest(ath, b64url(hashlib.sha256(access_token.encode("ascii", "replace")).digest())):
            raise Refused("invalid_dpop_proof", "ath mismatch")
    if bound_jkt is not None and proof.jkt != bound_jkt:
        raise Refused("invalid_dpop_proof", "jkt mismatch (proof key is not the token's key)")


def take_nonce(listener, policy):
    """(required nonce or None, nonce to send with this response or None); rotating mode
    consumes the current nonce atomically."""
    fixed = policy.get("%s_nonce" % listener) or None
    if not policy.get("%s_nonce_every_request" % listener):
        with lock:
            nonces.pop(listener, None)
        return fixed, None
    with lock:
        required = nonces.get(listener) or fixed or "n-" + secrets.token_urlsafe(12)
        nonces[listener] = issued_next = "n-" + secrets.token_urlsafe(12)
    return required, issued_next


def check_nonce(proof, required, status):
    if required is None:
        return
    if proof.nonce is None:
        raise Refused("use_dpop_nonce", "nonce missing", status)
    if not isinstance(proof.nonce, str) or not hmac.compare_digest(proof.nonce.encode(), required.encode()):
        raise Refused("use_dpop_nonce", "nonce wrong or stale", status)


# ---------------------------------------------------------------- HTTP bodies and certificates

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


def peer_certificate(handler):
    getpeercert = getattr(handler.connection, "getpeercert", None)
    return getpeercert(binary_form=True) if getpeercert else None


def quoted(text):
    return '"%s"' % str(text).replace("\\", "").replace('"', "'")


# ---------------------------------------------------------------- the AS

def authenticate_client(handler, form, policy, der):
    """(client_id, method); Refused invalid_client (401) otherwise."""
    forced = policy.get("client_auth")
    expected_id, expected_secret = policy.get("client_id"), policy.get("client_secret")
    authorization = handler.headers.get("Authorization")

    def refuse(reason):
        raise Refused("invalid_client", reason, 401)

    def check_form_id(client_id):
        if "client_id" in form and form["client_id"] != client_id:
            refuse("form client_id differs")

    if authorization is not None:
        method = "client_secret_basic"
        if forced not in (None, method):
            refuse("client_secret_basic not allowed (client_auth %s)" % forced)
        scheme, _, credentials = authorization.strip().partition(" ")
        if scheme.lower() != "basic":
            refuse("Authorization scheme %s not accepted" % scheme)
        try:
            decoded = base64.b64decode(credentials.strip(), validate=True).decode()
        except (binascii.Error, ValueError):
            refuse("malformed Basic credentials")
        if ":" not in decoded:
            refuse("malformed Basic credentials")
        raw_id, _, raw_secret = decoded.partition(":")
        client_id, secret = unquote_plus(raw_id), unquote_plus(raw_secret)
        if "client_secret" in form:
            refuse("client_secret in the form as well as Basic")
        check_form_id(client_id)
        if client_id != expected_id:
            refuse("wrong client_id")
        if expected_secret is None or not hmac.compare_digest(secret.encode(), str(expected_secret).encode()):
            refuse("wrong client_secret")
        return client_id, method
    if "client_secret" in form:
        refuse("client_secret in the form (only client_secret_basic is supported)")
    if der is not None:
        certificate = x509.load_der_x509_certificate(der)
        self_signed = certificate.issuer == certificate.subject
        method = "self_signed_tls_client_auth" if self_signed else "tls_client_auth"
        if forced not in (None, method):
            refuse("%s not allowed (client_auth %s)" % (method, forced))
        client_id = form.get("client_id")
        if client_id is None or client_id != expected_id:
            refuse("form client_id missing or wrong (%s)" % method)
        if self_signed:
            registered = policy.get("tls_client_x5t") or []
            registered = [registered] if isinstance(registered, str) else registered
            if certificate_thumbprint(der) not in registered:
                refuse("self-signed certificate not registered (tls_client_x5t)")
        elif policy.get("tls_client_cn") is not None:
            names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
            if not names or names[0].value != policy["tls_client_cn"]:
                refuse("certificate CN is not tls_client_cn")
        return client_id, method
    if forced not in (None, "none") or expected_secret is not None:
        refuse("no client authentication")
    client_id = form.get("client_id")
    if client_id is not None and expected_id is not None and client_id != expected_id:
        refuse("wrong client_id")
    return client_id if client_id is not None else expected_id, "none"


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

    def answer(self, status, body, extra=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
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


class ASHandler(Common):
    def handle_any(self):
        der = peer_certificate(self)
        record = {"time": time.time(), "method": self.command, "path": self.path, "status": None,
                  "verdict": None, "error": None, "grant_type": None, "client_id": None, "client_auth": None,
                  "form": {}, "dpop_headers": len(self.headers.get_all("DPoP") or []), "jkt": None,
                  "proof_jti": None, "proof_htu": None, "nonce_sent": None, "nonce_issued": None,
                  "peer_cert_x5t": certificate_thumbprint(der), "token_sha256": None, "token_type": None,
                  "cnf": None, "expires_in": None}
        extra = []
        try:
            body, _ = read_body(self)
        except ValueError:
            self.close_connection = True
            body = None
        policy = read_policy()
        required, issued_nonce = take_nonce("as", policy)
        if issued_nonce:
            extra.append(("DPoP-Nonce", issued_nonce))
        record["nonce_issued"] = issued_nonce
        proof = Proof()
        try:
            if body is None:
                raise Refused("invalid_request", "unreadable body")
            if self.path.split("?", 1)[0] != "/token":
                raise Refused("not_found", "no such path", 404)
            if self.command != "POST":
                extra.append(("Allow", "POST"))
                raise Refused("invalid_request", "POST only", 405)
            content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if content_type != "application/x-www-form-urlencoded":
                raise Refused("invalid_request", "not application/x-www-form-urlencoded")
            form = {}
            for name, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
                if name in form:
                    raise Refused("invalid_request", "parameter %s repeated" % name)
                form[name] = value
            record["form"] = {k: (fingerprint(v) if k == "client_secret" else v) for k, v in form.items()}
            record["grant_type"] = form.get("grant_type")
            client_id, method = authenticate_client(self, form, policy, der)
            record.update(client_id=client_id, client_auth=method)
            if form.get("grant_type") != "client_credentials":
                raise Refused("unsupported_grant_type", "grant_type %r not supported" % form.get("grant_type"))
            cnf = {}
            if record["dpop_headers"]:
                try:
                    verify_proof(self, "as", policy, proof)
                    check_nonce(proof, required, 400)
                finally:
                    record.update(jkt=proof.jkt, proof_jti=proof.jti, proof_htu=proof.htu, nonce_sent=proof.nonce)
                cnf["jkt"] = proof.jkt
            elif policy.get("require_dpop"):
                raise Refused("invalid_dpop_proof", "DPoP proof required")
            if der is not None and policy.get("bind_certificate"):
                cnf["x5t#S256"] = certificate_thumbprint(der)
            expires_in = int(policy.get("expires_in", 3600))
            token = ("dpop-" if "jkt" in cnf else "at-") + secrets.token_urlsafe(32)
            token_type = "DPoP" if "jkt" in cnf else "Bearer"
            now = time.time()
            with lock:
                issued[token] = {"sub": client_id, "client_id": client_id, "scope": form.get("scope"),
                                 "cnf": cnf, "token_type": token_type, "expires_at": now + expires_in}
            document = {"access_token": token, "token_type": token_type, "expires_in": expires_in}
            if form.get("scope") is not None:
                document["scope"] = form["scope"]
            record.update(token_sha256=fingerprint(token), token_type=token_type, cnf=cnf or None,
                          expires_in=expires_in, verdict="ok")
            status = 200
        except Refused as refused:
            status, document = refused.status, {"error": refused.error, "error_description": refused.reason}
            record.update(verdict=refused.reason, error=refused.error)
            if refused.error == "use_dpop_nonce" and not issued_nonce:
                extra.append(("DPoP-Nonce", required))
                record["nonce_issued"] = required
            if refused.error == "invalid_client" and self.headers.get("Authorization") is not None:
                extra.append(("WWW-Authenticate", 'Basic realm="dpop-as"'))
        except (KeyError, TypeError, ValueError) as error:
            status, document = 500, {"error": "server_error", "error_description": type(error).__name__}
            record.update(verdict="server error: %s: %s" % (type(error).__name__, error), error="server_error")
        record["status"] = status
        self.append(state["as_log"], record)
        self.answer(status, document, extra)


# ---------------------------------------------------------------- the RS

class RSHandler(Common):
    def handle_any(self):
        der = peer_certificate(self)
        record = {"time": time.time(), "method": self.command, "path": self.path, "status": None,
                  "verdict": None, "error": None, "scheme": None, "token_sha256": None, "known": False,
                  "expired": False, "sub": None, "token_jkt": None, "token_x5t": None,
                  "dpop_headers": len(self.headers.get_all("DPoP") or []), "jkt": None, "proof_jti": None,
                  "proof_htu": None, "nonce_sent": None, "nonce_issued": None,
                  "peer_cert_x5t": certificate_thumbprint(der), "bound": None, "body_length": None,
                  "chunked": False}
        extra = []
        try:
            body, chunked = read_body(self)
            record.update(body_length=len(body), chunked=chunked)
        except ValueError:
            self.close_connection = True
            body = None
        policy = read_policy()
        required, issued_nonce = take_nonce("rs", policy)
        if issued_nonce:
            extra.append(("DPoP-Nonce", issued_nonce))
        record["nonce_issued"] = issued_nonce
        challenge_scheme = "DPoP"
        proof = Proof()
        try:
            if body is None:
                raise Refused("invalid_request", "unreadable body")
            authorization = self.headers.get("Authorization")
            if authorization is None:
                raise Refused(None, "no Authorization", 401)
            scheme, _, token = authorization.strip().partition(" ")
            token = token.strip()
            record["scheme"] = scheme
            if scheme.lower() not in ("bearer", "dpop") or not token:
                raise Refused("invalid_request", "Authorization is neither Bearer nor DPoP with a token", 401)
            challenge_scheme = "DPoP" if scheme.lower() == "dpop" else "Bearer"
            record["token_sha256"] = fingerprint(token)
            with lock:
                grant = issued.get(token)
            if grant is None:
                raise Refused("invalid_token", "unknown token", 401)
            record.update(sub=grant["sub"], token_jkt=grant["cnf"].get("jkt"), token_x5t=grant["cnf"].get("x5t#S256"))
            if grant["expires_at"] <= time.time():
                record["expired"] = True
                raise Refused("invalid_token", "expired token", 401)
            record["known"] = True
            bound = []
            if "jkt" in grant["cnf"]:
                if scheme.lower() != "dpop":
                    challenge_scheme = "DPoP"
                    raise Refused("invalid_token", "DPoP-bound token used as Bearer", 401)
                try:
                    verify_proof(self, "rs", policy, proof, access_token=token, bound_jkt=grant["cnf"]["jkt"])
                    check_nonce(proof, required, 401)
                except Refused as refused:
                    refused.status = 401  # RFC 9449 §7.1: a protected resource answers 401
                    raise
                finally:
                    record.update(jkt=proof.jkt, proof_jti=proof.jti, proof_htu=proof.htu, nonce_sent=proof.nonce)
                bound.append("dpop")
            elif scheme.lower() == "dpop":
                raise Refused("invalid_token", "token is not DPoP-bound but presented with the DPoP scheme", 401)
            if "x5t#S256" in grant["cnf"]:
                if der is None:
                    raise Refused("invalid_token", "certificate-bound token without a client certificate", 401)
                if certificate_thumbprint(der) != grant["cnf"]["x5t#S256"]:
                    raise Refused("invalid_token", "certificate x5t#S256 mismatch", 401)
                bound.append("mtls")
            record["bound"] = "+".join(bound) or "bearer"
            status = 200
            document = {"sub": grant["sub"], "client_id": grant["client_id"], "scope": grant["scope"],
                        "method": self.command, "path": self.path, "body_length": len(body),
                        "bound": record["bound"]}
            record["verdict"] = "ok"
        except Refused as refused:
            status = refused.status
            document = {"error": refused.error or "unauthorized", "error_description": refused.reason}
            record.update(verdict=refused.reason, error=refused.error)
            if status == 401:
                params = []
                if refused.error:
                    params += ["error=" + quoted(refused.error), "error_description=" + quoted(refused.reason)]
                if challenge_scheme == "DPoP":
                    params.append(ALGS_CHALLENGE)
                extra.append(("WWW-Authenticate", challenge_scheme + (" " + ", ".join(params) if params else "")))
            if refused.error == "use_dpop_nonce" and not issued_nonce:
                extra.append(("DPoP-Nonce", required))
                record["nonce_issued"] = required
        except (KeyError, TypeError, ValueError) as error:
            status, document = 500, {"error": "server_error", "error_description": type(error).__name__}
            record.update(verdict="server error: %s: %s" % (type(error).__name__, error), error="server_error")
        record["status"] = status
        self.append(state["rs_log"], record)
        self.answer(status, document, extra)


# ---------------------------------------------------------------- servers

class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler, context):
        ThreadingHTTPServer.__init__(self, ("127.0.0.1", 0), handler)
        self.context = context
        self.scheme = "https" if context else "http"

    def finish_request(self, request, client_address):
        if self.context is None:
            return ThreadingHTTPServer.finish_request(self, request, client_address)
        # The handshake runs here, in this connection's thread, not in the accept loop.
        request.settimeout(10)
        try:
            wrapped = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return  # shutdown_request closes the socket
        try:
            wrapped.settimeout(None)
            self.RequestHandlerClass(wrapped, client_address, self)
        finally:
            wrapped.close()


def tls_context(args):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.tls_cert, args.tls_key)
    if args.client_ca:
        context.load_verify_locations(args.client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--client-ca")
    parser.add_argument("--tls-on", choices=("both", "as", "rs"), default="both")
    args = parser.parse_args()
    if bool(args.tls_cert) != bool(args.tls_key) or (args.client_ca and not args.tls_cert):
        parser.error("--tls-cert and --tls-key go together; --client-ca needs them")
    directory = args.dir
    state.update(policy=os.path.join(directory, "policy.json"),
                 as_log=os.path.join(directory, "as_requests.jsonl"),
                 rs_log=os.path.join(directory, "rs_requests.jsonl"))
    as_server = Server(ASHandler, tls_context(args) if args.tls_cert and args.tls_on in ("both", "as") else None)
    rs_server = Server(RSHandler, tls_context(args) if args.tls_cert and args.tls_on in ("both", "rs") else None)
    temporary = os.path.join(directory, "backend_port.tmp")
    with open(temporary, "w") as f:
        f.write("%d\n" % rs_server.server_address[1])
    os.replace(temporary, os.path.join(directory, "backend_port"))
    threading.Thread(target=rs_server.serve_forever, daemon=True).start()
    print("PORT %d" % as_server.server_address[1], flush=True)
    as_server.serve_forever()


if __name__ == "__main__":
    main()
