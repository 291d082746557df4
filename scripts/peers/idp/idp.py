"""An identity provider for bearerd's enterprise client-authentication tests, built on authlib's
OAuth 2.0 server (Flask): private_key_jwt (RFC 7523 §2.2, with jti replay refused) and
tls_client_auth (RFC 8705 §2.1.2, the certificate's subject checked), the password,
refresh_token (rotated, the old one revoked) and client_credentials grants, and a protected
resource, GET /api/hello.

Settings come from the environment (scripts/idp-server sets them):
  IDP_PORT, IDP_TTL (access token lifetime, seconds), IDP_MARKS (a file: one line per token
  request, "<grant> <ok or status> <auth method> <client cert sha256 or ->"), IDP_CLIENT_KEYS (PEM public
  keys of jwt-client, one file, PEMs one after another, each after an optional "kid: NAME" line), IDP_TLS_CERT, IDP_TLS_KEY, IDP_TLS_CA
  (https, and the CA that client certificates must chain to), IDP_MTLS_SUBJECT (the subject
  DN, RFC 4514, that mtls-client's certificate must carry), IDP_JWT (1: access tokens are RS256
  JWTs with iss, aud "api://hello", exp and nbf, signed with a key published at /jwks, which the
  discovery document at /.well-known/openid-configuration names; POST /test/forge?on=1 makes
  the tokens after it signed by another key under the same kid, until ?on=0), IDP_DPOP (1: RFC
  9449 DPoP: token requests need a proof, with the server's nonce, which changes every
  IDP_NONCE_SECONDS; tokens are DPoP-bound to the proof's key, refresh tokens too; GET /api/dpop
  wants `Authorization: DPoP` with a fresh proof of that key and the resource's own nonce, and
  refuses a replayed jti; GET /test/dpop gives counts and the last request /api/dpop accepted),
  IDP_PLATFORM_KEYS (PEM public keys of the trusted platform issuer, the IDP_CLIENT_KEYS format,
  re-read at each request), IDP_PLATFORM_ISSUER (https://platform.test) and IDP_PLATFORM_AUDIENCE
  (api://bearerd-idp-exchange): the iss and aud a platform token (a Kubernetes service-account
  token, a CI OIDC token) must carry, IDP_EXCHANGE_AUDIENCES (comma-separated, api://hello): the
  audiences a token exchange may ask for, IDP_EXCHANGE_ERROR_CODE (invalid_request): the error
  of an exchange whose subject or actor token is refused, IDP_FEDERATED_SUBJECT
  (system:serviceaccount:apps:bearerd): the sub a platform token must have to authenticate
  fed-client.
Clients: jwt-client (private_key_jwt), mtls-client (tls_client_auth), secret-client /
secret-pass (client_secret_basic), fed-client (federated_jwt: a platform token as the
client_assertion, as Entra ID's federated credentials take), exchange-public (a public client,
token exchange only), noexchange-client / noexchange-pass (client_secret_basic, client_credentials
only: the client a token exchange answers unauthorized_client). Users: alice / alice-pass, bob / bob-pass, carol / carol-pass.

RFC 8693 token exchange (grant_type urn:ietf:params:oauth:grant-type:token-exchange): the
subject token (and the actor token) is a platform token, strictly checked (compact JWS, RS256 or
ES256, signed by a platform key, the kid's when it has one, exp required, iat and nbf, iss, aud,
sub; 5 s of leeway) or, typed access_token, one of this server's access tokens. audience must be
one of IDP_EXCHANGE_AUDIENCES, resource an absolute http://127.0.0.1 or https://api.test/ URI
(else invalid_target), scope read and/or write (else invalid_scope); no refresh token. The marks
line of an exchange is "token-exchange <ok or status> <auth method> <cert or -> sub=<subject
token's sub or ->".
"""

import base64
import hashlib
import json
import os
import re
import secrets
import ssl
import threading
import time
from urllib.parse import urlsplit

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import (ClientMixin, InvalidClientError, InvalidRequestError, InvalidScopeError,
                                    OAuth2Error, UnauthorizedClientError, grants)
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
from authlib.oauth2.rfc7523.client import ASSERTION_TYPE
from authlib.oauth2.rfc7636 import CodeChallenge
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from flask import Flask, g, jsonify, request
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, RSAKey, import_key
from werkzeug.serving import run_simple

