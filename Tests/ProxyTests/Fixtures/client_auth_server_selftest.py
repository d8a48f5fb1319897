#!/usr/bin/env python3
"""Self-test for client_auth_server.py: every verification accepts a good request and refuses bad ones.

    python3 Tests/ProxyTests/Fixtures/client_auth_server_selftest.py

Generates keys and certificates with `cryptography` in a temporary directory, starts the server
(same interpreter, HTTPS with --client-ca, 127.0.0.1 only) and sends requests directly with
http.client + ssl, rewriting the policy file between cases. Also starts a plain-HTTP instance
once. Prints "PASS name" / "FAIL name: why" per case and a summary; exits 1 on any failure.
Every request has a 5 s timeout and the whole run is bounded by a 30 s alarm.
"""
import base64
import datetime
import hashlib
import hmac
import http.client
import ipaddress
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from urllib.parse import urlencode

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "client_auth_server.py")
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
CLIENT_ID = "client-1"
TOKEN_PATH = "/oauth/token"
MCA_PATH = "/authorization/v1/apps/TENANT/token"
AUDIENCE = "https://auth.example/oauth/token"

results = []


# ---------------------------------------------------------------- keys, certificates, JWS

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def pem_private(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def pem_public(key):
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def certificate(subject_key, cn, issuer_key=None, issuer_name=None, ca=False, sans=None,
                not_before=None, not_after=None):
    """A certificate for subject_key; self-signed unless issuer_key/issuer_name are given."""
    now = datetime.datetime.now(datetime.timezone.utc)
    issuer_key = issuer_key or subject_key
    builder = (x509.CertificateBuilder()
               .subject_name(name(cn)).issuer_name(issuer_name or name(cn))
               .public_key(subject_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(not_before or now - datetime.timedelta(minutes=5))
               .not_valid_after(not_after or now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(subject_key.public_key()),
                              critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                              critical=False))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def sign(alg, key, signing_input, der_ecdsa=False):
    if alg == "RS256":
        return key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    if alg == "ES256":
        der = key.sign(signing_input, ec.ECDSA(hashes.SHA256()))
        if der_ecdsa:
            return der
        r, s = decode_dss_signature(der)
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")
    if alg == "HS256":
        return hmac.new(key, signing_input, hashlib.sha256).digest()
    return b""


def jws(header, claims, key, alg=None, der_ecdsa=False):
    alg = alg or header.get("alg")
    signing_input = (b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode()))
    return signing_input + "." + b64url(sign(alg, key, signing_input.encode(), der_ecdsa))


def claims(**overrides):
    now = int(time.time())
    doc = {"iss": CLIENT_ID, "sub": CLIENT_ID, "aud": AUDIENCE, "iat": now, "exp": now + 60,
           "jti": str(uuid.uuid4())}
    doc.update(overrides)
    return {k: v for k, v in doc.items() if v is not None}


# ---------------------------------------------------------------- the server and requests

class Server:
    def __init__(self, directory, tls=None):
        self.policy_path = os.path.join(directory, "policy%s.json" % ("-tls" if tls else ""))
        self.log_path = os.path.join(directory, "requests%s.jsonl" % ("-tls" if tls else ""))
        self.set_policy({})
        arguments = [sys.executable, SERVER, "--log", self.log_path, "--policy", self.policy_path]
        if tls:
            arguments += ["--tls-cert", tls["cert"], "--tls-key", tls["key"], "--client-ca", tls["ca"]]
        self.process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True)
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.process.kill()
            raise SystemExit("server did not start: %r %s" % (line, self.process.stderr.read()))
        self.port = int(line.split()[1])

    def set_policy(self, policy):
        temporary = self.policy_path + ".tmp"
        with open(temporary, "w") as f:
            json.dump(policy, f)
        os.replace(temporary, self.policy_path)

    def log(self):
        with open(self.log_path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.stderr.read()


def post(server, form, context=None, path=TOKEN_PATH, headers=None, method="POST",
         content_type="application/x-www-form-urlencoded"):
    """(status, JSON document) — or (None, error text) when the connection failed."""
    body = urlencode(form).encode()
    all_headers = {"Content-Type": content_type, "Connection": "close"}
    all_headers.update(headers or {})
    if context is None:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    else:
        connection = http.client.HTTPSConnection("127.0.0.1", server.port, timeout=5, context=context)
    try:
        connection.request(method, path, body=body, headers=all_headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    except (OSError, ssl.SSLError, http.client.HTTPException) as error:
        return None, "%s: %s" % (type(error).__name__, error)
    finally:
        connection.close()


def record(name, ok, detail=""):
    results.append(ok)
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, detail)), flush=True)


