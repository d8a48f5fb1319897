#!/usr/bin/env python3
"""Self-test for dpop_server.py: the authorization server issues DPoP- and certificate-bound tokens
only for good proofs and credentials, the resource server accepts only correctly presented bound
tokens, and no log holds a raw token, secret or proof.

    python3 Tests/ProxyTests/Fixtures/dpop_server_selftest.py

Acts as the client: builds real DPoP proofs here with `cryptography` (EC P-256 ES256, RSA RS256 and
PS256), independently of the fixture, and generates a CA, a server certificate for 127.0.0.1 and
client certificates (two CA-issued, one self-signed) the same way. Starts the fixture twice (same
interpreter, 127.0.0.1 only): once over plain HTTP, once over HTTPS asking for client
certificates. Sends requests with http.client, rewriting the policy file between cases. Prints
"PASS name" / "FAIL name: why" per case and a summary ("OK: N passed ..."); exits 1 on any
failure. Every request has a 5 s timeout and the whole run is bounded by a 60 s alarm.
"""
import base64
import datetime
import hashlib
import http.client
import ipaddress
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from urllib.parse import quote_plus, urlencode

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "dpop_server.py")
CLIENT_ID, CLIENT_SECRET = "app:1", "s3cret +%&:x"
FORM = {"grant_type": "client_credentials", "scope": "read"}

results = []
raw_secrets = set()  # every raw token, secret and proof used: none may appear in a log


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sha256_b64url(data):
    return b64url(hashlib.sha256(data).digest())


def fp(value):
    return hashlib.sha256(value.encode()).hexdigest()[:16]


# ---------------------------------------------------------------- keys and proofs (client side)

class Key:
    """A DPoP key on the client side: its public JWK, RFC 7638 thumbprint and a signer."""

    def __init__(self, kind="EC"):
        if kind == "EC":
            self.private = ec.generate_private_key(ec.SECP256R1())
            numbers = self.private.public_key().public_numbers()
            self.jwk = {"kty": "EC", "crv": "P-256", "x": b64url(numbers.x.to_bytes(32, "big")),
                        "y": b64url(numbers.y.to_bytes(32, "big"))}
            self.alg = "ES256"
            required = '{"crv":"P-256","kty":"EC","x":"%s","y":"%s"}' % (self.jwk["x"], self.jwk["y"])
        else:
            self.private = rsa.generate_private_key(65537, 2048)
            numbers = self.private.public_key().public_numbers()
            self.jwk = {"kty": "RSA", "n": b64url(numbers.n.to_bytes(256, "big")),
                        "e": b64url(numbers.e.to_bytes(3, "big"))}
            self.alg = "RS256"
            required = '{"e":"%s","kty":"RSA","n":"%s"}' % (self.jwk["e"], self.jwk["n"])
        self.thumbprint = sha256_b64url(required.encode())

    def sign(self, data, alg):
        if alg == "ES256":
            r, s = decode_dss_signature(self.private.sign(data, ec.ECDSA(hashes.SHA256())))
            return r.to_bytes(32, "big") + s.to_bytes(32, "big")
        if alg == "RS256":
            return self.private.sign(data, padding.PKCS1v15(), hashes.SHA256())
        if alg == "PS256":
            return self.private.sign(data, padding.PSS(padding.MGF1(hashes.SHA256()), 32), hashes.SHA256())
        return b"\0" * 32


def proof(key, htm, htu, token=None, nonce=None, iat=None, jti=None, alg=None, header=None, claims=None,
          drop=(), signer=None, corrupt=False):
    """A DPoP proof (RFC 9449 §4.2); header / claims override members, drop removes claims,
    signer signs with another key than the jwk's, corrupt flips a signature bit."""
    alg = alg or key.alg
    head = {"typ": "dpop+jwt", "alg": alg, "jwk": key.jwk}
    head.update(header or {})
    body = {"jti": b64url(os.urandom(12)) if jti is None else jti, "htm": htm, "htu": htu,
            "iat": int(time.time()) if iat is None else iat}
    if token is not None:
        body["ath"] = sha256_b64url(token.encode())
    if nonce is not None:
        body["nonce"] = nonce
    body.update(claims or {})
    for name in drop:
        body.pop(name, None)
    signing_input = b64url(json.dumps(head).encode()) + "." + b64url(json.dumps(body).encode())
    signature = (signer or key).sign(signing_input.encode(), alg)
    if corrupt:
        signature = bytes([signature[0] ^ 1]) + signature[1:]
    jws = signing_input + "." + (b64url(signature) if alg != "none" else "")
    raw_secrets.add(jws)
    return jws


