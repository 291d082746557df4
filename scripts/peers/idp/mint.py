"""Mints a platform token for the end-to-end tests: a JWT as a Kubernetes projected
service-account token or a CI job's OIDC token is, signed with a PEM private key.

  mint.py --key PEM [--kid K] [--iss ISS] --sub SUB [--aud AUD] [--exp-in SECONDS]

Prints the compact JWS. --exp-in may be negative (an expired token). ES256 for an EC key,
RS256 for an RSA key."""
import argparse
import time
import uuid

from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

parser = argparse.ArgumentParser()
parser.add_argument("--key", required=True)
parser.add_argument("--kid")
parser.add_argument("--iss", default="https://platform.test")
parser.add_argument("--sub", required=True)
parser.add_argument("--aud", default="api://bearerd-idp-exchange")
parser.add_argument("--exp-in", type=int, default=600)
args = parser.parse_args()

with open(args.key, "rb") as handle:
    pem = handle.read()
try:
    key, alg = ECKey.import_key(pem), "ES256"
except Exception:
    key, alg = RSAKey.import_key(pem), "RS256"
now = int(time.time())
header = {"alg": alg, "typ": "JWT"}
if args.kid:
    header["kid"] = args.kid
claims = {
    "iss": args.iss, "sub": args.sub, "aud": args.aud, "iat": now - 5, "nbf": now - 5,
    "exp": now + args.exp_in, "jti": str(uuid.uuid4()),
}
print(jwt.encode(header, claims, key))
