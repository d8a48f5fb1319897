#!/usr/bin/env python3
"""django-oauth-toolkit as a real OAuth 2.0 server for the refresh-token tests: refresh tokens
rotated at every refresh (ROTATE_REFRESH_TOKEN), the previous access token revoked with its
refresh token (as DOT does), a spent refresh token refused (invalid_grant) and, with reuse
protection, its whole family revoked.

    dot_server.py DIR [--access-lifetime SECONDS]

Run with the interpreter of `.build-dot` (Django and django-oauth-toolkit from PyPI). Creates
DIR/db.sqlite3, a confidential client `fleet-client` (secret `SENTINEL-DOT-SECRET`), a user, and
one access and refresh token; writes the refresh token to DIR/initial.refresh. Listens on
127.0.0.1 (an ephemeral port) and prints "PORT <n>".

    POST /o/token/      DOT's token endpoint
    GET  /api/...       200 "ok" with a valid access token (Authorization: Bearer), else 401
    POST /control/revoke   revokes every refresh token (an administrator's revocation)
    POST /control/issue    issues a new refresh token (a new consent) and writes it to DIR/fresh.refresh

Token requests are held while DIR/hold exists (checked every 20 ms); if it then says "drop",
the held request is answered 503 without being processed (the server never saw it).

DIR/token.jsonl gets one line per token request: time, grant_type, used (the first 12 hex of
the SHA-256 of the refresh token sent), status, error (the OAuth error code or null), issued
(the same digest of the new refresh token, or null), and "held" lines (with "port": the client's
source port, which tells which process sent the held request). Never a token itself.
"""
import hashlib
import json
import os
import secrets
import sys
import threading
import time
from datetime import timedelta
from socketserver import ThreadingMixIn
from urllib.parse import parse_qsl
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

DIR = sys.argv[1]
LIFETIME = int(sys.argv[sys.argv.index("--access-lifetime") + 1]) if "--access-lifetime" in sys.argv else 3600
CLIENT_ID = "fleet-client"
CLIENT_SECRET = "SENTINEL-DOT-SECRET"

import django
from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="test-only-" + secrets.token_hex(8),
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "oauth2_provider"],
    MIDDLEWARE=[],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(DIR, "db.sqlite3"),
                           "OPTIONS": {"timeout": 30}}},
    USE_TZ=True,
    OAUTH2_PROVIDER={
        "ACCESS_TOKEN_EXPIRE_SECONDS": LIFETIME,
        "ROTATE_REFRESH_TOKEN": True,
        "REFRESH_TOKEN_REUSE_PROTECTION": True,
        "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
        "SCOPES": {"read": "read"},
    },
    LOGGING_CONFIG=None,
)
django.setup()

from django.core.management import call_command
from django.db import transaction
from django.http import HttpResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.models import AccessToken, Application, RefreshToken
from oauth2_provider.views import TokenView

call_command("migrate", verbosity=0)
from django.contrib.auth.models import User

lock = threading.Lock()
user = User.objects.create_user("fleet-user", password=secrets.token_hex(8))
application = Application.objects.create(client_id=CLIENT_ID, client_secret=CLIENT_SECRET, user=user, name="fleet",
                                         client_type=Application.CLIENT_CONFIDENTIAL,
                                         authorization_grant_type=Application.GRANT_PASSWORD)


def digest(token):
    return hashlib.sha256(token.encode()).hexdigest()[:12] if token else None


def issue_refresh_token():
    access = AccessToken.objects.create(user=user, application=application, token=secrets.token_urlsafe(24), scope="read",
                                        expires=timezone.now() + timedelta(seconds=LIFETIME))
    refresh = RefreshToken.objects.create(user=user, application=application, token=secrets.token_urlsafe(24),
                                          access_token=access, token_family=secrets.token_hex(16))
    return refresh.token


def write(name, text):
    temporary = os.path.join(DIR, name + ".tmp")
    with open(temporary, "w") as f:
        f.write(text + "\n")
    os.replace(temporary, os.path.join(DIR, name))


def log(entry):
    with lock, open(os.path.join(DIR, "token.jsonl"), "a") as f:
        f.write(json.dumps(entry) + "\n")


write("initial.refresh", issue_refresh_token())
token_view = TokenView.as_view()


@csrf_exempt
def token(request):
    form = dict(parse_qsl(request.body.decode()))
    used = digest(form.get("refresh_token"))
    hold = os.path.join(DIR, "hold")
    if os.path.exists(hold):
        log({"time": time.time(), "held": used, "port": int(request.META.get("REMOTE_PORT", 0))})
        while os.path.exists(hold):
            with open(hold) as f:
                if f.read().strip() == "drop":
                    log({"time": time.time(), "dropped": used})
                    return sized(HttpResponse(status=503))
            time.sleep(0.02)
    response = token_view(request)
    body = json.loads(response.content or b"{}")
    log({"time": time.time(), "grant_type": form.get("grant_type"), "used": used, "status": response.status_code,
         "error": body.get("error"), "issued": digest(body.get("refresh_token")), "scope": body.get("scope")})
    return sized(response)


def sized(response):
    response["Content-Length"] = str(len(response.content))
    return response


def api(request, rest=""):
    value = request.META.get("HTTP_AUTHORIZATION", "")
    if value.startswith("Bearer "):
        found = AccessToken.objects.filter(token=value[7:]).first()
        if found is not None and found.is_valid(["read"]):
            return sized(HttpResponse("ok\n"))
    # Logged (apart from the token log) so a test can see that a revoked token was replayed.
    with lock, open(os.path.join(DIR, "api.jsonl"), "a") as f:
        f.write(json.dumps({"time": time.time(), "status": 401}) + "\n")
    return sized(HttpResponse("unauthorized\n", status=401))


@csrf_exempt
def revoke(request):
    with transaction.atomic():
        for refresh in RefreshToken.objects.filter(revoked__isnull=True):
            refresh.revoke()
    return sized(HttpResponse("revoked\n"))


@csrf_exempt
def issue(request):
    write("fresh.refresh", issue_refresh_token())
    return sized(HttpResponse("issued\n"))


urlpatterns = [
    path("o/token/", token),
    path("api/<path:rest>", api),
    path("api/", api),
    path("control/revoke", revoke),
    path("control/issue", issue),
]


class Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass

    def get_environ(self):
        # (wsgiref gives the client's address but not its port.)
        environ = super().get_environ()
        environ["REMOTE_PORT"] = str(self.client_address[1])
        return environ


from django.core.wsgi import get_wsgi_application

server = make_server("127.0.0.1", 0, get_wsgi_application(), server_class=Server, handler_class=QuietHandler)
print("PORT %d" % server.server_address[1], flush=True)
server.serve_forever()