# ---------------------------------------------------------------- certificates

def certificate(subject_cn, key, issuer_cert=None, issuer_key=None, ca=False, server=False):
    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject_cn)])
    builder = (x509.CertificateBuilder().subject_name(name)
               .issuer_name(issuer_cert.subject if issuer_cert else name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                   (issuer_key or key).public_key()), critical=False)
               .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False,
                                            key_encipherment=False, data_encipherment=False, key_agreement=False,
                                            key_cert_sign=ca or issuer_cert is None, crl_sign=ca, encipher_only=False,
                                            decipher_only=False), critical=True))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
    return builder.sign(issuer_key or key, hashes.SHA256())


def write_pki(directory):
    """Paths and thumbprints of a CA, a server certificate and three client certificates."""
    def pem_key(key):
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    def save(name, data):
        path = os.path.join(directory, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = certificate("dpop selftest CA", ca_key, ca=True)
    pki = {"ca": save("ca.pem", ca.public_bytes(serialization.Encoding.PEM))}
    server_key = ec.generate_private_key(ec.SECP256R1())
    pki["server_cert"] = save("server.pem", certificate("127.0.0.1", server_key, ca, ca_key, server=True)
                              .public_bytes(serialization.Encoding.PEM))
    pki["server_key"] = save("server.key", pem_key(server_key))
    bundle = ca.public_bytes(serialization.Encoding.PEM)
    for name in ("client1", "client2", "selfsigned"):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = certificate(name, key) if name == "selfsigned" else certificate(name, key, ca, ca_key)
        pem = cert.public_bytes(serialization.Encoding.PEM)
        if name == "selfsigned":
            bundle += pem  # a self-signed client certificate is its own trust anchor
        pki[name] = (save(name + ".pem", pem), save(name + ".key", pem_key(key)),
                     sha256_b64url(cert.public_bytes(serialization.Encoding.DER)))
    pki["client_ca"] = save("client_ca_bundle.pem", bundle)
    return pki


# ---------------------------------------------------------------- the fixture and HTTP

class Fixture:
    def __init__(self, directory, tls=None):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self.set_policy({})
        command = [sys.executable, SERVER, "--dir", directory]
        self.context = None
        if tls:
            command += ["--tls-cert", tls["server_cert"], "--tls-key", tls["server_key"], "--client-ca", tls["client_ca"]]
            self.pki = tls
        self.scheme = "https" if tls else "http"
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.process.kill()
            raise SystemExit("server did not start: %r %s" % (line, self.process.stderr.read()))
        self.port = int(line.split()[1])
        with open(os.path.join(directory, "backend_port")) as f:
            self.rs_port = int(f.read())
        self.token_url = "%s://127.0.0.1:%d/token" % (self.scheme, self.port)

    def rs_url(self, path):
        return "%s://127.0.0.1:%d%s" % (self.scheme, self.rs_port, path)

    def client_context(self, cert=None):
        context = ssl.create_default_context(cafile=self.pki["ca"])
        if cert:
            context.load_cert_chain(self.pki[cert][0], self.pki[cert][1])
        return context

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


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body
        try:
            self.doc = json.loads(body)
        except ValueError:
            self.doc = {}
        if not isinstance(self.doc, dict):
            self.doc = {}

    def header(self, name):
        values = self.headers.get(name.lower(), [])
        return values[0] if len(values) == 1 else (values or None)

    def __repr__(self):
        return "%s %s %s" % (self.status, {k: v for k, v in self.headers.items()
                                           if k in ("www-authenticate", "dpop-nonce")}, self.doc)


def request(fx, port, method, path, headers=(), body=None, chunked=False, cert=None):
    """An Answer; headers is a list of (name, value) pairs (a name may repeat)."""
    if fx.context is None and fx.scheme == "https":
        connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=fx.client_context(cert))
    else:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        names = {name.lower() for name, _ in headers}
        connection.putrequest(method, path, skip_host="host" in names, skip_accept_encoding=True)
        for name, value in headers:
            connection.putheader(name, value)
        if chunked:
            connection.putheader("Transfer-Encoding", "chunked")
            connection.endheaders()
            for piece in body:
                connection.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            connection.send(b"0\r\n\r\n")
        else:
            data = body.encode() if isinstance(body, str) else body
            if data is not None or method in ("POST", "PUT"):
                connection.putheader("Content-Length", str(len(data or b"")))
            connection.endheaders(data)
        response = connection.getresponse()
        received = {}
        for name, value in response.getheaders():
            received.setdefault(name.lower(), []).append(value)
        return Answer(response.status, received, response.read())
    except (OSError, http.client.HTTPException) as error:
        return Answer(None, {}, ("%s: %s" % (type(error).__name__, error)).encode())
    finally:
        connection.close()


