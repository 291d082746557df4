from django.contrib.auth.views import LoginView
from django.http import JsonResponse
from django.urls import include, path
from oauth2_provider.views.generic import ProtectedResourceMetadataView


class Hello(ProtectedResourceMetadataView):
    # RFC 6750: 401 with WWW-Authenticate: Bearer for a missing, expired or revoked token (the plain
    # ProtectedResourceView answers 403).
    def get(self, request, *args, **kwargs):
        owner = request.resource_owner
        return JsonResponse({"ok": True, "user": getattr(owner, "username", None)})

    post = get


urlpatterns = [
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("accounts/login/", LoginView.as_view()),
    path("api/hello", Hello.as_view()),
]
