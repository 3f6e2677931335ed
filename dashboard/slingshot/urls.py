from django.contrib import admin
from django.urls import include, path

# /healthz and /metrics are answered ahead of URL routing, by
# slingshot.operators.OperatorEndpointsMiddleware.
urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("api.urls")),
    path("", include("yourls_api.urls")),
    path("", include("web.urls")),
]

handler400 = "slingshot.errors.bad_request"
handler403 = "slingshot.errors.permission_denied"
handler404 = "slingshot.errors.page_not_found"
handler500 = "slingshot.errors.server_error"