def token_request(fx, dpop=None, form=None, basic=(CLIENT_ID, CLIENT_SECRET), headers=(), cert=None):
    all_headers = [("Content-Type", "application/x-www-form-urlencoded")]
    if basic:
        pair = "%s:%s" % (quote_plus(basic[0]), quote_plus(basic[1]))
        all_headers.append(("Authorization", "Basic " + base64.b64encode(pair.encode()).decode()))
    for value in ([dpop] if isinstance(dpop, str) else dpop or []):
        all_headers.append(("DPoP", value))
    all_headers += list(headers)
    answer = request(fx, fx.port, "POST", "/token", all_headers, urlencode(form or FORM), cert=cert)
    if answer.doc.get("access_token"):
        raw_secrets.add(answer.doc["access_token"])
    return answer


def dpop_token(fx, key, cert=None, basic=(CLIENT_ID, CLIENT_SECRET), nonce=None, form=None):
    answer = token_request(fx, proof(key, "POST", fx.token_url, nonce=nonce), form=form, basic=basic, cert=cert)
    return answer.doc.get("access_token"), answer


def rs(fx, method, path, token, key=None, scheme="DPoP", dpop=None, body=None, chunked=False, cert=None,
       headers=(), **proof_args):
    """A resource request; with `key` and no `dpop`, a correct proof for it is built."""
    all_headers = list(headers)
    if token is not None:
        all_headers.append(("Authorization", "%s %s" % (scheme, token)))
    if dpop is None and key is not None:
        dpop = proof(key, proof_args.pop("htm", method), proof_args.pop("htu", fx.rs_url(path.split("?")[0])),
                     token=proof_args.pop("ath_token", token), **proof_args)
    for value in ([dpop] if isinstance(dpop, str) else dpop or []):
        all_headers.append(("DPoP", value))
    return request(fx, fx.rs_port, method, path, all_headers, body, chunked, cert)


def record(name, ok, detail=""):
    results.append(bool(ok))
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, detail)), flush=True)


def expect_as_error(name, answer, error, reason=None, status=400):
    good = (answer.status == status and answer.doc.get("error") == error
            and (reason is None or reason in answer.doc.get("error_description", "")))
    record(name, good, "%r (want %d %s %r)" % (answer, status, error, reason))


def expect_rs_error(name, answer, error, reason=None, scheme="DPoP"):
    challenge = answer.header("WWW-Authenticate") or ""
    good = (answer.status == 401 and answer.doc.get("error") == error
            and challenge.startswith(scheme + " ") and ('error="%s"' % error) in challenge
            and (reason is None or reason in answer.doc.get("error_description", "")))
    record(name, good, "%r (want 401 %s %r)" % (answer, error, reason))


def last(fx, name):
    entries = fx.log(name)
    return entries[-1] if entries else {}


# ---------------------------------------------------------------- the cases (HTTP)

