#!/usr/bin/env python3
"""An app that keeps boto3 and its placeholder keys (AKIDTOKENSIDECAR0001 with any secret, or what
the container credentials endpoint at AWS_CONTAINER_CREDENTIALS_FULL_URI hands out), sending
https:// AWS URLs through HTTPS_PROXY (the sidecar, whose interception CA is AWS_CA_BUNDLE).

    aws_app.py s3 BUCKET       put, get, list and delete keys with awkward names, and a 20 MiB
                               multipart upload with botocore's default (streaming trailer) uploads
    aws_app.py dynamodb        create a table, put, get and query an item
    aws_app.py sqs             create a queue, send and receive a message
    aws_app.py sts             GetCallerIdentity
    aws_app.py put BUCKET KEY FILE   upload a file (S3 upload_file, the SDK's defaults)

Prints one JSON object with what came back; any error ends it (exit 1, the error printed).
"""
import hashlib
import json
import os
import sys

import boto3
from boto3.s3.transfer import TransferConfig

if not os.environ.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"):
    # Keys in the environment; else the SDK's container provider asks the sidecar's endpoint.
    os.environ["AWS_ACCESS_KEY_ID"] = "AKIDTOKENSIDECAR0001"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "placeholder-secret-the-app-may-leak"
    os.environ.pop("AWS_SESSION_TOKEN", None)
region = "us-east-1"
what = sys.argv[1]
out = {}
if what == "s3":
    s3 = boto3.client("s3", region_name=region)
    bucket = sys.argv[2]
    s3.create_bucket(Bucket=bucket)
    keys = ["plain.txt", "with space.txt", "plus+sign", "per%cent", "ünïcode/ключ", "double//slash"]
    for index, key in enumerate(keys):
        s3.put_object(Bucket=bucket, Key=key, Body=f"body {index}".encode())
    out["got"] = [s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode() for key in keys]
    out["listed"] = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"])
    data = os.urandom(20 * 1024 * 1024)
    config = TransferConfig(multipart_threshold=8 * 1024 * 1024, multipart_chunksize=8 * 1024 * 1024, max_concurrency=2)
    import io
    s3.upload_fileobj(io.BytesIO(data), bucket, "big.bin", Config=config)
    back = s3.get_object(Bucket=bucket, Key="big.bin")["Body"].read()
    out["big"] = {"sent": hashlib.sha256(data).hexdigest(), "got": hashlib.sha256(back).hexdigest(), "size": len(back)}
    for key in keys + ["big.bin"]:
        s3.delete_object(Bucket=bucket, Key=key)
    out["left"] = s3.list_objects_v2(Bucket=bucket).get("KeyCount")
elif what == "dynamodb":
    db = boto3.client("dynamodb", region_name=region)
    db.create_table(TableName="things", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                    AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
    db.put_item(TableName="things", Item={"id": {"S": "a b+c"}, "n": {"N": "7"}})
    out["item"] = db.get_item(TableName="things", Key={"id": {"S": "a b+c"}})["Item"]["n"]["N"]
    out["count"] = db.query(TableName="things", KeyConditionExpression="id = :v",
                            ExpressionAttributeValues={":v": {"S": "a b+c"}})["Count"]
elif what == "sqs":
    sqs = boto3.client("sqs", region_name=region)
    url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="hello & welcome = 1+1")
    messages = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", [])
    out["received"] = [m["Body"] for m in messages]
elif what == "sts":
    out["arn"] = boto3.client("sts", region_name=region).get_caller_identity()["Arn"]
    out["held"] = boto3.Session().get_credentials().get_frozen_credentials().access_key
elif what == "put":
    boto3.client("s3", region_name=region).upload_file(sys.argv[4], sys.argv[2], sys.argv[3])
    out["put"] = True
print(json.dumps(out))
