from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter

from . import docs, views

router = SimpleRouter(trailing_slash=False)
router.register("links", views.LinkViewSet, basename="link")
router.register("domains", views.DomainViewSet, basename="domain")
router.register("clicks", views.ClickViewSet, basename="click")
router.register("tokens", views.TokenViewSet, basename="token")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", docs.swagger_ui, name="api-docs"),
    path("redoc/", docs.redoc, name="api-redoc"),
    path("", include(router.urls)),
    # Anything else under /api/v1/ is a JSON 404, not Django's HTML page.
    re_path(r"^.*$", views.not_found),
]
