"""An app on App Service / Container Apps as azure-identity finds its credentials:
ManagedIdentityCredential (IDENTITY_ENDPOINT, IDENTITY_HEADER) with an azure-core pipeline
calling /bearer/entra through HTTPS_PROXY. Prints JSON: the status and the token the app held."""
import json

from azure.core import PipelineClient
from azure.core.pipeline.policies import BearerTokenCredentialPolicy, RetryPolicy
from azure.core.rest import HttpRequest
from azure.identity import ManagedIdentityCredential

credential = ManagedIdentityCredential()
scope = "https://vault.azure.net/.default"
held = credential.get_token(scope)
client = PipelineClient(base_url="https://api.azure.test",
                        policies=[RetryPolicy(retry_total=0), BearerTokenCredentialPolicy(credential, scope)])
response = client.send_request(HttpRequest("GET", "https://api.azure.test/bearer/entra"))
print(json.dumps({"status": response.status_code, "held": held.token, "expires_on": held.expires_on}))