PORT = int(os.environ["IDP_PORT"])
TTL = int(os.environ.get("IDP_TTL", "60"))
MARKS = os.environ.get("IDP_MARKS")
TLS = bool(os.environ.get("IDP_TLS_CERT"))
BASE = f"{'https' if TLS else 'http'}://127.0.0.1:{PORT}"
TOKEN_URL = BASE + "/oauth/token"
lock = threading.Lock()
KEY_BLOCK = re.compile(r"(?:kid:[ \t]*(\S+)[ \t]*\n)?(-----BEGIN [A-Z ]+-----.*?-----END [A-Z ]+-----)", re.S)
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
TOKEN_TYPE_JWT = "urn:ietf:params:oauth:token-type:jwt"
TOKEN_TYPE_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
TOKEN_TYPE_ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
PLATFORM_ISSUER = os.environ.get("IDP_PLATFORM_ISSUER") or "https://platform.test"
PLATFORM_AUDIENCE = os.environ.get("IDP_PLATFORM_AUDIENCE") or "api://bearerd-idp-exchange"
FEDERATED_SUBJECT = os.environ.get("IDP_FEDERATED_SUBJECT") or "system:serviceaccount:apps:bearerd"
EXCHANGE_AUDIENCES = [a.strip() for a in (os.environ.get("IDP_EXCHANGE_AUDIENCES") or "api://hello").split(",") if a.strip()]
EXCHANGE_ERROR_CODE = os.environ.get("IDP_EXCHANGE_ERROR_CODE") or "invalid_request"
LEEWAY = 5  # seconds of clock skew allowed on a platform token's exp, iat and nbf


class Client(ClientMixin):
    def __init__(self, client_id, method, secret=None,
                 grant_types=("password", "refresh_token", "client_credentials", TOKEN_EXCHANGE)):
        self.client_id = client_id
        self.method = method
        self.secret = secret
        self.grant_types = grant_types

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return None

    def get_allowed_scope(self, scope):
        return scope or ""

    def check_redirect_uri(self, redirect_uri):
        # The browser login's client: a loopback /callback on any port (RFC 8252 §7.3).
        return "authorization_code" in self.grant_types and bool(LOOPBACK_REDIRECT.fullmatch(redirect_uri or ""))

    def check_client_secret(self, client_secret):
        return self.secret is not None and secrets.compare_digest(client_secret, self.secret)

    def check_endpoint_auth_method(self, method, endpoint):
        return method == self.method

    def check_response_type(self, response_type):
        return response_type == "code" and "authorization_code" in self.grant_types

    def check_grant_type(self, grant_type):
        return grant_type in self.grant_types


CLIENTS = {
    "jwt-client": Client("jwt-client", "private_key_jwt"),
    "mtls-client": Client("mtls-client", "tls_client_auth"),
    "secret-client": Client("secret-client", "client_secret_basic", "secret-pass"),
    "fed-client": Client("fed-client", "federated_jwt", grant_types=("client_credentials", TOKEN_EXCHANGE)),
    "exchange-public": Client("exchange-public", "none", grant_types=(TOKEN_EXCHANGE,)),
    "noexchange-client": Client("noexchange-client", "client_secret_basic", "noexchange-pass",
                                grant_types=("client_credentials",)),
    # The browser login: public, the authorization code (PKCE optional: this server is lenient).
    "browser-client": Client("browser-client", "none", grant_types=("authorization_code", "refresh_token")),
}
LOOPBACK_REDIRECT = re.compile(r"http://(127\.0\.0\.1|\[::1\]):[0-9]{1,5}/callback")
codes = {}  # authorization code -> AuthorizationCode
USERS = {"alice": "alice-pass", "bob": "bob-pass", "carol": "carol-pass"}
access_tokens = {}  # token -> (client_id, user, expires_at)
refresh_tokens = {}  # token -> (client_id, user, revoked)
bound_to = {}  # DPoP: access or refresh token -> the jkt of the key it is bound to
exchanged = {}  # access token issued by a token exchange -> its act (or None)
seen_jti = {}


class Token:
    def __init__(self, refresh_token, client_id, user):
        self.refresh_token = refresh_token
        self.client_id = client_id
        self.user = user

    def get_scope(self):
        return ""

    def check_client(self, client):
        return client.get_client_id() == self.client_id

    def is_expired(self):
        return False

    def is_revoked(self):
        return refresh_tokens.get(self.refresh_token, (None, None, True))[2]


def query_client(client_id):
    return CLIENTS.get(client_id)


def save_token(token, req):
    user = getattr(req, "user", None)
    jkt = getattr(g, "jkt", None)
    with lock:
        access_tokens[token["access_token"]] = (req.client.client_id, user, time.time() + TTL)
        if "refresh_token" in token:
            refresh_tokens[token["refresh_token"]] = (req.client.client_id, user, False)
        if jkt:
            bound_to[token["access_token"]] = jkt
            if "refresh_token" in token:
                bound_to[token["refresh_token"]] = jkt
        if getattr(g, "exchange", None) is not None:
            exchanged[token["access_token"]] = g.exchange.get("act")


def plain(text):
    """`text` with only the characters RFC 6749 §5.2 allows in an error_description."""
    return "".join(c if 0x20 <= ord(c) <= 0x7E and c not in '"\\' else "?" for c in str(text))[:300]


def unverified_claims(token):
    """The payload of a compact JWS, unverified (to route and to mark, never to trust), or {}."""
    parts = token.split(".") if isinstance(token, str) else []
    if len(parts) != 3:
        return {}
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return {}
    return claims if isinstance(claims, dict) else {}


# Grants fed-client may use: there a client assertion may be a platform token.
FEDERATED_GRANTS = ("client_credentials", TOKEN_EXCHANGE)