def expect_ok(name, answer, prefix="tok-", expires_in=3600):
    status, doc = answer
    good = (status == 200 and isinstance(doc, dict) and str(doc.get("access_token", "")).startswith(prefix)
            and doc.get("token_type") == "Bearer" and doc.get("expires_in") == expires_in)
    record(name, good, "%s %s" % (status, doc))
    return doc.get("access_token") if good else None


def expect_refused(name, answer, reason=None, secret=None):
    """400 invalid_client whose description contains `reason` (when given) and not `secret`."""
    status, doc = answer
    good = (status == 400 and isinstance(doc, dict) and doc.get("error") == "invalid_client"
            and (reason is None or reason in doc.get("error_description", ""))
            and (secret is None or secret not in json.dumps(doc)))
    record(name, good, "%s %s (want 400 invalid_client %r)" % (status, doc, reason))


def jwt_form(assertion, **extra):
    form = {"grant_type": "client_credentials", "client_id": CLIENT_ID,
            "client_assertion_type": JWT_BEARER, "client_assertion": assertion}
    form.update(extra)
    return {k: v for k, v in form.items() if v is not None}


# ---------------------------------------------------------------- the cases

def private_key_jwt_cases(srv, ctx, keys, files):
    rsa_key, ec_key, other_rsa = keys["rsa"], keys["ec"], keys["other_rsa"]
    srv.set_policy({"method": "private_key_jwt", "client_id": CLIENT_ID, "public_key": files["rsa_pub"],
                    "audience": AUDIENCE})
    rs = {"alg": "RS256", "typ": "JWT"}
    good = jws(rs, claims(), rsa_key)
    expect_ok("pkjwt RS256 valid", post(srv, jwt_form(good), ctx))
    expect_refused("pkjwt replayed jti", post(srv, jwt_form(good), ctx), "jti replayed")
    expect_ok("pkjwt aud as a list", post(srv, jwt_form(jws(rs, claims(aud=["x", AUDIENCE]), rsa_key)), ctx))
    expect_refused("pkjwt wrong key", post(srv, jwt_form(jws(rs, claims(), other_rsa)), ctx), "bad signature")
    expect_refused("pkjwt alg none", post(srv, jwt_form(jws({"alg": "none", "typ": "JWT"}, claims(), None)
                                                         + "AA"), ctx), "alg")
    expect_refused("pkjwt alg none, empty signature",
                   post(srv, jwt_form(jws({"alg": "none", "typ": "JWT"}, claims(), None)), ctx))
    with open(files["rsa_pub"], "rb") as f:
        confused = jws({"alg": "HS256", "typ": "JWT"}, claims(), f.read())
    expect_refused("pkjwt HS256 keyed with the public key", post(srv, jwt_form(confused), ctx), "alg")
    expect_refused("pkjwt ES256 with an RSA key", post(srv, jwt_form(
        jws({"alg": "ES256", "typ": "JWT"}, claims(), ec_key)), ctx), "alg")
    expect_refused("pkjwt expired", post(srv, jwt_form(jws(rs, claims(
        iat=int(time.time()) - 120, exp=int(time.time()) - 60), rsa_key)), ctx), "expired")
    expect_refused("pkjwt exp not an integer", post(srv, jwt_form(jws(rs, claims(
        exp=time.time() + 60.5), rsa_key)), ctx), "exp")
    expect_refused("pkjwt wrong aud", post(srv, jwt_form(jws(rs, claims(aud="https://other"), rsa_key)), ctx),
                   "wrong aud")
    expect_refused("pkjwt wrong iss", post(srv, jwt_form(jws(rs, claims(iss="someone"), rsa_key)), ctx), "iss")
    expect_refused("pkjwt wrong sub", post(srv, jwt_form(jws(rs, claims(sub="someone"), rsa_key)), ctx), "sub")
    expect_refused("pkjwt iat in the future", post(srv, jwt_form(jws(rs, claims(
        iat=int(time.time()) + 30, exp=int(time.time()) + 90), rsa_key)), ctx), "iat")
    expect_refused("pkjwt lifetime over 300 s", post(srv, jwt_form(jws(rs, claims(
        exp=int(time.time()) + 600), rsa_key)), ctx), "exp - iat")
    expect_refused("pkjwt short jti", post(srv, jwt_form(jws(rs, claims(jti="abc"), rsa_key)), ctx), "jti")
    expect_refused("pkjwt missing jti", post(srv, jwt_form(jws(rs, claims(jti=None), rsa_key)), ctx), "jti")
    expect_refused("pkjwt typ missing", post(srv, jwt_form(jws({"alg": "RS256"}, claims(), rsa_key)), ctx), "typ")
    padded = jws(rs, claims(), rsa_key)
    head, payload, signature = padded.split(".")
    expect_refused("pkjwt base64 padding", post(srv, jwt_form(head + "=." + payload + "." + signature), ctx),
                   "malformed")
    expect_refused("pkjwt four parts", post(srv, jwt_form(jws(rs, claims(), rsa_key) + ".x"), ctx), "JWS")
    fresh = jws(rs, claims(), rsa_key)
    expect_refused("pkjwt missing client_assertion_type", post(srv, jwt_form(
        fresh, client_assertion_type=None), ctx), "client_assertion_type", secret=fresh)
    expect_refused("pkjwt wrong client_assertion_type", post(srv, jwt_form(
        fresh, client_assertion_type="urn:x"), ctx), "client_assertion_type")
    expect_refused("pkjwt Authorization header present", post(srv, jwt_form(fresh), ctx, headers={
        "Authorization": "Basic Y2xpZW50LTE6c2VjcmV0"}), "Authorization")
    expect_refused("pkjwt client_secret in the form", post(srv, jwt_form(fresh, client_secret="s"), ctx),
                   "client_secret")
    expect_refused("pkjwt wrong client_id", post(srv, jwt_form(fresh, client_id="client-2"), ctx), "client_id")
    expect_refused("pkjwt wrong grant_type", post(srv, jwt_form(fresh, grant_type="password"), ctx), "grant_type")
    expect_refused("pkjwt JSON body", post(srv, jwt_form(fresh), ctx, content_type="application/json"), "form")
    expect_refused("pkjwt GET", post(srv, jwt_form(fresh), ctx, method="GET"), "POST")
    # A signed assertion refused for its claims still burns its jti.
    jti = str(uuid.uuid4())
    expect_refused("pkjwt jti burnt: first refused for aud", post(srv, jwt_form(jws(rs, claims(
        jti=jti, aud="https://other"), rsa_key)), ctx), "wrong aud")
    expect_refused("pkjwt jti burnt: then replayed", post(srv, jwt_form(jws(rs, claims(jti=jti), rsa_key)), ctx),
                   "jti replayed")

    srv.set_policy({"method": "private_key_jwt", "client_id": CLIENT_ID, "public_key": files["rsa_pub"],
                    "audience": AUDIENCE, "kid": "key-1", "lifetime": 60, "token_prefix": "pk-",
                    "expires_in": 120})
    kid = {"alg": "RS256", "typ": "JWT", "kid": "key-1"}
    expect_ok("pkjwt kid + lifetime valid, policy re-read", post(srv, jwt_form(jws(kid, claims(), rsa_key)), ctx),
              prefix="pk-", expires_in=120)
    expect_refused("pkjwt wrong kid", post(srv, jwt_form(jws(dict(kid, kid="key-2"), claims(), rsa_key)), ctx),
                   "kid")
    expect_refused("pkjwt lifetime not the policy's", post(srv, jwt_form(jws(kid, claims(
        exp=int(time.time()) + 120), rsa_key)), ctx), "exp - iat")

    srv.set_policy({"method": "private_key_jwt", "client_id": CLIENT_ID, "public_key": files["ec_pub"],
                    "audience": AUDIENCE})
    es = {"alg": "ES256", "typ": "JWT"}
    expect_ok("pkjwt ES256 valid", post(srv, jwt_form(jws(es, claims(), ec_key)), ctx))
    expect_refused("pkjwt ES256 DER signature", post(srv, jwt_form(jws(es, claims(), ec_key, der_ecdsa=True)),
                                                     ctx), "64-byte")
    expect_refused("pkjwt ES256 wrong key", post(srv, jwt_form(jws(es, claims(), keys["other_ec"])), ctx),
                   "bad signature")
    expect_refused("pkjwt RS256 with an EC key", post(srv, jwt_form(jws(rs, claims(), rsa_key)), ctx), "alg")


