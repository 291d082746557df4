# Creates the user and the OAuth clients once per database.
from django.contrib.auth.models import User
from oauth2_provider.models import Application as A

if not User.objects.filter(username="alice").exists():
    User.objects.create_user("alice", password="alice-pass")
alice = User.objects.get(username="alice")
for cid, secret, grant in [("pw-client", "pw-secret", A.GRANT_PASSWORD),
                           ("cc-client", "cc-secret", A.GRANT_CLIENT_CREDENTIALS)]:
    if not A.objects.filter(client_id=cid).exists():
        A.objects.create(client_id=cid, client_secret=secret, name=cid, user=alice,
                         client_type=A.CLIENT_CONFIDENTIAL, authorization_grant_type=grant,
                         algorithm=A.RS256_ALGORITHM)
# The browser login's public client: the authorization code grant, a loopback redirect (any port).
if not A.objects.filter(client_id="code-client").exists():
    A.objects.create(client_id="code-client", name="code-client", user=alice, client_type=A.CLIENT_PUBLIC,
                     authorization_grant_type=A.GRANT_AUTHORIZATION_CODE,
                     redirect_uris="http://127.0.0.1/callback", algorithm=A.RS256_ALGORITHM)