def assertion_route(form):
    """Which method a request's jwt-bearer client_assertion is for: "federated" (a platform
    token authenticating fed-client) or "private_key_jwt" (signed by the client itself), or None
    without an assertion. By client_id when the request names one; else private_key_jwt when
    the assertion is not a readable JWT, or has RFC 7523's shape for a client (sub naming one
    of the other clients, or iss equal to sub), federated otherwise."""
    if form.get("client_assertion_type") != ASSERTION_TYPE or not form.get("client_assertion"):
        return None
    if form.get("grant_type") not in FEDERATED_GRANTS:
        return "private_key_jwt"
    client_id = form.get("client_id")
    if client_id:
        client = CLIENTS.get(client_id)
        return "federated" if client and client.method == "federated_jwt" else "private_key_jwt"
    claims = unverified_claims(form["client_assertion"])
    sub = claims.get("sub")
    if not claims or claims.get("iss") == sub:
        return "private_key_jwt"
    if isinstance(sub, str) and sub in CLIENTS and CLIENTS[sub].method != "federated_jwt":
        return "private_key_jwt"
    return "federated"


class PlatformTokenError(Exception):
    pass


def platform_keys():
    """The trusted platform issuer's keys, re-read at each request (IDP_CLIENT_KEYS's format)."""
    path = os.environ.get("IDP_PLATFORM_KEYS")
    if not path:
        return []
    with open(path) as handle:
        text = handle.read()
    return [import_key(pem, parameters={"kid": kid} if kid else None) for kid, pem in KEY_BLOCK.findall(text)]


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate_platform_token(token, name):
    """The claims of `token`, a platform-issued JWT, once its signature and claims hold; else
    PlatformTokenError saying which check failed, its text starting with `name`."""
    if not isinstance(token, str) or token.count(".") != 2:
        raise PlatformTokenError(f"{name} is not a compact JWS (three dot-separated parts)")
    try:
        obj = jws.extract_compact(token.encode())
        header = obj.headers()
    except (JoseError, ValueError, TypeError) as error:
        raise PlatformTokenError(f"{name} is not a JWS: {error}") from error
    alg = header.get("alg")
    if alg not in ("RS256", "ES256"):
        raise PlatformTokenError(f"{name} alg {alg} is refused: only RS256 and ES256")
    try:
        keys = platform_keys()
    except (OSError, ValueError, JoseError) as error:
        raise PlatformTokenError(f"{name}: the platform keys cannot be read: {error}") from error
    if not keys:
        raise PlatformTokenError(f"{name}: no platform keys are trusted (--platform-keys)")
    kid = header.get("kid")
    if kid is not None:
        keys = [key for key in keys if key.kid == kid]
        if not keys:
            raise PlatformTokenError(f"{name} kid {kid} is not a key of the platform issuer")
    if alg == "RS256":
        keys = [key for key in keys if isinstance(key, RSAKey)]
    else:
        keys = [key for key in keys if isinstance(key, ECKey) and key.curve_name == "P-256"]
    if not keys:
        raise PlatformTokenError(f"{name}: no platform key of the issuer is for {alg}")
    verified = False
    for key in keys:
        try:
            verified = jws.validate_compact(obj, key, algorithms=[alg])
        except (JoseError, ValueError):
            verified = False
        if verified:
            break
    if not verified:
        raise PlatformTokenError(f"{name} signature does not verify with the platform keys")
    try:
        claims = json.loads(obj.payload)
    except ValueError as error:
        raise PlatformTokenError(f"{name} payload is not JSON") from error
    if not isinstance(claims, dict):
        raise PlatformTokenError(f"{name} payload is not a JSON object")
    now = time.time()
    exp, iat, nbf = claims.get("exp"), claims.get("iat"), claims.get("nbf")
    if exp is None:
        raise PlatformTokenError(f"{name} has no exp")
    if not is_number(exp):
        raise PlatformTokenError(f"{name} exp is not a number")
    if now > exp + LEEWAY:
        raise PlatformTokenError(f"{name} expired ({int(now - exp)} s ago)")
    if iat is not None and (not is_number(iat) or iat > now + LEEWAY):
        raise PlatformTokenError(f"{name} iat is not a number or in the future")
    if nbf is not None and (not is_number(nbf) or nbf > now + LEEWAY):
        raise PlatformTokenError(f"{name} is not valid yet (nbf) or its nbf is not a number")
    if claims.get("iss") != PLATFORM_ISSUER:
        raise PlatformTokenError(f"{name} iss {claims.get('iss')} is not the platform issuer {PLATFORM_ISSUER}")
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        raise PlatformTokenError(f"{name} aud is missing or not a string or an array of strings")
    if PLATFORM_AUDIENCE not in audiences:
        raise PlatformTokenError(f"{name} aud {aud} does not contain {PLATFORM_AUDIENCE}")
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        raise PlatformTokenError(f"{name} has no sub")
    return claims