def client_secret_jwt_cases(srv, ctx):
    secret = "s3cret-of-at-least-32-bytes-length!"
    srv.set_policy({"method": "client_secret_jwt", "client_id": CLIENT_ID, "secret": secret,
                    "audience": AUDIENCE})
    hs = {"alg": "HS256", "typ": "JWT"}
    good = jws(hs, claims(), secret.encode())
    expect_ok("csjwt HS256 valid", post(srv, jwt_form(good), ctx))
    expect_refused("csjwt replayed jti", post(srv, jwt_form(good), ctx), "jti replayed")
    expect_refused("csjwt wrong secret", post(srv, jwt_form(jws(hs, claims(), b"wrong")), ctx), "bad signature")
    expect_refused("csjwt alg none", post(srv, jwt_form(jws({"alg": "none", "typ": "JWT"}, claims(), None)
                                                        + "AA"), ctx), "alg")
    expect_refused("csjwt alg HS512", post(srv, jwt_form(jws({"alg": "HS512", "typ": "JWT"}, claims(),
                                                             secret.encode(), alg="HS256")), ctx), "alg")
    expect_refused("csjwt expired", post(srv, jwt_form(jws(hs, claims(
        iat=int(time.time()) - 120, exp=int(time.time()) - 1), secret.encode())), ctx), "expired")
    expect_refused("csjwt wrong aud", post(srv, jwt_form(jws(hs, claims(aud="x"), secret.encode())), ctx), "aud")
    expect_refused("csjwt wrong iss", post(srv, jwt_form(jws(hs, claims(iss="x"), secret.encode())), ctx), "iss")
    fresh = jws(hs, claims(), secret.encode())
    expect_refused("csjwt missing client_assertion_type", post(srv, jwt_form(
        fresh, client_assertion_type=None), ctx), "client_assertion_type")
    expect_refused("csjwt Authorization header present", post(srv, jwt_form(fresh), ctx, headers={
        "Authorization": "Bearer x"}), "Authorization")


