from django.contrib.auth.views import LoginView
from django.http import JsonResponse
from django.urls import include, path
from oauth2_provider.views import OAuthProtectedResourceMetadataView
from oauth2_provider.views.generic import ProtectedResourceMetadataView, ScopedProtectedResourceMetadataView


class Hello(ProtectedResourceMetadataView):
    # RFC 6750: 401 with WWW-Authenticate: Bearer for a missing, expired or revoked token (the plain
    # ProtectedResourceView answers 403).
    def get(self, request, *args, **kwargs):
        owner = request.resource_owner
        return JsonResponse({"ok": True, "user": getattr(owner, "username", None)})

    post = get


class Admin(ScopedProtectedResourceMetadataView):
    # A resource that needs the admin scope: 403 with WWW-Authenticate: Bearer
    # error="insufficient_scope" (RFC 6750 §3.1) to a token without it.
    required_scopes = ["admin"]

    def unauthenticated_response(self, request, oauthlib_request=None):
        # RFC 6750 §3.1: the resource may name the scope it needs; this one does (DOT's own
        # challenge leaves it out).
        response = super().unauthenticated_response(request, oauthlib_request)
        if response.status_code == 403:
            response["WWW-Authenticate"] += ',scope="admin"'
        return response

    def get(self, request, *args, **kwargs):
        return JsonResponse({"ok": True, "admin": True})

    post = get


urlpatterns = [
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("accounts/login/", LoginView.as_view()),
    # RFC 9728 §3.1: the API's metadata at its origin's well-known URI.
    path(".well-known/oauth-protected-resource", OAuthProtectedResourceMetadataView.as_view()),
    path("api/hello", Hello.as_view()),
    path("api/admin", Admin.as_view()),
]
