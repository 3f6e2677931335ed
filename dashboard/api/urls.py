from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter

from . import audit, campaigns, clicks, docs, domains, links, operations, teams, tokens, utm_templates
from .common import slash_optional

router = SimpleRouter(trailing_slash=False)
router.register("links", links.LinkViewSet, basename="link")
router.register("domains", domains.DomainViewSet, basename="domain")
router.register("clicks", clicks.ClickViewSet, basename="click")
router.register("tokens", tokens.TokenViewSet, basename="token")
router.register("teams", teams.TeamViewSet, basename="team")
router.register("audit", audit.AuditViewSet, basename="audit")
router.register("utm-templates", utm_templates.UtmTemplateViewSet, basename="utm-template")
members = teams.MemberViewSet.as_view({"get": "list", "post": "create"})
member = teams.MemberViewSet.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"})

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", docs.swagger_ui, name="api-docs"),
    path("redoc/", docs.redoc, name="api-redoc"),
    path("orphan-visits", operations.orphan_visits, name="orphan-visits"),
    path("accounting", operations.accounting, name="accounting"),
    path("campaigns", campaigns.campaigns, name="campaigns"),
    path("", include(router.urls)),
    path("teams/<int:team_id>/members", members, name="team-members"),
    re_path(rf"^teams/(?P<team_id>[0-9]+)/members/(?P<username>{teams.USERNAME_PATTERN})$", member, name="team-member"),
    # A path with a trailing slash, as the dashboard's pages all have one, is
    # the path without it; anything else under /api/v1/ is a JSON 404, not
    # Django's HTML page.
    re_path(r"^.*$", slash_optional),
]