def assertion_file_cases(srv, ctx, keys, files):
    issuer = "https://kubernetes.default.svc"
    subject = "system:serviceaccount:ns:sa"
    srv.set_policy({"method": "assertion_file", "client_id": CLIENT_ID, "public_key": files["issuer_cert"],
                    "audience": AUDIENCE, "issuer": issuer, "subject": subject})
    k8s = {"alg": "RS256", "kid": "k8s"}
    now = int(time.time())
    projected = {"iss": issuer, "sub": subject, "aud": [AUDIENCE], "iat": now, "nbf": now, "exp": now + 3600}
    good = jws(k8s, projected, keys["issuer"])
    expect_ok("afile valid (certificate as public_key, no typ, no jti)", post(srv, jwt_form(good), ctx))
    expect_ok("afile the same token again (no replay check)", post(srv, jwt_form(good), ctx))
    expect_refused("afile wrong key", post(srv, jwt_form(jws(k8s, projected, keys["other_rsa"])), ctx),
                   "bad signature")
    expect_refused("afile alg none", post(srv, jwt_form(jws({"alg": "none"}, projected, None) + "AA"), ctx), "alg")
    expect_refused("afile expired", post(srv, jwt_form(jws(k8s, dict(projected, exp=now - 5), keys["issuer"])),
                                         ctx), "expired")
    expect_refused("afile wrong aud", post(srv, jwt_form(jws(k8s, dict(projected, aud=["api"]), keys["issuer"])),
                                           ctx), "aud")
    expect_refused("afile wrong iss", post(srv, jwt_form(jws(k8s, dict(projected, iss="x"), keys["issuer"])),
                                           ctx), "iss")
    expect_refused("afile wrong sub", post(srv, jwt_form(jws(k8s, dict(projected, sub="x"), keys["issuer"])),
                                           ctx), "sub")
    expect_refused("afile missing client_assertion_type", post(srv, jwt_form(good, client_assertion_type=None),
                                                               ctx), "client_assertion_type")
    expect_refused("afile Authorization header present", post(srv, jwt_form(good), ctx, headers={
        "Authorization": "Bearer x"}), "Authorization")
    expect_refused("afile wrong client_id", post(srv, jwt_form(good, client_id="x"), ctx), "client_id")


