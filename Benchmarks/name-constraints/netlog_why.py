#!/usr/bin/env python3
"""Why Chromium's certificate verifier decided what it did, from a --log-net-log file.

Usage: netlog_why.py NETLOG.json HOST
Prints one line: the net error of the verification for HOST (e.g. ERR_CERT_INVALID, or OK), the
"ERROR:" lines the path builder logged (e.g. "Not permitted by name constraints") and how the
anchor was trusted (e.g. TRUSTED_ANCHOR+...+enforce_anchor_constraints).
"""
import json
import sys

path, host = sys.argv[1:3]


def norm(h):
    return h.strip("[]").rstrip(".").lower()


text = open(path).read()
try:
    log = json.loads(text)
except ValueError:  # a net log cut short lacks its closing brackets
    log = json.loads(text.rstrip().rstrip(",") + "]}")
types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
errors = {v: k for k, v in log["constants"]["netError"].items()}
sources, net_error, why, anchor = set(), None, [], set()
for event in log["events"]:
    kind, params, src = types.get(event["type"]), event.get("params") or {}, event["source"]["id"]
    if kind == "CERT_VERIFY_PROC" and norm(params.get("host", "")) == norm(host):
        sources.add(src)
    if src not in sources:
        continue
    if kind == "CERT_VERIFY_PROC" and "net_error" in params:
        net_error = params["net_error"]
    if kind == "CERT_VERIFY_PROC_PATH_BUILT":
        if params.get("last_cert_trust"):
            anchor.add(params["last_cert_trust"])
        for line in params.get("errors", "").splitlines():
            if line.startswith("ERROR:") and line[7:] not in why:
                why.append(line[7:])
if not sources:
    print("no certificate verification for this host in the net log")
else:
    print(f"{errors.get(net_error, net_error) if net_error else 'OK'}; {'; '.join(why) or 'no path errors'}; "
          f"anchor: {', '.join(sorted(anchor)) or '?'}")
