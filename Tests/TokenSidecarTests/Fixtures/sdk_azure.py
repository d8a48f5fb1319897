"""An app on App Service / Container Apps (IDENTITY_ENDPOINT, IDENTITY_HEADER) or a VM (IMDS, at
AZURE_POD_IDENTITY_AUTHORITY_HOST) as azure-identity finds its credentials:
ManagedIdentityCredential with an azure-core pipeline calling each PATH (default /bearer/entra)
through HTTPS_PROXY, SECONDS apart (the policy asks for a token again as it expires).
Prints JSON: the statuses and the tokens the app held.

    sdk_azure.py [SECONDS PATH...]
"""
import json
import sys
import time

from azure.core import PipelineClient
from azure.core.pipeline.policies import BearerTokenCredentialPolicy, RetryPolicy
from azure.core.rest import HttpRequest
from azure.identity import ManagedIdentityCredential

pause = float(sys.argv[1]) if len(sys.argv) > 1 else 0
paths = sys.argv[2:] or ["/bearer/entra"]
credential = ManagedIdentityCredential()
scope = "https://vault.azure.net/.default"
client = PipelineClient(base_url="https://api.azure.test",
                        policies=[RetryPolicy(retry_total=0), BearerTokenCredentialPolicy(credential, scope)])
statuses, held = [], []
for index, path in enumerate(paths):
    if index:
        time.sleep(pause)
    statuses.append(client.send_request(HttpRequest("GET", "https://api.azure.test" + path)).status_code)
    held.append(credential.get_token(scope).token)
print(json.dumps({"statuses": statuses, "held": held}))