def tls_client_auth_cases(srv, contexts):
    srv.set_policy({"method": "tls_client_auth", "client_id": CLIENT_ID, "subject_cn": "mtls-client"})
    form = {"grant_type": "client_credentials", "client_id": CLIENT_ID}
    before = len(srv.log())
    expect_ok("tls valid client certificate", post(srv, form, contexts["mtls"]))
    entry = srv.log()[before]
    record("tls log has peer_cn and token", entry.get("peer_cn") == "mtls-client" and entry.get("verdict") == "ok"
           and entry.get("token"), str(entry))
    expect_refused("tls no client certificate", post(srv, form, contexts["plain"]), "no client certificate")
    expect_refused("tls wrong CN", post(srv, form, contexts["other_cn"]), "CN mismatch")
    status, doc = post(srv, form, contexts["untrusted"])
    record("tls untrusted client certificate refused", status is None or (
        status == 400 and doc.get("error") == "invalid_client"), "%s %s" % (status, doc))
    expect_refused("tls wrong client_id", post(srv, dict(form, client_id="x"), contexts["mtls"]), "client_id")
    expect_refused("tls client_secret too", post(srv, dict(form, client_secret="s"), contexts["mtls"]))
    expect_refused("tls client_assertion too", post(srv, dict(form, client_assertion="a.b.c"), contexts["mtls"]))
    expect_refused("tls Authorization header too", post(srv, form, contexts["mtls"], headers={
        "Authorization": "Basic eDp5"}))