def federated_jwt(query_client, req):
    """fed-client's authentication (as Entra ID's federated credentials, Google's and AWS's
    workload identity): its client_assertion is a platform token, not signed by the client,
    whose sub is the one registered. It may be presented again until it expires."""
    if assertion_route(req.form) != "federated":
        return None
    try:
        claims = validate_platform_token(req.form["client_assertion"], "client_assertion")
    except PlatformTokenError as error:
        raise InvalidClientError(status_code=401, description=plain(error)) from error
    if claims["sub"] != FEDERATED_SUBJECT:
        raise InvalidClientError(status_code=401, description=plain(
            f"client_assertion sub {claims['sub']} is not fed-client's federated subject"))
    return query_client("fed-client")


def public_client(query_client, req):
    """RFC 6749 §2.1 public client ("none"): only a client_id, no credential of any kind. An
    unknown client_id is left to the end of the methods, invalid_client with 401."""
    client_id = req.form.get("client_id")
    if (not client_id or req.form.get("client_secret") or req.form.get("client_assertion")
            or req.headers.get("Authorization")):
        return None
    return query_client(client_id)


class PrivateKeyJWT(JWTBearerClientAssertion):
    CLIENT_AUTH_METHOD = "private_key_jwt"

    def __call__(self, query_client, req):
        if assertion_route(req.form) == "federated":
            return None
        return super().__call__(query_client, req)

    def get_audiences(self):
        # The token endpoint (OpenID Connect Core §9) or the issuer, as RFC 7523 allows.
        return [TOKEN_URL, BASE]

    def validate_jti(self, claims, jti):
        with lock:
            if jti in seen_jti:
                return False
            seen_jti[jti] = time.time()
            return True

    def process_assertion_claims(self, assertion, resolve_key):
        # joserfc accepts only its "recommended" algorithms by default; identity providers
        # (Okta, Keycloak, Entra ID) accept PS256 too.
        try:
            token = jwt.decode(assertion, resolve_key, algorithms=["RS256", "PS256", "ES256"])
        except JoseError as error:
            raise InvalidClientError(description=error.description) from error
        self.verify_claims(token.claims)
        return token.claims

    def resolve_client_public_key(self, client):
        # Registered as an IdP's JWKS would be: each PEM may follow a "kid: NAME" line.
        with open(os.environ["IDP_CLIENT_KEYS"]) as handle:
            text = handle.read()
        return KeySet([import_key(pem, parameters={"kid": kid} if kid else None) for kid, pem in KEY_BLOCK.findall(text)])


def tls_client_auth(query_client, req):
    """RFC 8705 §2.1.2: the client named by client_id presents a certificate, chained to the
    trusted CA by the TLS layer, whose subject is the one registered."""
    client_id = req.form.get("client_id")
    pem = request.environ.get("SSL_CLIENT_CERT")
    client = query_client(client_id) if client_id else None
    if not client or client.method != "tls_client_auth" or not pem:
        return None
    subject = x509.load_pem_x509_certificate(pem.encode()).subject.rfc4514_string()
    if subject != os.environ.get("IDP_MTLS_SUBJECT"):
        return None
    return client


def mark(grant, method, tail=""):
    if not MARKS:
        return
    with lock, open(MARKS, "a") as handle:
        handle.write(f"{grant} {method} {certificate_fingerprint() or '-'}{tail}\n")


def grant_label():
    """The grant of the marks line: the request's grant_type, token-exchange for RFC 8693's."""
    grant = request.form.get("grant_type", "-")
    return "token-exchange" if grant == TOKEN_EXCHANGE else grant


def exchange_tail():
    """" sub=<sub>" for the marks line of a token exchange: the subject token's sub (the one
    checked, else as the token says), never the token."""
    if request.form.get("grant_type") != TOKEN_EXCHANGE:
        return ""
    sub = getattr(g, "exchange_sub", None)
    if sub is None:
        token = request.form.get("subject_token", "")
        with lock:
            found = access_tokens.get(token)
        sub = (found[1] or found[0]) if found else unverified_claims(token).get("sub")
    sub = re.sub(r"[^\x21-\x7e]", "_", sub) if isinstance(sub, str) and sub else "-"
    return f" sub={sub}"


class PasswordGrant(grants.ResourceOwnerPasswordCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["private_key_jwt", "tls_client_auth", "client_secret_basic"]

    def authenticate_user(self, username, password):
        if USERS.get(username) == password:
            return username
        return None


class AuthorizationCode:
    def __init__(self, code, client_id, redirect_uri, scope, user, challenge, method):
        self.code, self.client_id, self.redirect_uri, self.scope, self.user = code, client_id, redirect_uri, scope, user
        self.code_challenge, self.code_challenge_method = challenge, method
        self.expires_at = time.time() + 60

    def get_redirect_uri(self):
        return self.redirect_uri

    def get_scope(self):
        return self.scope

    def is_expired(self):
        return time.time() > self.expires_at


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]

    def save_authorization_code(self, code, req):
        data = req.payload.data
        with lock:
            codes[code] = AuthorizationCode(code, req.client.client_id, req.payload.redirect_uri, req.scope,
                                            req.user, data.get("code_challenge"), data.get("code_challenge_method"))

    def query_authorization_code(self, code, client):
        with lock:
            found = codes.get(code)
        return found if found and found.client_id == client.client_id and not found.is_expired() else None

    def delete_authorization_code(self, authorization_code):
        with lock:
            codes.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code):
        return authorization_code.user


class RefreshGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["private_key_jwt", "tls_client_auth", "client_secret_basic", "none"]
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token):
        with lock:
            found = refresh_tokens.get(refresh_token)
            bound = bound_to.get(refresh_token)
        if bound and bound != getattr(g, "jkt", None):
            print("refresh token presented with a proof of another key", flush=True)
            return None
        if found and not found[2]:
            return Token(refresh_token, found[0], found[1])
        return None

    def authenticate_user(self, credential):
        return credential.user

    def revoke_old_credential(self, credential):
        with lock:
            client_id, user, _ = refresh_tokens[credential.refresh_token]
            refresh_tokens[credential.refresh_token] = (client_id, user, True)


class ClientCredentialsGrant(grants.ClientCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["private_key_jwt", "tls_client_auth", "client_secret_basic"]

    def authenticate_token_endpoint_client(self):
        # fed-client by its platform token; a public client (exchange-public) is recognised only
        # to be answered unauthorized_client (RFC 6749 §4.4: confidential clients only). Other
        # requests see the methods (and the errors) they always did.
        form = self.request.form
        client = CLIENTS.get(form.get("client_id") or "")
        if assertion_route(form) == "federated":
            methods = ["federated_jwt"]
        elif client and client.method == "none":
            methods = self.TOKEN_ENDPOINT_AUTH_METHODS + ["none"]
        else:
            methods = self.TOKEN_ENDPOINT_AUTH_METHODS
        client = self.server.authenticate_client(self.request, methods)
        self.server.send_signal("after_authenticate_client", client=client, grant=self)
        return client


class InvalidTargetError(OAuth2Error):
    """RFC 8693 §2.2.2, RFC 8707 §2: an audience or resource the server will not issue for."""
    error = "invalid_target"


def exchange_refusal(description):
    """A subject or actor token refused: RFC 8693 §2.2.2 says invalid_request; Keycloak and
    Entra ID answer invalid_grant (IDP_EXCHANGE_ERROR_CODE)."""
    return OAuth2Error(error=EXCHANGE_ERROR_CODE, description=plain(description))


def allowed_resource(value):
    """resource (RFC 8707 §2): an absolute URI without a fragment (else invalid_target), and
    one of ours: http://127.0.0.1[:port]/... or https://api.test/..."""
    if re.search(r"[^\x21-\x7e]", value) or "#" in value:
        raise InvalidTargetError(description=plain(f"resource {value} is not an absolute URI without a fragment"))
    try:
        parts = urlsplit(value)
        _ = parts.port  # a port that is not a number raises
    except ValueError as error:
        raise InvalidTargetError(description=plain(f"resource {value} is not a URI")) from error
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parts.scheme or ""):
        raise InvalidTargetError(description=plain(f"resource {value} is not an absolute URI"))
    if parts.username is not None or parts.password is not None:
        return False
    if parts.scheme == "http" and parts.hostname == "127.0.0.1":
        return True
    return parts.scheme == "https" and parts.netloc == "api.test" and (parts.path == "" or parts.path.startswith("/"))


