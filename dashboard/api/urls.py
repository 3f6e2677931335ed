from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter

from . import docs, views

router = SimpleRouter(trailing_slash=False)
router.register("links", views.LinkViewSet, basename="link")
router.register("domains", views.DomainViewSet, basename="domain")
router.register("clicks", views.ClickViewSet, basename="click")
router.register("tokens", views.TokenViewSet, basename="token")
router.register("teams", views.TeamViewSet, basename="team")
router.register("audit", views.AuditViewSet, basename="audit")
members = views.MemberViewSet.as_view({"get": "list", "post": "create"})
member = views.MemberViewSet.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"})

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", docs.swagger_ui, name="api-docs"),
    path("redoc/", docs.redoc, name="api-redoc"),
    path("orphan-visits", views.orphan_visits, name="orphan-visits"),
    path("accounting", views.accounting, name="accounting"),
    path("", include(router.urls)),
    path("teams/<int:team_id>/members", members, name="team-members"),
    re_path(rf"^teams/(?P<team_id>[0-9]+)/members/(?P<username>{views.USERNAME_PATTERN})$", member, name="team-member"),
    # Anything else under /api/v1/ is a JSON 404, not Django's HTML page.
    re_path(r"^.*$", views.not_found),
]