def thumbprint_cases():
    sys.path.insert(0, HERE)
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    import dpop_server
    # RFC 7638 §3.1's example key and thumbprint.
    n = ("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3o"
         "knjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZH"
         "zu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kE"
         "gU8awapJzKnqDKgw")
    got = dpop_server.jwk_thumbprint({"kty": "RSA", "n": n, "e": "AQAB", "alg": "RS256", "kid": "2011-04-29"})
    record("RFC 7638 §3.1 example thumbprint", got == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", got)
    key = Key()
    record("EC thumbprint agrees with the client's", dpop_server.jwk_thumbprint(dict(key.jwk)) == key.thumbprint)
    norm = dpop_server.normalize_uri
    record("htu normalization", norm("HTTPS://Example.TEST:443/a%2fb%7E?q#f") == "https://example.test/a%2Fb~"
           and norm("http://h:80") == "http://h/" and norm("http://h:8080/x") == "http://h:8080/x"
           and norm("ftp://h/x") is None and norm("http://u@h/x") is None, norm("HTTPS://Example.TEST:443/a%2fb%7E?q#f"))


def dpop_cases(fx, rsa_key):
    base = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}
    raw_secrets.add(CLIENT_SECRET)
    fx.set_policy(base)
    key, other = Key(), Key()

    token, answer = dpop_token(fx, key)
    record("AS: good proof -> DPoP token", answer.status == 200 and token and answer.doc.get("token_type") == "DPoP"
           and answer.doc.get("expires_in") == 3600 and answer.doc.get("scope") == "read", answer)
    entry = last(fx, "as_requests.jsonl")
    record("AS log: cnf.jkt is the RFC 7638 thumbprint", entry.get("verdict") == "ok" and entry.get("jkt") == key.thumbprint
           and entry.get("cnf") == {"jkt": key.thumbprint} and entry.get("token_sha256") == fp(token)
           and entry.get("client_auth") == "client_secret_basic" and entry.get("proof_jti")
           and entry.get("form", {}).get("grant_type") == "client_credentials", entry)

    answer = rs(fx, "GET", "/items?x=1", token, key)
    record("RS: correct proof accepted", answer.status == 200 and answer.doc.get("bound") == "dpop"
           and answer.doc.get("sub") == CLIENT_ID and answer.doc.get("method") == "GET"
           and answer.doc.get("path") == "/items?x=1" and answer.doc.get("body_length") == 0, answer)
    entry = last(fx, "rs_requests.jsonl")
    record("RS log line", entry.get("verdict") == "ok" and entry.get("jkt") == key.thumbprint
           and entry.get("token_jkt") == key.thumbprint and entry.get("token_sha256") == fp(token)
           and entry.get("scheme") == "DPoP" and entry.get("proof_jti") and entry.get("peer_cert_x5t") is None
           and entry.get("nonce_sent") is None and entry.get("bound") == "dpop", entry)
    answer = rs(fx, "PUT", "/upload", token, key, body=b"x" * 1000)
    record("RS: Content-Length body counted", answer.status == 200 and answer.doc.get("body_length") == 1000, answer)
    answer = rs(fx, "POST", "/upload", token, key, body=[b"abc", b"x" * 500], chunked=True)
    record("RS: chunked body counted", answer.status == 200 and answer.doc.get("body_length") == 503
           and last(fx, "rs_requests.jsonl").get("chunked") is True, answer)
    answer = rs(fx, "PROPFIND", "/odd", token, key)
    record("RS: any method", answer.status == 200 and answer.doc.get("method") == "PROPFIND", answer)
    answer = rs(fx, "GET", "/q", token, key, htu=fx.rs_url("/q") + "?ignored=1#frag")
    record("RS: htu query and fragment ignored", answer.status == 200, answer)
    answer = rs(fx, "GET", "/Host", token, key, htu="http://Example.TEST/Host", headers=[("Host", "example.test:80")])
    record("RS: htu against the Host header, default port and case normalized", answer.status == 200, answer)

    # broken proofs at the RS
    expect_rs_error("RS: bad signature", rs(fx, "GET", "/r", token, key, corrupt=True), "invalid_dpop_proof",
                    "bad signature")
    expect_rs_error("RS: signed by another key than the jwk", rs(fx, "GET", "/r", token, key, signer=other),
                    "invalid_dpop_proof", "bad signature")
    expect_rs_error("RS: wrong htm", rs(fx, "GET", "/r", token, key, htm="POST"), "invalid_dpop_proof", "htm")
    expect_rs_error("RS: wrong htu path", rs(fx, "GET", "/r", token, key, htu=fx.rs_url("/other")),
                    "invalid_dpop_proof", "htu")
    expect_rs_error("RS: wrong htu port", rs(fx, "GET", "/r", token, key, htu="http://127.0.0.1:%d/r" % fx.port),
                    "invalid_dpop_proof", "htu")
    expect_rs_error("RS: wrong htu scheme", rs(fx, "GET", "/r", token, key, htu="https://127.0.0.1:%d/r" % fx.rs_port),
                    "invalid_dpop_proof", "htu")
    expect_rs_error("RS: old iat", rs(fx, "GET", "/r", token, key, iat=int(time.time()) - 120),
                    "invalid_dpop_proof", "iat")
    expect_rs_error("RS: future iat", rs(fx, "GET", "/r", token, key, iat=int(time.time()) + 120),
                    "invalid_dpop_proof", "iat")
    good = proof(key, "GET", fx.rs_url("/r"), token=token)
    first, replay = rs(fx, "GET", "/r", token, dpop=good), rs(fx, "GET", "/r", token, dpop=good)
    record("RS: a proof accepted once", first.status == 200, first)
    expect_rs_error("RS: replayed jti", replay, "invalid_dpop_proof", "jti replayed")
    expect_rs_error("RS: wrong ath", rs(fx, "GET", "/r", token, key, ath_token=token + "x"), "invalid_dpop_proof", "ath")
    expect_rs_error("RS: ath missing", rs(fx, "GET", "/r", token, key, drop=("ath",)), "invalid_dpop_proof", "ath")
    expect_rs_error("RS: other key's proof", rs(fx, "GET", "/r", token, other), "invalid_dpop_proof", "jkt mismatch")
    expect_rs_error("RS: no DPoP header", rs(fx, "GET", "/r", token), "invalid_dpop_proof", "0 DPoP headers")
    two = [proof(key, "GET", fx.rs_url("/r"), token=token), proof(key, "GET", fx.rs_url("/r"), token=token)]
    expect_rs_error("RS: two DPoP headers", rs(fx, "GET", "/r", token, dpop=two), "invalid_dpop_proof", "2 DPoP headers")
    expect_rs_error("RS: typ JWT", rs(fx, "GET", "/r", token, key, header={"typ": "JWT"}), "invalid_dpop_proof", "typ")
    expect_rs_error("RS: alg none", rs(fx, "GET", "/r", token, key, alg="none"), "invalid_dpop_proof", "alg")
    expect_rs_error("RS: alg HS256", rs(fx, "GET", "/r", token, key, alg="HS256"), "invalid_dpop_proof", "alg")
    private_jwk = dict(key.jwk, d=b64url(key.private.private_numbers().private_value.to_bytes(32, "big")))
    expect_rs_error("RS: jwk with a private member", rs(fx, "GET", "/r", token, key, header={"jwk": private_jwk}),
                    "invalid_dpop_proof", "private")
    expect_rs_error("RS: no jwk", rs(fx, "GET", "/r", token, key, header={"jwk": None}), "invalid_dpop_proof", "jwk")
    expect_rs_error("RS: ES256 with an RSA jwk", rs(fx, "GET", "/r", token, rsa_key, alg="ES256", signer=other),
                    "invalid_dpop_proof", "EC P-256")
    expect_rs_error("RS: jti missing", rs(fx, "GET", "/r", token, key, drop=("jti",)), "invalid_dpop_proof", "jti")
    expect_rs_error("RS: not a JWS", rs(fx, "GET", "/r", token, dpop="not.a-jws"), "invalid_dpop_proof")
    expect_rs_error("RS: Bearer use of a DPoP token", rs(fx, "GET", "/r", token, key, scheme="Bearer"),
                    "invalid_token", "used as Bearer")
    expect_rs_error("RS: unknown token", rs(fx, "GET", "/r", "dpop-not-issued", key), "invalid_token", "unknown")
    answer = rs(fx, "GET", "/r", None)
    record("RS: no Authorization -> 401 DPoP challenge", answer.status == 401
           and answer.header("WWW-Authenticate") == 'DPoP algs="ES256 RS256 PS256"', answer)
    answer = rs(fx, "GET", "/after", token, key)
    record("RS: still accepts correct proofs after the refusals", answer.status == 200, answer)

    # broken proofs at the AS
    expect_as_error("AS: bad signature", token_request(fx, proof(key, "POST", fx.token_url, corrupt=True)),
                    "invalid_dpop_proof", "bad signature")
    expect_as_error("AS: wrong htm", token_request(fx, proof(key, "GET", fx.token_url)), "invalid_dpop_proof", "htm")
    expect_as_error("AS: wrong htu", token_request(fx, proof(key, "POST", fx.rs_url("/token"))), "invalid_dpop_proof",
                    "htu")
    expect_as_error("AS: old iat", token_request(fx, proof(key, "POST", fx.token_url, iat=int(time.time()) - 61.5)),
                    "invalid_dpop_proof", "iat")
    answer = token_request(fx, proof(key, "POST", "http://AS.example:80/token"), headers=[("Host", "as.example")])
    record("AS: htu as the client addressed it (Host), normalized", answer.status == 200, answer)
    once = proof(key, "POST", fx.token_url)
    first, again = token_request(fx, once), token_request(fx, once)
    record("AS: proof accepted once", first.status == 200, first)
    expect_as_error("AS: replayed jti", again, "invalid_dpop_proof", "jti replayed")
    expect_as_error("AS: alg none", token_request(fx, proof(key, "POST", fx.token_url, alg="none")),
                    "invalid_dpop_proof", "alg")
    expect_as_error("AS: two DPoP headers", token_request(fx, [proof(key, "POST", fx.token_url),
                                                               proof(key, "POST", fx.token_url)]),
                    "invalid_dpop_proof", "2 DPoP headers")
    expect_as_error("AS: wrong client secret", token_request(fx, proof(key, "POST", fx.token_url),
                                                             basic=(CLIENT_ID, "wrong")), "invalid_client", status=401)

    # other algorithms
    for alg in ("RS256", "PS256"):
        rsa_token, answer = token_request(fx, proof(rsa_key, "POST", fx.token_url, alg=alg)).doc.get("access_token"), None
        answer = rs(fx, "DELETE", "/rsa", rsa_token, rsa_key, alg=alg) if rsa_token else None
        record("%s: token and RS accepted" % alg, rsa_token and answer.status == 200
               and last(fx, "rs_requests.jsonl").get("jkt") == rsa_key.thumbprint, answer)

    # Bearer tokens
    answer = token_request(fx)
    bearer = answer.doc.get("access_token")
    record("AS: no DPoP -> Bearer token", answer.status == 200 and answer.doc.get("token_type") == "Bearer"
           and last(fx, "as_requests.jsonl").get("cnf") is None, answer)
    answer = rs(fx, "GET", "/b", bearer, scheme="Bearer")
    record("RS: Bearer token accepted as Bearer", answer.status == 200 and answer.doc.get("bound") == "bearer", answer)
    expect_rs_error("RS: Bearer token with the DPoP scheme", rs(fx, "GET", "/b", bearer, key), "invalid_token",
                    "not DPoP-bound")
    fx.set_policy(dict(base, require_dpop=True))
    expect_as_error("AS: require_dpop without a proof", token_request(fx), "invalid_dpop_proof", "required")

    # expiry
    fx.set_policy(dict(base, expires_in=1))
    short, answer = dpop_token(fx, key)
    record("AS: expires_in from the policy", answer.doc.get("expires_in") == 1, answer)
    time.sleep(1.1)
    expect_rs_error("RS: expired token", rs(fx, "GET", "/r", short, key), "invalid_token", "expired")