def mca_cases(srv, ctx, keys, files, certs):
    srv.set_policy({"method": "mca_certificate", "client_id": CLIENT_ID, "mca_path": MCA_PATH,
                    "trusted_ca": files["ca_cert"]})
    form = {"grant_type": "client_credentials", "client_id": CLIENT_ID}

    def imf(cert, key, ms=None, header=None):
        der = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()
        return {"Authorization": "IMFCert " + jws(header or {"alg": "RS256", "x5c": [der]},
                                                  {"timestamp": int(time.time() * 1000) if ms is None else ms},
                                                  key, alg="RS256")}

    mca_cert, mca_key = certs["mca"], keys["mca"]
    expect_ok("mca valid", post(srv, form, ctx, MCA_PATH, imf(mca_cert, mca_key)))
    expect_ok("mca valid again (no replay check)", post(srv, form, ctx, MCA_PATH, imf(mca_cert, mca_key)))
    expect_refused("mca wrong path", post(srv, form, ctx, TOKEN_PATH, imf(mca_cert, mca_key)), "path")
    expect_refused("mca x5c not from the trusted CA", post(srv, form, ctx, MCA_PATH,
                                                           imf(certs["self_signed_mca"], mca_key)), "not issued by")
    expect_refused("mca x5c forged issuer name", post(srv, form, ctx, MCA_PATH,
                                                      imf(certs["forged_mca"], mca_key)), "not signed")
    expect_refused("mca x5c expired", post(srv, form, ctx, MCA_PATH, imf(certs["expired_mca"], mca_key)),
                   "validity")
    expect_refused("mca signed with another key", post(srv, form, ctx, MCA_PATH,
                                                       imf(mca_cert, keys["other_rsa"])), "bad signature")
    expect_refused("mca stale timestamp", post(srv, form, ctx, MCA_PATH, imf(
        mca_cert, mca_key, ms=int((time.time() - 120) * 1000))), "stale")
    expect_refused("mca future timestamp", post(srv, form, ctx, MCA_PATH, imf(
        mca_cert, mca_key, ms=int((time.time() + 120) * 1000))), "stale")
    expect_refused("mca timestamp in seconds", post(srv, form, ctx, MCA_PATH, imf(
        mca_cert, mca_key, ms=int(time.time()))), "stale")
    der = base64.b64encode(mca_cert.public_bytes(serialization.Encoding.DER)).decode()
    expect_refused("mca alg ES256", post(srv, form, ctx, MCA_PATH, imf(
        mca_cert, mca_key, header={"alg": "ES256", "x5c": [der]})), "RS256")
    expect_refused("mca two x5c", post(srv, form, ctx, MCA_PATH, imf(
        mca_cert, mca_key, header={"alg": "RS256", "x5c": [der, der]})), "x5c")
    expect_refused("mca EC certificate", post(srv, form, ctx, MCA_PATH, imf(certs["ec_leaf"], mca_key)), "RSA")
    expect_refused("mca no Authorization", post(srv, form, ctx, MCA_PATH), "IMFCert")
    expect_refused("mca Bearer scheme", post(srv, form, ctx, MCA_PATH, {"Authorization": "Bearer x"}), "IMFCert")
    expect_refused("mca wrong client_id", post(srv, dict(form, client_id="x"), ctx, MCA_PATH,
                                               imf(mca_cert, mca_key)), "client_id")
    expect_refused("mca wrong grant_type", post(srv, dict(form, grant_type="password"), ctx, MCA_PATH,
                                                imf(mca_cert, mca_key)), "grant_type")


def check_log(srv, name):
    entries = srv.log()
    keys = {"method", "path", "time", "headers", "form", "verdict", "token", "peer_cn"}
    shaped = all(keys <= set(e) and isinstance(e["headers"], list) and isinstance(e["form"], dict)
                 for e in entries)
    consistent = all((e["verdict"] == "ok") == (e["token"] is not None) for e in entries)
    tokens = [e["token"] for e in entries if e["token"]]
    record(name, entries and shaped and consistent and len(tokens) == len(set(tokens)),
           "%d entries, shaped=%s consistent=%s" % (len(entries), shaped, consistent))


