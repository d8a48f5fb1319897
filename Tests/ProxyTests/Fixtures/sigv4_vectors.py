#!/usr/bin/env python3
"""Requests as botocore signs them, for the re-signing tests: each signed with placeholder keys
(what an app sends through the sidecar) and with the real keys (what the upstream must receive;
the test signs for that one's X-Amz-Date). Prints one JSON array; needs botocore.

    sigv4_vectors.py
"""
import json

from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

PLACEHOLDER = Credentials("AKIDTOKENSIDECAR0001", "any-placeholder-secret")
REAL = Credentials("AKIAREALKEY000000001", "real/Secret+Key0000000000000000000000000", "real-session-token")

CASES = [
    ("s3", "us-east-1", "PUT", "https://bucket.s3.us-east-1.amazonaws.com/a%20key%2Bplus%25/%E2%9C%93//x", b"hello",
     {"Content-Type": "text/plain", "x-amz-meta-owner": "app", "Content-MD5": "XUFAKrxLKna5cZ2REBfFkg=="}),
    ("s3", "eu-west-1", "GET", "https://bucket.s3.eu-west-1.amazonaws.com/?list-type=2&prefix=a%20b&max-keys=10", b"", {}),
    ("dynamodb", "us-east-1", "POST", "https://dynamodb.us-east-1.amazonaws.com/", b'{"TableName":"t"}',
     {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.GetItem"}),
    ("sqs", "us-east-1", "POST", "https://sqs.us-east-1.amazonaws.com/", b"Action=SendMessage&MessageBody=hi%20there",
     {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}),
    ("sts", "us-east-1", "POST", "https://sts.amazonaws.com/", b"Action=GetCallerIdentity&Version=2011-06-15",
     {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}),
]


def sign(service, region, method, url, body, headers, credentials):
    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
    auth = (S3SigV4Auth if service == "s3" else SigV4Auth)(credentials, service, region)
    auth.add_auth(request)
    return {k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}


out = []
for service, region, method, url, body, headers in CASES:
    app = sign(service, region, method, url, body, headers, PLACEHOLDER)
    real = sign(service, region, method, url, body, headers, REAL)
    target = url.split("://", 1)[1]
    host, path = target.split("/", 1)
    out.append({"service": service, "region": region, "method": method, "host": host, "path": "/" + path,
                "body": body.decode(), "app": app, "real": real})
print(json.dumps(out))