def nonce_cases(fx):
    base = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}
    key = Key()
    fx.set_policy(dict(base, as_nonce="as-nonce-1"))
    _, answer = dpop_token(fx, key)
    record("AS nonce: missing -> 400 use_dpop_nonce + DPoP-Nonce", answer.status == 400
           and answer.doc.get("error") == "use_dpop_nonce" and answer.header("DPoP-Nonce") == "as-nonce-1", answer)
    entry = last(fx, "as_requests.jsonl")
    record("AS nonce: logged", entry.get("error") == "use_dpop_nonce" and entry.get("nonce_issued") == "as-nonce-1"
           and entry.get("nonce_sent") is None, entry)
    _, answer = dpop_token(fx, key, nonce="as-nonce-0")
    record("AS nonce: wrong -> use_dpop_nonce", answer.status == 400 and answer.doc.get("error") == "use_dpop_nonce"
           and answer.header("DPoP-Nonce") == "as-nonce-1", answer)
    token, answer = dpop_token(fx, key, nonce="as-nonce-1")
    record("AS nonce: with it -> DPoP token", answer.status == 200 and answer.doc.get("token_type") == "DPoP"
           and last(fx, "as_requests.jsonl").get("nonce_sent") == "as-nonce-1", answer)

    fx.set_policy(dict(base, rs_nonce="rs-nonce-1"))
    answer = rs(fx, "GET", "/n", token, key)
    record("RS nonce: missing -> 401 use_dpop_nonce + DPoP-Nonce", answer.status == 401
           and answer.header("WWW-Authenticate", ).startswith('DPoP error="use_dpop_nonce"')
           and answer.header("DPoP-Nonce") == "rs-nonce-1", answer)
    expect_rs_error("RS nonce: wrong", rs(fx, "GET", "/n", token, key, nonce="rs-nonce-0"), "use_dpop_nonce")
    answer = rs(fx, "GET", "/n", token, key, nonce="rs-nonce-1")
    record("RS nonce: with it -> 200", answer.status == 200 and last(fx, "rs_requests.jsonl").get("nonce_sent")
           == "rs-nonce-1", answer)
    answer = rs(fx, "GET", "/n", token, key, nonce="rs-nonce-1")
    record("RS nonce: fixed nonce reusable", answer.status == 200, answer)
    fx.set_policy(dict(base, rs_nonce=""))
    record("RS nonce: \"\" means none", rs(fx, "GET", "/n", token, key).status == 200)

    fx.set_policy(dict(base, rs_nonce_every_request=True))
    answer = rs(fx, "GET", "/rot", token, key)
    n1 = answer.header("DPoP-Nonce")
    record("rotating: no nonce -> use_dpop_nonce + a nonce", answer.status == 401 and answer.doc.get("error")
           == "use_dpop_nonce" and isinstance(n1, str) and n1, answer)
    answer = rs(fx, "GET", "/rot", token, key, nonce=n1)
    n2 = answer.header("DPoP-Nonce")
    record("rotating: with it -> 200 and a fresh nonce", answer.status == 200 and isinstance(n2, str) and n2 != n1,
           answer)
    answer = rs(fx, "GET", "/rot", token, key, nonce=n1)
    n3 = answer.header("DPoP-Nonce")
    record("rotating: an old nonce refused with a new one", answer.status == 401 and answer.doc.get("error")
           == "use_dpop_nonce" and isinstance(n3, str) and n3 not in (n1, n2), answer)
    answer = rs(fx, "GET", "/rot", token, key, nonce=n3)
    n4 = answer.header("DPoP-Nonce")
    record("rotating: the newest accepted", answer.status == 200 and n4 not in (n1, n2, n3), answer)
    answer = rs(fx, "GET", "/rot", token, key, nonce=n4)
    record("rotating: every response's nonce works once more", answer.status == 200, answer)
    entry = last(fx, "rs_requests.jsonl")
    record("rotating: logged", entry.get("nonce_sent") == n4 and entry.get("nonce_issued") == answer.header("DPoP-Nonce"),
           entry)
    fx.set_policy(dict(base, as_nonce_every_request=True))
    _, answer = dpop_token(fx, key)
    n1 = answer.header("DPoP-Nonce")
    _, answer = dpop_token(fx, key, nonce=n1)
    record("AS rotating nonce", answer.status == 200 and answer.header("DPoP-Nonce") not in (None, n1), answer)