class TokenExchangeGrant(grants.BaseGrant, grants.TokenEndpointMixin):
    """RFC 8693 token exchange: a platform token (the subject, and maybe an actor) for an
    access token of this server."""

    GRANT_TYPE = TOKEN_EXCHANGE
    TOKEN_ENDPOINT_AUTH_METHODS = ["private_key_jwt", "tls_client_auth", "client_secret_basic", "federated_jwt", "none"]
    TOKEN_TYPES = (TOKEN_TYPE_JWT, TOKEN_TYPE_ID_TOKEN, TOKEN_TYPE_ACCESS_TOKEN)
    SINGLE = ("grant_type", "subject_token", "subject_token_type", "actor_token", "actor_token_type",
              "scope", "requested_token_type")

    def validate_token_request(self):
        client = self.authenticate_token_endpoint_client()
        if not client.check_grant_type(self.GRANT_TYPE):
            raise UnauthorizedClientError(description=f"{client.client_id} may not use grant_type={self.GRANT_TYPE}")
        self.request.client = client
        form = self.request.form
        for name in self.SINGLE:
            if len(form.getlist(name)) > 1:
                raise InvalidRequestError(description=f"{name} is repeated")
        # RFC 6749 §3.2: a parameter sent without a value is as if omitted.
        subject_token, subject_type = form.get("subject_token") or None, form.get("subject_token_type") or None
        actor_token, actor_type = form.get("actor_token") or None, form.get("actor_token_type") or None
        requested = form.get("requested_token_type") or None
        if not subject_token:
            raise InvalidRequestError(description="missing subject_token")
        if not subject_type:
            raise InvalidRequestError(description="missing subject_token_type")
        if subject_type not in self.TOKEN_TYPES:
            raise InvalidRequestError(description=plain(f"subject_token_type {subject_type} is not supported"))
        if actor_token and not actor_type:
            raise InvalidRequestError(description="actor_token without actor_token_type")
        if actor_type and not actor_token:
            raise InvalidRequestError(description="actor_token_type without actor_token")
        if actor_type and actor_type not in self.TOKEN_TYPES:
            raise InvalidRequestError(description=plain(f"actor_token_type {actor_type} is not supported"))
        if requested and requested not in (TOKEN_TYPE_ACCESS_TOKEN, TOKEN_TYPE_JWT):
            raise InvalidRequestError(description=plain(f"requested_token_type {requested} is not supported"))
        audiences = [value for value in form.getlist("audience") if value]
        resources = [value for value in form.getlist("resource") if value]
        for resource in resources:
            if not allowed_resource(resource):
                raise InvalidTargetError(description=plain(f"resource {resource} is not a resource of this server"))
        for audience in audiences:
            if audience not in EXCHANGE_AUDIENCES:
                raise InvalidTargetError(description=plain(f"audience {audience} is not an audience of this server"))
        scope = form.get("scope") or None
        if scope is not None:
            items = scope.split(" ")
            if "" in items or not set(items) <= {"read", "write"}:
                raise InvalidScopeError(description=plain(f"scope {scope}: only read and write"))
        subject = self.check_token(subject_token, subject_type, "subject_token")
        g.exchange_sub = subject["sub"]
        act = None
        if actor_token:
            act = {"sub": self.check_token(actor_token, actor_type, "actor_token")["sub"]}
        self.request.user = subject["sub"]
        self.issued_type = TOKEN_TYPE_JWT if requested == TOKEN_TYPE_JWT and JWT_MODE else TOKEN_TYPE_ACCESS_TOKEN
        self.scope = scope
        g.exchange = {"act": act, "aud": audiences[0] if audiences else None}

    @staticmethod
    def check_token(token, token_type, name):
        """The claims of a subject or actor token: a platform token; typed access_token, also
        one of this server's unexpired access tokens (sub: whom it was issued to)."""
        if token_type == TOKEN_TYPE_ACCESS_TOKEN:
            with lock:
                found = access_tokens.get(token)
                forged = token in forged_tokens
                bound = token in bound_to
            if found:
                if forged:
                    raise exchange_refusal(f"{name} signature does not verify")
                if found[2] < time.time():
                    raise exchange_refusal(f"{name} expired")
                if bound:
                    raise exchange_refusal(f"{name} is DPoP-bound")
                return {"sub": found[1] or found[0]}
        try:
            return validate_platform_token(token, name)
        except PlatformTokenError as error:
            raise exchange_refusal(str(error)) from error

    def create_token_response(self):
        token = self.generate_token(user=self.request.user, scope=self.scope, expires_in=TTL, include_refresh_token=False)
        token.pop("refresh_token", None)
        token["issued_token_type"] = self.issued_type
        self.save_token(token)
        return 200, token, self.TOKEN_RESPONSE_HEADER


JWT_MODE = os.environ.get("IDP_JWT") == "1"
SIGNING_KEY = RSAKey.generate_key(2048, parameters={"kid": "idp-1", "use": "sig", "alg": "RS256"})
FORGING_KEY = RSAKey.generate_key(2048, parameters={"kid": "idp-1"})
forging = {"on": False}
forged_tokens = set()


def jwt_access_token(client, grant_type, user, scope):
    now = int(time.time())
    claims = {
        "iss": BASE, "aud": "api://hello", "sub": user or client.client_id, "client_id": client.client_id,
        "iat": now, "nbf": now, "exp": now + TTL, "jti": secrets.token_hex(8),
    }
    exchange = getattr(g, "exchange", None) if grant_type == TOKEN_EXCHANGE else None
    if exchange is not None:
        # RFC 8693 §4.1: act names the actor; aud the audience asked for.
        claims["aud"] = exchange["aud"] or claims["aud"]
        if exchange["act"]:
            claims["act"] = exchange["act"]
        if scope:
            claims["scope"] = scope
    with lock:
        forge = forging["on"]
    token = jwt.encode({"alg": "RS256", "kid": "idp-1"}, claims, FORGING_KEY if forge else SIGNING_KEY)
    if forge:
        with lock:
            forged_tokens.add(token)
    return token


app = Flask(__name__)
if JWT_MODE:
    app.config["OAUTH2_ACCESS_TOKEN_GENERATOR"] = jwt_access_token
app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = True
app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {"password": TTL, "refresh_token": TTL, "client_credentials": TTL, TOKEN_EXCHANGE: TTL,
                                      "authorization_code": TTL}
