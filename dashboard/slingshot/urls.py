from django.contrib import admin
from django.urls import include, path

from web.account_views import SignInView

# /healthz and /metrics are answered ahead of URL routing, by
# slingshot.operators.OperatorEndpointsMiddleware.
urlpatterns = [
    # The admin's staff sign in through the dashboard's sign-in, which asks their second factor.
    path("admin/login/", SignInView.as_view()),
    path("admin/", admin.site.urls),
    # SCIM 2.0 for the company's identity provider (scim/, docs/operations.md).
    path("scim/v2/", include("scim.urls")),
    # Webhooks sit above the API's apps (their events carry links and clicks as
    # the API shows them), so their routes come before api/'s catch-all.
    path("api/v1/", include("webhooks.urls")),
    # The staff's moderation queue (moderation/), above the API's apps as webhooks are.
    path("api/v1/", include("moderation.urls")),
    path("api/v1/", include("api.urls")),
    # Shlink's REST API, for its clients (api/shlink/, docs/compatibility.md).
    path("rest/", include("api.shlink.urls")),
    # The YOURLS API at /yourls-api.php (yourls_api/, docs/compatibility.md).
    path("", include("yourls_api.urls")),
    path("moderation/", include("moderation.web_urls")),
    path("", include("web.urls")),
]

handler400 = "slingshot.errors.bad_request"
handler403 = "slingshot.errors.permission_denied"
handler404 = "slingshot.errors.page_not_found"
handler500 = "slingshot.errors.server_error"