# ---------------------------------------------------------------- the cases (HTTPS, client certificates)

def mtls_cases(fx):
    pki = fx.pki
    x5t1, x5t2, x5t_self = pki["client1"][2], pki["client2"][2], pki["selfsigned"][2]
    fx.set_policy({"client_id": CLIENT_ID, "bind_certificate": True, "client_auth": "tls_client_auth"})
    form = dict(FORM, client_id=CLIENT_ID)
    answer = token_request(fx, form=form, basic=None, cert="client1")
    token = answer.doc.get("access_token")
    entry = last(fx, "as_requests.jsonl")
    record("mTLS AS: tls_client_auth -> certificate-bound Bearer token", answer.status == 200
           and answer.doc.get("token_type") == "Bearer" and entry.get("client_auth") == "tls_client_auth"
           and entry.get("cnf") == {"x5t#S256": x5t1} and entry.get("peer_cert_x5t") == x5t1, "%r %s" % (answer, entry))
    answer = rs(fx, "GET", "/m", token, scheme="Bearer", cert="client1")
    record("mTLS RS: the same certificate -> 200 mtls", answer.status == 200 and answer.doc.get("bound") == "mtls"
           and last(fx, "rs_requests.jsonl").get("peer_cert_x5t") == x5t1, answer)
    expect_rs_error("mTLS RS: a second certificate refused", rs(fx, "GET", "/m", token, scheme="Bearer", cert="client2"),
                    "invalid_token", "x5t#S256 mismatch", scheme="Bearer")
    expect_rs_error("mTLS RS: no certificate refused", rs(fx, "GET", "/m", token, scheme="Bearer"),
                    "invalid_token", "without a client certificate", scheme="Bearer")
    expect_as_error("mTLS AS: no certificate, no secret", token_request(fx, form=form, basic=None), "invalid_client",
                    status=401)
    expect_as_error("mTLS AS: wrong client_id", token_request(fx, form=dict(form, client_id="app:2"), basic=None,
                                                              cert="client1"), "invalid_client", status=401)
    expect_as_error("mTLS AS: client_auth tls_client_auth refuses a self-signed certificate",
                    token_request(fx, form=form, basic=None, cert="selfsigned"), "invalid_client", "not allowed",
                    status=401)
    fx.set_policy({"client_id": CLIENT_ID, "bind_certificate": True})
    answer = token_request(fx, form=form, basic=None)
    record("public client (no client_secret in the policy): Bearer token, no cnf", answer.status == 200
           and last(fx, "as_requests.jsonl").get("client_auth") == "none"
           and last(fx, "as_requests.jsonl").get("cnf") is None, answer)
    fx.set_policy({"client_id": CLIENT_ID, "bind_certificate": True, "tls_client_cn": "client2"})
    expect_as_error("mTLS AS: tls_client_cn", token_request(fx, form=form, basic=None, cert="client1"),
                    "invalid_client", "CN", status=401)
    fx.set_policy({"client_id": CLIENT_ID})
    answer = token_request(fx, form=form, basic=None, cert="client1")
    record("mTLS AS: without bind_certificate no cnf", answer.status == 200
           and last(fx, "as_requests.jsonl").get("cnf") is None, answer)

    # self-signed
    fx.set_policy({"client_id": CLIENT_ID, "bind_certificate": True})
    expect_as_error("self-signed: unregistered refused", token_request(fx, form=form, basic=None, cert="selfsigned"),
                    "invalid_client", "not registered", status=401)
    fx.set_policy({"client_id": CLIENT_ID, "bind_certificate": True, "tls_client_x5t": [x5t_self]})
    answer = token_request(fx, form=form, basic=None, cert="selfsigned")
    token = answer.doc.get("access_token")
    record("self-signed: registered -> bound token", answer.status == 200
           and last(fx, "as_requests.jsonl").get("client_auth") == "self_signed_tls_client_auth"
           and last(fx, "as_requests.jsonl").get("cnf") == {"x5t#S256": x5t_self}, answer)
    record("self-signed: RS accepts it", rs(fx, "GET", "/s", token, scheme="Bearer", cert="selfsigned").status == 200)
    expect_rs_error("self-signed: RS refuses client1", rs(fx, "GET", "/s", token, scheme="Bearer", cert="client1"),
                    "invalid_token", scheme="Bearer")

    # DPoP and mTLS together, over HTTPS
    fx.set_policy({"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "bind_certificate": True})
    key = Key()
    token, answer = dpop_token(fx, key, cert="client2")
    entry = last(fx, "as_requests.jsonl")
    record("DPoP+mTLS AS: Basic auth, proof over https, both bindings", answer.status == 200
           and answer.doc.get("token_type") == "DPoP" and entry.get("client_auth") == "client_secret_basic"
           and entry.get("cnf") == {"jkt": key.thumbprint, "x5t#S256": x5t2}, "%r %s" % (answer, entry))
    answer = rs(fx, "GET", "/both", token, key, cert="client2")
    record("DPoP+mTLS RS: proof and certificate -> 200 dpop+mtls", answer.status == 200
           and answer.doc.get("bound") == "dpop+mtls", answer)
    expect_rs_error("DPoP+mTLS RS: other certificate", rs(fx, "GET", "/both", token, key, cert="client1"),
                    "invalid_token", "x5t#S256")
    expect_rs_error("DPoP+mTLS RS: http htu on https", rs(fx, "GET", "/both", token, key, cert="client2",
                                                          htu="http://127.0.0.1:%d/both" % fx.rs_port),
                    "invalid_dpop_proof", "htu")
    expect_as_error("DPoP AS: http token URL on https", token_request(fx, proof(
        key, "POST", "http://127.0.0.1:%d/token" % fx.port)), "invalid_dpop_proof", "htu")


def log_cases(fx, name):
    texts = "".join(fx.text(log) for log in ("as_requests.jsonl", "rs_requests.jsonl"))
    leaked = [s for s in raw_secrets if s and s in texts]
    record("%s: logs hold no raw token, secret or proof (%d checked)" % (name, len(raw_secrets)),
           not leaked and len(raw_secrets) > 20, [s[:12] + "..." for s in leaked])
    entries = fx.log("as_requests.jsonl") + fx.log("rs_requests.jsonl")
    fields = ("method", "path", "status", "verdict", "token_sha256", "jkt", "nonce_sent", "proof_jti", "peer_cert_x5t")
    record("%s: every log line has the fields, ok iff 200" % name, entries and all(
        all(f in e for f in fields) and (e["verdict"] == "ok") == (e["status"] == 200) for e in entries), len(entries))


def main():
    signal.alarm(60)
    started = time.time()
    directory = tempfile.mkdtemp(prefix="dpop-selftest-")
    fixtures = []
    try:
        thumbprint_cases()
        rsa_key = Key("RSA")
        fx = Fixture(os.path.join(directory, "http"))
        fixtures.append(fx)
        dpop_cases(fx, rsa_key)
        nonce_cases(fx)
        log_cases(fx, "http")
        tls = Fixture(os.path.join(directory, "https"), write_pki(directory))
        fixtures.append(tls)
        mtls_cases(tls)
        log_cases(tls, "https")
    finally:
        for fx in fixtures:
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