server = AuthorizationServer(app, query_client=query_client, save_token=save_token)
server.register_client_auth_method(PrivateKeyJWT.CLIENT_AUTH_METHOD, PrivateKeyJWT())
server.register_client_auth_method("tls_client_auth", tls_client_auth)
server.register_client_auth_method("federated_jwt", federated_jwt)
server.register_client_auth_method("none", public_client)
server.register_grant(PasswordGrant)
server.register_grant(RefreshGrant)
server.register_grant(ClientCredentialsGrant)
server.register_grant(TokenExchangeGrant)
server.register_grant(AuthorizationCodeGrant, [CodeChallenge(required=False)])


DPOP = os.environ.get("IDP_DPOP") == "1"
NONCE_SECONDS = float(os.environ.get("IDP_NONCE_SECONDS", "5"))
dpop_seen_jti = {}
dpop_counts = {"token_nonce_asked": 0, "api_nonce_asked": 0, "api_ok": 0, "api_refused": 0, "replays_refused": 0}
dpop_last = {}
dpop_api_nonces = set()  # the resource's nonces that came back in accepted proofs


def current_nonce(realm):
    """The nonce of `realm` (token or api): changes every NONCE_SECONDS; the previous one is
    still taken, as servers do while a new one propagates."""
    step = int(time.time() / NONCE_SECONDS)
    return [hashlib.sha256(f"{realm}-{step - k}-{PORT}".encode()).hexdigest()[:22] for k in (0, 1)]


def b64url_sha256(text):
    import base64
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


def check_proof(proof, method, url, realm, access_token=None):
    """RFC 9449 §4.3: None and the key's jkt when the proof holds, else (error, description)."""
    if not proof:
        return ("invalid_dpop_proof", "no DPoP proof"), None
    try:
        header = jws.extract_compact(proof.encode()).protected
        if header.get("typ") != "dpop+jwt" or header.get("alg") != "ES256":
            return ("invalid_dpop_proof", "typ or alg"), None
        key = ECKey.import_key(header["jwk"])
        if key.is_private:
            return ("invalid_dpop_proof", "a private key in jwk"), None
        import json
        claims = json.loads(jws.deserialize_compact(proof, key, algorithms=["ES256"]).payload)
    except (JoseError, KeyError, ValueError) as error:
        return ("invalid_dpop_proof", f"bad proof: {error}"), None
    if claims.get("htm") != method or claims.get("htu") != url:
        return ("invalid_dpop_proof", f"htm/htu {claims.get('htm')} {claims.get('htu')} for {method} {url}"), None
    if abs(time.time() - float(claims.get("iat", 0))) > 60:
        return ("invalid_dpop_proof", "iat out of window"), None
    if access_token is not None and claims.get("ath") != b64url_sha256(access_token):
        return ("invalid_dpop_proof", "ath"), None
    with lock:
        jti = claims.get("jti")
        if not jti or jti in dpop_seen_jti:
            dpop_counts["replays_refused"] += 1
            return ("invalid_dpop_proof", "a jti seen before (a replayed proof)"), None
        dpop_seen_jti[jti] = time.time()
    if claims.get("nonce") not in current_nonce(realm):
        return ("use_dpop_nonce", "a nonce is required"), None
    if realm == "api":
        with lock:
            dpop_api_nonces.add(claims["nonce"])
    return None, key.thumbprint()


@app.post("/oauth/token")
def issue_token():
    if DPOP:
        problem, g.jkt = check_proof(request.headers.get("DPoP"), "POST", TOKEN_URL, "token")
        if problem:
            if problem[0] == "use_dpop_nonce":
                with lock:
                    dpop_counts["token_nonce_asked"] += 1
            else:
                print(f"token request refused: {problem}", flush=True)
            mark(f"{grant_label()} 400-{problem[0]}", "-", exchange_tail())
            return jsonify(error=problem[0], error_description=problem[1]), 400, {"DPoP-Nonce": current_nonce("token")[0]}
    response = server.create_token_response()
    if DPOP:
        response.headers["DPoP-Nonce"] = current_nonce("token")[0]
        if response.status_code == 200:
            body = response.get_json()
            body["token_type"] = "DPoP"
            response.set_data(jsonify(body).get_data())
    method = "-"
    if request.form.get("client_assertion"):
        method = "federated_jwt" if assertion_route(request.form) == "federated" else "private_key_jwt"
    elif request.environ.get("SSL_CLIENT_CERT"):
        method = "tls_client_auth"
    elif request.headers.get("Authorization"):
        method = "client_secret_basic"
    elif request.form.get("grant_type") == TOKEN_EXCHANGE and request.form.get("client_id"):
        method = "none"
    outcome = "ok" if response.status_code == 200 else str(response.status_code)
    if response.status_code != 200:
        # For whoever reads idp.log: why the token request was refused.
        print(f"token request refused: {response.status_code} {response.get_data(as_text=True)}", flush=True)
    mark(f"{grant_label()} {outcome}", method, exchange_tail())
    return response


