#!/usr/bin/env python3
"""What a stolen interception-CA key could sign, judged by independent verifiers.

Usage: twin_ca_verify.py CA.pem WORKDIR < cases.json > results.json

Makes a *twin* of the CA in CA.pem: a new P-256 key and a self-signed certificate with the same
subject and a byte-for-byte copy of every extension but the key identifier -- the Name
Constraints above all. That is what an attacker holding the CA's key could present. For each case
({"id", "host", "sans": ["DNS:x", "IP:1.2.3.4"], "cn": "x" or null}) it signs a leaf (serverAuth,
7 days) with the twin and asks each verifier whether a TLS client connecting to "host" and
trusting the twin would accept it:

  openssl       `openssl verify -x509_strict -purpose sslserver -verify_hostname|-verify_ip`
  python_ssl    Python's ssl module: a real TLS handshake between two in-memory SSLObjects
                (no socket), the client with VERIFY_X509_STRICT and check_hostname
  cryptography  pyca/cryptography's X.509 verifier (Rust, its own name-constraint code, a
                Web-PKI profile), when the installed version has one (43+)

Prints one JSON object: {"twin_constraints_equal": bool, "verifiers": [...],
"results": {id: {verifier: {"ok": bool, "why": str}}}}. Nothing secret is printed: the keys are
throwaway and stay in WORKDIR, which the caller removes.
"""
import datetime
import ipaddress
import json
import os
import ssl
import subprocess
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, ExtensionOID

try:
    from cryptography.x509 import verification
except ImportError:  # cryptography < 43
    verification = None


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def make_twin(ca, now):
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (x509.CertificateBuilder()
               .subject_name(ca.subject).issuer_name(ca.subject)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1))
               .not_valid_after(now + datetime.timedelta(days=30)))
    for ext in ca.extensions:
        if ext.oid in (ExtensionOID.SUBJECT_KEY_IDENTIFIER, ExtensionOID.AUTHORITY_KEY_IDENTIFIER):
            continue
        # The DER as the sidecar wrote it, not re-encoded by this library.
        raw = x509.UnrecognizedExtension(ext.oid, ext.value.public_bytes())
        builder = builder.add_extension(raw, critical=ext.critical)
    builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    twin = builder.sign(key, hashes.SHA256())
    return twin, key


def general_name(text):
    kind, _, value = text.partition(":")
    if kind == "DNS":
        return x509.DNSName(value)
    if kind == "IP":
        return x509.IPAddress(ipaddress.ip_address(value))
    raise ValueError(text)


def make_leaf(twin, twin_key, case, now):
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, case["cn"])]) if case.get("cn") else x509.Name([])
    builder = (x509.CertificateBuilder()
               .subject_name(subject).issuer_name(twin.subject)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1))
               .not_valid_after(now + datetime.timedelta(days=7))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                            crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(twin_key.public_key()), critical=False))
    if case["sans"]:
        # Critical when the subject is empty (RFC 5280 4.2.1.6).
        builder = builder.add_extension(x509.SubjectAlternativeName([general_name(s) for s in case["sans"]]),
                                        critical=not case.get("cn"))
    return builder.sign(twin_key, hashes.SHA256()), key


def is_ip(host):
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def by_openssl(work, host):
    check = ["-verify_ip", host] if is_ip(host) else ["-verify_hostname", host]
    done = subprocess.run(["openssl", "verify", "-x509_strict", "-purpose", "sslserver", *check,
                           "-CAfile", os.path.join(work, "twin.pem"), os.path.join(work, "leaf.pem")],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if "error" in line or ": OK" in line]
    return {"ok": done.returncode == 0, "why": " | ".join(lines)[:300]}


def by_python_ssl(work, host):
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(os.path.join(work, "chain.pem"), os.path.join(work, "leaf.key"))
    client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname and CERT_REQUIRED
    client_ctx.load_verify_locations(os.path.join(work, "twin.pem"))
    client_ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname=host)
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(20):
        for name, end in (("client", client), ("server", server)):
            if done[name]:
                continue
            try:
                end.do_handshake()
                done[name] = True
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLCertVerificationError as error:
                return {"ok": False, "why": f"{name}: {error.verify_message}"}
            except ssl.SSLError as error:
                return {"ok": False, "why": f"{name}: {error.reason}"}
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if done["client"] and done["server"]:
            return {"ok": True, "why": "handshake complete, certificate verified"}
    return {"ok": False, "why": "handshake did not finish"}


def by_cryptography(twin, leaf, host, now):
    subject = (x509.IPAddress(ipaddress.ip_address(host)) if is_ip(host) else x509.DNSName(host))
    try:
        verifier = (verification.PolicyBuilder().store(verification.Store([twin])).time(now)
                    .build_server_verifier(subject))
    except ValueError as error:  # it refuses to verify for such a name at all (a trailing dot)
        return {"ok": False, "why": f"host refused: {error}"}
    try:
        verifier.verify(leaf, [])
        return {"ok": True, "why": "verified"}
    except verification.VerificationError as error:
        return {"ok": False, "why": str(error)[:300]}


def main():
    ca_path, work = sys.argv[1], sys.argv[2]
    cases = json.load(sys.stdin)
    with open(ca_path, "rb") as f:
        ca = x509.load_pem_x509_certificate(f.read())
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    twin, twin_key = make_twin(ca, now)
    constraints = ca.extensions.get_extension_for_oid(ExtensionOID.NAME_CONSTRAINTS)
    twin_constraints = twin.extensions.get_extension_for_oid(ExtensionOID.NAME_CONSTRAINTS)
    write(os.path.join(work, "twin.pem"), pem(twin))
    verifiers = ["openssl", "python_ssl"] + (["cryptography"] if verification else [])
    results = {}
    for case in cases:
        leaf, leaf_key = make_leaf(twin, twin_key, case, now)
        write(os.path.join(work, "leaf.pem"), pem(leaf))
        write(os.path.join(work, "chain.pem"), pem(leaf) + pem(twin))
        write(os.path.join(work, "leaf.key"), leaf_key.private_bytes(serialization.Encoding.PEM,
                                                                     serialization.PrivateFormat.PKCS8,
                                                                     serialization.NoEncryption()))
        verdicts = {"openssl": by_openssl(work, case["host"]), "python_ssl": by_python_ssl(work, case["host"])}
        if verification:
            verdicts["cryptography"] = by_cryptography(twin, leaf, case["host"], now)
        results[case["id"]] = verdicts
    json.dump({"twin_constraints_equal": constraints.value.public_bytes() == twin_constraints.value.public_bytes()
               and constraints.critical == twin_constraints.critical,
               "verifiers": verifiers, "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
