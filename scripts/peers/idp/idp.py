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
  refuses a replayed jti; GET /test/dpop gives counts and the last request /api/dpop accepted).
Clients: jwt-client (private_key_jwt), mtls-client (tls_client_auth), secret-client /
secret-pass (client_secret_basic). User: alice / alice-pass.
"""

import hashlib
import os
import re
import secrets
import ssl
import threading
import time

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin, InvalidClientError, grants
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
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


class Client(ClientMixin):
    def __init__(self, client_id, method, secret=None):
        self.client_id = client_id
        self.method = method
        self.secret = secret

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return None

    def get_allowed_scope(self, scope):
        return scope or ""

    def check_redirect_uri(self, redirect_uri):
        return False

    def check_client_secret(self, client_secret):
        return self.secret is not None and secrets.compare_digest(client_secret, self.secret)

    def check_endpoint_auth_method(self, method, endpoint):
        return method == self.method

    def check_response_type(self, response_type):
        return False

    def check_grant_type(self, grant_type):
        return grant_type in ("password", "refresh_token", "client_credentials")


CLIENTS = {
    "jwt-client": Client("jwt-client", "private_key_jwt"),
    "mtls-client": Client("mtls-client", "tls_client_auth"),
    "secret-client": Client("secret-client", "client_secret_basic", "secret-pass"),
}
USERS = {"alice": "alice-pass"}
access_tokens = {}  # token -> (client_id, user, expires_at)
refresh_tokens = {}  # token -> (client_id, user, revoked)
bound_to = {}  # DPoP: access or refresh token -> the jkt of the key it is bound to
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


class PrivateKeyJWT(JWTBearerClientAssertion):
    CLIENT_AUTH_METHOD = "private_key_jwt"

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


def mark(grant, method):
    if not MARKS:
        return
    with lock, open(MARKS, "a") as handle:
        handle.write(f"{grant} {method} {certificate_fingerprint() or '-'}\n")


class PasswordGrant(grants.ResourceOwnerPasswordCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["private_key_jwt", "tls_client_auth", "client_secret_basic"]

    def authenticate_user(self, username, password):
        if USERS.get(username) == password:
            return username
        return None


class RefreshGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["private_key_jwt", "tls_client_auth", "client_secret_basic"]
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
app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {"password": TTL, "refresh_token": TTL, "client_credentials": TTL}
server = AuthorizationServer(app, query_client=query_client, save_token=save_token)
server.register_client_auth_method(PrivateKeyJWT.CLIENT_AUTH_METHOD, PrivateKeyJWT())
server.register_client_auth_method("tls_client_auth", tls_client_auth)
server.register_grant(PasswordGrant)
server.register_grant(RefreshGrant)
server.register_grant(ClientCredentialsGrant)


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
            mark(f"{request.form.get('grant_type', '-')} 400-{problem[0]}", "-")
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
        method = "private_key_jwt"
    elif request.environ.get("SSL_CLIENT_CERT"):
        method = "tls_client_auth"
    elif request.headers.get("Authorization"):
        method = "client_secret_basic"
    outcome = "ok" if response.status_code == 200 else str(response.status_code)
    if response.status_code != 200:
        # For whoever reads idp.log: why the token request was refused.
        print(f"token request refused: {response.status_code} {response.get_data(as_text=True)}", flush=True)
    mark(f"{request.form.get('grant_type', '-')} {outcome}", method)
    return response


def bearer_holder():
    """Who the request's valid access token was issued to (the user, else the client), or None."""
    header = request.headers.get("Authorization", "")
    token = header[len("Bearer "):] if header.startswith("Bearer ") else ""
    with lock:
        found = access_tokens.get(token)
    if not found or found[2] < time.time():
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
    return jsonify(hello=holder) if holder else refused()


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
    return jsonify(issuer=BASE, token_endpoint=TOKEN_URL, jwks_uri=BASE + "/jwks")


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