def bearer_holder():
    """Who the request's valid access token was issued to (the user, else the client), or None."""
    header = request.headers.get("Authorization", "")
    token = header[len("Bearer "):] if header.startswith("Bearer ") else ""
    with lock:
        found = access_tokens.get(token)
    if not found:
        return None
    if found[2] < time.time():
        # A client that sends a token this server issued after it expired: the marks say so.
        mark("api expired-token", "-")
        return None
    return found[1] or found[0]


def refused():
    return jsonify(error="invalid_token"), 401, {"WWW-Authenticate": 'Bearer error="invalid_token"'}


def certificate_fingerprint():
    """The SHA-256 of the client certificate this connection presented, or None."""
    pem = request.environ.get("SSL_CLIENT_CERT")
    if not pem:
        return None
    return hashlib.sha256(x509.load_pem_x509_certificate(pem.encode()).public_bytes(Encoding.DER)).hexdigest()


@app.get("/api/hello")
def hello():
    header = request.headers.get("Authorization", "")
    with lock:
        forged = header[len("Bearer "):] in forged_tokens
    if forged:
        mark("api forged-token", "-")
        return refused()
    holder = bearer_holder()
    if not holder:
        return refused()
    with lock:
        act = exchanged.get(header[len("Bearer "):])
    return jsonify(hello=holder, act=act) if act else jsonify(hello=holder)


@app.get("/api/dpop")
def dpop_resource():
    """A DPoP-protected resource (RFC 9449 §7): the bound token, a fresh proof of its key for
    this request, and the resource's nonce (§9)."""
    header = request.headers.get("Authorization", "")
    token = header[len("DPoP "):] if header.startswith("DPoP ") else ""
    with lock:
        found = access_tokens.get(token)
        bound = bound_to.get(token)
    challenge = {"DPoP-Nonce": current_nonce("api")[0]}
    if not found or found[2] < time.time() or not bound:
        with lock:
            dpop_counts["api_refused"] += 1
        challenge["WWW-Authenticate"] = 'DPoP error="invalid_token"'
        return jsonify(error="invalid_token"), 401, challenge
    problem, jkt = check_proof(request.headers.get("DPoP"), "GET", BASE + request.path, "api", access_token=token)
    if problem is None and jkt != bound:
        problem = ("invalid_dpop_proof", "a proof of another key than the token's")
    if problem:
        with lock:
            dpop_counts["api_nonce_asked" if problem[0] == "use_dpop_nonce" else "api_refused"] += 1
        if problem[0] != "use_dpop_nonce":
            print(f"api request refused: {problem}", flush=True)
        challenge["WWW-Authenticate"] = f'DPoP error="{problem[0]}", error_description="{problem[1]}"'
        return jsonify(error=problem[0]), 401, challenge
    with lock:
        dpop_counts["api_ok"] += 1
        dpop_last.update(authorization=header, dpop=request.headers.get("DPoP"))
    return jsonify(hello=found[1] or found[0]), 200, challenge


@app.get("/test/dpop")
def dpop_stats():
    with lock:
        return jsonify(dict(dpop_counts, last=dpop_last, api_nonces=len(dpop_api_nonces)))


@app.get("/api/cert")
def certificate():
    """A resource that wants mTLS and a token: answers with the client certificate's SHA-256."""
    if not bearer_holder():
        return refused()
    fingerprint = certificate_fingerprint()
    if not fingerprint:
        return jsonify(error="client certificate required"), 403
    return jsonify(certificate=fingerprint)


@app.get("/jwks")
def jwks():
    return jsonify(keys=[SIGNING_KEY.as_dict(private=False)])


@app.get("/.well-known/openid-configuration")
def discovery():
    return jsonify(issuer=BASE, token_endpoint=TOKEN_URL, jwks_uri=BASE + "/jwks",
                   authorization_endpoint=BASE + "/oauth/authorize")


CONSENT = """<!doctype html><html><body><form method="post" action="">
<p>Let browser-client act for alice?</p>
<input type="submit" name="allow" value="Allow"> <input type="submit" name="deny" value="Deny">
</form></body></html>"""


@app.route("/oauth/authorize", methods=["GET", "POST"])
def authorize():
    """The browser login's page: alice is always the person; a consent form, then the redirect."""
    if request.method == "GET":
        try:
            server.get_consent_grant(end_user="alice")
        except OAuth2Error as error:
            return jsonify(error=error.error, error_description=error.description), 400
        return CONSENT
    return server.create_authorization_response(grant_user="alice" if request.form.get("allow") else None)


@app.post("/test/forge")
def forge():
    with lock:
        forging["on"] = request.args.get("on") == "1"
    return jsonify(forging=forging["on"])


@app.get("/health")
def health():
    return "ok"


if __name__ == "__main__":
    context = None
    if TLS:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.environ["IDP_TLS_CERT"], os.environ["IDP_TLS_KEY"])
        if os.environ.get("IDP_TLS_CA"):
            context.load_verify_locations(os.environ["IDP_TLS_CA"])
            context.verify_mode = ssl.CERT_OPTIONAL
    run_simple("127.0.0.1", PORT, app, threaded=True, ssl_context=context)
