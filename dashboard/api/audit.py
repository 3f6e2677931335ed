"""/api/v1/audit: the audit log of the teams a person administers."""

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.pagination import CursorPagination

from links.slugs import PATTERN as SLUG_PATTERN
from teams import access
from teams import selectors as team_selectors
from teams.models import Action, AuditEntry, Role

from .common import TeamQuerySerializer, readable_team


class AuditEntrySerializer(serializers.ModelSerializer):
    team = serializers.IntegerField(source="team_id")
    actor = serializers.CharField(source="actor_name", help_text="The user name of who did it; empty for the system.")
    action = serializers.ChoiceField(choices=Action.values)
    changes = serializers.DictField(
        child=serializers.ListField(allow_null=True), help_text="Each field changed, as [before, after]."
    )

    class Meta:
        model = AuditEntry
        fields = ["id", "team", "actor", "action", "link_id", "slug", "subject", "changes", "created_at"]


class AuditQuerySerializer(TeamQuerySerializer):
    action = serializers.ChoiceField(choices=Action.values, required=False)
    link = serializers.RegexField(rf"^{SLUG_PATTERN}$", required=False, help_text="Entries of the link with this slug.")


class AuditCursorPagination(CursorPagination):
    ordering = "-id"
    page_size = 100


@extend_schema_view(
    list=extend_schema(
        summary="The audit log",
        description="Who created, changed, disabled or deleted which link, and who changed a membership or a "
        "token, when; newest first, cursor-paginated. The entries of the teams you administer (a token's: of "
        "its team, for an admin's write token); `team` asks for one of them: a viewer's or an editor's is a 403.",
        parameters=[AuditQuerySerializer],
    )
)
class AuditViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = AuditEntrySerializer
    pagination_class = AuditCursorPagination
    queryset = AuditEntry.objects.none()  # the model, for drf-spectacular; get_queryset gives the rows

    def get_queryset(self):
        query = AuditQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        if "team" in params:
            access.require(
                self.request.user, readable_team(self.request, params["team"]), Role.ADMIN, to="read the audit log"
            )
            teams = [params["team"]]
        else:
            teams = access.team_ids(self.request.user, Role.ADMIN)
        return team_selectors.audit_entries(team_ids=teams, action=params.get("action"), slug=params.get("link"))
