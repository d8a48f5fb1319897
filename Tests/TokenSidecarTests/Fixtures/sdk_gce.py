"""An app on GCE as google-auth finds its credentials: google.auth.default() (GCE_METADATA_IP,
GCE_METADATA_HOST point at the sidecar's metadata server) and an AuthorizedSession through
HTTPS_PROXY. Calls /bearer/gcp, then (the operator rotating the real token: argv[1] is its file,
argv[2] the new value) refreshes and calls /bearer/gcp2. Prints JSON: statuses, the tokens the
app held, the project."""
import json
import sys
import time

import google.auth
import google.auth.transport.requests

credentials, project = google.auth.default()
session = google.auth.transport.requests.AuthorizedSession(credentials)
first = session.get("https://api.gcp.test/bearer/gcp", timeout=20)
held = [credentials.token]
with open(sys.argv[1], "w") as rotated:
    rotated.write(sys.argv[2] + "\n")
time.sleep(3)  # the sidecar re-reads token files every 2 s
credentials.refresh(google.auth.transport.requests.Request())
held.append(credentials.token)
second = session.get("https://api.gcp.test/bearer/gcp2", timeout=20)
print(json.dumps({"statuses": [first.status_code, second.status_code], "held": held, "project": project,
                  "email": credentials.service_account_email}))
