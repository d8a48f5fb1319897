"""An app on GCE as google-auth finds its credentials: google.auth.default() (GCE_METADATA_IP,
GCE_METADATA_HOST point at the sidecar's metadata server) and an AuthorizedSession through
HTTPS_PROXY. Prints JSON: statuses, the tokens the app held, the project and the email.

    sdk_gce.py rotate FILE VALUE   calls /bearer/gcp; writes VALUE to FILE (the operator rotating
                                   the real token), refreshes, calls /bearer/gcp2
    sdk_gce.py every SECONDS PATH...  calls each PATH, SECONDS apart (the session refreshes by itself)
"""
import json
import sys
import time

import google.auth
import google.auth.transport.requests

credentials, project = google.auth.default()
session = google.auth.transport.requests.AuthorizedSession(credentials)
statuses, held = [], []
if sys.argv[1] == "rotate":
    statuses.append(session.get("https://api.gcp.test/bearer/gcp", timeout=20).status_code)
    held.append(credentials.token)
    with open(sys.argv[2], "w") as rotated:
        rotated.write(sys.argv[3] + "\n")
    time.sleep(3)  # the sidecar re-reads token files every 2 s
    credentials.refresh(google.auth.transport.requests.Request())
    held.append(credentials.token)
    statuses.append(session.get("https://api.gcp.test/bearer/gcp2", timeout=20).status_code)
else:
    for index, path in enumerate(sys.argv[3:]):
        if index:
            time.sleep(float(sys.argv[2]))
        statuses.append(session.get("https://api.gcp.test" + path, timeout=20).status_code)
        held.append(credentials.token)
print(json.dumps({"statuses": statuses, "held": held, "project": project, "email": credentials.service_account_email}))
