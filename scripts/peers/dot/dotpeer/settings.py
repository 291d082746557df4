# A django-oauth-toolkit token server for bearerd's end-to-end tests and demo.
# Refresh-token rotation with reuse protection: a refresh token sent twice revokes the family.
import os, time, uuid
from pathlib import Path

STATE = Path(os.environ["DOT_STATE"])
MODE = os.environ.get("DOT_MODE", "opaque")  # "opaque" or "jwt" access tokens
SECRET_KEY = "bearerd-test-peer-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions", "oauth2_provider"]
MIDDLEWARE = ["dotpeer.slowtoken.SlowTokenMiddleware"] if os.environ.get("DOT_TOKEN_DELAY_MS") or os.environ.get("DOT_TOKEN_MARKS") else []
# The browser login (authorization code): a session, a login page and the consent page.
MIDDLEWARE += ["django.contrib.sessions.middleware.SessionMiddleware",
               "django.contrib.auth.middleware.AuthenticationMiddleware"]
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates",
              "DIRS": [Path(__file__).parent / "templates"], "APP_DIRS": True,
              "OPTIONS": {"context_processors": ["django.template.context_processors.request"]}}]
LOGIN_URL = "/accounts/login/"
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
ROOT_URLCONF = "dotpeer.urls"
USE_TZ = True
DATABASES = {"default": {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": STATE / f"db-{MODE}.sqlite3",
    "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE"},
}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGGING = {"version": 1, "disable_existing_loggers": False,
           "handlers": {"c": {"class": "logging.StreamHandler"}},
           "loggers": {"django.request": {"handlers": ["c"], "level": "ERROR"}}}
PEM = (STATE / "rsa.pem").read_text()
OAUTH2_PROVIDER = {
    "ACCESS_TOKEN_EXPIRE_SECONDS": int(os.environ.get("DOT_ACCESS_TTL", "30")),
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # 0 by default: a reused refresh token always revokes the family. The crash trials set a grace
    # period, as Auth0, Okta and DOT deployments do, so a client that died before it received a
    # rotated token may resend the previous one once.
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": int(os.environ.get("DOT_GRACE", "0")),
    "SCOPES": {"read": "read", "write": "write", "admin": "admin"},
    "DEFAULT_SCOPES": ["read", "write"],
    # The strict server of the browser login: PKCE required with S256 only, redirect URIs matched
    # exactly (but for a loopback's port, RFC 8252 §7.3), RFC 9207's iss on every response.
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "OIDC_ISS_ENDPOINT": "http://127.0.0.1:%s/o" % os.environ.get("DOT_PORT", "9111"),
    # RFC 9728: the API (this server's /api/*) names its authorization server.
    "OAUTH2_PROTECTED_RESOURCE_IDENTIFIER": "http://127.0.0.1:%s" % os.environ.get("DOT_PORT", "9111"),
    "OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS": ["http://127.0.0.1:%s/o" % os.environ.get("DOT_PORT", "9111")],
    # RFC 7591, open: a client registers itself (as MCP clients do).
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
}
if MODE == "jwt":
    from oauthlib import common
    from oauthlib.oauth2.rfc6749.tokens import random_token_generator

    def jwt_access_token(request):
        # RS256 with exp; jti makes two tokens minted in the same second differ.
        request.claims = {"scope": " ".join(request.scopes or []), "iat": int(time.time()),
                          "jti": uuid.uuid4().hex, "client_id": request.client_id}
        return common.generate_signed_token(PEM, request)

    OAUTH2_PROVIDER["EXTRA_SERVER_KWARGS"] = {
        "token_generator": jwt_access_token,
        "refresh_token_generator": random_token_generator,
    }
