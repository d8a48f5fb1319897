#!/usr/bin/env python3
"""The IP-only CA, but with DNS closed by an *empty excluded dNSName* instead of
`permitted;DNS:invalid` -- a form OpenSSL's config syntax cannot write.

Usage: variant_ca.py OUT.pem OUT.key   (the key file is written 0600 and never printed)
Same subject and extensions as run.sh's `openssl req` CAs; only the Name Constraints differ.
"""
import datetime
import os
import sys
from ipaddress import ip_network

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

pem_out, key_out = sys.argv[1:3]
key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "token-sidecar interception CA")])
now = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.NameConstraints(
            permitted_subtrees=[x509.IPAddress(ip_network("127.0.0.1/32"))],
            excluded_subtrees=[x509.DNSName(""), x509.IPAddress(ip_network("::/0"))]), critical=True)
        .sign(key, hashes.SHA256()))
fd = os.open(key_out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
with os.fdopen(fd, "wb") as f:
    f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))
with open(pem_out, "wb") as f:
    f.write(cert.public_bytes(serialization.Encoding.PEM))