def main():
    signal.alarm(30)
    started = time.time()
    directory = tempfile.mkdtemp(prefix="client-auth-selftest-")
    keys = {"rsa": rsa.generate_private_key(65537, 2048), "other_rsa": rsa.generate_private_key(65537, 2048),
            "issuer": rsa.generate_private_key(65537, 2048), "ca": rsa.generate_private_key(65537, 2048),
            "mca": rsa.generate_private_key(65537, 2048), "ec": ec.generate_private_key(ec.SECP256R1()),
            "other_ec": ec.generate_private_key(ec.SECP256R1()), "tls": ec.generate_private_key(ec.SECP256R1())}
    ca = certificate(keys["ca"], "selftest CA", ca=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    certs = {
        "mca": certificate(keys["mca"], "mca-client", keys["ca"], ca.subject),
        "self_signed_mca": certificate(keys["mca"], "mca-client"),
        "forged_mca": certificate(keys["mca"], "mca-client", keys["other_rsa"], ca.subject),
        "expired_mca": certificate(keys["mca"], "mca-client", keys["ca"], ca.subject,
                                   not_before=now - datetime.timedelta(days=2),
                                   not_after=now - datetime.timedelta(days=1)),
        "ec_leaf": certificate(keys["ec"], "mca-client", keys["ca"], ca.subject),
        "server": certificate(keys["tls"], "localhost", keys["ca"], ca.subject, sans=[
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
        "mtls": certificate(keys["ec"], "mtls-client", keys["ca"], ca.subject),
        "other_cn": certificate(keys["other_ec"], "someone-else", keys["ca"], ca.subject),
        "untrusted": certificate(keys["other_ec"], "mtls-client"),
    }

    def write(filename, data):
        path = os.path.join(directory, filename)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def cert_pem(cert):
        return cert.public_bytes(serialization.Encoding.PEM)

    files = {"rsa_pub": write("rsa.pub.pem", pem_public(keys["rsa"])),
             "ec_pub": write("ec.pub.pem", pem_public(keys["ec"])),
             "issuer_cert": write("issuer.pem", cert_pem(certificate(keys["issuer"], "kubernetes"))),
             "ca_cert": write("ca.pem", cert_pem(ca)),
             "server_cert": write("server.pem", cert_pem(certs["server"])),
             "server_key": write("server.key", pem_private(keys["tls"]))}

    def client_context(cert=None, key=None):
        context = ssl.create_default_context(cafile=files["ca_cert"])
        if cert is not None:
            context.load_cert_chain(write("c-%s.pem" % uuid.uuid4().hex, cert_pem(cert) + pem_private(key)))
        return context

    contexts = {"plain": client_context(), "mtls": client_context(certs["mtls"], keys["ec"]),
                "other_cn": client_context(certs["other_cn"], keys["other_ec"]),
                "untrusted": client_context(certs["untrusted"], keys["other_ec"])}
    print("keys and certificates in %.1f s" % (time.time() - started), flush=True)

    servers = []
    try:
        plain = Server(directory)
        servers.append(plain)
        plain.set_policy({"method": "private_key_jwt", "client_id": CLIENT_ID, "public_key": files["rsa_pub"],
                          "audience": AUDIENCE})
        expect_ok("plain HTTP private_key_jwt valid", post(plain, jwt_form(
            jws({"alg": "RS256", "typ": "JWT"}, claims(), keys["rsa"]))))
        entry = plain.log()[-1]
        record("plain HTTP log line", entry["verdict"] == "ok" and entry["token"] == "tok-1"
               and entry["peer_cn"] is None and entry["form"].get("client_id") == CLIENT_ID, str(entry)[:300])

        tls = Server(directory, {"cert": files["server_cert"], "key": files["server_key"], "ca": files["ca_cert"]})
        servers.append(tls)
        private_key_jwt_cases(tls, contexts["plain"], keys, files)
        client_secret_jwt_cases(tls, contexts["plain"])
        assertion_file_cases(tls, contexts["plain"], keys, files)
        tls_client_auth_cases(tls, contexts)
        mca_cases(tls, contexts["plain"], keys, files, certs)
        check_log(tls, "log lines well-formed, token iff ok, tokens unique")
    finally:
        for server in servers:
            stderr = server.stop()
            if stderr.strip():
                record("server stderr empty", False, stderr.strip()[-2000:])
    for filename in os.listdir(directory):
        os.remove(os.path.join(directory, filename))
    os.rmdir(directory)
    failed = results.count(False)
    print("%s: %d passed, %d failed in %.1f s (Python %s)" % (
        "OK" if not failed else "FAILED", len(results) - failed, failed, time.time() - started,
        sys.version.split()[0]))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
