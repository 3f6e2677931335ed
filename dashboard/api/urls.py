from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter(trailing_slash=False)
router.register("links", views.LinkViewSet, basename="link")
router.register("clicks", views.ClickViewSet, basename="click")
router.register("tokens", views.TokenViewSet, basename="token")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("", include(router.urls)),
    # Anything else under /api/v1/ is a JSON 404, not Django's HTML page.
    re_path(r"^.*$", views.not_found),
]
